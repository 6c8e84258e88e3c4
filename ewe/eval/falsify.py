"""Sentences made false, one edit each, in six categories, for the Critics benchmark (critics.py).

The edits are the judge data's (judge.data.Builder: _number, _antonym, _negation, role_swap), kept
only where the source then contradicts the sentence, not merely fails to support it: a bound or a
time reference moved one way still holds ("over 100", "since 1965", "as of 2007"), "X or Y" holds with
either name, a description that shares a word with the article may still fit it. New here: dates
told from counts, names swapped by slot (Builder._name draws from the whole topic), kinship and
cause-effect swaps.
"""
from __future__ import annotations

import re
from typing import Optional

from ..judge import data as judge_data
from ..judge.data import ANTONYMS, Article, Builder
from ..verify.text import NOT_NAMES, STOPWORDS, content_keys, is_negated, numbers

CATEGORIES = ("date", "number", "people_places", "role_relation", "negation", "cause_effect")
TRIES = 8  # the judge data's edits draw at random: draws per sentence before a category counts as not applicable
_MONTH = "|".join(judge_data.MONTHS)
# a number shortly after these is a bound, an estimate or a time reference: moved one way it still holds
_QUALIFIED = re.compile(r"\b(?:over|under|above|below|than|least|most|up to|nearly|almost|about|around|approximately|"
                        r"roughly|some|estimated|circa|c\.|before|after|by|until|till|prior to|within|since|as of|"
                        r"as early as|as late as)\s+(?:\S+\s+){0,2}$|\bbetween\b[^,;]*\band\s+$|[A-Za-z][-‐]$", re.I)
_SUPERLATIVES = {"first", "last", "largest", "smallest", "highest", "lowest", "biggest", "longest", "shortest",
                 "oldest", "youngest", "earliest", "latest"}
_GENDERED = {"man", "woman", "men", "women", "male", "female", "king", "queen"}
_KIN = {"son": "brother", "brother": "son", "daughter": "sister", "sister": "daughter", "father": "grandfather",
        "grandfather": "father", "mother": "grandmother", "grandmother": "mother", "husband": "brother",
        "wife": "sister", "uncle": "father", "aunt": "mother", "nephew": "son", "niece": "daughter",
        "grandson": "son", "granddaughter": "daughter"}
_POSSESSIVE = re.compile(r"['’]s$")
_NOT_AFTER = {"both", "nevertheless", "also", "either", "neither", "still", "already", "yet"}  # "is not also ..."
_KIN_BEFORE = re.compile(r"(?:\b(?:his|her|its|their|the)|['’]s)\s+(?:[a-z]+\s+)?$")
_IS_ROLE = re.compile(r"^(?P<s>.{1,160}?) (?:is|was) (?P<role>(?:an?|the) [^,;()]+?)"
                      r"(?=[,;(]| (?:who|which|that|whose)\b|\.$)")
_RANK = re.compile(r"\b(?:second|third|fourth|fifth|sixth|\d+(?:st|nd|rd|th))\b", re.I)  # "second-largest ..., after"
# (pattern, replacement of its group "w"): the cause the source states is no longer what the text says
_CAUSAL = [(re.compile(p, re.I), r) for p, r in (
    (r"\b(?P<w>because of|owing to|thanks to|as a (?:direct )?result of)\b", "despite"),
    (r"\b(?P<w>due to)\b(?! (?:be|begin|open|start|close|end|return|retire)\b)", "despite"),
    (r"\b(?P<w>because)\b(?! of)", "even though"),
    (r"\b(?P<w>as a result)\b(?! of)", "despite this"),
    (r"\b(?P<w>led to)\b", "resulted from"), (r"\b(?P<w>leads to)\b", "results from"),
    (r"\b(?P<w>lead to)\b", "result from"), (r"\b(?P<w>leading to)\b", "resulting from"),
    (r"\b(?P<w>resulted in)\b", "resulted from"), (r"\b(?P<w>results in)\b", "results from"),
    (r"\b(?P<w>result in)\b", "result from"), (r"\b(?P<w>resulting in)\b", "resulting from"),
    (r"\b(?P<w>contributed to)\b", "resulted from"), (r"\b(?P<w>gave rise to)\b", "arose from"),
    (r"\b(?P<w>(?:was|were) caused by)\b", "caused"), (r"\b(?P<w>is caused by)\b", "causes"),
    (r"\b(?P<w>are caused by)\b", "cause"),
    (r"\b(?P<w>caused)\b(?! by)", "resulted from"),
    (r"(?<!\bthe )(?<!\bmain )(?<!\bcommon )(?<!\bits )\b(?P<w>causes)\b(?! of)", "results from"),
    # an event, not a rank ("the third most abundant metal, after iron")
    (r"(?:^|, |\b(?:shortly|soon|long|years|months|days|weeks|decades) )(?P<w>after)\b"
     r"(?= (?:his|her|its|their|being|having|\w+ing|(?:the|a|an) [a-z]))", "before"),
    (r"^(?P<w>following)\b", "before"),
)]


# ----------------------------------------------------------------------------------------


class Falsifier(Builder):
    """The judge data's Builder with one method per category: the sentence made false, or None. The
    Builder's own edits draw at random, so each is drawn up to TRIES times until one passes its guard."""

    def __init__(self, articles: list[Article], seed: int = 0):
        super().__init__(articles, seed)
        # the names of each topic used as nouns, by the two tokens before them ("genus", "during the")
        # and by their last word ("Mountains"): a swap takes a name that fills the same slot
        self.slots: dict[tuple, set[str]] = {}
        for a in articles:
            for s in a.sentences:
                for m in _names_in(s):
                    name = m.group(0).rstrip(".")
                    before = _tokens_before(s, m.start())
                    for key in ((a.topic, *before[-1:]), (a.topic, *before[-2:]),
                                (a.topic, "head", name.split()[-1])):
                        self.slots.setdefault(key, set()).add(name)

    def edit(self, category: str, art: Article, s: str) -> Optional[str]:
        altered = getattr(self, category)(art, s)
        return altered if altered and altered != s else None

    def date(self, art: Article, s: str) -> Optional[str]:
        return self._numeric(art, s, True)

    def number(self, art: Article, s: str) -> Optional[str]:
        return self._numeric(art, s, False)

    def _numeric(self, art: Article, s: str, date: bool) -> Optional[str]:
        eligible = [n for n in numbers(s) if n.kind in ("year", "number", "ordinal", "decade")
                    and is_date(s, n) == date and exact_number(s, n)]
        for _ in range(TRIES if eligible else 0):
            r = self._number(art, s, art.passage())
            if r is None:
                continue
            old = next(n for n in numbers(s) if n.start == r[2])
            new = next((n for n in numbers(r[0]) if n.start == r[2]), None)
            day = date and old.kind == "number" and old.value <= 31
            if old in eligible and new is not None and new.key != old.key and not (day and not 1 <= new.value <= 31):
                if date:  # "in 1491", not "in 1,491"
                    return r[0][:new.start] + new.raw.replace(",", "") + r[0][new.end:]
                return r[0]
        return None

    def people_places(self, art: Article, s: str) -> Optional[str]:
        """A name (the spans Builder._name swaps) replaced by another article's name of the same topic that
        fills the same slot: its last word ("Rocky Mountains"), else the two or one tokens before it. The
        whole topic's names, as Builder._name draws them, read as nonsense ("the United States period");
        names of the same article can contain the old one (Siberia for Russia) and leave it true."""
        passage = art.passage()
        # not one of "X or Y" ("created in London or Scotland" holds if it was Scotland), nor of a list
        # that leaves others out ("novelists, including ..."): another name there is only unsupported
        spans = [m for m in _names_in(s) if m.group(0).rstrip(".") not in art.subject
                 and not re.search(r"\bor\s+$", s[:m.start()]) and not s[m.end():].startswith(" or ")
                 and not re.search(r"\b(?:including|such as|among|e\.g\.|like)\b[^;]*$", s[:m.start()])]
        self.rng.shuffle(spans)
        for m in spans:
            old, before = m.group(0).rstrip("."), _tokens_before(s, m.start())
            keys = [(art.topic, *before[-2:]), (art.topic, *before[-1:])]
            if " " in old:
                keys.insert(0, (art.topic, "head", old.split()[-1]))
            for key in keys:
                pool = sorted(n for n in self.slots.get(key, ())
                              if n not in passage and old not in n and n not in old
                              and abs(len(n.split()) - len(old.split())) <= 1
                              and bool(_POSSESSIVE.search(n)) == bool(_POSSESSIVE.search(old)))
                if pool:
                    return s[:m.start()] + self.rng.choice(pool) + s[m.start() + len(old):]
        return None

    def role_relation(self, art: Article, s: str) -> Optional[str]:
        return first_edit(self.rng, [self._description, self._opposite, self._kinship], art, s)

    def _description(self, art: Article, s: str) -> Optional[str]:
        """"X is a Y ..." -> "X is a Z.", Z another same-topic article's description (Builder.role_swap) that
        shares no content word with this article, which could leave it true."""
        m = _IS_ROLE.match(s)
        if not m or not content_keys(" ".join(m.group("s").split()[:3])) & content_keys(art.title):
            return None
        known = content_keys(f"{art.passage()} {art.description}")
        for _ in range(TRIES):
            r = self.role_swap(art)
            if r is None:
                return None
            role = r[0][r[2]:].rstrip(".").split(" ", 1)[1]  # without role_swap's "a"/"an"
            head = re.split(r" (?:of|with|in|for|from|on|by|about|that|which|who|used|\w+ing)\b", role)[0].split()
            plural = any(re.search(r"(?:ies|[^su'’]s)$", w) for w in (head[0], head[-1]))  # "a theories of ..."
            if not content_keys(role) & known and not plural:
                vowel = role[:1].lower() in "aeiou" and not role.lower().startswith(("uni", "us", "eu", "one"))
                article = "an" if vowel else "a"
                return f"{s[:m.start('role')]}{article} {role}."
        return None

    def _opposite(self, art: Article, s: str) -> Optional[str]:
        """The judge data's antonym, kept for ranks and genders ("largest", "woman") and kin after a possessive."""
        words = set(re.findall(r"[a-z]+", s))
        for _ in range(TRIES if words & (_SUPERLATIVES | _GENDERED | set(_KIN)) else 0):
            r = self._antonym(art, s, art.passage())
            if r is None:
                return None
            word = re.match(r"[a-z]+", s[r[2]:]).group(0)
            if ANTONYMS[word] in words or s[:r[2]].endswith("at "):
                continue
            if word in _SUPERLATIVES | _GENDERED or (word in _KIN and _KIN_BEFORE.search(s[:r[2]])):
                return r[0]
        return None

    def _kinship(self, art: Article, s: str) -> Optional[str]:
        return kinship(self.rng, s)

    def negation(self, art: Article, s: str) -> Optional[str]:
        """The judge data's negation, not where it would stack on another negation or read unidiomatically."""
        if re.search(r"\bnot only\b", s):
            return None
        r = self._negation(art, s, art.passage())
        if r is None:
            return None
        if r[1] == "negation":  # " not" inserted after an auxiliary
            aux = re.search(r"(\w+)$", s[:r[2]]).group(1).lower()
            following = (s[r[2]:].split() or [""])[0].lower()
            participle = re.fullmatch(r"been|\w+(?:ed|en|wn)", following)
            if (is_negated(s) or following in _NOT_AFTER or re.match(r"\s*\w+ that\b", s[r[2]:])
                    or (aux in ("has", "have", "had", "does", "did") and not participle)):  # not "has not 3 sons"
                return None
        return r[0]

    def cause_effect(self, art: Article, s: str) -> Optional[str]:
        return cause_effect(self.rng, s)


def first_edit(rng, makers, art: Article, s: str) -> Optional[str]:
    """The first edit that applies, the makers tried in a random order."""
    makers = list(makers)
    rng.shuffle(makers)
    return next((a for make in makers for a in [make(art, s)] if a), None)


def kinship(rng, s: str) -> Optional[str]:
    """"the son of X" -> "the brother of X": a relation of the same gender, after a possessive or "the ... of"."""
    hits = [m for m in re.finditer(r"\b[a-z]+\b", s) if m.group(0) in _KIN and _KIN_BEFORE.search(s[:m.start()])
            and (not re.search(r"\bthe\s+(?:[a-z]+\s+)?$", s[:m.start()]) or s[m.end():].startswith(" of "))
            and not re.search(rf"\b{_KIN[m.group(0)]}\b", s)]
    if not hits:
        return None
    m = rng.choice(hits)
    return s[:m.start()] + _KIN[m.group(0)] + s[m.end():]


def cause_effect(rng, s: str, temporal: bool = True) -> Optional[str]:
    """A causal link turned around ("led to" -> "resulted from") or denied ("because of" -> "despite");
    with `temporal`, also an event's order ("after" -> "before", an edit the judge data makes too)."""
    hits = [(m.start("w"), m.end("w"), repl) for pattern, repl in _CAUSAL for m in pattern.finditer(s)
            if temporal or repl != "before"]
    hits = [h for h in hits if (s[h[0]:h[1]].lower() != "caused" or _active_caused(s, h[0], h[1]))
            and (s[h[0]:h[1]].lower() != "after" or not _RANK.search(s[:h[0]]))]
    if not hits:
        return None
    start, end, repl = rng.choice(hits)
    if s[start].isupper():
        repl = repl[0].upper() + repl[1:]
    return s[:start] + repl + s[end:]


def _tokens_before(s: str, at: int) -> list[str]:
    return [t.lower() for t in re.findall(r"\w+|[^\w\s]", s[max(0, at - 40):at])]


def _names_in(s: str) -> list[re.Match]:
    """Names used as nouns, not as modifiers ("Roman goddess", "Western calligraphy"), not months,
    demonyms or pronunciations."""
    out = []
    for m in judge_data.NAME_RUN.finditer(s):
        name, following = m.group(0).rstrip("."), re.match(r"\s*([a-z]+)?", s[m.end():]).group(1)
        noun = not following or following in STOPWORDS or following.endswith("ed")
        if (m.start() > 0 and s[m.start() - 1] == " " and len(name) > 2 and noun and name.lower() not in NOT_NAMES
                and not re.search(r"\d|[A-Z]{2,}-", name)
                and not any(w in judge_data.MONTHS for w in name.split())
                and not (" " not in name and judge_data.DEMONYM.search(name))):
            out.append(m)
    return out


def is_date(s: str, n) -> bool:
    after, before = s[n.end:n.end + 24], s[:n.start]
    return bool(n.kind in ("year", "decade") or re.match(r"\s*(?:BCE?|AD|CE)\b", after)
                or (n.kind == "ordinal" and re.match(r"[^.;,]{0,20}?\b(?:centur|millenni)", after))
                or (n.kind == "number" and n.value <= 31 and (re.match(rf"\s*(?:{_MONTH})\b", after)
                                                             or re.search(rf"\b(?:{_MONTH})\s*$", before)))
                or (n.kind == "number" and re.fullmatch(r"\d{3}", n.raw)  # "in 497,"
                    and re.search(r"\b(?:in|since|until)\s*$", before) and re.match(r"\s*(?:[,.;)]|and\b|$)", after)))


def exact_number(s: str, n) -> bool:
    """Not a bound, an estimate or a time reference ("over 100", "since 1965", "as of 2007": moved one way,
    they still hold), not a unit conversion in brackets, not part of a name ("Apollo 11", "COVID-19")."""
    before = s[:n.start]
    prev = before.split()[-1] if before.split() else ""
    named = re.fullmatch(r"[A-Z][\w'’.]*", prev) and prev not in judge_data.MONTHS and prev.lower() not in NOT_NAMES
    return not (_QUALIFIED.search(before) or re.search(r"\d[^()]*\($", before) or named)


def _active_caused(s: str, start: int, end: int) -> bool:
    """"X caused Y", not a passive ("are deterministically caused") with nothing after to swap."""
    return (not re.search(r"\b(?:is|are|was|were|be|been|being)\s+(?:\w+\s+)?$", s[:start])
            and bool(re.match(r"\s+[\w\"'(]", s[end:])))
