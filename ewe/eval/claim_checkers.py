"""What turns one answer into checked claims for `ewe eval`: the scorers `--scorer` names.

* `atomic` (the default): claims from the scorer's own extractor (atomic_facts.py, spaCy's parse:
  one fact per claim, pronouns resolved to the subject), not the loop's rule splitter, each
  checked against the datastore's passages for it plus the prompt's article.
* `rules`: the checker the eval config builds (the loop's rule splitter and its checker),
  kept so figures scored before the atomic extractor can be reproduced and compared.
* `openai`: VeriScore's own prompts on an OpenAI-compatible endpoint (veriscore_openai.py),
  against the same evidence as `atomic`.

Every scorer writes the same per-sentence JSON (metric.check_response's), so duplicates,
defects, coverage and the report read them all alike. A details line records the scorer that
checked it; the Scorer moves lines of another scorer aside instead of mixing them.
"""
from __future__ import annotations

import re
from typing import Protocol

from ..verify.prompt_subject import subject_of
from ..verify.types import Claim, Evidence
from .atomic_facts import atomic_claims, load_model
from .metric import WithArticle, check_response, credited_elsewhere

SCORERS = ("atomic", "rules", "openai")
DEFAULT_SCORER = "atomic"


class ClaimChecker(Protocol):
    name: str

    def check(self, response: str, prompt: str, evidence, topic=None) -> list[dict]:
        """The answer's sentences with their claims' verdicts; `evidence.search(queries, k)` finds
        the passages (the datastore's, with the prompt's article first when it has one); `topic`
        is the prompt's article title, when it names one."""


def answer_subject(topic, prompt: str) -> str | None:
    """Whom or what the answer is about: the prompt's article title without its parenthesis
    ("Michael Jordan (footballer)" -> "Michael Jordan"), else what the prompt asks about."""
    if isinstance(topic, str) and topic.strip():
        return re.sub(r"\s*\([^)]*\)\s*$", "", topic).strip() or topic
    subject = subject_of(prompt)
    return subject.name if subject else None


def evidence_json(evidence: list[Evidence]) -> list[dict]:
    return [{"title": e.title, "text": e.text, "score": round(float(e.score), 4)} for e in evidence[:3]]


class RuleClaims:
    """The eval config's FactChecker (its extractor and checker), one sentence at a time."""

    name = "rules"

    def __init__(self, fact_checker):
        self.fact_checker = fact_checker

    def check(self, response: str, prompt: str, evidence, topic=None) -> list[dict]:
        from ..verify.factchecker import FactChecker

        fc = self.fact_checker
        checker = FactChecker(fc.checker, evidence=evidence, extractor=fc.extractor, k=fc.k,
                              query_with_prompt=fc.query_with_prompt, bind_subjects=fc.bind_subjects)
        return check_response(checker, response, prompt)


class AtomicClaims:
    """Atomic claims (atomic_facts.py), each searched on its own text, judged by `verdicts`
    (an object with check_claims(claims, evidence_per_claim) -> Verdicts, e.g. the alignment
    checker), `k` passages each."""

    name = "atomic"

    def __init__(self, verdicts, k: int = 5):
        self.verdicts = verdicts
        self.k = k

    @property
    def signature(self) -> str:
        return f"atomic+{getattr(self.verdicts, 'name', type(self.verdicts).__name__)}"

    def check(self, response: str, prompt: str, evidence, topic=None) -> list[dict]:
        subject = answer_subject(topic, prompt)
        doc = load_model()(response) if response.strip() else None  # parsed once: sentences and claims
        doc_sentences = [s.text.strip() for s in doc.sents] if doc is not None else []
        claims = atomic_claims(response, subject, doc=doc)
        found = evidence.search([c.text for c in claims], self.k) if claims else []
        verdicts = self.verdicts.check_claims([Claim(c.text) for c in claims], found) if claims else []
        sentences = [{"text": s, "verdict": "not_checkable", "claims": []} for s in doc_sentences]
        for claim, verdict in zip(claims, verdicts):
            sentences[claim.sentence]["claims"].append({
                "text": claim.text, "kind": claim.kind, "label": verdict.label, "score": round(verdict.score, 4),
                "error": verdict.error, "rationale": verdict.rationale, "evidence": evidence_json(verdict.evidence),
                "other_subject": verdict.label == "supported" and credited_elsewhere(verdict, prompt),
            })
        for s in sentences:
            if s["claims"]:
                s["verdict"] = ("supported" if all(c["label"] == "supported" for c in s["claims"])
                                else "unsupported")
        return [s for s in sentences if s["text"]]


def with_article(source, article: Evidence | None):
    """The evidence a prompt's claims are checked against: the datastore's passages (none when
    `source` is None: scored against the article alone), the article first."""
    return WithArticle(source, article) if article is not None else source
