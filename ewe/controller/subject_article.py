"""The prompt's subject resolved to its own article in the datastore, to be held whole in memory.

Retrieval by similarity reads a subject from whichever of its chunks scores best and lets
namesakes in: Martin Luther's memory ended as Martin Luther King Jr.'s, Prince (musician)'s as
Machiavelli's The Prince (issue 72). An entity linker resolves the mention to one entry first
(DESIGN.md section 9); so does this, in order:

1. exact: an article titled as the prompt names the subject ("Marie Curie"), case and accents folded,
   or a longer title beginning with that name that the prompt writes whole ("Trưng sisters");
2. disambiguated: "Prince" -> "Prince (musician)", the candidate the prompt's search ranks first
   (for a person prompt, one whose description reads as a person's when the search ranks none);
3. top hit: the first of the prompt's best hits whose title can be the subject the prompt names
   ("Newton" -> "Isaac Newton"), never a namesake (verify/namesakes.py: "Martin Luther King Jr."
   for "Martin Luther", "The Prince" for "Prince"), or whose first sentence says the name is what
   its subject is known by ("mononymously as Galileo").

A subject with no article resolves to None: nothing is pinned.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..retrieval.datastore import Datastore, Hit
from ..verify.namesakes import describes_person, namesake_kind
from ..verify.subject import same_person, same_subject
from ..verify.text import fold

TOP_HITS = 3  # hits of the prompt's search read for "top hit"
_DISAMBIGUATION = re.compile(r"^(.*?)\s*\(([^()]*)\)$")


@dataclass(frozen=True)
class SubjectArticle:
    """The article a prompt's subject resolved to: its title, source id, how it was found, and its
    chunks in the article's order."""

    title: str
    source_id: str
    how: str  # "exact", "disambiguated" or "top hit"
    chunks: tuple[Hit, ...]

    def describe(self) -> dict:
        return {"title": self.title, "how": self.how, "chunks": [h.id for h in self.chunks]}


def _key(title: str) -> str:
    return " ".join(fold(title).lower().split())


def find_article(datastore: Datastore, name: str, person: bool, hits: list[Hit],
                 prompt: str | None = None) -> SubjectArticle | None:
    """The article of the subject the prompt names `name` (a person when `person`), or None.
    `hits`: the prompt's own search results, best first (they rank namesakes and short forms).
    `prompt`: where a longer title holding the name is written whole ("Trưng sisters", "Abd Allah
    al-Mahdi Billah", whose lower-case words end the name the prompt reader takes)."""
    titles = datastore.article_titles()
    key = _key(name)
    exact = {_key(t): sid for t, sid in titles.items()}
    if key in exact:
        return _article(datastore, exact[key], "exact")
    if prompt and (longer := _written_whole(titles, name, prompt)):
        return _article(datastore, titles[longer], "exact")
    candidates = [(t, sid) for t, sid in titles.items()
                  if (m := _DISAMBIGUATION.match(t)) and _key(m.group(1)) == key]
    if candidates:
        ranked = [sid for h in hits for t, sid in candidates if h.source_id == sid]
        if ranked:
            return _article(datastore, ranked[0], "disambiguated")
        if person:
            people = [sid for t, sid in candidates if _reads_as_person(datastore, sid)]
            if len(people) == 1:
                return _article(datastore, people[0], "disambiguated")
        if len(candidates) == 1:
            return _article(datastore, candidates[0][1], "disambiguated")
    same = same_person if person else same_subject
    for h in hits[:TOP_HITS]:
        base = _DISAMBIGUATION.sub(r"\1", h.title)
        if same(name, base) and namesake_kind(name, h.title, h.description) is None or _called(name, h):
            return _article(datastore, h.source_id, "top hit")
    return None


def _written_whole(titles: dict[str, str], name: str, prompt: str) -> str | None:
    """The longest title that begins with `name` and that the prompt writes whole, word-bounded."""
    found = [t for t in titles if len(t) > len(name) and t.startswith(name)
             and re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])", prompt)]
    return max(found, key=len) if found else None


def _called(name: str, hit: Hit) -> bool:
    """Whether the hit's first sentence says its subject is known by the prompt's name alone ("Galileo di
    Vincenzo Bonaiuti de' Galilei, ... mononymously as Galileo, was"; "known mononymously as Rembrandt"):
    a name that reads as a namesake's by its words ("Galileo" is extended by "Galileo Galilei")."""
    first = hit.body.split(". ")[0]
    return re.search(rf"\b(?:known|referred to|called|mononymously)\b[^.;]{{0,50}}?\bas\s+{re.escape(name)}"
                     rf"(?![\w'’-]|\s+[A-Z])", first) is not None


def _reads_as_person(datastore: Datastore, source_id: str) -> bool:
    chunks = datastore.article(source_id)
    return bool(chunks) and describes_person(chunks[0].description or "") is True


def _article(datastore: Datastore, source_id: str, how: str) -> SubjectArticle | None:
    chunks = tuple(datastore.article(source_id))
    if not chunks:
        return None
    title = chunks[0].title
    return SubjectArticle(title, source_id, how, chunks)
