"""Sentences that are no answer whatever their facts (issue 56).

A checker judges claims; these fail before any claim is read, with the reason the trace gives:

  loop     the sentence repeats a clause of its own ("is often referred to as "the father of
           modern drama" and is often referred to as ..." seven times over; "2019 Best Female
           Actress, 2020 Best Female Actress, ..."). The sentence-level repeat test compares a
           sentence with the ones before it, so it never sees these.
  meta     the sentence talks to the user or about the text instead of answering ("Your bio is
           filled with a wealth of information ...", "I'll just add a few more details", "Here
           is a bio of ...").
  heading  a heading or a form's field, not a sentence: a passage's "Title (description)" head
           copied on its own line ("Kumārila Bhaṭṭa (Hindu 8th century philosopher and
           scholar)"), or opening the sentence it copies ("Marie Curie (Polish-French physicist
           and chemist, 1867–1934): Maria Salomea Skłodowska Curie was ...", "Pablo Escobar
           (Colombian drug lord (1949–1993))  His drug cartel ..."), or "Label: value"
           ("Name: ...", "Date: 14th century", "Place: India"). A checker finds such a line
           supported (it restates the passage), and an answer of them reads as a form.
  garbled  digits fused with words ("189december"), a word three times in a row, a fragment
           with fewer than two words ("2019-01-22", "Legend:", "3." read alone in answers), or
           the sentence in another language than the prompt's (a French sentence in an English
           bio). The language test counts function words of six European languages: it sees a
           sentence written in another of them, not scripts it has no list for.

Quoted text ("...", *...*) and title-case runs ("I Know Why the Caged Bird Sings") are left out
of the meta test: a work's title may say "I" or "You".
"""
from __future__ import annotations

import functools
import re
from collections import Counter

from .prompt_subject import Subject, subject_of
from .subject import off_subject_of
from .text import sentence_spans

LOOP, META, HEADING, GARBLED = "loop", "meta", "heading", "garbled"

# -- loops ---------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# (n-gram length, how often it may occur): a 3-word phrase may recur in a list ("the Battle of
# Jena, the Battle of Wagram, the Battle of Leipzig, ..."), a 4-word one rarely three times,
# a clause of 6 words never twice.
_LOOP_LIMITS = ((6, 1), (4, 2), (3, 4))
_STOP = frozenset("the a an of in on at to and or for by with as from is was are were be been his her "
                  "their its he she it they this that".split())


# the items of a list: what lies between commas, semicolons and a list's "and"/"or"
_ITEM_SPLIT = re.compile(r"\s*[,;]\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")


def repeated_item(sentence: str) -> str | None:
    """An item of three words or more that a list names twice ("the law of infinite probability,
    the law of convergence of random processes, the law of infinite probability, or ..."): a
    list going round, not a phrase that recurs in parallel parts."""
    earlier: list[tuple[str, ...]] = []  # the first item carries the words that lead to the list
    for item in _ITEM_SPLIT.split(sentence.rstrip(".!?")):
        found = _WORD.findall(item)
        words = tuple(w.lower() for w in found)
        content = [w for w in found if w.lower() not in _STOP]
        # a name said again is a name ("King of England and Lord of Ireland ..., and King of England")
        if len(words) >= 3 and content and not all(w[0].isupper() for w in content) \
                and any(e[len(e) - len(words):] == words for e in earlier):
            return " ".join(words)
        earlier.append(words)
    return None


def repeated_clause(sentence: str) -> str | None:
    """The phrase a sentence repeats beyond `_LOOP_LIMITS`, or a list item it names twice; None if
    neither."""
    if item := repeated_item(sentence):
        return item
    words = [w.lower() for w in _WORD.findall(sentence)]
    for n, allowed in _LOOP_LIMITS:
        grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
        for gram, count in grams.most_common():
            if count <= allowed:
                break
            if not all(w in _STOP for w in gram):  # "of the ... of the" is grammar, not a loop
                return " ".join(gram)
    return None


# -- talk to the user or about the text ----------------------------------------------------

_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|\*[^*]+\*|_[^_]+_")
_TITLE_RUN = re.compile(r"\b[A-Z][\w'’]*(?:\s+(?:[A-Z][\w'’]*|of|the|a|an|and|to|in|on|for|with))*\s+[A-Z][\w'’]*")
# nouns for the answer or its source: a sentence that has one of them as its subject speaks about
# the text, not the subject ("The paragraph provides specific details about Dar es Salaam")
_ANSWER_NOUNS = "bio|biography|answer|response|narrative|essay|text|summary"  # what the answer may call itself
_TEXT_NOUNS = f"{_ANSWER_NOUNS}|article|paragraph"
_PRESENTS = ("provides|highlights|mentions|describes|discusses|delves|touches|explores|covers|focuses|offers|"
             "presents|introduces|gives|says|states|notes|adds")
_PRAISE = ("concise|clear|easy|informative|engaging|well|detailed|thorough|comprehensive|helpful|accurate|"
           "excellent|great|good|nice|brilliant|impressive|fascinating|insightful")
_ADDRESS = re.compile(
    # "I" only as written, capitalized: a lower-case i is the imaginary unit ("cos x + i sin x")
    r"\b(?:you|your|yours|yourself|(?-i:I)|(?-i:I)['’](?:m|ll|ve|d)|me|my|myself)\b"
    r"|\b(?:here\s+(?:is|are)|here's|here’s|let\s+me|let's|let’s|as\s+an\s+ai)\b"
    # a greeting, as to someone in a chat: "Hi, welcome to our chat about Parkinson's disease."
    r"|^\W*(?:hi|hello|hey|greetings)\b|\bwelcome\s+to\s+(?:our|this|my|the)\s+(?:chat|conversation|discussion)\b"
    rf"|\b(?:this|your|my|above|following)\s+(?:{_TEXT_NOUNS})\b"
    # "the text" as the sentence's theme ("The bio above ..."), not the text of something else ("The
    # text of the treaty was signed") nor a compound ("summary judgment")
    rf"|\bthe\s+(?:{_ANSWER_NOUNS})(?=\s*(?:[,.;:!?]|$)|\s+(?:is|was|"
    rf"also|above|below|{_PRESENTS})\b)"
    r"|\b(?:in|from)\s+(?:this|the|that)\s+(?:article|passage|paragraph|background)\b"  # "The first mention of X in the article"
    r"|\bin\s+the\s+context\s+of\s+(?:this|the)\s+(?:article|passage|paragraph|text)\b"
    rf"|\bthe\s+(?:article|paragraph|section|passage)\s+(?:also\s+|further\s+)?(?:{_PRESENTS})\b"
    # the answer calling itself a kind of text: "This is a detailed description of the String instrument"
    r"|^\W*this\s+is\s+(?:an?|the)\s+[^.!?]{0,40}?\b(?:description|overview|introduction|summary|paragraph|answer|bio|biography|response|essay)\b"
    rf"|\bthe\s+(?:description|explanation|writing|wording)\s+(?:is|was|seems|reads)\s+(?:\w+\s+){{0,2}}(?:{_PRAISE})\b"
    # praise of the text: "The mention of X is a nice touch", "adds a layer of depth to the mention of"
    r"|\b(?:nice|great|good|lovely|thoughtful|personal|cultural)\s+touch\b|\bthe\s+mention\s+of\b.*\badds\b"
    r"|\b(?:easy\s+to\s+follow|well[- ]written)\b",
    re.IGNORECASE,
)
# A fragment that rates the text instead of answering: "A highly detailed and informative answer.",
# "A brilliant introduction to Dynamical Systems Theory." (no verb after the noun: "A description
# of the species appeared in 1758" is a sentence).
_RATED_TEXT = re.compile(
    rf"^\W*(?:an?|what\s+an?)\s+(?:[\w-]+,?\s+(?:and\s+)?){{1,4}}(?:{_TEXT_NOUNS}|introduction|overview|"
    r"description|explanation|read)\b(?P<rest>[^.!?]*)", re.IGNORECASE)
_VERB_AFTER = re.compile(r"\b(?:is|was|are|were|has|had|have|be|been|\w+ed)\b", re.IGNORECASE)


def addresses_reader(sentence: str) -> str | None:
    """The words by which a sentence talks to the user or about the answer itself, or None."""
    plain = _TITLE_RUN.sub(" ", _QUOTED.sub(" ", sentence))
    # a sentence's first word is capitalized without being a title: put its case back
    if re.match(r"\s*(?:I|You|Your|My|Here|Let)\b", sentence) and not re.match(r"\s*(?:I|You|Your|My|Here|Let)\b", plain):
        first = re.match(r"\s*(\S+)", sentence).group(1)
        plain = f"{first} {plain}"
    m = _ADDRESS.search(plain)
    if m:
        return m.group(0)
    rated = _RATED_TEXT.match(plain)
    if rated and not _VERB_AFTER.search(rated.group("rest")):
        return rated.group(0).strip()
    return None


# -- garbled text --------------------------------------------------------------------------

# Digits fused with a word ("189december", "188ressing") or a word three times in a row: what a
# small model writes when it loses the thread.
_FUSED = re.compile(r"\d[^\W\d_]{3,}|[^\W\d_]{3,}\d", re.UNICODE)
_REPEATED = re.compile(r"\b(\w+)\b(?:\W+\1\b){2,}", re.UNICODE | re.IGNORECASE)
_ORDINAL_OR_DECADE = re.compile(r"\d+(?:st|nd|rd|th|s)\b", re.IGNORECASE)

# Function words by language: short, frequent, and rarely part of a name. A word two lists share
# ("a", "de" in names) is left out of both.
_FUNCTION_WORDS = {
    "en": "the and of to in is was were he she it that with for as his her by on at from which who an are this had",
    "fr": "le la les des du un une est et avec pour dans sur qui que au aux était sont ce cette il elle ses",
    "de": "der die das und ist ein eine mit von zu den dem nicht auf für sich war wurde er sie auch",
    "es": "el los las del una es y con por para que en su sus fue era se lo como",
    "it": "il lo gli della delle dei di una è e con per che nel nella sono fu era si come",
    "pt": "o os as da do das dos um uma é e com para que em no na foi era se como",
}


def _function_lists() -> dict[str, frozenset]:
    words = {lang: set(ws.split()) for lang, ws in _FUNCTION_WORDS.items()}
    shared = Counter(w for ws in words.values() for w in ws)
    return {lang: frozenset(w for w in ws if shared[w] == 1) for lang, ws in words.items()}


_FUNCTION = _function_lists()


@functools.lru_cache(maxsize=256)  # the prompt's, asked again for every sentence of its answer
def language(text: str, min_words: int = 3) -> str | None:
    """The language whose function words a text uses most (at least `min_words` of them), or None."""
    counts = Counter()
    for w in _WORD.findall(text.lower()):
        for lang, ws in _FUNCTION.items():
            if w in ws:
                counts[lang] += 1
    if not counts:
        return None
    lang, n = counts.most_common(1)[0]
    return lang if n >= min_words else None


def is_fragment(text: str) -> bool:
    """Fewer than two words of two letters or more: a date, a number or a label alone."""
    return sum(1 for w in _WORD.findall(text) if sum(c.isalpha() for c in w) >= 2) < 2


def looks_garbled(text: str, prompt: str = "") -> bool:
    """Fused digits and letters (not an ordinal or a decade), a word three times in a row, a
    fragment, or a sentence in another language than the prompt's (when both languages are clear)."""
    plain = _ORDINAL_OR_DECADE.sub(" ", text)
    if _FUSED.search(plain) or _REPEATED.search(text) or is_fragment(text):
        return True
    asked = language(prompt, min_words=1) if prompt else None
    written = language(text)
    return asked is not None and written is not None and written != asked


# -- headings and form fields ---------------------------------------------------------------

# "Title (description)" and nothing else, as ewe.data.wiki writes a passage's head (a closing
# colon or period allowed; several in a row, as a list of heads): the title a run of capitalized words and name particles, so a
# sentence ending in a parenthesis ("In 1864 he left Norway (for Italy).") is not one
_CAP = r"[A-ZÀ-ÖØ-Þ][\w'’.\-]*"
_PARTICLE = r"(?:de|da|di|do|du|dos|von|van|der|den|of|the|and|al|el|bin|ibn|la|le|y)"
_ONE_HEAD = rf"{_CAP}(?:\s+(?:{_CAP}|{_PARTICLE}))*\s*\((?:[^()\n]|\([^()\n]{{0,80}}\)){{2,160}}\)"  # dates may nest
_HEAD = re.compile(rf"\s*{_ONE_HEAD}(?:[:.,;]?\s+{_ONE_HEAD})*[:.,;]?\s*", re.UNICODE)
# the same head, then the passage's text after its colon or a capital (the head's own sentence never
# ends): a copy, where prose goes on from the parenthesis ("Henrik Ibsen (1828–1906) was a playwright.")
_HEAD_OPENING = re.compile(rf"\s*{_ONE_HEAD}(?:\s*:\s+|\s+(?=[A-ZÀ-ÖØ-Þ]))(?=\S)", re.UNICODE)
# "Name: ...": a label of one to three words, then a colon; not a speaker ("He said: ...",
# "Einstein wrote: ...")
_FIELD = re.compile(r"\s*([A-ZÀ-ÖØ-Þ][^\W\d_]*(?:\s[^\W\d_]+){0,2})\s*:\s", re.UNICODE)
_SPEAKER = frozenset("he she it they i we you said says wrote writes stated states added adds declared "
                     "noted notes explained explains remarked replied asked told".split())


def is_heading(sentence: str) -> bool:
    """A heading or a form's field on its own line rather than a sentence (see the module docstring)."""
    if _HEAD.fullmatch(sentence) or _HEAD_OPENING.match(sentence):
        return True
    field = _FIELD.match(sentence)
    return bool(field) and not any(w.lower() in _SPEAKER for w in field.group(1).split())


def after_copied_head(sentence: str) -> str | None:
    """The text after a passage's head that opens `sentence` (the passage's own text), or None."""
    opening = _HEAD_OPENING.match(sentence)
    return sentence[opening.end():] if opening else None


def degenerate(sentence: str, prompt: str = "") -> str | None:
    """Why a sentence is no answer ("loop", "meta", "heading", "garbled"), or None."""
    if looks_garbled(sentence, prompt):
        return GARBLED
    if repeated_clause(sentence):
        return LOOP
    if addresses_reader(sentence):
        return META
    if is_heading(sentence):
        return HEADING
    return None


# -- one test for every method ---------------------------------------------------------------

def no_answer(sentence: str, prompt: str, reject_degenerate: bool = True, reject_off_subject: bool = True,
              subject: Subject | None | str = "prompt") -> str | None:
    """Why a sentence is no answer to `prompt` whatever its claims: degenerate ("loop", "meta",
    "heading", "garbled") or about another subject than the prompt's ("off_subject",
    verify/subject.py `off_subject_of`), each where the configuration rejects it; None if it
    answers. `subject`: the prompt's, as the caller resolved it once (None: it has none); by
    default read from the prompt."""
    why = degenerate(sentence, prompt) if reject_degenerate else None
    if why is None and reject_off_subject:
        if subject == "prompt":
            subject = subject_of(prompt)
        if off_subject_of(sentence, subject):
            why = "off_subject"
    return why


def drop_no_answers(text: str, prompt: str, reject_degenerate: bool = True,
                    reject_off_subject: bool = True) -> tuple[str, list[dict]]:
    """`text` without its sentences that are no answer (`no_answer`), and what was dropped
    ({"sentence", "reason"}, plus "about" for off_subject): for methods that compose a whole
    answer (CoVe, A2R, Streaming-VR's and Full-VR's refined text) and never rewrite one sentence
    of it. The text between kept sentences is kept as written. A passage's head copied before
    the passage's text goes alone ({"kept": the text after it}) where that text is an answer."""
    if not (reject_degenerate or reject_off_subject) or not text.strip():
        return text, []
    subject = subject_of(prompt)
    kept, dropped, at = [], [], 0
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        why = no_answer(sentence, prompt, reject_degenerate, reject_off_subject, subject)
        if why is None:
            continue
        item = {"sentence": sentence, "reason": why}
        if why == "off_subject":
            item["about"] = off_subject_of(sentence, subject)
        dropped.append(item)
        rest = after_copied_head(sentence) if why == HEADING else None
        if rest is not None and no_answer(rest, prompt, reject_degenerate, reject_off_subject, subject) is None:
            item["kept"] = rest
            kept.append(text[at:start] + rest)
            at = end
            continue
        kept.append(text[at:start])
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    if not dropped:
        return text, []
    return ("".join(kept) + text[at:]).rstrip(), dropped
