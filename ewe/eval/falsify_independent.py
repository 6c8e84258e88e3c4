"""Sentences made false by edits the judge's training data never makes, for the Critics benchmark.

The first Critics texts (falsify.py) reuse most of the judge data's own edits (judge.data.Builder:
years moved by a fixed list of offsets, numbers scaled, names swapped, ANTONYMS, an inserted "not",
another article's description), so a judge trained on them is measured on its own rules. The edits
here share no code and no word list with judge/data.py or judge/rewrites.py:

* date: a year's last two digits transposed (1867 -> 1876), or another month in a full date;
* number: a number spelled as a word (two -> five), a scale word (million -> billion), or two
  digits of a number transposed (8,848 -> 8,884; 45% -> 54%);
* people_places: a nationality or a country named where the article names another;
* role_relation: an occupation swapped within its field (physicist -> chemist), a relation turned
  around (succeeded -> preceded, teacher -> student), or falsify.py's kinship swap (son -> brother);
* negation: a word negated by its prefix (successful -> unsuccessful, independent -> dependent),
  "always" <-> "never", "still" -> "no longer";
* cause_effect: falsify.py's causal inversions, which the judge data does not make either (not its
  "after" -> "before", one of the judge data's antonyms).

Each edit is kept only where the article then contradicts the sentence: the new word must not occur
in the article (a swapped nationality the article also names could still be true).
"""
from __future__ import annotations

import random
import re
from typing import Optional

from ..judge.data import MONTHS, Article
from ..verify.text import is_negated, numbers
from .falsify import CATEGORIES, cause_effect, exact_number, first_edit, is_date, kinship

_WORDS = ("two three four five six seven eight nine ten eleven twelve").split()
_SCALES = {"thousand": "million", "million": "billion", "billion": "million"}
# nationalities that also name a language, and those that do not: a swap stays in its kind ("in English"
# must not become "in Belgian")
LANGUAGES = tuple("""Bulgarian Chinese Croatian Czech Danish Dutch English Finnish French German Greek Hungarian Irish
    Italian Japanese Korean Norwegian Persian Polish Portuguese Romanian Russian Serbian Spanish Swedish Turkish
    Ukrainian Welsh""".split())
NATIONALITIES = tuple("""American Argentine Australian Austrian Belgian Brazilian British Canadian Chilean Egyptian
    Indian Iranian Mexican Scottish Swiss""".split())
COUNTRIES = tuple("""Argentina Australia Austria Belgium Brazil Canada Chile China Croatia Denmark Egypt England
    Finland France Germany Greece Hungary India Iran Ireland Italy Japan Mexico Norway Poland Portugal Romania Russia
    Scotland Serbia Spain Sweden Switzerland Turkey Ukraine Wales""".split())
# occupations a text may name, in fields whose members exclude each other (a chemist is no physicist)
# (no word with another common sense: "producer", "conductor", "boxer", "general")
FIELDS = (
    ("physicist", "chemist", "biologist", "mathematician", "astronomer", "geologist", "economist", "philosopher",
     "historian", "psychologist", "botanist", "zoologist", "linguist", "sociologist", "anthropologist"),
    ("painter", "sculptor", "architect", "photographer", "illustrator", "engraver"),
    ("novelist", "poet", "playwright", "essayist", "journalist", "screenwriter"),
    ("composer", "pianist", "violinist", "guitarist", "drummer", "singer"),
    ("actor", "comedian", "dancer", "filmmaker"),
    ("footballer", "cricketer", "cyclist", "swimmer", "wrestler"),
    ("emperor", "sultan", "pope", "bishop", "archbishop", "cardinal"),
    ("senator", "governor", "mayor", "ambassador"),
    ("lawyer", "physician", "surgeon", "pharmacist"),
)
_FIELD_OF = {w: f for f in FIELDS for w in f}
_TURNED = {"succeeded": "preceded", "preceded": "succeeded", "predecessor": "successor", "successor": "predecessor",
           "teacher": "student", "student": "teacher", "employer": "employee", "employee": "employer",
           "parent company": "subsidiary", "subsidiary": "parent company"}
_TURNED_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _TURNED), key=len, reverse=True)) + r")\b")
# a word and its negation by prefix, both ways
# (adjectives only: a verb negated by its prefix reads as nonsense, "she unmarried him")
_NEGATED = dict(pair.split(":") for pair in """successful:unsuccessful popular:unpopular able:unable possible:impossible
    legal:illegal likely:unlikely dependent:independent visible:invisible stable:unstable capable:incapable
    active:inactive valid:invalid similar:dissimilar available:unavailable""".split())
_NEGATED.update({b: a for a, b in list(_NEGATED.items())})
_NEGATED_RE = re.compile(r"\b(" + "|".join(sorted(_NEGATED, key=len, reverse=True)) + r")\b")
_MONTH_RE = re.compile(r"\b(" + "|".join(MONTHS) + r")\b(?=,? \d)|(?<=\d )(" + "|".join(MONTHS) + r")\b")
_OR_NEAR = re.compile(r"\bor\s+$|^\s*or\b|^[-–]|[-–]$")
# one of a list ("Spanish and Portuguese", "including ..."): another member may be missing, not contradicted
_IN_LIST = re.compile(r"(?:,|\band|\bincluding|\bsuch as)\s+(?:\w+\s+)?$")
_LIST_GOES_ON = re.compile(r"\s*(?:,|and\b|\()")


class IndependentFalsifier:
    """One method per category: the sentence made false, or None where no edit applies."""

    def __init__(self, articles: list[Article], seed: int = 0):
        self.rng = random.Random(seed)

    def edit(self, category: str, art: Article, s: str) -> Optional[str]:
        if category not in CATEGORIES:
            raise ValueError(f"category {category!r}: choose from {CATEGORIES}")
        altered = getattr(self, category)(art, s)
        return altered if altered and altered != s else None

    def _pick(self, makers, art: Article, s: str) -> Optional[str]:
        return first_edit(self.rng, makers, art, s)

    # --- date ---------------------------------------------------------------------------

    def date(self, art: Article, s: str) -> Optional[str]:
        return self._pick([self._year_transposed, self._month], art, s)

    def _year_transposed(self, art: Article, s: str) -> Optional[str]:
        years = [n for n in numbers(s) if n.kind == "year" and "," not in n.raw and is_date(s, n) and exact_number(s, n)
                 and n.raw[2] != n.raw[3] and not _OR_NEAR.search(s[:n.start]) and not _OR_NEAR.search(s[n.end:])]
        if not years:
            return None
        n = self.rng.choice(years)
        new = n.raw[:2] + n.raw[3] + n.raw[2]
        return None if new in art.passage() or int(new) > 2025 else s[:n.start] + new + s[n.end:]

    def _month(self, art: Article, s: str) -> Optional[str]:
        hits = [m for m in _MONTH_RE.finditer(s) if not _OR_NEAR.search(s[:m.start()])
                and not re.search(r"\b(?:from|until|till|by|before|after|since)\s+(?:\d+\s+)?$", s[:m.start()])]
        # one month only, no span ("between May and September"): a month moved inside a span may still hold
        if not hits or len(set(re.findall(rf"\b(?:{'|'.join(MONTHS)})\b", s))) > 1 or "between" in s:
            return None
        m = self.rng.choice(hits)
        pool = [x for x in MONTHS if x not in s]
        return s[:m.start()] + self.rng.choice(pool) + s[m.end():]

    # --- number -------------------------------------------------------------------------

    def number(self, art: Article, s: str) -> Optional[str]:
        return self._pick([self._count_word, self._scale, self._digits_transposed], art, s)

    def _count_word(self, art: Article, s: str) -> Optional[str]:
        hits = [n for n in numbers(s) if n.kind == "word" and n.raw.lower() in _WORDS and exact_number(s, n)
                and not re.match(r"[-‐]|\s+(?:of|or|and|to)\b|\s*[.,;:)]", s[n.end:])  # "a mixture of the two."
                and not re.search(r"\b(?:one|or|and|to|latter|former)\s+$", s[:n.start])]
        if not hits:
            return None
        n = self.rng.choice(hits)
        new = self.rng.choice([w for w in _WORDS if w != n.raw.lower() and w not in s.lower()])
        new = new.capitalize() if n.raw[0].isupper() else new
        return s[:n.start] + new + s[n.end:]

    def _scale(self, art: Article, s: str) -> Optional[str]:
        hits = [m for m in re.finditer(r"(?<=\d )(thousand|million|billion)\b", s) if exact_number(s, _number_before(s, m))]
        if not hits:
            return None
        m = self.rng.choice(hits)
        return s[:m.start()] + _SCALES[m.group(1)] + s[m.end():]

    def _digits_transposed(self, art: Article, s: str) -> Optional[str]:
        hits = [n for n in numbers(s) if n.kind == "number" and n.value >= 10 and not is_date(s, n) and exact_number(s, n)
                and not _OR_NEAR.search(s[:n.start]) and not _OR_NEAR.search(s[n.end:])]
        for n in self.rng.sample(hits, len(hits)):
            digits = [i for i, c in enumerate(n.raw) if c.isdigit()]
            whole = [i for i in digits if "." not in n.raw[:i]]
            pairs = [(a, b) for a, b in zip(whole, whole[1:]) if n.raw[a] != n.raw[b]]
            if not pairs:
                continue
            a, b = pairs[-1]
            chars = list(n.raw)
            chars[a], chars[b] = chars[b], chars[a]
            new = "".join(chars)
            if new[0] != "0" and new not in art.passage():
                return s[:n.start] + new + s[n.end:]
        return None

    # --- people and places --------------------------------------------------------------

    def people_places(self, art: Article, s: str) -> Optional[str]:
        return self._pick([lambda a, x: self._swap_from(a, x, LANGUAGES), lambda a, x: self._swap_from(a, x, NATIONALITIES),
                           lambda a, x: self._swap_from(a, x, COUNTRIES)], art, s)

    def _swap_from(self, art: Article, s: str, names: tuple[str, ...]) -> Optional[str]:
        text = art.passage()
        hits = [m for m in re.finditer(r"\b(" + "|".join(names) + r")\b(?![-‐'’])", s)
                if not _OR_NEAR.search(s[:m.start()]) and not _OR_NEAR.search(s[m.end():])
                and not _IN_LIST.search(s[:m.start()]) and not _LIST_GOES_ON.match(s[m.end():])
                and m.group(0) not in art.title]
        if not hits:
            return None
        m = self.rng.choice(hits)
        pool = [n for n in names if n not in text and n not in s]
        return _replaced(s, m.start(), m.end(), self.rng.choice(pool)) if pool else None

    # --- roles and relations ------------------------------------------------------------

    def role_relation(self, art: Article, s: str) -> Optional[str]:
        return self._pick([self._occupation, self._turned, lambda a, x: kinship(self.rng, x)], art, s)

    def _occupation(self, art: Article, s: str) -> Optional[str]:
        text = f"{art.passage()} {art.description}".lower()
        hits = [m for m in re.finditer(r"\b([a-z]+?)(s?)\b", s) if m.group(1) in _FIELD_OF
                and not _OR_NEAR.search(s[:m.start()]) and not re.search(r"^\s*(?:and|or|,)", s[m.end():])]
        if not hits:
            return None
        m = self.rng.choice(hits)
        pool = [w for w in _FIELD_OF[m.group(1)] if w != m.group(1) and w not in text]
        return _replaced(s, m.start(), m.end(), self.rng.choice(pool) + m.group(2)) if pool else None

    def _turned(self, art: Article, s: str) -> Optional[str]:
        hits = [m for m in _TURNED_RE.finditer(s) if _TURNED[m.group(1)] not in s]
        if not hits:
            return None
        m = self.rng.choice(hits)
        return _replaced(s, m.start(), m.end(), _TURNED[m.group(1)])

    # --- negation -----------------------------------------------------------------------

    def negation(self, art: Article, s: str) -> Optional[str]:
        return self._pick([self._prefix_negated, self._adverb], art, s)

    def _prefix_negated(self, art: Article, s: str) -> Optional[str]:
        hits = [m for m in _NEGATED_RE.finditer(s) if not re.search(rf"\b{_NEGATED[m.group(1)]}\b", s)
                and not re.search(r"\b(?:not|never|no)\s+(?:\w+\s+)?$", s[:m.start()])
                and not (m.group(1) == "able" and not s[m.end():].startswith(" to"))]
        if not hits:
            return None
        m = self.rng.choice(hits)
        return _replaced(s, m.start(), m.end(), _NEGATED[m.group(1)])

    def _adverb(self, art: Article, s: str) -> Optional[str]:
        if is_negated(s.replace("never", "")):
            return None
        m = re.search(r"\b(always|never)\b", s)
        if m:
            return s[:m.start()] + ("never" if m.group(1) == "always" else "always") + s[m.end():]
        m = re.search(r"\b(?:is|are|was|were|remains?|remained) (still)\b|\b(still) (?=\w+s\b|\w+ed\b)", s)
        if m:
            at = m.start(1) if m.group(1) else m.start(2)
            return s[:at] + "no longer" + s[at + len("still"):]
        return None

    # --- cause and effect ---------------------------------------------------------------

    def cause_effect(self, art: Article, s: str) -> Optional[str]:
        altered = cause_effect(self.rng, s, temporal=False)  # "after" -> "before" is the judge data's antonym
        # "are due to" -> "are despite" is no sentence
        return None if altered and re.search(r"\b(?:is|are|was|were|be) despite\b", altered) else altered


def _replaced(s: str, start: int, end: int, new: str) -> str:
    """s[start:end] replaced by `new`, an "a"/"an" just before it agreeing with the new word."""
    before = s[:start]
    article = re.search(r"\b([Aa])(n?)(\s+)$", before)
    if article:
        vowel = new[:1].lower() in "aeiou" and not new.lower().startswith(("uni", "us", "eu"))
        before = before[:article.start()] + article.group(1) + ("n" if vowel else "") + article.group(3)
    return before + new + s[end:]


def _number_before(s: str, m: re.Match):
    return next(n for n in reversed(numbers(s[:m.start()])))
