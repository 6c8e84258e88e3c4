"""EWE as a registered method: plain memory-augmented decoding of a batch (bare and +RA), or,
with the controller on, each prompt through the pause / check / backtrack hook
(ewe/controller/controlled_run.py). Its settings are the configuration's `controller` section."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..settings import Settings
from .registry import Method, run_one

Trigger = Literal["never", "interval", "entropy", "min_prob"]
FeedbackForm = Literal["refuting", "supporting", "instruction"]


class ControllerConfig(Settings):
    """When to pause, and what a pause may do (EWE section 3.1, appendices B and D).

    A pause happens only for a complete sentence not yet seen by that kind of pause.
    "interval" pauses every N generated tokens (the paper's T_r, T_v); "entropy" pauses
    for a sentence whose mean token entropy exceeds `entropy_threshold`; "min_prob" for
    one whose least likely token has probability below `min_prob_threshold`.
    """

    retrieval_trigger: Trigger = Field("never", description="when to refresh the retrieval pool")
    retrieval_interval: int = Field(1, ge=1, le=100_000, description="T_r, tokens between retrieval pauses")
    verify_trigger: Trigger = Field("never", description="when to fact-check new sentences")
    verify_interval: int = Field(8, ge=1, le=100_000, description="T_v, tokens between verification pauses")
    entropy_threshold: float = Field(2.5, ge=0.0, allow_inf_nan=False, description="nats; higher pauses less often")
    min_prob_threshold: float = Field(0.1, gt=0.0, le=1.0, description="higher pauses more often")
    rewrite_on_retrieval: bool = Field(
        False, description="FLARE-style: regenerate the sentence that triggered a retrieval pause, once"
    )
    feedback: list[FeedbackForm] = Field(
        default_factory=lambda: ["refuting", "supporting"],
        description="feedback forms put into the feedback pool after a failed check, first = kept first "
        "(table 4: refuting = passages judging a claim unsupported, supporting = passages judging one supported, "
        "instruction = 'Please refrain from ...')",
    )
    rewrite_when: Literal["not_supported", "contradicted"] = Field(
        "not_supported", description="not_supported: some claim is not supported (the paper's rule, "
        "not-enough-evidence included); contradicted: some claim is judged unsupported by its evidence"
    )
    max_retries: int = Field(2, ge=0, le=20, description="rewrites of one sentence before giving up on it; "
                             "a rewrite identical to an earlier attempt ends the retries at once")
    retry_temperature: float | None = Field(
        None, gt=0.0, le=10.0, description="sample rewrites at this temperature (null: the decoding settings, "
        "so a greedy rewrite changes only through the new memory)"
    )
    retry_top_p: float = Field(0.9, gt=0.0, le=1.0)
    rewrite_candidates: int = Field(
        1, ge=1, le=16, description="rewrites decoded at once as a batch from the cropped cache and judged "
        "together; the supported one the model finds likeliest is kept (1: the paper's one rewrite at a time)"
    )
    candidate_temperature: float = Field(
        0.8, gt=0.0, le=10.0, description="with rewrite_candidates > 1: the first candidate is greedy, the "
        "others sampled at this temperature (with retry_top_p)"
    )
    rewrite_max_tokens: int = Field(64, ge=4, le=1024, description="the longest candidate rewrite, in tokens")
    rewrite_budget: float | None = Field(
        6.0, gt=0, le=1000, description="the most tokens one answer's retries may cost, in multiples of "
        "decoding.max_new_tokens: candidate rewrites decoded (all rows and rounds) plus tokens cut from the answer. "
        "A round decodes only the candidates of rewrite_max_tokens that fit in what is left; once nothing fits, a "
        "sentence that fails gets no candidates and on_retries_exhausted decides at once, a drop becoming a stop where "
        "the answer has a sentence to keep "
        "(stats: rewrite_budget_hit), so no answer decodes more than about (1 + budget) x max_new_tokens. 6: on "
        "100 bio prompts at 128 tokens the default's retries cost a median 1.8x and a p90 6.8x (objects 2.3x, "
        "5.8x), and the costliest answer decoded 4.2x the median answer's tokens; null: no cap"
    )
    feedback_placement: Literal["memory", "prompt"] = Field(
        "memory", description="where the checker's feedback passages go for the rewrite: memory units "
        "(the paper), or text in the prompt of the candidates (which then re-read the prompt once)"
    )
    on_retries_exhausted: Literal["keep_best", "keep_last", "drop", "stop"] = Field(
        "keep_best", description="when no rewrite passes: keep the attempt with the fewest unsupported claims "
        "(never one that looks garbled), the last one, none (drop: the answer goes on from the sentence's "
        "start with another first word), or end the answer before it (stop)"
    )
    min_answer_tokens: int = Field(
        0, ge=0, le=32_768, description="the answer may not end (the model's end-of-text tokens are banned) before "
        "it holds this many tokens, so that an answer does not stop after its first passage's content; 0: it ends "
        "when the model ends it"
    )
    when_subject_missing: Literal["answer", "say"] = Field(
        "answer", description="when the prompt names a subject that has no article in the datastore (none pinned, "
        "with memory.subject_units) and no retrieved passage can speak about it: 'say' answers with one plain "
        "sentence saying so instead of another subject's facts; 'answer' lets the model answer anyway, checked as "
        "always; the result says subject.found false either way"
    )
    refuse_end: int = Field(
        0, ge=0, le=100, description="times an end of text is refused while sentences of the pinned subject article "
        "(memory.subject_units) are unstated, as the checks of the answer's sentences and its words tell "
        "(controller/article_use.py): the end token is banned there and the unstated sentences go into the feedback "
        "pool as one focus unit, so the answer goes on with what memory holds until the article is used or the "
        "token budget is spent; 0: the answer ends when the model ends it"
    )
    max_backtracks: int = Field(12, ge=0, le=1000, description="backtracks allowed per prompt, all sentences together")
    max_total_tokens: int | None = Field(
        None, ge=1, description="tokens decoded per prompt, discarded ones included (default 4 x max_new_tokens)"
    )
    batch_rows: bool = Field(
        False, description="prompts are requests of the engine (engine/engine.py): a batch decodes as the rows of "
        "one loop, each row with its own memory, checks and rewinds, and one prompt as its one row (greedy rows "
        "write what they write one by one; a batch needs decoding.kv_cache dynamic, one prompt with a static "
        "cache runs the one-row loop its CUDA graph is captured for); false: the prompts run one by one, each "
        "a one-row loop"
    )
    max_rows: int | None = Field(
        None, ge=1, le=1024, description="with batch_rows: the most prompts decoded at once, the next joining as "
        "soon as a row ends (continuous batching); null: all the prompts of a call at once"
    )

    @property
    def active(self) -> bool:
        return self.retrieval_trigger != "never" or self.verify_trigger != "never"


class EWEMethod(Method):
    name = "ewe"
    section = "controller"
    Options = ControllerConfig

    @classmethod
    def check_config(cls, config) -> None:
        ctl, ret = config.controller, config.retrieval
        if ctl.active and ret.placement == "prompt":
            raise ValueError("controller pauses need retrieval.placement 'memory' or 'prompt+memory' (feedback goes "
                             "into memory units)")
        if ctl.retrieval_trigger != "never" and ret.source is None:
            raise ValueError("controller.retrieval_trigger needs a retrieval.source")
        if ctl.retrieval_trigger != "never" and config.memory.retrieval_units == 0:
            raise ValueError("controller.retrieval_trigger needs memory.retrieval_units >= 1")

    @classmethod
    def pauses(cls, config) -> bool:
        return config.controller.active

    @classmethod
    def batches(cls, config) -> bool:
        return not config.controller.active or config.controller.batch_rows

    @classmethod
    def joins(cls, config) -> bool:
        return config.controller.active and config.controller.batch_rows

    def joining_loop(self, take, capacity: int, dec, hooks: list = ()):
        from ..controller.controlled_run import ControlledRun
        from ..controller.rows import start_rows

        rt = self.runtime
        checker = rt.fact_checker() if rt.config.controller.verify_trigger != "never" else None

        def controlled(requests: list) -> list:
            for r in requests:
                if r.run is None:  # a client's request; EWE's own batch comes with its runs
                    r.run = ControlledRun(rt, checker, r.prompt, r.decoding or dec, r.passages)
            return requests

        return start_rows(rt, dec, lambda n: controlled(take(n)), capacity, hooks)

    @classmethod
    def checks_itself(cls, config) -> bool:
        return config.controller.verify_trigger != "never"

    def run(self, prompt: str, dec, passages: list[str] | None = None):
        return self.run_batch([prompt], dec, None if passages is None else [passages])[0]

    def run_batch(self, prompts: list[str], dec, rows: list[list[str]] | None) -> list:
        rt = self.runtime
        if not rt.config.pauses:
            return rt.generate_plain(prompts, rows, dec, answer=True)
        from ..controller.controlled_run import ControlledRun

        checker = rt.fact_checker() if rt.config.controller.verify_trigger != "never" else None
        runs = [ControlledRun(rt, checker, p, dec, None if rows is None else rows[i]) for i, p in enumerate(prompts)]
        if rt.config.controller.batch_rows and (len(runs) > 1 or rt.config.decoding.kv_cache == "dynamic"):
            return self._run_as_requests(runs, min(rt.config.controller.max_rows or len(runs), len(runs)), dec)
        # one by one: each prompt a one-row loop (with a static cache, the one whose CUDA graph is captured)
        return [run_one(i, run.run) for i, run in enumerate(runs)]

    def _run_as_requests(self, runs: list, capacity: int, dec) -> list:
        """The prompts' runs as requests of one engine, at most `capacity` rows at once, the next
        joining as soon as a row ends (controller.batch_rows)."""
        from ..engine import Engine, Request
        from ..engine.watch import prompt_watchers

        results: list = [None] * len(runs)
        engine = Engine(self, capacity, dec)
        for i, run in enumerate(runs):
            engine.add_request(Request(run.prompt, watchers=prompt_watchers(i), run=run,
                                       on_done=lambda result, i=i: results.__setitem__(i, result)))
        engine.run()
        return results
