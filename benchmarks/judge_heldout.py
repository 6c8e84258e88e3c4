"""Balanced accuracy (supported vs not) of checker backends on the judge's held-out articles.

The examples are `ewe judge data`'s test split (articles never trained on), each claim
checked against its passage as the controller would check it (the whole passage as one
evidence; the judge cuts it into windows itself). Every backend sees the same seeded sample.

    python benchmarks/judge_heldout.py --data data/judge --n 1000 --backend alignment --backend minilm-cross
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ewe.judge.data import read  # noqa: E402
from ewe.judge.metrics import binary_report  # noqa: E402
from ewe.verify.types import SUPPORTED, Claim, Evidence  # noqa: E402


def backend(name: str):
    if name == "alignment":
        from ewe.verify.alignment import AlignmentChecker

        return AlignmentChecker()
    from ewe.judge.checker import JudgeChecker

    return JudgeChecker(name)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a folder written by `ewe judge data`")
    ap.add_argument("--n", type=int, default=1000, help="held-out examples drawn (seeded)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--backend", action="append", help="alignment | minilm-cross | a judge folder")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the reports here")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    rows = read(Path(args.data) / "test.jsonl")
    rows = random.Random(args.seed).sample(rows, min(args.n, len(rows)))
    out = {}
    for name in args.backend or ["alignment", "minilm-cross"]:
        ck = backend(name)
        t = time.perf_counter()
        verdicts = []
        for i in range(0, len(rows), 32):
            chunk = rows[i:i + 32]
            verdicts += ck.check_claims([Claim(r["claim"]) for r in chunk],
                                        [[Evidence(text=r["evidence"], title=r["title"])] for r in chunk])
        rep = binary_report([r["label"] == SUPPORTED for r in rows], [v.label == SUPPORTED for v in verdicts],
                            [r["kind"] for r in rows])
        rep["seconds_per_claim"] = round((time.perf_counter() - t) / len(rows), 4)
        out[name] = rep
        print(f"{name}: balanced accuracy {rep['balanced_accuracy']:.3f} on {rep['n']} held-out claims, "
              f"{1000 * rep['seconds_per_claim']:.0f} ms/claim")
        for kind, (acc, n) in rep["per_kind"].items():
            print(f"   {kind:18s} {acc:.3f}  (n={n})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
