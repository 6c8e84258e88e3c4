"""Two methods scored on the same prompts: the mean difference of their per-response F1@K,
with a paired bootstrap interval. Why: with tens of prompts a method's F1 moves by several
points from one prompt set to the next, so a difference is a result only when its interval
excludes zero.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..files import read_jsonl
from .metric import median_k, score


def claim_counts(details: Path) -> dict[str, tuple[int, int]]:
    """id -> (claims, supported claims) of each scored response in a details file."""
    out = {}
    for line, row in read_jsonl(details):
        if isinstance(row, dict) and "n_claims" in row and row.get("dedup") is None:
            raise ValueError(f"{details}:{line}: counted before unique-claim scoring (repeats counted); rescore it "
                             "with `ewe eval score` (duplicates are marked from the stored claims, none is checked again)")
        try:
            out[str(row["id"])] = (int(row["n_claims"]), int(row["n_supported"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{details}:{line}: not a scored response ({type(e).__name__}: {e}); give a "
                             "*.details.jsonl file written by ewe eval score or ewe eval run") from None
    if not out:
        raise ValueError(f"{details}: no scored responses")
    return out


METRICS = ("f1", "precision", "recall")


def paired_difference(a: Path, b: Path, K: int | None = None, resamples: int = 5000, seed: int = 0,
                      level: float = 0.95, metric: str = "f1") -> dict:
    """Mean F1@K (or precision, or recall@K: `metric`) of `a` minus `b` over the prompts both
    scored, and the `level` percentile interval of that mean over `resamples` bootstrap resamples
    of the prompts. K: None takes the median claims per response over both files (the table's K
    when they are its only rows)."""
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r}: one of {', '.join(METRICS)}")
    ca, cb = claim_counts(a), claim_counts(b)
    ids = sorted(set(ca) & set(cb))
    if not ids:
        raise ValueError(f"{a} and {b} share no response id: they were not scored on the same prompts")
    if K is None:
        K = median_k([ca[i][0] for i in ids] + [cb[i][0] for i in ids])
    fa = {i: getattr(score(*ca[i], K), metric) for i in ids}
    fb = {i: getattr(score(*cb[i], K), metric) for i in ids}
    diff = np.array([fa[i] - fb[i] for i in ids])
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(resamples, len(diff)))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return {"n": len(ids), "K": K, "mean_a": float(np.mean(list(fa.values()))),
            "mean_b": float(np.mean(list(fb.values()))), "difference": float(diff.mean()),
            "low": float(low), "high": float(high), "level": level, "resamples": resamples, "metric": metric,
            "only_in_a": len(ca) - len(ids), "only_in_b": len(cb) - len(ids)}
