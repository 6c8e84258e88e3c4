"""The scorer's claim extractor held to answers split into claims by hand (tests/data/atomic_claims/,
its LABELLING.md). The dev split is where the extractor's rules were written: its figures may not
fall back. The test split was never read while writing rules: its figures are reported (docs), and
here only held to what makes them figures at all."""
from __future__ import annotations

from pathlib import Path

import pytest

from ewe.eval.claim_agreement import agreement, atomic_extract, read_labels, second_reader, summary
from ewe.data.splits import split_of

LABELS = Path(__file__).parent / "data" / "atomic_claims"


@pytest.fixture(scope="module", params=["dev", "test"])
def labelled(request):
    return request.param, read_labels(LABELS / f"{request.param}.jsonl")


def test_the_labelled_answers_are_of_their_split_and_of_several_methods(labelled):
    split, rows = labelled
    assert len(rows) >= 40
    assert {split_of(r["topic"]) for r in rows} == {split}
    assert {r["method"] for r in rows} == {"bare", "ra-1", "ra-4", "ewe"}
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(r.get("reader") for r in rows)


def test_the_extractor_keeps_its_dev_figures():
    s = summary(agreement(read_labels(LABELS / "dev.jsonl"), atomic_extract))
    # measured when the rules were written (2026-12-03): count off by 14.0%, recall 0.778
    assert s["count_error"] <= 0.15 and s["recall"] >= 0.77, s


def test_a_second_reader_split_the_test_answers_and_the_two_agree():
    """The test answers split again by a reader who saw neither the first split nor the extractor's
    (test-second-reader.jsonl): the extractor's figures read against how close two readers come.
    Measured 2026-12-03: count off by 8.0% per answer, recall of the first reader's claims 0.912."""
    rows = read_labels(LABELS / "test.jsonl")
    other = read_labels(LABELS / "test-second-reader.jsonl")
    assert {r["reader"] for r in other}.isdisjoint({r["reader"] for r in rows})
    s = summary(agreement(rows, second_reader(rows, other)))
    assert s["answers"] == len(rows) and s["count_error"] <= 0.10 and s["recall"] >= 0.90, s


def test_a_second_reader_of_other_answers_is_refused():
    rows = read_labels(LABELS / "test.jsonl")
    other = [dict(r) for r in read_labels(LABELS / "test-second-reader.jsonl")]
    with pytest.raises(ValueError, match="lacks 1 of the answers"):
        second_reader(rows, other[1:])
    other[0]["answer"] += " And more."
    with pytest.raises(ValueError, match="different answer for"):
        second_reader(rows, other)
