"""The held-out set of numbers tied to their events (ewe/eval/event_numbers.py, issue 57): each
swap changes what a number counts and each restatement keeps it, by construction."""
from ewe.data.splits import is_held_out
from ewe.eval.event_numbers import build_event_number_set
from ewe.verify.quantities import quantities
from ewe.verify.types import SUPPORTED, UNSUPPORTED

TEXTS = [
    "The river is 1,200 kilometres long and drains 45,000 square kilometres. It was first mapped in 1850. "
    "A dam was built on it in 1962, and about 3.5 million people live in its basin, most of them in towns "
    "along its lower course.",
    "The city was founded in 753 BC according to legend. Its walls were rebuilt in 1420, and the old town "
    "covers 120 hectares. It had 2.8 million inhabitants in 2011, spread over 1,285 square kilometres "
    "of hills and plain.",
    "The ship was launched in 1911 and sank in 1912 after striking an iceberg. She was 269 metres long "
    "and displaced 52,310 tonnes. Her construction cost 7.5 million pounds sterling at the time, a sum "
    "her owners raised in two years.",
]


def summaries():
    titles = [t for t in (f"Place {i}" for i in range(2000)) if is_held_out(t)][:len(TEXTS)]
    assert all(len(text) >= 200 for text in TEXTS)  # the builder's shortest passage
    return {t: {"extract": text} for t, text in zip(titles, TEXTS)}


def amounts(text):
    return sorted(round(q.value * q.factor, -1) for q in quantities(text) if q.kind != "year")


def test_every_kind_is_built_and_pairs_a_control_with_its_swap():
    items = build_event_number_set(summaries(), n=5, seed=0)
    kinds = {r["kind"] for r in items}
    assert {"year-swap", "scale", "unit", "era", "restated", "control"} <= kinds
    for control, swap in zip(items, items[1:]):
        if swap["label"] == UNSUPPORTED:
            assert control["label"] == SUPPORTED and control["kind"] == "control"
            assert control["claim"] != swap["claim"] and control["evidence"] == swap["evidence"]


def test_a_unit_swap_keeps_the_digits_and_a_restatement_keeps_the_amount():
    items = build_event_number_set(summaries(), n=5, seed=0)
    for r in items:
        sentence = next(s for s in r["evidence"].split(". ") if s.split()[:3] == r["claim"].split()[:3])
        if r["kind"] == "unit":
            conflicts = [c.conflicts_with(q) for c in quantities(r["claim"]) for q in quantities(sentence)]
            assert "unit" in conflicts, r["claim"]
        if r["kind"] == "restated":
            assert r["label"] == SUPPORTED and r["claim"] != sentence.rstrip(".") + "."
            assert all(any(c.same_amount(q) for q in quantities(r["evidence"])) for c in quantities(r["claim"])), r
