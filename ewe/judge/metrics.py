"""The judge's held-out figures: supported vs not, balanced over the two classes."""
from __future__ import annotations

from collections import defaultdict

from ..eval.checker_accuracy import balanced_accuracy


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
