"""The one token loop every method decodes with.

It owns what all of them share: the session (cache, crop, extend), sampling, stopping at
end of sequence, the token budget, and each token's log-probability and entropy. What a
method adds plugs in as hooks (a list, asked in order: engine/actions.py `Hooks`), each of which
sees every step and answers: go on (None), adjust these logits (a logits processor such as
`BanFirstTokens`), use another sampler, or `Rewind`: cut the answer back to a token and go on
from there, optionally feeding given
tokens first and optionally ending the answer with them; `Branch`: decode a batch of
continuations from a token of the answer (the loop does it, on a branch of its cache or on a
prompt read anew) and ask the hook what to do with them; or `Stop` a row of a batch. A hook that
changes what a row reads sets the row's `RowMemory` (request.py); the loop carries that out
before the row's next forward.
EWE's controller, its candidate rewrites' first-sentence stop, Streaming-VR and FLARE are hooks; plain and
batched decoding run it with none.

One row rewinds and branches: a rewind crops the session, a branch is decoded at once as a
batch of its own. The rows of a batch (a branch's candidates, plain batched decoding) go on
together and may only stop; a row that stopped leaves the batch (its cache rows are dropped), so
the steps after it cost only what the rows still writing need. Sampling still sees every row (a
stopped one with a placeholder), so each row draws the same random numbers as when all rows
stay. Rows that each rewind and branch on their own, and join while the others decode, are a
continuous batch (continuous.py), which extends this loop.
"""
from __future__ import annotations

import time

import torch

from .actions import Branch, Continuation, Hook, Hooks, Rewind, RowHooks, Stop
from .request import Request, Status
from .sampling import Sampler, entropy
from .session import DecodingSession

__all__ = ["Branch", "Continuation", "Hook", "Rewind", "RowHooks", "Stop", "TokenLoop", "decode"]


class TokenLoop:
    """Decodes the rows of one session until each stops; see the module docstring.

    records: one per row, written by the loop (`Continuation`, or a `SentenceTracker`
    when a hook wants sentences). budget: the most tokens sampled for each row, discarded ones
    included (a hook that rewinds could otherwise loop forever); None: max_new_tokens.
    compact: drop stopped rows from the batch (False keeps the batch rectangular, each stopped
    row fed a stop token: the reference that tests and `ewe bench` hold compaction to).
    Each row is a `Request` (`rows`), which holds its record, limits and state; `records` and
    `reasons` are what hooks read of them.
    """

    def __init__(self, session: DecodingSession, sampler: Sampler, stop_ids: set[int], max_new_tokens: int,
                 records: list | None = None, hooks: list[Hook] | None = None, budget: int | None = None,
                 compact: bool = True):
        self.session, self.sampler, self.stop_ids = session, sampler, stop_ids
        self.max_new_tokens = max_new_tokens
        self.rows: list[Request] = [] if records is None else [Request(record=r, status=Status.RUNNING) for r in records]
        self.hook = Hooks(hooks or [])  # the hooks in order, answering as one
        self.budget = budget if budget is not None else max_new_tokens
        self.compact = compact  # False: a stopped row stays in the batch, fed a stop token (the reference)
        self.decoded = 0  # steps sampled
        self.live: list[int] = []  # the rows the session still holds, in its row order
        self.prompt_len = 0
        self.prefill_s = 0.0
        self.model_s = 0.0  # prefill, forward passes and sampling
        self.decode_s = 0.0  # of model_s: sampling and the step forwards of sampled tokens
        self.rewind_s = 0.0  # of model_s: carrying out Rewinds (cache crops, restored tokens' forwards)
        self.branch_s = 0.0  # carrying out Branches (their batches' prefill and decoding; not in model_s)

    @property
    def records(self) -> list:
        """Each row's record (what it wrote so far)."""
        return [r.record for r in self.rows]

    @property
    def reasons(self) -> list[str | None]:
        """Why each row stopped (None while it writes)."""
        return [r.finish_reason for r in self.rows]

    def run(self, input_ids: torch.Tensor, valid: torch.Tensor | None = None) -> list:
        """Prefill `input_ids` [B, T] (left-padded where `valid` is 0) and decode; return the records."""
        t0 = time.perf_counter()
        logits = self.session.prefill(input_ids, valid)
        self.prefill_s = time.perf_counter() - t0
        self.model_s += self.prefill_s
        return self.run_from(logits, input_ids.shape[1], None if valid is None else valid.sum(dim=1).tolist())

    def run_from(self, logits: torch.Tensor, prompt_len: int, prompts: list[int] | None = None) -> list:
        """Decode from a session already holding `prompt_len` tokens per row (`prompts`: each row's
        own, its left padding not counted), `logits` [B, V] next."""
        self.prompt_len = prompt_len
        if not self.rows:
            self.rows = [Request(record=Continuation(), status=Status.RUNNING) for _ in range(logits.shape[0])]
        for row, request in enumerate(self.rows):
            request.start_row(prompt_len if prompts is None else prompts[row])
        self.live = list(range(len(self.rows)))
        while logits is not None:
            logits = self._advance(logits)
        for request in self.rows:
            if isinstance(request.record, Continuation):
                request.record.finish_reason = request.finish_reason
        return self.records

    def alone(self) -> bool:
        """Whether the session is this one row's own (rewinds and branches act on it directly)."""
        return len(self.rows) == 1

    def writing(self, row: int) -> bool:
        """Whether row `row` is writing (not stopped; in a continuous batch, not waiting for its branch)."""
        return self.rows[row].finish_reason is None

    def _remove(self, rows) -> None:
        """Take these rows out of the session's batch now (a row that waits, a branch's rows that ended)."""
        keep = [i for i, r in enumerate(self.live) if r not in rows]
        if not keep:
            self.session.clear()
        elif len(keep) < len(self.live):
            self.session.select_rows(keep)
        self.live = [self.live[i] for i in keep]

    def _drop_stopped(self) -> None:
        """Take the rows that stopped out of the session's batch (`live`: the rows it still holds)."""
        self._remove({r for r in self.live if self.rows[r].finish_reason})

    def _limit(self, row: int) -> str | None:
        request = self.rows[row]
        if len(request.record.tokens) >= (request.max_new_tokens or self.max_new_tokens):
            return "length"
        return "budget" if self._spent(row) else None

    def _spent(self, row: int) -> bool:
        request = self.rows[row]
        return request.sampled >= (request.budget or self.budget)

    def _end(self, row: int, reason: str) -> torch.Tensor | None:
        """The row stops for `reason` unless its hook rewinds; the logits to go on from [1, V], None if
        it stopped."""
        return self._settle(row, self._resolve(self.hook.on_end(self, row, reason), row), reason)

    def _advance(self, logits: torch.Tensor) -> torch.Tensor | None:
        """One step: end the rows at their limit, sample, record, feed; the next logits, None when done.
        Only a row alone rewinds or branches (a batch whose rows do: continuous.py): a rewind's
        logits are the next step's."""
        for row in range(len(self.rows)):
            while self.writing(row) and (reason := self._limit(row)):
                rewound = self._end(row, reason)
                if rewound is None:
                    break
                return rewound
        writing = [row for row in range(len(self.rows)) if self.writing(row)]
        if not writing:
            return None
        fed, completed = self._sample_step(logits, writing)
        for row in writing:
            action, ending = self._answer(row, fed[row], completed)
            rewound = self._settle(row, self._resolve(action, row), ending)
            if rewound is not None:
                return rewound
        if not any(self.writing(r) and not self._limit(r) for r in self.live):
            return logits if any(self.writing(r) for r in self.live) else None  # the next round ends them
        return self._forward(lambda: self._step(fed), "decode")

    def _sample_step(self, logits: torch.Tensor, writing: list[int]) -> tuple[list[int], dict[int, list]]:
        """Sample the writing rows' next tokens and record them; every row's token (a placeholder
        for a row not writing), and the sentences each recorded token completed (not for a stop)."""
        t0 = time.perf_counter()
        ids, logprobs, entropies = self.sample(self.hook.logits(self, logits))
        fed = ids.tolist()  # timed: on a GPU this waits for the step's kernels, which decode_s must hold
        self._timed("decode", time.perf_counter() - t0)
        self.decoded += 1
        for row in writing:
            self.rows[row].sampled += 1
        self.hook.on_step(self)
        completed = {row: self.rows[row].record.append(fed[row], lp, ent)  # (stopped rows leave the batch at the step)
                     for row, lp, ent in zip(writing, logprobs[writing].tolist(), entropies[writing].tolist())
                     if fed[row] not in self.stop_ids}
        if completed and not self.alone():
            self.hook.before_tokens(self, completed)
        return fed, completed

    def _answer(self, row: int, token: int, completed: dict[int, list]):
        """The hooks' answer to the row's new token, and why the row is ending ("eos"), if it is."""
        if token in self.stop_ids:
            return self.hook.on_end(self, row, "eos"), "eos"
        return self.hook.on_token(self, row, token, completed[row]), None

    def sample(self, logits: torch.Tensor):
        """Each row's next token, by its hooks' sampler or the loop's."""
        return (self.hook.sampler(self) or self.sampler)(logits)

    def _settle(self, row: int, action, ending: str | None) -> torch.Tensor | None:
        """Carry out a row's final answer to its token, or to its end (`ending`: "eos", "length",
        "budget"): the row's next logits after a Rewind; None when it goes on as it is, or stopped
        (its reason set). A rewind asked for at the budget is still carried out (the text it
        removes stays removed), and the row stops."""
        if action is None and ending is None:
            return None
        if isinstance(action, Stop):
            self.rows[row].finish_reason = action.reason
            return None
        rewound = None if action is None else self._carry(row, action)
        if rewound is None or (ending not in (None, "eos") and self._spent(row)):
            self._ended(row, ending or "eos")  # its end, or the hook's text that ended the answer
            return None
        return rewound

    def _ended(self, row: int, reason: str) -> None:
        self.rows[row].finish_reason = reason

    def _read_memory(self, row: int) -> None:
        """Row `row`'s session reads the memory its request's `RowMemory` holds, if that changed."""
        memory = self.rows[row].memory
        if memory.pending:
            self._set_memory(row, memory)
            memory.applied = memory.version

    def _set_memory(self, row: int, memory) -> None:
        if not self.alone():
            raise ValueError("a row of a batch changed its memory: the rows of a TokenLoop share one session "
                             "(rows that each read their own memory decode in a ContinuousLoop)")
        self.session.set_memory(memory.state, reencode=memory.reencode)

    def _step(self, fed: list[int]) -> torch.Tensor:
        """Feed each live row its token, after dropping the rows that stopped; the next logits of
        every row [B, V] (a stopped row's: a placeholder, never sampled into its record)."""
        for row in self.live:
            if self.rows[row].finish_reason is None:
                self._read_memory(row)
        if not self.compact:
            stop = next(iter(self.stop_ids), 0)
            return self.session.step(torch.tensor([stop if self.rows[r].finish_reason else t
                                                   for r, t in enumerate(fed)]))
        self._drop_stopped()
        logits = self.session.step(torch.tensor([fed[r] for r in self.live]))
        if self.live == list(range(len(self.rows))):
            return logits  # every row, in record order (a row that joined a running batch may sit elsewhere)
        full = logits.new_zeros((len(self.rows), logits.shape[-1]))
        full[self.live] = logits
        return full

    def _timed(self, part: str, seconds: float) -> None:
        self.model_s += seconds
        if part == "decode":
            self.decode_s += seconds
        else:
            self.rewind_s += seconds

    def _forward(self, call, part: str = "rewind"):
        t0 = time.perf_counter()
        out = call()
        self._timed(part, time.perf_counter() - t0)
        return out

    def _resolve(self, action, row: int = 0):
        """Carry out Branches until the hook answers with something else (or nothing)."""
        while isinstance(action, Branch):
            action = action.then(*self._branch(action, row))
        return action

    def _branch(self, branch: Branch, row: int = 0) -> tuple[list, list, int, float]:
        """Decode the branch's rows (see `Branch`) from the answer of `row`: its records, why each
        stopped, tokens, seconds."""
        t0 = time.perf_counter()
        rows, start = len(branch.records), branch.start
        self._alone_only("branch")
        source = self.session

        def batch(session: DecodingSession) -> "TokenLoop":
            return TokenLoop(session, branch.sampler, self.stop_ids, start + branch.max_tokens, records=branch.records,
                             hooks=branch.hooks)

        if branch.prompt_ids is None:
            prompt = self.rows[row].prompt_len
            session, logits = source.branch(prompt + start, rows, branch.memory_state)
            rows_loop = batch(session)
            rows_loop.run_from(logits, prompt)
        else:
            session, logits = source.read(branch.prompt_ids, branch.prompt_memory_state, branch.reuse_prefix)
            session.repeat_rows(rows, branch.memory_state)
            rows_loop = batch(session)
            rows_loop.run_from(logits.repeat(rows, 1), len(branch.prompt_ids))
        decoded = sum(len(rec.tokens) - start for rec in branch.records)
        seconds = time.perf_counter() - t0
        self.branch_s += seconds
        return branch.records, rows_loop.reasons, decoded, seconds

    def _carry(self, row: int, action: Rewind) -> torch.Tensor | None:
        """Carry out the row's Rewind on the session; its next logits [1, V] (None if it ended)."""
        self._alone_only("rewind")
        return self._rewind(self.session, 0, action)

    def _alone_only(self, what: str) -> None:
        if not self.alone():
            raise ValueError(f"a row of a batch asked to {what} on its own: the rows of a TokenLoop go on together "
                             "(rows that rewind and branch each on their own decode in a ContinuousLoop)")

    def _rewind(self, session: DecodingSession, row: int, action: Rewind) -> torch.Tensor | None:
        self._read_memory(row)
        rec = self.rows[row].record
        rec.truncate(action.start)
        logits = self._forward(lambda: session.truncate(self.rows[row].prompt_len + action.start))
        if action.tokens and action.logprobs is not None:
            rec.extend(list(action.tokens), list(action.logprobs), list(action.entropies))
            logits = self._forward(lambda: session.extend(torch.tensor([list(action.tokens)])))
        else:
            for tok in action.tokens:
                logprobs = torch.log_softmax(logits[0].float(), dim=-1)
                rec.extend([tok], [logprobs[tok].item()], [entropy(logprobs).item()])
                logits = self._forward(lambda: session.step(torch.tensor([tok])))
        if action.end:
            rec.finish(complete=True)
            return None
        return logits


def decode(session: DecodingSession, input_ids: torch.Tensor, valid: torch.Tensor | None, sampler: Sampler,
           max_new_tokens: int, stop_ids: set[int]) -> list[Continuation]:
    """Plain decoding of a batch: no hooks."""
    return TokenLoop(session, sampler, stop_ids, max_new_tokens).run(input_ids, valid)
