"""`ewe bench run`: wall time per prompt of the full EWE pipeline against the RA baseline.

All methods share one loaded model and datastore and run the same prompts with the same
decoding settings, interleaved prompt by prompt (the order alternates), so machine noise
hits them alike. Reported: median seconds per prompt, tokens kept and decoded, pauses,
backtracks, and two ratios to RA, each from this run:

* "vs RA": a method's median seconds per prompt over RA's. Same prompts, same model, same
  decoding limits: it is the price of answering the same prompt with that method, which by
  design does more work (retrieval pauses, checks, rewritten sentences). Target: EWE at most
  1.5x RA.
* "/tok vs RA": the median seconds per decoded token (every token the model sampled,
  discarded rewrites included) over RA's: the cost of a token, whatever the answer's length,
  so answers of different lengths (one stops early at end-of-sequence, another backtracks)
  compare per unit of the same work.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from ..argtypes import positive_int
from ..config import EWEConfig

PROMPTS = Path(__file__).resolve().parents[2] / "examples" / "prompts" / "bio.jsonl"
TARGET = 1.5


def add_bench_arguments(p) -> None:
    p.add_argument("--prompts", default=str(PROMPTS), help="JSONL of prompts (default: examples/prompts/bio.jsonl)")
    p.add_argument("--limit", type=positive_int, default=6, help="prompts to run (default 6)")
    p.add_argument("--with-memory-only", action="store_true", help="also time EWE's memory without pauses")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON")


def methods(ewe) -> dict[str, object]:
    """The baselines built around `ewe` (configured as full EWE), sharing its model and datastore."""
    from ..api import EWE

    base = ewe.config.model_dump()
    ra = EWEConfig.build(base, **{"retrieval.placement": "prompt", "controller.retrieval_trigger": "never",
                                  "controller.verify_trigger": "never"})
    memory_only = EWEConfig.build(base, **{"controller.retrieval_trigger": "never", "controller.verify_trigger": "never"})
    return {
        "ra": EWE(ewe.model, ewe.tokenizer, ra, datastore=ewe.datastore),
        "memory_only": EWE(ewe.model, ewe.tokenizer, memory_only, datastore=ewe.datastore),
        "ewe": ewe,
    }


def run_bench(ewe, prompts: list[str], include_memory_only: bool = False) -> dict:
    if not ewe.config.pauses:
        raise ValueError("ewe bench run needs a configuration with pauses (e.g. --config configs/ewe.yaml)")
    runners = methods(ewe)
    if not include_memory_only:
        runners.pop("memory_only")
    names = list(runners)
    runners["ewe"].generate(prompts[0], max_new_tokens=4)  # warm-up: loads the datastore and the checker
    rows = {n: [] for n in names}
    for i, prompt in enumerate(prompts):
        for name in (names if i % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            r = runners[name].generate(prompt)
            rows[name].append({"seconds": time.perf_counter() - t0, "new_tokens": r.stats["new_tokens"],
                               "decoded_tokens": r.stats.get("decoded_tokens", r.stats["new_tokens"]),
                               "backtracks": r.stats.get("backtracks", 0), "checks": r.stats.get("checks", 0),
                               "pauses": r.stats.get("pauses_retrieval", 0) + r.stats.get("pauses_verification", 0),
                               "prompt_tokens": r.stats["prompt_tokens"]})
    ra_median = statistics.median(x["seconds"] for x in rows["ra"])
    summary = {}
    for name in names:
        xs = rows[name]
        med = statistics.median(x["seconds"] for x in xs)
        summary[name] = {
            "median_s": med, "vs_ra": med / ra_median,
            **{k: statistics.mean(x[k] for x in xs) for k in ("new_tokens", "decoded_tokens", "backtracks", "checks",
                                                               "pauses", "prompt_tokens")},
            "s_per_decoded_token": statistics.median(x["seconds"] / max(1, x["decoded_tokens"]) for x in xs),
        }
    ra_per_token = summary["ra"]["s_per_decoded_token"]
    for x in summary.values():
        x["per_token_vs_ra"] = x["s_per_decoded_token"] / ra_per_token
    return {"prompts": len(prompts), "max_new_tokens": ewe.config.decoding.max_new_tokens, "rows": rows,
            "summary": summary, "target": {"ewe_over_ra_max": TARGET, "value": summary["ewe"]["vs_ra"],
                                           "met": summary["ewe"]["vs_ra"] <= TARGET}}


def run_run_bench(args, load_ewe) -> int:
    from ..runner import read_prompts

    ewe = load_ewe(args)
    prompts = [r["prompt"] for r in read_prompts(Path(args.prompts))][: args.limit]
    report = run_bench(ewe, prompts, args.with_memory_only)
    report["load_average"] = os.getloadavg()
    s = report["summary"]
    print(f"run: {report['prompts']} prompts, max_new_tokens {report['max_new_tokens']}, methods interleaved; "
          f"load average {report['load_average'][0]:.1f}")
    print("same prompts, model and decoding limits for every method; the methods do different work by design "
          "(pauses, checks, rewrites): 'vs RA' is the price per prompt of that work, '/tok vs RA' the cost per "
          "decoded token (discarded rewrites included), which compares answers of different lengths")
    print(f"{'method':<12}{'median s':>9}{'vs RA':>7}{'prompt tok':>11}{'kept tok':>9}{'decoded':>9}"
          f"{'pauses':>8}{'checks':>8}{'backtr.':>8}{'ms/decoded':>11}{'/tok vs RA':>11}")
    for name, x in s.items():
        print(f"{name:<12}{x['median_s']:>9.2f}{x['vs_ra']:>7.2f}{x['prompt_tokens']:>11.0f}{x['new_tokens']:>9.1f}"
              f"{x['decoded_tokens']:>9.1f}{x['pauses']:>8.1f}{x['checks']:>8.1f}{x['backtracks']:>8.1f}"
              f"{1e3 * x['s_per_decoded_token']:>11.1f}{x['per_token_vs_ra']:>11.2f}")
    t = report["target"]
    print(f"target: EWE wall time per prompt <= {t['ewe_over_ra_max']}x RA: {t['value']:.2f}x -> "
          f"{'met' if t['met'] else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0
