"""The paper's scorer, VeriScore (Song et al. 2024), on a large model behind any OpenAI-compatible endpoint.

Why: a method's score must not come from the checker that steered its generation. Here a large model extracts the
claims and verifies them with VeriScore's own prompts (veriscore_prompts.py, verbatim), against the passages ewe's
evidence supplies; nothing here calls ewe.verify.claims, factchecker, alignment, veto, llm_judge or ewe.judge.
Importing the transport (ewe.verify.openai_http) loads the ewe.verify package, llm_judge included; none of it is used.

Where this departs from VeriScore's code (github.com/Yixiao-Song/VeriScore, veriscore/claim_*.py), and why:
* evidence is ewe's passages, not Google results: a search-result block has a title and content, no link;
* for a long answer the lead sentence is added to the context only when the window lacks it (VeriScore repeats it);
* demonstration labels: "Supported." stays, the others become "Unsupported." (VeriScore compares the file's labels
  with "support", which never matches, so it labels all nine demonstrations "Unsupported.");
* the verdict is the answer's last Supported/Unsupported word, and an answer with neither is an error, not a guess;
* only a leading bullet or "1." is stripped from a claim line (VeriScore also drops every "- " inside it).
"""
from __future__ import annotations

import re
from typing import Optional

from ..verify.openai_http import OpenAIChatLLM
from .atomic_facts import load_model
from .veriscore_prompts import (EXTRACTION_NON_QA_TEMPLATE, EXTRACTION_SYSTEM, VERIFICATION_DEMOS,
                                VERIFICATION_INSTRUCTION_BINARY, VERIFICATION_SYSTEM, VERIFICATION_TASK)

NO_CLAIM = "No verifiable claim."
CONTEXT_BEFORE = 3        # sentences of context before the target (VeriScore: 0-3)
CONTEXT_AFTER = 1         # and after it (0-1)
LONG_ANSWER = 5           # more sentences than this: the lead sentence is context too
MAX_TOKENS = 1024         # VeriScore asks for 1000 tokens, extraction and verification alike
RATIONALE_CHARS = 500
EVIDENCE_SHOWN = 3

_LABEL_WORD = re.compile(r"\b(supported|unsupported)\b", re.IGNORECASE)
_LINE_MARK = re.compile(r"^(?:[-*\u2022]\s+|\d+[.)]\s+)")


def _demo_label(human_label: str) -> str:
    return "Supported." if human_label.strip().lower().startswith("supported") else "Unsupported."


# The instruction with its nine demonstrations, as VeriScore fills it for binary labels (claim, results, label).
VERIFICATION_FEW_SHOT = VERIFICATION_INSTRUCTION_BINARY.format(
    *[part for claim, results, label in VERIFICATION_DEMOS for part in (claim, results, _demo_label(label))])


def snippet(sentences: list[str], i: int) -> str:
    """The text the extractor reads for sentence `i`: up to three sentences before it, the target between <SOS>
    and <EOS>, the one after; in a long answer its lead sentence first, which names whom it is about."""
    before = sentences[max(0, i - CONTEXT_BEFORE):i]
    if len(sentences) > LONG_ANSWER and i > CONTEXT_BEFORE:
        before = [sentences[0]] + before
    parts = before + [f"<SOS>{sentences[i].strip()}<EOS>"] + sentences[i + 1:i + 1 + CONTEXT_AFTER]
    return " ".join(p.strip() for p in parts if p.strip())


def extraction_prompt(sentences: list[str], i: int) -> str:
    return EXTRACTION_NON_QA_TEMPLATE.format(snippet=snippet(sentences, i), sentence=sentences[i].strip())


def parse_claims(answer: str) -> list[str]:
    """The claims of an extraction answer, one a line; "No verifiable claim." anywhere means none (as VeriScore
    reads it). An explanation the model adds ("Note: ...") or an echoed "Facts:" is not a claim."""
    if not answer.strip() or NO_CLAIM in answer:
        return []
    claims = []
    for line in answer.splitlines():
        line = _LINE_MARK.sub("", line.strip()).strip()
        if line and not line.startswith("Note:") and line != "Facts:":
            claims.append(line)
    return claims


def search_results(passages) -> str:
    """The passages as VeriScore shows search results to the verifier."""
    blocks = [f"Search result {n}\nTitle: {(p.title or '').strip()}\nContent: {(p.text or '').strip()}"
              for n, p in enumerate(passages, 1)]
    return "\n\n".join(blocks)


def verification_prompt(claim: str, passages) -> str:
    task = VERIFICATION_TASK.format(claim=claim, search_results=search_results(passages))
    return f"{VERIFICATION_FEW_SHOT}\n\n{task}"


def parse_label(answer: str, claim: str) -> str:
    """"supported" or "unsupported": the answer's last such word. Neither is an error: a verdict guessed from an
    answer the model did not give would move the score without anyone seeing why."""
    words = _LABEL_WORD.findall(answer or "")
    if not words:
        raise ValueError(f"VeriScore verification of claim {claim!r}: the answer has neither Supported nor "
                         f"Unsupported: {answer!r}")
    return words[-1].lower()


class VeriScoreOpenAI:
    """ewe eval's `openai` scorer (a ClaimChecker): claims extracted sentence by sentence and verified one by one,
    each with one call to the model. `llm` extracts; `verify_llm` (default: `llm`) verifies; `evidence_k` passages
    are searched per claim."""

    name = "openai"

    def __init__(self, llm, evidence_k: int = 5, verify_llm=None):
        if evidence_k < 1:
            raise ValueError(f"evidence_k must be at least 1, not {evidence_k}")
        self.llm = llm
        self.verify_llm = verify_llm if verify_llm is not None else llm
        self.evidence_k = evidence_k

    @property
    def signature(self) -> str:
        model = getattr(self.llm, "model", None) or type(self.llm).__name__
        return f"veriscore-openai:{model}"

    def check(self, response: str, prompt: str, evidence, topic=None) -> list[dict]:
        """The answer's sentences with their claims' verdicts, in metric.check_response's shape. `prompt` and
        `topic` are not read: VeriScore's non-QA extraction sees only the answer."""
        sentences = [s.text.strip() for s in load_model()(response).sents] if response.strip() else []
        sentences = [s for s in sentences if s]
        verified: dict[str, dict] = {}  # claim text -> its verdict: a claim stated twice is verified once
        out = []
        for i, sentence in enumerate(sentences):
            claims = []
            for text in parse_claims(self.llm(extraction_prompt(sentences, i))):
                if text not in verified:
                    verified[text] = self.verify(text, evidence)
                done = verified[text]
                claims.append({**done, "evidence": [dict(e) for e in done["evidence"]]})
            verdict = ("not_checkable" if not claims
                       else "supported" if all(c["label"] == "supported" for c in claims) else "unsupported")
            out.append({"text": sentence, "verdict": verdict, "claims": claims})
        return out

    def verify(self, claim: str, evidence) -> dict:
        """One claim against its `evidence_k` passages, as a claim entry of the scorer's JSON."""
        found = evidence.search([claim], self.evidence_k)
        passages = list(found[0]) if found else []
        answer = self.verify_llm(verification_prompt(claim, passages))
        label = parse_label(answer, claim)
        return {"text": claim, "label": label, "score": 1.0 if label == "supported" else 0.0, "error": None,
                "rationale": answer[:RATIONALE_CHARS],
                "evidence": [{"title": e.title, "text": e.text, "score": round(float(e.score), 4)}
                             for e in passages[:EVIDENCE_SHOWN]],
                "other_subject": False}


def build(endpoint: str, model: str, evidence_k: int = 5, api_key_env: Optional[str] = "OPENAI_API_KEY",
          timeout: float = 60.0, max_retries: int = 2, backoff: float = 0.5) -> VeriScoreOpenAI:
    """The scorer on `endpoint` (e.g. http://localhost:8000/v1), the same `model` extracting and verifying, each
    with VeriScore's system message, at temperature 0."""
    def llm(system: str) -> OpenAIChatLLM:
        return OpenAIChatLLM(endpoint, model, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries,
                             backoff=backoff, temperature=0.0, max_tokens=MAX_TOKENS, system=system)

    return VeriScoreOpenAI(llm(EXTRACTION_SYSTEM), evidence_k=evidence_k, verify_llm=llm(VERIFICATION_SYSTEM))
