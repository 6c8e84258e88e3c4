"""The judge's held-out figures: supported vs not, balanced over the two classes."""
from __future__ import annotations

from collections import defaultdict


def balanced_accuracy(gold: list[bool], pred: list[bool]) -> float:
    """Mean of the recall on true items and the recall on false items."""
    pos = [p for g, p in zip(gold, pred) if g]
    neg = [not p for g, p in zip(gold, pred) if not g]
    parts = [sum(x) / len(x) for x in (pos, neg) if x]
    return sum(parts) / len(parts) if parts else float("nan")


def binary_report(gold: list[bool], pred: list[bool], kinds: list[str]) -> dict:
    """Balanced accuracy; per kind of example, the share judged right."""
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for g, p, k in zip(gold, pred, kinds):
        by_kind[k].append(g == p)
    return {
        "n": len(gold),
        "balanced_accuracy": balanced_accuracy(gold, pred),
        "per_kind": {k: [round(sum(v) / len(v), 4), len(v)] for k, v in sorted(by_kind.items())},
    }
