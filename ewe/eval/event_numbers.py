"""Numbers tied to their events, measured (issue 57): claims that keep a passage's sentence but
give it the year of another event of the same passage, or change a scale word, each checked
against that passage as `ewe check` would.

From the embedded Wikipedia summaries of articles the shipped judge never trained on
(`ewe.data.splits.is_held_out`), in pairs on the same passage:

* year-swap: a sentence holding one year, given the year of another sentence of the passage
  -> unsupported; control: the sentence as written -> supported.
* scale: a sentence with "N million" (billion, thousand), the scale word changed -> unsupported;
  control: as written.
* unit: a sentence with a unit of length, area, volume, mass or speed, given another unit of
  the same kind with the same digits ("330 metres" -> "330 feet") -> unsupported; control: as
  written.
* era: a year written with BC/AD (BCE/CE), the era turned -> unsupported; control: as written.
* restated (controls only, the checker must keep them): the sentence with one of its amounts
  written another way: "7 million" as "7,000,000", a unit's word as its symbol or the reverse
  ("330 metres" -> "330 m"), "percent" as "%", or converted within rounding ("100 km" -> "62
  miles").

The last three kinds draw from their own random stream, so the first two are the items they
were before (2026-11-29).

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
from ..verify.quantities import quantities
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
    count = {"year-swap": 0, "scale": 0, "unit": 0, "era": 0, "restated": 0}
    rng_units = random.Random(f"units-{seed}")

    def pair(kind: str, title: str, passage: str, control: str, swapped: str | None) -> None:
        k = count[kind]
        for label, claim in ((SUPPORTED, control), (UNSUPPORTED, swapped)):
            if claim is None:
                continue
            items.append({"id": f"{kind}-{k:03d}{'t' if label == SUPPORTED else 'f'}", "kind": kind if label ==
                          UNSUPPORTED or kind == "restated" else "control", "label": label, "claim": claim, "passage_title": title,
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
        for kind, make in (("unit", _unit_swap), ("era", _era_swap), ("restated", _restated)):
            made = [(s, out) for s in sentences for out in [make(s, rng_units)] if out] if count[kind] < n else []
            if made:
                s, out = rng_units.choice(made)
                if kind == "restated":
                    pair(kind, title, passage, out, None)
                else:
                    pair(kind, title, passage, s, out)
        if min(count.values()) >= n:
            break
    return items


# another unit of the same kind, the digits kept: (pattern of what is written, what replaces it)
_OTHER_UNIT = [
    (r"kilomet(?:re|er)s|km(?![²2])", "miles"), (r"miles", "kilometres"), (r"square kilomet(?:re|er)s|km²|km2", "square miles"),
    (r"square miles|sq mi", "square kilometres"), (r"met(?:re|er)s|m(?![²2\w])", "feet"), (r"feet|ft", "metres"),
    (r"hectares", "acres"), (r"acres", "hectares"), (r"kilograms|kg", "pounds"), (r"lb|pounds", "kg"),
    (r"tonnes|tons", "kilograms"), (r"centimet(?:re|er)s|cm", "inches"), (r"inches", "centimetres"),
    (r"cubic kilomet(?:re|er)s|km³|km3", "cubic miles"), (r"cubic miles", "cubic kilometres"),
]
_SWAPPED_DIMENSIONS = {"length", "area", "volume", "mass", "speed"}
# the same amount written another way: pattern -> replacement
_SAME_UNIT = [(r"kilomet(?:re|er)s", "km"), (r"km(?![²2])", "kilometres"), (r"met(?:re|er)s", "m"),
              (r"square kilomet(?:re|er)s", "km²"), (r"km[²2]", "square kilometres"), (r"percent|per cent", "%"),
              (r"kilograms", "kg"), (r"kg", "kilograms"), (r"feet", "ft")]
_KM_PER_MILE = 1.609344


def _unit_swap(sentence: str, rng: random.Random) -> Optional[str]:
    qs = [q for q in quantities(sentence) if q.dimension in _SWAPPED_DIMENSIONS and not q.text.endswith("-")]
    for q in rng.sample(qs, len(qs)):
        start = sentence.find(q.text)
        tail = q.text[len(q.number.raw):]
        for pattern, other in _OTHER_UNIT:
            m = re.fullmatch(rf"(\s*(?:(?:thousand|million|billion)\s+)?)({pattern})", tail)
            if m and start >= 0:
                return sentence[:start] + q.number.raw + m.group(1) + other + sentence[start + len(q.text):]
    return None


def _era_swap(sentence: str, rng: random.Random) -> Optional[str]:
    eras = [m for m in re.finditer(r"(?<=\d)(\s|\xa0)(BCE|BC|CE|AD)\b|\b(AD)(\s|\xa0)(?=\d)", sentence)]
    if not eras:
        return None
    m = rng.choice(eras)
    word = m.group(2) or m.group(3)
    turned = {"BCE": "CE", "BC": "AD", "CE": "BCE", "AD": "BC"}[word]
    if m.group(3):  # "AD 79" -> "79 BC"
        num = re.match(r"[\d,]+", sentence[m.end():]).group(0)
        return sentence[:m.start()] + num + " " + turned + sentence[m.end() + len(num):]
    return sentence[:m.start(2)] + turned + sentence[m.end(2):]


def _restated(sentence: str, rng: random.Random) -> Optional[str]:
    options = []
    for q in quantities(sentence):
        start = sentence.find(q.text)
        if start < 0 or q.era:
            continue
        end = start + len(q.text)
        scale = re.fullmatch(r"(\d+(?:\.\d{1,3})?)(\s|\xa0)(thousand|million|billion)", q.text)
        if scale and not q.unit:
            value = round(q.value)
            options.append(sentence[:start] + f"{value:,}" + sentence[end:])
        tail = q.text[len(q.number.raw):]
        for pattern, other in _SAME_UNIT:
            m = re.fullmatch(rf"(\s|\xa0)*({pattern})", tail)
            if m and q.scale == 1.0:
                sep = "" if other == "%" else " "
                options.append(sentence[:start] + q.number.raw + sep + other + sentence[end:])
        km = re.fullmatch(r"(\s|\xa0)*(kilomet(?:re|er)s|km)", tail)
        if km and q.scale == 1.0 and q.number.value >= 10:
            options.append(sentence[:start] + f"{round(q.number.value / _KM_PER_MILE):,} miles" + sentence[end:])
    return rng.choice(options) if options else None


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
    ap = argparse.ArgumentParser(description="numbers tied to their events: year swaps, scale words, units, eras")
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
