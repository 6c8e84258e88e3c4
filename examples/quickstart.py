"""The main job on the embedded default: SmolLM2-135M-Instruct writes a biography three ways,
on the same prompt, and an independent checker counts what each answer got right:

  - bare: the model alone;
  - +RA: the passages retrieved for the prompt written into it as text;
  - EWE (configs/ewe.yaml, the default): the same passages as units of its working memory
    (read through the shipped memory adapter), refreshed from the retriever as each sentence
    completes, and a fact-check of each new sentence; a sentence that fails is taken back, the
    checker's passages go into memory, and 4 rewrites decoded together from the cropped cache
    are judged (the supported one is kept, else the sentence is dropped). The controller's
    trace is printed, then what the checks changed: each rejected sentence beside the sentence
    kept in its place.

The closing lines count each answer's sentences and claims that the scoring checker
(configs/eval.yaml: the alignment checker, not the judge EWE consults while it writes)
finds supported by the embedded Wikipedia and the person's article.

    python examples/quickstart.py ["Tell me a bio of Marie Curie."]

First run: the bundled GGUF model is dequantized once (about a minute) and the Wikipedia
datastore (10,033 summaries) is embedded and indexed once (several minutes on 2 CPU
cores, with progress bars); both are cached under ~/.cache/ewe. Nothing is downloaded.
"""
import re
import sys
import textwrap

from ewe import EWE, EWEConfig
from ewe.controller import render
from ewe.data import wiki
from ewe.eval.scorer import Scorer
from ewe.runtime import Runtime

CONFIG = "configs/ewe.yaml"
prompt = sys.argv[1] if len(sys.argv) > 1 else "Tell me a bio of Marie Curie."
ewe = EWE.from_config(CONFIG, **{"decoding.max_new_tokens": 120})
print(f"model loaded in {ewe.load_report.seconds:.1f} s ({'cache' if ewe.load_report.from_cache else 'first load'})")
print(f"datastore: {len(ewe.datastore)} passages (Wikipedia summaries, CC BY-SA 4.0)")
print(f"\nPrompt: {prompt}")


def show(label: str, r) -> None:
    s = r.stats
    print(f"\n--- {label}: {s['new_tokens']} tokens, {s.get('total_s', 0):.1f} s ---")
    print(textwrap.fill(r.text, 100))


def variant(**overrides) -> EWE:
    """The same model and datastore under another configuration."""
    cfg = EWEConfig.build(ewe.config.model_dump(), **overrides)
    return EWE(ewe.model, ewe.tokenizer, cfg, datastore=ewe.datastore, memory_adapter=ewe.runtime.memory_adapter)


off = {"controller.retrieval_trigger": "never", "controller.verify_trigger": "never"}
answers = {"bare model": variant(**off).generate(prompt, passages=[])}
show("bare model (no passages)", answers["bare model"])
answers["+RA"] = variant(**off, **{"retrieval.placement": "prompt"}).generate(prompt)
show(f"+RA: the {len(answers['+RA'].retrieved)} passages retrieved for the prompt, as text in it", answers["+RA"])

r = answers["EWE"] = ewe.generate(prompt)
print(f"\n--- EWE ({CONFIG}): the controller's trace ---")
print(render(r.trace))
show(f"EWE ({r.stats['pauses_retrieval']} retrieval pauses, {r.stats['checks']} checks, "
     f"{r.stats['backtracks']} backtracks)", r)

print("\n--- what EWE's checks changed ---")
changed = False
for s in r.sentences:
    for old in s["rejected"]:
        changed = True
        print(textwrap.fill(f"rejected: {old}", 100, subsequent_indent="          "))
    if s["rejected"]:
        cited = "; ".join(f"{e['title']} [{e['start']}:{e['end']}]" for e in s["evidence"]) or "no passage"
        print(textwrap.fill(f"kept ({s['verdict'] or 'unchecked'}, evidence: {cited}): {s['text']}", 100,
                            subsequent_indent="          "))
if not changed:
    print("no sentence failed its check")
dropped = [e for e in r.trace if e["type"] == "retries_exhausted" and not e["kept"]]
if dropped:
    print(f"{len(dropped)} sentence(s) dropped: no rewrite passed its check")

# The independent count: the scoring checker of `ewe eval`, with the person's article as evidence.
topic = re.sub(r"^(?:tell me a bio of|who (?:is|was))\s+", "", prompt.strip(), flags=re.I).rstrip(" .?!")
scorer = Scorer(Runtime(EWEConfig.from_yaml("configs/eval.yaml"), ewe.model, ewe.tokenizer, datastore=ewe.datastore))
print(f"\n--- scored by {scorer.checker_name}"
      f"{'' if topic in wiki.summaries() else ' (no article named ' + repr(topic) + ': datastore evidence only)'} ---")
for label, answer in answers.items():
    d = scorer.check({"id": label, "prompt": prompt, "text": answer.text, "topic": topic}, label, "demo")
    sentences = [s for s in d["sentences"] if not s["repeats"]]  # a repeat adds nothing: counted once
    supported = sum(1 for s in sentences if s["claims"] and all(c["label"] == "supported" for c in s["claims"]))
    print(f"{label:<11} {supported} of {len(sentences)} distinct sentences supported, "
          f"{d['n_supported']} of {d['n_claims']} unique claims"
          + (f" ({d['repeated_sentences']} repeated sentences, {d['n_claims_raw']} claims with repeats)"
             if d["repeated_sentences"] else ""))
