"""Numbers read with what they count: scale words, units and eras (issue 57).

"7 million" and "7,000,000" are one number; "25 million years" and "25 billion years" are not,
nor "23,600 cubic kilometres" and "23,600 cubic miles", nor "44 BC" and "44". A claim's number
is supported by a passage's when both name the same amount: the same scaled value in the same
unit, or a converted one within rounding ("62 miles" for "100 km"). The checks of the alignment
checker and the contradiction veto compare these, not the digits alone.

Only units whose words are unambiguous after a number are read ("in", "pound" and "m" alone
after a count are not: "5 in a row", "10 pounds" of money, "7m"); a number with no unit word
is a bare count and stands for any unit the other side gives it (a missing unit is not a
contradiction, a different one is).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .text import Number, numbers

SCALES = {"thousand": 1e3, "million": 1e6, "mn": 1e6, "mln": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}

_L = {"m": 1.0, "km": 1e3, "cm": 1e-2, "mm": 1e-3, "ft": 0.3048, "in": 0.0254, "mi": 1609.344, "yd": 0.9144,
      "nmi": 1852.0}
# unit word -> (canonical unit, dimension, factor to the dimension's base unit)
_UNIT_WORDS: dict[str, tuple[str, str, float]] = {}


def _add(dimension: str, unit: str, factor: float, *spellings: str) -> None:
    for w in (unit, *spellings):
        _UNIT_WORDS[w] = (unit, dimension, factor)


_add("length", "m", 1.0, "metre", "metres", "meter", "meters")
_add("length", "km", 1e3, "kilometre", "kilometres", "kilometer", "kilometers")
_add("length", "cm", 1e-2, "centimetre", "centimetres", "centimeter", "centimeters")
_add("length", "mm", 1e-3, "millimetre", "millimetres", "millimeter", "millimeters")
_add("length", "ft", 0.3048, "foot", "feet")
_add("length", "in", 0.0254, "inch", "inches")  # "in" itself is a preposition: never read as a unit
_add("length", "mi", 1609.344, "mile", "miles")
_add("length", "yd", 0.9144, "yard", "yards")
_add("length", "nmi", 1852.0, "nautical mile", "nautical miles")
_add("area", "km2", 1e6, "km²", "sq km", "square kilometre", "square kilometres", "square kilometer",
     "square kilometers")
_add("area", "m2", 1.0, "m²", "sq m", "square metre", "square metres", "square meter", "square meters")
_add("area", "mi2", 1609.344 ** 2, "mi²", "sq mi", "square mile", "square miles")
_add("area", "ft2", 0.3048 ** 2, "ft²", "sq ft", "square foot", "square feet")
_add("area", "ha", 1e4, "hectare", "hectares")
_add("area", "acre", 4046.8564, "acres")
for _u, _f in _L.items():
    _add("volume", f"{_u}3", _f ** 3, f"{_u}³", f"cu {_u}")
_add("volume", "km3", 1e9, "cubic kilometre", "cubic kilometres", "cubic kilometer", "cubic kilometers")
_add("volume", "m3", 1.0, "cubic metre", "cubic metres", "cubic meter", "cubic meters")
_add("volume", "mi3", 1609.344 ** 3, "cubic mile", "cubic miles")
_add("volume", "ft3", 0.3048 ** 3, "cubic foot", "cubic feet")
_add("volume", "l", 1e-3, "litre", "litres", "liter", "liters")
_add("volume", "gal", 3.785411784e-3, "gallon", "gallons")
_add("mass", "kg", 1.0, "kilogram", "kilograms", "kilo", "kilos")
_add("mass", "g", 1e-3, "gram", "grams")
_add("mass", "t", 1e3, "tonne", "tonnes", "ton", "tons", "metric ton", "metric tons")  # a ton within rounding
_add("mass", "lb", 0.45359237, "lbs")
_add("speed", "km/h", 1 / 3.6, "kph", "kmh", "kilometres per hour", "kilometers per hour")
_add("speed", "mph", 0.44704, "miles per hour")
_add("speed", "m/s", 1.0, "metres per second", "meters per second")
_add("time", "s", 1.0, "sec", "second", "seconds")
_add("time", "min", 60.0, "minute", "minutes")
_add("time", "h", 3600.0, "hr", "hrs", "hour", "hours")
_add("time", "day", 86400.0, "days")
_add("time", "week", 604800.0, "weeks")
_add("time", "month", 2629800.0, "months")
_add("time", "year", 31557600.0, "years", "yr", "yrs")
_add("percent", "%", 1.0, "percent", "per cent")
_add("temperature-c", "°C", 1.0, "degrees Celsius", "degrees celsius")
_add("temperature-f", "°F", 1.0, "degrees Fahrenheit", "degrees fahrenheit")
_add("people", "people", 1.0, "persons", "inhabitants", "residents")
_add("species", "species", 1.0)
_add("money-USD", "USD", 1.0, "US dollars", "dollars")
_add("money-EUR", "EUR", 1.0, "euros")
_add("money-GBP", "GBP", 1.0, "pounds sterling")
_CURRENCY_SIGNS = {"$": "USD", "US$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_ERAS = {"bc": -1, "bce": -1, "ad": 1, "ce": 1}

_UNIT_BY_LOWER = {w.lower(): entry for w, entry in _UNIT_WORDS.items()}
_unit_alternatives = sorted((w for w in _UNIT_WORDS if w != "in"), key=len, reverse=True)
_AFTER = re.compile(
    r"\s*(?:(?P<scale>" + "|".join(SCALES) + r")\b)?"
    r"(?:[\s-]*(?P<unit>" + "|".join(re.escape(w) for w in _unit_alternatives) + r")(?![\w²³]))?"
    r"(?:\s*(?P<era>(?-i:BCE|BC|AD|CE|B\.C\.(?:E\.)?|A\.D\.))(?![\w]))?",
    re.IGNORECASE,
)
_BEFORE = re.compile(r"(?P<sign>US\$|[$€£¥])\s?$|(?:^|\s)(?P<era>AD|A\.D\.|CE)\s+$")


@dataclass(frozen=True)
class Quantity:
    """A number with its scale word, unit and era, as written (`text`) and normalized."""

    number: Number
    text: str
    scale: float = 1.0
    unit: str = ""  # canonical ("km", "%", "USD"); "" for a bare count
    dimension: str = ""
    factor: float = 1.0  # unit -> the dimension's base unit
    era: int = 0  # -1 BC, +1 AD (written), 0 not written

    @property
    def kind(self) -> str:
        return self.number.kind

    @property
    def label(self) -> str:
        """How reasons name it: the number's key when bare ("3" for "three"), else as written."""
        return self.text if (self.scale != 1.0 or self.unit or self.era) else self.number.key

    @property
    def value(self) -> float:
        """The amount in its own unit, scale word applied ("7 million" -> 7e6)."""
        return self.number.value * self.scale

    def same_amount(self, other: "Quantity") -> bool:
        """Whether `other` states this amount: the same scaled value in a compatible unit (a bare
        number takes the other side's unit), converted units agreeing within rounding, the same
        era (an unwritten era is AD)."""
        if (self.era < 0) != (other.era < 0):
            return False
        if self.dimension and other.dimension:
            if self.dimension != other.dimension:
                return False
            if self.unit != other.unit:
                a, b = self.value * self.factor, other.value * other.factor
                return abs(a - b) <= _rounding(self, other) * max(abs(a), abs(b))
        return _close(self.value, other.value)

    def conflicts_with(self, other: "Quantity") -> str | None:
        """How the same digits differ in what they count: "scale" ("25 billion years" against "25
        million years"), "unit" (cubic miles against cubic kilometres) or "era" (44 against 44 BC);
        None when they state the same amount or differ in digits. A unit or scale written on one
        side only is no conflict ("330" against "330 metres")."""
        if self.number.value != other.number.value or self.same_amount(other):
            return None
        # "7 million" against "7 museums" is another number, "25 years" against "25 million years" is not
        if self.scale != other.scale and (
                (self.scale != 1.0 and other.scale != 1.0) or bool(self.unit and self.unit == other.unit)):
            return "scale"
        if self.unit and other.unit and self.unit != other.unit:
            return "unit"
        if (self.era < 0) != (other.era < 0):
            return "era"
        return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _rounding(a: Quantity, b: Quantity) -> float:
    """Relative tolerance of a converted amount: half the coarser side's last written digit
    (trailing zeros read as rounding), from 1% to 5% (conversions are rounded when written:
    "330 m (1,083 ft)", "about 100 km (60 mi)")."""
    def step(q: Quantity) -> float:
        digits = q.number.raw.replace(",", "")
        if "." in digits:
            place = 10.0 ** -len(digits.split(".")[1])
        else:
            stripped = digits.rstrip("0")
            place = 10.0 ** (len(digits) - len(stripped)) if stripped else 1.0
        return 0.5 * place / max(abs(q.number.value), 1e-9)
    return min(0.05, max(0.01, step(a), step(b)))


def quantities(text: str) -> list[Quantity]:
    """Every number of `text` with what follows and precedes it."""
    out = []
    for n in numbers(text):
        if n.kind in ("ordinal", "decade"):
            out.append(Quantity(n, n.raw))
            continue
        m = _AFTER.match(text, n.end)
        scale = SCALES[m.group("scale").lower()] if m.group("scale") else 1.0
        unit, dimension, factor = "", "", 1.0
        if m.group("unit"):
            unit, dimension, factor = _UNIT_BY_LOWER[re.sub(r"\s+", " ", m.group("unit").lower())]
        era = _ERAS[m.group("era").lower().replace(".", "")] if m.group("era") else 0
        start, end = n.start, (m.end() if (m.group("scale") or m.group("unit") or m.group("era")) else n.end)
        before = _BEFORE.search(text[max(0, n.start - 5):n.start])
        if before and before.group("sign") and not unit:
            code = _CURRENCY_SIGNS[before.group("sign")]
            unit, dimension = code, f"money-{code}"
            start -= len(before.group(0))
        elif before and before.group("era") and not era:
            era = 1
            start -= len(before.group(0).lstrip())
        out.append(Quantity(n, text[start:end].strip(), scale, unit, dimension, factor, era))
    return out

