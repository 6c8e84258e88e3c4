"""The offline default checker: align each claim with its best-matching evidence span,
then require that span to carry what the claim asserts.

What it is: a MiniLM similarity between the claim and evidence sentences (or runs of
`window` adjacent ones; 1 by default), plus hard consistency checks on the aligned
span: every number of the claim must appear in it as the same amount (scale words, units and
eras read by `quantities`: "7 million" is "7,000,000", "62 miles" is "100 km"),
every capitalized name of the claim must appear in it or in the passage title (names
in the claim's subject may be anywhere in the passage when the span's subject is a
pronoun: "She won ..."), and the claim and the clause of the span that it matches must
agree on negation. A claim is supported when some span passes every check at cosine
>= support_sim (0.60).
What it is not: an entailment model. It cannot see a paraphrased relation that
reverses meaning without a negation word ("preceded" vs "followed"), and it rejects
true claims phrased with names or numbers the evidence writes differently.
support_sim and window were chosen on the labelled set's tune split only
(`benchmarks/checker_accuracy.py --split tune --tune`: a plateau at 0.60-0.70, window 1).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .embedding import Encoder, default_encoder
from .claims import find_subject
from .quantities import quantities
from .text import content_keys, fold, is_negated, name_words, split_sentences, word_keys
from .types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Claim, Evidence, Verdict


@dataclass
class AlignmentConfig:
    support_sim: float = 0.60  # cosine(claim, span) needed to call a clean span support
    contradict_sim: Optional[float] = None  # a failing span this close is a contradiction (None: support_sim)
    window: int = 1  # spans are runs of 1..window adjacent sentences of one passage
    max_missing_names: int = 0  # claim names allowed to be absent from span + title
    max_spans_per_passage: int = 24
    # a span giving the claim's digits another scale word or unit is aligned with it from this
    # cosine ("330 feet tall" against "It is 330 metres tall and weighs 10,100 tonnes": 0.48)
    unit_conflict_sim: float = 0.40


@dataclass
class Span:
    """One candidate evidence span and how the claim fares against it."""

    passage: int
    text: str
    sim: float
    width: int = 1  # sentences in the span
    missing_numbers: list[str] = field(default_factory=list)
    conflicting_numbers: list[str] = field(default_factory=list)  # span numbers of the same kind the claim lacks
    missing_names: list[str] = field(default_factory=list)
    negation_mismatch: bool = False
    conflicting_units: list[str] = field(default_factory=list)  # "3.69 million" against "3.69 billion", km against mi
    written_conflict: bool = False  # a conflicting_units entry whose scale or unit both sides write (not an era)

    def clean(self, cfg: AlignmentConfig) -> bool:
        return not self.missing_numbers and len(self.missing_names) <= cfg.max_missing_names and not self.negation_mismatch


def claim_names(text: str) -> set[str]:
    return {fold(w) for w in name_words(text)}


ANAPHORS = {"he", "she", "it", "they", "his", "her", "its", "their", "this", "these", "the"}
_CLAUSE_BREAK = re.compile(r"[,;:()]|\s(?:but|while|whereas|although|though)\s")


def subject_names(text: str) -> set[str]:
    """Names in the grammatical subject of `text` ("Curie" in "In 1903, Curie won")."""
    span = find_subject(text)
    return claim_names(text[span[0]:span[1]]) if span else set()


def anaphoric_subject(text: str) -> bool:
    """The sentence's subject is a pronoun or a name-less definite phrase ("She", "The
    city"): it refers to the passage's topic, named elsewhere."""
    span = find_subject(text)
    if not span:
        return False
    subj = text[span[0]:span[1]]
    first = subj.split()[0].lower() if subj.split() else ""
    return first in ANAPHORS and not name_words(subj)


def negated_near(span: str, claim_keys: set[str]) -> bool:
    """Whether a clause of `span` that shares most of its content with the claim is
    negated: a negation in an unrelated clause ("..., but Gandhi did not ...") is not
    a contradiction of the claim."""
    for clause in _CLAUSE_BREAK.split(span):
        keys = content_keys(clause)
        if keys and len(keys & claim_keys) >= 0.5 * len(keys) and is_negated(clause):
            return True
    return False


class AlignmentChecker:
    """Embedding alignment + number / name / negation checks; no download, no GPU."""

    name = "alignment"

    def __init__(self, config: Optional[AlignmentConfig] = None, encoder: Optional[Encoder] = None):
        self.config = config or AlignmentConfig()
        self._encoder = encoder

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = default_encoder()
        return self._encoder

    # -- features -----------------------------------------------------------------
    def _spans(self, evidence: Sequence[Evidence]) -> list[tuple[int, int, int, str]]:
        """(passage, first sentence, width, text) of every run of 1..window sentences."""
        out = []
        for j, ev in enumerate(evidence):
            sents = split_sentences(ev.text) or [ev.text]
            spans = [(j, i, w, " ".join(sents[i:i + w]))
                     for w in range(1, max(1, self.config.window) + 1) for i in range(len(sents) - w + 1)]
            out.extend(spans[: self.config.max_spans_per_passage])
        return out

    def spans(self, claim: Claim, evidence: Sequence[Evidence]) -> list[Span]:
        """Every candidate span with its similarity and failed checks. Sentences are
        embedded once (and cached); a multi-sentence span's vector is the normalized
        mean of its sentences' vectors."""
        cand = self._spans(evidence)
        if not cand:
            return []
        sents = {}
        for j, ev in enumerate(evidence):
            for i, s in enumerate(split_sentences(ev.text) or [ev.text]):
                sents[(j, i)] = s
        keys = list(sents)
        vecs = self.encoder.encode([claim.text] + [sents[k] for k in keys])
        qv, index = vecs[0], {k: vecs[1 + n] for n, k in enumerate(keys)}
        c_qs = quantities(claim.text)
        c_kinds = {q.kind for q in c_qs}
        c_names = claim_names(claim.text)
        c_subject = subject_names(claim.text)
        c_neg = is_negated(claim.text)
        c_content = content_keys(claim.text)
        passage_keys = {j: word_keys(ev.text + " " + ev.title) for j, ev in enumerate(evidence)}
        title_qs = {j: quantities(ev.title) for j, ev in enumerate(evidence)}
        out = []
        for j, i, w, text in cand:
            v = np.sum([index[(j, i + d)] for d in range(w)], axis=0)
            sim = float(v @ qv / max(1e-9, float(np.linalg.norm(v))))
            title = evidence[j].title
            s_qs = quantities(text) + title_qs[j]
            # amounts compared with their scale words, units and eras ("7 million" is "7,000,000")
            missing_qs = [c for c in c_qs if not any(c.same_amount(q) for q in s_qs)]
            conflicts = [(c, q, c.conflicts_with(q)) for c in missing_qs for q in s_qs]
            conflicts = [(c, q, kind) for c, q, kind in conflicts if kind]
            missing = c_names - word_keys(text + " " + title)
            if missing and missing <= c_subject and anaphoric_subject(text):
                missing -= passage_keys[j]  # "Curie won ..." aligned with "She won ..."
            out.append(Span(
                passage=j, text=text, sim=sim, width=w,
                missing_numbers=[c.label for c in missing_qs],
                conflicting_numbers=sorted({q.label for q in s_qs if q.kind in c_kinds
                                            and not any(c.same_amount(q) for c in c_qs)}),
                missing_names=sorted(missing),
                negation_mismatch=c_neg != negated_near(text, c_content),
                conflicting_units=sorted({f"{q.label}, not {c.label}" for c, q, _ in conflicts}),
                written_conflict=any(kind != "era" for _, _, kind in conflicts),
            ))
        return out

    # -- decision -----------------------------------------------------------------
    def decide(self, claim: Claim, evidence: Sequence[Evidence], spans: list[Span]) -> Verdict:
        """supported: a clean span at least support_sim close. unsupported: no clean one,
        but a close span fails a check (the one failing fewest checks is reported).
        not_enough_evidence: nothing close. The score is 0.5 and up for supported; below
        0.5 it tells how close the best clean span came."""
        cfg = self.config
        if not spans:
            return Verdict(claim, NOT_ENOUGH_EVIDENCE, 0.0, [], self.name, rationale="no evidence")
        close = [s for s in spans if s.sim >= cfg.support_sim]
        clean = [s for s in close if s.clean(cfg)]
        if clean:
            best = max(clean, key=lambda s: s.sim)
            score = 0.5 + 0.5 * (best.sim - cfg.support_sim) / max(1e-6, 1.0 - cfg.support_sim)
            return Verdict(claim, SUPPORTED, score, _order(evidence, best.passage), self.name,
                           rationale=f"aligned (cos {best.sim:.2f}): {best.text[:160]}")
        near_clean = max((s.sim for s in spans if s.clean(cfg)), default=0.0)
        score = 0.49 * max(0.0, near_clean) / max(cfg.support_sim, 1e-6)
        contradict = cfg.support_sim if cfg.contradict_sim is None else cfg.contradict_sim
        if close:
            best = min(close, key=lambda s: (len(_problems(s)), -s.sim))
            label = UNSUPPORTED if best.sim >= contradict else NOT_ENOUGH_EVIDENCE
            why = "; ".join(_problems(best))
        else:
            best = max(spans, key=lambda s: s.sim)
            label = NOT_ENOUGH_EVIDENCE
            why = "; ".join([f"no evidence span close enough (best cos {best.sim:.2f} < {cfg.support_sim:.2f})"]
                            + _problems(best))
        return Verdict(claim, label, score, _order(evidence, best.passage), self.name,
                       rationale=f"{why} (cos {best.sim:.2f}): {best.text[:160]}")

    def check_claims(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> list[Verdict]:
        if len(claims) != len(evidence_per_claim):
            raise ValueError("one evidence list per claim is required")
        self.encode_all(claims, evidence_per_claim)
        return [self.decide(c, ev, self.spans(c, ev)) for c, ev in zip(claims, evidence_per_claim)]


    def encode_all(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> None:
        """Every claim and evidence sentence of a call embedded in one batch; spans() then hits the cache."""
        texts = [c.text for c in claims] + [s for ev in evidence_per_claim for e in ev for s in split_sentences(e.text)]
        self.encoder.encode(texts)


def _problems(span: Span) -> list[str]:
    out = []
    if span.missing_numbers:
        extra = f" (evidence has {', '.join(span.conflicting_numbers)})" if span.conflicting_numbers else ""
        out.append(f"number {', '.join(span.missing_numbers)} not in evidence{extra}")
    if span.missing_names:
        out.append(f"name {', '.join(span.missing_names)} not in evidence")
    if span.negation_mismatch:
        out.append("negation differs from evidence")
    return out


def _order(evidence: Sequence[Evidence], first: int) -> list[Evidence]:
    ev = list(evidence)
    return [ev[first]] + ev[:first] + ev[first + 1:] if 0 <= first < len(ev) else ev
