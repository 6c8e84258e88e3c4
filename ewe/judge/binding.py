"""Subject binding measured end to end: the labelled set of ewe.data.subject_set (claims
checked against a passage about someone else) through the whole checker, as `ewe check`
runs it: rule claims (pronouns resolved from the prompt), subject binding, a judge, the
passage given as plain text. A claim set is predicted supported when every claim is.

    python -m ewe.judge.binding [--no-bind]     (also: ewe judge eval-binding)

`--no-bind` turns the binding off (checker.bind_subjects: false): the figure before it.
`--plain` gives each passage as users paste it: its text without the "Title (description):"
head, so whom it is about must be read from the text (issue 57).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Optional

from ..argtypes import positive_int, seed
from ..data.subject_set import DEFAULT_PATH, load_subject_set
from .metrics import balanced_accuracy
from ..retrieval.chunking import split_passage
from ..verify.factchecker import FactChecker
from ..verify.types import SUPPORTED


def evaluate_binding(path: Path | str = DEFAULT_PATH, judge: str = "minilm-cross", bind: bool = True,
                     limit: Optional[int] = None, plain: bool = False, rows: Optional[list[dict]] = None) -> dict:
    """Balanced accuracy (supported vs not) over the set, and per kind of item the share judged
    right; `limit`: the first N items only; `plain`: passages without their heads; `rows`: items
    built here (ewe.data.subject_set) instead of the file at `path`."""
    from .checker import JudgeChecker
    from .metrics import binary_report

    rows = (rows if rows is not None else load_subject_set(path))[:limit]
    fc = FactChecker(JudgeChecker(judge), bind_subjects=bind)
    t = time.perf_counter()
    pred = [fc.check_sentence(r["claim"], prompt=r.get("prompt"),
                              evidence=[split_passage(r["evidence"])[2] if plain else r["evidence"]]).verdict == SUPPORTED
            for r in rows]
    gold = [r["label"] == SUPPORTED for r in rows]
    report = binary_report(gold, pred, [r["kind"] for r in rows])
    report["balanced_accuracy"] = round(report["balanced_accuracy"], 4)
    report["per_swap"] = per_swap(rows, gold, pred)
    report.update(judge=judge, bind_subjects=bind, plain=plain, seconds=round(time.perf_counter() - t, 1))
    return report


SWAPS = {"name": ("swap", "namesake", "control"), "pronoun": ("pronoun-other", "pronoun-own")}


def possessive(row: dict) -> bool:
    """The sentence of the passage opened with His/Her (issue 57's possessive openings)."""
    return row.get("source_sentence", "").startswith(("His ", "Her "))


def per_swap(rows: list[dict], gold: list[bool], pred: list[bool]) -> dict:
    """Balanced accuracy per kind of swap with its controls: name (swaps and namesakes against
    the sentence given to its own subject), pronoun (a he/she sentence under another person's
    prompt against the same under its own), possessive (every item whose sentence opens with
    His/Her, whichever kind): [figure, items]."""
    groups = {k: [r["kind"] in kinds for r in rows] for k, kinds in SWAPS.items()}
    groups["possessive"] = [possessive(r) for r in rows]
    out = {}
    for name, member in groups.items():
        g = [x for x, m in zip(gold, member) if m]
        p = [x for x, m in zip(pred, member) if m]
        if any(g) and not all(g):
            out[name] = [round(balanced_accuracy(g, p), 4), len(g)]
    return out


def release_check(judge: str, against: str = "minilm-cross") -> dict:
    """A retrained judge keeps the shipped one's sensitivity to whom a passage is about: its
    balanced accuracy on the binding set with plain passages (no head, so the judge's own reading
    of names counts more) may not fall below `against`'s, both measured now with the same code.
    {"passed", judge: figure, against: figure}."""
    mine = evaluate_binding(judge=judge, plain=True)["balanced_accuracy"]
    theirs = evaluate_binding(judge=against, plain=True)["balanced_accuracy"]
    return {"passed": mine >= theirs, "binding_plain": {judge: mine, against: theirs}}


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Subject binding: balanced accuracy on tests/data/subject/binding.jsonl")
    add_arguments(ap)
    return run(ap.parse_args(argv))


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--labelled", default=str(DEFAULT_PATH))
    ap.add_argument("--judge", default="minilm-cross", help="a shipped judge (minilm-cross) or a judge folder")
    ap.add_argument("--no-bind", dest="bind", action="store_false", help="subject binding off: the figure before it")
    ap.add_argument("--limit", type=positive_int, help="only the first N items")
    ap.add_argument("--plain", action="store_true", help="passages as users paste them: no \"Title (description):\" head")
    ap.add_argument("--seed", type=seed, help="build a fresh set from the embedded Wikipedia with this seed "
                    "(ewe.data.subject_set) instead of reading --labelled")


def run(args) -> int:
    rows = None
    if args.seed is not None:
        from ..data.subject_set import build_subject_set

        rows = build_subject_set(seed=args.seed)
    print(json.dumps(evaluate_binding(args.labelled, args.judge, args.bind, args.limit, args.plain, rows), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
