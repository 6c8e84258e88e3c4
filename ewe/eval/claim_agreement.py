"""How close the scorer's claim extractor comes to claims a reader split by hand.

Recall of a score can only see what the extractor cuts out, so the extractor is held to answers
split by readers (tests/data/atomic_claims/, its LABELLING.md): per answer, the claim count's
relative difference from the reader's, and which of the reader's claims the extractor also
produced. Two claims match when they state the same content: the reader's content words are
nearly all in the extracted claim (>= COVER_LABEL), and the extracted claim is mostly those words
(>= COVER_EXTRACTED), so a claim that bundles three facts matches none of them; each claim
matches at most once (greedy, best overlap first). Words are compared lower-cased with a crude
suffix stem; the subject's name, numbers-as-words and function words carry no content here, but
numbers do ("born in 1867" and "born in 1868" do not match).
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from ..files import read_jsonl

COVER_LABEL = 0.75
COVER_EXTRACTED = 0.5
FUNCTION_WORDS = frozenset(
    "a an the and or but of in on at to for from by with as into onto over under about after before during "
    "is are was were be been being has have had do does did will would can could may might shall should "
    "this that these those it its he his him she her hers they their them who whom whose which what "
    "also later then there here than not no very most more such one some many".split())
LABEL_FIELDS = ("id", "method", "dataset", "prompt", "topic", "answer", "claims")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(claim: str, subject: str | None = None) -> frozenset[str]:
    """The words that carry a claim's content: not function words, not the subject's name."""
    name = {w.lower() for w in re.findall(r"\w+", subject or "")}
    return frozenset(_stem(w) for w in re.findall(r"\w+", claim.lower())
                     if w not in FUNCTION_WORDS and w not in name and w != "s")


def match(labelled: list[str], extracted: list[str], subject: str | None = None) -> list[tuple[int, int]]:
    """(labelled index, extracted index) pairs that state the same content, one-to-one."""
    lab = [content_words(c, subject) for c in labelled]
    ext = [content_words(c, subject) for c in extracted]
    candidates = []
    for i, a in enumerate(lab):
        for j, b in enumerate(ext):
            if not a or not b:
                same = not a and not b and labelled[i].strip(" .").lower() == extracted[j].strip(" .").lower()
                if same:
                    candidates.append((1.0, i, j))
                continue
            shared = len(a & b)
            if shared / len(a) >= COVER_LABEL and shared / len(b) >= COVER_EXTRACTED:
                candidates.append((2 * shared / (len(a) + len(b)), i, j))
    pairs, used_i, used_j = [], set(), set()
    for _, i, j in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
        if i not in used_i and j not in used_j:
            pairs.append((i, j))
            used_i.add(i)
            used_j.add(j)
    return sorted(pairs)


@dataclass
class AnswerAgreement:
    id: str
    labelled: list[str]
    extracted: list[str]
    pairs: list[tuple[int, int]]

    @property
    def count_error(self) -> float:
        """|extracted - labelled| / labelled (an answer the reader found no claim in: 0 or 1)."""
        if not self.labelled:
            return float(bool(self.extracted))
        return abs(len(self.extracted) - len(self.labelled)) / len(self.labelled)

    @property
    def missed(self) -> list[str]:
        got = {i for i, _ in self.pairs}
        return [c for i, c in enumerate(self.labelled) if i not in got]

    @property
    def unmatched(self) -> list[str]:
        got = {j for _, j in self.pairs}
        return [c for j, c in enumerate(self.extracted) if j not in got]


def read_labels(path: Path) -> list[dict]:
    """The hand-split answers of `path`, each checked for the fields LABELLING.md names."""
    rows = []
    for n, row in read_jsonl(path):
        missing = [f for f in LABEL_FIELDS if f not in row]
        if missing:
            raise ValueError(f"{path}:{n}: a labelled answer needs {', '.join(missing)}")
        if not isinstance(row["claims"], list) or not all(isinstance(c, str) and c.strip() for c in row["claims"]):
            raise ValueError(f'{path}:{n}: "claims" must be a list of non-empty strings')
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no labelled answers in it")
    return rows


def agreement(rows: list[dict], extract) -> list[AnswerAgreement]:
    """Each labelled answer against `extract(answer, subject) -> list[str]` (the subject: the
    topic's title without its parenthesis, as the scorer names it)."""
    from .claim_checkers import answer_subject

    out = []
    for row in rows:
        subject = answer_subject(row["topic"], row["prompt"])
        got = extract(row["answer"], subject)
        out.append(AnswerAgreement(str(row["id"]), list(row["claims"]), got, match(row["claims"], got, subject)))
    return out


def second_reader(rows: list[dict], other: list[dict]):
    """An `extract` for `agreement` that answers with another reader's split of the same answers:
    how close two readers come is what the extractor's figures can be read against. Every answer
    of `rows` must be in `other`, with the same text."""
    by_id = {str(r["id"]): r for r in other}
    missing = [str(r["id"]) for r in rows if str(r["id"]) not in by_id]
    if missing:
        raise ValueError(f"the second reader's file lacks {len(missing)} of the answers, e.g. {missing[0]}")
    changed = [str(r["id"]) for r in rows if by_id[str(r["id"])]["answer"] != r["answer"]]
    if changed:
        raise ValueError(f"the second reader split a different answer for {changed[0]} (and {len(changed) - 1} more)")
    queued: dict[str, list[list[str]]] = {}  # answer text -> its rows' claims, in `rows` order (`agreement`'s)
    for r in rows:
        queued.setdefault(r["answer"], []).append(list(by_id[str(r["id"])]["claims"]))
    return lambda answer, subject: queued[answer].pop(0)


def atomic_extract(answer: str, subject: str | None) -> list[str]:
    """The scorer's claims, every one (repeats too, as the readers count them)."""
    from .atomic_facts import atomic_claims

    return [c.text for c in atomic_claims(answer, subject)]


def summary(results: list[AnswerAgreement]) -> dict:
    """The two figures the extractor is held to, and what they are made of."""
    labelled = sum(len(r.labelled) for r in results)
    return {
        "answers": len(results),
        "labelled_claims": labelled,
        "extracted_claims": sum(len(r.extracted) for r in results),
        "count_error": statistics.mean(r.count_error for r in results),  # mean absolute relative difference
        "recall": sum(len(r.pairs) for r in results) / labelled if labelled else 0.0,
        "precision": (sum(len(r.pairs) for r in results) / max(1, sum(len(r.extracted) for r in results))),
    }
