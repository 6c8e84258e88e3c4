"""A greedy retry under the memory its attempt was written under writes the attempt again; the
controller gives up on it without decoding (ControlledRun._retry_would_repeat). What that saves,
on configs/ewe-paper.yaml (greedy retries, feedback in memory): each prompt answered with the shortcut
and without it (the reference decodes and judges the copy), interleaved in one process; wall
time, tokens decoded and checks per prompt, and whether the answers are the same.

    python benchmarks/greedy_retry.py [--limit 6] [--max-new-tokens 128]
"""
import argparse
import statistics
import time
from pathlib import Path

from ewe import EWE
from ewe.controller.controlled_run import ControlledRun
from ewe.runner import read_prompts

ap = argparse.ArgumentParser()
ap.add_argument("--config", default="configs/ewe-paper.yaml")
ap.add_argument("--prompts", default="examples/prompts/bio.jsonl")
ap.add_argument("--limit", type=int, default=6)
ap.add_argument("--max-new-tokens", type=int, default=128)
args = ap.parse_args()

ewe = EWE.from_config(args.config, **{"decoding.max_new_tokens": args.max_new_tokens})
prompts = [r["prompt"] for r in read_prompts(Path(args.prompts))][: args.limit]
shortcut = ControlledRun._retry_would_repeat
ewe.generate(prompts[0], max_new_tokens=4)  # warm-up: datastore and judge
rows = {"shortcut": [], "reference": []}
same = 0
for i, prompt in enumerate(prompts):
    out = {}
    for name in (("shortcut", "reference") if i % 2 == 0 else ("reference", "shortcut")):
        ControlledRun._retry_would_repeat = shortcut if name == "shortcut" else (lambda self, sentence: False)
        t0 = time.perf_counter()
        r = ewe.generate(prompt)
        rows[name].append((time.perf_counter() - t0, r.stats["decoded_tokens"], r.stats["checks"]))
        out[name] = r.token_ids
    same += out["shortcut"] == out["reference"]
ControlledRun._retry_would_repeat = shortcut
print(f"{args.config}, {len(prompts)} prompts, {args.max_new_tokens} new tokens, interleaved")
print(f"{'':<11}{'median s':>9}{'decoded':>9}{'checks':>8}")
for name, xs in rows.items():
    print(f"{name:<11}{statistics.median(x[0] for x in xs):>9.2f}{statistics.mean(x[1] for x in xs):>9.1f}"
          f"{statistics.mean(x[2] for x in xs):>8.1f}")
ratio = statistics.median(a[0] / b[0] for a, b in zip(rows["reference"], rows["shortcut"]))
print(f"reference / shortcut, median of per-prompt ratios: {ratio:.2f}x; the same answer on {same} of {len(prompts)} "
      "prompts (a shortcut leaves backtracks in the budget, so a later sentence may get a retry it did not before)")
