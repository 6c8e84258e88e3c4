"""A biography written twice: by the bare model, then by EWE, which pauses, fact-checks
each new sentence against the embedded Wikipedia, removes a sentence that fails, and
writes it again with the checker's passages in its working memory (configs/ewe.yaml, the
default: 4 candidates decoded from the cropped cache; configs/ewe-text.yaml: candidates that
read them as text in their prompt).

    python examples/biography_backtrack.py ["Tell me a bio of Isaac Newton."]

Prints the bare answer with each sentence's verdict, EWE's trace in readable form, and
every backtrack with what replaced the removed sentence. The model is SmolLM2-135M, so
a rewrite is often still wrong: the trace shows what happened, not what one hopes for.
"""
import sys
import textwrap

from ewe import EWE
from ewe.controller import render
from ewe.verify.text import split_sentences

prompt = sys.argv[1] if len(sys.argv) > 1 else "Tell me a bio of Isaac Newton."
ewe = EWE.from_config("configs/ewe.yaml", **{"decoding.max_new_tokens": 150})
bare = EWE.from_config("configs/bare.yaml", **{"decoding.max_new_tokens": 150})

print(f"Prompt: {prompt}\n")  # one checker (ewe.check) judges both answers
print("=== the bare model, each sentence checked afterwards ===")
answer = bare.generate(prompt).text
context = ""
for sentence in split_sentences(answer):
    check = ewe.check(sentence, prompt=prompt, context=context)
    context += " " + sentence
    mark = "NOT SUPPORTED" if check.needs_rewrite else "ok"
    print(textwrap.fill(f"[{mark}] {sentence}", 100, subsequent_indent="    "))
    for v in check.verdicts:
        if not v.supported:
            print(textwrap.fill(f"- {v.label}: {v.claim.text} ({v.rationale})", 100, initial_indent="    ",
                                subsequent_indent="      "))

print("\n=== EWE: pauses, checks and rewrites while writing ===")
result = ewe.generate(prompt)
print(render(result.trace))

print("\n=== EWE's answer ===")
print(textwrap.fill(result.text, 100))
backtracks = [e for e in result.trace if e["type"] == "backtrack"]
print(f"\n{len(backtracks)} backtrack(s); {result.stats['new_tokens']} tokens kept of "
      f"{result.stats['decoded_tokens']} decoded; {result.stats['total_s']:.1f} s")
final = {s["start"]: s["text"] for s in result.sentences}
for e in backtracks:
    removed = split_sentences(e["removed_text"])[:1]
    print(f"- removed: {removed[0] if removed else e['removed_text'].strip()!r}")
    now = final.get(e["start_token"], "(nothing: the answer ended or moved on)")
    same = removed and now == removed[0]
    print(f"  now at its place: {now!r}" + (" (the rewrite came out the same; kept when retries ended)" if same else ""))
