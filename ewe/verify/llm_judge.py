"""An LLM as the verifier: VeriScore-style binary prompt, any `llm(prompt) -> str`.

A call that raises, or an answer that says neither Supported nor Unsupported, gives an
error verdict (label not_enough_evidence, `error` set), never an exception.
"""
from __future__ import annotations

from typing import Sequence

from .prompts import parse_verdict, verification_prompt
from .protocols import LLM
from .types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Claim, Evidence, Verdict


class LLMJudgeChecker:
    def __init__(self, llm: LLM, max_chars: int = 4000, name: str = "llm_judge"):
        self.llm = llm
        self.max_chars = max_chars
        self.name = name

    def check_claims(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> list[Verdict]:
        if len(claims) != len(evidence_per_claim):
            raise ValueError("one evidence list per claim is required")
        return [self._one(c, list(ev)) for c, ev in zip(claims, evidence_per_claim)]

    def _one(self, claim: Claim, evidence: list[Evidence]) -> Verdict:
        if not evidence:  # judging with no passage would test the judge's memory, not the claim
            return Verdict(claim, NOT_ENOUGH_EVIDENCE, 0.0, [], self.name, rationale="no evidence")
        try:
            answer = self.llm(verification_prompt(claim.text, evidence, self.max_chars))
        except Exception as e:  # noqa: BLE001 - any failure is recorded, not raised
            return Verdict(claim, NOT_ENOUGH_EVIDENCE, 0.0, evidence, self.name, error=f"llm call failed: {type(e).__name__}: {e}")
        verdict = parse_verdict(answer)
        if verdict is None:
            return Verdict(claim, NOT_ENOUGH_EVIDENCE, 0.0, evidence, self.name,
                           error=f"malformed answer: {str(answer)[:200]!r}", rationale=str(answer)[:200])
        return Verdict(claim, SUPPORTED if verdict else UNSUPPORTED, 1.0 if verdict else 0.0, evidence, self.name,
                       rationale=str(answer).strip()[:200])
