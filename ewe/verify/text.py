"""Surface analysis shared by the claim splitter, the alignment checker and the
labelled-set builder: sentences (pysbd), numbers, capitalized names, negation.

Deliberately shallow (regular expressions, word lists): it must run anywhere with no
model, and every rule is one a test can pin down.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

# --- sentences -----------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


# U+001C..U+001F are whitespace to `re` but not to int(): pysbd's numbered-list scan raises
# ValueError on "\x1f3. ". Spaces in their place keep every offset.
_INFO_SEPARATORS = str.maketrans(dict.fromkeys(map(ord, "\x1c\x1d\x1e\x1f"), " "))


def ends_sentence(text: str) -> bool:
    """Text that stops with sentence punctuation (closing quotes allowed): a last sentence the
    token budget cut right after its end is complete, and is checked like any other."""
    return bool(re.search(r"[.!?…][\"'”’)\]]*\s*$", text))


@functools.lru_cache(maxsize=20000)
def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of each sentence in `text`, trailing whitespace excluded."""
    spans = []
    for s in _segmenter().segment(text.translate(_INFO_SEPARATORS)):
        start, end = s.start, s.end
        while end > start and text[end - 1].isspace():
            end -= 1
        while start < end and text[start].isspace():
            start += 1
        if end > start:
            spans.append((start, end))
    return tuple(spans)


def split_sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


_LIST_ITEM_RE = re.compile(r"^\s*(?:\(?\d{1,3}[.):]|[-*•–]|Q\d{0,3}[.):])\s*(?P<item>\S.*?)\s*$", re.IGNORECASE)


def list_items(text: str, min_chars: int = 3) -> list[str]:
    """The items of the first numbered or bulleted list ("1.", "2)", "(3)", "-", "*", "Q1:") in
    `text`, in order, quotes stripped, case- and space-insensitive duplicates and items shorter
    than `min_chars` dropped; [] when there is none. The list ends at the first other non-blank
    line (small models go on with a new block of the prompt's pattern after it)."""
    out, seen = [], set()
    for line in text.splitlines():
        m = _LIST_ITEM_RE.match(line)
        if not m:
            if out and line.strip():
                break
            continue
        item = m.group("item").strip().strip('"').strip()
        key = " ".join(item.lower().split())
        if len(key) >= min_chars and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def label_pattern(*labels: str) -> re.Pattern:
    """A leading label that small models echo from their prompt ("Answer:", "**Draft 3:**");
    each label is a regular expression, matched case-insensitively."""
    return re.compile(r"^\s*(?:\*\*)?(?:" + "|".join(labels) + r")\s*:\s*(?:\*\*)?\s*", re.IGNORECASE)


def strip_label(text: str, label: re.Pattern) -> str:
    """`text` without the leading `label` (a `label_pattern`), if it starts with one."""
    return label.sub("", text, count=1)


def block_pattern(*labels: str) -> re.Pattern:
    """A line that opens another block of a prompt's pattern ("Q:", "Draft 4:"); each label is
    a regular expression, matched case-insensitively."""
    return re.compile(r"\n\s*(?:\*\*)?(?:" + "|".join(labels) + r")\s*:", re.IGNORECASE)


def until_block(text: str, block: re.Pattern) -> str:
    """`text` up to the first line that opens a `block` (a `block_pattern`): small models go on
    with the prompt's pattern (another question, another draft) instead of ending."""
    cut = block.search(text)
    return text[:cut.start()] if cut else text


# --- words -----------------------------------------------------------------------

WORD_RE = re.compile(r"[^\W_](?:[\w'’]*[^\W_])?")


def fold(word: str) -> str:
    """Lowercase, accents stripped, possessive and plural -s dropped: the key under
    which a claim's word is looked up in evidence."""
    w = unicodedata.normalize("NFKD", word)
    w = "".join(ch for ch in w if not unicodedata.combining(ch)).lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    elif w.endswith("'"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w


def words(text: str) -> list[str]:
    return WORD_RE.findall(text)


def word_keys(text: str) -> set[str]:
    return {fold(w) for w in words(text)}


# Lowercase words inside a name ("Philip II of Macedon", "Alexander the Great", "Ortega y Gasset")
NAME_PARTICLES = frozenset({"of", "de", "da", "di", "du", "del", "della", "van", "von", "der", "den", "la", "le",
                            "bin", "ibn", "al", "the", "y"})

# Capitalized words that are not names (sentence-initial function words, pronouns).
NOT_NAMES = frozenset(
    """a an the this that these those he she it they we i you his her its their our my your
    in on at of to for from by with as into onto upon about after before during since until
    while when where whereas although though because if unless and or but nor so yet also
    there here then thus however moreover furthermore today later early some many most all
    both each every one other such several another what which who whom whose how why
    is was are were be been has have had do does did not no never""".split()
)

STOPWORDS = NOT_NAMES | frozenset(
    """can could will would shall should may might must being having than more less very
    only just over under between among through against within without along across
    including include includes included known called became become becomes first second""".split()
)


def name_words(text: str) -> list[str]:
    """Capitalized words that look like parts of names (Curie, Warsaw, Nobel, NASA)."""
    out = []
    for w in words(text):
        if w[0].isupper() and not w[0].isdigit() and w.lower() not in NOT_NAMES:
            out.append(w)
    return out


def content_keys(text: str) -> set[str]:
    """Folded words that carry content: not stopwords, not numbers."""
    return {fold(w) for w in words(text) if w.lower() not in STOPWORDS and not w[0].isdigit()}


# --- numbers ---------------------------------------------------------------------

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
}
# "one" is mostly a pronoun ("one of the ..."): not read as a number.
_COUNT_WORDS = {k: v for k, v in NUMBER_WORDS.items() if k not in ("one", "zero", "hundred", "dozen")}

NUMBER_RE = re.compile(
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<suffix>st|nd|rd|th|s)?(?![\w])"
    r"|(?<![\w-])(?P<word>" + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True)) + r")(?![\w])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Number:
    """A number mentioned in text. `kind`: year (1000-2099 written as 4 digits),
    ordinal (20th), decade (1950s), word (two), or number."""

    raw: str
    value: float
    kind: str
    start: int
    end: int

    @property
    def key(self) -> str:
        v = self.value
        return str(int(v)) if float(v).is_integer() else repr(v)


def numbers(text: str) -> list[Number]:
    out = []
    for m in NUMBER_RE.finditer(text):
        if m.group("word"):
            out.append(Number(m.group(0), float(_COUNT_WORDS[m.group("word").lower()]), "word", m.start(), m.end()))
            continue
        digits = m.group("num")
        suffix = (m.group("suffix") or "").lower()
        value = float(digits.replace(",", ""))
        if suffix in ("st", "nd", "rd", "th"):
            kind = "ordinal"
        elif suffix == "s":
            kind = "decade"
        elif re.fullmatch(r"1\d{3}|20\d{2}", digits):
            kind = "year"
        else:
            kind = "number"
        out.append(Number(m.group(0), value, kind, m.start(), m.end()))
    return out


def number_keys(text: str) -> set[str]:
    return {n.key for n in numbers(text)}


# --- negation --------------------------------------------------------------------

NEGATION_RE = re.compile(
    r"\b(?:not|never|no|none|nobody|nothing|neither|nor|cannot|without)\b|n[’']t\b", re.IGNORECASE
)


def negation_count(text: str) -> int:
    return len(NEGATION_RE.findall(text))


def is_negated(text: str) -> bool:
    return negation_count(text) > 0



_LIST_MARK = re.compile(r"^\s*(?:[-*•–]|\(?\d{1,3}[.)])\s+")
_EMPHASIS = re.compile(r"\*\*|__")
_FIELD = re.compile(r"^(?P<label>[^\W\d_][\w'’ -]{0,40}?)\s*:\s*(?P<value>\S.*)$")
_CLAUSE_WORDS = {"that", "is", "was", "are", "were", "he", "she", "it", "they", "i", "we", "you", "this", "these"}
_LABEL_PRONOUNS = {"these", "this", "they", "it"}  # a value that is a sentence about the label itself
_PARTICIPLE_LABELS = {"born", "died", "known", "buried", "educated", "married", "founded", "built", "awarded"}


def as_statement(line: str, subject: str | None) -> str:
    """A list item or a "Label: value" line as the sentence it stands for, so that a small model's
    lists and fact sheets are checked like prose: "- He wrote Phèdre" -> "He wrote Phèdre";
    "Birthdate: 22 March 1614" -> "X's birthdate is 22 March 1614."; "Born: 1639" -> "X was born
    1639."; "Known for: tragedy" -> "X was known for tragedy."; "Name: X" -> "" (nothing to check).
    With no subject, or a label that is not a field name (over three words, function words,
    digits), only the list mark and emphasis go."""
    text = _LIST_MARK.sub("", _EMPHASIS.sub("", line).strip()).strip().strip("*").strip()  # "*Died: 1879" too
    m = _FIELD.match(text)
    if not m or not subject:
        return text
    label, value = m.group("label").strip(), m.group("value").strip().rstrip(".;,")
    words = label.lower().split()
    if (not value or len(words) > 3 or any(not w.replace("-", "").isalpha() or w in _CLAUSE_WORDS for w in words)
            or (words[0] in STOPWORDS and words[0] not in _PARTICIPLE_LABELS)):
        return text  # "In 1903: ...", "Note that: ...": a sentence with a colon, not a field
    if content_keys(value) and content_keys(value) <= content_keys(subject):
        return ""  # "Name: George Eliot", "Alias: Malevich": the subject named again, nothing to check
    if words == ["died"]:
        return f"{subject} died {value}."
    if words[0] in _PARTICIPLE_LABELS:
        return f"{subject} was {' '.join(words)} {value}."
    first = value.split(maxsplit=1)
    if len(first) == 2 and first[0].lower() in _LABEL_PRONOUNS:
        return f"{label} {first[1]}."  # "Power plants: These are the sources ..." -> "Power plants are the sources ..."
    return f"{subject}'s {' '.join(words)} is {value}."
