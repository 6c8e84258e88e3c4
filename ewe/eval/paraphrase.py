"""A Critics text's sentences reworded without changing what they state.

The ITA paper paraphrases its texts; the first Critics texts kept the summary's sentences word for
word, so a critic given the article could find an edit by comparing strings. The rules here are
independent of the judge data's rewrites (judge/rewrites.py; a test holds the phrase lists
disjoint): a person named by surname after the first sentence, a closing date moved to the front,
and phrases of general English said another way. Each applies wherever it can; none touches a
number, a name other than the subject's, or a negation, so a falsified sentence stays false and a
true one true.
"""
from __future__ import annotations

import re

from ..judge.data import MONTHS, Article

# general English, the same meaning in any topic; no key or value is a word of judge.rewrites.SYNONYMS
PHRASES = {
    "however": "nonetheless", "primarily": "chiefly", "mainly": "chiefly", "mostly": "for the most part",
    "in addition,": "furthermore,", "additionally": "furthermore", "currently": "at present", "attempted": "tried",
    "purchased": "bought", "resided": "lived", "initially": "at first", "eventually": "in the end",
    "subsequently": "later", "is home to": "houses", "is a member of": "belongs to", "was a member of": "belonged to",
    "are members of": "belong to", "is part of": "forms part of", "was part of": "formed part of",
    "is one of the": "ranks among the", "was one of the": "ranked among the", "are among the": "rank among the",
    "was educated at": "studied at", "in order to": "to", "a variety of": "various", "the majority of the": "most of the",
    "extremely": "highly", "named after": "named for",
}
_PHRASE_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, PHRASES), key=len, reverse=True)) + r")(?!\w)", re.I)
_MONTH = "|".join(MONTHS)
_CLOSING_DATE = re.compile(rf"^(?P<body>[^;]+?),? (?P<when>(?:in|on) (?:(?:\d{{1,2}} )?(?:{_MONTH}) )?"
                           rf"(?:\d{{1,2}}, )?\d{{4}})\.$")
_LOWER_FIRST = ("The", "A", "An", "It", "Its", "This", "These", "They", "Their")
_SUBORDINATE = re.compile(r"\b(?:when|since|after|before|because|while|which|who|whom|whose|that|until|as|where|if|"
                          r"although|though|once|and|or|but)\b", re.I)


def reword(art: Article, sentences: list[str]) -> list[str]:
    """The sentences of one text, each reworded where a rule applies. A sentence that opens with the
    subject right after another that did refers to it by pronoun, as prose does (the critic must then
    resolve it from the text before)."""
    full = re.sub(r" \([^()]*\)$", "", art.title)
    last = full.split()[-1]
    # "Curie" for Marie Curie; not "XVI" for Louis XVI, nor "Great" for Alfred the Great
    surname = (last if art.topic == "People" and len(full.split()) > 1 and re.fullmatch(r"[A-Z][a-z'’-]+", last)
               and not re.search(r"\b(?:of|the|de|von|van)\b", full) else None)
    pronoun = _pronoun(art, full)
    out = []
    for i, s in enumerate(sentences):
        opens = next((n for n in (full, surname) if n and re.match(rf"{re.escape(n)} (?:is|was|are|were|has|had)\b", s)), None)
        if opens and pronoun and i > 0 and sentences[i - 1].startswith(opens):
            s = pronoun + s[len(opens):]
        if surname and i > 0:
            s = s.replace(full, surname)
        s = _PHRASE_RE.sub(lambda m: _same_case(m.group(0), PHRASES[m.group(0).lower()]), s)
        out.append(_front_date(s, tuple(n for n in (full, surname) if n)))
    return out


def _pronoun(art: Article, full: str) -> str:
    """He, She or It, from the article's own pronouns; "" for a plural or an undecided subject."""
    text = f" {art.passage()} ".lower()
    if art.topic != "People":
        return "" if full.endswith("s") else "It"
    he, she = len(re.findall(r"\b(?:he|his|him)\b", text)), len(re.findall(r"\b(?:she|her|hers)\b", text))
    return "He" if he > 2 * she else "She" if she > 2 * he else ""


def _front_date(s: str, names: tuple[str, ...]) -> str:
    """"Curie won the prize in 1903." -> "In 1903, Curie won the prize.": only a simple clause (no comma, no
    subordinate clause the date might belong to) that opens with the subject's name or a word the front
    date lower-cases ("The", "It"), and holds no other date."""
    m = _CLOSING_DATE.match(s)
    body = m.group("body") if m else ""
    first = body.split(" ", 1)[0]
    if (not m or re.search(r"\d{3}", body) or len(body.split()) < 4 or "," in body or _SUBORDINATE.search(body)
            or not (first in _LOWER_FIRST or any(body.startswith(n + " ") for n in names))):
        return s
    if first in _LOWER_FIRST:
        body = body[0].lower() + body[1:]
    return f"{m.group('when')[0].upper()}{m.group('when')[1:]}, {body}."


def _same_case(old: str, new: str) -> str:
    return new[0].upper() + new[1:] if old[0].isupper() else new
