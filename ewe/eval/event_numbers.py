"""Numbers tied to their events, measured (issue 57): claims that keep a passage's sentence but
give it the year of another event of the same passage, or change a scale word, each checked
against that passage as `ewe check` would.

From the embedded Wikipedia summaries of articles the shipped judge never trained on
(`ewe.data.splits.is_held_out`), in pairs on the same passage:

* year-swap: a sentence holding one year, given the year of another sentence of the passage
  -> unsupported; control: the sentence as written -> supported.
* scale: a sentence with "N million" (billion, thousand), the scale word changed -> unsupported;
  control: as written.

    python -m ewe.eval.event_numbers [--veto] [--seed N] [--n N]

Prints balanced accuracy and the share right per kind. Deterministic by seed.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import time
from typing import Optional

from ..argtypes import positive_int, seed
from ..data.splits import is_held_out
from ..verify.text import numbers, split_sentences
from ..verify.types import SUPPORTED, UNSUPPORTED

_SCALE = re.compile(r"\b(\d[\d,.]*)\s+(thousand|million|billion|trillion)\b")
_OTHER_SCALE = {"thousand": "million", "million": "billion", "billion": "million", "trillion": "billion"}


def _years(sentence: str) -> list[str]:
    return [n.raw for n in numbers(sentence) if n.kind == "year"]


def build_event_number_set(summaries: Optional[dict] = None, n: int = 100, seed: int = 0) -> list[dict]:
    """Items in pairs (control, then its swap), at most `n` pairs of each kind."""
    if summaries is None:
        from ..data import wiki

        summaries = wiki.summaries()
    rng = random.Random(seed)
    titles = sorted(t for t, e in summaries.items() if is_held_out(t) and len(e.get("extract") or "") >= 200)
    rng.shuffle(titles)
    items: list[dict] = []
    count = {"year-swap": 0, "scale": 0}

    def pair(kind: str, title: str, passage: str, control: str, swapped: str) -> None:
        k = count[kind]
        for label, claim in ((SUPPORTED, control), (UNSUPPORTED, swapped)):
            items.append({"id": f"{kind}-{k:03d}{'t' if label == SUPPORTED else 'f'}", "kind": kind if label ==
                          UNSUPPORTED else "control", "label": label, "claim": claim, "passage_title": title,
                          "evidence": passage})
        count[kind] += 1

    for title in titles:
        entry = summaries[title]
        passage = entry["extract"]
        sentences = [s for s in split_sentences(passage) if 40 <= len(s) <= 300]
        if count["year-swap"] < n:
            dated = [(s, _years(s)) for s in sentences]
            single = [(s, ys[0]) for s, ys in dated if len(ys) == 1]
            all_years = {y for _, ys in dated for y in ys}
            if single and len(all_years) >= 2:
                s, year = rng.choice(single)
                other = rng.choice(sorted(all_years - {year}))
                pair("year-swap", title, passage, s, re.sub(rf"(?<!\d){year}(?!\d)", other, s, count=1))
        if count["scale"] < n:
            scaled = [s for s in sentences if _SCALE.search(s)]
            if scaled:
                s = rng.choice(scaled)
                m = _SCALE.search(s)
                swapped = s[:m.start(2)] + _OTHER_SCALE[m.group(2)] + s[m.end(2):]
                pair("scale", title, passage, s, swapped)
        if min(count.values()) >= n:
            break
    return items


def evaluate_event_numbers(items: list[dict], veto: bool, judge: str = "minilm-cross") -> dict:
    """Balanced accuracy (supported vs not) of the judge, with or without the veto, the passage
    given as plain text."""
    from ..judge.checker import JudgeChecker
    from ..judge.metrics import binary_report
    from ..verify.factchecker import FactChecker

    backend = JudgeChecker(judge)
    if veto:
        from ..verify.alignment import AlignmentChecker
        from ..verify.veto import ContradictionVeto

        backend = ContradictionVeto(backend, AlignmentChecker())
    fc = FactChecker(backend)
    t = time.perf_counter()
    pred = [fc.check_sentence(r["claim"], evidence=[r["evidence"]]).verdict == SUPPORTED for r in items]
    report = binary_report([r["label"] == SUPPORTED for r in items], pred, [r["kind"] for r in items])
    report["balanced_accuracy"] = round(report["balanced_accuracy"], 4)
    report.update(judge=judge, veto=veto, seconds=round(time.perf_counter() - t, 1))
    return report


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="numbers tied to their events: year swaps and scale words")
    ap.add_argument("--veto", action="store_true", help="the judge with checker.veto: contradiction")
    ap.add_argument("--seed", type=seed, default=0)
    ap.add_argument("--n", type=positive_int, default=100, help="pairs of each kind at most")
    ap.add_argument("--judge", default="minilm-cross")
    args = ap.parse_args(argv)
    items = build_event_number_set(n=args.n, seed=args.seed)
    print(json.dumps(evaluate_event_numbers(items, args.veto, args.judge), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
