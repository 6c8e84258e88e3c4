"""A judge's verdicts overruled by a hard contradiction (`checker.veto: contradiction`).

The trained judge reads "awarded the Nobel Prize in 1903" as support for a passage saying 1953
when the rest of a long sentence matches; the alignment checker's rules see the year. Here a
verdict other than unsupported becomes unsupported when the passage sentence that the claim
aligns with (cosine >= the alignment's support_sim, no aligned sentence passing every check)
states a number of the same kind the claim lacks, or says the opposite by negation. Missing
names alone never veto: a paraphrase names things its own way.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from .alignment import AlignmentChecker
from .types import UNSUPPORTED, Claim, Evidence, Verdict


class ContradictionVeto:
    """`base`'s verdicts, each overruled to unsupported where `aligner` finds a hard contradiction."""

    def __init__(self, base, aligner: AlignmentChecker):
        self.base, self.aligner = base, aligner
        self.name = f"{getattr(base, 'name', type(base).__name__)}+veto"

    def contradiction(self, claim: Claim, evidence: Sequence[Evidence]) -> str | None:
        """Why the best-aligned evidence sentence contradicts the claim, or None."""
        cfg = self.aligner.config
        close = [s for s in self.aligner.spans(claim, evidence) if s.sim >= cfg.support_sim]
        if not close or any(s.clean(cfg) for s in close):
            return None
        hard = [s for s in close if s.conflicting_numbers or s.negation_mismatch]
        if not hard:
            return None
        best = max(hard, key=lambda s: s.sim)
        why = (f"evidence has {', '.join(best.conflicting_numbers)} where the claim has {', '.join(best.missing_numbers)}"
               if best.conflicting_numbers else "negation differs from evidence")
        return f"contradicted: {why} (cos {best.sim:.2f}): {best.text[:160]}"

    def check_claims(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> list[Verdict]:
        verdicts = list(self.base.check_claims(claims, evidence_per_claim))
        self.aligner.encode_all(claims, evidence_per_claim)
        out = []
        for v, claim, evidence in zip(verdicts, claims, evidence_per_claim):
            why = None if v.label == UNSUPPORTED or v.error else self.contradiction(claim, evidence)
            out.append(v if why is None else replace(v, label=UNSUPPORTED, score=min(v.score, 0.49), backend=self.name,
                                                      rationale=f"{why} | {v.label} by {v.backend}: {v.rationale}"))
        return out
