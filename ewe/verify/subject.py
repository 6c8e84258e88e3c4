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
  The title line stays, so the judge sees whose passage it reads. When no sentence names the
  claim's subject, the passage cannot support the claim and is dropped for it.

This is a filter on evidence, not a judge: it never makes a claim supported, it only keeps
another person's facts from counting as support. It misses a subject that the passage
names only by an alias, and a single capitalized common word opening a claim
("Scientists ...") is taken for a name: both only drop evidence, never add it.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Optional, Sequence

from .claims import LEADING_NON_SUBJECT, find_subject, prompt_person
from .text import NOT_NAMES, WORD_RE, fold, sentence_spans
from .types import Evidence

# Words of a name that do not tell one bearer from another: a passage's "King" or "Pope" is
# no sign that it names the claim's king or pope.
HONORIFICS = frozenset("""saint st pope king queen emperor empress prince princess sir lord lady duke duchess
    count president general admiral sultan tsar czar shah caliph khan pharaoh jr sr the great elder younger""".split())
_PARTICLES = {"of", "de", "da", "di", "du", "del", "della", "van", "von", "der", "den", "la", "le", "bin", "ibn", "al",
              "the", "y"}


def name_keys(name: str) -> set[str]:
    """Folded capitalized words of a name ("Marie Skłodowska-Curie" -> {marie, sklodowska, curie})."""
    return {fold(w) for w in WORD_RE.findall(name) if w[:1].isupper() and w.lower() not in NOT_NAMES}


def same_subject(a: str, b: str) -> bool:
    """One name's words all belong to the other's ("Curie" and "Marie Curie")."""
    ka, kb = name_keys(a), name_keys(b)
    return bool(ka) and bool(kb) and (ka <= kb or kb <= ka)


def _head(text: str) -> Optional[tuple[str, int]]:
    """The "Title (description): " head of an embedded Wikipedia passage: (title, where the
    extract starts), or None when the text does not open with a title."""
    m = re.match(r"([^():\n]{1,80}?)(?:\s*\(|:\s)", text)
    if not m:
        return None
    title, i = m.group(1).strip(), m.end()
    while text[i - 1] == "(":  # "(planet) (description (1867–1934))": parentheses of their own inside
        depth = 1
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        after = re.match(r"\s*\(|:\s", text[i:])
        if depth or not after:
            return None
        i += after.end()
    words = title.split()
    if not 1 <= len(words) <= 8 or not all(w[:1].isupper() or w[:1].isdigit() or w.lower() in _PARTICLES | {"and"}
                                           for w in words) or not name_keys(title):
        return None
    return title, i


def passage_subject(ev: Evidence) -> Optional[str]:
    """Whom a passage is about: its title (a disambiguation in parentheses dropped), else the
    title its text opens with; None when neither says."""
    if ev.title:
        title = re.sub(r"\s*\([^()]*\)$", "", ev.title).strip()
        return title if name_keys(title) else None
    head = _head(ev.text)
    if head is None or not (ev.text[len(head[0]):].lstrip().startswith("(")
                            or name_keys(head[0]) & name_keys(ev.text[head[1]:])):
        return None  # "Note: ..." is no title: one needs a description or to be named again
    return head[0]


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
        if name or (runs[-1] and w in _PARTICLES):
            runs[-1].append(m)
        elif runs[-1]:
            runs.append([])
    out = []
    for run in runs:
        while run and run[-1].group(0) in _PARTICLES:
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
    span = find_subject(claim)
    if span:
        return claim[span[0]:span[1]]
    first = name_runs(claim)[:1]
    return first[0] if first and claim.startswith(first[0]) else ""


def names_subject(sentence: str, subject: str, other: str) -> bool:
    """Does `sentence` name `subject` in a way `other`'s name cannot explain: the full name, or
    a capitalized word of it that `other` does not share and that is no title ("Marie" against
    Pierre Curie; a lowercase "grace" is no Grace Hopper)."""
    if re.search(rf"(?<!\w){re.escape(subject)}(?!\w)", sentence):
        return True
    own = name_keys(subject) - name_keys(other) - HONORIFICS
    return bool(own & name_keys(sentence))


def restrict(ev: Evidence, subject: str) -> Optional[Evidence]:
    """`ev` as evidence about `subject` (see the module docstring): unchanged, its title line
    and the sentences that name `subject`, or None when it says nothing about them."""
    about = passage_subject(ev)
    if about is None or same_subject(subject, about):
        return ev
    head = _head(ev.text) if not ev.title or ev.text.startswith(ev.title) else None
    start = head[1] if head else 0
    body = ev.text[start:]
    kept = [body[a:b] for a, b in sentence_spans(body) if names_subject(body[a:b], subject, about)]
    if not kept:
        return None
    return replace(ev, text=ev.text[:start] + " ".join(kept))


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
        if (about is None or same_subject(subject, about) or any(same_subject(r, about) for r in named)
                or name_keys(about) <= head_words):
            # the passage's own subject, or the claim's grammatical subject is theirs ("Pierre Curie
            # married her"; "Einstein's theory of relativity was ..." against "Theory of relativity")
            out.append(ev)
            continue
        bound = restrict(ev, subject)
        notes.append({"passage": about, "subject": subject, "dropped": bound is None})
        if bound is not None:
            out.append(bound)
    return out, notes


def note_text(notes: Sequence[dict]) -> str:
    """"passage about Franz Kafka, not Gustav Klimt" for each passage dropped."""
    return "; ".join(f"passage about {n['passage']}, not {n['subject']}" for n in notes if n["dropped"])
