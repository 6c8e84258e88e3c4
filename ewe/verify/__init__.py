"""Fact-checking for EWE's controller: is each new sentence supported by evidence?

    types.py         Claim, Evidence, Verdict, SentenceCheck (+ label constants)
    protocols.py     EvidenceSource, Checker, ClaimExtractor protocols; LLM = Callable[[str], str]
    text.py          sentences (pysbd), numbers, names, negation
    claims.py        RuleClaimExtractor (clause splitter), LLMClaimExtractor (VeriScore-style)
    prompts.py       extraction / verification prompts and their parsers
    embedding.py     MiniLM encoder, EmbeddingEvidenceSource, StaticEvidenceSource
    datastore_evidence.py  DatastoreEvidence: evidence from a retrieval datastore (ewe.retrieval)
    alignment.py     AlignmentChecker: the offline default backend (ewe.judge: the trained judge, experimental)
    nli.py           NLIChecker: any local HF sequence-classification NLI checkpoint
    llm_judge.py     LLMJudgeChecker: any llm(prompt) -> str
    openai_http.py   OpenAIChatLLM / http_judge: OpenAI-compatible endpoint over urllib
    tree.py          TreeChecker: ITA, each claim verified through a tree of sub-claims
    subject.py       subject binding: a passage about someone else keeps only what names the claim's subject
    factchecker.py   FactChecker.check_sentence: extractor + evidence + subject binding + backend

Measuring a checker: ewe.eval.checker_accuracy on ewe.data.labelled_set, and ewe.judge.

Importing this package loads neither torch nor sentence-transformers.
"""
from .alignment import AlignmentChecker, AlignmentConfig
from .claims import LLMClaimExtractor, RuleClaimExtractor
from .embedding import EmbeddingEvidenceSource, Encoder, StaticEvidenceSource
from .factchecker import FactChecker
from .llm_judge import LLMJudgeChecker
from .nli import NLIChecker
from .openai_http import LLMCallError, LLMResponseError, OpenAIChatLLM, http_judge
from .protocols import LLM, Checker, ClaimExtractor, EvidenceSource, Extraction
from .types import (
    LABELS, NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Claim, Evidence, Label, SentenceCheck, Verdict,
)


def default_fact_checker(evidence: EvidenceSource | None = None, k: int = 3) -> FactChecker:
    """Rule claim splitter + AlignmentChecker: runs offline on a CPU. (The trained judge,
    ewe.judge, is not the default until it beats this on generated sentences.)"""
    return FactChecker(AlignmentChecker(), evidence=evidence, k=k)


__all__ = [
    "AlignmentChecker", "AlignmentConfig", "Checker", "Claim", "ClaimExtractor", "EmbeddingEvidenceSource",
    "Encoder", "Evidence", "EvidenceSource", "Extraction", "FactChecker", "LABELS", "LLM", "LLMCallError",
    "LLMClaimExtractor", "LLMJudgeChecker", "LLMResponseError", "Label", "NLIChecker", "NOT_ENOUGH_EVIDENCE",
    "OpenAIChatLLM", "RuleClaimExtractor", "SUPPORTED", "SentenceCheck", "StaticEvidenceSource", "UNSUPPORTED",
    "Verdict", "default_fact_checker", "http_judge",
]
