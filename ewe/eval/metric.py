"""A local VeriScore-style factuality score (a reimplementation, not the official VeriScore).

Per response: split into sentences, extract claims from each (with the text before it as
context and the prompt for the subject), check every claim against evidence from the
datastore (plus, when the prompt names a known article, that article), then

    precision = supported / claims
    recall@K  = min(supported / K, 1)
    F1@K      = harmonic mean of the two (0 when nothing is supported)

K is the median number of claims per response over the dataset (VeriScore's choice: the
fewest claims a response needs for perfect recall). A response with no claims scores 0.
"Supported" is the checker's label; unsupported, not-enough-evidence and failed checks
all count as not supported (failures are flagged in the details).

`vr_efficiency` is Streaming-VR's efficiency relative to Full-VR (Ko et al., 2025).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from ..verify.text import split_sentences
from ..verify.types import Evidence


@dataclass
class ResponseScore:
    n_claims: int
    n_supported: int
    precision: float
    recall: float
    f1: float


def score(n_claims: int, n_supported: int, K: int) -> ResponseScore:
    """VeriScore's per-response numbers from claim counts."""
    if n_supported > n_claims or n_claims < 0 or n_supported < 0:
        raise ValueError(f"n_supported={n_supported} must be between 0 and n_claims={n_claims}")
    if K < 1:
        raise ValueError(f"K={K} must be at least 1")
    precision = n_supported / n_claims if n_claims else 0.0
    recall = min(n_supported / K, 1.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return ResponseScore(n_claims, n_supported, precision, recall, f1)


def median_k(claim_counts: list[int]) -> int:
    """K: the median claims per response (rounded, at least 1)."""
    if not claim_counts:
        raise ValueError("K needs at least one response")
    return max(1, round(statistics.median(claim_counts)))


class WithArticle:
    """An EvidenceSource that puts a known article first for every claim, then retrieved passages."""

    def __init__(self, source, article: Evidence | None):
        self.source = source
        self.article = article

    def search(self, queries: list[str], k: int) -> list[list[Evidence]]:
        found = self.source.search(queries, k) if self.source is not None else [[] for _ in queries]
        if self.article is None:
            return found
        return [[self.article] + [e for e in row if e.text != self.article.text][: k - 1] for row in found]


def check_response(fact_checker, response: str, prompt: str) -> list[dict]:
    """Sentences of `response`, each with its claims' verdicts and evidence (JSON-ready)."""
    sentences, context = [], ""
    for sentence in split_sentences(response):
        check = fact_checker.check_sentence(sentence, context=context or None, prompt=prompt)
        context = f"{context} {sentence}".strip()
        sentences.append({
            "text": sentence,
            "verdict": check.verdict,
            "claims": [
                {
                    "text": v.claim.text,
                    "label": v.label,
                    "score": round(v.score, 4),
                    "error": v.error,
                    "rationale": v.rationale,
                    "evidence": [{"title": e.title, "text": e.text, "score": round(float(e.score), 4)}
                                 for e in v.evidence[:3]],
                }
                for v in check.verdicts
            ],
        })
    return sentences


def claim_counts(sentences: list[dict]) -> tuple[int, int]:
    claims = [c for s in sentences for c in s["claims"]]
    return len(claims), sum(1 for c in claims if c["label"] == "supported")


def vr_efficiency(streaming_refine_tokens: list[float], full_refine_tokens: list[float]) -> float | None:
    """The paper's efficiency of Streaming-VR relative to Full-VR, 1 - T_S / T_F, with T the
    mean refinement tokens per answer over the same prompts; None when Full-VR refined nothing."""
    if not streaming_refine_tokens or not full_refine_tokens:
        raise ValueError("efficiency needs the refinement tokens of both methods, one value per answer")
    t_s = sum(streaming_refine_tokens) / len(streaming_refine_tokens)
    t_f = sum(full_refine_tokens) / len(full_refine_tokens)
    return None if t_f == 0 else 1.0 - t_s / t_f
