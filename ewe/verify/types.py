"""Plain data carried between claim extraction, evidence search and checking.

Dataclasses rather than dicts so the controller, the benchmark and the tests agree
on field names; `to_dict()` gives the JSON form for logs.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal, Optional

Label = Literal["supported", "unsupported", "not_enough_evidence"]
SUPPORTED: Label = "supported"
UNSUPPORTED: Label = "unsupported"
NOT_ENOUGH_EVIDENCE: Label = "not_enough_evidence"
LABELS: tuple[Label, ...] = (SUPPORTED, UNSUPPORTED, NOT_ENOUGH_EVIDENCE)
NOT_CHECKABLE = "not_checkable"  # a sentence's verdict when it holds no checkable claim


@dataclass
class Claim:
    """One checkable statement. `start`/`end` are offsets into `source` when the claim
    is a verbatim span of it, None when it was rewritten (subject carried over, LLM)."""

    text: str
    source: str = ""
    start: Optional[int] = None
    end: Optional[int] = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Evidence:
    """A passage offered as evidence. `score` is the retriever's (or 1.0 when given); `start`,
    `end`: where the passage lies in its source document (characters), when it came from a datastore."""

    text: str
    title: str = ""
    score: float = 1.0
    source_id: str = ""
    start: Optional[int] = None
    end: Optional[int] = None

    def cite(self) -> dict:
        """Where the passage comes from, without its text: title, source, offsets, score."""
        return {"title": self.title, "source_id": self.source_id, "start": self.start, "end": self.end,
                "score": round(float(self.score), 4)}

    def premise(self) -> str:
        """The passage as a judge reads it: prefixed by its title unless it already opens with it."""
        return self.text if not self.title or self.text.startswith(self.title) else f"{self.title}: {self.text}"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Verdict:
    """A checker's judgement of one claim.

    `score` in [0, 1] is the backend's confidence that the claim is supported.
    `error` is set when the backend failed; the label is then not_enough_evidence and
    the verdict must not be read as a judgement (see SentenceCheck.needs_rewrite).
    `rationale` is a short human-readable reason (which check failed, raw LLM answer).
    `evidence` is what the backend looked at, best first.
    `details` is anything else a backend reports, JSON-ready (the ITA backend: its tree).
    """

    claim: Claim
    label: Label
    score: float
    evidence: list[Evidence] = field(default_factory=list)
    backend: str = ""
    error: Optional[str] = None
    rationale: str = ""
    details: Optional[dict] = None

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"label must be one of {LABELS}, got {self.label!r}")
        self.score = float(min(1.0, max(0.0, self.score)))

    @property
    def supported(self) -> bool:
        return self.label == SUPPORTED

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def failed_verdicts(claims, backend: str, error: str, evidence_per_claim=None) -> list[Verdict]:
    """Verdicts for a backend that could not judge: label nee, `error` set."""
    ev = evidence_per_claim or [[] for _ in claims]
    return [
        Verdict(claim=c, label=NOT_ENOUGH_EVIDENCE, score=0.0, evidence=list(e), backend=backend, error=error)
        for c, e in zip(claims, ev)
    ]


@dataclass
class SentenceCheck:
    """The outcome of fact-checking one generated sentence.

    `factual` is the paper's rule: every extracted claim is supported, and there is at
    least one (a sentence with no checkable claim, such as a question or text in another
    language, is `checkable == False`, never factual). `needs_rewrite` is what a controller
    should act on: some claim was judged not supported by a backend that did not fail. A
    sentence whose check failed (`errors`) is kept, never removed on the strength of a failure.
    """

    sentence: str
    claims: list[Claim]
    verdicts: list[Verdict]
    extractor: str = ""
    extraction_fallback: Optional[str] = None  # why the extractor fell back, if it did
    timings: dict[str, float] = field(default_factory=dict)  # seconds: extract, search, check, total

    @property
    def checkable(self) -> bool:
        return bool(self.claims)

    @property
    def factual(self) -> bool:
        return self.checkable and bool(self.verdicts) and all(v.supported for v in self.verdicts)

    @property
    def verdict(self) -> str:
        """One word for the sentence: supported, unsupported, not_enough_evidence (some claim
        unsupported by nothing contradicting it), not_checkable, or error."""
        if not self.checkable:
            return NOT_CHECKABLE
        if self.errors:
            return "error"
        if self.factual:
            return SUPPORTED
        return UNSUPPORTED if any(v.label == UNSUPPORTED for v in self.verdicts) else NOT_ENOUGH_EVIDENCE

    @property
    def errors(self) -> list[str]:
        return [v.error for v in self.verdicts if v.error]

    @property
    def needs_rewrite(self) -> bool:
        return any(v.error is None and not v.supported for v in self.verdicts)

    @property
    def contradicted(self) -> bool:
        """Some claim judged unsupported by its evidence (not merely short of it): what
        `controller.rewrite_when: contradicted` rewrites."""
        return any(v.error is None and v.label == UNSUPPORTED for v in self.verdicts)

    @property
    def nonfactual_claims(self) -> list[Claim]:
        return [v.claim for v in self.verdicts if v.error is None and not v.supported]

    def evidence_for(self, supported: bool) -> list[Evidence]:
        """Distinct passages the backend used for claims judged (not) supported: the
        paper's 'passages showing a claim is right / wrong' feedback forms."""
        seen, out = set(), []
        for v in self.verdicts:
            if v.error is None and v.supported == supported:
                for e in v.evidence[:1]:
                    if e.text not in seen:
                        seen.add(e.text)
                        out.append(e)
        return out

    def feedback_instruction(self) -> str:
        """The paper's instruction form (appendix D), empty when nothing is nonfactual."""
        claims = self.nonfactual_claims
        if not claims:
            return ""
        items = " ".join(f"({i}) {c.text}" for i, c in enumerate(claims, 1))
        return f"Please refrain from including the following imprecise statements: {items}"

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.update(factual=self.factual, needs_rewrite=self.needs_rewrite, checkable=self.checkable,
                 verdict=self.verdict)
        return d
