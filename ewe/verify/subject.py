"""Subject binding: who a claim is about, who a passage is about, and what a passage says
about a given subject (DESIGN.md section 7).

A judge reads a (passage, claim) pair and has no notion of whose passage it is: "Gustav
Klimt's best-known works include The Metamorphosis" reads as supported by Kafka's article,
whose sentences say "His best-known works include The Metamorphosis". FActScore avoids this
by construction (the evidence is the topic's own page); a retriever does not. The rule here:

* A passage is about its title (`Evidence.title`, else the "Title (description): extract"
  head of the embedded Wikipedia passages). A claim is about the prompt's person when it
  names them (a bio answer: "Curie" there is the person asked about), else about the name
  heading its own subject (`find_subject`). A claim whose grammatical subject names the
  passage's subject ("Pierre Curie married her", in a bio of Marie Curie; "Einstein's theory of
  relativity was ..." against "Theory of relativity") is about them too and is left alone; a
  mention elsewhere ("... proved Noether's theorem") is not enough.
* Two subjects are the same when the capitalized words of one are all words of the other
  ("Curie" and "Marie Curie"): a short form is not a different person. Then, or when either
  side has no identifiable subject, the passage is unchanged.
* Otherwise only the passage's sentences that name the claim's subject can speak about it:
  by the full name, or by one of its name words that the passage's title does not share
  ("Marie" against Pierre Curie's article; never the shared "Curie", nor a title such as
  "King"). The rest of the passage is about someone else, and its pronouns are that person.
  A name that is only a point of comparison or an epithet of the passage's own subject does
  not count ("evoked comparisons to Marie Curie", "nicknamed the "Chinese Marie Curie"" in
  Chien-Shiung Wu's article); a relation does ("his wife, Marie Curie", "studied under Marie
  Curie"). The title's name stays, so the judge sees whose passage it reads, but not its
  description: "(Chinese-American physicist (1912–1997))" is the other person's, and beside a
  sentence naming Marie Curie it lent her claim the year 1912. When no sentence names the
  claim's subject, the passage cannot support the claim and is dropped for it.

This is a filter on evidence, not a judge: it never makes a claim supported, it only keeps
another person's facts from counting as support. It misses a subject that the passage
names only by an alias, and a single capitalized common word opening a claim
("Scientists ...") is taken for a name: both only drop evidence, never add it.
"""
from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Optional, Sequence

from ..retrieval.chunking import split_passage
from .claims import LEADING_NON_SUBJECT, dated_subject, find_subject, prompt_person
from .prompt_subject import Subject, singular
from .text import NAME_PARTICLES, NOT_NAMES, WORD_RE, fold, sentence_spans
from .types import Evidence

# Words of a name that do not tell one bearer from another: a passage's "King" or "Pope" is
# no sign that it names the claim's king or pope.
HONORIFICS = frozenset("""saint st pope king queen emperor empress prince princess sir lord lady duke duchess
    count president general admiral sultan tsar czar shah caliph khan pharaoh jr sr the great elder younger""".split())


def name_keys(name: str) -> set[str]:
    """Folded capitalized words of a name ("Marie Skłodowska-Curie" -> {marie, sklodowska, curie})."""
    return {fold(w) for w in WORD_RE.findall(name) if w[:1].isupper() and w.lower() not in NOT_NAMES}


def same_subject(a: str, b: str) -> bool:
    """One name's words all belong to the other's ("Curie" and "Marie Curie"), an initial standing
    for a word it begins ("Lyndon B. Johnson" and "Lyndon Baines Johnson", as an article's
    first sentence names its title)."""
    ka, kb = name_keys(a), name_keys(b)
    return bool(ka) and bool(kb) and (_covers(ka, kb) or _covers(kb, ka))


_ROMAN = re.compile(r"[IVXL]+")
# lower-case words a person's own title may hold: "Gracchi brothers", "Izumo no Okuni"
_KIN = frozenset("brothers sisters family twins siblings no".split())


def same_person(person: str, about: str) -> bool:
    """`same_subject` for whom a person prompt's retrieved passages are about, stricter where the
    names share only a word: a title with a lower-case word names a thing ("Maya civilization" for
    Maya Angelou, "Qing dynasty" for Jiang Qing), regnal numerals must agree ("Sviatoslav I" for
    Sviatoslav Richter, "Augustus" for Augustus II the Strong), and a one-word name must be the
    person's last ("Curie" for Marie Curie, not "Horace" the Roman poet for Horace Greeley)."""
    if not same_subject(person, about):
        return False
    words, own = WORD_RE.findall(about), {w.lower() for w in WORD_RE.findall(person)} | _KIN
    if any(w[:1].islower() and w.lower() not in NAME_PARTICLES | own for w in words):
        return False
    core = re.split(r",|\s+of\s+", person)[0]  # "Henry V of England", "Christina, Queen of Sweden"
    numerals = {w for w in words if _ROMAN.fullmatch(w)}
    if numerals != {w for w in WORD_RE.findall(core) if _ROMAN.fullmatch(w)}:
        return False
    mine = [fold(w) for w in WORD_RE.findall(core) if w[:1].isupper() and w.lower() not in NOT_NAMES
            and fold(w) not in HONORIFICS]
    theirs = name_keys(about) - HONORIFICS
    return not (len(theirs) == 1 and len(mine) > 1 and not numerals and theirs != {mine[-1]})


def _covers(small: set[str], big: set[str]) -> bool:
    return all(k in big or (len(k) == 1 and any(w.startswith(k) for w in big)) for k in small)


def _head(text: str) -> Optional[tuple[str, int]]:
    """The "Title (description): " head of an embedded Wikipedia passage: (title, where the
    extract starts), or None when the text does not open with a title."""
    title, _, body = split_passage(text)
    title = title.split(" (")[0].strip()  # "Mercury (planet)": the name without its disambiguation
    if not title:
        return None
    words = title.split()
    if not 1 <= len(words) <= 8 or not all(w[:1].isupper() or w[:1].isdigit() or w.lower() in NAME_PARTICLES | {"and"}
                                           for w in words) or not name_keys(title):
        return None
    return title, len(text) - len(body)


def passage_subject(ev: Evidence) -> Optional[str]:
    """Whom a passage is about: its title (a disambiguation in parentheses dropped), else the
    title its text opens with, else the name its first sentence is about (`opening_subject`:
    a passage pasted as plain text); None when none of them says."""
    title = _title(ev)
    if title:
        return title
    if ev.title and not ev.title.startswith(GIVEN_TITLE):
        return None  # a title that names no one ("list of ..."): nothing to bind
    head = _head(ev.text)
    if head is None:
        return opening_subject(ev.text)
    if not (ev.text[len(head[0]):].lstrip().startswith("(") or name_keys(head[0]) & name_keys(ev.text[head[1]:])):
        return None  # "Note: ..." is no title: one needs a description or to be named again
    return head[0]


GIVEN_TITLE = "given passage"  # what ewe calls a passage a caller gave without a title (critique/critic.py)


def _title(ev: Evidence) -> Optional[str]:
    """The name a passage's title gives (a disambiguation in parentheses dropped), if it names one."""
    title = re.sub(r"\s*\([^()]*\)$", "", ev.title or "").strip()
    return title if title and name_keys(title) else None


def _untitled(ev: Evidence) -> bool:
    """A passage as users paste it: no title (or ewe's placeholder) and no "Title (description):" head."""
    return (not ev.title or ev.title.startswith(GIVEN_TITLE)) and _head(ev.text) is None


def opening_subject(text: str) -> Optional[str]:
    """The name a text's first sentence is about ("Constantin Brâncuși was a Romanian sculptor
    ..." -> "Constantin Brâncuși"; "In 1903, Marie Curie ..." -> "Marie Curie"), as an
    encyclopedia article or a biography opens; None when it opens with a pronoun or no name."""
    names = opening_names(text)
    return names[0] if names else None


_MAIN_VERB = re.compile(r"\b(?:is|was|are|were|has|had|became|remains)\b")
_ALIAS_CUE = re.compile(r"(?:known|called|named|name|born|n[ée]e?|nicknamed|alias|or)\W+(?:\w+\W+){0,2}$",
                        re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def opening_names(text: str) -> tuple[str, ...]:
    """Every name a text's first sentence gives its subject: the subject's, then the ones an
    alias cue introduces before the main verb ("Mary Ann Evans (...), known by her pen name
    George Eliot, was ..."; "Charles Lutwidge Dodgson, better known by his pen name Lewis
    Carroll, was ..."). Another person named there ("Pierre Curie, husband of Marie Curie,
    was") is not an alias."""
    spans = sentence_spans(text)
    if not spans:
        return ()
    first = text[spans[0][0]:spans[0][1]]
    runs = [r for r in name_runs(_subject_text(first)) if name_keys(r)]
    if not runs:
        return ()
    verb = _MAIN_VERB.search(first)
    head = first[:verb.start()] if verb else first
    aliases = []
    for m in re.finditer("|".join(re.escape(r) for r in name_runs(head) if name_keys(r)) or r"(?!)", head):
        if m.group(0) != runs[0] and _ALIAS_CUE.search(head[:m.start()]):
            aliases.append(m.group(0))
    return (runs[0], *dict.fromkeys(aliases))


_SUFFIXES = frozenset(("jr", "sr", "ii", "iii"))


def _name_words(name: str) -> list[str]:
    """A name's folded words in order, without titles and suffixes ("Jr", "III")."""
    return [fold(w) for w in WORD_RE.findall(name) if w[:1].isupper() and w.lower() not in NOT_NAMES | HONORIFICS
            and fold(w) not in _SUFFIXES]


def _short_form(a: str, b: str) -> bool:
    """A familiar form of the same name: the same last name, first names with the same initial
    ("Tom Brady" and "Thomas Edward Patrick Brady Jr", "Gordie Howe" and "Gordon Howe")."""
    wa, wb = _name_words(a), _name_words(b)
    return len(wa) >= 2 and len(wb) >= 2 and wa[-1] == wb[-1] and wa[0][:1] == wb[0][:1]


def is_about(ev: Evidence, subject: str, about: Optional[str] = None) -> bool:
    """Whether `ev` is about `subject`: its subject (`passage_subject`, or `about` when known)
    is the same; for a passage pasted without a title, any name its first sentence gives its
    subject, or a familiar form of it (`_short_form`)."""
    about = about if about is not None else passage_subject(ev)
    if about is None or same_subject(subject, about):
        return True
    if not _untitled(ev):
        return False
    return any(same_subject(subject, n) or _short_form(subject, n) for n in opening_names(ev.text))


def name_runs(text: str) -> list[str]:
    """Runs of capitalized words as written (initials and particles inside them kept,
    a possessive 's dropped, function words such as a sentence-initial "In" left out):
    "In 1915, J. M. W. Turner's works include The Castle" -> ["J. M. W. Turner", "Castle"]."""
    runs: list[list[re.Match]] = [[]]
    for m in WORD_RE.finditer(text):
        w, cur = m.group(0), runs[-1]
        gap = text[cur[-1].end():m.start()].strip() if cur else ""
        if cur and gap not in ("", "-") and not (gap == "." and len(cur[-1].group(0)) == 1):  # "J. M. W."
            runs.append([])
        name = w[:1].isupper() and w.lower() not in NOT_NAMES and w.lower() not in LEADING_NON_SUBJECT
        if name or (runs[-1] and w in NAME_PARTICLES):
            runs[-1].append(m)
        elif runs[-1]:
            runs.append([])
    out = []
    for run in runs:
        while run and run[-1].group(0) in NAME_PARTICLES:
            run.pop()
        if run:
            out.append(re.sub(r"['’]s$", "", text[run[0].start():run[-1].end()]))
    return out


def claim_subject(claim: str, prompt: Optional[str] = None) -> Optional[str]:
    """Whom a claim is about: the prompt's person when the claim names them (by any part of
    their name), else the first name in the claim's grammatical subject; None if it has none."""
    person = prompt_person(prompt)
    if person and any(same_subject(r, person) for r in name_runs(claim)):
        return person
    runs = name_runs(_subject_text(claim))
    return runs[0] if runs else None


def _subject_text(claim: str) -> str:
    """The claim's grammatical subject, or where none is found, the name it opens with."""
    span = dated_subject(claim) or find_subject(claim)
    if span:
        return claim[span[0]:span[1]]
    first = name_runs(claim)[:1]
    return first[0] if first and claim.startswith(first[0]) else ""


def names_subject(sentence: str, subject: str, other: str) -> bool:
    """Does `sentence` name `subject` in a way `other`'s name cannot explain: the full name, or
    a capitalized word of it that `other` does not share and that is no title ("Marie" against
    Pierre Curie; a lowercase "grace" is no Grace Hopper), somewhere other than as a point of
    comparison or an epithet of `other` (`_incidental`), nor inside a longer name of `other` ("Martin
    Luther" in "Martin Luther King Jr. was ...": King's article names King, not Luther)."""
    return any(not _incidental(sentence, a, b) and not _inside_other_name(sentence, (a, b), subject, other)
               for a, b in mentions(sentence, subject, other))


_RUN_GAP = re.compile(rf"\s*-?\s*|\s+(?:{'|'.join(sorted(NAME_PARTICLES))})\s+")


def mentions(sentence: str, subject: str, other: str) -> list[tuple[int, int]]:
    """Spans where `sentence` names `subject` (see `names_subject`): each full name, and each run
    of the name's capitalized words holding one that `other` does not share ("Marie Curie" and
    "Curie" in "Marie Curie ... the Chinese Madame Curie", against Chien-Shiung Wu)."""
    spans = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(subject)}(?!\w)", sentence)]
    keys = name_keys(subject)
    own = keys - name_keys(other) - HONORIFICS
    runs: list[list[re.Match]] = []
    for m in WORD_RE.finditer(sentence):
        w = m.group(0)
        if not (w[:1].isupper() and fold(w) in keys and w.lower() not in NOT_NAMES):
            continue
        if runs and _RUN_GAP.fullmatch(sentence[runs[-1][-1].end():m.start()]):  # "Marie Curie", "da Vinci"
            runs[-1].append(m)
        else:
            runs.append([m])
    for run in runs:
        a, b = run[0].start(), run[-1].end()
        if own & {fold(m.group(0)) for m in run} and not any(x < b and a < y for x, y in spans) \
                and not _in_another_name(sentence, a, b, subject):
            spans.append((a, b))
    return sorted(spans)


_NAME_WORD = re.compile(r"[^\W\d_][\w'’]*")
_LEFT_WORDS = re.compile(r"(?:[^\W\d_][\w'’]*[ -]){1,3}$")
_RIGHT_WORDS = re.compile(r"(?:[ -][^\W\d_][\w'’]*){1,3}")


def _name_like(word: str) -> bool:
    return word[:1].isupper() and word.lower() not in NOT_NAMES and word.lower() not in HONORIFICS


def _in_another_name(sentence: str, a: int, b: int, subject: str) -> bool:
    """Whether the subject's words at [a, b) are part of a longer name without the subject's last
    word: "George" in "also known as George Gist" is not George Boole, "Louis" in "Louis XV" not
    Louis XVI; "Marie" in "Marie Skłodowska-Curie" is Marie Curie (her last word is there)."""
    words = WORD_RE.findall(subject)
    last = fold(words[-1]) if words else ""
    if len(words) < 2 or last in {fold(w) for w in WORD_RE.findall(sentence[a:b])}:
        return False
    extra = []
    if left := _LEFT_WORDS.search(sentence[:a]):
        for w in reversed(_NAME_WORD.findall(left.group(0))):
            if not _name_like(w):
                break
            extra.append(fold(w))
    if right := _RIGHT_WORDS.match(sentence[b:]):
        for w in _NAME_WORD.findall(right.group(0)):
            if not _name_like(w):
                break
            extra.append(fold(w))
    return bool(extra) and last not in extra


# A name as a point of comparison or an epithet, not a person the sentence speaks about: the text
# before the name ends with a word of comparison or naming (`_incidental`).
_FUNCTION = r"(?:of|with|in|on|at|to|for|from|by|under|and|or|as|his|her|their|its)\b"
_DET = rf"(?:(?:the|a|an)\s+(?:(?!{_FUNCTION})[\w'’-]+\s+){{0,2}})?"  # "compared to the great", "like a young"
_COMPARED = re.compile(
    r"(?:\b(?:compar\w*|liken\w*)(?:\s+[\w'’-]+){0,3}?\s+(?:to|with)(?:\s+th(?:at|ose) of)?"  # "compared her to"
    r"|\bcompar\w*\s+between(?:\s+[\w'’-]+){1,3}?\s+and"  # "comparisons between Wu and"
    r"|\b(?:similar|analogous|akin|equivalent|parallels?)\s+(?:to|with)"
    r"|(?:^|[,;(.!?]|\b(?:and|just|much|very|not|looks?|looked|sounds?|sounded|seem(?:s|ed)?))\s*like"  # "Like A, she"
    r"|\b(?:unlike|than|resembl\w*|in the (?:mou?ld|vein) of)"  # "more famous than A"
    r"|\bas\s+(?!(?:well|soon|long|far)\b)\w+\s+as"  # "as famous as A", not "as well as A"
    r"|\b(?:nicknamed|dubbed|hailed as|nicknames?(?:\s+\w+)?\s+(?:include[sd]?|is|was|are|were))"  # "dubbed A"
    rf")\s+{_DET}[\"“‘']?$", re.IGNORECASE)
# "known as / called / considered the ...": a name after it is an epithet when it is a type
# ("the Einstein of economics", "the new Einstein", "the Chinese Madame Curie", "hailed as an
# Einstein."), not when it is the thing's own name ("known as the Prague Spring", "such as the
# Milky Way") or modifies a noun ("regarded as a United Nations hero").
_NAMING = re.compile(r"\b(?:(?:known|referred to|described|regarded|hailed|seen|styled|celebrated|remembered|billed)"
                     r"\s+as|called|dubbed|nicknamed|considered)\s+(?P<art>the|a|an|another)\s+"
                     r"(?P<adj>(?:[\w'’-]+\s+){0,3})$", re.IGNORECASE)
# Adjectives that make a name a type ("the new Einstein"); not "young", "late", "great",
# "future", "physicist": "the young Mozart" is Mozart himself.
_EPITHET_WORDS = frozenset("new next modern modern-day latter-day present-day female male second third".split())
_DEMONYM = re.compile(r"[A-Z][a-z]+(?:ese|an|sh|ch|ic|i)")  # "Chinese", "American", "Polish", "Dutch", "Israeli"
_ADDRESS = {"madame", "madam", "mme", "monsieur", "mr", "mrs", "ms", "miss", "mister"}
_TITLES = HONORIFICS | _ADDRESS | {"dr", "doctor", "professor"}
_BARE_EPITHET = re.compile(rf"\b(?P<art>[Tt]he)\s+(?P<adj>[A-Z]\w+\s+(?i:{'|'.join(sorted(_ADDRESS))})\.?\s+)$")


def _quoted_epithet(sentence: str, start: int, end: int) -> bool:
    """Is the name inside a short quotation that says more than the name: a nickname (the
    "Chinese Marie Curie"), not a work's title ("Johnny B. Goode") nor a long quoted remark."""
    before = sentence[:start]
    if before.count('"') % 2:
        opened, close = before.rfind('"'), '"'
    elif before.rfind("“") > before.rfind("”"):
        opened, close = before.rfind("“"), "”"
    else:
        return False
    closed = sentence.find(close, end)
    quote = sentence[opened + 1:closed if closed >= 0 else len(sentence)].strip(" ,.;:!?")
    return quote != sentence[start:end] and len(quote.split()) <= 6


def _incidental(sentence: str, start: int, end: int) -> bool:
    """Is the name at `sentence[start:end]` only a comparison or an epithet of the passage's own
    subject: a nickname in quotes (the "Chinese Marie Curie"), after a word of comparison or of
    nicknaming ("evoked comparisons to Marie Curie", "likened to", "Like A, ...", "than",
    "dubbed"), a type after "known as / called / considered" ("the Einstein of economics", "the
    new Einstein", "the Chinese Madame Curie"), or "the Chinese Madame Curie" with no such word.
    A name after a relation ("his wife, Marie Curie", "studied under Marie Curie", "Marie
    Curie's student", "the physicist Marie Curie", "the young Mozart") is the person: kept."""
    before, after = sentence[:start], sentence[end:]
    if _quoted_epithet(sentence, start, end) or _COMPARED.search(before):
        return True
    m = _NAMING.search(before) or _BARE_EPITHET.search(before)
    if m is None or re.search(r"\bwhat(?:\s+\w+){0,2}\s+$", before[:m.start()]):
        return False  # "what is now called the Standard Model of particle physics": a thing's own name
    adj = [w for w in m.group("adj").split() if w.lower().strip(".") not in _TITLES]
    if not adj:  # "known as the Marie Curie of China", "hailed as an Einstein."; not "known as the Big Bang."
        return bool(re.match(r"\s+of\b", after) or m.group("art").lower() != "the"
                    and re.match(r"\s*(?:[,.;:!?)\"”]|$)", after))
    # "the new Einstein" (not "the Second Gulf War"), "the Chinese Madame Curie"
    return all(w in _EPITHET_WORDS for w in adj) or (len(adj) == 1 and bool(_DEMONYM.fullmatch(adj[0])))


def restrict(ev: Evidence, subject: str) -> Optional[Evidence]:
    """`ev` as evidence about `subject` (see the module docstring): unchanged, its title's name
    and the sentences that name `subject`, or None when it says nothing about them."""
    about = passage_subject(ev)
    if is_about(ev, subject, about):
        return ev
    head = _head(ev.text) if not ev.title or ev.text.startswith(ev.title) else None
    start = head[1] if head else 0
    body = ev.text[start:]
    kept = [body[a:b] for a, b in _about(body, subject, about)]
    if not kept:
        return None
    # the title's name only: its description and dates ("(physicist (1912–1997))") are the
    # other person's, and read beside the subject's name they lend the claim the wrong year
    return replace(ev, text=(f"{head[0]}: " if head else "") + " ".join(kept))


_OPENING_PRONOUN = re.compile(r"\s*(?:(?:In|By|After|From|During|On|At|Later|Then)\b[^,]{0,40},\s*)?"
                              r"(?P<p>he|she|his|her|him)\b", re.IGNORECASE)
_PRONOUN_GENDER = {"he": "m", "his": "m", "him": "m", "she": "f", "her": "f"}


def _opening_pronoun(sentence: str) -> Optional[str]:
    """The gender of the pronoun a sentence opens with ("She was born ...", "In 1891, he ...")."""
    m = _OPENING_PRONOUN.match(sentence)
    return _PRONOUN_GENDER[m.group("p").lower()] if m else None


def _about(body: str, subject: str, other: str) -> list[tuple[int, int]]:
    """The spans of the sentences of `other`'s passage that speak about `subject`: those that
    name them, and those that go on about them by a pronoun `other` is not called by ("Pierre
    Curie ... He married Marie Sklodowska in 1895. She was born in Warsaw." binds the last
    sentence to her: his sentences say "he"). `other`'s pronoun is the one the first sentence
    opening with a pronoun uses, before anyone else is named."""
    spans = sentence_spans(body)
    own = next((g for a, b in spans if (g := _opening_pronoun(body[a:b]))), None)
    out, chain = [], False
    for a, b in spans:
        sentence = body[a:b]
        if names_subject(sentence, subject, other):
            out.append((a, b))
            chain = True
            continue
        g = _opening_pronoun(sentence)
        chain = chain and g is not None and own is not None and g != own
        if chain:
            out.append((a, b))
    return out


def bind(claim: str, evidence: Sequence[Evidence], prompt: Optional[str] = None
         ) -> tuple[list[Evidence], list[dict]]:
    """The passages that can speak about `claim`'s subject, each restricted to what it says
    about them, and a note per passage changed: {"passage": whose it is, "subject": the claim's,
    "dropped": whether nothing of it was left}."""
    subject = claim_subject(claim, prompt)
    if subject is None:
        return list(evidence), []
    person, head = prompt_person(prompt), _subject_text(claim)
    named = [r for r in name_runs(head) if not (person and same_subject(r, person))]
    head_words = {fold(w) for w in WORD_RE.findall(head)}
    out, notes = [], []
    for ev in evidence:
        about = passage_subject(ev)
        own = is_about(ev, subject, about)
        if own or any(same_subject(r, about) for r in named) or name_keys(about) <= head_words:
            # the passage's own subject, or the claim's grammatical subject is theirs ("Pierre Curie
            # married her"; "Einstein's theory of relativity was ..." against "Theory of relativity")
            out.append(_headed(ev, subject) if own and about is not None and _untitled(ev) else ev)
            continue
        bound = restrict(ev, subject)
        notes.append({"passage": about, "subject": subject, "dropped": bound is None})
        if bound is not None:
            out.append(bound)
    return out, notes


def _headed(ev: Evidence, subject: str) -> Evidence:
    """A passage pasted without a title, found to be about the claim's subject from its opening,
    headed with that subject's name as the judge reads titled passages ("Lyndon B. Johnson:
    Lyndon Baines Johnson, also known as LBJ, was ..."): without a head it judged a third more
    of such passages' own facts unsupported (docs/RESULTS.md)."""
    return replace(ev, text=f"{subject}: {ev.text}")


_REGNAL = re.compile(r"\s*([A-Z][\w'’-]+)\s+([IVX]{1,5})\b")  # "Sviatoslav I", "Augustus II"
# A personal pronoun that is not a possessive: "Pierre Curie married her in 1895", "whom she
# married". A possessive ("until his death") mostly belongs to the sentence's own subject.
_BACK_REFERENCE = re.compile(
    r"\b(?:he|she|him|hers|himself|herself)\b"
    r"|\bher\b(?=\s*(?:[,.;:!?)]|$|(?:in|on|at|to|for|with|as|and|or|but|from|by|after|before|during|when|that|who)\b))",
    re.IGNORECASE)


@functools.lru_cache(maxsize=1024)  # the loop asks again for the trace, and for each candidate
def off_subject(sentence: str, subject: Optional[str]) -> Optional[str]:
    """The other subject a sentence of an answer about `subject` is about, or None (issue 56):
    its grammatical subject names someone or something else ("Sviatoslav I Igorevich was Prince
    of Kiev" in a bio of Sviatoslav Richter; "Pierre Curie was a French physicist" in Marie
    Curie's), and it neither names `subject` nor refers back by a personal pronoun ("Pierre
    Curie married her" says how he relates; a possessive, "until his death", is the sentence's
    own subject's). A lone capitalized word opening the sentence
    ("Construction began in 447 BC") is not taken for a name here."""
    if not subject:
        return None
    head = _subject_text(sentence)
    regnal = _REGNAL.match(head)
    if regnal and not re.search(rf"\b{regnal.group(2)}\b", subject):
        return regnal.group(0).strip()  # "Sviatoslav I ..." in a bio of Sviatoslav Richter
    runs = name_runs(head)
    if not runs:
        return None
    other = runs[0]
    words = [w for w in WORD_RE.findall(other) if w[:1].isupper()]
    if len(words) < 2 and sentence.lstrip().startswith(other):
        return None
    if same_subject(other, subject) or any(same_subject(r, subject) for r in name_runs(sentence)):
        return None
    if _BACK_REFERENCE.search(sentence):
        return None
    if any(not _inside_other_name(sentence, span, subject, other) for span in mentions(sentence, subject, other)):
        return None
    return other


# A definition's predicate: "is a ...", "are the ...", "was one of ...", "is indeed a ..."
_DEFINES = re.compile(r"\s*(?:is|are|was|were)\s+(?:(?:indeed|also|often|usually|generally|typically|commonly|"
                      r"primarily|essentially|simply|\w+ly)\s+)?(?:a|an|the|one\s+of|any)\b", re.IGNORECASE)
_DETERMINERS = {"a", "an", "the"}
_NOT_GENERIC = frozenset("""this these that those it its his her their he she they such each every both all many
    some most several other another any no which who whose what""".split())


def generic_subject(sentence: str, subject: Optional[Subject]) -> Optional[str]:
    """The common noun a sentence of an answer about `subject` defines or speaks of in general
    instead, or None (issue 56): "Landscape painting, also known as landscape art, is the depiction
    of natural scenery" in Gustav Klimt's bio, "The tiger is a large cat" in Tiger Woods's, "A tower
    is a tall structure" and "Towers are the tallest structures in many cities" in the Eiffel Tower's.

    The sentence's grammatical subject is a common noun phrase (lower-case words, an article at
    most: no name, no pronoun or possessive); it is another subject when one of its nouns is a word
    of the subject's name used as a common noun (the tiger, towers), or when the sentence defines
    it ("X is a ...") with an indefinite or no article. About a thing, "the tower" is the tower
    asked about and is left alone, and only a name of several capitalized words (`Subject.proper`)
    is told from its words: the parts of "Fundamental group" are what its answer explains."""
    if subject is None or not (subject.person or subject.proper):
        return None
    sentence = re.sub(r"\s*\([^)]*\)", "", sentence)  # a gloss: "The tiger (Panthera tigris) is ..."
    head = _subject_text(sentence).strip()
    words = WORD_RE.findall(head)
    if not words or len(words) > 6 or not sentence.lstrip().startswith(words[0]):
        return None
    det = words[0].lower() if words[0].lower() in _DETERMINERS else None
    nouns = words[1:] if det else words
    if not nouns or any(w.lower() in _NOT_GENERIC for w in nouns) or re.search(r"['’]s?$", nouns[0]):
        return None  # a pronoun or a possessive: someone's ("Klimt's father", "His work")
    if named_after(det, nouns, sentence, subject):
        return head
    if det is None and nouns[0] in WORD_RE.findall(subject.name):
        return None  # the subject's own name opening the sentence ("Malevich was a Russian painter")
    if any(w[:1].isupper() for w in nouns[1 if det is None else 0:]) or any(c.isdigit() for c in head):
        return None  # a name ("The Parthenon", "Gustave Eiffel"), not a common noun
    if det == "the" and not subject.person:
        return None  # "The tower is 330 metres tall": the thing asked about
    if subject.words() <= {singular(w) for w in WORD_RE.findall(sentence)}:
        return None  # names the subject too ("... the tallest tower, the Eiffel Tower")
    # a name word as a common noun: lower-case ("the tiger", "towers"), never the capitalized word a
    # sentence opens with ("Woods turned professional in 1996" is the person)
    homonym = {singular(w) for w in nouns if w[:1].islower()} & subject.words()
    rest = sentence[sentence.find(head) + len(head):]
    rest = re.sub(r"^\s*,[^,]*,", "", rest)  # an appositive: "Landscape painting, also known as ..., is"
    if homonym or (det != "the" and _DEFINES.match(rest)):
        return head
    return None


# what "the <name word> ..." names when it is not the person's: a polity, a people or a place
# ("the Qing dynasty" in Jiang Qing's bio); "the Kennedy administration", "the Curie laboratory",
# "the Doppler effect" are the person's own, so only these nouns count
_PLACES = frozenset("dynasty dynasties empire kingdom republic river rivers province county city town village island "
                    "islands mountain mountains range lake valley region district sea bay desert people tribe "
                    "language peninsula strait canal".split())


def named_after(det: str | None, nouns: Sequence[str], sentence: str, subject: Subject) -> bool:
    """Whether a bio's sentence is about a polity, people or place that shares a word of the
    person's name: "The Qing dynasty was preceded by the Ming dynasty", "Qing dynasty, officially
    the Great Qing, ..." in Jiang Qing's bio (a word of the name, then lower-case nouns, one of
    them `_PLACES`), unless the sentence names the person in full."""
    if not subject.person or det not in (None, "the") or len(nouns) < 2 \
            or nouns[0] not in WORD_RE.findall(subject.name):
        return False
    rest = nouns[1:]
    if not all(w[:1].islower() for w in rest) or not any(w.lower() in _PLACES for w in rest):
        return False
    return not subject.words() <= {singular(w) for w in WORD_RE.findall(sentence)}


@functools.lru_cache(maxsize=1024)  # asked again for the trace's "about" and for each candidate
def off_subject_of(sentence: str, subject: Optional[Subject]) -> Optional[str]:
    """What a sentence of an answer about `subject` is about instead, or None: another person
    in a bio (`off_subject`), or a common noun spoken of in general (`generic_subject`)."""
    if subject is None:
        return None
    generic = generic_subject(sentence, subject)
    if generic or not subject.person:
        return generic
    return off_subject(sentence, subject.name)


def _inside_other_name(sentence: str, span: tuple[int, int], subject: str, other: str) -> bool:
    """Whether the words at `span` are part of a longer name of `other` ("Wilson" in "Ronald Wilson
    Reagan" is Reagan's middle name, not Woodrow Wilson)."""
    theirs = name_keys(other) - name_keys(subject)
    for run in name_runs(sentence):
        if not name_keys(run) & theirs:
            continue
        for m in re.finditer(re.escape(run), sentence):
            if m.start() <= span[0] and span[1] <= m.end():
                return True
    return False


def note_text(notes: Sequence[dict]) -> str:
    """"passage about Franz Kafka, not Gustav Klimt" for each passage dropped."""
    return "; ".join(f"passage about {n['passage']}, not {n['subject']}" for n in notes if n["dropped"])
