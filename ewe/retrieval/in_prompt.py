"""How retrieved passages are written into a prompt (retrieval.placement: prompt, RA, the text
loops' candidate prompts).

The format matters to a small model: given "Relevant passages:\\n[1] Title (description): ...",
SmolLM2-135M continued the list in 11 of 60 RA-1 biographies ("[2] Title (description): ..."),
and the loops that write candidates under such a prompt did the same. Each format here is
measured by benchmarks/passage_format.py (how often an answer copies a passage head) before it
becomes the default (config retrieval.prompt_format).
"""
from __future__ import annotations

import re
from typing import Callable

from .chunking import split_passage

# How a prompt's passage that does not name its article says whom it is about (passage_body); a
# small model copies it into its answer, where it is no claim (without_source_notes)
SOURCE_NOTE = "(from the article on {title})"
_SOURCE_NOTE = re.compile(r"\s*\(from the article on [^)\n]*\)?")

AFTER_LABEL = "Use this background:"


def numbered(prompt: str, passages: list[str]) -> str:
    """The passages as a numbered list before the request (ewe before issue 30; the model
    continues the list)."""
    listed = "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
    return f"Relevant passages:\n{listed}\n\n{prompt}"


def articles(prompt: str, passages: list[str]) -> str:
    """Each passage as a paragraph of prose that names its article, no list, no head to copy."""
    parts = []
    for p in passages:
        title, desc, body = split_passage(p)
        if not title:
            parts.append(body)
            continue
        about = f"{title} ({desc})" if desc else title
        parts.append(f"From the encyclopedia article on {about}: \"{body}\"")
    joined = "\n\n".join(parts)
    return f"{joined}\n\n{prompt}"



def without_source_notes(text: str) -> str:
    """`text` without copied source notes ("... Vietnam. (from the article on Nguyễn dynasty)"),
    a cut-off one included."""
    return _SOURCE_NOTE.sub("", text)

def passage_body(passage: str) -> str:
    """A passage's text without its "Title (description):" head. A passage whose text does not
    name its title (a chunk from later in an article: "He was assassinated in 1610 ...") says
    whom it is about after its text, not as a head: the model copied such heads into its
    answers, and the copied head then made the borrowed sentence look like it was about the
    passage's subject rather than the prompt's."""
    title, _, body = split_passage(passage)
    if title and title.split()[-1] not in body[:200]:
        body = f"{body} {SOURCE_NOTE.format(title=title)}"
    return body


def _texts(passages: list[str]) -> str:
    """The passages' bodies a blank line apart."""
    return "\n\n".join(passage_body(p) for p in passages)


def background(prompt: str, passages: list[str]) -> str:
    """The passages' text under one label, before the request."""
    return f"Background:\n{_texts(passages)}\n\n{prompt}"


def after(prompt: str, passages: list[str]) -> str:
    """The request first, then the passages' text as background to use (the default: the model
    copied no passage head in 40 RA-1 biographies, benchmarks/passage_format.py)."""
    return f"{prompt}\n\n{AFTER_LABEL}\n{_texts(passages)}"


PASSAGE_FORMATS: dict[str, Callable[[str, list[str]], str]] = {
    "numbered": numbered,
    "articles": articles,
    "background": background,
    "after": after,
}


# How a passage is written into a memory unit (config memory.unit_text). "passage" keeps its head;
# "body" writes it as the prompt formats do, since the memory loop copied heads from units
# ("Marie Curie (Polish-French physicist and chemist, 1867-1934): ...") as RA once did from lists.
UNIT_TEXTS: dict[str, Callable[[str], str]] = {
    "passage": lambda passage: passage,
    "body": passage_body,
}
