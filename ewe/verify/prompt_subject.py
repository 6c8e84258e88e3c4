"""What a prompt asks about, resolved once per request and handed to every rule that holds an
answer to it (issue 56): the retrieval filter, the relevance rule, the repeat test.

A prompt's form says whether its subject is a person ("a bio of", "the life of", "who was");
otherwise the subject is the thing an "about X" prompt names, or the capitalized name it asks
of ("Explain the theory of General Relativity." -> General Relativity, a thing, where the bare
name reader once took it for a person).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

from .claims import asks_about_person, prompt_person, prompt_topic
from .text import NAME_PARTICLES, WORD_RE

_FUNCTION = frozenset({"the", "a", "an", "and", "or", "in", "on", "for", "to", "at", "by", "with"}) | NAME_PARTICLES


@dataclass(frozen=True)
class Subject:
    """name: as the prompt writes it ("Marie Curie", "Eiffel Tower", "Fundamental group");
    person: the prompt's form says a person."""

    name: str
    person: bool

    @property
    def proper(self) -> bool:
        """A name of several words, each capitalized but its function words ("Eiffel Tower", "The
        Legend of Zelda", "Tiger Woods"): a common noun among them ("a tower", "legends", "the
        tiger") is something else. "Fundamental group" (a Wikipedia title's capital only) is not."""
        words = [w for w in WORD_RE.findall(self.name) if w.lower() not in _FUNCTION]
        return len(words) >= 2 and all(w[:1].isupper() for w in words)

    def words(self) -> set[str]:
        """The name's content words, lower-cased, a plural's s dropped (to compare with a noun phrase)."""
        return {singular(w) for w in WORD_RE.findall(self.name) if w.lower() not in _FUNCTION}


def singular(word: str) -> str:
    w = word.lower()
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


@functools.lru_cache(maxsize=1024)
def subject_of(prompt: Optional[str]) -> Optional[Subject]:
    """The prompt's subject, or None when it names none ("Write a poem.")."""
    if asks_about_person(prompt):
        name = prompt_person(prompt)
        return Subject(name, person=True) if name else None
    name = prompt_topic(prompt)
    return Subject(name, person=False) if name else None
