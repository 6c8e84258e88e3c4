"""Namesakes: whether an article's title can be the subject a prompt names, or is another subject
that only bears the name (issue 72, item 3). A namesake's passage in working memory lends the
answer another subject's facts: Martin Luther King Jr.'s for Martin Luther, the Wright brothers'
for Frank Lloyd Wright, Machiavelli's treatise for Prince.

`namesake_kind(name, title, description)` reads the prompt's name, the article's title and the
title's description (as the embedded Wikipedia gives it: "American musician and songwriter
(1958–2016)"). It says None when the title can be the prompt's subject:

* the same name, up to case, diacritics, a leading title ("Queen Victoria" for Victoria) and a
  disambiguation ("Prince (musician)" for Prince, "Henry V of England" for Henry V, "Christina,
  Queen of Sweden" for Christina), and a "Jr." the prompt leaves out ("Martin Luther King");
* a form of it (`_ends_on`): the shorter name's words are the longer's in order, ending on its
  last word written out, and, for two words or more, starting on its first (leading initials
  aside): given or middle names dropped or added, an initial for the word it begins ("Lyndon
  Johnson", "Lyndon B. Johnson" and "Lyndon Baines Johnson"; "Scott Fitzgerald"). A one-word name
  is the other's last name word ("Newton" for Isaac Newton, "Curie" for Marie Curie), or its first
  where the description says the name is written family name first (Chinese, Korean,
  Vietnamese, or of China, Korea or Vietnam: "Mao" for Mao Zedong); a particle or a trailing
  title may go ("Van Gogh", "De Gaulle"; "Genghis" for Genghis Khan), but a one-word name after a
  title is a given name ("Saint George" is not David Lloyd George).

A form stands for a person only: when the description is a thing's (`describes_person`), the
title is a thing bearing the name ("Newton (unit)", "Washington, D.C.", "Kelvin" for Lord
Kelvin). Otherwise the title is another subject, of one of three kinds, checked in this order:

* "work_or_relative": a thing, a work, a group or a family bearing the name. A leading article
  one side lacks ("The Prince" for Prince), a lower-case word the prompt lacks ("Maya
  civilization", "Qing dynasty", "Newton's laws of motion"; "Wright brothers" too: a family is a
  group, so Frank Lloyd Wright's namesakes the Wright brothers are of this kind, not "one_word"),
  a possessive, the prompt's name only in the title's disambiguation ("Metaphysics (Aristotle)"),
  or a description that is not a person's ("Lincoln Memorial"; with no name word in common but
  after "of", no description is enough: "History of France" for Philip II of France).
* "extends": the title holds the prompt's full name in order (initials aside) and goes on after
  it: more name words ("Martin Luther King Jr." for Martin Luther, "Aristotle Onassis" for
  Aristotle, "Frank Lloyd Wright" for Frank Lloyd), a numeral or a "Sr." ("Napoleon III" for
  Napoleon). A relative named so ("Aung San Suu Kyi" for her father Aung San) is of this kind:
  the rule reads names, and hers extends his.
* "one_word": the title shares only some of the prompt's name words ("Pierre Curie" for Marie
  Curie, "Zhu Di" for Zhu Xi, "Elizabeth II" for Elizabeth I, "Martin Luther" for Martin Luther
  King Jr., "Elizabeth of Russia" for Alexis of Russia).

A title sharing no name word with the prompt's name is no namesake: None (whether its passage is
about the subject is the retriever's relevance, not this rule's: "Theory of relativity" for
Albert Einstein). Known limits, all of names alone: a name with a middle name dropped reads as
the same person ("John Adams" for John Quincy Adams: only a datastore holding both tells them
apart); a full given name meets an initial ("Carl Lewis" for C. S. Lewis); and a person known by
a given name reads as extended by their full name ("Leonardo" and "Galileo" against Leonardo da
Vinci and Galileo Galilei are "extends"). Measured on the generated pairs of
`ewe.data.namesake_pairs` (tests/test_namesakes.py).
"""
from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from dataclasses import dataclass
from typing import Optional

from .subject import HONORIFICS
from .text import NAME_PARTICLES, WORD_RE

KINDS = ("extends", "one_word", "work_or_relative")

PARTICLES = NAME_PARTICLES | frozenset("dos das do des e zu ter ten no bint ben el und op af".split())
_ROMAN = re.compile(r"[IVXL]+")
_LEADING_PARTICLES = frozenset("de da di du del della des van von der den ibn bin ben y no".split())
_TRAILING_TITLES = frozenset("khan shah pasha bey beg sultan emperor empress khatun".split())
_QUALIFIER = re.compile(r"\s*\(([^()]*)\)\s*$")
_ARTICLE = re.compile(r"(?:The|A|An)\s+(?=\S)")  # not "A. J. P. Taylor"
_FAMILY_FIRST = re.compile(r"\b(?:Chinese|Korean|Vietnamese|China|Korea|Vietnam)\b(?![-–]American)")


def fold(word: str) -> str:
    """A name word lower-cased, accents and a possessive dropped ("Newton's" -> "newton"); a final
    s stays ("Georges" is not "George", nor "Williams" "William")."""
    w = "".join(ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch))
    return re.sub(r"'s?$", "", w.lower().replace("’", "'"))


@dataclass(frozen=True)
class Name:
    """A name read for comparison. words: its name words, folded, in order (titles, numerals and
    suffixes kept); core: the same without leading titles ("Queen") and a suffix; cores: core and the
    readings of a two-word core without its particle or trailing title ("De Gaulle" as "Gaulle",
    "Genghis Khan" as "Genghis", "Du Fu" kept as it is too); titled: a leading title was dropped;
    suffix: "jr", "sr" or a numeral ending the name; tail: the name words after "of" or a
    comma ("England" in "Henry V of England"); common: its lower-case words that are no particle;
    possessive: its name words written with 's; qualifier: the words of a disambiguation in
    parentheses; article: it opens with The, A or An."""

    words: tuple[str, ...]
    core: tuple[str, ...]
    cores: tuple[tuple[str, ...], ...]
    titled: bool
    suffix: tuple[str, ...]
    tail: tuple[str, ...]
    common: frozenset[str]
    possessive: frozenset[str]
    qualifier: tuple[str, ...]
    article: bool

    @property
    def all(self) -> frozenset[str]:
        return frozenset(self.words) | frozenset(self.tail)


def _particle(word: str) -> bool:
    return word in PARTICLES or bool(re.match(r"[dl]['’]", word))  # "d'Alembert"


@functools.lru_cache(maxsize=20000)
def parse(text: str) -> Name:
    """`text` read as a name (see `Name`)."""
    text = " ".join(text.split())
    m = _QUALIFIER.search(text)
    qualifier = tuple(fold(w) for w in WORD_RE.findall(m.group(1)) if w[:1].isupper()) if m else ()
    base = text[:m.start()] if m else text
    article = bool(_ARTICLE.match(base))
    if article:
        base = base[_ARTICLE.match(base).end():]
    head, _, comma = base.partition(",")
    if re.fullmatch(r"\s*(?:Jr|Sr)\.?\s*", comma):  # "Martin Luther King, Jr."
        head, comma = f"{head} {comma.strip()}", ""
    of = re.search(r"\s+of\s+(?:the\s+)?(?=[A-Z])", head)
    tail_text = (head[of.end():] if of else "") + " " + comma
    head = head[:of.start()] if of else head
    words: list[str] = []
    numerals: set[int] = set()  # where a regnal numeral stands, as written ("XIV", not "Xi")
    common: set[str] = set()
    possessive: set[str] = set()
    for w in WORD_RE.findall(head):
        if w[:1].isupper() or w[:1].isdigit() or re.match(r"[dl]['’][A-Z]", w):  # "d'Alembert" too
            if _ROMAN.fullmatch(w) and words:
                numerals.add(len(words))
            words.append(fold(w))
            if re.search(r"['’]s?$", w):
                possessive.add(fold(w))
        elif not _particle(w):
            common.add(fold(w))
    tail = tuple(fold(w) for w in WORD_RE.findall(tail_text) if w[:1].isupper() or w[:1].isdigit())
    common |= {fold(w) for w in WORD_RE.findall(tail_text) if w[:1].islower() and not _particle(w)}
    core = list(words)
    suffix: list[str] = []
    while len(core) > 1 and (core[-1] in ("jr", "sr") or len(core) - 1 in numerals):
        suffix.insert(0, core.pop())
    titled = False
    while len(core) > 1 and core[0] in HONORIFICS:
        core.pop(0)
        titled = True
    cores = [tuple(core)]
    if len(core) == 2 and core[0] in _LEADING_PARTICLES:
        cores.append(tuple(core[1:]))  # "De Gaulle", "Van Gogh", "Ibn Khaldun": the particle of a surname
    if len(core) == 2 and core[-1] in _TRAILING_TITLES:
        cores.append(tuple(core[:1]))  # "Genghis Khan", "Kangxi Emperor"
    return Name(tuple(words), tuple(core), tuple(cores), titled, tuple(suffix), tail, frozenset(common),
                frozenset(possessive), qualifier, article)


# --- descriptions ------------------------------------------------------------------------------

_PERSON_NOUNS = frozenset("""king queen emperor empress president minister leader ruler monarch pharaoh sultan caliph
    khan shah tsar czar pope saint bishop archbishop cardinal priest monk nun prophet patriarch matriarch imam guru yogi
    rabbi teacher philosopher poet poetess writer author novelist playwright dramatist painter sculptor architect
    composer conductor singer songwriter rapper musician actor actress director filmmaker producer comedian dancer
    choreographer photographer designer inventor engineer entrepreneur businessman businesswoman industrialist investor
    philanthropist explorer navigator aviator astronaut cosmonaut general admiral commander soldier warrior conqueror
    statesman stateswoman politician diplomat revolutionary activist reformer theologian scholar polymath founder
    father mother son daughter wife husband brother sister consort prince princess duke duchess count countess lord
    lady noble nobleman noblewoman aristocrat courtesan figure person man woman god goddess deity hero heroine outlaw
    pirate magician mystic sage ascetic apostle disciple martyr missionary preacher cleric friar abbot hermit scribe
    official bureaucrat administrator governor mayor senator chancellor premier viceroy regent dictator tyrant
    chieftain chief warlord samurai shogun daimyo knight crusader mercenary spy assassin criminal gangster supermodel
    celebrity socialite host presenter broadcaster animator cartoonist illustrator calligrapher potter
    craftsman jeweler chef cook astrologer pioneer printer publisher banker merchant trader lawyer judge jurist
    magistrate nurse midwife surgeon doctor boxer wrestler swimmer runner golfer cricketer footballer player athlete
    coach jockey sprinter skater skier climber mountaineer sailor captain pilot officer marshal emir vizier caudillo
    abolitionist suffragette feminist lexicographer translator educator educationist scientist ruler sovereign
    heir claimant usurper monarch shahanshah tlatoani tlahtoani negus raja rajah maharaja nawab mughal speaker
    astronomer adviser advisor legislator grandson granddaughter nephew niece cousin uncle aunt grandfather
    grandmother head hetman knyaz khedive chanyu chhatrapati lama priestess killer gladiator superhero superheroine
    aide attendant envoy master creator sant inca tenno mikado margrave elector doge rector dean laureate
    neurologist
    """.split())
_THING_NOUNS = frozenset("""city town village capital country state nation province region district county island
    river lake sea ocean mountain range valley desert continent peninsula planet star moon galaxy film novel book
    poem play painting statue sculpture symphony opera album song series work treatise essay text collection
    franchise character game sport dynasty empire kingdom republic civilization civilisation culture period era age
    war battle conflict movement style genre language family species genus order tribe people's unit law theorem
    equation theory principle effect building palace temple church cathedral mosque monument memorial museum
    university school college institute company corporation organization organisation party church religion
    award prize prizes festival holiday event disaster disease drug herb plant animal bird fish apes element
    compound mineral ship car aircraft spacecraft mission program programme expedition street square park bridge
    tower castle fortress wall canal road railway station airport port seat rank barrier polity principality
    confederation conglomerate association depression rebellion revolution controversy crisis conquest expansion
    colony territory monarchy caliphate sultanate khanate entity continuation landing accelerator agreement
    policy bloc alliance shift cooling half campaign struggle band group duo trio quartet partnership team troupe
    ensemble orchestra choir company brand dance instrument currency famine commune mission spaceflight flight
    treaty pact council court house clan lineage house tribe nation people peoples ethnicity brotherhood
    sisterhood order society community city-state state kingdom""".split())


def _lifespan(desc: str) -> bool:
    """Dates in parentheses such as a person's life: "(born 1945)", "(died 1234)", "(fl. 300 BC)", or a
    span of 15 to 110 years ("(1867–1934)", "(c. 339 – 397)"); not a polity's "(846–1297)"."""
    for inner in re.findall(r"\(([^()]*\d[^()]*)\)", desc):
        if re.search(r"\b(?:born|died|fl|b|d)\b\.?:?\s*(?:c\.\s*)?\d", inner, re.IGNORECASE):
            return True
        years = [int(y) for y in re.findall(r"\d{1,4}", inner)]
        if len(years) >= 2:
            bc = re.search(r"\bBC", inner)
            span = (years[0] - years[-1]) if bc else (years[-1] - years[0])
            if 15 <= span <= 110:
                return True
    return False


_RULERS = frozenset("king queen emperor empress pharaoh sultan caliph khan shah tsar pope saint".split())


def describes_person(description: str) -> Optional[bool]:
    """Whether an article's description is a person's ("American musician and songwriter
    (1958–2016)", "Fourth wife of Mao Zedong", "Sultan of Egypt and Syria from 1260 to 1277") or a
    thing's ("Political treatise by Niccolò Machiavelli", "SI unit of force", "Capital city of the
    United States"); None without one. By the head noun, the last word before "of", "by", "in",
    "and", a comma ...; a head noun of neither list is a person's when the description gives
    dates in parentheses, as a person's does ("(c. 339 – 397)")."""
    desc = " ".join((description or "").split())
    if not desc:
        return None
    dated = _lifespan(desc)
    bare = re.sub(r"\s*\([^()]*\)", "", fold(desc))
    head = re.split(r"\s+(?:of|by|in|from|for|on|at|to|who|that|with|and|or|about|between|during|whose|which|near|"
                    r"than|into|as|after|before|since|until|featuring|around|across|over|under|among|within|through|"
                    r"against|along|throughout|beyond|outside|inside|\w+ed|\d)\b|[,;:(]", bare, maxsplit=1)[0]
    words = re.findall(r"[a-z][\w'-]*", head)
    for word in reversed(words):  # the head noun, else a title before it ("Queen regnant")
        noun = word.split("-")[-1]
        if word is not words[-1] and noun not in HONORIFICS | _RULERS:
            continue
        singular = (noun[:-1] if noun.endswith("s") else noun, noun[:-2] if noun.endswith("es") else noun)
        for cand in dict.fromkeys((noun, *singular)):
            if cand in _PERSON_NOUNS:
                return True
            if cand in _THING_NOUNS:
                return False
        if word is words[-1] and re.search(r"(?:ist|ian|ologist|grapher|smith|maker|wright)$", noun) \
                and len(noun) >= 6 and noun not in ("meridian", "dalmatian", "checklist", "playlist"):
            return True
    return dated


# --- names -----------------------------------------------------------------------------------

def _match(a: str, b: str) -> bool:
    """Two name words alike, or an initial and a word it begins."""
    return a == b or (len(a) == 1 and b.startswith(a)) or (len(b) == 1 and a.startswith(b))


def _subsequence(short: tuple[str, ...], long: tuple[str, ...]) -> Optional[int]:
    """Where in `long` the last word of `short` falls (the earliest place), when `short`'s words
    are `long`'s in order (-1 for no words); None when they are not."""
    i, at = 0, -1
    for w in short:
        while i < len(long) and not _match(w, long[i]):
            i += 1
        if i == len(long):
            return None
        at, i = i, i + 1
    return at


def _ends_on(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    """`short` is a form of `long`: its last word `long`'s last, written out (an initial is a given
    name's, never a surname's: "John Ford" is not John F. Kennedy), and, for a name of two words or
    more, its first word `long`'s first (or the first after leading initials: "Scott Fitzgerald" for
    F. Scott Fitzgerald), its other words `long`'s in order ("Lyndon Johnson" in Lyndon Baines
    Johnson, "Lyndon B. Johnson"). "Ernest Lawrence" is not T. E. Lawrence."""
    if not short or len(short) > len(long) or short[-1] != long[-1]:
        return False
    if len(short) == 1:
        return True
    bare = tuple(itertools.dropwhile(lambda w: len(w) == 1, long))
    return any(len(short) <= len(lg) and _match(short[0], lg[0]) and _subsequence(short[1:-1], lg[1:-1]) is not None
               for lg in (long, bare) if lg)


def _suffix_ok(short: Name, long: Name) -> bool:
    """The suffixes allow one name to be the other: the same, or only a "Jr." the shorter leaves out."""
    return short.suffix == long.suffix or (not short.suffix and long.suffix == ("jr",))


def _tail_ok(a: Name, b: Name) -> bool:
    return not a.tail or not b.tail or a.tail == b.tail


def _is_form(short: Name, long: Name, family_first: bool = False) -> bool:
    """`short` is `long`'s name or a form of it (see the module docstring)."""
    if not short.core or not long.core or not _suffix_ok(short, long) or not _tail_ok(short, long):
        return False
    if short.titled and len(short.core) == 1:
        return any(short.core == c for c in long.cores)  # "Saint George" is a given name: not David Lloyd George
    if len(short.core) == 1 and len(long.core) > 1 and family_first and short.core[0] == long.core[0]:
        return True  # "Mao" for Mao Zedong
    return any(_ends_on(a, b) for a in short.cores for b in long.cores)


def _same_name(a: Name, b: Name) -> bool:
    return any(len(x) == len(y) and all(map(_match, x, y)) for x in a.cores for y in b.cores) \
        and a.common == b.common and a.article == b.article and _tail_ok(a, b) \
        and (_suffix_ok(a, b) or _suffix_ok(b, a))


def namesake_kind(name: str, title: str, description: str = "") -> Optional[str]:
    """None when the article `title` (described by `description`) can be the subject the prompt
    names with `name`, or shares no name word with it; else the kind of other subject it is:
    "extends", "one_word" or "work_or_relative" (see the module docstring)."""
    p, t = parse(name), parse(title)
    if not p.words or not t.words:
        return None
    prompt_words = p.all
    if not prompt_words & (t.all | frozenset(t.qualifier)):
        return None  # no name word in common: no namesake
    if _same_name(p, t):
        if p.qualifier and t.qualifier and p.qualifier != t.qualifier:
            return "one_word"  # two disambiguated titles: "Symphony No. 5 (Beethoven)", "... (Mahler)"
        if (p.words, p.tail) != (t.words, t.tail) and describes_person(description) is False:
            return "work_or_relative"  # "Kelvin" (a unit) for Lord Kelvin, "Basil" (a herb) for Basil of Caesarea
        return None
    # a thing or a group bearing the name
    if p.article != t.article or t.common - p.common or (t.possessive & prompt_words) - p.possessive:
        return "work_or_relative"
    person = describes_person(description)
    if not frozenset(p.words) & frozenset(t.words):
        if frozenset(p.words) & frozenset(t.qualifier) or person is not True:
            return "work_or_relative"  # the name in the disambiguation ("Republic (Plato)"), or a thing:
            # "Bank of England" for England, "Hungary" and "History of Hungary" for Louis I of Hungary
        return "one_word"  # a person sharing a place: "Elizabeth of Russia" for Alexis of Russia
    if _is_form(p, t, family_first=bool(_FAMILY_FIRST.search(description or ""))):
        return None if person is not False else "work_or_relative"  # "Newton": Isaac Newton; "Zealand"
    if _is_form(t, p):
        return None if person is not False else "work_or_relative"  # "Curie"; "Newton (unit)"
    if person is False:
        return "work_or_relative"
    full, title_full = p.words + p.tail, t.words + t.tail
    at = _subsequence(full, title_full)
    if at is not None and title_full[at] == full[-1] and at < len(title_full) - 1:
        return "extends"  # the prompt's full name, and more after it
    return "one_word"


def is_namesake(name: str, title: str, description: str = "") -> bool:
    """Whether the article `title` is another subject bearing (part of) the prompt's name `name`."""
    return namesake_kind(name, title, description) is not None
