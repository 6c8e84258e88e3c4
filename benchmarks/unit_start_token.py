"""Measure: should every memory unit begin with the start token?

Parallel-context work reports that a start token repeated at the head of every unit acts
as an attention sink and can hurt. We measure it on the embedded model: for Wikipedia
summaries, the mean negative log-likelihood (nats/token) of the article's second
sentence as the answer to "Tell me about TITLE.", with the summary in one memory unit,
encoded with and without the start token. Baselines: no memory, and the passage
prepended to the prompt (retrieval-augmented prompting). Lower is better.

    python benchmarks/unit_start_token.py [--n 40] [--unit-tokens 128]
"""
import argparse
import random
import statistics

import pysbd
import torch

from ewe import EWE
from ewe.engine import DecodingSession
from ewe.memory import UnitEncoder, WorkingMemory
from ewe.data.wiki import passage, summaries


def nll(ewe, prompt_ids, target_ids, state, offset):
    session = DecodingSession(ewe.model, state, offset)
    logits = [session.prefill(torch.tensor([prompt_ids]))]
    for tok in target_ids[:-1]:
        logits.append(session.step(torch.tensor([tok])))
    logprobs = torch.log_softmax(torch.cat(logits).float(), -1)
    return -logprobs[torch.arange(len(target_ids)), torch.tensor(target_ids)].mean().item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--unit-tokens", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    ewe = EWE.from_config(**{"memory.unit_tokens": args.unit_tokens})
    seg = pysbd.Segmenter(language="en", clean=False)
    titles = sorted(t for t, e in summaries().items() if len(seg.segment(e["extract"])) >= 3)
    random.Random(args.seed).shuffle(titles)
    encoders = {flag: UnitEncoder(ewe.model, ewe.tokenizer, args.unit_tokens, start_token=flag) for flag in (False, True)}
    rows = {"no memory": [], "memory, no start token": [], "memory, start token": [], "passage in prompt": []}
    for i, title in enumerate(titles[: args.n]):
        if i % 5 == 0:
            print(f"  {i}/{args.n} ...", flush=True)
        text = passage(title)
        target = seg.segment(summaries()[title]["extract"])[1].strip()
        target_ids = ewe.tokenizer(" " + target, add_special_tokens=False)["input_ids"][:40]
        question = f"Tell me about {title}."
        prompt_ids = ewe.prompt_ids(question)
        rows["no memory"].append(nll(ewe, prompt_ids, target_ids, None, 0))
        for flag, name in ((False, "memory, no start token"), (True, "memory, start token")):
            memory = WorkingMemory(encoders[flag], 1, 0)
            memory.add([text])
            rows[name].append(nll(ewe, prompt_ids, target_ids, memory.state(), args.unit_tokens))
        rag_ids = ewe.prompt_ids(f"{text}\n\n{question}")
        rows["passage in prompt"].append(nll(ewe, rag_ids, target_ids, None, 0))
    base = rows["no memory"]
    print(f"{args.n} Wikipedia summaries, target = the summary's second sentence (<= 40 tokens), M={args.unit_tokens}")
    print(f"{'condition':<26}{'mean NLL':>10}{'median':>9}{'better than no-start':>22}")
    for name, vals in rows.items():
        wins = sum(a < b for a, b in zip(vals, rows["memory, no start token"]))
        print(f"{name:<26}{statistics.mean(vals):>10.3f}{statistics.median(vals):>9.3f}{wins:>18}/{len(vals)}")


if __name__ == "__main__":
    main()
