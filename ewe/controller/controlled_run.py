"""EWE's controller: pause, refresh memory, fact-check, backtrack (section 3.1), as a hook of
the one token loop (engine/loop.py), which decodes.

One prompt at a time. Each sampled token is first added to the text; pauses due at that
point run before the token is fed to the model, so the token and everything after it
see a refreshed memory, while the context already in the cache is kept (the paper's
refresh, docs/DESIGN.md section 2). A sentence that fails its check is removed by cropping
the cache to its first token, the checker's feedback enters the feedback pool, and the
sentence is written again; retries per sentence and backtracks per prompt are bounded.
With `rewrite_candidates` > 1 each retry decodes that many rewrites as one batch and the
checker picks among them (rewrites.py).
"""
from __future__ import annotations

from collections import Counter

import time

import torch

from ..engine import BanFirstTokens, Branch, Hook, Rewind, Sampler, TokenLoop
from ..engine.actions import or_else
from ..engine.watch import answer_watchers
from ..judge.checker import shipped_judge
from ..result import GenerationResult
from ..stats import Timings
from ..tokens import line_break_ids, text_ids
from ..verify.degenerate import no_answer
from ..verify.prompt_subject import subject_of
from ..verify.redundancy import Redundancy
from ..verify.subject import off_subject_of
from ..verify.text import ends_sentence
from . import policy, unchecked
from .article_use import ArticleUse
from .feedback import feedback_messages
from .memory_refresh import MemoryRefresh
from .repeat_guard import RepeatGuard
from .rewrites import Attempt, candidate_branch, candidate_rank
from .run_result import run_result
from .schedule import pause_schedules
from .sentence_checks import SentenceChecks
from .sentences import Sentence, SentenceTracker
from .trace import Trace, check_event


class ControlledRun(Hook):
    """One prompt's controlled generation: a hook of the token loop (built and run by `EWEMethod.run`).

    It sees each token the loop adds, runs the pauses that are due, and answers with a
    `Rewind` when a sentence is to be written again."""

    def __init__(self, runtime, fact_checker, prompt: str, dec, passages: list[str] | None):
        self.runtime, self.checker, self.prompt, self.dec = runtime, fact_checker, prompt, dec
        self.cfg = runtime.config.controller
        self.trace = Trace()
        self.tracker = SentenceTracker(runtime.tokenizer)
        self.schedules = pause_schedules(self.cfg)
        self.attempts: dict[int, list[Attempt]] = {}
        self.settled: set[tuple[int, tuple[int, ...]]] = set()  # sentences kept after their retries ran out
        self.rewritten_after_retrieval: set[int] = set()
        self.checks: dict[tuple[int, str], dict] = {}  # last check of each (start, text)
        self.backtracks = 0
        self.decoded = 0
        self.removed = 0  # tokens cut from the answer by backtracks (what retries cost besides candidates)
        # wall time by part (stats.time_parts): "check" is every check, pause and candidate; the others
        # with "check_" split it (claim extraction, evidence search, judge) or name the candidates' share
        self.timings = Timings(("retrieve", "encode", "check", "repeats", "rewrite", "check_candidates",
                                "check_extract", "check_search", "check_judge"))
        self.retrieved: list[dict] = []
        self.initial_passages = passages
        self.banned = BanFirstTokens(self.tracker, runtime.config.controller.min_answer_tokens)  # after `drop`: first tokens of the dropped sentences
        self.candidates = {"decoded": 0, "judged": 0, "tokens": 0}  # candidate rewrites, all retries
        self.repeats_rejected = 0
        self.reject_repeats = runtime.config.checker.reject_repeats
        self.rejected_by_rule: Counter = Counter()
        self.budget_hit = False  # retries spent controller.rewrite_budget
        # with no fact-checking (FLARE: verify_trigger never) new sentences still wait for a repeat check
        self.unverified: list[Sentence] = []
        # what the prompt asks about, resolved once: whom or what retrieved passages must be about
        # (None: any), which sentences are about something else (why_no_answer)
        self.subject = subject_of(prompt)
        subject_name = self.subject.name if self.subject else None
        self.refresh = MemoryRefresh(runtime, self.trace, self.timings, subject_name,
                                     person=bool(self.subject and self.subject.person))
        self.memory = self.refresh.units
        # which claims the answer already holds (the shipped judge, loaded on first use)
        self.repeat_guard = RepeatGuard(Redundancy(shipped_judge), getattr(fact_checker, "extractor", None), prompt,
                                        subject_name, self.tracker, self.checks, self.timings)
        # the memory's version (refresh.version) that each answer token was sampled under:
        # a greedy retry under the same memory as its attempt would write that attempt again
        self.sampled_under: dict[int, int] = {}
        self.sentence_checks = SentenceChecks(fact_checker, prompt, self.timings)

    # -- backtracking --------------------------------------------------------------------

    def backtrack(self, start: int, why: str, attempt: int, feedback: list[dict],
                   restore: Attempt | None = None) -> Rewind:
        """Remove the text from token `start` on (the loop crops it), then put `restore` back if given."""
        if self.focus_from is not None and start < self.focus_from:
            self._unfocus()  # the text the focus followed is cut
        for sched in self.schedules.values():
            sched.forget_from(start)
        self.attempts = {s: a for s, a in self.attempts.items() if s <= start}
        self.sampled_under = {p: v for p, v in self.sampled_under.items() if p < start}
        self.backtracks += 1
        self.removed += len(self.tracker.tokens) - start
        self.trace.add("backtrack", why=why, start_token=start, removed_tokens=len(self.tracker.tokens) - start,
                       removed_text=self.tracker.decode(start), attempt=attempt,
                       feedback=[{k: f[k] for k in ("form", "title", "text")} for f in feedback])
        if restore is None:
            return Rewind(start)
        return Rewind(start, restore.tokens, restore.logprobs, restore.entropies)

    # -- repeats -------------------------------------------------------------------------

    def _on_failed(self, sentence: Sentence, check, repeats: bool = False) -> Rewind | Branch | None:
        """Decide what happens to a sentence that failed its check (or repeats the answer); a
        Rewind if the text changes."""
        history = self.attempts.setdefault(sentence.start, [])
        t = self.tracker
        history.append(Attempt(t.tokens[sentence.start:sentence.end], t.logprobs[sentence.start:sentence.end],
                               t.entropies[sentence.start:sentence.end], sentence.text, len(check.nonfactual_claims)))
        cfg, start = self.cfg, sentence.start
        feedback = [] if repeats else feedback_messages(check, cfg.feedback, self.memory.pools["feedback"].capacity)
        backtracks_left = cfg.max_backtracks - self.backtracks
        if backtracks_left > 0 and not self.candidate_rewrites:  # the paper's retry reads it from memory
            self.refresh.add_feedback(feedback)
        same_as = next((i for i, a in enumerate(history[:-1], 1) if a.tokens == history[-1].tokens), None)
        # the facts the policy reads, each looked up only where it can matter (a spent budget is traced once)
        may_retry = backtracks_left > 0 and not self.candidate_rewrites and len(history) <= cfg.max_retries \
            and same_as is None
        decision = policy.on_failed(policy.Failed(
            attempts=len(history), repeats=repeats, backtracks_left=backtracks_left,
            candidates=self.candidate_rewrites, max_retries=cfg.max_retries,
            budget_spent=backtracks_left > 0 and self.candidate_rewrites and cfg.max_retries >= 1
            and self._budget_spent(),
            same_as=same_as, retry_would_repeat=may_retry and self._retry_would_repeat(sentence)))
        if decision.action == policy.KEEP:
            # a repeat or a sentence that is no answer is never kept: with no backtrack left the answer ends before it
            if repeats or self.why_no_answer(sentence.text, check) or (
                    self.reject_repeats and self.repeat_guard.sentence_repeats(start, sentence.text, check)):
                return self._give_up(start, history, feedback, decision.why, repeats=True)
            self.trace.add("retries_exhausted", policy=f"keep ({decision.why})", kept=sentence.text,
                           attempts=len(history))
            return None
        if decision.action == policy.CANDIDATES:
            in_prompt = list(self.refresh.in_prompt) if self.runtime.config.retrieval.in_prompt else []
            return self._candidate_round(1, start, history, feedback, repeats, self.tracker.decode(0, start),
                                         in_prompt, [])
        if decision.action == policy.RETRY:
            self.rewriting = start
            return self.backtrack(start, decision.why, len(history), feedback)
        return self._give_up(start, history, feedback, decision.why, repeats)

    def _retry_would_repeat(self, sentence: Sentence) -> bool:
        """Whether rewriting `sentence` now would decode it again token for token: the retry is
        greedy, and every token of it was sampled under the memory the model reads now (no
        retrieval or feedback changed it since), so the same context gives the same logits. Half
        the greedy retries of configs/ewe-paper.yaml were such copies, each decoded and judged in vain
        (docs/BENCHMARKS.md). Not with the context re-encoded at a refresh, nor for restored tokens
        (no record of what they were sampled under)."""
        if self.retry_sampler is not None or self.runtime.config.memory.reencode_context:
            return False
        versions = [self.sampled_under.get(p) for p in range(sentence.start, sentence.end)]
        return bool(versions) and all(v == self.refresh.version for v in versions)

    def _give_up(self, start: int, history: list[Attempt], feedback: list[dict], why: str,
                 repeats: bool = False) -> Rewind | None:
        """No attempt passed: the `on_retries_exhausted` policy decides what stays at `start`; after
        a repeat that nothing new replaced, the answer ends there."""
        # a spent budget ends an answer that has something to keep; an empty one may still go on
        then = policy.exhausted(self.cfg.on_retries_exhausted, repeats, budget_spent=self.budget_hit and start > 0)
        best = history[-1]
        if then == "keep_best":
            best = history[policy.best_attempt([a.unsupported for a in history],
                                               [bool(self.why_no_answer(a.text)) for a in history])]
        if then.startswith("keep") and self.reject_repeats and self.repeat_guard.text_repeats(start, best.text)[0]:
            then, why = policy.exhausted(then, repeats, kept_repeats_answer=True), \
                f"{why}; the attempt to keep repeats the answer"
        if then == "stop" and (unstated := self._refusal(start)) is not None:
            # the answer would end here with the article unstated: the sentence is dropped and the answer goes on
            self._refuse(start, unstated, "retries exhausted")
            then = "drop"
        if then in ("drop", "stop"):
            self.trace.add("retries_exhausted", policy=then, kept="", attempts=len(history), why=why)
            if then == "stop":
                rewind = self.backtrack(start, "retries exhausted: the answer stops here", len(history), [])
                rewind.end = True
                return rewind
            self.banned.ban(start, (a.tokens[0] for a in history if a.tokens))
            return self.backtrack(start, "retries exhausted: dropped", len(history), feedback)
        self.settled.add((start, tuple(best.tokens)))
        if best.check is not None:  # a candidate's: the restored sentence keeps the verdict it got
            self.checks[(start, best.text)] = best.check
        self.trace.add("retries_exhausted", policy=then, kept=best.text, attempts=len(history),
                       unsupported=[a.unsupported for a in history], why=why)
        if best is history[-1] and tuple(best.tokens) == tuple(self.tracker.tokens[start:start + len(best.tokens)]):
            return None
        return self.backtrack(start, "retries exhausted: restoring the best attempt", len(history), [],
                               restore=best)

    def _retry_spent(self) -> int:
        """Tokens this answer's retries have cost: candidate rewrites decoded, and tokens cut from
        the answer (decoded, then discarded)."""
        return self.candidates["tokens"] + self.removed

    def _round_rows(self) -> int:
        """Candidates the next round may decode: controller.rewrite_candidates, fewer where what is
        left of controller.rewrite_budget holds fewer rows of rewrite_max_tokens each (so a round
        never runs over it); 0 when the budget is spent."""
        rows, budget = self.cfg.rewrite_candidates, self.cfg.rewrite_budget
        if budget is None:
            return rows
        left = budget * self.dec.max_new_tokens - self._retry_spent()
        return max(0, min(rows, int(left // self.cfg.rewrite_max_tokens)))

    def _budget_spent(self) -> bool:
        """Whether the retries have spent all this answer may spend (controller.rewrite_budget: no
        room left for one more candidate); counted once per answer in stats.rewrite_budget_hit."""
        if self._round_rows() > 0:
            return False
        if not self.budget_hit:
            self.budget_hit = True
            self.trace.add("rewrite_budget", spent=self._retry_spent(),
                           budget=round(self.cfg.rewrite_budget * self.dec.max_new_tokens))
        return True

    def _candidate_round(self, round_: int, start: int, history: list[Attempt], feedback: list[dict], repeats: bool,
                         context: str, in_prompt: list[str], placed: list[str]) -> Branch:
        """Round `round_`: feedback placed, the candidates' Branch, and what to do with them (`_judge_round`).
        placed: the feedback passages given to the candidates as prompt text so far."""
        cfg = self.cfg
        if cfg.feedback_placement == "memory":
            self.refresh.add_feedback(feedback)
        elif feedback:
            placed += [f["text"] for f in feedback if f["form"] != "instruction" and f["text"] not in placed]

        def judge(found: list[Attempt], decoded: int, seconds: float):
            self.timings.add("rewrite", seconds)
            return self._judge_round(found, decoded, round_, start, history, feedback, repeats, context, in_prompt,
                                     placed)

        return candidate_branch(
            self.runtime, self.tracker, start, self.memory, self._round_rows(), self.candidate_sampler,
            cfg.rewrite_max_tokens, judge,
            prompt_passages=(in_prompt + placed) if cfg.feedback_placement == "prompt" else None,
            system_prompt=self.dec.system_prompt, prompt=self.prompt, position_offset=self.offset,
            reuse_prefix=self.refresh.version == self.read_under,
            # a rewrite where an end was refused goes on in the paragraph too (_refuse)
            first_banned=line_break_ids(self.runtime.tokenizer) if start in self.refused_at else frozenset())

    def _judge_round(self, found: list[Attempt], decoded: int, round_: int, start: int, history: list[Attempt],
                     feedback: list[dict], repeats: bool, context: str, in_prompt: list[str], placed: list[str]):
        """Judge a round's candidates: a Rewind to the best that passed, the next round's Branch, or give up."""
        cfg = self.cfg
        self.candidates["decoded"] += len(found)
        self.candidates["tokens"] += decoded
        tried = {tuple(a.tokens) for a in history}
        fresh, judged = [], []
        for c in found:
            if tuple(c.tokens) not in tried:
                tried.add(tuple(c.tokens))
                fresh.append(c)
        written = {_norm(x.text) for x in self.tracker.sentences if x.end <= start}
        self.sentence_checks.check_together([(c.text, context) for c in fresh if _norm(c.text) not in written])
        for c in fresh:
            if _norm(c.text) in written:  # a sentence the answer already has adds nothing: never kept
                judged.append((c, None, False))
                continue
            c_check = self.sentence_checks.check(c.text, context, candidate=True)
            c.unsupported = len(c_check.nonfactual_claims)
            c.check = {**check_event(c_check), "needs_rewrite": True, "candidate": True}
            # a rewrite corrects the sentence only if its claims are supported: one that passes by
            # claiming nothing checkable is filler (list fragments, "Marie Curie:"), never kept
            c.new_supported = self.repeat_guard.new_supported(start, c_check) if self.reject_repeats else None
            judged.append((c, c_check, c_check.verdict == "supported" and not self._needs_rewrite(c_check)
                           and not self.why_no_answer(c.text, c_check) and c.new_supported != 0))
        self.candidates["judged"] += sum(1 for _, chk, _ in judged if chk is not None)
        passing = [(c, chk) for c, chk, ok in judged if ok]
        chosen = max(passing, key=lambda p: candidate_rank(*p)) if passing else None
        self.trace.add("candidates", start_token=start, round=round_, decoded=len(found), placement=cfg.feedback_placement,
                       candidates=[{"text": c.text, "verdict": chk.verdict if chk else "repeats the answer",
                                    "unsupported": c.unsupported, "new_supported": c.new_supported,
                                    "no_answer": self.why_no_answer(c.text, chk), "mean_logprob": round(c.mean_logprob, 4)}
                                   for c, chk, _ in judged],
                       chosen=chosen[0].text if chosen else None)
        checked = [(c, chk) for c, chk, _ in judged if chk is not None]
        if chosen is None:
            history += [c for c, _ in checked]  # what keep_best may fall back on
            if checked:
                closest = min(checked, key=lambda j: j[0].unsupported)[1]
                feedback = feedback_messages(closest, cfg.feedback, self.memory.pools["feedback"].capacity)
        decision = policy.after_round(chosen is not None, bool(checked), round_, cfg.max_retries,
                                      chosen is None and bool(checked) and round_ < cfg.max_retries
                                      and self._budget_spent(), repeats)
        if decision.action == policy.REWRITE:
            c, c_check = chosen
            self.settled.add((start, tuple(c.tokens)))
            self.checks[(start, c.text)] = {**check_event(c_check), "needs_rewrite": False, "candidate": True}
            return self.backtrack(start, decision.why, len(history), feedback, restore=c)
        if decision.action == policy.NEXT_ROUND:
            return self._candidate_round(round_ + 1, start, history, feedback, repeats, context, in_prompt, placed)
        return self._give_up(start, history, feedback, decision.why, repeats)

    # -- checks in batches --------------------------------------------------------------------

    def upcoming_checks(self, completed: list[Sentence]) -> list[tuple[str, str]]:
        """The (sentence, context) pairs a verification pause at this token will check, `completed`
        being what the token completed; nothing changes here. Several rows' checks are then run as
        one batch before each row's hook asks for its own. Interval pauses only (confidence
        triggers are rare and cheap to leave alone)."""
        sched = self.schedules["verification"]
        if self.checker is None or sched.trigger != "interval" or sched.since < sched.interval:
            return []
        t = self.tracker
        fresh = [s for s in completed if (s.start, tuple(t.tokens[s.start:s.end])) not in self.settled]
        return [(s.text, t.decode(0, s.start)) for s in sched.pending + fresh]

    # -- pauses ---------------------------------------------------------------------------

    def _pauses(self, final: bool) -> Rewind | Branch | None:
        """Run the pauses due now; a Rewind when the text is to change (a backtrack)."""
        sentences, reason = self.schedules["retrieval"].due(final)
        if sentences and not final:
            s = sentences[-1]
            self.trace.add("pause", kind="retrieval", reason=reason, sentence=s.text)
            self.refresh.retrieve(f"{self.prompt} {s.text}", "pause")
            if (self.cfg.rewrite_on_retrieval and s.start not in self.rewritten_after_retrieval
                    and self.backtracks < self.cfg.max_backtracks):
                self.rewritten_after_retrieval.add(s.start)
                return self.backtrack(s.start, "rewrite after retrieval", 1, [])
        if self.checker is None:
            return unchecked.unverified_repeat(self) if self.reject_repeats else None
        sentences, reason = self.schedules["verification"].due(final)
        return self._verify(sentences, reason)

    def _verify(self, sentences: list[Sentence], reason: str) -> Rewind | Branch | None:
        """Check the sentences due, in order, until one is to change; a candidate round (a Branch)
        that ends in no change goes on with the sentences after it."""
        for i, s in enumerate(sentences):
            self.trace.add("pause", kind="verification", reason=reason, sentence=s.text)
            check = self.sentence_checks.check(s.text, self.tracker.decode(0, s.start))
            event = self.trace.add("check", start_token=s.start, **check_event(check))
            event["needs_rewrite"] = rewrite = self._needs_rewrite(check)
            repeats = [] if rewrite or not self.reject_repeats else \
                self.repeat_guard.sentence_repeats(s.start, s.text, check)
            if repeats:  # adds nothing to the answer: fails like an unsupported sentence
                event.update(needs_rewrite=True, reason="repeats", repeats=repeats)
                rewrite = True
                self.repeats_rejected += 1
            why = self.why_no_answer(s.text, check)
            if why:  # no answer, whatever its claims (a loop, talk to the user, garbled text, another subject)
                event.update(needs_rewrite=True, reason=why)
                if why == "off_subject":
                    event["about"] = off_subject_of(s.text, self.subject)
                rewrite = True
                self.rejected_by_rule[why] += 1
            self.checks[(s.start, s.text)] = event
            if rewrite:
                action = self._on_failed(s, check, repeats=bool(repeats))
                if action is not None:
                    rest = sentences[i + 1:]
                    return or_else(action, lambda: self._verify(rest, reason))
        return None

    def _from_own_article(self, check) -> bool:
        """Whether every claim of a sentence was judged supported with the pinned subject article as its
        lead evidence: a sentence of the subject's own article, whose grammatical subject may be another's."""
        article = self.refresh.article
        return article is not None and bool(check.verdicts) and all(
            v.supported and v.evidence and v.evidence[0].title == article.title for v in check.verdicts)

    def why_no_answer(self, text: str, check=None) -> str | None:
        """Why a sentence is no answer to the prompt whatever its claims: degenerate text
        (verify/degenerate.py: "loop", "meta", "heading", "garbled") or about another subject ("off_subject",
        verify/subject.py), each where the configuration rejects it. With its `check`: a sentence
        the subject's own pinned article supports claim by claim is never off the subject ("In 1918,
        the Romanovs were murdered" in Nicholas II's answer)."""
        ck = self.runtime.config.checker
        why = no_answer(text, self.prompt, ck.reject_degenerate, ck.reject_off_subject, self.subject)
        if why == "off_subject" and check is not None and self._from_own_article(check):
            return None
        return why

    def _needs_rewrite(self, check) -> bool:
        if self.cfg.rewrite_when == "contradicted":
            return check.contradicted
        return check.needs_rewrite

    def _new_sentences(self, sentences: list[Sentence]) -> None:
        if self.focus_from is not None and any(s.start >= self.focus_from for s in sentences):
            self._unfocus()  # the sentence written in focus is complete: it is checked under the whole memory
        if any(s.start == self.rewriting for s in sentences):
            self.rewriting = None  # the rewritten sentence is complete: back to the main sampler
        fresh = [s for s in sentences if (s.start, tuple(self.tracker.tokens[s.start:s.end])) not in self.settled]
        for sched in self.schedules.values():
            sched.add(fresh)
        if self.checker is None:
            self.unverified += fresh

    # -- the loop's hook ----------------------------------------------------------------------

    def sampler(self, loop: TokenLoop) -> Sampler | None:
        """The answer's own sampler (its request's temperature, top_p and seed, so that a row of a
        batch draws what it draws alone, whatever the other rows ask), or the retry sampler while a
        sentence is being written again."""
        if self.rewriting is not None and self.retry_sampler is not None:
            return self.retry_sampler
        return self.own_sampler

    def on_step(self, loop: TokenLoop) -> None:
        self.decoded += 1  # this answer's own steps (a row that joined a running batch counts from its start)
        self.trace.step_to(self.decoded)
        for sched in self.schedules.values():
            sched.tick()

    def on_token(self, loop: TokenLoop, row: int, token: int, completed: list[Sentence]) -> Rewind | Branch | None:
        if self.subject_found is False and self.cfg.when_subject_missing == "say":
            return self._say_missing()
        self.sampled_under[len(self.tracker.tokens) - 1] = self.refresh.version
        self._new_sentences(completed)
        return self._pauses(final=False) or unchecked.looping_tail(self)

    def _say_missing(self) -> Rewind | None:
        """The datastore has nothing about the prompt's subject: the answer is one plain sentence saying
        so (forced in place of the model's first token, then the answer ends), never another subject's
        facts; no pause runs on it."""
        if self.said_missing:
            return None
        self.said_missing = True
        name = self.subject.name
        text = (f"I found nothing about {name} in my knowledge source, so I cannot tell you facts about "
                f"{name} that I could check.")
        self.trace.add("subject_missing", name=name, text=text)
        return Rewind(0, text_ids(self.runtime.tokenizer, text), end=True)

    def subject_report(self) -> dict:
        """The result's `subject`: the prompt's subject, whether the datastore has it, and its pinned article."""
        if self.subject is None:
            return {}
        out = {"name": self.subject.name, "person": self.subject.person, "found": self.subject_found}
        if self.refresh.article is not None:
            out.update(self.refresh.article.describe())
        return out

    def on_end(self, loop: TokenLoop, row: int, reason: str) -> Rewind | Branch | None:
        if self.said_missing:
            return None
        if reason == "eos":
            self._new_sentences(self.tracker.finish(complete=True))
        else:  # cut off: a last sentence is checked only if it ended before the budget did
            self._new_sentences([s for s in self.tracker.finish(complete=ends_sentence(self.tracker.text)) if s.complete])
        action = self._pauses(final=True)
        if action is None and reason == "eos":
            return self._refuse_end()
        return action

    def _refuse_end(self) -> Rewind | None:
        """The model ended the answer with sentences of the pinned article unstated: go on instead
        (`_refusal`, `_refuse`), the answer kept as it is."""
        position = len(self.tracker.tokens)
        unstated = self._refusal(position)
        if unstated is None:
            return None
        self._refuse(position, unstated, "end of text")
        return Rewind(position)

    def _unfocus(self) -> None:
        self.focus_from = None
        self.refresh.unfocus()

    def _refusal(self, position: int) -> list[str] | None:
        """The pinned article's sentences the answer's first `position` tokens leave unstated
        (article_use.py), where an end there may be refused: at most controller.refuse_end times per
        answer, after a whole sentence, and with room left in decoding.max_new_tokens for one more;
        else None."""
        t = self.tracker
        if (self.article_use is None or self.end_refusals >= self.cfg.refuse_end
                or self.dec.max_new_tokens - position < ROOM_FOR_A_SENTENCE):
            return None
        text = t.decode(0, position)
        if not text.strip() or not ends_sentence(text):
            return None
        checks = [c for s in t.sentences if s.end <= position and (c := self.checks.get((s.start, s.text)))]
        return self.article_use.unstated(checks, text) or None

    def _refuse(self, position: int, unstated: list[str], why: str) -> None:
        """Refuse an end at `position`: the end token and a paragraph break banned there (the answer goes
        on in its paragraph, not with a restart below it), the unstated sentences in focus
        (MemoryRefresh.focus)."""
        self.end_refusals += 1
        self.refresh.focus(self.article_use.title, unstated)
        self.focus_from = position
        self.refused_at.add(position)
        self.banned.ban(position, self.runtime.stop_ids | line_break_ids(self.runtime.tokenizer))
        self.trace.add("end_refused", why=why, refusal=self.end_refusals, of=self.cfg.refuse_end, position=position,
                       unstated=unstated, of_sentences=len(self.article_use.sentences))

    def run(self) -> GenerationResult:
        t_start = time.perf_counter()
        ids = self.prepare()
        session = self.runtime.session(self.memory.state() if len(self.memory) else None, self.offset)
        loop = self.loop(session, [self, self.banned, *answer_watchers(self.trace)])
        self.reads(loop.rows[0])
        loop.run(torch.tensor([ids]))
        return self.result(loop, t_start)

    def reads(self, request) -> None:
        """The answer is written by `request`'s row: the memory's changes from now on go to its RowMemory."""
        self.refresh.row = request.memory

    def result(self, loop: TokenLoop, t_start: float, row: int = 0,
               since: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> GenerationResult:
        """This prompt's answer (run_result.py)."""
        return run_result(self, loop, t_start, row, since)

    def loop(self, session, hooks) -> TokenLoop:
        """The token loop that writes this answer."""
        return answer_loop(self.runtime, self.dec, session, [self.tracker], hooks)

    def prepare(self) -> list[int]:
        """Everything before decoding: the prompt's passages (retrieved, or given) in the prompt or in
        memory, the samplers; the prompt's token ids (`offset`: the memory's positions)."""
        rt, dec = self.runtime, self.dec
        self.refresh.row = None
        self.subject_found: bool | None = None  # whether the datastore has the prompt's subject (None: not asked)
        self.said_missing = False
        self.article_use: ArticleUse | None = None  # what the answer states of the pinned article (refuse_end)
        self.end_refusals = 0
        self.refused_at: set[int] = set()  # positions where an end was refused
        self.focus_from: int | None = None  # where the sentence written in focus starts, while it is
        text_passages = []
        if rt.config.retrieval.in_prompt:  # "prompt+memory": the first passages are read as text
            passages = self.initial_passages
            if passages is None:
                hits = self.refresh.retrieve(self.prompt, "prompt", into_prompt=True)
                self.retrieved = [h.to_dict() for h in hits]
                passages = [h.text for h in hits]
            self.refresh.in_prompt = dict.fromkeys(passages)
            text_passages = passages
        elif self.initial_passages is None and rt.datastore is not None:
            article = self.refresh.pin(self.prompt)
            kept = self.refresh.retrieve(self.prompt, "prompt")
            self.retrieved = [h.to_dict() for h in kept]
            if self.subject is not None:  # no article, and no passage that can speak about the subject
                self.subject_found = article is not None or bool(kept)
            if article is not None and self.cfg.refuse_end:
                self.article_use = ArticleUse(article.title, self.refresh.pinned_chunks(), self.subject.name)
        elif self.initial_passages:
            self.refresh.add(self.initial_passages, "retrieval", [{"title": "given"}] * len(self.initial_passages),
                            "given passages")
        self.offset = rt.config.memory.context_offset()
        [ids] = rt.prepare([self.prompt], dec.system_prompt, dec.max_new_tokens, [text_passages], self.offset)
        self.prompt_len = len(ids)
        self.retry_sampler = None
        self.own_sampler = Sampler(dec.temperature, dec.top_p, dec.seed)
        self.candidate_rewrites = self.cfg.rewrite_candidates > 1 or self.cfg.feedback_placement == "prompt"
        self.candidate_sampler = Sampler(self.cfg.candidate_temperature, self.cfg.retry_top_p,
                                         (dec.seed or 0) + 2, greedy_rows=1)
        if self.cfg.retry_temperature is not None:
            seed = None if dec.seed is None else dec.seed + 1
            self.retry_sampler = Sampler(self.cfg.retry_temperature, self.cfg.retry_top_p,
                                         seed if seed is not None else 0)
        self.rewriting = None  # start token of the sentence being rewritten, until it is complete
        self.read_under = self.refresh.version  # the memory the prompt is read under (the cache's, while unchanged)
        return ids

ROOM_FOR_A_SENTENCE = 24  # tokens: an end is refused only with this many left in max_new_tokens (no sentence cut off)


def answer_loop(runtime, dec, session, records: list | None = None, hooks: list | None = None,
                loop: type[TokenLoop] = TokenLoop) -> TokenLoop:
    """The token loop that writes controlled answers (`records`: its rows' records; none for a
    ContinuousLoop, whose rows join as they free up)."""
    return loop(session, Sampler(dec.temperature, dec.top_p, dec.seed), runtime.stop_ids, dec.max_new_tokens,
                records=records, hooks=hooks, budget=answer_budget(runtime.config, dec))


def answer_budget(config, dec) -> int:
    """The most tokens one answer may sample, discarded ones included (controller.max_total_tokens)."""
    return config.controller.max_total_tokens or 4 * dec.max_new_tokens


def _norm(text: str) -> str:
    return " ".join(text.lower().split())
