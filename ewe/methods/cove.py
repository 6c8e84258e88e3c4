"""CoVe, Chain-of-Verification (Dhuliawala et al., 2023), "factor+revise", as a baseline
that runs through `EWE.generate()` with `method: cove`.

Per prompt, all with the same generator and its plain decoding (no working memory, except
for the verification answers' passages with `cove.passages_placement: memory`):

1. baseline: the prompt answered with the decoding section's settings;
2. plan: the model lists verification questions about the baseline's claims; a list that
   cannot be parsed falls back to one "Is it true that <sentence>?" per baseline sentence
   (recorded in the trace); at most `cove.max_questions`;
3. factored execution: each question answered in a fresh prompt, without the baseline
   (greedy, `cove.answer_tokens`); with `cove.retrieval`, `cove.top_k` passages retrieved
   for that question, prepended to its prompt or put in memory;
4. revise: each answer cross-checked against the baseline sentence it is about (the one
   matching most of the question's content words), then the final response written
   from the prompt, the baseline, the verified pairs and the inconsistencies found (the
   decoding section's settings again).

Stage prompts live in `cove_prompts.py`.
"""
from __future__ import annotations

import time
from typing import Literal

from pydantic import Field

from ..settings import Settings
from ..controller.trace import Trace
from ..result import GenerationResult
from ..stats import CoVeStats, Timings
from ..verify.text import content_keys, split_sentences
from . import cove_prompts as P
from .calls import text_tokens, without_repeats
from .registry import Method

STAGES = ("retrieve", "baseline", "plan", "answer", "check", "revise")


def _match(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return long.startswith(short) and len(short) >= 3  # "die" ~ "died", "chemist" ~ "chemistry"


def claim_for(question: str, sentences: list[str], baseline: str, prompt: str = "") -> str:
    """The baseline sentence a question is about: the one matching most of the question's
    content words (the prompt's own words, e.g. the topic's name, left out when anything
    else is left), the first on ties."""
    if not sentences:
        return baseline.strip()
    q = content_keys(question)
    q = (q - content_keys(prompt)) or q
    keys = [content_keys(s) for s in sentences]
    score = [sum(any(_match(w, k) for k in ks) for w in q) for ks in keys]
    return sentences[max(range(len(sentences)), key=lambda i: (score[i], -i))].strip()


class CoveConfig(Settings):
    """The CoVe baseline (Chain-of-Verification, Dhuliawala et al. 2023), factor+revise.

    Used only with `method: cove`: baseline answer, planned verification questions, each
    answered on its own (optionally with retrieved passages), a cross-check per answer,
    and a revised answer. Question, answer and check stages decode greedily; the baseline
    and the revised answer use the decoding section.
    """

    retrieval: bool = Field(False, description="answer each verification question with passages retrieved for it")
    top_k: int = Field(3, ge=1, le=64, description="passages retrieved per verification question")
    passages_placement: Literal["memory", "prompt"] = Field(
        "prompt", description='"prompt": the passages as text in the prompt; "memory": one memory unit each'
    )
    max_questions: int = Field(8, ge=1, le=100, description="verification questions kept, first ones first")
    question_tokens: int = Field(128, ge=8, le=32_768, description="tokens for the planned list of questions")
    answer_tokens: int = Field(48, ge=1, le=32_768, description="tokens for each verification answer")
    check_tokens: int = Field(8, ge=1, le=1024, description="tokens for each consistency judgement")


class CoVe(Method):
    """Runs prompts through CoVe factor+revise with the Runtime's model, tokenizer and datastore."""

    name = "cove"
    section = "cove"
    Options = CoveConfig

    @classmethod
    def check_config(cls, config) -> None:
        cove, ret = config.cove, config.retrieval
        if cove.retrieval and ret.source is None:
            raise ValueError("cove.retrieval needs a retrieval.source (e.g. 'embedded' or a datastore folder)")
        if cove.passages_placement == "memory":
            if ret.placement == "prompt":
                raise ValueError("cove.passages_placement 'memory' conflicts with retrieval.placement 'prompt'; "
                                 "set retrieval.placement to 'memory' (cove.passages_placement decides for CoVe)")
            if cove.retrieval and cove.top_k > config.memory.retrieval_units:
                raise ValueError(f"cove.top_k={cove.top_k} passages do not fit "
                                 f"memory.retrieval_units={config.memory.retrieval_units}")

    def __init__(self, runtime):
        super().__init__(runtime)
        self.cfg = runtime.config.cove

    def check_inputs(self, prompts: list[str], dec) -> None:
        """The baseline's prompt fits the context, before any model work."""
        self.runtime.prepare(prompts, dec.system_prompt, dec.max_new_tokens)

    # -- one model call ---------------------------------------------------------------

    def _call(self, run: "_Run", stage: str, text: str, dec, passages: list[str] | None = None):
        """Plain decoding of `text` (chat template applied), `passages` as memory units if given."""
        offset = self.runtime.config.memory.context_offset(bool(passages))
        t0 = time.perf_counter()
        out = self.runtime.complete(text, dec, f"CoVe {stage}", passages, offset)
        run.timings.add(stage, time.perf_counter() - t0)
        n = len(out.token_ids) + int(out.finish_reason == "eos")  # the end token was decoded too
        run.tokens[stage] += n
        run.trace.advance(n)
        return out

    def _greedy(self, max_new_tokens: int, dec):
        return self.runtime.greedy(dec, max_new_tokens)

    # -- the pipeline -----------------------------------------------------------------

    def run(self, prompt: str, dec, passages: list[str] | None = None) -> GenerationResult:
        """CoVe factor+revise for one prompt. `passages`: the evidence for every verification
        answer in place of retrieval ([] for none); None retrieves per question if cove.retrieval."""
        cfg = self.cfg
        run = _Run()
        t_start = time.perf_counter()

        # 1. baseline
        base = self._call(run, "baseline", prompt, dec)
        baseline = base.text.strip()
        run.trace.add("cove_baseline", text=base.text, tokens=len(base.token_ids), finish_reason=base.finish_reason)

        # 2. plan verification questions
        sentences = [s.strip() for s in split_sentences(baseline)]
        questions: list[tuple[str, str | None]] = []  # (question, the sentence it came from, if known)
        plan_text, fallback = "", False
        if baseline:
            plan = self._call(run, "plan", P.plan_prompt(prompt, baseline), self._greedy(cfg.question_tokens, dec))
            plan_text = plan.text
            questions = [(q, None) for q in P.parse_questions(plan_text)]
            if not questions:
                fallback = True
                questions = [(q, s) for q, s in P.fallback_questions(baseline)]
        found = len(questions)
        questions = questions[: cfg.max_questions]
        run.trace.add("cove_questions", questions=[q for q, _ in questions], fallback=fallback, found=found,
                      dropped=found - len(questions), plan=plan_text)

        # 3. factored execution: each question on its own, baseline not in context
        use_evidence = passages is not None or cfg.retrieval
        in_memory = cfg.passages_placement == "memory"
        answer_dec = self._greedy(cfg.answer_tokens, dec)
        pairs, retrieved = [], {}
        for i, (question, source) in enumerate(questions, 1):
            hits, texts = [], []
            if passages is not None:
                texts = list(passages)
            elif cfg.retrieval:
                t0 = time.perf_counter()
                [hits] = self.runtime.retrieve([question], k=cfg.top_k)
                run.timings.add("retrieve", time.perf_counter() - t0)
                texts = [h.text for h in hits]
                for h in hits:
                    retrieved.setdefault(h.id, h.to_dict())
            query = P.answer_prompt(question)
            if texts and not in_memory:
                query = self.runtime.prompt_with_passages(query, texts)
            ans = self._call(run, "answer", query, answer_dec, texts if in_memory else None)
            answer = P.strip_label(ans.text).strip()
            run.trace.add("cove_answer", index=i, question=question, answer=answer, tokens=len(ans.token_ids),
                          placement=(cfg.passages_placement if use_evidence else None),
                          passages=[h.to_dict(text=True) for h in hits] if hits else [{"text": t} for t in texts])
            pairs.append({"question": question, "answer": answer,
                          "claim": source or claim_for(question, sentences, baseline, prompt)})

        # 4a. cross-check each verified answer against the baseline's claim
        check_dec = self._greedy(cfg.check_tokens, dec)
        for i, pair in enumerate(pairs, 1):
            out = self._call(run, "check", P.check_prompt(pair["claim"], pair["question"], pair["answer"]), check_dec)
            pair["judgement"] = P.parse_judgement(out.text)
            run.trace.add("cove_check", index=i, question=pair["question"], answer=pair["answer"],
                          claim=pair["claim"], judgement=pair["judgement"], reply=out.text.strip())

        # 4b. the revised response
        inconsistent = [p["question"] for p in pairs if p["judgement"] == "inconsistent"]
        if pairs:
            final = self._call(run, "revise", P.revise_prompt(prompt, baseline, pairs), dec)
            text = P.strip_label(final.text)  # small models may echo "Revised answer:"
            run.trace.add("cove_revise", text=text, tokens=len(final.token_ids), finish_reason=final.finish_reason,
                          inconsistent=inconsistent, skipped=None if text.strip() else
                          "the revision held only the prompt's pattern: the baseline is kept")
            if not text.strip():
                final, text = base, base.text
        else:
            final, text = base, base.text
            run.trace.add("cove_revise", text=text, tokens=len(final.token_ids), finish_reason=final.finish_reason,
                          inconsistent=[], skipped="no verification questions: the baseline is kept")

        token_ids, logprobs = list(final.token_ids), list(final.logprobs)
        if text.strip() != final.text.strip():  # an echoed label or the prompt's pattern was cut
            token_ids, logprobs = text_tokens(self.runtime, text), []
        unrepeated = without_repeats(self.runtime, text, prompt, run.trace, cut_off=final.finish_reason == "length")
        if unrepeated != text:  # a repeat was cut: the answer's own tokens, no log-probs
            text, token_ids, logprobs = unrepeated, text_tokens(self.runtime, unrepeated), []
        decoded = sum(run.tokens.values())
        run.trace.add("finish", reason=final.finish_reason, new_tokens=len(token_ids), decoded_tokens=decoded)
        total = time.perf_counter() - t_start
        stats = CoVeStats(
            method="cove",
            prompt_tokens=base.stats.get("prompt_tokens", 0),
            new_tokens=len(token_ids),
            decoded_tokens=decoded,
            stage_tokens=dict(run.tokens),
            questions=len(pairs),
            questions_fallback=fallback,
            inconsistent=len(inconsistent),
            unclear=sum(1 for p in pairs if p["judgement"] == "unclear"),
            revised=final is not base,
            **run.timings.as_fields(),
            total_s=round(total, 4),
        )
        return GenerationResult(
            prompt=prompt,
            text=text,
            token_ids=token_ids,
            logprobs=logprobs,
            finish_reason=final.finish_reason,
            memory={},
            retrieved=list(retrieved.values()),
            stats=stats,
            trace=run.trace.to_list(),
            sentences=[],
        )


class _Run:
    """One prompt's bookkeeping: trace, seconds and decoded tokens per stage."""

    def __init__(self):
        self.trace = Trace()
        self.timings = Timings(STAGES)
        self.tokens = {s: 0 for s in STAGES if s != "retrieve"}
