"""A2R, Ask-Assess-Refine (Lee & Lee, 2024), as a baseline that runs through `EWE.generate()`
with `method: a2r`, on the same generator, checker and datastore as EWE (Algorithm 1):

1. ask: Y_0 = M([p_init; x; e]), an answer citing the documents e as [index] (eq. 1);
   e is the prompt's passages, or retrieval.top_k passages retrieved for it;
2. assess: S_t, three scores in [0, 1] measured on Y_t (eq. 2):
   - correctness: the share of the answer's claims the fact-checker finds supported by
     the datastore (the reference-free stand-in the paper's footnote 4 allows, FActScore-like);
   - citation recall and precision as ALCE defines them, with the fact-checker in place of
     the NLI model: a sentence is recalled when its cited documents together support it; a
     citation is precise when its sentence is recalled and the citation either supports the
     sentence alone or is needed by the others;
   the loop stops once the mean of the three reaches `a2r.stop_threshold`;
3. feedback: F_t = M([p_fb; S_t; x; e; Y_t]) (eq. 3), or with `a2r.feedback: template` written
   from the scores and the failing statements without a model call;
4. refine: Y_t+1 = M([p_refine; x; e; Y_t; F_t]) (eq. 4), for at most `a2r.max_iterations`
   rounds of feedback; the answer returned is Y^ = M([p_refine; x; e; Y_0; F_0; ...; Y_t; F_t])
   (eq. 5, `a2r.final: history`), or the last refinement (`a2r.final: last`). A refinement that
   writes the assessment's score lines instead of an answer (a small model copying the feedback's
   format) is not taken: the answer before it stays, and the rounds stop (stats.stop "echo").

The paper generates with GPT-3.5 at temperature 0.7; here every answer uses the decoding
section (greedy in `ewe eval`) and feedback is greedy. Prompts live in `a2r_prompts.py`.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

from pydantic import Field

from ..settings import Settings
from ..controller.trace import Trace
from ..result import GenerationResult
from ..stats import A2RStats, Timings
from ..verify.types import SUPPORTED
from . import a2r_prompts as P
from .calls import CheckedMethod, checked_spans, text_tokens, without_repeats

STAGES = ("retrieve", "answer", "assess", "feedback")


class A2RConfig(Settings):
    """A2R, Ask-Assess-Refine (Lee & Lee, 2024): cite, score, feed back, refine.

    Used only with `method: a2r` (ewe/methods/a2r.py). Scores are in [0, 1]: correctness (the
    share of claims the checker finds supported), citation recall and precision (ALCE's).
    """

    max_iterations: int = Field(2, ge=1, le=10, description="K: rounds of feedback at most")
    stop_threshold: float = Field(0.8, ge=0.0, le=1.0, description="stop once the mean of the three scores reaches this")
    correctness_threshold: float = Field(0.8, ge=0.0, le=1.0, description="feedback asks to fix correctness below this")
    citation_recall_threshold: float = Field(0.8, ge=0.0, le=1.0, description="... citation recall below this")
    citation_precision_threshold: float = Field(0.8, ge=0.0, le=1.0, description="... citation precision below this")
    feedback: Literal["llm", "template"] = Field(
        "llm", description='"llm": the generator writes the feedback from the scores (eq. 3); "template": written '
                           "from the scores and the failing statements, no model call")
    feedback_tokens: int = Field(96, ge=1, le=32_768, description="tokens for one feedback (greedy)")
    final: Literal["history", "last"] = Field(
        "history", description='"history": the answer is written once more from every draft and its feedback (eq. 5); '
                               '"last": the last refinement (eq. 4) is the answer')
    assess_final: bool = Field(True, description="also score the returned answer (stats.final_scores)")


@dataclass
class Assessment:
    """S_t: the three scores, and the statements behind low ones (for feedback and the trace)."""

    correctness: float
    citation_recall: float
    citation_precision: float
    claims: int = 0
    sentences: int = 0
    citations: int = 0
    unsupported: list[str] = field(default_factory=list)  # claims the datastore does not support
    uncited: list[str] = field(default_factory=list)  # sentences their citations do not support
    imprecise: list[str] = field(default_factory=list)  # "[i]" in a sentence it does not support

    @property
    def scores(self) -> dict[str, float]:
        return {a: getattr(self, a) for a in P.ASPECTS}

    @property
    def mean(self) -> float:
        return statistics.mean(self.scores.values())


class _Run:
    def __init__(self, prompt: str):
        self.prompt = prompt
        self.trace = Trace()
        self.timings = Timings(STAGES)
        self.tokens = {"answer": 0, "feedback": 0}


class A2R(CheckedMethod):
    """Runs prompts through Ask-Assess-Refine with the Runtime's model, checker and datastore."""

    name = "a2r"
    section = "a2r"
    Options = A2RConfig

    def __init__(self, runtime):
        super().__init__(runtime)
        self.cfg = runtime.config.a2r

    # -- model calls -------------------------------------------------------------------------

    def _call(self, run: _Run, stage: str, text: str, dec, what: str):
        t0 = time.perf_counter()
        out = self.runtime.complete(text, dec, f"A2R {what}")
        run.timings.add(stage, time.perf_counter() - t0)
        run.tokens[stage] += len(out.token_ids)
        run.trace.advance(len(out.token_ids) + int(out.finish_reason == "eos"))
        return out

    def _answer(self, run: _Run, iteration: int, kind: str, text: str, dec):
        """(the model call, its answer); None when the reply writes the assessment's score lines
        instead of an answer (traced with echo=True): the answer before it stays."""
        out = self._call(run, "answer", text, dec, kind)
        answer = P.answer_text(out.text)
        echo = kind != "initial" and P.echoes_assessment(answer)
        run.trace.add("a2r_answer", iteration=iteration, kind=kind, text=answer, tokens=len(out.token_ids),
                      finish_reason=out.finish_reason, **({"echo": True} if echo else {}))
        return None if echo else (out, answer)

    # -- assessment ----------------------------------------------------------------------------

    def _supported(self, run: _Run, sentence: str, context: str, evidence: list[str] | None) -> tuple[bool, list]:
        check = self.checker.check_sentence(sentence, context=context, prompt=run.prompt, evidence=evidence)
        return check.factual, check.verdicts

    def assess(self, run: _Run, answer: str, docs: list[str], cut_off: bool = False) -> Assessment:
        """S_t for one answer (see the module docstring); a last sentence cut off by the token
        budget is not assessed, as everywhere in ewe."""
        t0 = time.perf_counter()
        spans = checked_spans(answer, cut_off)
        a = Assessment(0.0, 0.0, 0.0)
        supported = recalled = precise = 0
        for start, end in spans:
            sentence, context = answer[start:end].strip(), answer[:start]
            claim = P.without_citations(sentence)
            if not claim:
                continue
            a.sentences += 1
            _, verdicts = self._supported(run, claim, context, None)  # correctness: against the datastore
            a.claims += len(verdicts)
            for v in verdicts:
                if v.error is None and v.label == SUPPORTED:
                    supported += 1
                else:
                    a.unsupported.append(v.claim.text)
            cited = P.citations(sentence)
            valid = [i for i in cited if 1 <= i <= len(docs)]
            joint = bool(valid) and self._supported(run, claim, context, [docs[i - 1] for i in valid])[0]
            recalled += joint
            if not joint:
                a.uncited.append(claim)
            a.citations += len(cited)
            for i in cited:
                ok = joint and i in valid and (
                    len(valid) == 1
                    or self._supported(run, claim, context, [docs[i - 1]])[0]
                    or not self._supported(run, claim, context, [docs[j - 1] for j in valid if j != i])[0])
                precise += ok
                if not ok:
                    a.imprecise.append(f"[{i}] in: {claim}")
        a.correctness = supported / a.claims if a.claims else 0.0
        a.citation_recall = recalled / a.sentences if a.sentences else 0.0
        a.citation_precision = precise / a.citations if a.citations else 0.0
        run.timings.add("assess", time.perf_counter() - t0)
        return a

    def _feedback(self, run: _Run, iteration: int, answer: str, docs: list[str], s: Assessment, dec) -> str:
        thresholds = {a: getattr(self.cfg, f"{a}_threshold") for a in P.ASPECTS}
        if self.cfg.feedback == "template":
            text = P.template_feedback(s.scores, thresholds, s.unsupported, s.uncited, s.imprecise)
        else:
            prompt = P.feedback_prompt(run.prompt, docs, answer, s.scores, thresholds)
            text = P.strip_label(self._call(run, "feedback", prompt, self.runtime.greedy(dec, self.cfg.feedback_tokens),
                                            "feedback").text)
        run.trace.add("a2r_feedback", iteration=iteration, source=self.cfg.feedback, text=text)
        return text

    # -- the loop --------------------------------------------------------------------------------

    def _documents(self, run: _Run, passages: list[str] | None) -> tuple[list[str], list[dict]]:
        if passages is not None:
            return list(passages), []
        t0 = time.perf_counter()
        [hits] = self.runtime.retrieve([run.prompt])
        run.timings.add("retrieve", time.perf_counter() - t0)
        return [h.text for h in hits], [h.to_dict() for h in hits]

    def run(self, prompt: str, dec, passages: list[str] | None = None) -> GenerationResult:
        """Algorithm 1 for one prompt. `passages`: the documents e; None retrieves retrieval.top_k."""
        cfg, run = self.cfg, _Run(prompt)
        t_start = time.perf_counter()
        docs, hits = self._documents(run, passages)
        out, answer = self._answer(run, 0, "initial", P.init_prompt(prompt, docs), dec)
        drafts: list[tuple[str, str]] = []
        scores: list[dict] = []
        stop = "max_iterations"
        for t in range(cfg.max_iterations):
            s = self.assess(run, answer, docs, cut_off=out.finish_reason == "length")
            scores.append(s.scores)
            run.trace.add("a2r_assess", iteration=t, **{k: v for k, v in asdict(s).items()}, mean=s.mean)
            if s.mean >= cfg.stop_threshold:
                stop = "scores"
                break
            feedback = self._feedback(run, t, answer, docs, s, dec)
            drafts.append((answer, feedback))
            if t + 1 < cfg.max_iterations or cfg.final == "last":
                refined = self._answer(run, t + 1, "refined", P.refine_prompt(prompt, docs, answer, feedback), dec)
                if refined is None:
                    stop = "echo"
                    break
                out, answer = refined
        if drafts and cfg.final == "history":
            from_history = self._answer(run, len(drafts), "final", P.final_prompt(prompt, docs, drafts), dec)
            out, answer = from_history or (out, answer)
        final = self.assess(run, answer, docs, cut_off=out.finish_reason == "length") if cfg.assess_final else None
        if final is not None:
            run.trace.add("a2r_assess", iteration=len(drafts), **asdict(final), mean=final.mean, final=True)
        run.trace.add("finish", reason=out.finish_reason, new_tokens=len(out.token_ids),
                      decoded_tokens=sum(run.tokens.values()))
        stats = A2RStats(
            method="a2r",
            prompt_tokens=len(self.runtime.prompt_ids(P.init_prompt(prompt, docs), dec.system_prompt)),
            new_tokens=len(out.token_ids),
            decoded_tokens=sum(run.tokens.values()),
            stage_tokens=dict(run.tokens),
            iterations=len(drafts),
            stop=stop,
            scores=scores,
            final_scores=final.scores if final is not None else None,
            documents=len(docs),
            **run.timings.as_fields(),
            total_s=round(time.perf_counter() - t_start, 4),
        )
        token_ids, logprobs = list(out.token_ids), list(out.logprobs)
        answer = without_repeats(self.runtime, answer, prompt, run.trace, getattr(self.checker, "extractor", None),
                                 out.finish_reason == "length")
        if answer != out.text.strip():  # an echoed label or a repeat was cut: the answer's own tokens, no log-probs
            token_ids, logprobs = text_tokens(self.runtime, answer), []
        return GenerationResult(prompt=prompt, text=answer, token_ids=token_ids, logprobs=logprobs,
                                finish_reason=out.finish_reason, retrieved=hits, stats=stats,
                                trace=run.trace.to_list())
