"""Critique a text someone wrote (ITA's task, Huang et al. 2024): which of its claims are wrong,
why, and where a reader can check.

The text is split into sentences (offsets kept); each sentence's claims are extracted with the
text before it as context (pronouns resolved, self-contained, as the paper's implicit claims),
found evidence for (the given passages, or the datastore) and judged by the configured checker:
with `checker.backend: ita` each claim is verified through its tree of sub-claims
(ewe/verify/tree.py), otherwise judged flat. Every claim keeps the span it came from, its
verdict (accept / reject / unsubstantiated), a one-line reason, its references (title, the
passage's character offsets in its document, and the words the judge read) and the tree.

What a critique cost is counted where it is spent: the leaf judge's claims, the LLM's calls
(ITA's spanning, an LLM extractor) and the evidence searches.
"""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

from ..verify.factchecker import FactChecker
from ..verify.subject import GIVEN_TITLE
from ..verify.text import sentence_spans
from ..verify.tree import ACCEPT, REJECT, UNSUBSTANTIATED, TreeChecker
from ..verify.types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Evidence, Verdict

VERDICT_OF_LABEL = {SUPPORTED: ACCEPT, UNSUPPORTED: REJECT, NOT_ENOUGH_EVIDENCE: UNSUBSTANTIATED}
REASON_CHARS = 240


@dataclass
class CritiquedClaim:
    """One claim of the text: `start`, `end` are offsets into the text, of the claim's own words
    when it is a verbatim span of its sentence, else of the sentence it came from."""

    claim: str
    sentence_index: int
    start: int
    end: int
    verdict: str
    score: float
    reason: str
    references: list[dict]
    tree: Optional[dict] = None
    error: Optional[str] = None


@dataclass
class Critique:
    text: str
    claims: list[CritiquedClaim]
    sentences: int
    checker: str
    cost: dict = field(default_factory=dict)

    @property
    def rejected(self) -> list[CritiquedClaim]:
        return [c for c in self.claims if c.verdict == REJECT]

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("text")
        return d


def reference(ev: Evidence) -> dict:
    """Where a reader finds the passage: its title, document and character offsets there (given
    passages: the passage itself, 0 to its length), and the words the judge read (a passage can
    be cut down to what it says about the claim's subject)."""
    return {**{k: v for k, v in ev.cite().items() if k != "score"}, "quote": ev.text}


def given_evidence(passages: Sequence[str | dict]) -> list[Evidence]:
    """Passages a caller gives, as strings or {"title", "text"}: each its own document."""
    out = []
    for i, p in enumerate(passages):
        text, title = (p, "") if isinstance(p, str) else (p["text"], p.get("title", ""))
        out.append(Evidence(text=text, title=title or f"{GIVEN_TITLE} {i + 1}", score=1.0,
                            source_id=f"given#{i}", start=0, end=len(text)))
    return out


def one_line(reason: str) -> str:
    line = " ".join(reason.split())
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 3] + "..."


class _Counted:
    """A judge, LLM or evidence source that counts what it is asked."""

    def __init__(self, inner, counts: dict, key: str):
        self._inner, self._counts, self._key = inner, counts, key

    def check_claims(self, claims, evidence):
        self._counts[self._key] += len(claims)
        return self._inner.check_claims(claims, evidence)

    def search(self, queries, k):
        self._counts[self._key] += len(queries)
        return self._inner.search(queries, k)

    def __call__(self, *args, **kwargs):
        self._counts[self._key] += 1
        return self._inner(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class Critic:
    """Critiques texts with one FactChecker (its backend, extractor and evidence source)."""

    def __init__(self, checker: FactChecker):
        self.checker = checker
        self.name = getattr(checker.checker, "name", type(checker.checker).__name__)

    def _counted(self, counts: dict, given: bool) -> FactChecker:
        """A copy of the checker whose judge, LLMs and searches count into `counts`; with evidence
        `given`, a tree's sub-claims are judged against it too (their parent's), never searched."""
        fc = copy.copy(self.checker)
        backend = fc.checker
        if isinstance(backend, TreeChecker):
            backend = copy.copy(backend)
            backend.base = _Counted(backend.base, counts, "judged_claims")
            if backend.llm is not None:
                backend.llm = _Counted(backend.llm, counts, "llm_calls")
            if given:
                backend.evidence = None
            elif backend.evidence is not None:
                backend.evidence = _Counted(backend.evidence, counts, "searches")
            fc.checker = backend
        else:
            fc.checker = _Counted(backend, counts, "judged_claims")
        if fc.evidence is not None:
            fc.evidence = _Counted(fc.evidence, counts, "searches")
        llm = getattr(fc.extractor, "llm", None)
        if llm is not None:
            fc.extractor = copy.copy(fc.extractor)
            fc.extractor.llm = _Counted(llm, counts, "llm_calls")
        return fc

    def critique(self, text: str, evidence: Optional[Sequence[str | dict]] = None) -> Critique:
        """`evidence`: passages every claim is judged against (None: the checker's evidence source)."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("the text to critique is empty")
        counts = {"judged_claims": 0, "llm_calls": 0, "searches": 0}
        given = given_evidence(evidence) if evidence is not None else None
        fc = self._counted(counts, given is not None)
        t0 = time.perf_counter()
        spans = sentence_spans(text)
        claims = []
        for i, (a, b) in enumerate(spans):
            check = fc.check_sentence(text[a:b], context=text[:a].strip() or None, evidence=given)
            for v in check.verdicts:
                claims.append(self._claim(v, i, a, b))
        cost = {"seconds": round(time.perf_counter() - t0, 3), **counts}
        return Critique(text, claims, len(spans), self.name, cost)

    @staticmethod
    def _claim(v: Verdict, sentence_index: int, a: int, b: int) -> CritiquedClaim:
        c = v.claim
        verbatim = c.start is not None and c.end is not None and 0 <= c.start < c.end <= b - a
        start, end = (a + c.start, a + c.end) if verbatim else (a, b)
        verdict = UNSUBSTANTIATED if v.error else VERDICT_OF_LABEL[v.label]
        tree = (v.details or {}).get("tree")
        # a tree's rationale ends with the whole tree rendered; its root's own reason says why
        reason = v.error or (tree["reason"] if tree else v.rationale) or f"{v.label} by {v.backend}"
        return CritiquedClaim(c.text, sentence_index, start, end, verdict, round(float(v.score), 4), one_line(reason),
                              [reference(e) for e in v.evidence[:3]], tree, v.error)
