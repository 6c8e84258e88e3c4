"""A judge's verdicts overruled by a hard contradiction (`checker.veto: contradiction`).

The trained judge reads "awarded the Nobel Prize in 1903" as support for a passage saying 1953
when the rest of a long sentence matches; the alignment checker's rules see the year. Here a
verdict other than unsupported becomes unsupported when the passage sentence that the claim
aligns with (cosine >= the alignment's support_sim, no aligned sentence passing every check)
states a number of the same kind in place of one the claim has, gives the claim's number another
scale word, unit or era ("3.69 billion" for "3.69 million", miles for km, BC for AD; amounts are
compared as `quantities` reads them, so "7,000,000" is "7 million" and "62 miles" is "100 km"),
or says the opposite by negation. A sentence giving the claim's digits another scale word or
unit is aligned with it from a lower cosine (`unit_conflict_sim`). A name missing from the aligned
sentence vetoes only a fact with a number whose name no passage gives at all (`unattested`: "born
in 1778 in Paris" where the passage states 1778 and never names Paris; a paraphrase names things
its own way, but an invented birthplace is the small generator's commonest false date line).

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
from .quantities import quantities
from .text import fold, name_words, numbers, split_sentences, word_keys
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


def vetoed(verdict: Verdict) -> bool:
    """Whether `verdict` is one the veto overruled (its score stays the judge's, capped at 0.49:
    the label and `veto_reason` are what count)."""
    return verdict.label == UNSUPPORTED and (verdict.backend or "").endswith("+veto")


def veto_reason(verdict: Verdict) -> str:
    """Why the veto overruled `verdict` (its rationale before the judge's own)."""
    return (verdict.rationale or "").split(" | ")[0]


class ContradictionVeto:
    """`base`'s verdicts, each overruled to unsupported where `aligner` finds a hard contradiction."""

    def __init__(self, base, aligner: AlignmentChecker):
        self.base, self.aligner = base, aligner
        self.name = f"{getattr(base, 'name', type(base).__name__)}+veto"

    def contradiction(self, claim: Claim, evidence: Sequence[Evidence]) -> str | None:
        """Why the best-aligned evidence sentence contradicts the claim, or None."""
        cfg = self.aligner.config
        spans = self.aligner.spans(claim, evidence)
        close = [s for s in spans if s.sim >= cfg.support_sim]
        if any(s.clean(cfg) for s in close):
            return None
        # a number of the claim's kind it lacks (an extra number beside the claim's own is none),
        # another scale word, unit or era, or negation; the claim's digits with another scale word
        # or unit tie a span to it from a lower cosine
        hard = [s for s in close if (s.conflicting_numbers and s.missing_numbers) or s.conflicting_units
                or s.negation_mismatch]
        hard += [s for s in spans if s.written_conflict and cfg.unit_conflict_sim <= s.sim < cfg.support_sim]
        if not hard:
            return self.unattested(claim, evidence, close)
        best = max(hard, key=lambda s: s.sim)
        if best.conflicting_units:
            why = f"evidence has {', '.join(best.conflicting_units)}"
        elif best.conflicting_numbers and best.missing_numbers:
            why = f"evidence has {', '.join(best.conflicting_numbers)} where the claim has {', '.join(best.missing_numbers)}"
        else:
            why = "negation differs from evidence"
        return f"contradicted: {why} (cos {best.sim:.2f}): {best.text[:160]}"

    @staticmethod
    def unattested(claim: Claim, evidence: Sequence[Evidence], close: Sequence) -> str | None:
        """Why a dated or counted fact is given a name no passage gives ("born in 1778 in Paris"
        against a sentence stating 1778 in a passage that never names Paris), or None. Names of
        the claim's subject are the binding's to judge, and a capitalized first word is as often
        no name ("Born in 1819, ...")."""
        if not quantities(claim.text):
            return None
        given = set().union(*(word_keys(e.text + " " + e.title) for e in evidence))
        subject = subject_names(claim.text) | word_keys((claim.text.split() or [""])[0])
        for span in sorted(close, key=lambda s: -s.sim):
            if span.missing_numbers:
                continue
            absent = {n for n in span.missing_names if n not in given and n not in subject}
            if absent:
                words = sorted({w for w in name_words(claim.text) if fold(w) in absent})
                return (f"unattested: the evidence states its numbers but never names {', '.join(words)} "
                        f"(cos {span.sim:.2f}): {span.text[:160]}")
        return None

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
