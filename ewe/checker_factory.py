"""A FactChecker from the `checker` section of the configuration: every backend, verify's
(alignment, NLI, an LLM judge, ITA's tree, the veto) and the trained judge (ewe.judge).

Above both packages, so that verify never imports the judge that is built on it; heavy
dependencies (transformers for NLI, the network for http) load only when chosen.
"""
from __future__ import annotations

from typing import Optional

from .verify.alignment import AlignmentChecker
from .verify.claims import LLMClaimExtractor, RuleClaimExtractor
from .verify.embedding import Encoder
from .verify.factchecker import FactChecker
from .verify.llm_judge import LLMJudgeChecker
from .verify.protocols import LLM, EvidenceSource


def build_fact_checker(cfg, evidence: Optional[EvidenceSource], generator_llm: Optional[LLM] = None,
                       device: str = "cpu") -> FactChecker:
    """`cfg` is a config.CheckerConfig; `generator_llm` serves checker.llm == "generator"."""

    def llm() -> LLM:
        if cfg.llm == "http":
            from .verify.openai_http import OpenAIChatLLM

            return OpenAIChatLLM(cfg.http_base_url, cfg.http_model, api_key_env=cfg.http_api_key_env,
                                 timeout=cfg.http_timeout_s, max_retries=cfg.http_retries)
        if generator_llm is None:
            raise ValueError("checker.llm 'generator' needs the generator model; none was given")
        return generator_llm

    def judge(name: str):
        backend = backend_named(name)
        if cfg.veto == "contradiction" and name != "alignment":
            from .verify.veto import ContradictionVeto

            return ContradictionVeto(backend, AlignmentChecker(encoder=Encoder(device=device)))
        return backend

    def backend_named(name: str):
        if name == "judge":
            from .judge.checker import JudgeChecker

            return JudgeChecker(cfg.judge, threshold=cfg.judge_threshold)
        if name == "alignment":
            return AlignmentChecker(encoder=Encoder(device=device))
        if name == "nli":
            from .verify.nli import NLIChecker

            return NLIChecker(cfg.nli_model, label_map=cfg.nli_label_map, device=device)
        if name == "llm_judge":
            return LLMJudgeChecker(llm())
        from .verify.openai_http import http_judge

        return http_judge(cfg.http_base_url, cfg.http_model, api_key_env=cfg.http_api_key_env,
                          timeout=cfg.http_timeout_s, max_retries=cfg.http_retries)

    if cfg.backend == "ita":
        from .verify.tree import TreeChecker

        backend = TreeChecker(judge(cfg.ita_base), evidence, llm() if cfg.ita_span == "llm" else None,
                              max_depth=cfg.ita_max_depth, max_children=cfg.ita_max_children, k=cfg.evidence_k,
                              span_accepted=cfg.ita_span_accepted, unsure_below=cfg.ita_unsure_below)
    else:
        backend = judge(cfg.backend)
    extractor = LLMClaimExtractor(llm()) if cfg.extractor == "llm" else RuleClaimExtractor(atomic=cfg.extractor == "atomic")
    return FactChecker(backend, evidence=evidence, extractor=extractor, k=cfg.evidence_k,
                       query_with_prompt=cfg.query_with_prompt, bind_subjects=cfg.bind_subjects)
