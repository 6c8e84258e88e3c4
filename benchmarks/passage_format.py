"""How often the model copies a passage's header into its answer, for each way of putting
passages in the prompt (issue 30: 11 of 60 RA-1 answers opened "[2] Title (description): ...",
continuing the numbered list they were given).

Every format gets the same retrieved passages for the same prompts, greedy, in one process;
an answer "echoes" when one of its lines opens like a passage list item ("[n] "), with a
passage head ("Title (description):"), or with a given passage's "Title:", or when it contains
a given passage's "Title (description)" verbatim.

    python benchmarks/passage_format.py PROMPTS.jsonl [--n 40] [--tokens 48] [--k 1]
"""
import argparse
import json
import re

from ewe import EWE
from ewe.retrieval.chunking import split_passage
from ewe.retrieval.in_prompt import PASSAGE_FORMATS


def echoes(answer: str, passages: list[str]) -> bool:
    for line in answer.splitlines():
        line = line.strip()
        if re.match(r"\[\d+\]", line) or re.match(r"[^():\n]{1,80}?\([^\n]{0,120}\):", line):
            return True
    for p in passages:
        title, desc, _ = split_passage(p)
        if title and desc and f"{title} ({desc})" in answer:
            return True
        if title and any(line.strip().startswith(f"{title}:") for line in answer.splitlines()):
            return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prompts")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--k", type=int, default=1, help="passages per prompt")
    ap.add_argument("--formats", nargs="+", default=sorted(PASSAGE_FORMATS))
    ap.add_argument("--show", type=int, default=3, help="answers printed per format")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.prompts)][: args.n]
    ewe = EWE.from_config("configs/ra-1.yaml")
    rt = ewe.runtime
    prompts = [r["prompt"] for r in rows]
    passages = [[h.text for h in hits] for hits in rt.retrieve(prompts, k=args.k)]
    dec = rt.decoding(max_new_tokens=args.tokens, temperature=0.0)
    results = {}
    for name in args.formats:
        fmt = PASSAGE_FORMATS[name]
        n_echo, shown = 0, 0
        for prompt, ps in zip(prompts, passages):
            [out] = rt.generate_plain([fmt(prompt, ps)], [[]], dec)
            e = echoes(out.text, ps)
            n_echo += e
            if shown < args.show:
                print(f"  {name} {'ECHO' if e else 'ok  '} {out.text[:140]!r}")
                shown += 1
        results[name] = n_echo
        print(f"{name}: {n_echo} of {len(prompts)} answers echo a passage header", flush=True)
    print(json.dumps({"n": len(prompts), "tokens": args.tokens, "k": args.k, "echoes": results}))


if __name__ == "__main__":
    main()
