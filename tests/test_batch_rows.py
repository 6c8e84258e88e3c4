"""Rows of one batch that rewind and branch on their own: each row writes, greedy, what it writes
decoded alone (the reference), on the real patched attention and under EWE's controller."""
from __future__ import annotations

import pytest
import torch
from scripted import ScriptedChecker, scripted_model, text_script
from tiny import left_padded, tiny_ewe, tiny_tokenizer

from ewe import EWE
from ewe.config import EWEConfig
from ewe.engine import ContinuousLoop, Hook, Rewind, RowHooks, Sampler, Status, TokenLoop

PROMPTS = ["Tell me a bio of Marie Curie.", "The Eiffel Tower is in", "Albert Einstein was a German-born",
           "Tell me a bio of someone famous. The quick brown fox"]
PASSAGES = [["Marie Curie was a Polish and naturalised-French physicist and chemist."], [],
            ["Albert Einstein was a German-born theoretical physicist.", "The Eiffel Tower is in Paris."], []]


class RewindOnce(Hook):
    """When the answer reaches `at` tokens, cut it back to `to` (once), then force `tokens` (with the
    model's own log-probs); the token first written at `to` is banned there, so the row writes on
    differently. `end`: the answer ends after the forced tokens."""

    def __init__(self, record, at: int, to: int, tokens=(), end: bool = False):
        self.record, self.at, self.to, self.tokens, self.end = record, at, to, list(tokens), end
        self.banned: int | None = None
        self.done = False

    def logits(self, loop, logits):
        if self.banned is not None and len(self.record.tokens) == self.to + len(self.tokens):
            logits = logits.clone()
            logits[:, self.banned] = float("-inf")
        return logits

    def on_token(self, loop, row, token, completed):
        if not self.done and len(self.record.tokens) == self.at:
            self.done = True
            self.banned = self.record.tokens[self.to + len(self.tokens)] if not self.tokens else None
            return Rewind(self.to, self.tokens, end=self.end)
        return None


REWINDS = [dict(at=6, to=2), dict(at=4, to=0, tokens=[5, 9]), dict(at=9, to=7, tokens=[11], end=True),
           dict(at=3, to=1)]


def _rows(ewe):
    ids = [ewe.prompt_ids(p) for p in PROMPTS]
    states = []
    for passages in PASSAGES:
        memory = ewe.new_memory()
        if passages:
            memory.add(passages)
        states.append(memory.state() if len(memory) else None)
    return ids, states


def _alone(ewe, ids, state, rewind, max_new):
    from ewe.engine import Continuation

    rec = Continuation()
    session = ewe.runtime.session(state, ewe.config.memory.unit_tokens)
    loop = TokenLoop(session, Sampler(), ewe.stop_ids, max_new, records=[rec], hooks=[RewindOnce(rec, **rewind)])
    loop.run(torch.tensor([ids]))
    return rec


def test_a_row_of_a_token_loop_batch_may_not_rewind_on_its_own():
    """Rows that rewind each on their own are a continuous batch's (below); a TokenLoop's rows go on
    together, and one that asks to rewind is refused with what to use instead."""
    from ewe.engine import Continuation

    ewe = tiny_ewe(EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None}}))
    ids, _ = _rows(ewe)
    records = [Continuation() for _ in PROMPTS]
    hooks = RowHooks([[RewindOnce(rec, **r)] for rec, r in zip(records, REWINDS)])
    loop = TokenLoop(ewe.runtime.session(), Sampler(), ewe.stop_ids, 14, records=records, hooks=[hooks])
    with pytest.raises(ValueError, match="ContinuousLoop"):
        loop.run(*left_padded([torch.tensor([i]) for i in ids], ewe.tokenizer.pad_token_id))


def test_rows_that_leave_a_batch_copy_the_rows_that_stay():
    """engine/session.py COPIES (what `ewe bench batch` reports): a left-padded batch (a branch's
    candidates) narrowed to the rows still writing copies those rows; the continuous batch's slots
    copy none (test_slots.py)."""
    from ewe.engine.session import COPIES, cache_bytes

    ewe = tiny_ewe()
    session = ewe.runtime.session()
    session.prefill(*left_padded([torch.tensor([ewe.prompt_ids(p)]) for p in PROMPTS[:2]], ewe.tokenizer.pad_token_id))
    COPIES.reset()
    session.select_rows([0])
    assert COPIES.other_rows == cache_bytes(session.cache) > 0 and COPIES.own_rows == 0


# -- EWE's controller, a row each ---------------------------------------------------------------

A, B_WRONG, B_RIGHT, C = ("Marie Curie was a physicist.", "She was born in Paris.", "She was born in Warsaw.",
                          "She won two Nobel prizes.")
E1, E2_WRONG, E2_RIGHT = "Albert Einstein was a physicist.", "He was born in Paris.", "He was born in Ulm."
BIOS = {"Marie Curie": ([A, B_WRONG, C], [A, B_RIGHT, C]),
        "Albert Einstein": ([E1, E2_WRONG, C], [E1, E2_RIGHT, C]),
        "someone famous": (["The Eiffel Tower is in Paris.", "The quick brown fox jumps over the lazy dog."],) * 2}


def bio_script():
    """Each prompt's bio by the name it asks about; the corrected one once feedback is in memory
    (or, with feedback in the prompt, once the candidates read it)."""
    tok = tiny_tokenizer()

    def script(generated, units, prompt):
        text = tok.decode(prompt)
        name = next(n for n in BIOS if n in text)
        before = []
        if "Evidence against" in text:  # a candidate's prompt: it ends with the answer so far
            before = tok(text.rsplit("assistant\n", 1)[1], add_special_tokens=False)["input_ids"]
        wrong, right = BIOS[name]
        knows = units >= 1 or "Evidence against" in text
        return text_script(lambda u: " ".join(right if knows else wrong))(before + generated, units)

    script.wants_prompt = True
    return script


def controlled(batch_rows: bool, **controller):
    cfg = EWEConfig.build({
        "memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
        "retrieval": {"source": None},
        "decoding": {"max_new_tokens": 60},
        "controller": {"verify_trigger": "interval", "verify_interval": 4, "batch_rows": batch_rows, **controller},
    })
    return EWE(scripted_model(bio_script()), tiny_tokenizer(), cfg,
               fact_checker=ScriptedChecker(false={B_WRONG, E2_WRONG}))


@pytest.mark.parametrize("controller", [
    {},  # the paper's loop: one rewrite at a time, feedback in memory
    {"rewrite_candidates": 3, "max_retries": 1},  # candidate rounds branched from each row's cache
    {"rewrite_candidates": 2, "feedback_placement": "prompt", "max_retries": 1},  # candidates re-read the prompt
    {"max_retries": 0, "on_retries_exhausted": "stop"},  # a row that ends by its rewind
])
def test_controlled_rows_of_one_batch_answer_as_the_prompts_do_one_by_one(controller, monkeypatch):
    prompts = ["Tell me a bio of Marie Curie.", "Tell me a bio of someone famous.", "Tell me a bio of Albert Einstein.",
               "Tell me a bio of Marie Curie."]
    alone = controlled(False, **controller).generate(prompts)
    steps = []  # per step of the batch: the rows whose candidates it decoded, and the other rows it decoded
    step = TokenLoop._step

    def spy(loop, fed):
        writing = [r for r in loop.live if loop.writing(r)]
        for row, group in loop.groups.items():  # a branch's rows are child requests of the row waiting for them
            assert all(loop.rows[b].parent is loop.rows[row] for b in group.rows)
        steps.append((sorted(loop.groups), [r for r in writing if loop.rows[r].parent is None]))
        return step(loop, fed)

    monkeypatch.setattr(TokenLoop, "_step", spy)
    together = controlled(True, **controller).generate(prompts)
    for a, b in zip(alone, together):
        assert b.text == a.text and b.token_ids == a.token_ids and b.finish_reason == a.finish_reason
        assert [(e["type"], e["step"]) for e in b.trace] == [(e["type"], e["step"]) for e in a.trace]
        assert b.sentences == a.sentences
        assert b.logprobs == pytest.approx(a.logprobs, abs=1e-4)
    assert any(r.stats["backtracks"] for r in together)
    if controller.get("rewrite_candidates", 1) > 1:
        # the two Marie Curie rows failed at the same step: their candidates decoded in the same steps,
        # and a row's candidates never held up the rows still writing their answers
        assert any(groups == [0, 3] for groups, _ in steps)
        assert any(groups and others for groups, others in steps)


def test_batch_rows_refuse_what_they_cannot_do():
    ewe = controlled(True)
    ewe.runtime.config.decoding.kv_cache = "static"
    with pytest.raises(ValueError, match="batch_rows"):
        ewe.generate(["Tell me a bio of Marie Curie.", "Tell me a bio of Albert Einstein."])
    ewe.generate("Tell me a bio of Marie Curie.")  # one prompt with a static cache: its one-row loop


@pytest.mark.parametrize("controller", [{}, {"rewrite_candidates": 3, "max_retries": 1}])
def test_one_prompt_with_batch_rows_is_a_request_of_the_engine_and_writes_what_its_one_row_loop_writes(
        controller, monkeypatch):
    from ewe.engine import Engine

    alone = controlled(False, **controller).generate("Tell me a bio of Marie Curie.")
    added = []
    add = Engine.add_request
    monkeypatch.setattr(Engine, "add_request", lambda engine, request: (added.append(request), add(engine, request)))
    engine = controlled(True, **controller).generate("Tell me a bio of Marie Curie.")
    assert len(added) == 1 and added[0].status is Status.FINISHED
    assert engine.text == alone.text and engine.token_ids == alone.token_ids
    assert engine.finish_reason == alone.finish_reason and engine.sentences == alone.sentences
    assert [(e["type"], e["step"]) for e in engine.trace] == [(e["type"], e["step"]) for e in alone.trace]
    assert engine.logprobs == pytest.approx(alone.logprobs, abs=1e-4)
    assert engine.stats["backtracks"] == alone.stats["backtracks"] > 0


# -- continuous batching: rows join a running batch as others end ------------------------------------

class ListFeed:
    """Offers the given rows in order as rows free up; keeps what ended, and when each joined and ended."""

    def __init__(self, rows):
        from collections import deque

        self.waiting = deque(enumerate(rows))
        self.ended_rows, self.events, self.slot_of = {}, [], {}

    def joining(self, loop, rows):
        out = []
        for row in rows:
            if not self.waiting:
                break
            i, new = self.waiting.popleft()
            self.slot_of[row] = i
            self.events.append(("join", i, loop.decoded))
            out.append(new)
        return out

    def ended(self, loop, row):
        i = self.slot_of.pop(row)
        self.events.append(("end", i, loop.decoded))
        self.ended_rows[i] = (loop.records[row], loop.reasons[row])


@pytest.mark.parametrize("capacity", [1, 2, 3])
def test_rows_that_join_a_running_batch_write_what_each_writes_alone(capacity):
    """Continuous batching: each prompt, joining when a row is free, with its own memory, token limit
    and rewinds, writes (greedy) what it writes decoded alone; rows join before the batch ends."""
    from ewe.engine import Continuation, Request
    from ewe.engine import RowMemory

    ewe = tiny_ewe(EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None}}))
    ids, states = _rows(ewe)
    limits = [14, 6, 10, 12]
    alone = [_alone(ewe, i, s, r, n) for i, s, r, n in zip(ids, states, REWINDS, limits)]
    records = [Continuation() for _ in PROMPTS]
    feed = ListFeed([Request(prompt_ids=i, record=rec, hooks=[RewindOnce(rec, **r)], memory=RowMemory(s), max_new_tokens=n,
                             budget=n)
                     for i, rec, r, s, n in zip(ids, records, REWINDS, states, limits)])
    from ewe.engine.copies import COPIES

    loop = ContinuousLoop(ewe.runtime.session(None, ewe.config.memory.unit_tokens), Sampler(), ewe.stop_ids, 14)
    COPIES.reset()
    loop.run_fed(feed, capacity)
    assert sorted(feed.ended_rows) == [0, 1, 2, 3]
    # the KV copied: each joining prompt into its slot, once; every rewind (one per row) nothing
    assert COPIES.own_rows == sum(loop.session.cache.bytes(len(i)) for i in ids) > 0
    assert COPIES.branched == 0 and COPIES.other_rows == COPIES.grown + COPIES.moved
    for i, a in enumerate(alone):
        rec, reason = feed.ended_rows[i]
        assert rec is records[i] and rec.token_ids == a.token_ids, f"prompt {i}"
        assert rec.logprobs == pytest.approx(a.logprobs, abs=1e-4), f"prompt {i}"
        assert reason == a.finish_reason == rec.finish_reason
    assert len(loop.records) == capacity  # a free row is taken again, the batch never grows past capacity
    joined = {i: step for kind, i, step in feed.events if kind == "join"}
    ended = {i: step for kind, i, step in feed.events if kind == "end"}
    assert joined[capacity] == min(ended.values())  # the first free row is taken at the very next step
    if capacity > 1:
        assert joined[capacity] < max(ended[i] for i in range(capacity))  # ...while other rows still write


def test_a_row_that_cannot_start_fails_alone_and_the_batch_goes_on():
    from ewe.controller.controlled_run import answer_loop
    from ewe.controller.rows import ControlledRows
    from ewe.engine import Request

    ewe = controlled(True)
    rt = ewe.runtime
    from ewe.controller.controlled_run import ControlledRun
    from ewe.methods.registry import method_class  # noqa: F401  (the method's settings are registered)

    dec = ewe._decoding()
    runs = [ControlledRun(rt, rt.fact_checker(), p, dec, passages) for p, passages in
            [("Tell me a bio of Marie Curie.", None), ("Tell me a bio of Albert Einstein.", ["x" * 10]),
             ("Tell me a bio of someone famous.", None)]]
    runs[1].prepare = lambda: (_ for _ in ()).throw(RuntimeError("no such passage"))
    done, failed = {}, {}
    waiting = [Request(run.prompt, run=run, on_done=lambda r, i=i: done.__setitem__(i, r),
                       on_error=lambda e, i=i: failed.__setitem__(i, e)) for i, run in enumerate(runs)]
    loop = answer_loop(rt, dec, rt.session(None, rt.config.memory.context_offset()), loop=ContinuousLoop)
    loop.run_fed(ControlledRows(lambda n: [waiting.pop(0) for _ in range(min(n, len(waiting)))]), 2)
    assert sorted(done) == [0, 2] and list(failed) == [1] and "no such passage" in str(failed[1])
    alone = controlled(False).generate(["Tell me a bio of Marie Curie.", "Tell me a bio of someone famous."])
    assert [done[0].text, done[2].text] == [a.text for a in alone]


@pytest.mark.parametrize("controller", [{}, {"rewrite_candidates": 3, "max_retries": 1}])
def test_controlled_rows_joining_as_rows_free_up_answer_as_one_by_one(controller):
    prompts = ["Tell me a bio of Marie Curie.", "Tell me a bio of someone famous.", "Tell me a bio of Albert Einstein.",
               "Tell me a bio of Marie Curie.", "Tell me a bio of someone famous."]
    alone = controlled(False, **controller).generate(prompts)
    together = controlled(True, max_rows=2, **controller).generate(prompts)  # the engine, two rows at once
    for a, b in zip(alone, together):
        assert b.text == a.text and b.token_ids == a.token_ids and b.finish_reason == a.finish_reason
        assert [(e["type"], e["step"]) for e in b.trace] == [(e["type"], e["step"]) for e in a.trace]
        assert b.sentences == a.sentences


class BatchingChecker(ScriptedChecker):
    """A ScriptedChecker that also checks several sentences at once, recording each batch."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches = []

    def check_sentences(self, items):
        self.batches.append([(text, prompt) for text, _, prompt in items])
        return [self.check_sentence(text, context=context, prompt=prompt) for text, context, prompt in items]


@pytest.mark.parametrize("controller", [{}, {"rewrite_candidates": 3, "max_retries": 1}])
def test_the_checks_of_several_rows_go_to_the_checker_as_one_batch(controller):
    prompts = ["Tell me a bio of Marie Curie.", "Tell me a bio of Albert Einstein.", "Tell me a bio of Marie Curie."]
    alone = controlled(False, **controller)
    alone_results = alone.generate(prompts)
    ewe = controlled(True, **controller)
    ewe.runtime.use_fact_checker(checker := BatchingChecker(false={B_WRONG, E2_WRONG}))
    together = ewe.generate(prompts)
    assert [r.text for r in together] == [r.text for r in alone_results]
    assert [r.sentences for r in together] == [r.sentences for r in alone_results]
    across_rows = [b for b in checker.batches if len({p for _, p in b}) > 1]
    assert across_rows  # the rows' checks due at the same step, asked in one batch
    if controller:  # a round's candidates, checked together
        assert any(len(b) > 1 and len({p for _, p in b}) == 1 for b in checker.batches)
    assert sorted(checker.calls) == sorted(alone.runtime._fact_checker.calls)  # nothing checked twice, nothing more


class BranchThenStop(Hook):
    """At `at` tokens, decode 2 continuations from token 1 as a Branch, then end the row (Stop)."""

    def __init__(self, record, at: int):
        self.record, self.at, self.seen = record, at, None

    def on_token(self, loop, row, token, completed):
        from ewe.engine import Branch, Continuation, Stop

        if len(self.record.tokens) != self.at or self.seen is not None:
            return None
        records = [Continuation(token_ids=self.record.tokens[:1], logprobs=self.record.logprobs[:1],
                                entropies=self.record.entropies[:1]) for _ in range(2)]

        def then(records, reasons, decoded, seconds):
            self.seen = reasons
            return Stop("branched")

        return Branch(1, records, Sampler(), 3, then)


def test_a_row_that_ends_after_its_branch_frees_its_slot_and_the_others_write_as_alone():
    """A row held in its slot while its branch decodes, then stopped by its hook, leaves no slot held;
    the rows beside it write what they write alone, and no rewind or wait copied KV."""
    from ewe.engine import Continuation, Request, RowMemory
    from ewe.engine.copies import COPIES

    ewe = tiny_ewe(EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None}}))
    ids, states = _rows(ewe)
    alone = [_alone(ewe, ids[i], states[i], REWINDS[i], 10) for i in (1, 2)]
    records = [Continuation() for _ in range(3)]
    brancher = BranchThenStop(records[0], 4)
    requests = [Request(prompt_ids=ids[0], record=records[0], hooks=[brancher], memory=RowMemory(states[0]),
                        max_new_tokens=10, budget=10)]
    requests += [Request(prompt_ids=ids[i], record=rec, hooks=[RewindOnce(rec, **REWINDS[i])], memory=RowMemory(states[i]),
                         max_new_tokens=10, budget=10) for i, rec in zip((1, 2), records[1:])]
    feed = ListFeed(requests)
    loop = ContinuousLoop(ewe.runtime.session(None, ewe.config.memory.unit_tokens), Sampler(), ewe.stop_ids, 10)
    COPIES.reset()
    loop.run_fed(feed, 3)
    assert feed.ended_rows[0][1] == "branched" and len(brancher.seen) == 2
    assert len(records[0].token_ids) == 4  # what it had when it branched
    for rec, a in zip(records[1:], alone):
        assert rec.token_ids == a.token_ids
    assert loop.session.held == set() and loop.session.lengths[0] == 0
    assert COPIES.branched == 2 * loop.session.cache.bytes(len(ids[0]))  # the prefix, once per branch row
    assert COPIES.other_rows <= COPIES.grown + COPIES.moved  # other rows copied only by grown buffers, moves
