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
from typing import Iterable, Optional

from ..data import wiki
from .metrics import balanced_accuracy
from ..verify.factchecker import FactChecker
from ..verify.types import NOT_CHECKABLE, SUPPORTED, Evidence
from ..verify.veto import vetoed
from .data import read


def make_checker(name: str) -> FactChecker:
    """"alignment" ("alignment-atomic": with the scorer's splitter, configs/eval.yaml), a shipped
    judge (minilm-cross) or a folder written by `ewe judge train`; a judge's name with "+veto"
    ("minilm-cross+veto") is that judge under the contradiction veto (checker.veto)."""
    if name.endswith("+veto"):
        from ..verify.alignment import AlignmentChecker
        from ..verify.veto import ContradictionVeto

        judge = make_checker(name[:-len("+veto")])
        return FactChecker(ContradictionVeto(judge.checker, AlignmentChecker()), extractor=judge.extractor)
    if name in ("alignment", "alignment-atomic"):
        from ..verify.alignment import AlignmentChecker
        from ..verify.claims import RuleClaimExtractor

        return FactChecker(AlignmentChecker(), extractor=RuleClaimExtractor(atomic=name == "alignment-atomic"))
    from .checker import JudgeChecker

    return FactChecker(JudgeChecker(name))


def predictions(fc: FactChecker, rows: Iterable[dict]) -> list[dict]:
    out = []
    for r in rows:
        t = time.perf_counter()
        out.append({"row": r, "verdict": check_row(fc, r).verdict, "seconds": time.perf_counter() - t})
    return out


def check_row(fc: FactChecker, r: dict):
    """A labelled sentence checked as the controller checks it, the article its only evidence."""
    ev = [Evidence(text=wiki.passage(r["topic"]), title=r["topic"], source_id=r["topic"])]
    return fc.check_sentence(r["sentence"], context=r.get("context") or None, prompt=r.get("prompt"), evidence=ev)


def sentence_score(check) -> Optional[float]:
    """The sentence's P(supported) as the loop decides on it: the lowest of its claims' (a claim
    the judge read only in part counts 0, and so does one the contradiction veto overruled: it keeps
    the judge's score up to 0.49, above a threshold such as 0.3, but the loop rewrites it by its
    label); None when it holds no claim."""
    if not check.verdicts:
        return None
    return min(0.0 if "past what the judge reads" in (v.rationale or "") or vetoed(v) else float(v.score)
               for v in check.verdicts)


def scored(fc: FactChecker, rows: Iterable[dict]) -> list[dict]:
    """Each checkable labelled sentence with its score: {"row", "score", "gold"} (gold: supported)."""
    out = []
    for r in rows:
        if r["label"] == NOT_CHECKABLE:
            continue
        check = check_row(fc, r)
        out.append({"row": r, "score": sentence_score(check), "gold": r["label"] == SUPPORTED,
                    "contradicted": check.contradicted})
    return out


def rewrite_rules(items: list[dict], threshold: float) -> dict:
    """What each `controller.rewrite_when` rule sends back to be written again: the share of true
    sentences (each a wasted backtrack and candidate round) and of the others (each a chance to
    fix one). not_supported: every sentence not passing `threshold`; contradicted: only those with
    a claim the judge finds contradicted by its evidence (at the checker's own threshold)."""
    pos = [i for i in items if i["gold"]]
    neg = [i for i in items if not i["gold"]]

    def share(xs, rewritten) -> float:
        return round(sum(map(rewritten, xs)) / max(1, len(xs)), 4)

    def not_supported(i) -> bool:
        return not ((i["score"] or 0.0) > threshold)

    return {rule: {"true_rewritten": share(pos, f), "others_rewritten": share(neg, f)}
            for rule, f in (("not_supported", not_supported), ("contradicted", lambda i: i["contradicted"]))}


def distinct(items: list[dict]) -> list[dict]:
    """Each (article, sentence) once: an answer that repeats a sentence (RA's do) would otherwise
    weigh it two or three times, and one article's repeats would sway a split's figure."""
    seen, out = set(), []
    for i in items:
        key = (i["row"]["topic"], " ".join(i["row"]["sentence"].split()))
        if key not in seen:
            seen.add(key)
            out.append(i)
    return out


def at_threshold(items: list[dict], threshold: float) -> dict:
    """Supported sentences kept, the others rejected, and their mean, when a sentence passes above
    `threshold` (a sentence with no claim never passes)."""
    pos = [i for i in items if i["gold"]]
    neg = [i for i in items if not i["gold"]]
    kept = sum((i["score"] or 0.0) > threshold for i in pos) / max(1, len(pos))
    rejected = sum(not ((i["score"] or 0.0) > threshold) for i in neg) / max(1, len(neg))
    return {"threshold": threshold, "supported_kept": round(kept, 4), "others_rejected": round(rejected, 4),
            "balanced_accuracy": round((kept + rejected) / 2, 4), "n_supported": len(pos), "n_other": len(neg)}


THRESHOLDS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def roc(items: list[dict], thresholds: Iterable[float] = THRESHOLDS) -> list[dict]:
    return [at_threshold(items, t) for t in thresholds]


def operating_point(items: list[dict], false_accept_cost: float = 1.0,
                    thresholds: Iterable[float] = THRESHOLDS) -> dict:
    """The threshold of least cost on `items` (the validation split): a true sentence rejected
    costs 1 (the loop backtracks and writes candidates again), a false one accepted
    `false_accept_cost` (it stays in the answer). Costs weigh the two error *rates*, not the
    set's counts: the labelled set's mix (mostly bare answers' inventions) is not the loop's, so
    at 1 this is the threshold of best balanced accuracy. Ties go to the higher threshold."""
    best = None
    for t in sorted(thresholds, reverse=True):
        p = at_threshold(items, t)
        cost = (1 - p["supported_kept"]) + false_accept_cost * (1 - p["others_rejected"])
        if best is None or cost < best[0] - 1e-12:
            best = (cost, p)
    return {**best[1], "false_accept_cost": false_accept_cost, "cost": round(best[0], 4)}


def agreement(first: list[dict], second: list[dict]) -> dict:
    """How two readers' labels of the same sentences agree: raw (four labels), Cohen's kappa, and
    on supported against the rest for the sentences both call checkable (what the judge is scored on)."""
    by_id = {r["id"]: r["label"] for r in first}
    pairs = [(by_id[r["id"]], r["label"]) for r in second if r["id"] in by_id]
    if not pairs:
        raise ValueError("the second reading shares no id with the labelled set")
    n = len(pairs)
    raw = sum(a == b for a, b in pairs) / n
    labels = {x for p in pairs for x in p}
    chance = sum((sum(a == lab for a, _ in pairs) / n) * (sum(b == lab for _, b in pairs) / n) for lab in labels)
    both = [(a == SUPPORTED, b == SUPPORTED) for a, b in pairs if NOT_CHECKABLE not in (a, b)]
    return {"n": n, "raw": round(raw, 4), "kappa": round((raw - chance) / (1 - chance), 4) if chance < 1 else 1.0,
            "supported_vs_rest": round(sum(a == b for a, b in both) / max(1, len(both)), 4), "n_checkable": len(both)}


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
    if judge in ("alignment", "alignment-atomic"):
        write_json(RECORDED, {**_recorded_table(), judge: figure})
        return RECORDED
    path = resolve(judge) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["hand_labelled"] = figure
    write_json(path, manifest)
    return path


def record_operating_point(judge: str, report: dict, labelled: str | Path) -> Path:
    """Store the chosen threshold and its figures in a trained judge's manifest (`operating_point`)."""
    from ..files import write_json
    from .checker import resolve

    path = resolve(judge) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["operating_point"] = {"set": str(labelled), **report}
    write_json(path, manifest)
    return path


def recorded(judge: str) -> dict | None:
    """The figure `record` stored for `judge` (alignment, alignment-atomic or a trained judge), or None."""
    from .checker import resolve

    if judge in ("alignment", "alignment-atomic"):
        return _recorded_table().get(judge)
    return json.loads((resolve(judge) / "manifest.json").read_text(encoding="utf-8")).get("hand_labelled")


def _recorded_table() -> dict:
    return json.loads(RECORDED.read_text(encoding="utf-8")) if RECORDED.exists() else {}
