"""The three seams of the fact-checker, as structural protocols.

Anything with the right methods plugs in: the retrieval datastore adapts to
EvidenceSource, a generator wrapped as `llm(prompt) -> str` drives the LLM extractor
and judge.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence, runtime_checkable

from .types import Claim, Evidence, Verdict

LLM = Callable[[str], str]
"""A text-in, text-out language model call."""


@runtime_checkable
class EvidenceSource(Protocol):
    """Finds passages for each query; one list (best first, at most k) per query."""

    def search(self, queries: list[str], k: int) -> list[list[Evidence]]: ...


@runtime_checkable
class Checker(Protocol):
    """Judges claims against their evidence; returns one Verdict per claim, in order.

    A backend may raise; FactChecker turns that into error verdicts."""

    name: str

    def check_claims(
        self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]
    ) -> list[Verdict]: ...


@dataclass
class Extraction:
    """Claims from one sentence, with the extractor's name and, when it had to fall
    back to the rule-based splitter, why."""

    claims: list[Claim]
    extractor: str
    fallback: Optional[str] = None


@runtime_checkable
class ClaimExtractor(Protocol):
    def extract(self, sentence: str, context: Optional[str] = None, prompt: Optional[str] = None) -> Extraction: ...
