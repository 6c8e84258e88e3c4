"""FactChecker: claim extractor + evidence source + checker backend, for one sentence
at a time, as EWE's controller needs it (section 3.1).

Backend and evidence failures never escape: they become verdicts with `error` set and
label not_enough_evidence, and SentenceCheck.needs_rewrite stays False for them, so the
controller keeps a sentence it could not check.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

from .claims import RuleClaimExtractor
from .protocols import Checker, ClaimExtractor, EvidenceSource, Extraction
from .subject import bind, note_text
from .types import NOT_ENOUGH_EVIDENCE, Evidence, SentenceCheck, Verdict, failed_verdicts


class FactChecker:
    """Checks sentences.

    Args:
        checker: the backend (AlignmentChecker, NLIChecker, LLMJudgeChecker, ...).
        evidence: where passages come from; may be None when `check_sentence` is always
            given `evidence=`.
        extractor: claim extractor; the rule splitter by default.
        k: passages per claim.
        query_with_prompt: search with "prompt + claim" instead of the claim alone.
        bind_subjects: keep only what each passage says about the claim's subject (subject.py)
            before judging, so another person's facts never count as support.
    """

    def __init__(self, checker: Checker, evidence: Optional[EvidenceSource] = None,
                 extractor: Optional[ClaimExtractor] = None, k: int = 3, query_with_prompt: bool = False,
                 bind_subjects: bool = True):
        self.checker = checker
        self.evidence = evidence
        self.extractor = extractor or RuleClaimExtractor()
        self.k = k
        self.query_with_prompt = query_with_prompt
        self.bind_subjects = bind_subjects

    def check_sentence(self, sentence: str, context: Optional[str] = None, prompt: Optional[str] = None,
                       evidence: Optional[Sequence[Evidence | str]] = None) -> SentenceCheck:
        """Extract claims from `sentence` (pronouns resolved from `context`), find
        evidence per claim (or use `evidence` for every claim), and judge them."""
        return self.check_sentences([(sentence, context, prompt)], evidence)[0]

    def check_sentences(self, items: Sequence[tuple[str, Optional[str], Optional[str]]],
                        evidence: Optional[Sequence[Evidence | str]] = None) -> list[SentenceCheck]:
        """`check_sentence` for several (sentence, context, prompt) at once: one evidence search for
        all their claims and one backend call, so the rows of a batch, or a round of candidate
        rewrites, cost the judge one batch. Each check's timings are its share of the batch's."""
        t0 = time.perf_counter()
        extractions = [self._extract(sentence, context, prompt) for sentence, context, prompt in items]
        claims = [c for ex in extractions for c in ex.claims]
        prompts = [prompt for (_, _, prompt), ex in zip(items, extractions) for _ in ex.claims]
        timings = {"extract": time.perf_counter() - t0}
        backend = getattr(self.checker, "name", type(self.checker).__name__)
        verdicts: list[Verdict] = []
        if claims:
            t1 = time.perf_counter()
            per_claim, err = self._evidence(claims, prompts, evidence)
            timings["search"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            verdicts = (failed_verdicts(claims, backend, err) if err else
                        self._bound(claims, per_claim, backend, prompts))
            timings["check"] = time.perf_counter() - t2
        timings["total"] = time.perf_counter() - t0
        share = {part: seconds / len(items) for part, seconds in timings.items()}
        out, at = [], 0
        for (sentence, _, _), ex in zip(items, extractions):
            n = len(ex.claims)
            out.append(SentenceCheck(sentence=sentence, claims=ex.claims, verdicts=verdicts[at:at + n],
                                     extractor=ex.extractor, extraction_fallback=ex.fallback, timings=dict(share)))
            at += n
        return out

    def _extract(self, sentence, context, prompt) -> Extraction:
        try:
            return self.extractor.extract(sentence, context=context, prompt=prompt)
        except Exception as e:  # noqa: BLE001 - a broken extractor must not stop generation
            ex = RuleClaimExtractor().extract(sentence, context=context)
            return Extraction(ex.claims, "rules", fallback=f"extractor failed: {type(e).__name__}: {e}")

    def _evidence(self, claims, prompts, given):
        """The passages for each claim (`prompts`: each claim's prompt), or why there are none."""
        if given is not None:
            ev = [e if isinstance(e, Evidence) else Evidence(text=e) for e in given]
            return [list(ev) for _ in claims], None
        if self.evidence is None:
            return None, "no evidence source configured"
        queries = [f"{prompt.strip()} {c.text}" if self.query_with_prompt and prompt else c.text
                   for c, prompt in zip(claims, prompts)]
        try:
            found = self.evidence.search(queries, self.k)
            if len(found) != len(claims):
                raise ValueError(f"evidence source returned {len(found)} lists for {len(claims)} queries")
            return [list(f) for f in found], None
        except Exception as e:  # noqa: BLE001
            return None, f"evidence search failed: {type(e).__name__}: {e}"

    def _bound(self, claims, per_claim, backend, prompts) -> list[Verdict]:
        """Judge each claim against what its passages say about its subject (`prompts`: each claim's
        prompt, which names whom a pronoun means). A claim all of whose passages were about someone
        else is not enough evidence without asking the backend (a backend shown nothing might still
        guess); notes on what was cut go into the verdict."""
        if not self.bind_subjects:
            return self._judge(claims, per_claim, backend)
        bound = [bind(c.text, ev, prompt) for c, ev, prompt in zip(claims, per_claim, prompts)]
        ask = [i for i, (ev, notes) in enumerate(bound) if ev or not notes]
        judged = dict(zip(ask, self._judge([claims[i] for i in ask], [bound[i][0] for i in ask], backend)))
        out = []
        for i, claim in enumerate(claims):
            notes = bound[i][1]
            v = judged[i] if i in judged else Verdict(claim, NOT_ENOUGH_EVIDENCE, 0.0, [], backend,
                                                      rationale=note_text(notes))
            if notes:
                v.details = {**(v.details or {}), "subject_binding": notes}
                if i in judged and note_text(notes):
                    v.rationale = "; ".join(filter(None, (v.rationale, note_text(notes))))
            out.append(v)
        return out

    def _judge(self, claims, per_claim, backend) -> list[Verdict]:
        if not claims:
            return []
        try:
            verdicts = list(self.checker.check_claims(claims, per_claim))
        except Exception as e:  # noqa: BLE001
            return failed_verdicts(claims, backend, f"backend failed: {type(e).__name__}: {e}", per_claim)
        if len(verdicts) != len(claims) or not all(isinstance(v, Verdict) for v in verdicts):
            return failed_verdicts(claims, backend, f"backend returned {len(verdicts)} verdicts for {len(claims)} claims",
                                   per_claim)
        return verdicts
