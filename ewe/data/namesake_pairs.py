"""Namesake pairs drawn from the embedded Wikipedia summaries (issue 72, item 3): a prompt's name
and an article title, labelled by how the pair was built, never by the rule they measure
(`ewe.verify.namesakes.namesake_kind`; this module does not import it).

Each pair is drawn from an article T (`Pair.subject`, what the split goes by). Its prompt name P
is T's title without a disambiguation in parentheses ("Prince (musician)" -> "Prince").

Whom an article is about is read from its topic and its text, never from its description (the
one field the rule reads): a person (`is_person`: topic People; or a title of capitalized words
whose extract names it in its first sentence and calls it he or she, or gives it a person's role
there: "James Clerk Maxwell was a Scottish physicist"), a group of people (`is_group`: "... were
an English rock band", "The Brothers Grimm ... were"), or surely a thing (`is_thing`: no he or
she, no people, in its opening). An article that is none of these is given no label.

Same subject ("same"): forms of T's own name that no other article can claim:

* ``self``: T's title itself; ``unqualified``: P, for a title with a disambiguation.
* for a person (`person_forms`): ``surname`` (the last name word, with its particle: "Newton",
  "Van Gogh"), ``family_name`` (the first word of a name written family name first: a Chinese,
  Korean or Vietnamese person by the description, else the first sentence: "Mao"),
  ``middle_dropped`` ("Frank Wright"), ``initial`` ("Frank L. Wright"), ``suffix_dropped``
  ("Martin Luther King" for "... Jr."), ``of_dropped`` ("Augustine" for Augustine of Hippo),
  ``honorific_dropped`` ("Victoria" for Queen Victoria, "Genghis" for Genghis Khan) and ``folded``
  (diacritics dropped: "Rene Descartes"). Names with "of" or "the" ("Louis the Pious") get no
  surname form, nor a name ending in a title ("Ali Akbar Khan").

A form is kept only when it is T's alone: no other title (nor its name without the
disambiguation) reads so, and no other article's forms include it. "Curie" is left out (Marie
and Pierre), and so is "John Adams" as a form of John Quincy Adams (John Adams has an article).

Another subject, for a person T and an article U sharing a name word with P (capitalized, two
letters or more; no title such as "King", no regnal numeral, no "Abu", "Al", "Ibn", "San"):

* ``work_or_relative``: U bears the name as a thing or a group: a leading article P lacks ("The
  Prince" for Prince), a lower-case word ("Maya civilization", "Qing dynasty", "Newton's laws of
  motion"; and a family: "Wright brothers" for Frank Lloyd Wright is labelled here, a group of
  relatives, not ``one_word``), a possessive, P's word only in U's disambiguation
  ("Metaphysics (Aristotle)"), or U a group or surely a thing ("Lincoln Memorial", "Hungary" for
  Louis I of Hungary).
* ``extends``: U is a person whose title is P followed by more name words ("Martin Luther King
  Jr." for Martin Luther; "Aung San Suu Kyi" for her father Aung San is labelled by her name's
  form: a relative, but the rule reads names). Not words after "of" or a comma, nor a "Jr.": how
  a title disambiguates ("Henry V of England"). And ``given_names``: for a person U, U's name
  without its surname as the prompt name ("Frank Lloyd" for Frank Lloyd Wright), drawn from U,
  unless another article reads so or U's extract calls them by it alone ("Galileo ...
  Galileo studied": a name they are known by); no name with a particle, hyphen, initial,
  numeral or title, nor one written family name first.
* ``one_word``: U is a person sharing exactly one name word with P, each having a name word the
  other lacks ("Pierre Curie" for Marie Curie, "Zhu Di" for Zhu Xi). `Pair.how` tells which word:
  ``surname_shared``, ``given_shared`` (most of them: John Locke and John Snow) or ``other_shared``.

Labels wrong by construction, and how they are kept out: a pair whose P is also a form of U (P
= "Newton" from "Newton (unit)" against Isaac Newton; "John Adams" against John Quincy Adams)
names U as well as T, so it is left out rather than called another subject; so is a pair where
U's name is a form of T's (U could be T's own article under a shorter title), and a one-word P
against a person whose last word it is. An article neither surely a person nor surely a thing
(Louis Armstrong's opening gives no role the reader knows and no he) is left out as U rather than
called a thing. Pairs fitting no kind (two shared words: "World War I", "World War II") are not
emitted.

Deterministic: titles are read in sorted order and nothing is random. `pairs(split)` keeps the
pairs whose T `ewe.data.splits.is_held_out` holds out ("test") or not ("dev").
"""
from __future__ import annotations

import functools
import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Optional

from ..verify.subject import HONORIFICS
from ..verify.text import NAME_PARTICLES, WORD_RE
from .splits import is_held_out
from .subject_set import gender

SAME = "same"
KINDS = ("extends", "one_word", "work_or_relative")

PARTICLES = NAME_PARTICLES | frozenset("dos das do des e zu ter ten no bint ben el und op af".split())
# a title after a name, part of how the person is called: "Genghis Khan", "Kangxi Emperor", "Tipu Sultan"
TRAILING_TITLES = frozenset("khan shah pasha bey beg sultan emperor empress khatun".split())
# capitalized words that tell no bearer from another: a kunya, an article, a saint's prefix
_NOT_INDEXED = frozenset("abu al el ibn bin ben la le san santa st saint".split())
_ARTICLES = frozenset(("the", "a", "an"))
_ROMAN = re.compile(r"[IVXL]+")
_SUFFIXES = frozenset(("jr", "sr"))
_QUALIFIER = re.compile(r"\s*\(([^()]*)\)\s*$")
_FAMILY_FIRST = re.compile(r"\b(?:Chinese|Korean|Vietnamese|China|Korea|Vietnam)\b(?![-–]American)")


@dataclass(frozen=True)
class Pair:
    """name: the prompt's name; title: the article's title and description its description; kind:
    "same" or one of `KINDS`; how: the construction; subject: the article T the name was drawn from
    (what the split goes by)."""

    name: str
    title: str
    description: str
    kind: str
    how: str
    subject: str


def split_title(title: str) -> tuple[str, str]:
    """("Prince", "musician") for "Prince (musician)"; (title, "") without a disambiguation."""
    m = _QUALIFIER.search(title)
    return (title[:m.start()].strip(), m.group(1).strip()) if m else (title.strip(), "")


def fold(word: str) -> str:
    """A name word lower-cased, its accents and a possessive dropped ("Newton's" -> "newton"); unlike
    `ewe.verify.text.fold`, a final s stays: "Georges" is not "George", nor "Williams" "William"."""
    w = "".join(ch for ch in unicodedata.normalize("NFKD", word) if not unicodedata.combining(ch))
    return re.sub(r"'s?$", "", w.lower().replace("’", "'"))


def key(name: str) -> str:
    """A name's folded words, joined: how two spellings of a name are compared ("Van Gogh", "van Gogh")."""
    return " ".join(fold(w) for w in WORD_RE.findall(name))


def _cap(word: str) -> bool:
    return word[:1].isupper()


def _index_words(base: str, titles: bool = False) -> set[str]:
    """The words a namesake is found by: capitalized, two letters or more, no numeral, and no title
    such as "King" (unless `titles`: a name of titles only, "Prince", is found by them)."""
    return {fold(w) for w in WORD_RE.findall(base) if _cap(w) and len(w) >= 2 and not _ROMAN.fullmatch(w)
            and w.lower() not in _ARTICLES and fold(w) not in (_SUFFIXES | _NOT_INDEXED if titles else
                                                              HONORIFICS | _SUFFIXES | _NOT_INDEXED)}


def _particle(word: str) -> bool:
    return word in PARTICLES or bool(re.match(r"[dl]['’]", word))  # "d'Alembert"


def _article(base: str) -> bool:
    return bool(re.match(r"(?:The|A|An)\s", base))  # not "A. J. P. Taylor"


# a work's first sentence: "Anna Karenina is a novel", "Vertigo is a 1958 American psychological thriller film"
_WORK = re.compile(r"\b(?:is|was|are|were)\s+(?:a|an|the|one\s+of\s+the)\s+(?:[\w-]+\s+){0,5}?"
                   r"(?:novel|novella|play|film|poem|opera|ballet|symphony|painting|sculpture|statue|book|series|"
                   r"franchise|character|tragedy|comedy|epic|song|album|work|musical|story|tale|manga|saga|legend|"
                   r"myth|cycle|text|treatise|collection)s?\b")
# the roles a biography's first sentence gives its subject
_ROLES = """king queen emperor empress president minister leader ruler monarch pharaoh sultan caliph khan shah tsar pope
    saint bishop archbishop priest monk nun prophet patriarch imam guru yogi rabbi poet writer author novelist
    playwright dramatist painter sculptor architect composer conductor singer songwriter rapper musician pianist
    violinist guitarist
    actor actress director filmmaker producer comedian dancer photographer designer inventor engineer entrepreneur
    businessman businesswoman industrialist investor philanthropist magnate tycoon explorer navigator aviator astronaut
    cosmonaut general admiral commander soldier warrior conqueror statesman stateswoman politician diplomat
    revolutionary activist reformer theologian scholar polymath philosopher scientist physicist chemist biologist
    mathematician astronomer physician surgeon nurse psychologist psychiatrist psychoanalyst economist historian
    sociologist anthropologist linguist grammarian lexicographer journalist critic essayist naturalist geographer
    geologist botanist zoologist logician player footballer athlete boxer wrestler swimmer cricketer golfer jurist
    lawyer judge founder wife husband consort prince princess duke duchess noblewoman nobleman aristocrat courtesan
    figure man woman god goddess deity hero heroine outlaw pirate mystic sage apostle disciple martyr missionary
    preacher cleric friar abbot hermit official governor mayor senator chancellor viceroy regent dictator chieftain
    warlord samurai shogun knight illustrator cartoonist animator printer publisher banker merchant educator
    abolitionist feminist pioneer astrologer alchemist cook chef model interpreter trumpeter drummer craftsman
    leader""".split()
# what a biography's first sentence calls its subject: "James Clerk Maxwell was a Scottish physicist"
_ROLE = re.compile(r"\s*(?:(?:also\s+)?(?:a|an|the|one\s+of\s+the)\s+)?"
                   r"(?:(?!(?:of|for|in|by|with|to|from|on|at|about)\s)[\w.’'-]+\s+){0,5}?"
                   rf"(?:{'|'.join(_ROLES)}|[a-z]{{3,}}(?:ologist|ist|ician))s?(?![\w-])"
                   r"(?=\s*(?:$|[.:]|(?:of|from|in|at|for|to|with|during|under|known|best|noted|famous|born|based|"
                   r"active|considered|regarded|widely|most|whose|who|whom|credited|remembered|renowned|and|or|but|"
                   r"after|before|as|by|between|among|until|since|\w+ed|\w+ing)\b))", re.IGNORECASE)


# a group's first sentence: "The Beatles were an English rock band", "ABBA is a Swedish pop group"
_GROUP = re.compile(r"\b(?:is|was|are|were)\s+(?:a|an|the)\s+"
                    r"(?:(?!(?:of|for|in|by|with|to|from|on|at|about)\s)[\w-]+\s+){0,4}?"
                    r"(?:band|group|duo|trio|quartet|team|partnership|troupe|ensemble|family|dynasty|couple)s?\b")


def is_group(entry: dict) -> bool:
    """An article about a group of people, by its first sentence ("... were an English rock band")."""
    text = " ".join((entry.get("extract") or "").split())
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]
    verb = re.search(r"\s(is|was|are|were)\b", first)
    # "... a Swedish pop group"; a plural subject: "The Brothers Grimm, Jacob and Wilhelm, were ..."
    return bool(_GROUP.search(first)) or bool(verb and verb.group(1) in ("are", "were"))


def is_thing(entry: dict) -> bool:
    """Surely no article about a person: not topic People and no he, she, his or her in its first
    three sentences (an article `is_person` misses, "Louis Armstrong", is neither person nor thing)."""
    if entry.get("topic") == "People":
        return False
    text = " ".join((entry.get("extract") or "").split())
    opening = " ".join(re.split(r"(?<=[.!?])\s+(?=[A-Z])", text)[:3])
    return not re.search(r"\b(?:he|she|his|her|him|himself|herself)\b", opening, re.IGNORECASE) \
        and not _GROUP_PEOPLE.search(opening)


_GROUP_PEOPLE = re.compile(r"\b(?:people|persons?|men|women|humans?)\b", re.IGNORECASE)


def is_person(entry: dict) -> bool:
    """An article about a person (`is_group` tells a group of people apart), by its topic and its text,
    never by its description (what the rule measured reads): topic People; or a title of capitalized
    name words (particles between them) whose text calls its subject he or she and opens a sentence
    with it ("He led China"), or whose first sentence calls it by a person's role ("James Clerk Maxwell
    was a Scottish physicist", "Isaac is one of the three patriarchs"), and does not call it a work
    ("Anna Karenina is a novel")."""
    if entry.get("topic") == "People":
        return True
    text = " ".join((entry.get("extract") or "").split())
    words = WORD_RE.findall(split_title(entry.get("title") or "")[0])
    if not words or any(not _cap(w) and not _particle(w) for w in words) \
            or all(w.lower() in HONORIFICS for w in words):
        return False  # "Dreyfus affair", "Pope"
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]
    said = {fold(w) for w in WORD_RE.findall(first)}
    if not all(fold(w) in said for w in words if _cap(w)) or _WORK.search(first):
        return False  # the first sentence names its title ("Sir Isaac Newton was"; not "RMS Titanic sank")
    if gender(text) is not None and re.search(r"(?:^|[.!?]\s)(?:He|She)\s", text[:1500]):
        return True
    verb = re.search(r"\s(?:is|was|are|were)(?=[\s,])", first)
    if not verb:
        return False
    rest = re.sub(r"^,[^,]{1,30},", "", first[verb.end():])  # "David was, originally, leader of ..."
    return bool(_ROLE.match(re.split(r"\b(?:which|that)\b|[,;(]", rest)[0]))


def _plain(base: str) -> bool:
    """A name as people are written: capitalized words (particles between them), no article, no comma."""
    words = WORD_RE.findall(base)
    return bool(words) and "," not in base and not _article(base) and not re.search(r"['’]s\b", base) \
        and all(_cap(w) or _particle(w) for w in words) and _cap(words[0])


def _strip_accents(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def person_forms(title: str, entry: dict) -> list[tuple[str, str]]:
    """(how, form) for the short and variant forms of a person's name (see the module docstring),
    before any check that they are T's alone."""
    base, _ = split_title(title)
    out: list[tuple[str, str]] = []
    if _strip_accents(base) != base:
        out.append(("folded", _strip_accents(base)))
    tokens = base.split()
    if " of " in base and "," not in base:
        head = base.split(" of ")[0]
        if _plain(head) and len(head.split()) <= 3:
            out.append(("of_dropped", head))
    if not _plain(base):
        return out
    if tokens[-1].rstrip(".").lower() in _SUFFIXES and len(tokens) >= 3:
        if tokens[-1].rstrip(".").lower() == "jr":
            out.append(("suffix_dropped", " ".join(tokens[:-1]).rstrip(",")))
        return out  # "Martin Luther King Jr.": no surname or middle form of a name with a suffix
    if len(tokens) >= 2 and tokens[0].lower() in HONORIFICS and _plain(" ".join(tokens[1:])):
        if len(tokens) == 2:
            out.append(("honorific_dropped", tokens[1]))  # "Queen Victoria" -> "Victoria"
        return out
    if len(tokens) == 2 and fold(tokens[1]) in TRAILING_TITLES:
        out.append(("honorific_dropped", tokens[0]))  # "Genghis Khan" -> "Genghis"
        return out
    if any(_ROMAN.fullmatch(t) for t in tokens) or not 2 <= len(tokens) <= 4 or {"of", "the"} & set(tokens) \
            or fold(tokens[-1]) in TRAILING_TITLES:
        return out  # "Henry V", "John of Damascus", "Louis the Pious", "Ali Akbar Khan": no surname form
    last = tokens[-1]
    if _FAMILY_FIRST.search(entry.get("description") or re.split(r"(?<=[.!?])\s", entry.get("extract") or "")[0]):
        if len(tokens) == 2 and "-" not in base and len(tokens[0]) >= 2:
            out.append(("family_name", tokens[0]))
        return out
    if len(last) >= 3 and "-" not in last and last.isalpha():
        if tokens[-2] in PARTICLES:
            out.append(("surname", tokens[-2].capitalize() + " " + last))  # "Van Gogh", "Da Vinci"
        else:
            out.append(("surname", last))
    middle = tokens[1:-1]
    if middle and all(_cap(t) and "-" not in t for t in middle) and len(tokens[0].rstrip(".")) >= 2 \
            and "-" not in tokens[0]:
        out.append(("middle_dropped", f"{tokens[0]} {last}"))
        if all(len(t.rstrip(".")) >= 3 for t in middle):
            out.append(("initial", " ".join([tokens[0], *(t[0] + "." for t in middle), last])))
    return out


def given_names(a: "_Article") -> Optional[str]:
    """The given names of a person's plain name, its last word (the surname) dropped ("Frank Lloyd"
    for Frank Lloyd Wright): a name the article's title extends. None for a name written family name
    first, with a particle, hyphen, initial, numeral, suffix or title, and for a person whose article
    calls them by the given names alone ("Galileo ... Galileo studied"): a name they are known by."""
    if not a.person or not a.forms or any(how == "family_name" for how, _ in a.forms):
        return None
    tokens = a.base.split()
    if not _plain(a.base) or not 2 <= len(tokens) <= 4 or "-" in a.base or any(_particle(t) for t in tokens) \
            or any(_ROMAN.fullmatch(t) or t.rstrip(".").lower() in _SUFFIXES | HONORIFICS or len(t.rstrip(".")) < 2
                   or not t.isalpha() for t in tokens):
        return None
    given = " ".join(tokens[:-1])
    alone = re.compile(rf"\b{re.escape(given)}\b(?!\s+{re.escape(tokens[-1])})")
    if alone.search(a.entry.get("extract") or ""):
        return None
    return given


@dataclass(frozen=True)
class _Article:
    title: str
    base: str
    qualifier: str
    entry: dict
    person: bool
    thing: bool  # surely no person: neither `is_person` nor a he or she in its opening (else unknown)
    forms: tuple[tuple[str, str], ...]


def _articles(summaries: dict) -> list[_Article]:
    out = []
    for title in sorted(summaries):
        entry = summaries[title]
        base, qualifier = split_title(title)
        person = is_person(entry) and not is_group(entry)
        thing = not person and (is_group(entry) or is_thing(entry))
        out.append(_Article(title, base, qualifier, entry, person, thing,
                            tuple(person_forms(title, entry)) if person else ()))
    return out


def _thing_marks(p: _Article, u: _Article) -> bool:
    """U bears P's name as a thing or a group does (see the module docstring)."""
    shared = _index_words(p.base)
    words = WORD_RE.findall(u.base)
    own = {w.lower() for w in WORD_RE.findall(p.base)}
    if _article(u.base) and not _article(p.base):
        return True
    if any(not _cap(w) and not w[0].isdigit() and not _particle(w) and w.lower() not in own for w in words):
        return True
    if any(re.fullmatch(r"[\w-]+['’]s?", w) and fold(w) in shared for w in u.base.split()):
        return True
    if shared & _index_words(u.qualifier) and not shared & _index_words(u.base):
        return True
    return u.thing


def _extends(p: _Article, u: _Article) -> bool:
    """U's title is P's name followed by more name words (not "of ...", not a comma)."""
    if not (p.person and u.person and _plain(p.base)):
        return False
    ut, pt = u.base.split(), p.base.split()
    if len(ut) <= len(pt) or key(" ".join(ut[:len(pt)])) != key(p.base):
        return False
    rest = ut[len(pt):]
    return _plain(u.base) and rest[0] not in PARTICLES and rest[0].rstrip(".").lower() not in _SUFFIXES | {"the"}


def _one_word(p: _Article, u: _Article) -> bool:
    if not (u.person and _plain(u.base)):
        return False
    pk, uk = _index_words(p.base), _index_words(u.base)
    pa = {fold(w) for w in WORD_RE.findall(p.base) if _cap(w)}
    ua = {fold(w) for w in WORD_RE.findall(u.base) if _cap(w)}
    return len(pk & uk) == 1 and len(pa & ua) == 1 and bool(pa - ua) and bool(ua - pa)


def _shared_how(p: _Article, u: _Article) -> str:
    """Which word a one_word pair shares: both names' last ("surname_shared": Marie and Pierre Curie),
    both names' first ("given_shared": John Locke and John Snow), or another ("other_shared")."""
    pw = [fold(w) for w in WORD_RE.findall(p.base) if _cap(w)]
    uw = [fold(w) for w in WORD_RE.findall(u.base) if _cap(w)]
    return "surname_shared" if pw[-1] == uw[-1] else "given_shared" if pw[0] == uw[0] else "other_shared"


@functools.lru_cache(maxsize=1)
def _generate() -> tuple[Pair, ...]:
    from . import wiki

    return tuple(generate(wiki.summaries()))


def generate(summaries: dict) -> Iterable[Pair]:
    """Every pair, in a fixed order (see the module docstring)."""
    arts = _articles(summaries)
    bases: dict[str, set[str]] = defaultdict(set)  # key -> titles whose title or name reads so
    for a in arts:
        bases[key(a.title)].add(a.title)
        bases[key(a.base)].add(a.title)
    claims: dict[str, set[str]] = defaultdict(set)  # key -> titles any of whose forms reads so
    for a in arts:
        claims[key(a.base)].add(a.title)
        for _, form in a.forms:
            claims[key(form)].add(a.title)

    def own(form: str, a: _Article) -> bool:
        k = key(form)
        return bases.get(k, set()) <= {a.title} and claims.get(k, set()) <= {a.title}

    for a in arts:
        desc = a.entry.get("description") or ""
        yield Pair(a.title, a.title, desc, SAME, "self", a.title)
        if a.qualifier and own(a.base, a):
            yield Pair(a.base, a.title, desc, SAME, "unqualified", a.title)
        seen = {key(a.title), key(a.base)}
        for how, form in a.forms:
            if key(form) not in seen and own(form, a):
                seen.add(key(form))
                yield Pair(form, a.title, desc, SAME, how, a.title)

    for u in arts:  # given names alone, for a name extending them ("Frank Lloyd" -> Frank Lloyd Wright)
        given = given_names(u)
        if given and key(given) not in bases and u.title not in claims.get(key(given), ()):
            yield Pair(given, u.title, u.entry.get("description") or "", "extends", "given_names", u.title)

    index: dict[str, list[_Article]] = defaultdict(list)
    for a in arts:
        for w in sorted(_index_words(a.base, titles=True) | _index_words(a.qualifier, titles=True)):
            index[w].append(a)
    for p in arts:
        if not (p.person and _plain(p.base)):
            continue
        forms_p = {key(p.base)} | {key(f) for _, f in p.forms}
        seen_u: set[str] = set()
        for w in sorted(_index_words(p.base) or _index_words(p.base, titles=True)):
            for u in index.get(w, ()):
                if u.title == p.title or u.title in seen_u:
                    continue
                seen_u.add(u.title)
                if u.title in claims.get(key(p.base), ()):
                    continue  # P names U too ("Newton" from "Newton (unit)" against Isaac Newton)
                if u.person and key(u.base) in forms_p:
                    continue  # U's name is a form of T's: could be T's own article
                if len(WORD_RE.findall(p.base)) == 1 and u.person and key(u.base).split()[-1:] == [key(p.base)]:
                    continue  # a one-word prompt name is a surname's short form of U
                if not (u.person or u.thing):
                    continue  # neither surely a person nor surely a thing: no label by construction
                kind = ("work_or_relative" if _thing_marks(p, u) else "extends" if _extends(p, u)
                        else "one_word" if _one_word(p, u) else None)
                if kind:
                    how = _shared_how(p, u) if kind == "one_word" else kind
                    yield Pair(p.base, u.title, u.entry.get("description") or "", kind, how, p.title)


def pairs(split: str = "all", summaries: Optional[dict] = None) -> list[Pair]:
    """The generated pairs of `split`: "dev" (T not held out: read these to write rules), "test"
    (T held out: report on these only) or "all"."""
    if split not in ("dev", "test", "all"):
        raise ValueError(f"split must be dev, test or all, not {split!r}")
    everything = _generate() if summaries is None else tuple(generate(summaries))
    if split == "all":
        return list(everything)
    held = split == "test"
    return [p for p in everything if is_held_out(p.subject) == held]
