"""A local VeriScore-style factuality score (a reimplementation, not the official VeriScore).

Per response: split into sentences, extract claims from each (with the text before it as
context and the prompt for the subject), check every claim against evidence from the
datastore (plus, when the prompt names a known article, that article), then

    precision = supported / claims
    recall@K  = min(supported / K, 1)
    F1@K      = harmonic mean of the two (0 when nothing is supported)

over the response's *unique* claims: claims that repeat an earlier claim of the same response
(identical after normalization, or entailing each other both ways by the judge, CORE's grouping;
ewe.verify.redundancy) are counted once, so an answer that says a supported sentence six times
scores what it scores saying it once. The raw counts are kept beside the unique ones.
K is the median number of unique claims per response over the dataset (VeriScore's choice: the
fewest claims a response needs for perfect recall). A response with no claims scores 0.
"Supported" is the checker's label; unsupported, not-enough-evidence and failed checks
all count as not supported (failures are flagged in the details).

`vr_efficiency` is Streaming-VR's efficiency relative to Full-VR (Ko et al., 2025).
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from ..verify.text import content_keys, fold, split_sentences, words
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
                    **({"subject_binding": v.details["subject_binding"]}
                       if v.details and v.details.get("subject_binding") else {}),
                    "other_subject": v.label == "supported" and credited_elsewhere(v, prompt),
                }
                for v in check.verdicts
            ],
        })
    return sentences


DEDUP = "core-subject"  # the grouping a details line's unique counts were made with (a rerun redoes older ones)


def mark_duplicates(sentences: list[dict], redundancy, prompt: str | None = None) -> None:
    """Mark each claim that repeats an earlier claim of the response (`duplicate_of`: the sentence
    and claim it repeats, and why). Idempotent. `prompt` names the answer's subject, whose name
    alone never links two claims (Redundancy.links). Which sentences repeat is the scorer's own
    count (defects.py), not this grouping's."""
    from ..verify.claims import prompt_person

    flat = [(si, ci, c) for si, s in enumerate(sentences) for ci, c in enumerate(s["claims"])]
    for _, _, c in flat:
        c.pop("duplicate_of", None)
    grouping = redundancy.group([c["text"] for _, _, c in flat], prompt_person(prompt) if prompt else None)
    for i, (j, why) in grouping.merged.items():
        flat[i][2]["duplicate_of"] = {"sentence": flat[j][0], "claim": flat[j][1], "text": flat[j][2]["text"],
                                      "why": why}


def credited_elsewhere(verdict, prompt: str) -> bool:
    """A supported claim whose deciding passage is about someone else and never names the claim's
    subject: another person's fact credited to this one (what subject binding exists to prevent)."""
    from ..verify.subject import claim_subject, names_subject, passage_subject, same_subject

    if not verdict.evidence:
        return False
    subject = claim_subject(verdict.claim.text, prompt)
    about = passage_subject(verdict.evidence[0])
    if subject is None or about is None or same_subject(subject, about):
        return False
    return not names_subject(verdict.evidence[0].text, subject, about) and not _headed_by(verdict.claim.text, about)


_FIRST_VERB = re.compile(r"\b(?:is|are|was|were|has|have|had|can|could|may|might|will|would|do|does|did)\b")


def _headed_by(claim: str, about: str) -> bool:
    """The claim's subject phrase (its words before the first auxiliary) ends in the passage's
    subject and holds all of it: "Explicit stereotypes are ..." from the article on Stereotype, or
    "Animal drinking is ..." from Drinking, speak of that article's subject, whatever capitalized
    word opens them ("Explicit" is no one else). "Bohr's student Heisenberg was ..." ends in
    someone else and stays another subject's."""
    m = _FIRST_VERB.search(claim)
    lead = words(claim[:m.start()]) if m else []
    keys = content_keys(about)
    return bool(lead and keys) and fold(lead[-1]) in keys and keys <= {fold(w) for w in lead}


def claim_counts(sentences: list[dict]) -> tuple[int, int]:
    """(unique claims, unique supported claims): duplicates marked by `mark_duplicates` are left out."""
    claims = [c for s in sentences for c in s["claims"] if "duplicate_of" not in c]
    return len(claims), sum(1 for c in claims if c["label"] == "supported")


def raw_claim_counts(sentences: list[dict]) -> tuple[int, int]:
    """(claims, supported claims) counting every repeat, as FActScore-style scorers do."""
    claims = [c for s in sentences for c in s["claims"]]
    return len(claims), sum(1 for c in claims if c["label"] == "supported")


def count_fields(sentences: list[dict]) -> dict:
    """The claim counts a details line carries: unique (scored) and raw (defects.py counts the rest)."""
    n, sup = claim_counts(sentences)
    n_raw, sup_raw = raw_claim_counts(sentences)
    return {"n_claims": n, "n_supported": sup, "n_claims_raw": n_raw, "n_supported_raw": sup_raw, "dedup": DEDUP,
            "other_subject_credits": sum(1 for s in sentences for c in s["claims"]
                                         if c.get("other_subject") and "duplicate_of" not in c)}


def vr_efficiency(streaming_refine_tokens: list[float], full_refine_tokens: list[float]) -> float | None:
    """The paper's efficiency of Streaming-VR relative to Full-VR, 1 - T_S / T_F, with T the
    mean refinement tokens per answer over the same prompts; None when Full-VR refined nothing."""
    if not streaming_refine_tokens or not full_refine_tokens:
        raise ValueError("efficiency needs the refinement tokens of both methods, one value per answer")
    t_s = sum(streaming_refine_tokens) / len(streaming_refine_tokens)
    t_f = sum(full_refine_tokens) / len(full_refine_tokens)
    return None if t_f == 0 else 1.0 - t_s / t_f
