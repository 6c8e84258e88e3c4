"""Scoring a checker on the labelled set: sentence-level balanced accuracy, overall and
per alteration kind. A sentence is predicted true when FactChecker finds it factual."""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Iterable, Optional

from ..judge.metrics import balanced_accuracy
from ..verify.factchecker import FactChecker
from ..verify.types import Evidence


def run_items(fc: FactChecker, items: Iterable[dict], gold_evidence: bool = True) -> list[dict]:
    """Check each item's sentence (context: the summary text before it); with
    `gold_evidence` the item's passage is the evidence for every claim."""
    rows = []
    for it in items:
        t = time.perf_counter()
        ev = [Evidence(text=it["evidence"], title=it["title"], source_id=it["title"])] if gold_evidence else None
        res = fc.check_sentence(it["sentence"], context=it.get("context") or None, evidence=ev)
        rows.append(dict(item=it, check=res, pred=res.factual, seconds=time.perf_counter() - t))
    return rows


def summarize(rows: list[dict]) -> dict:
    """Balanced accuracy overall; per kind, the share judged correctly (recall on true
    kinds, detection rate on false kinds); time per claim."""
    gold = [r["item"]["label"] for r in rows]
    pred = [r["pred"] for r in rows]
    by_kind: dict[str, list[bool]] = defaultdict(list)
    by_source: dict[str, list[bool]] = defaultdict(list)
    for g, p, r in zip(gold, pred, rows):
        by_kind[r["item"]["kind"]].append(g == p)
        edit = r["item"].get("edit") or {}
        if "from_passage" in edit and r["item"]["kind"] != "negation":
            by_source["stated elsewhere in passage" if edit["from_passage"] else "new to passage"].append(g == p)
    n_claims = sum(max(1, len(r["check"].claims)) for r in rows)
    return dict(
        n=len(rows),
        balanced_accuracy=balanced_accuracy(gold, pred),
        true_recall=_mean([p for g, p in zip(gold, pred) if g]),
        false_detection=_mean([not p for g, p in zip(gold, pred) if not g]),
        per_kind={k: (_mean(v), len(v)) for k, v in sorted(by_kind.items())},
        false_by_replacement={k: (_mean(v), len(v)) for k, v in sorted(by_source.items())},
        seconds_per_claim=sum(r["seconds"] for r in rows) / max(1, n_claims),
        claims_per_sentence=n_claims / max(1, len(rows)),
    )


def _mean(x: list) -> Optional[float]:
    return sum(x) / len(x) if x else None
