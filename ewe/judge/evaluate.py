"""Judges held to sentences the generator actually wrote, labelled by hand against the article
(tests/data/judge/generated.jsonl; its LABELLING.md says how).

Each sentence is checked the way the controller checks it (claims from the rule splitter,
pronouns resolved from the answer so far) with the article as the only evidence. A sentence
is predicted supported when every claim is; balanced accuracy is over the sentences labelled
supported against those labelled unsupported or not_enough_evidence. Sentences labelled
not_checkable are scored apart: how many the splitter also finds no claim in.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Iterable

from ..data import wiki
from ..eval.checker_accuracy import balanced_accuracy
from ..verify.factchecker import FactChecker
from ..verify.types import NOT_CHECKABLE, SUPPORTED, Evidence
from .data import read


def make_checker(name: str) -> FactChecker:
    """"alignment", a shipped judge (minilm-cross) or a folder written by `ewe judge train`."""
    if name == "alignment":
        from ..verify.alignment import AlignmentChecker

        return FactChecker(AlignmentChecker())
    from .checker import JudgeChecker

    return FactChecker(JudgeChecker(name))


def predictions(fc: FactChecker, rows: Iterable[dict]) -> list[dict]:
    out = []
    for r in rows:
        t = time.perf_counter()
        ev = [Evidence(text=wiki.passage(r["topic"]), title=r["topic"], source_id=r["topic"])]
        check = fc.check_sentence(r["sentence"], context=r.get("context") or None, prompt=r.get("prompt"), evidence=ev)
        out.append({"row": r, "verdict": check.verdict, "seconds": time.perf_counter() - t})
    return out


def summarize(preds: list[dict]) -> dict:
    checkable = [p for p in preds if p["row"]["label"] != NOT_CHECKABLE]
    gold = [p["row"]["label"] == SUPPORTED for p in checkable]
    pred = [p["verdict"] == SUPPORTED for p in checkable]
    by_method: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for p, g, q in zip(checkable, gold, pred):
        by_method[p["row"]["method"]][0].append(g)
        by_method[p["row"]["method"]][1].append(q)
    recall: dict[str, list[bool]] = defaultdict(list)
    for p, q in zip(checkable, pred):
        recall[p["row"]["label"]].append(q == (p["row"]["label"] == SUPPORTED))
    nc = [p for p in preds if p["row"]["label"] == NOT_CHECKABLE]
    return {
        "n": len(checkable),
        "balanced_accuracy": round(balanced_accuracy(gold, pred), 4),
        "right_by_gold_label": {k: [round(sum(v) / len(v), 3), len(v)] for k, v in sorted(recall.items())},
        "by_method": {m: [round(balanced_accuracy(g, q), 4), len(g)] for m, (g, q) in sorted(by_method.items())},
        "not_checkable_found": [sum(p["verdict"] == NOT_CHECKABLE for p in nc), len(nc)],
        "checkable_called_not_checkable": sum(p["verdict"] == NOT_CHECKABLE for p in checkable),
        "seconds_per_sentence": round(sum(p["seconds"] for p in preds) / max(1, len(preds)), 4),
    }


def evaluate_generated(path: Path, judges: list[str]) -> dict:
    rows = read(path)
    return {name: summarize(predictions(make_checker(name), rows)) for name in judges}


RECORDED = Path(__file__).parent / "weights" / "recorded.json"  # figures of backends without a manifest


def record(judge: str, summary: dict, labelled: str | Path) -> Path:
    """Store a judge's figure on the hand-labelled set: in a trained judge's manifest
    (`hand_labelled`), for alignment in weights/recorded.json (what `ewe eval` reports name)."""
    from ..files import write_json
    from .checker import resolve

    figure = {"set": str(labelled), "n": summary["n"], "balanced_accuracy": summary["balanced_accuracy"],
              "right_by_gold_label": summary["right_by_gold_label"]}
    if judge == "alignment":
        write_json(RECORDED, {**_recorded_table(), judge: figure})
        return RECORDED
    path = resolve(judge) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["hand_labelled"] = figure
    write_json(path, manifest)
    return path


def recorded(judge: str) -> dict | None:
    """The figure `record` stored for `judge` (alignment or a trained judge), or None."""
    from .checker import resolve

    if judge == "alignment":
        return _recorded_table().get(judge)
    return json.loads((resolve(judge) / "manifest.json").read_text(encoding="utf-8")).get("hand_labelled")


def _recorded_table() -> dict:
    return json.loads(RECORDED.read_text(encoding="utf-8")) if RECORDED.exists() else {}
