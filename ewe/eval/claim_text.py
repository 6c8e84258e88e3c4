"""Claim sentences: how a claim's words are joined, and the fixes that need the whole answer.

The parse gives a claim's words (atomic_facts.py); what is decided over the whole answer is done
here, on the claims' texts: the subject's longer names ("Dag Hjalmar Agne Carl Hammarskjöld" for
"Dag Hammarskjöld") and the descriptions that stand for it ("The war", when the subject is the
Sino-Burmese War) become its name, as a reader resolves them; and an answer cut off by the token
limit gives only the claims its last sentence states completely ("Poinsettia is a popular flower
in the" -> "Poinsettia is a popular flower."; "Nefertiti was a" -> nothing).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

NO_SPACE_BEFORE = {",", ".", ";", ":", "'s", "'", "n't", "%", ")"}
ENDS_SENTENCE = (".", "!", "?", "\"", "'", "”", "’", ")", "]", "…")
DANGLING = frozenset(
    "the a an of in on at to for from by with as and or but nor its his her their which who whom whose that "
    "also such is was are were be been being has have had into onto than numerous many several various "
    "some other including like".split())  # what a cut-off claim can end on
MIN_WORDS = 3
QUALIFYING = frozenset("of in on at from for with by to that which who whom whose".split())


@dataclass(frozen=True)
class Word:
    key: float                # where it goes in the claim (sentence order, subject first)
    text: str
    index: int | None = None  # the sentence token it comes from (None: an added word)
    space_after: str = " "
    punct: bool = False
    proper: bool = False      # keeps its capital letter


def render(words: list[Word], first_word: int | None) -> str:
    """Join words into a claim sentence: the sentence's spacing, stray punctuation dropped."""
    words = sorted((w for w in words if w.text.strip()), key=lambda w: w.key)
    words = [w for n, w in enumerate(words) if not w.punct or _punct_in_place(words, n)]
    parts = []
    for n, word in enumerate(words):
        text = word.text.lower() if n and word.index == first_word and not word.proper else word.text
        if text.lower() in ("a", "an") and n + 1 < len(words):
            text = _article(words[n + 1].text, capital=text[0].isupper())
        if n:
            previous = words[n - 1]
            if previous.index is not None and word.index == previous.index + 1:
                parts.append(previous.space_after)
            elif not (text in NO_SPACE_BEFORE or text.startswith("'")):
                parts.append(" ")
        parts.append(text)
    claim = "".join(parts).strip().rstrip(" .,;:")
    return claim[0].upper() + claim[1:] + "." if claim else ""


def _punct_in_place(words: list[Word], n: int) -> bool:
    """Punctuation stays only between the two tokens it stood between in the sentence."""
    word = words[n]
    if word.index is None or n == 0 or not word.text.strip() or word.text in ('"', "“", "”"):
        return False
    follows = words[n - 1].index == word.index - 1
    if word.text == ")":
        return follows and any(w.text == "(" for w in words[:n])
    if n + 1 >= len(words):
        return False
    return (follows or word.text == "(") and words[n + 1].index == word.index + 1


def _article(next_word: str, capital: bool) -> str:
    lower = next_word.lower()
    vowel_sound = (lower[:1] in "aeiou" and not lower.startswith(("uni", "use", "usu", "eu", "one"))
                   or lower.startswith(("hour", "honest", "honor", "honour", "heir")))
    return ("An" if capital else "an") if vowel_sound else ("A" if capital else "a")


def finish_claims(texts: list[tuple[str, int]], answer: str, subject: str | None, last_sentence: int,
                  names: list[str]) -> list[str | None]:
    """Each claim's final text (None: dropped). `texts`: (claim, sentence index); `names`: the
    longer forms of the subject the answer uses."""
    described = _descriptions(texts, subject)
    names = names + _known_as(texts, subject)
    cut = None if _ends_complete(answer) else _last_word(answer)
    out = []
    for text, sentence in texts:
        if subject:
            for name in names:
                if not text.endswith(f"as {subject}."):  # the claim that says the name stays
                    text = text.replace(name, subject)
            text = _description_to_name(text, described, subject)
        if cut and sentence == last_sentence:
            text = _complete_part(text, cut)
        out.append(text)
    return out


def longer_names(entities: list[str], subject: str | None) -> list[str]:
    """Names in the answer that are the subject's name with more in the middle ("Dag Hjalmar Agne
    Carl Hammarskjöld" for "Dag Hammarskjöld"), longest first."""
    if not subject or len(subject.split()) < 2:
        return []
    first, last = subject.split()[0], subject.split()[-1]
    found = {e for e in entities if e != subject and len(e.split()) > len(subject.split())
             and e.split()[0] == first and e.split()[-1] == last}
    return sorted(found, key=len, reverse=True)


def _known_as(texts, subject) -> list[str]:
    """Names the answer says the subject goes by: "Publius Ovidius Naso was known in English as
    Ovid." makes Publius Ovidius Naso the subject in the other claims."""
    if not subject:
        return []
    pattern = re.compile(r"(.+?) (?:is|was) (?:also |better |commonly |usually )?(?:known|called)(?: in \w+)? as "
                         + re.escape(subject) + r"\.$")
    return [m.group(1) for m in (pattern.match(t) for t, _ in texts) if m and len(m.group(1).split()) <= 6]


def _descriptions(texts, subject) -> set[str]:
    """The nouns that stand for the subject: a word of its name ("war" of "Sino-Burmese War") and
    the head of what the answer first says it is ("Dire Dawa is a city" -> "city")."""
    if not subject:
        return set()
    nouns = {w.lower() for w in re.findall(r"[A-Za-z]+", subject) if len(w) >= 3}
    for text, _ in texts[:3]:
        m = re.match(re.escape(subject) + r" (?:is|was) (?:an?|the) (?:[\w-]+ ){0,3}?([a-z]+)\.$", text)
        if m:
            nouns.add(m.group(1))
            break
    return nouns


def _description_to_name(text: str, nouns: set[str], subject: str) -> str:
    m = re.match(r"(?:The|This) ([a-z]+)('s)? (\w+)", text)
    if m and m.group(1) in nouns and m.group(3) not in QUALIFYING:  # not "The style of architecture"
        named = subject + (m.group(2) or "") + text[m.start(3) - 1:]
        return named[:1].upper() + named[1:]
    return text


def _ends_complete(answer: str) -> bool:
    """Whether the answer ends as written, not cut by the token limit: sentence punctuation, or a
    last line that is a list item (bullets are often written without a full stop)."""
    last_line = answer.rstrip().rsplit("\n", 1)[-1].lstrip()
    return answer.rstrip().endswith(ENDS_SENTENCE) or bool(re.match(r"([-*•#]|\d+[.)])\s", last_line))


def _last_word(answer: str) -> str:
    words = re.findall(r"[\w'-]+", answer)
    return words[-1] if words else ""


def _complete_part(text: str, cut_word: str) -> str | None:
    """A claim of the cut-off sentence without its unfinished end: the last word (perhaps cut
    inside), then words that cannot end a statement; too little left gives nothing."""
    words = text.rstrip(".").split()
    if not words or words[-1].strip(",;:") != cut_word:
        return text
    words = words[:-1]
    while words and words[-1].lower().strip(",;:") in DANGLING:
        words = words[:-1]
    if len(words) < MIN_WORDS:
        return None
    return " ".join(words).rstrip(",;:") + "."
