"""Streaming-VR and Full-VR (Ko et al., 2025, "Efficient Real-time Refinement of Language
Model Text Generation"), as baselines that run through `EWE.generate()` with `method:
streaming-vr` or `method: full-vr`, on the same generator, checker and datastore as EWE.

Streaming-VR verifies each sentence as soon as it is complete, against the answer kept so
far, o_t = Verifier([a~_<=t-1, s_t]); a sentence that fails is rewritten once by the
refiner (the generation prompt, a~_<=t-1 and s_t in, one sentence out) and not checked
again (section 3.2); but with checker.reject_repeats a sentence, passed or refined, that adds
nothing to the answer so far ends the answer there (ewe's rule against padding).
- `vr.mode: live` (default): the refined sentence replaces the failed one in the
  generator's context (its cache cropped to the sentence's first token, the refined tokens
  fed in) and generation goes on from the corrected prefix, so an early error no longer
  drags later sentences with it: the method as proposed.
- `vr.mode: offline`: the paper's experimental protocol (section 4.3): the whole answer is
  generated first, then its sentences are verified and refined in order, each against the
  refined prefix; no later sentence is regenerated.

Full-VR generates the whole answer and verifies every sentence (each against the original
sentences before it: the same checks Streaming-VR's offline mode makes when nothing is
refined); if any fails, the refiner rewrites the whole answer (section 3.1).

Where this differs from the paper, on purpose: the verifier is ewe's fact-checker (checker
section, evidence from the datastore) instead of a fine-tuned 7B classifier, and the
refiner is the generator itself with the prompts in `vr_prompts.py` instead of GPT-4o.
`stats["refine_tokens"]` is T_Ref, the tokens the refiner generated for one answer;
`eval.metric.vr_efficiency()` turns the means over a prompt set into 1 - T_S / T_F. An answer assembled
after the fact (offline mode, or Full-VR's refined answer) has the final text's token ids
and no log-probs (`logprobs` is empty): no single model call produced it.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..settings import Settings
from ..controller.sentences import SentenceTracker
from ..controller.trace import Trace, check_event
from ..engine.actions import Hook, Rewind
from ..result import GenerationResult
from ..stats import Timings, VerifyRefineStats
from ..tokens import text_ids
from ..verify.degenerate import no_answer
from ..verify.prompt_subject import subject_of
from ..verify.text import ends_sentence, sentence_spans
from . import vr_prompts as P
from .calls import CheckedMethod, checked_spans, text_tokens, without_repeats

if TYPE_CHECKING:
    from ..engine import TokenLoop

STAGES = ("retrieve", "generate", "check", "refine")
BUDGET_FACTOR = 4  # live mode: the generator decodes at most this many times max_new_tokens in all


class VerifyRefineConfig(Settings):
    """Streaming-VR and Full-VR (Ko et al., 2025): verify, and refine what fails.

    Used only with `method: streaming-vr` or `method: full-vr` (ewe/methods/verify_refine.py).
    The verifier is the checker section's fact-checker; the refiner is the generator with
    a refine prompt, decoding greedily.
    """

    mode: Literal["live", "offline"] = Field(
        "live", description='streaming-vr: "live" refines each sentence in place and generates on from it; '
                            '"offline" (the paper\'s experiments) refines the finished answer\'s sentences in order')
    open_book: bool = Field(False, description="prepend retrieval.top_k passages retrieved for the prompt to the "
                                               "generation prompt (the refiner sees them too); else closed-book")
    sentence_tokens: int = Field(64, ge=1, le=32_768, description="streaming-vr: tokens for one refined sentence")
    answer_tokens: int | None = Field(None, ge=1, le=32_768,
                                      description="full-vr: tokens for the refined answer (default decoding.max_new_tokens)")
    refiner_evidence: bool = Field(False, description="also show the refiner the checker's best evidence per claim "
                                                      "(not in the paper, whose refiner sees the prompt only)")


class _Run:
    """One prompt's bookkeeping: trace, seconds per stage, token and check counts."""

    def __init__(self, prompt: str):
        self.prompt = prompt
        self.subject = subject_of(prompt)  # what its sentences must be about (verify/prompt_subject.py)
        self.trace = Trace()
        self.timings = Timings(STAGES)
        self.decoded = 0  # generator tokens decoded, discarded ones included
        self.refine_tokens = 0
        self.checks = 0
        self.failed = 0
        self.refined = 0
        self.sentences: list[dict] = []
        self.said_texts: list[str] = []  # sentences kept so far, and their claims (what a repeat repeats)
        self.said_claims: list[str] = []
        self.redundancy = None


class VerifyRefine(CheckedMethod):
    """Runs prompts through Streaming-VR or Full-VR with the Runtime's model, checker and datastore."""

    name = "streaming-vr"
    section = "vr"
    Options = VerifyRefineConfig

    def __init__(self, runtime):
        super().__init__(runtime)
        self.cfg = runtime.config.vr

    # -- parts shared by both methods ------------------------------------------------------

    def _generation_prompt(self, run: _Run, passages: list[str] | None) -> tuple[str, list[dict]]:
        """The prompt the answer is generated from (and the refiner sees): with `passages`, or
        with vr.open_book the retrieval.top_k passages retrieved for it, listed before it."""
        hits = []
        if passages is None and self.cfg.open_book:
            t0 = time.perf_counter()
            [found] = self.runtime.retrieve([run.prompt])
            run.timings.add("retrieve", time.perf_counter() - t0)
            hits = [h.to_dict() for h in found]
            passages = [h.text for h in found]
        return self.runtime.prompt_with_passages(run.prompt, list(passages or [])), hits

    def check_sentence(self, run: _Run, sentence: str, context: str, start: int | None = None):
        t0 = time.perf_counter()
        check = self.checker.check_sentence(sentence, context=context, prompt=run.prompt)
        run.timings.add("check", time.perf_counter() - t0)
        run.checks += 1
        run.failed += int(check.needs_rewrite)
        run.trace.add("check", start_token=start, **check_event(check))
        return check

    def no_answer(self, run: _Run, sentence: str) -> bool:
        """A sentence that passed its check but is no answer (degenerate, or about someone else:
        checker.reject_degenerate, reject_off_subject) fails as in EWE's loop: Streaming-VR refines
        it. Its check event, the last traced, says why."""
        ck = self.runtime.config.checker
        why = no_answer(sentence, run.prompt, ck.reject_degenerate, ck.reject_off_subject, run.subject)
        if why:
            run.failed += 1
            run.trace.events[-1].update(needs_rewrite=True, reason=why)
        return bool(why)

    def _redundancy(self, run: _Run):
        if run.redundancy is None:
            from ..judge.checker import shipped_judge
            from ..verify.redundancy import Redundancy

            run.redundancy = Redundancy(shipped_judge)
        return run.redundancy

    def _text_repeats(self, run: _Run, text: str, context: str, cut_off: bool = False) -> tuple[list[dict], list[str]]:
        """Why `text` (after `context`) adds nothing to the answer kept so far ([] when it adds
        something), and its claims (the checker's extractor; it has no check of its own).
        `cut_off`: an unfinished last sentence."""
        from ..verify.redundancy import text_repeats

        return text_repeats(self._redundancy(run), getattr(self.checker, "extractor", None),
                            text, context, run.prompt, run.said_texts, run.said_claims, cut_off)

    def tail_repeats(self, run: _Run, tail: str, context: str) -> bool:
        """A last sentence the token budget cut off is never checked, but one that adds nothing to
        the answer before it is dropped (traced as "repeats_dropped")."""
        if not tail.strip() or not self.runtime.config.checker.reject_repeats:
            return False
        why, _ = self._text_repeats(run, tail.strip(), context, cut_off=True)
        if why:
            run.trace.add("repeats_dropped", dropped=[{"sentence": tail.strip(), "repeats": why, "cut_off": True}])
        return bool(why)

    def repeats(self, run: _Run, sentence: str, check) -> bool:
        """A passed sentence that adds nothing to the answer so far (checker.reject_repeats): traced as a
        failed check with reason "repeats"."""
        from ..verify.redundancy import sentence_repeats

        if not self.runtime.config.checker.reject_repeats:
            return False
        claims = [c.text for c in check.claims]
        why = sentence_repeats(self._redundancy(run), sentence, claims, run.said_texts, run.said_claims,
                               run.subject.name if run.subject else None, run.prompt)  # as EWE's loop
        if why:
            run.failed += 1
            run.trace.add("repeats", sentence=sentence, repeats=why)
            return True
        run.said_texts.append(sentence)
        run.said_claims += claims or [sentence]
        return False

    def refined_repeats(self, run: _Run, refined: str, prefix: str) -> bool:
        """A refined sentence is not checked again (the paper), but one that adds nothing to the
        answer so far ends the answer before it (checker.reject_repeats; traced "repeats", refined):
        the refiner restating an earlier sentence is padding, and greedy decoding would go on with it.
        One that adds something joins what later sentences may not repeat."""
        if not self.runtime.config.checker.reject_repeats:
            return False
        why, found = self._text_repeats(run, refined, prefix)
        if why:
            run.failed += 1
            run.trace.add("repeats", sentence=refined, repeats=why, refined=True)
            return True
        run.said_texts.append(refined)
        run.said_claims += found or [refined]
        return False

    def _evidence(self, check) -> list[str]:
        """With vr.refiner_evidence, the best evidence passage of each claim (at most 3)."""
        if not self.cfg.refiner_evidence:
            return []
        texts = []
        for v in check.verdicts:
            for e in v.evidence[:1]:
                if e.text not in texts:
                    texts.append(e.text)
        return texts[:3]

    def _complete(self, run: _Run, text: str, max_new_tokens: int, dec, stage: str):
        """One plain, greedy model call on `text`, timed under `stage`."""
        t0 = time.perf_counter()
        out = self.runtime.complete(text, self.runtime.greedy(dec, max_new_tokens), f"{self.name} {stage}")
        run.timings.add(stage, time.perf_counter() - t0)
        return out

    def _generate(self, run: _Run, gen_prompt: str, dec):
        """The whole answer at once, with the decoding section's settings (offline and Full-VR)."""
        rt = self.runtime
        t0 = time.perf_counter()
        [out] = rt.generate_plain([gen_prompt], [[]], dec)  # its request preparation refuses a prompt too long
        run.timings.add("generate", time.perf_counter() - t0)
        run.decoded += len(out.token_ids) + int(out.finish_reason == "eos")
        run.trace.step_to(run.decoded)
        run.trace.add("vr_answer", text=out.text, tokens=len(out.token_ids), finish_reason=out.finish_reason)
        return out

    def refine_sentence(self, run: _Run, gen_prompt: str, prefix: str, sentence: str, check) -> str:
        """s~_t, ending in sentence punctuation; the original sentence when the reply holds none."""
        out = self._complete(run, P.sentence_prompt(gen_prompt, prefix, sentence, self._evidence(check)),
                             self.cfg.sentence_tokens, self.runtime.config.decoding, "refine")
        run.refine_tokens += len(out.token_ids)
        refined = P.first_sentence(out.text)
        if refined and P.copies_example(refined, run.prompt):
            refined = ""  # the prompt's worked example, not a refinement: the original stays
        if refined and refined[-1] not in ".!?…\"'”’)":
            refined += "."  # so the generator's next sentence starts after it, not inside it
        run.refined += int(bool(refined))
        run.trace.add("vr_refine", scope="sentence", sentence=sentence, refined=refined or sentence,
                      reply=out.text.strip(), tokens=len(out.token_ids), kept_original=not refined)
        return refined or sentence

    # -- the methods -------------------------------------------------------------------------

    def run(self, prompt: str, dec, passages: list[str] | None = None) -> GenerationResult:
        """One prompt through the configured method. `passages`: the generation prompt's passages
        ([] for none); None retrieves retrieval.top_k of them when vr.open_book is on."""
        run = _Run(prompt)
        t_start = time.perf_counter()
        gen_prompt, hits = self._generation_prompt(run, passages)
        if self.name == "full-vr":
            text, token_ids, logprobs, finish = self._full(run, gen_prompt, dec)
        elif self.cfg.mode == "offline":
            text, token_ids, logprobs, finish = self._offline(run, gen_prompt, dec)
        else:
            text, token_ids, logprobs, finish = self._live(run, gen_prompt, dec)
        run.trace.add("finish", reason=finish, new_tokens=len(token_ids), decoded_tokens=run.decoded)
        stats = VerifyRefineStats(
            method=self.name,
            mode=self.cfg.mode if self.name == "streaming-vr" else "full",
            prompt_tokens=len(self.runtime.prompt_ids(gen_prompt, dec.system_prompt)),
            new_tokens=len(token_ids),
            decoded_tokens=run.decoded,
            refine_tokens=run.refine_tokens,
            checks=run.checks,
            failed_checks=run.failed,
            refined=run.refined,
            **run.timings.as_fields(),
            total_s=round(time.perf_counter() - t_start, 4),
        )
        return GenerationResult(prompt=prompt, text=text, token_ids=token_ids, logprobs=logprobs, finish_reason=finish,
                                retrieved=hits, stats=stats, trace=run.trace.to_list(), sentences=run.sentences)

    def _full(self, run: _Run, gen_prompt: str, dec):
        """Full-VR: verify every sentence of the whole answer; if one fails, refine the whole answer."""
        out = self._generate(run, gen_prompt, dec)
        answer = out.text
        failed = []
        for a, b in checked_spans(answer, cut_off=out.finish_reason == "length"):
            sentence = answer[a:b].strip()
            if sentence:
                check = self.check_sentence(run, sentence, answer[:a])
                run.sentences.append({"text": sentence, "checked": True, "needs_rewrite": check.needs_rewrite})
                if check.needs_rewrite:
                    failed.append(check)
        if not failed:
            return self._original(run, out)
        evidence = [t for c in failed for t in self._evidence(c)][:3]
        tokens = self.cfg.answer_tokens or dec.max_new_tokens
        reply = self._complete(run, P.answer_prompt(gen_prompt, answer, evidence), tokens, dec, "refine")
        run.refine_tokens += len(reply.token_ids)
        refined = P.strip_label(reply.text)
        if refined and P.copies_example(refined, run.prompt):
            refined = ""  # the prompt's worked example, not a refinement: the original stays
        run.refined += int(bool(refined))
        run.trace.add("vr_refine", scope="answer", sentence=answer, refined=refined or answer, reply=reply.text.strip(),
                      tokens=len(reply.token_ids), kept_original=not refined)
        if not refined:
            return self._original(run, out)
        refined = without_repeats(self.runtime, refined, run.prompt, run.trace,
                                  getattr(self.checker, "extractor", None), reply.finish_reason == "length")
        run.sentences = [{"text": s.strip(), "checked": False, "needs_rewrite": None}
                         for s in (refined[a:b] for a, b in sentence_spans(refined)) if s.strip()]
        return refined, text_tokens(self.runtime, refined), [], reply.finish_reason

    def _original(self, run: _Run, out):
        """Full-VR's answer as first written (nothing failed, or no refinement came back), less the
        sentences that add nothing: a kept original is no licence to pad."""
        kept = without_repeats(self.runtime, out.text, run.prompt, run.trace, getattr(self.checker, "extractor", None),
                               out.finish_reason == "length")
        if kept != out.text:
            return kept, text_tokens(self.runtime, kept), [], out.finish_reason
        return out.text, list(out.token_ids), list(out.logprobs), out.finish_reason

    def _offline(self, run: _Run, gen_prompt: str, dec):
        """The paper's protocol: the answer's sentences verified and refined in order after the fact."""
        out = self._generate(run, gen_prompt, dec)
        answer, kept, last = out.text, "", 0
        for a, b in checked_spans(answer, cut_off=out.finish_reason == "length"):
            sentence = answer[a:b].strip()
            kept += answer[last:a]  # the whitespace between sentences
            last = b
            if not sentence:
                continue
            check = self.check_sentence(run, sentence, kept)
            failed = check.needs_rewrite or self.no_answer(run, sentence)
            if not failed and self.repeats(run, sentence, check):
                run.sentences.append({"text": sentence, "checked": True, "needs_rewrite": True, "repeats": True})
                kept = kept.rstrip()
                last = len(answer)  # the answer ends before a repeat: greedy decoding would only go on with it
                break
            final = self.refine_sentence(run, gen_prompt, kept, sentence, check) if failed else sentence
            if failed and self.refined_repeats(run, final, kept):
                run.sentences.append({"text": sentence, "refined": final, "checked": True, "needs_rewrite": True,
                                      "repeats": True})
                kept = kept.rstrip()
                last = len(answer)  # the answer ends before a refinement that adds nothing
                break
            run.sentences.append({"text": final, "original": sentence, "checked": True, "needs_rewrite": failed})
            kept += final
        tail = answer[last:]
        if out.finish_reason == "length" and last < len(answer) and self.tail_repeats(run, tail, kept):
            tail = ""
        kept += tail
        if kept == answer:
            return answer, list(out.token_ids), list(out.logprobs), out.finish_reason
        return kept, text_tokens(self.runtime, kept), [], out.finish_reason

    def _live(self, run: _Run, gen_prompt: str, dec):
        """Streaming-VR as proposed: verify each sentence as it completes, refine it in place, go on."""
        import torch

        from ..engine import Sampler, TokenLoop
        from ..engine.watch import answer_watchers

        rt = self.runtime
        [ids] = rt.prepare([gen_prompt], dec.system_prompt, dec.max_new_tokens)
        live = _LiveAnswer(self, run, gen_prompt)
        loop = TokenLoop(rt.session(), Sampler(dec.temperature, dec.top_p, dec.seed), rt.stop_ids, dec.max_new_tokens,
                         records=[live.tracker], hooks=[live, *answer_watchers(run.trace)],
                         budget=BUDGET_FACTOR * dec.max_new_tokens)
        loop.run(torch.tensor([ids]))
        run.timings.add("generate", loop.model_s)
        t = live.tracker
        cut_off = t.unfinished()
        if cut_off and loop.reasons[0] != "eos" and self.tail_repeats(run, cut_off.text, t.decode(0, cut_off.start)):
            t.truncate(cut_off.start)
            cut_off = None
        for s in t.sentences + ([cut_off] if cut_off else []):
            run.sentences.append({**s.describe(), "checked": s.start in live.verdicts,
                                  "needs_rewrite": live.verdicts.get(s.start),
                                  "refined": s.start in live.refined_starts})
        return t.text, list(t.tokens), list(t.logprobs), loop.reasons[0]


class _LiveAnswer(Hook):
    """Streaming-VR's live state, a hook of the token loop: the generated tokens, their
    sentences, and which are settled."""

    def __init__(self, method: VerifyRefine, run: _Run, gen_prompt: str):
        self.method, self.run, self.gen_prompt = method, run, gen_prompt
        self.tracker = SentenceTracker(method.runtime.tokenizer)
        self.settled = 0  # tokens before this were verified (and refined if they failed): never checked again
        self.verdicts: dict[int, bool] = {}  # sentence start -> needs_rewrite
        self.refined_starts: set[int] = set()

    def on_step(self, loop: TokenLoop) -> None:
        self.run.decoded = loop.decoded
        self.run.trace.step_to(loop.decoded)

    def on_token(self, loop: TokenLoop, row: int, token: int, completed: list) -> Rewind | None:
        return self.verify(completed, at_end=False)

    def on_end(self, loop: TokenLoop, row: int, reason: str) -> Rewind | None:
        t = self.tracker
        done = [s for s in t.finish(complete=reason == "eos" or ends_sentence(t.text)) if s.complete]
        return self.verify(done, at_end=True)  # a Rewind: a sentence was refined and the rest is written again

    def verify(self, sentences, at_end: bool) -> Rewind | None:
        """Check the newly completed sentences; on the first that fails, put the refined
        sentence in its place, from which generation goes on. When decoding has ended
        (`at_end`) and the refined sentence was the answer's last, the answer ends with it."""
        t = self.tracker
        for n, s in enumerate(sentences, 1):
            if s.start < self.settled:
                continue  # part of a refined sentence
            prefix = t.decode(0, s.start)
            check = self.method.check_sentence(self.run, s.text, prefix, s.start)
            failed = check.needs_rewrite or self.method.no_answer(self.run, s.text)
            self.verdicts[s.start] = failed
            self.settled = s.end
            if not failed and self.method.repeats(self.run, s.text, check):
                self.verdicts.pop(s.start)
                self.run.trace.add("backtrack", why="repeats: the answer ends before it", start_token=s.start,
                                   removed_tokens=len(t.tokens) - s.start, removed_text=t.decode(s.start), attempt=1,
                                   feedback=[])
                return Rewind(s.start, end=True)
            if not failed:
                continue
            refined = self.method.refine_sentence(self.run, self.gen_prompt, prefix, s.text, check)
            if self.method.refined_repeats(self.run, refined, prefix):
                self.verdicts.pop(s.start)
                self.run.trace.add("backtrack", why="repeats: the refined sentence adds nothing; the answer ends "
                                   "before it", start_token=s.start, removed_tokens=len(t.tokens) - s.start,
                                   removed_text=t.decode(s.start), attempt=1, feedback=[])
                return Rewind(s.start, end=True)
            self.refined_starts.add(s.start)
            return self._replace(s.start, refined, last=at_end and n == len(sentences))
        return None

    def _replace(self, start: int, sentence: str, last: bool) -> Rewind:
        """Tokens from `start` on become `sentence`'s, forced through the loop, which records the
        generator's own log-probs and entropies of them, so confidence stays comparable."""
        t = self.tracker
        text = sentence if start == 0 or t.decode(0, start).endswith((" ", "\n")) else " " + sentence
        new_ids = text_ids(self.method.runtime.tokenizer, text)
        self.run.trace.add("backtrack", why="refined sentence replaces the failed one", start_token=start,
                           removed_tokens=len(t.tokens) - start, removed_text=t.decode(start), attempt=1, feedback=[])
        self.settled = start + len(new_ids)
        return Rewind(start, new_ids, end=last)


class FullVR(VerifyRefine):
    """Full-VR: the whole answer generated, every sentence verified, the whole answer refined if one fails."""

    name = "full-vr"
