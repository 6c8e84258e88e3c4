"""Claim extraction: a deterministic clause splitter, and an LLM-prompted extractor
that falls back to it.

The splitter is the offline default: it breaks a sentence at coordinated verb phrases,
semicolons and non-restrictive who/which clauses, carrying the subject over, and makes
every claim self-contained (SAFE's rewrite, DESIGN.md section 7): a he/she/it/they subject,
a possessive (his/her/its/their -> "X's"), an object him/her, and a definite description
opening the sentence ("The physicist won ...") become the name they stand for, so the
checker and the subject binding (subject.py) know whom a claim is about. It is a
heuristic over word lists, not a parser: when it cannot find a subject or a referent it
leaves the text as written rather than guess.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..retrieval.in_prompt import without_source_notes
from .prompts import extraction_prompt, parse_claim_list
from .protocols import LLM, Extraction
from .text import NAME_PARTICLES, NOT_NAMES, WORD_RE, as_statement, name_words, sentence_spans
from .types import Claim

AUX = {
    "is", "was", "are", "were", "be", "been", "has", "have", "had", "will", "would", "can",
    "could", "may", "might", "must", "shall", "should", "do", "does", "did",
}
BE = {"is", "was", "are", "were"}
VERBS = AUX | set(
    """became becomes become remains remained won wins wrote writes made makes took takes gave
    gives went goes led leads began begins built builds held holds left leaves lost loses met
    meets ran runs saw sees sold sells spent spends stood stands taught teaches told tells
    brought brings bought fought found finds grew grows knew knows rose rises fell falls drew
    flew flows sang sings spoke speaks chose came comes kept keeps paid pays put puts set sets
    lies lay died dies lived moved married consists contains includes covers serves borders produces uses forms lives works
    occurs refers means represents describes shows has remains is won""".split()
)
PARTICIPLES = set(
    """born raised educated trained buried named known located situated based used made
    considered regarded founded established built designed written composed published
    released produced directed developed discovered elected appointed awarded crowned
    recognized recognised listed classified described named granted given taken""".split()
)
PRONOUNS = {"he", "she", "it", "they"}
_PROMPT_PERSON = re.compile(r"\b(?i:bio(?:graphy)?|life|about|of|who (?:is|was))\s+(?=[^\W\d_])")
_ASKS_ABOUT_PERSON = re.compile(r"\b(?i:(?:bio(?:graphy)?|life)\s+of|who (?:is|was))\s+(?=[^\W\d_])")


def _before_capital(cue: re.Pattern, prompt: str) -> Optional[re.Match]:
    """The first match of `cue` followed by a capital letter of any script ("Émile Durkheim",
    "Ānanda": an [A-Z] lookahead had left them without a subject)."""
    return next((m for m in cue.finditer(prompt) if prompt[m.end()].isupper()), None)
_PROMPT_TOPIC = re.compile(r"\b(?i:about)\s+(?:(?:the|an?)\s+)?([^?.!:;\n]{1,80}?)\s*(?:\([^)]*\)\s*)?(?:[?.!:;\n]|$)")
_INITIAL = re.compile(r"[A-Z]\.$")


def prompt_person(prompt: Optional[str]) -> Optional[str]:
    """The capitalized name a prompt asks about ("Tell me a bio of Marie Curie." -> "Marie Curie").

    The name is the run of capitalized words (initials such as "J." and particles such
    as "da" inside it, an "and" after an "of") that ends at the first sentence or clause punctuation, so an
    instruction after the question ("... Curie. Provide details") is not part of it.
    """
    m = _before_capital(_PROMPT_PERSON, prompt or "")
    if not m:
        return None
    words, out = prompt[m.end():].split(), []
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if w in NAME_PARTICLES and out and nxt[:1].isupper():
            out.append(w)
            continue
        if w == "and" and "of" in out and nxt[:1].isupper():
            out.append(w)  # lands joined in a style: "Nzinga of Ndongo and Matamba" (not "Pierre and Marie Curie")
            continue
        if not w[:1].isupper():
            break
        if _INITIAL.match(w):
            if _name_goes_on(words[i + 1:]):
                out.append(w)
                continue
            out.append(w[:-1])  # "Pope Leo I. Provide as many ...": the period ends the name
            break
        core = w.rstrip(".,;:?!)")
        out.append(core)
        if core != w:
            break  # punctuation ends the name
    return " ".join(out) or None


_NOT_TOPICS = {"it", "this", "that", "them", "him", "her", "these", "those", "yourself", "you", "me"}


def asks_about_person(prompt: Optional[str]) -> bool:
    """Whether the prompt's form says its subject is a person ("a bio of", "the life of", "who
    was"): "What can you tell me about Tonga?" does not, so "it" may stand for Tonga."""
    return _before_capital(_ASKS_ABOUT_PERSON, prompt or "") is not None


def prompt_topic(prompt: Optional[str]) -> Optional[str]:
    """What an "about X" prompt asks about, lower-case words and all, without a leading article or
    a closing "(disambiguation)" ("What can you tell me about Fundamental group?" -> "Fundamental
    group", "about Phoenix (mythology)?" -> "Phoenix"); else the prompt's person."""
    m = None if asks_about_person(prompt) else _PROMPT_TOPIC.search(prompt or "")
    topic = m.group(1).strip() if m else ""
    if not topic[:1].isalnum() or len(topic.split()) > 8 or topic.lower() in _NOT_TOPICS:
        return prompt_person(prompt)
    return topic


def _name_goes_on(rest: list[str]) -> bool:
    """After an initial ("John F."), whether the name goes on: its capitalized words run to
    punctuation or to the end ("Kennedy."), where a new sentence runs on into lowercase words
    ("Provide as many ...")."""
    for w in rest:
        if not w[:1].isupper():
            return False
        if w.rstrip(".,;:?!)") != w and not _INITIAL.match(w):
            return True
    return bool(rest)


LEADING_NON_SUBJECT = {
    "in", "on", "at", "of", "to", "for", "from", "by", "with", "as", "after", "before", "during",
    "since", "until", "while", "when", "where", "although", "though", "because", "if", "unlike",
    "despite", "following", "according", "however", "today", "later", "also", "then", "thus",
    "a", "an",  # after a comma: an appositive ("Curie, a physicist, won ...")
    "throughout", "among", "across", "within", "under", "over", "through", "between", "around", "upon",
    "eventually", "initially", "finally", "subsequently", "meanwhile", "afterwards", "soon", "once",
}
WORD = re.compile(r"[A-Za-z][\w'’-]*")
_SPLIT = re.compile(r"\s*;\s*|,?\s+(?:and|but|while|whereas)\s+")
_RELATIVE = re.compile(r"\b(?:which|who|whom|whose|where|that)\b")
_RELATIVE_WORDS = {"which", "who", "whom", "whose", "where", "that", "when"}  # none is in a bare noun phrase
_REL = re.compile(r",\s+(who|which)\s+([^,;]+?)(?=,|;|$)")


def is_verb(word: str) -> bool:
    w = word.lower()
    if word[:1].isupper():
        return False
    return w in VERBS or w in PARTICIPLES or (len(w) >= 4 and w.endswith("ed") and not w.endswith("eed"))


def first_verb(text: str) -> Optional[re.Match]:
    for i, m in enumerate(WORD.finditer(text)):
        if i > 0 and is_verb(m.group(0)):
            return m
    return None


def find_subject(clause: str) -> Optional[tuple[int, int]]:
    """Char span of the clause's subject: the first comma-separated segment before the
    main verb that does not open with a preposition, subordinator or article-led
    appositive ("In 1903, Curie won" -> "Curie"; "Curie, a physicist, won" -> "Curie")."""
    verb = first_verb(clause)
    if verb is None:
        return None
    head = clause[: verb.start()]
    pos = 0
    for seg in head.split(","):
        start = pos + (len(seg) - len(seg.lstrip()))
        end = pos + len(seg.rstrip())
        pos += len(seg) + 1
        first = WORD.match(clause, start) if start < end else None
        lead = first.group(0).lower() if first else ""
        if first is None or lead in LEADING_NON_SUBJECT and (start > 0 or lead not in ("a", "an")):
            continue
        if _participial(clause, first):
            continue  # "Born in Ulm, Einstein ..." / "Nicknamed "X", he ..."
        return (start, end)
    return None


# "In 1912 she was awarded ...": with no comma after the opening date, find_subject sees one
# segment that opens with a preposition; the he/she/they, or the name before a verb, right
# after the date is the subject.
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATED = re.compile(r"(?:In|On|By|From|After|Before|Until|Around|During|Since)\s+(?:the\s+)?"  # "In the early 1890s"
                    rf"(?:(?:early|late|mid)[\s-]+)?(?:\d{{1,2}}\s+)?(?:{_MONTH}\s+)?(?:\d{{1,2}},?\s+)?\d{{3,4}}s?\s+")
_NAME_RUN = re.compile(r"[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*")
_SUBJECT_PRONOUN = re.compile(r"(?:he|she|they)\b")


def dated_subject(clause: str) -> Optional[tuple[int, int]]:
    """The span of the subject after an opening date without a comma ("In 1912 she won", "By
    1900 Marie Curie had ..."), else None."""
    date = _DATED.match(clause)
    if date is None:
        return None
    pronoun = _SUBJECT_PRONOUN.match(clause, date.end())
    if pronoun:
        return pronoun.span()
    name = _NAME_RUN.match(clause, date.end())
    after = WORD.match(clause, name.end() + 1) if name and clause[name.end():name.end() + 1] == " " else None
    return name.span() if after and is_verb(after.group(0)) else None


def _participial(text: str, word: re.Match) -> bool:
    """A segment opening with a participle ("Born in", "Nicknamed") is not a subject;
    "United States" (a capitalized word follows) is."""
    w = word.group(0).lower()
    if not (w in PARTICIPLES or w in ("having", "being") or (len(w) >= 5 and w.endswith("ed"))):
        return False
    return not re.match(r"\s+[A-Z]", text[word.end():])


def _starts_with_verb(text: str) -> bool:
    m = WORD.match(text)
    return bool(m) and is_verb(m.group(0))


def _pronoun_clause(text: str) -> Optional[str]:
    """The pronoun if `text` opens "he/she/it/they + verb"."""
    ws = WORD.findall(text)
    if len(ws) >= 2 and ws[0].lower() in PRONOUNS and is_verb(ws[1]):
        return ws[0]
    return None


def _finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;")
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _name_before(text: str, end: int) -> Optional[str]:
    """The run of capitalized words (a name) ending right at `end`."""
    ws = list(WORD.finditer(text[:end]))
    run: list[re.Match] = []
    for m in reversed(ws):
        if m.end() != end and text[m.end():end].strip() not in ("", "of", "de", "the"):
            break
        if m.group(0)[0].isupper() or (run and m.group(0) in ("of", "de", "the")):
            run.insert(0, m)
            end = m.start()
            while end > 0 and text[end - 1] == " ":
                end -= 1
        else:
            break
    while run and not run[0].group(0)[0].isupper():
        run.pop(0)
    if not run:
        return None
    return text[run[0].start(): run[-1].end()]


# Role nouns a definite description of a person opens with ("The physicist won ..."). A list,
# not a suffix rule: "the checklist", "the median" are things.
ROLE_NOUNS = frozenset("""physicist chemist scientist painter composer writer author poet novelist playwright
    dramatist philosopher mathematician astronomer biologist economist historian politician statesman president
    king queen emperor empress pope prince princess actor actress singer songwriter musician pianist violinist
    conductor artist architect sculptor inventor engineer explorer general admiral ruler monarch sultan pharaoh
    activist journalist director filmmaker dancer athlete footballer boxer theologian reformer prophet priest
    bishop lawyer physician surgeon psychologist sociologist anthropologist linguist scholar geologist botanist
    zoologist naturalist entrepreneur businessman businesswoman industrialist founder revolutionary commander
    aviator astronaut photographer designer illustrator comedian diplomat senator chancellor""".split())
_DESCRIPTION = re.compile(r"The (?:[a-z][\w-]* )?([a-z]+)")
_POSSESSIVE_GENDER = {"he": "he", "his": "he", "him": "he", "she": "she", "her": "she"}
_THIRD_PERSON = re.compile(r"\b(?:[Hh]is|[Hh]er|[Ii]ts|[Tt]heir|him)\b")
_LOCATIVE = {"in", "at", "from", "to", "into", "near", "across", "throughout", "around", "within", "outside"}
# after an object "her": a preposition, an article, a conjunction, an adverb ("married her in 1895", "gave her a")
_AFTER_OBJECT = {"to", "in", "on", "at", "for", "from", "by", "with", "as", "into", "about", "after", "before",
                 "and", "or", "but", "that", "a", "an", "the", "this", "his", "their", "its", "again", "too", "also",
                 "back", "away", "up", "out", "off", "down", "over", "once", "twice", "when", "while", "because",
                 "until", "since", "then", "there", "here", "so", "not", "is", "was", "were", "during", "through"}


@dataclass
class _Referents:
    """Whom the pronouns of an answer can stand for, updated sentence by sentence: the
    prompt's person (a bio answer), the last named subject, the names a he/she has stood
    for (people), and the gender those pronouns showed (so "his" is never a woman)."""

    person: Optional[str] = None
    last: Optional[str] = None
    last_roles: frozenset = frozenset()  # role nouns in the sentence that named `last` ("X was a physicist")
    persons: set = field(default_factory=set)
    gender: dict = field(default_factory=dict)
    topic: Optional[str] = None  # what the prompt asks about ("Fundamental group"), person or thing
    things: set = field(default_factory=set)  # referents an it/its has stood for (never a he/she)
    other: bool = False  # the latest subject was an unnamed thing other than the topic ("The temple has")

    def for_pronoun(self, pronoun: str) -> Optional[str]:
        """he/she/his/her: the prompt's person, else the last named subject, else the prompt's topic
        ("about Odin": "He is ...") unless another thing was the subject since; it/its: the last
        named subject, else the prompt's topic ("Tonga", "Fundamental group") unless another
        thing was the subject since; they/their: the last named subject. None where a he/she
        has stood for the it, an it for the he/she, or the gender already seen disagrees."""
        p = pronoun.lower()
        if p in _POSSESSIVE_GENDER:
            ref = self.person or (self.last if self.last is not None else None if self.other else self.topic)
            if ref in self.things:
                return None
            if ref and self.gender.setdefault(ref, _POSSESSIVE_GENDER[p]) != _POSSESSIVE_GENDER[p]:
                return None
            if ref:
                self.persons.add(ref)
            return ref
        if p in ("it", "its"):  # the last named subject, else the prompt's topic if nothing else came between
            ref = self.last if self.last is not None else None if self.other else self.topic
            if ref is None or ref in self.persons:
                return None
            self.things.add(ref)
            return ref
        return self.last

    def for_description(self, role: str) -> Optional[str]:
        """"The physicist": the prompt's person while the answer is still about them; else the last
        named subject if it is a person, or was called by this role."""
        if role not in ROLE_NOUNS:
            return None
        if self.person:
            return self.person if self.last is None or _same_name(self.last, self.person) else None
        return self.last if self.last and (self.last in self.persons or role in self.last_roles) else None

    def person_for(self, pronoun: str) -> Optional[str]:
        """The person a non-initial his/him/her stands for: only where the gender is known to agree."""
        ref = self.person or (self.last if self.last in self.persons else None)
        return ref if ref and self.gender.get(ref) == _POSSESSIVE_GENDER[pronoun.lower()] else None


def _names_topic(subject: str, topic: Optional[str]) -> bool:
    """Whether an unnamed subject is the topic ("A grenade", "Grenades" for "Grenade"; "The
    fundamental group" for "Fundamental group"): each of the topic's words, plural or not."""
    if not topic:
        return False
    said = {w.lower().rstrip("s") for w in WORD.findall(subject)}
    words = [w.lower().rstrip("s") for w in WORD.findall(topic) if w.lower() not in ("the", "of", "a", "an")]
    return bool(words) and all(w in said for w in words)


def _same_name(a: str, b: str) -> bool:
    wa, wb = {w.lower() for w in name_words(a)}, {w.lower() for w in name_words(b)}
    return bool(wa) and (wa <= wb or wb <= wa)


def _names_before(text: str, end: int) -> list[re.Match]:
    """Capitalized words before `end` that could name a person: not function words, not after a
    locative preposition ("in Paris", "at the Sorbonne": places are never a his/her)."""
    out, place = [], False
    for m in WORD_RE.finditer(text[:end]):
        w = m.group(0)
        if w[:1].isupper() and w.lower() not in NOT_NAMES and w.lower() not in LEADING_NON_SUBJECT:
            if not place:
                out.append(m)
        elif w.lower() != "the":
            place = w.lower() in _LOCATIVE
    return out


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def _possessive_her(text: str, end: int) -> Optional[bool]:
    """Is the "her" ending at `end` possessive ("her father") or an object ("married her in
    1895")? None when the next word does not tell ("made her Queen")."""
    m = re.match(r"\s*([\w'’-]+)?", text[end:])
    nxt = m.group(1) if m else None
    if nxt is None:
        return False
    if nxt[:1].isupper() or nxt[:1].isdigit():
        return None
    return not (nxt.lower() in _AFTER_OBJECT or nxt.endswith("ly"))


class RuleClaimExtractor:
    """Splits a sentence into clause-level claims; deterministic, no model. `atomic` also cuts a
    list of predicate nouns into one claim each (split_predicates): the scorer's unit, as an
    atomic-fact extractor's; the loop keeps the clause, the unit its judge was trained on."""

    def __init__(self, atomic: bool = False):
        self.atomic = atomic
        self.name = "atomic" if atomic else "rules"

    def extract(self, sentence: str, context: Optional[str] = None, prompt: Optional[str] = None) -> Extraction:
        # a he/she stands for the prompt's person only where the prompt's form says it asks about one
        # ("a bio of"); "about Judo" is no he, and "about Gaussian elimination" no "Gaussian"
        person = prompt_person(prompt) if asks_about_person(prompt) else None
        refs = _Referents(person=person, topic=prompt_topic(prompt))
        if person:
            refs.persons.add(person)
        for a, b in sentence_spans(context) if context else ():
            self._resolve_subject(strip_hedges(context[a:b]).rstrip(".!? "), refs)
        claims: list[Claim] = []
        for a, b in sentence_spans(sentence) or ((0, len(sentence)),):
            # list items and "Label: value" lines; a copied "(from the article on X)" says nothing
            line = as_statement(without_source_notes(sentence[a:b]), refs.person or refs.topic or refs.last)
            if not _claim_like(line):
                continue
            for text in self._split_one(strip_hedges(line), refs):
                if not is_fragment(text):
                    claims.append(_claim(text, sentence))
        return Extraction(claims=[c for c in claims if c.text], extractor=self.name)

    def _resolve_subject(self, body: str, refs: _Referents):
        """`body` with a pronoun or definite-description subject replaced by its referent, the
        subject's span and text; `refs` moves on to this sentence's named subject."""
        span = dated_subject(body) or find_subject(body)
        subject = body[span[0]:span[1]] if span else None
        referent, pronoun = None, re.match(r"(?:he|she|it|they)\b", subject or "", re.IGNORECASE)
        if pronoun:  # "He", and "He also", "She later", "He and his brother": the pronoun is the subject
            referent = refs.for_pronoun(pronoun.group(0))
            span = (span[0], span[0] + pronoun.end()) if referent else span
        elif subject and _DESCRIPTION.fullmatch(subject):
            referent = refs.for_description(_DESCRIPTION.fullmatch(subject).group(1))
        if referent:
            body = body[: span[0]] + referent + body[span[1]:]
            subject, span = referent, (span[0], span[0] + len(referent))
        if subject and name_words(subject):
            refs.last = subject
            refs.last_roles = frozenset(w for w in re.findall(r"[a-z]+", body) if w in ROLE_NOUNS)
            refs.other = False
        elif subject and not (pronoun and not referent):
            refs.other = not _names_topic(subject, refs.topic)
        return body, span, subject

    def _resolve_rest(self, text: str, refs: _Referents) -> str:
        """Possessives and object pronouns of one claim. A clause-initial His/Her/Its/Their is read
        like a he/she/it/they subject; later, his/him/her stand for the answer's person only where
        the gender is known to agree and no other name before them could be meant (the clause
        subject excepted for an object: "Pierre married her"; a possessive of someone the claim
        already names is left: it is self-contained). Later its/their, and them, stay."""
        span = find_subject(text) or (0, 0)
        subject = text[span[0]:span[1]]
        out, pos = [], 0
        for m in _THIRD_PERSON.finditer(text):
            w, new = m.group(0).lower(), None
            if not text[:m.start()].strip():
                ref = refs.for_pronoun(w) if w != "him" else None
                new = _possessive(ref) if ref else None
            elif w in ("his", "him", "her") and (ref := refs.person_for(w)):
                possessive = True if w == "his" else False if w == "him" else _possessive_her(text, m.end())
                before = _names_before(text, m.start())
                others = [n for n in before if not _same_name(n.group(0), ref)
                          and (possessive or not span[0] <= n.start() < span[1])]
                named = any(_same_name(n.group(0), ref) for n in before)
                own_subject = _same_name(subject, ref) and "'s" not in subject  # "Curie hired her": not Curie
                if possessive and not others and not named:
                    new = _possessive(ref)
                elif possessive is False and not others and not own_subject:
                    new = ref
            if new:
                out.append(text[pos:m.start()] + new)
                pos = m.end()
        return "".join(out) + text[pos:]

    def _split_one(self, sent: str, refs: _Referents) -> list[str]:
        body = sent.rstrip().rstrip(".!?").rstrip()
        body, span, subject = self._resolve_subject(body, refs)

        # non-restrictive relative clauses become their own claims
        extra: list[str] = []
        if subject:
            while True:
                m = _REL.search(body)
                if not m:
                    break
                if m.group(1) == "who" and span and body[span[1]:m.start()].strip() == "":
                    antecedent = subject
                else:
                    antecedent = _name_before(body, m.start())
                if not antecedent or not _starts_with_verb(m.group(2)):
                    break
                extra.append(f"{antecedent} {m.group(2)}")
                rest = body[m.end():]
                if rest.startswith(",") and _starts_with_verb(rest[1:].lstrip()):
                    rest = " " + rest[1:].lstrip()  # "Curie, who ..., won" -> "Curie won"
                body = body[: m.start()] + rest

        parts = [body]
        if subject:
            parts = self._split_coordination(body, subject)
        if self.atomic:
            parts = [q for p in parts for q in split_predicates(p.strip())]
        claims = [_finish(self._resolve_rest(p.strip(), refs)) for p in parts + extra]
        return [c for c in claims if c]

    def _split_coordination(self, body: str, subject: str) -> list[str]:
        pieces, pos = [], 0
        for m in _SPLIT.finditer(body):
            right = body[m.end():]
            if m.group(0).strip() != ";" and _RELATIVE.search(body[pos:m.start()]):
                continue  # "..., in which Batista overthrew X and consolidated power": not the subject's verb
            if m.group(0).strip() != ";" and _coordinated_adjective(body[pos:m.start()], right):
                continue  # "a brilliant and talented scientist": one noun phrase, not two clauses
            if m.group(0).strip() == ";" or _starts_with_verb(right) or _pronoun_clause(right):
                pieces.append(body[pos:m.start()])
                pos = m.end()
        pieces.append(body[pos:])
        if len(pieces) == 1:
            return pieces
        first = pieces[0]
        verb = first_verb(first)
        aux = None
        if verb is not None and verb.group(0).lower() in BE:
            nxt = WORD.match(first, verb.end() + 1)
            if nxt and nxt.group(0).lower() in PARTICIPLES | {"not"}:
                aux = verb.group(0)
        out = [first]
        for p in pieces[1:]:
            p = p.strip()
            pron = _pronoun_clause(p)
            if pron:
                p = subject + p[len(pron):]
            elif _starts_with_verb(p):
                w = WORD.match(p).group(0).lower()
                carry = f"{subject} {aux}" if aux and w in PARTICIPLES else subject
                p = f"{carry} {p}"
            out.append(p)
        return out


_COPULA = re.compile(r"\s+(is|was|are|were)\s+(?:(?:also|later|then|once|still|often|mainly|primarily|widely|"
                     r"eventually|briefly)\s+)?(?:(a|an|the)\s+)?")  # "was also a poet, playwright, and novelist"
_LIST_SEP = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_WHO = re.compile(r"\s+who\s+(?=\w)")
_ARTICLE = re.compile(r"(?:a|an|the)\s+", re.IGNORECASE)


def split_predicates(clause: str) -> list[str]:
    """A copula with a list of predicate nouns, one claim each, as an atomic-fact extractor would
    cut it: "X was a physicist and a chemist" -> "X was a physicist", "X was a chemist"; "X is a
    renowned actor, businessman, and bodybuilder who taught at UCLA" -> "X is a renowned actor",
    "X is a businessman", "X is a bodybuilder", "X taught at UCLA" (a true half no longer carries
    a false one). Lists of adjectives ("a brilliant and talented scientist"), items with a verb
    and two bare items ("a poet and novelist") stay whole."""
    body = clause.rstrip().rstrip(".!?").rstrip()
    span = find_subject(body)
    if span is None:
        return [clause]
    m = _COPULA.match(body, span[1])
    if m is None:
        return [clause]
    head, article, pred = body[:m.start(2) if m.group(2) else m.end()], m.group(2), body[m.end():]
    subject, be = body[span[0]:span[1]], m.group(1)
    rest = None
    who = _WHO.search(pred)
    if who and who.start() > 0:
        after = pred[who.end():]
        words = WORD.findall(after)
        if (words and (is_verb(words[0]) or (len(words) > 1 and words[0].endswith("ly") and is_verb(words[1])))
                and _predicate_nouns(pred[:who.start()])):
            pred, rest = pred[:who.start()], f"{subject} {after}"
    items = [i.strip() for i in _LIST_SEP.split(pred)]
    listed = len(items) >= 3 or (len(items) == 2 and _ARTICLE.match(items[1]) is not None)
    if (not listed or not all(_noun_phrase(i) for i in items) or _lone_adjective(items[0])
            or any(w.lower() in _PREPOSITIONS for w in WORD.findall(items[0]))
            or any(_adjective(m.group(1)) for m in _ADJECTIVE_COMMA.finditer(pred))):
        return [clause] if rest is None else [f"{body[:m.end()]}{pred}", rest]
    out = [f"{head}{(article + ' ') if article else ''}{items[0]}"]
    for item in items[1:]:
        item = _ARTICLE.sub("", item, count=1) if _ARTICLE.match(item) else item
        art = ("an" if item[:1].lower() in "aeiou" else "a") if article in ("a", "an") else article
        out.append(f"{subject} {be} {(art + ' ') if art else ''}{item}")
    return out + ([rest] if rest else [])


def _predicate_nouns(pred: str) -> bool:
    """Whether the words before a "who" are the subject's predicate nouns ("a German mathematician
    who ...", "an actor and bodybuilder who ..."), so the clause says something of the subject; after
    a preposition or a verb ("raised in Warsaw, with a father who was a teacher", "the son of a
    chemist who ...") it speaks of someone else."""
    items = [i.strip() for i in _LIST_SEP.split(pred.rstrip(" ,"))]
    return all(_predicate_item(i) for i in items)


def _predicate_item(item: str) -> bool:
    """One of the subject's predicate nouns before a "who": a few words ("a 19th-century Arab
    Muslim leader"), with no verb, relative word or preposition."""
    words = [w.lower() for w in WORD.findall(item)]
    return 1 <= len(words) <= 6 and words[0] not in _NOT_NOUN_OPENERS and not any(
        w in VERBS or w in _RELATIVE_WORDS or w in _PREPOSITIONS for w in words)


def _noun_phrase(item: str) -> bool:
    """A list item that can be a predicate noun: a few words, no verb, relative word or number, and
    not opening with a preposition or adverb ("above all" in "a magistrate, polymath, and above
    all, a mathematician" is no item)."""
    words = WORD.findall(item)
    return 1 <= len(words) <= 4 and not any(w.lower() in VERBS or w.lower() in _RELATIVE_WORDS for w in words) \
        and not re.search(r"\d", item) and words[0].lower() not in _NOT_NOUN_OPENERS


# prepositions and adverbs a list item of predicate nouns never opens with
_NOT_NOUN_OPENERS = (LEADING_NON_SUBJECT - {"a", "an"}) | {
    "above", "especially", "particularly", "notably", "mainly", "mostly", "chiefly", "primarily", "most", "more",
    "even", "perhaps", "possibly"}
# a preposition in the first item: the list is its object ("the son of a chemist and a blacksmith",
# "known for his bravery, honor, and chivalry"), not a list of predicates
_PREPOSITIONS = {"of", "for", "to", "with", "from", "in", "on", "at", "by", "about", "between", "among"}


def _lone_adjective(item: str) -> bool:
    """"brilliant" in "a brilliant, talented scientist": the list is of adjectives, not nouns."""
    words = WORD.findall(_ARTICLE.sub("", item, count=1))
    return len(words) == 1 and _adjective(words[0])


def _adjective(word: str) -> bool:
    return word.lower() in _EVALUATIVE or bool(re.search(r"(?:ed|ful|ous|ive|al|ic|less)$", word.lower()))


# an article, one adjective and a comma before words with no article: the noun phrase goes on past
# the comma ("a woman with a long, raven-black hair"), so the commas are no list of predicates
_ADJECTIVE_COMMA = re.compile(r"\b(?:a|an|the)\s+([A-Za-z][\w-]*)\s*,\s*(?!(?:and|or|a|an|the)\b)", re.IGNORECASE)


_VERB_FOLLOWERS = {"it", "them", "him", "her", "the", "a", "an", "to", "in", "on", "at", "by", "with", "for", "from",
                   "his", "their", "its", "this", "that", "as", "into", "up", "out", "over", "about"}


def _coordinated_adjective(left: str, right: str) -> bool:
    """"... a brilliant" + "talented scientist": the right side opens with an -ed word that is
    no known verb (an adjective such as talented, renowned) and the left ends inside a noun
    phrase (an article and one word)."""
    m = WORD.match(right)
    if not m:
        return False
    w = m.group(0).lower()
    known = w in VERBS or w in PARTICIPLES
    nxt = WORD.match(right, m.end() + 1)
    if nxt is None or nxt.group(0).lower() in _VERB_FOLLOWERS:
        return False  # "and painted it", "and moved to Paris": a verb with its object
    if known or not w.endswith("ed"):
        return False
    # the left ends inside a noun phrase: an article, then words and commas but no verb ("a brilliant,
    # talented", "a Turkish military officer, revolutionary")
    article = None
    for article in re.finditer(r"\b(?:a|an|the|his|her|its|their)\s+", left, re.IGNORECASE):
        pass
    if article is None:
        return False
    inside = left[article.end():].rstrip()
    words = WORD.findall(inside)
    return bool(words) and not re.search(r"[;:]", inside) and not any(
        x.lower() in VERBS or x.lower() in _RELATIVE_WORDS or (x.lower().endswith("ed") and x.lower() in PARTICIPLES)
        for x in words)


# The answer speaking of itself or to the reader: "Sure, I'd be happy to ...", "Here is a bio of X:",
# "This bio provides a detailed account of X's life" (scored supported, and credited, before).
_ADDRESS = re.compile(r"(?:(?:sure|certainly|of course|okay|ok|absolutely)\b[\s,!.]*)?"
                      r"(?:i|i'm|i’m|i'd|i’d|i'll|i’ll|i've|i’ve|we|we're|we'd|we'll|you|you're|let me|let's|let’s|"
                      r"here's|here’s|here is|here are|below is|below are|this is a (?:brief |short |detailed )?"
                      r"(?:bio|biography|summary|overview)|(?:this|the above|the following)\s+(?:[\w-]+\s+){0,2}?"
                      r"(?:bio|biography|summary|overview|answer|response|essay|article|text|profile))\b", re.IGNORECASE)


def _claim_like(sentence: str) -> bool:
    """Questions, headings and introductions (a line ending at its colon: "Early life:", "Here is
    a bio of X:"), the answer addressing the reader, fragments of fewer than three words and text
    not in English state nothing this checker can check."""
    s = sentence.strip()
    return (not s.endswith(("?", ":")) and not _ADDRESS.match(s) and len(WORD.findall(s)) >= 3
            and is_english(s))


_HEDGE = re.compile(
    r"^\s*(?:"
    r"(?:reportedly|allegedly|apparently|reputedly|supposedly|purportedly|notably|interestingly|famously|"
    r"historically|indeed|in fact|of course|it seems|by (?:most|many|all|some) accounts|in short|overall)\s*,\s*"
    r"|according to [^,]{1,80},\s*"
    r"|it (?:is|was|has been|had been|'s) (?:widely |commonly |often |generally |also )?"
    r"(?:said|believed|reported|thought|claimed|known|rumou?red|alleged|noted|argued|suggested|understood)\s+that\s+"
    r"|(?:some|many|most|several|historians|scholars|experts|sources|critics|biographers|researchers|people|"
    r"records|accounts|reports)(?: \w+)? (?:say|said|believe|believed|note|noted|claim|claimed|report|reported|"
    r"suggest|suggested|argue|argued|agree|agreed|state|stated|show|showed)\s+that\s+"
    r")",
    re.IGNORECASE,
)


def strip_hedges(sentence: str) -> str:
    """The proposition under hedges and attributions: "Reportedly, X was born in 1867." ->
    "X was born in 1867." (a claim is checked for what it asserts, not for who says it)."""
    out = sentence
    while True:
        m = _HEDGE.match(out)
        if not m or m.end() >= len(out):
            return out
        rest = out[m.end():]
        out = rest[:1].upper() + rest[1:]


_DANGLING = {
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "from", "by", "with", "and", "or", "but", "as",
    "his", "her", "its", "their", "is", "was", "are", "were", "be", "been", "has", "have", "had", "that", "which",
    "who", "very", "most", "more", "than",
}
# Adjectives that end a fragment when nothing follows the article ("was a brilliant."): the
# evaluative ones small models write, and -ful/-ous/-less words (rarely nouns). Nouns such as
# "teacher", "student" or "merchant" never match.
_ADJECTIVE_END = re.compile(r"(?:ful|ous|less)$")
_EVALUATIVE = frozenset(
    """brilliant great important notable renowned prominent influential successful talented popular significant
    key major leading prolific celebrated distinguished pioneering respected skilled gifted remarkable
    outstanding exceptional excellent legendary iconic accomplished dedicated passionate visionary
    innovative acclaimed beloved powerful good best true real new old big small large young
    long short tall little wide narrow thick thin deep heavy ancient modern famous huge tiny massive vast curly""".split()
)


def is_fragment(claim: str) -> bool:
    """A clause that stops before its proposition ends: a dangling function word ("was born
    in.") or an article with an adjective and no noun ("was a brilliant.")."""
    ws = re.findall(r"\w[\w'’-]*", claim)
    if len(ws) < 3:
        return True
    last, prev = ws[-1], ws[-2].lower()
    if last.lower() in _DANGLING:
        return True
    word = last.lower()
    return prev in ("a", "an", "the", "very") and last[:1].islower() and (
        word in _EVALUATIVE or bool(_ADJECTIVE_END.search(word)))


_ENGLISH = frozenset(
    """the a an of in on at to for from by with and or is was are were be been has have had it its he she they
    his her their this that which who as not also first after before during into than one""".split()
)
# Frequent function words of the other languages a small model drifts into (fr, de, es, it, pt, nl).
_FOREIGN = frozenset(
    """le la les une est était des du et dans pour qui sur avec der die das und ist war ein eine nicht mit
    von zu den el los las es fue una del por con que y il lo gli di che è era della sono não os uma foi
    het een van zijn werd""".split()
)


def is_english(text: str) -> bool:
    """Mostly Latin letters, and not mostly the function words of another language: terse
    English without any function word ("Paris hosts museums, galleries, theatres.") passes."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return False
    latin = sum(ch.isascii() or "\u00c0" <= ch <= "\u024f" for ch in letters)
    if latin / len(letters) < 0.7:
        return False
    ws = [w.lower() for w in re.findall(r"[^\W\d_][\w'’-]*", text)]
    english = sum(w in _ENGLISH for w in ws)
    foreign = sum(w in _FOREIGN and w not in _ENGLISH for w in ws)
    return foreign < 2 or english > foreign


def _claim(text: str, source: str) -> Claim:
    core = text.rstrip(".")
    i = source.find(core)
    if core and i >= 0:
        return Claim(text=text, source=source, start=i, end=i + len(core))
    return Claim(text=text, source=source)


class LLMClaimExtractor:
    """VeriScore-style extraction by any `llm(prompt) -> str`.

    The answer is parsed as a bulleted or numbered list; "No verifiable claim" gives no
    claims. An exception or an answer with no list falls back to the rule splitter and
    says why in Extraction.fallback.
    """

    name = "llm"

    def __init__(self, llm: LLM, fallback: Optional[RuleClaimExtractor] = None, max_claims: int = 12):
        self.llm = llm
        self.fallback = fallback or RuleClaimExtractor()
        self.max_claims = max_claims

    def extract(self, sentence: str, context: Optional[str] = None, prompt: Optional[str] = None) -> Extraction:
        try:
            answer = self.llm(extraction_prompt(sentence, context=context, question=prompt))
        except Exception as e:  # noqa: BLE001 - any LLM failure means "use the rules"
            return self._fall_back(sentence, context, f"llm call failed: {type(e).__name__}: {e}")
        parsed = parse_claim_list(answer if isinstance(answer, str) else "")
        if parsed is None:
            return self._fall_back(sentence, context, f"malformed llm answer: {str(answer)[:200]!r}")
        claims = [_claim(_finish(t), sentence) for t in parsed[: self.max_claims]]
        return Extraction(claims=claims, extractor=self.name)

    def _fall_back(self, sentence: str, context: Optional[str], why: str) -> Extraction:
        ex = self.fallback.extract(sentence, context=context)
        return Extraction(claims=ex.claims, extractor=f"{self.name}->{ex.extractor}", fallback=why)
