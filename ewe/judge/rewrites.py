"""Rewrites that make training claims read like what a small generator writes: other words
for the same thing, the subject's description as an apposition, "a type of", a number
given as a bound, a year as its decade or century, a degenerate repetition.

The judge's first training data stated every supported claim in the passage's own words,
and it learned that any word the passage lacks means "not supported": it kept 27% of the
true sentences the embedded model wrote (docs/JUDGE.md). The rewrites here come in two
kinds, so that none of them gives a label away:

* label-blind (`Rewriter.surface`): applied alike to supported, unsupported and
  not-enough-evidence claims, they keep the label by construction (a synonym does not fix
  a wrong year);
* paired (`bound`, `era`): the same surface form made consistent with the passage
  (supported) or not (unsupported), so the form itself carries no label.

Each rewrite returns the new claim and where the first change is, so prefix labels (the
offset where a claim stops following the evidence) stay right.
"""
from __future__ import annotations

import random
import re
from typing import Optional

from ..verify.text import numbers

# Same meaning in encyclopedic and in generated prose; general English, no topic words.
SYNONYMS = {
    "located": ("situated", "found"), "is located in": ("lies in", "is in"), "also known as": ("also called", "commonly called", "known as"),
    "also called": ("also known as",), "consists of": ("is made up of", "is composed of"), "founded": ("established",),
    "established": ("founded", "set up"), "began": ("started",), "started": ("began",), "died": ("passed away",),
    "large": ("big",), "approximately": ("about", "around", "roughly"),
    "wrote": ("authored",), "produced": ("made",), "destroys": ("kills",), "kill": ("destroy",),
    "is used to": ("serves to",), "used for": ("employed for",), "commonly": ("often", "usually"),
    "usually": ("typically", "generally"), "became": ("went on to become",), "known for": ("recognized for",),
    "regarded as": ("considered", "seen as"), "considered": ("regarded as",), "important": ("significant",),
    "many": ("numerous",), "several": ("a number of",), "include": ("comprise",),
    "includes": ("contains", "comprises"), "including": ("such as",), "such as": ("including",),
    "throughout": ("across",), "people": ("individuals",), "worked as": ("served as",), "served as": ("worked as",),
    "the largest": ("the biggest",), "popular": ("well-known",),
}
_SYN_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, SYNONYMS), key=len, reverse=True)) + r")\b")
FRAMES = ("{s} {v} a type of {y}", "{s} {v} a kind of {y}", "{s} {v} a term used to describe {y}",
          "{s} {v} {a} {y}, {a} {y}")
_IS_A = re.compile(r"^(?P<s>.+?) (?P<v>is|was|are|were) (?P<a>an?) (?P<y>[^,;()]{3,60}?)\.?$")


def apply(claim: str, edit: Optional[int], start: int, end: int, repl: str) -> tuple[str, Optional[int]]:
    """claim[start:end] replaced by repl, with the edit offset moved along (or to the change,
    if the change overlaps it)."""
    new = claim[:start] + repl + claim[end:]
    if edit is None:
        return new, None
    if end <= edit:
        return new, edit + len(repl) - (end - start)
    return new, min(edit, start)


class Rewriter:
    def __init__(self, rng: random.Random):
        self.rng = rng

    # --- label-blind ------------------------------------------------------------------------

    def synonyms(self, claim: str, edit: Optional[int], p: float = 0.6) -> tuple[str, Optional[int]]:
        """Some words swapped for others of the same meaning (right to left, so offsets hold)."""
        for m in reversed(list(_SYN_RE.finditer(claim))):
            if self.rng.random() < p:
                claim, edit = apply(claim, edit, m.start(), m.end(), self.rng.choice(SYNONYMS[m.group(1)]))
        return claim, edit

    def frame(self, claim: str, edit: Optional[int]) -> tuple[str, Optional[int]]:
        """"X is a Y." said the way generated text says it: "a type of Y", "known as a Y", "a Y, a Y"."""
        m = _IS_A.match(claim)
        if not m or len(m.group("y").split()) > 8:
            return claim, edit
        new = self.rng.choice(FRAMES).format(**m.groupdict()) + "."
        if edit is None:
            return new, None
        head = len(m.group("s")) + len(m.group("v")) + 2
        return new, edit if edit <= head else head  # an edit inside Y is reached from the frame on

    def apposition(self, claim: str, edit: Optional[int], subject: str, description: str) -> tuple[str, Optional[int]]:
        """"X did Z." -> "X, a <description>, did Z." (the description is the passage's own)."""
        if not description or not claim.startswith(subject + " ") or len(description.split()) > 8 or "(" in description:
            return claim, edit
        if re.match(r"(is|was|are|were) ", claim[len(subject) + 1:]):
            return claim, edit  # "X, a Y, is a Y" says nothing new
        desc = description[:1].lower() + description[1:] if description[1:2].islower() else description
        art = "an" if desc[:1].lower() in "aeiou" else "a"
        return apply(claim, edit, len(subject), len(subject), f", {art} {desc},")

    # --- paired: one form, either label -------------------------------------------------------

    def bound(self, claim: str, consistent: bool) -> Optional[tuple[str, int]]:
        """A count given as a bound: "2,700 species" -> "over 2,000 species" (consistent) or
        "fewer than 1,000 species" (not). Returns (claim, offset of the change)."""
        nums = [n for n in numbers(claim) if n.kind == "number" and n.value >= 20 and _is_count(claim, n.start, n.end)]
        if not nums:
            return None
        n = self.rng.choice(nums)
        v = n.value
        mag = 10 ** max(1, len(str(int(v))) - 1)
        lower, upper = (v // mag) * mag, (v // mag + 1) * mag
        if consistent:
            options = [("more than {}", lower), ("over {}", lower), ("about {}", v), ("nearly {}", upper)]
            options = [(f, x) for f, x in options if (f.startswith(("more", "over")) and v * 0.5 <= x < v)
                       or f.startswith("about") or (f.startswith("nearly") and v < x <= v * 1.1)]
        else:
            options = [("more than {}", upper * 2), ("over {}", upper * 3), ("fewer than {}", max(1, lower // 2)),
                       ("nearly {}", upper * 5)]
            options = [(f, x) for f, x in options if (f.startswith(("more", "over", "nearly")) and x > v * 1.5)
                       or (f.startswith("fewer") and x < v / 1.5)]
        if not options:
            return None
        form, x = self.rng.choice(options)
        start = n.start
        before = claim[:start]
        for word in ("approximately ", "about ", "around ", "roughly ", "some ", "over ", "more than ", "nearly ", "almost "):
            if before.lower().endswith(word):
                start -= len(word)
                break
        text = form.format(f"{int(x):,}")
        return claim[:start] + text + claim[n.end:], start

    def era(self, claim: str, consistent: bool) -> Optional[tuple[str, int]]:
        """"in 1867" -> "in the 1860s" / "in the 19th century" (consistent) or another decade or
        century (not)."""
        hits = [m for m in re.finditer(r"\bin (\d{3,4})\b(?![,\d–-]| ?(?:BC|BCE|AD))", claim)]
        if not hits:
            return None
        m = self.rng.choice(hits)
        year = int(m.group(1))
        if self.rng.random() < 0.5:
            decade = year // 10 * 10
            if not consistent:
                decade += self.rng.choice([-30, -20, 20, 30, 50])
            text = f"in the {decade}s"
        else:
            century = year // 100 + 1
            if not consistent:
                century += self.rng.choice([-2, -1, 1, 2])
            if century < 1:
                return None
            text = f"in the {ordinal(century)} century"
        return claim[:m.start()] + text + claim[m.end():], m.start()

    def life_era(self, subject: str, description: str, born: int, died: int, consistent: bool) -> Optional[tuple[str, int]]:
        """"X was a <role> of the 18th century" from the life years (or the wrong century)."""
        mid = (born + died) // 2
        century = mid // 100 + 1
        if not consistent:
            century += self.rng.choice([-2, -1, 1, 2])
        if century < 1 or not description or len(description.split()) > 6:
            return None
        art = "an" if description[:1].lower() in "aeiou" else "a"
        head = f"{subject} was {art} {description} of the "
        return f"{head}{ordinal(century)} century.", len(head)


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


_NOT_COUNT_BEFORE = {"to", "and", "from", "between", "number", "no.", "of", "in", "the", "or", "than", "$", "£", "€"}


def _is_count(claim: str, start: int, end: int) -> bool:
    """A number that counts something ("2,700 species"), not a range end, an identifier, a
    converted unit in brackets or part of a compound ("100-meter")."""
    before = claim[:start].rstrip()
    prev = before.rsplit(" ", 1)[-1].lower() if before else ""
    after = claim[end:end + 2]
    nxt = claim[end:].split(" ", 2)[1] if claim[end:].count(" ") >= 1 else ""
    return (prev not in _NOT_COUNT_BEFORE and not before.endswith(("(", "$", "£", "€")) and not prev[:1].isupper()
            and after[:1] == " " and after[1:2].islower() and nxt not in ("or", "to", "and"))
