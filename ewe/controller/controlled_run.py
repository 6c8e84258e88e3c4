"""EWE's controller: pause, refresh memory, fact-check, backtrack (section 3.1), as a hook of
the one token loop (engine/loop.py), which decodes.

One prompt at a time. Each sampled token is first added to the text; pauses due at that
point run before the token is fed to the model, so the token and everything after it
see a refreshed memory, while the context already in the cache is kept (the paper's
refresh, docs/DESIGN.md section 2). A sentence that fails its check is removed by cropping
the cache to its first token, the checker's feedback enters the feedback pool, and the
sentence is written again; retries per sentence and backtracks per prompt are bounded.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import torch

from ..engine import DecodingSession, Hook, Rewind, Sampler, TokenLoop
from ..result import GenerationResult
from ..stats import ControlledStats
from ..verify.types import UNSUPPORTED
from .feedback import feedback_messages
from .schedule import PauseSchedule
from .sentences import Sentence, SentenceTracker
from .trace import Trace, check_event


@dataclass
class Attempt:
    """One written version of the sentence starting at a given token."""

    tokens: list[int]
    logprobs: list[float]
    entropies: list[float]
    text: str
    unsupported: int


class ControlledRun(Hook):
    """One prompt's controlled generation: a hook of the token loop (built and run by `EWEMethod.run`).

    It sees each token the loop adds, runs the pauses that are due, and answers with a
    `Rewind` when a sentence is to be written again."""

    def __init__(self, runtime, fact_checker, prompt: str, dec, passages: list[str] | None):
        self.runtime, self.checker, self.prompt, self.dec = runtime, fact_checker, prompt, dec
        self.cfg = runtime.config.controller
        self.trace = Trace()
        self.memory = runtime.new_memory()
        self.tracker = SentenceTracker(runtime.tokenizer)
        c = self.cfg
        self.schedules = {
            "retrieval": PauseSchedule("retrieval", c.retrieval_trigger, c.retrieval_interval, c.entropy_threshold,
                                       c.min_prob_threshold),
            "verification": PauseSchedule("verification", c.verify_trigger, c.verify_interval, c.entropy_threshold,
                                          c.min_prob_threshold),
        }
        self.attempts: dict[int, list[Attempt]] = {}
        self.settled: set[tuple[int, tuple[int, ...]]] = set()  # sentences kept after their retries ran out
        self.rewritten_after_retrieval: set[int] = set()
        self.checks: dict[tuple[int, str], dict] = {}  # last check of each (start, text)
        self.backtracks = 0
        self.decoded = 0
        self.seconds = {"retrieve": 0.0, "encode": 0.0, "check": 0.0}
        self.retrieved: list[dict] = []
        self.initial_passages = passages
        self.in_prompt: set[str] = set()  # passages the prompt already holds as text: never a unit as well

    # -- memory ------------------------------------------------------------------------

    def _memory_changed(self, why: str) -> None:
        if self.session is not None:
            self.session.set_memory(self.memory.state(), reencode=self.runtime.config.memory.reencode_context)
        self.trace.add("memory", why=why, pools=self.memory.describe(), units=len(self.memory))

    def _add_units(self, texts: list[str], pool: str, meta: list[dict], why: str) -> dict:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            if pool == "feedback":  # the checker's evidence is cut to the unit size on purpose
                warnings.simplefilter("ignore")  # passages (given or retrieved) keep their truncation warning
            change = self.memory.add(texts, pool=pool, meta=meta)
        self.seconds["encode"] += time.perf_counter() - t0
        if change["added"] or change["evicted"]:
            self._memory_changed(why)
        return change

    def _retrieve(self, query: str, why: str, into_prompt: bool = False) -> list:
        """Search; the hits become retrieval units, or (`into_prompt`) are only returned and traced."""
        t0 = time.perf_counter()
        hits = self.runtime.retrieve([query])[0]
        t1 = time.perf_counter()
        self.seconds["retrieve"] += t1 - t0
        if into_prompt:
            self.trace.add("retrieve", why=why, query=query, hits=[h.to_dict() for h in hits], placement="prompt")
            return hits
        event = self.trace.add("retrieve", why=why, query=query, hits=[h.to_dict() for h in hits], added=[], evicted=[], present=[])
        hits = [h for h in hits if h.text not in self.in_prompt]
        if hits:
            meta = [{"title": h.title, "score": round(float(h.score), 4)} for h in hits]
            change = self._add_units([h.text for h in hits], "retrieval", meta, f"retrieval ({why})")
            event.update(added=change["added"], evicted=change["evicted"], present=change["present"])
        event["seconds"] = {"search": round(t1 - t0, 4), "encode": round(time.perf_counter() - t1, 4)}
        return hits

    # -- backtracking --------------------------------------------------------------------

    def _backtrack(self, start: int, why: str, attempt: int, feedback: list[dict],
                   restore: Attempt | None = None) -> Rewind:
        """Remove the text from token `start` on (the loop crops it), then put `restore` back if given."""
        for sched in self.schedules.values():
            sched.forget_from(start)
        self.attempts = {s: a for s, a in self.attempts.items() if s <= start}
        self.backtracks += 1
        self.trace.add("backtrack", why=why, start_token=start, removed_tokens=len(self.tracker.tokens) - start,
                       removed_text=self.tracker.decode(start), attempt=attempt,
                       feedback=[{k: f[k] for k in ("form", "title", "text")} for f in feedback])
        if restore is None:
            return Rewind(start)
        return Rewind(start, restore.tokens, restore.logprobs, restore.entropies)

    def _on_failed(self, sentence: Sentence, check) -> Rewind | None:
        """Decide what happens to a sentence that failed its check; a Rewind if the text changes."""
        history = self.attempts.setdefault(sentence.start, [])
        t = self.tracker
        history.append(Attempt(t.tokens[sentence.start:sentence.end], t.logprobs[sentence.start:sentence.end],
                               t.entropies[sentence.start:sentence.end], sentence.text, len(check.nonfactual_claims)))
        feedback = feedback_messages(check, self.cfg.feedback, self.memory.pools["feedback"].capacity)
        if self.backtracks >= self.cfg.max_backtracks:
            self.trace.add("retries_exhausted", policy="keep (backtrack budget spent)", kept=sentence.text,
                           attempts=len(history))
            return None
        if feedback:
            self._add_units([f["text"] for f in feedback], "feedback",
                            [{"form": f["form"], "title": f["title"]} for f in feedback], "fact-check feedback")
        repeated = next((i for i, a in enumerate(history[:-1], 1) if a.tokens == history[-1].tokens), None)
        if len(history) <= self.cfg.max_retries and repeated is None:
            self.rewriting = sentence.start
            return self._backtrack(sentence.start, "unsupported claims", len(history), feedback)
        policy = self.cfg.on_retries_exhausted
        if policy == "drop":
            self.trace.add("retries_exhausted", policy="drop", kept="", attempts=len(history),
                           why=f"attempt {len(history)} repeats attempt {repeated}" if repeated else "retries used up")
            return self._backtrack(sentence.start, "retries exhausted: dropped", len(history), feedback)
        best = history[-1]
        if policy == "keep_best":
            best = min(reversed(history), key=lambda a: a.unsupported)  # ties: the latest attempt
        self.settled.add((sentence.start, tuple(best.tokens)))
        self.trace.add("retries_exhausted", policy=policy, kept=best.text, attempts=len(history),
                       unsupported=[a.unsupported for a in history],
                       why=f"attempt {len(history)} repeats attempt {repeated}" if repeated else "retries used up")
        if best is history[-1]:
            return None
        return self._backtrack(sentence.start, "retries exhausted: restoring the best attempt", len(history), [],
                               restore=best)

    # -- pauses ---------------------------------------------------------------------------

    def _pauses(self, final: bool) -> Rewind | None:
        """Run the pauses due now; a Rewind when the text is to change (a backtrack)."""
        sentences, reason = self.schedules["retrieval"].due(final)
        if sentences and not final:
            s = sentences[-1]
            self.trace.add("pause", kind="retrieval", reason=reason, sentence=s.text)
            self._retrieve(f"{self.prompt} {s.text}", "pause")
            if (self.cfg.rewrite_on_retrieval and s.start not in self.rewritten_after_retrieval
                    and self.backtracks < self.cfg.max_backtracks):
                self.rewritten_after_retrieval.add(s.start)
                return self._backtrack(s.start, "rewrite after retrieval", 1, [])
        sentences, reason = self.schedules["verification"].due(final)
        for s in sentences:
            self.trace.add("pause", kind="verification", reason=reason, sentence=s.text)
            t0 = time.perf_counter()
            check = self.checker.check_sentence(s.text, context=self.tracker.decode(0, s.start), prompt=self.prompt)
            self.seconds["check"] += time.perf_counter() - t0
            event = self.trace.add("check", start_token=s.start, **check_event(check))
            event["needs_rewrite"] = rewrite = self._needs_rewrite(check)
            self.checks[(s.start, s.text)] = event
            if rewrite:
                rewind = self._on_failed(s, check)
                if rewind is not None:
                    return rewind
        return None

    def _needs_rewrite(self, check) -> bool:
        if self.cfg.rewrite_when == "contradicted":
            return any(v.error is None and v.label == UNSUPPORTED for v in check.verdicts)
        return check.needs_rewrite

    def _new_sentences(self, sentences: list[Sentence]) -> None:
        if any(s.start == self.rewriting for s in sentences):
            self.rewriting = None  # the rewritten sentence is complete: back to the main sampler
        fresh = [s for s in sentences if (s.start, tuple(self.tracker.tokens[s.start:s.end])) not in self.settled]
        for sched in self.schedules.values():
            sched.add(fresh)

    # -- the loop's hook ----------------------------------------------------------------------

    def sampler(self, loop: TokenLoop) -> Sampler | None:
        return self.retry_sampler if self.rewriting is not None else None

    def on_step(self, loop: TokenLoop) -> None:
        self.decoded = loop.decoded
        self.trace.step_to(loop.decoded)
        for sched in self.schedules.values():
            sched.tick()

    def on_token(self, loop: TokenLoop, row: int, token: int, completed: list[Sentence]) -> Rewind | None:
        self._new_sentences(completed)
        return self._pauses(final=False)

    def on_end(self, loop: TokenLoop, row: int, reason: str) -> Rewind | None:
        if reason == "eos":
            self._new_sentences(self.tracker.finish(complete=True))
        else:  # cut off: a last sentence that is not complete is never checked
            self._new_sentences([s for s in self.tracker.finish(complete=False) if s.complete])
        return self._pauses(final=True)

    def run(self) -> GenerationResult:
        rt, dec, t_start = self.runtime, self.dec, time.perf_counter()
        self.session = None
        text = self.prompt
        if rt.config.retrieval.in_prompt:  # "prompt+memory": the first passages are read as text
            passages = self.initial_passages
            if passages is None:
                hits = self._retrieve(self.prompt, "prompt", into_prompt=True)
                self.retrieved = [h.to_dict() for h in hits]
                passages = [h.text for h in hits]
            self.in_prompt = set(passages)
            text = rt.prompt_with_passages(self.prompt, passages)
        elif self.initial_passages is None and rt.datastore is not None:
            self.retrieved = [h.to_dict() for h in self._retrieve(self.prompt, "prompt")]
        elif self.initial_passages:
            self._add_units(self.initial_passages, "retrieval", [{"title": "given"}] * len(self.initial_passages),
                            "given passages")
        ids = rt.prompt_ids(text, dec.system_prompt)
        offset = rt.config.memory.unit_tokens if self.memory.capacity else 0
        rt.check_lengths([self.prompt], [ids], offset, dec.max_new_tokens)
        self.prompt_len = len(ids)
        state = self.memory.state() if len(self.memory) else None
        self.session = DecodingSession(rt.model, state, offset, rt.config.model.attention_impl)
        self.retry_sampler = None
        if self.cfg.retry_temperature is not None:
            seed = None if dec.seed is None else dec.seed + 1
            self.retry_sampler = Sampler(self.cfg.retry_temperature, self.cfg.retry_top_p,
                                         seed if seed is not None else 0)
        self.rewriting = None  # start token of the sentence being rewritten, until it is complete
        loop = TokenLoop(self.session, Sampler(dec.temperature, dec.top_p, dec.seed), rt.stop_ids,
                         dec.max_new_tokens, records=[self.tracker], hook=self,
                         budget=self.cfg.max_total_tokens or 4 * dec.max_new_tokens)
        loop.run(torch.tensor([ids]))
        self.prefill_s = loop.prefill_s
        return self._result(loop.reasons[0], t_start)

    def _result(self, finish: str, t_start: float) -> GenerationResult:
        t = self.tracker
        total = time.perf_counter() - t_start
        self.trace.add("finish", reason=finish, new_tokens=len(t.tokens), decoded_tokens=self.decoded,
                       backtracks=self.backtracks)
        sentences = []
        cut_off = t.unfinished()
        for s in t.sentences + ([cut_off] if cut_off else []):
            check = self.checks.get((s.start, s.text))
            sentences.append({**s.describe(), "checked": check is not None,
                              "needs_rewrite": check["needs_rewrite"] if check else None,
                              "failed_attempts": len(self.attempts.get(s.start, []))})
        tr = self.trace
        stats = ControlledStats(
            prompt_tokens=self.prompt_len,
            new_tokens=len(t.tokens),
            decoded_tokens=self.decoded,
            pauses_retrieval=tr.count("pause", kind="retrieval"),
            pauses_verification=tr.count("pause", kind="verification"),
            skipped_ticks={k: s.skipped for k, s in self.schedules.items()},
            checks=tr.count("check"),
            failed_checks=sum(1 for e in tr.events if e["type"] == "check" and e["needs_rewrite"]),
            errored_checks=sum(1 for e in tr.events if e["type"] == "check" and e.get("verdict") == "error"),
            backtracks=self.backtracks,
            memory_units=len(self.memory),
            memory_bytes=self.memory.footprint()["bytes"],
            retrieve_s=round(self.seconds["retrieve"], 4),
            encode_s=round(self.seconds["encode"], 4),
            check_s=round(self.seconds["check"], 4),
            total_s=round(total, 4),
            prefill_s=round(self.prefill_s, 4),
            decode_s=round(total - sum(self.seconds.values()) - self.prefill_s, 4),
        )
        return GenerationResult(
            prompt=self.prompt,
            text=t.text,
            token_ids=list(t.tokens),
            logprobs=list(t.logprobs),
            finish_reason=finish,
            memory=self.memory.describe(),
            retrieved=self.retrieved,
            stats=stats,
            trace=tr.to_list(),
            sentences=sentences,
        )
