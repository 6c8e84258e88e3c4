"""A judge's verdicts overruled by a hard contradiction (`checker.veto: contradiction`).

The trained judge reads "awarded the Nobel Prize in 1903" as support for a passage saying 1953
when the rest of a long sentence matches; the alignment checker's rules see the year. Here a
verdict other than unsupported becomes unsupported when the passage sentence that the claim
aligns with (cosine >= the alignment's support_sim, no aligned sentence passing every check)
states a number of the same kind the claim lacks, gives the claim's number another scale word or
unit ("3.69 billion" for "3.69 million", miles for km, BC for AD), or says the opposite by
negation. Missing names alone never veto: a paraphrase names things its own way.

A number paired with the wrong event vetoes too (`mispaired`): "In 1903, she won the Nobel Prize
in Chemistry" against a passage that gives 1903 to the Nobel Prize in Physics and Chemistry to
1911. A passage sentence stating the claim's number pairs it with every name of that sentence;
the claim is vetoed when a clause gives one of its names to another number of the same kind
and no sentence stating the claim's number has that name.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Sequence

from .alignment import AlignmentChecker, claim_names, subject_names
from .text import fold, name_words, numbers, split_sentences
from .types import UNSUPPORTED, Claim, Evidence, Verdict

_CLAUSE = re.compile(r"[;()]|,\s|\s(?:and|but|while|whereas|whilst)\s")


def mispaired(claim: str, evidence: Sequence[str]) -> str | None:
    """Why the evidence pairs one of the claim's numbers with another event, or None (see the
    module docstring). Only a claim with one number of a kind is read (which name goes with which
    of several numbers of a claim is its own clause structure)."""
    nums = numbers(claim)
    kinds = [n.kind for n in nums]
    names = claim_names(claim) - subject_names(claim)
    if not names:
        return None
    sentences = [s for text in evidence for s in (split_sentences(text) or [text])]
    clauses = [(c, {n.key: n.kind for n in numbers(c)}, {fold(w) for w in name_words(c)})
               for s in sentences for c in _CLAUSE.split(s) if c and c.strip()]
    for n in nums:
        if kinds.count(n.kind) > 1 or n.kind == "word":
            continue
        # what the passage pairs the claim's number with: every name of a sentence stating it
        with_n = [{fold(w) for w in name_words(s)} for s in sentences if n.key in {m.key for m in numbers(s)}]
        if not with_n:
            continue  # the passage never states it: the aligned sentence's numbers say the rest
        paired = names & set().union(*with_n)
        for text, nums_c, names_c in clauses:
            others = [k for k, kind in nums_c.items() if kind == n.kind and k != n.key]
            elsewhere = (names & names_c) - paired
            if others and elsewhere and n.key not in nums_c:
                return (f"mispaired: the evidence gives {', '.join(sorted(elsewhere))} {others[0]}, not {n.key}: "
                        f"{text.strip()[:160]}")
    return None


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
        hard = [s for s in close if s.conflicting_numbers or s.conflicting_units or s.negation_mismatch]
        if not hard:
            return None
        best = max(hard, key=lambda s: s.sim)
        if best.conflicting_numbers:
            why = f"evidence has {', '.join(best.conflicting_numbers)} where the claim has {', '.join(best.missing_numbers)}"
        elif best.conflicting_units:
            why = f"evidence has {', '.join(best.conflicting_units)}"
        else:
            why = "negation differs from evidence"
        return f"contradicted: {why} (cos {best.sim:.2f}): {best.text[:160]}"

    def check_claims(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> list[Verdict]:
        verdicts = list(self.base.check_claims(claims, evidence_per_claim))
        self.aligner.encode_all(claims, evidence_per_claim)
        out = []
        for v, claim, evidence in zip(verdicts, claims, evidence_per_claim):
            why = None if v.label == UNSUPPORTED or v.error else (
                mispaired(claim.text, [e.text for e in evidence]) or self.contradiction(claim, evidence))
            out.append(v if why is None else replace(v, label=UNSUPPORTED, score=min(v.score, 0.49), backend=self.name,
                                                      rationale=f"{why} | {v.label} by {v.backend}: {v.rationale}"))
        return out
