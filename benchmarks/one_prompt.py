"""One prompt at a time: `EWE.generate(prompt)` as a request of the engine (controller.batch_rows on:
a one-row continuous batch on the slot session) against the one-row token loop (batch_rows off),
side by side in one process.

Each prompt of the bio set is answered alone both ways, the two interleaved (which goes first
alternates), greedy, retrieval as configs/ewe.yaml says; per prompt the median seconds of each
way, then the ratio of the summed medians and whether every answer is the same token for token.

    python benchmarks/one_prompt.py [--prompts 6] [--repeats 3] [--max-new-tokens 128]
"""
import argparse
import statistics
import time

import torch

from ewe import EWE
from ewe.data.prompt_sets import prompt_set

ap = argparse.ArgumentParser()
ap.add_argument("--prompts", type=int, default=6)
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--max-new-tokens", type=int, default=128)
args = ap.parse_args()

ewe = EWE.from_config("configs/ewe.yaml")
ctl = ewe.config.controller
prompts = [r["prompt"] for r in prompt_set("bio", args.prompts, suffix=None)]


def answer(prompt: str, engine: bool):
    ctl.batch_rows = engine
    return ewe.generate(prompt, max_new_tokens=args.max_new_tokens, temperature=0)


answer(prompts[0], True)  # warm up: the model, the datastore, the checker
ways = {"engine": True, "one-row loop": False}
print(f"one prompt at a time, configs/ewe.yaml, greedy, {args.max_new_tokens} new tokens at most, "
      f"{args.repeats} repeats interleaved, threads {torch.get_num_threads()}")
print(f"{'prompt':<48}{'engine s':>10}{'loop s':>10}{'tokens':>8}  same")
total = {name: 0.0 for name in ways}
same = 0
for i, prompt in enumerate(prompts):
    seconds = {name: [] for name in ways}
    tokens = {}
    for rep in range(args.repeats):
        for name in (list(ways) if (i + rep) % 2 == 0 else list(reversed(ways))):
            t0 = time.perf_counter()
            result = answer(prompt, ways[name])
            seconds[name].append(time.perf_counter() - t0)
            tokens[name] = result.token_ids
    med = {name: statistics.median(s) for name, s in seconds.items()}
    for name in ways:
        total[name] += med[name]
    equal = tokens["engine"] == tokens["one-row loop"]
    same += equal
    print(f"{prompt[:46]:<48}{med['engine']:>10.2f}{med['one-row loop']:>10.2f}{len(tokens['engine']):>8}  {equal}")
print(f"sum of medians: engine {total['engine']:.1f} s, one-row loop {total['one-row loop']:.1f} s: "
      f"engine / loop {total['engine'] / total['one-row loop']:.2f}x the time; "
      f"answers the same token for token: {same}/{len(prompts)}")
