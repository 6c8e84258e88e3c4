"""Numbers read with their scale words, units and eras (ewe/verify/quantities.py, issue 57)."""
import pytest

from ewe.verify.quantities import quantities


def one(text):
    [q] = quantities(text)
    return q


@pytest.mark.parametrize("text, written, value, unit, era", [
    ("about 7 million visitors", "7 million", 7e6, "", 0),
    ("7,000,000 visitors", "7,000,000", 7e6, "", 0),
    ("23,600 cubic kilometres of water", "23,600 cubic kilometres", 23600, "km3", 0),
    ("an area of 440\xa0km2", "440\xa0km2", 440, "km2", 0),
    ("25 million years old", "25 million years", 25e6, "year", 0),
    ("It cost $3.69 billion", "$3.69 billion", 3.69e9, "USD", 0),
    ("born in 44 BC", "44 BC", 44, "", -1),
    ("erupted in AD 79", "AD 79", 79, "", 1),
    ("22 percent of it", "22 percent", 22, "%", 0),
    ("five in a row", "five", 5, "", 0),  # "in" is never a unit
    ("the 1990s", "1990s", 1990, "", 0),
    ("79 ad campaigns", "79", 79, "", 0),  # eras are written in capitals
])
def test_a_number_is_read_with_what_it_counts(text, written, value, unit, era):
    q = one(text)
    assert (q.text, q.value, q.unit, q.era) == (written, pytest.approx(value), unit, era)


@pytest.mark.parametrize("a, b", [
    ("7 million", "7,000,000"),
    ("42.9 million", "42,900,000"),
    ("330 metres", "330 m"),
    ("330 m", "1,083 ft"),
    ("100 km", "62 miles"),
    ("23,600 cubic kilometres", "5,660 cubic miles"),
    ("22 percent", "22%"),
    ("10,100 tonnes", "10,100 tons"),
    ("330", "330 metres"),  # a bare number takes the other side's unit
    ("AD 79", "79"),  # an unwritten era is AD
])
def test_the_same_amount_written_two_ways(a, b):
    qa, qb = one(a), one(b)
    assert qa.same_amount(qb) and qb.same_amount(qa)
    assert qa.conflicts_with(qb) is None


@pytest.mark.parametrize("a, b, kind", [
    ("25 million years", "25 billion years", "scale"),
    ("3.69 million", "3.69 billion", "scale"),
    ("25 years", "25 million years", "scale"),
    ("23,600 cubic kilometres", "23,600 cubic miles", "unit"),
    ("40 km", "40 miles", "unit"),
    ("10,100 tonnes", "10,100 kg", "unit"),
    ("$5 million", "€5 million", "unit"),
    ("753 BC", "753 AD", "era"),
    ("44", "44 BC", "era"),
])
def test_the_same_digits_counting_something_else_conflict(a, b, kind):
    qa, qb = one(a), one(b)
    assert not qa.same_amount(qb)
    assert qa.conflicts_with(qb) == kind


@pytest.mark.parametrize("a, b", [
    ("100 km", "70 miles"),  # 113 km: beyond rounding
    ("330 m", "1,200 ft"),
])
def test_a_converted_amount_beyond_rounding_is_another_amount(a, b):
    assert not one(a).same_amount(one(b))


def test_another_number_is_no_conflict():
    """"7 million" and "7 museums" are different numbers, not the same digits in another scale."""
    assert one("7 million").conflicts_with(one("7 museums")) is None
