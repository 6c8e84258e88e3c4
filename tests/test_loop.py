"""The one token loop as a state machine, driven by a mock session whose next token follows a
script (no model): stopping, budgets, batches, and each answer a hook can give."""
import math

import pytest
import torch

from ewe.engine import BanFirstTokens, Branch, Continuation, Hook, Rewind, Sampler, Stop, TokenLoop

V = 16
EOS = 0


class ScriptSession:
    """Stands in for DecodingSession: the next token after a row's context is `script(context)`,
    with probability 0.9 (the rest spread evenly), so log-probs are known."""

    def __init__(self, script):
        self.script = script
        self.rows: list[list[int]] = []
        self.calls: list[tuple] = []

    @property
    def length(self):
        return len(self.rows[0])

    def _logits(self):
        out = torch.full((len(self.rows), V), math.log(0.1 / (V - 1)))
        for r, row in enumerate(self.rows):
            out[r, self.script(row)] = math.log(0.9)
        return out

    def prefill(self, ids, valid=None):
        self.calls.append(("prefill",))
        self.rows = [list(r) for r in ids.tolist()]
        return self._logits()

    def step(self, ids):
        self.calls.append(("step", ids.view(-1).tolist()))
        for row, t in zip(self.rows, ids.view(-1).tolist()):
            row.append(t)
        return self._logits()

    def extend(self, ids):
        self.calls.append(("extend", ids.tolist()))
        for row, new in zip(self.rows, ids.tolist()):
            row += new
        return self._logits()

    def select_rows(self, rows):
        self.calls.append(("select_rows", rows))
        self.rows = [self.rows[r] for r in rows]

    def truncate(self, length):
        self.calls.append(("truncate", length))
        self.rows = [r[:length] for r in self.rows]
        return self._logits()

    def branch(self, length, rows, memory_state=None):
        self.calls.append(("branch", length, rows))
        out = ScriptSession(self.script)
        out.rows = [self.rows[0][:length] for _ in range(rows)]
        return out, out._logits()


def counting(eos_after=None):
    """Writes 1, 2, 3, ... after the prompt (wrapping below V); EOS once `eos_after` tokens are written."""
    def script(row):
        n = len(row) - 2  # the prompt is 2 tokens
        if eos_after is not None and n >= eos_after:
            return EOS
        return 1 + n % (V - 1)
    return script


def loop(script, max_new=6, hook=None, budget=None, rows=1):
    session = ScriptSession(script)
    lp = TokenLoop(session, Sampler(), {EOS}, max_new, hooks=[hook] if hook else None, budget=budget)
    return lp, session, lp.run(torch.full((rows, 2), 9))


LP = math.log(0.9)


def test_stops_at_end_of_sequence_and_records_model_logprobs():
    lp, session, [out] = loop(counting(eos_after=3))
    assert out.token_ids == [1, 2, 3] and out.finish_reason == "eos"
    assert out.logprobs == pytest.approx([LP] * 3) and len(out.entropies) == 3
    assert lp.decoded == 4  # the end-of-sequence token was sampled too


def test_stops_at_the_length_without_a_wasted_forward_pass():
    lp, session, [out] = loop(counting(), max_new=5)
    assert out.token_ids == [1, 2, 3, 4, 5] and out.finish_reason == "length"
    assert [c[0] for c in session.calls] == ["prefill"] + ["step"] * 4  # the 5th token is never fed


def test_a_batch_row_that_stopped_leaves_the_batch_and_does_not_grow():
    def script(row):
        return EOS if row[0] == 1 and len(row) >= 4 else 1 + (len(row) - 2) % (V - 1)

    session = ScriptSession(script)
    ids = torch.tensor([[1, 9], [2, 9]])
    a, b = TokenLoop(session, Sampler(), {EOS}, 5).run(ids)
    assert (a.token_ids, a.finish_reason) == ([1, 2], "eos")
    assert (b.token_ids, b.finish_reason) == ([1, 2, 3, 4, 5], "length")
    steps = [c for c in session.calls if c[0] in ("step", "select_rows")]
    # two steps of both rows; the first row ends at EOS and leaves; the second goes on alone
    assert steps == [("step", [1, 1]), ("step", [2, 2]), ("select_rows", [1]), ("step", [3]), ("step", [4])]


def test_a_row_that_leaves_the_batch_does_not_change_what_the_others_sample():
    """Sampling sees every row (a stopped one as a placeholder), so each row draws the same random
    numbers whether another row stops early or writes on: the others' tokens are the same."""
    def script(ends: bool):
        def next_token(row):
            if row[0] == 1 and ends and len(row) >= 4:
                return EOS
            return 1 + (len(row) + row[0]) % (V - 1)
        return next_token

    ids = torch.tensor([[1, 9], [2, 9], [3, 9]])
    leaves = TokenLoop(ScriptSession(script(True)), Sampler(1.0, seed=5), {EOS}, 8).run(ids)
    stays = TokenLoop(ScriptSession(script(False)), Sampler(1.0, seed=5), {EOS}, 8).run(ids)
    assert leaves[0].finish_reason == "eos" and len(leaves[0].token_ids) < len(stays[0].token_ids) == 8
    assert [c.token_ids for c in leaves[1:]] == [c.token_ids for c in stays[1:]]


class RewindOnce(Hook):
    def __init__(self, at_token, action):
        self.at_token, self.action, self.seen = at_token, action, []

    def on_token(self, loop, row, token, completed):
        self.seen.append(token)
        if token == self.at_token and self.action is not None:
            action, self.action = self.action, None
            return action
        return None


def test_a_rewind_crops_and_forces_tokens_one_at_a_time_with_the_models_logprobs():
    hook = RewindOnce(3, Rewind(1, [7, 8]))
    lp, session, [out] = loop(counting(), max_new=6, hook=hook)
    # 1 2 3 -> keep [1], force 7 8, then the script goes on counting from the new length
    assert out.token_ids == [1, 7, 8, 4, 5, 6]
    forced_lp = math.log(0.1 / (V - 1))  # the script wanted 2 and 3, not 7 and 8
    assert out.logprobs == pytest.approx([LP, forced_lp, forced_lp, LP, LP, LP])
    assert ("truncate", 3) in session.calls and ("step", [7]) in session.calls and ("step", [8]) in session.calls
    assert hook.seen == [1, 2, 3, 4, 5, 6]  # forced tokens are not reported as sampled


def test_a_rewind_with_recorded_logprobs_feeds_its_tokens_in_one_pass_and_keeps_them():
    hook = RewindOnce(3, Rewind(1, [7, 8], logprobs=[-1.0, -2.0], entropies=[0.5, 0.5]))
    lp, session, [out] = loop(counting(), max_new=4, hook=hook)
    assert out.token_ids == [1, 7, 8, 4] and out.logprobs[1:3] == [-1.0, -2.0]
    assert ("extend", [[7, 8]]) in session.calls


def test_a_rewind_that_ends_the_answer_stops_the_loop():
    class EndAtEos(Hook):
        def on_end(self, loop, row, reason):
            return Rewind(0, [5, 6], end=True) if loop.records[0].tokens != [5, 6] else None

    lp, session, [out] = loop(counting(eos_after=2), hook=EndAtEos())
    assert out.token_ids == [5, 6] and out.finish_reason == "eos"


def test_a_hook_that_always_rewinds_stops_at_the_budget():
    class Stubborn(Hook):
        def on_end(self, loop, row, reason):
            return Rewind(0)

    lp, session, [out] = loop(counting(), max_new=3, hook=Stubborn(), budget=10)
    assert out.finish_reason == "budget" and lp.decoded == 10
    assert out.token_ids == []  # the rewind asked for at the budget is still carried out


def test_logits_and_sampler_hooks_shape_the_choice():
    class Ban(Hook):
        def logits(self, loop, logits):
            return logits.index_fill(-1, torch.tensor([2]), -1e9)

    lp, session, [out] = loop(counting(), max_new=3, hook=Ban())
    assert 2 not in out.token_ids and out.token_ids[0] == 1

    class Fives(Sampler):
        def __call__(self, logits):
            return torch.tensor([5]), torch.tensor([-0.5]), torch.tensor([0.0])

    class Retry(Hook):
        def sampler(self, loop):
            return Fives() if loop.decoded >= 1 else None  # the loop's own sampler for the first token

    lp, session, [out] = loop(counting(), max_new=3, hook=Retry())
    assert out.token_ids == [1, 5, 5] and out.logprobs[1:] == [-0.5, -0.5]


def test_hooks_are_a_list_asked_in_order():
    """Each hook adjusts the logits in turn and sees every step; the first action decides."""
    seen = []

    class Watch(Hook):
        def __init__(self, name, act_at=None, action=None):
            self.name, self.act_at, self.action = name, act_at, action

        def on_step(self, loop):
            seen.append((self.name, "step", loop.decoded))

        def on_token(self, loop, row, token, completed):
            seen.append((self.name, token))
            return self.action if token == self.act_at else None

    first, second = Watch("a", act_at=2, action=Stop("first")), Watch("b", act_at=2, action=Stop("second"))
    session = ScriptSession(counting())
    lp = TokenLoop(session, Sampler(), {EOS}, 6, hooks=[first, second])
    [out] = lp.run(torch.full((1, 2), 9))
    assert out.token_ids == [1, 2] and lp.reasons == ["first"]
    assert seen == [("a", "step", 1), ("b", "step", 1), ("a", 1), ("b", 1), ("a", "step", 2), ("b", "step", 2),
                    ("a", 2)]  # the first hook's Stop decided; the second was not asked about that token

    class BanTwo(Hook):
        def logits(self, loop, logits):
            return logits.index_fill(-1, torch.tensor([2]), -1e9)

    class BanThree(Hook):
        def logits(self, loop, logits):
            return logits.index_fill(-1, torch.tensor([3]), -1e9)

    lp = TokenLoop(ScriptSession(lambda row: 2 if len(row) < 3 else 3), Sampler(), {EOS}, 2, hooks=[BanTwo(), BanThree()])
    [out] = lp.run(torch.full((1, 2), 9))
    assert not {2, 3} & set(out.token_ids)  # both processors applied


def test_ban_first_tokens_bans_only_at_its_position():
    rec = Continuation()
    ban = BanFirstTokens(rec)
    ban.ban(1, [2])
    ban.ban(1, iter([4]))
    script = {0: 2, 1: 2, 2: 4}  # tokens written so far -> the model's choice
    lp = TokenLoop(ScriptSession(lambda row: script[len(row) - 2]), Sampler(), set(), 3, records=[rec], hooks=[ban])
    lp.run(torch.full((1, 2), 9))
    assert rec.token_ids[0] == 2 and rec.token_ids[1] not in (2, 4) and rec.token_ids[2] == 4  # banned at 1 only
    assert ban.banned == {1: {2, 4}}


def test_an_answer_may_not_end_before_its_minimum_length():
    """controller.min_answer_tokens: the loop's stop tokens are banned until the answer holds that
    many tokens; then the model's end is taken as before."""
    def run(min_tokens):
        rec = Continuation()
        script = {0: 2, 1: EOS, 2: EOS, 3: EOS}  # the model would end after one token
        lp = TokenLoop(ScriptSession(lambda row: script[len(row) - 2]), Sampler(), {EOS}, 8, records=[rec],
                       hooks=[BanFirstTokens(rec, min_tokens)])
        lp.run(torch.full((1, 2), 9))
        return rec.token_ids, lp.reasons[0]

    assert run(0) == ([2], "eos")
    tokens, reason = run(3)
    assert len(tokens) == 3 and EOS not in tokens and reason == "eos"  # ended at the first chance after 3


class RewindRow(Hook):
    """Row `row`, at its answer's token `at`: cut back to token `to` (once)."""

    def __init__(self, row, at, to):
        self.row, self.at, self.to, self.done = row, at, to, False

    def on_token(self, loop, row, token, completed):
        if row == self.row and token == self.at and not self.done:
            self.done = True
            return Rewind(self.to)
        return None


def test_a_batch_row_may_not_rewind_alone_in_a_token_loop():
    """A TokenLoop's rows go on together (a row that rewinds on its own: a ContinuousLoop's)."""
    with pytest.raises(ValueError, match="rewind on its own.*ContinuousLoop"):
        loop(counting(), max_new=5, hook=RewindRow(1, at=3, to=1), rows=2, budget=10)
    lp, session, [a] = loop(counting(), max_new=5, hook=RewindRow(0, at=3, to=1), budget=10)
    assert a.token_ids == [1, 2, 3, 4, 5] and lp.decoded == 7  # alone: tokens 2 and 3 written twice


def test_continuation_is_a_record_the_loop_can_crop():
    c = Continuation()
    c.extend([1, 2, 3], [-1.0] * 3, [0.1] * 3)
    c.truncate(1)
    assert (c.tokens, c.logprobs, c.entropies) == ([1], [-1.0], [0.1])


class BranchOnce(Hook):
    """At the answer's token 3: two rows from answer token 1, two tokens each; `answer` decides."""

    def __init__(self, answer):
        self.answer, self.done, self.got = answer, False, None

    def on_token(self, loop, row, token, completed):
        if token != 3 or self.done:
            return None
        self.done = True
        records = []
        for _ in range(2):
            rec = Continuation()
            rec.extend([1], [LP], [0.0])
            records.append(rec)

        def then(records, reasons, decoded, seconds):
            self.got = ([r.token_ids for r in records], reasons, decoded)
            return self.answer(records)

        return Branch(1, records, Sampler(), 2, then)


def test_a_branch_is_decoded_by_the_loop_and_its_answer_applied():
    """The hook holds no loop: the loop decodes the branch's rows from its cache, and the hook's
    answer to them (here a Rewind to row 1's tokens) is carried out like any other."""
    hook = BranchOnce(lambda records: Rewind(1, records[1].token_ids[1:]))
    lp, session, [out] = loop(counting(), max_new=6, hook=hook)
    assert hook.got == ([[1, 2, 3], [1, 2, 3]], ["length", "length"], 4)
    assert ("branch", 3, 2) in session.calls  # prompt (2 tokens) + the answer's first token
    assert out.token_ids == [1, 2, 3, 4, 5, 6]  # the rows wrote what the answer had: same text after the rewind
    assert ("truncate", 3) in session.calls


def test_a_branch_whose_answer_is_nothing_leaves_the_answer_as_it_was():
    hook = BranchOnce(lambda records: None)
    lp, session, [out] = loop(counting(), max_new=6, hook=hook)
    assert hook.got is not None and out.token_ids == [1, 2, 3, 4, 5, 6]
    assert not any(c[0] == "truncate" for c in session.calls) and lp.decoded == 6  # the rows' tokens: not the answer's
