"""Continuous batching: rows join a token loop's batch while it is already decoding.

Between two steps the loop hands each row that ended to its `RowFeed` and fills the free rows
with the prompts the feed offers: each is prefilled on its own and added to the batch (a slot
of its own in the batch's KV cache: slots.py; reading its own memory), and its record, hooks,
token limit and budget are its own. A server answers each request as its row ends, and a new
request starts at the next step, not after the whole batch.

Each row rewinds on its own (its hooks: `RowHooks`): the row is held out of the step in its slot,
the action is carried out on it there as for a row alone (a crop is a change of its length, the
tokens after it one forward of that row: slots.py `SlotRow`, no KV copied), and it rejoins the
steps after the others' step.

A row that asks for a Branch is held in its slot, out of the steps, while the branch's rows
(their prefix copied from the slot) decode as rows of the same batch (each a child Request of the waiting row's; each branch sampled by its own sampler
over all its rows, stopped by its own hooks, as when it is decoded alone), so one row's candidate
rewrites never hold up the others; when they have all ended the row's hook gets them (`then`)
and the row rejoins, goes on from its answer or ends.

Every row is a Request (`rows[row]`: its record, limits, hooks, state); a free row keeps the
request that ended there until another takes it.
"""
from __future__ import annotations

import time

import torch

from .actions import Branch, Continuation, Hook, Hooks, RowFeed, RowHooks, RowSampler
from .loop import TokenLoop
from .request import Request, Status
from .session import DecodingSession
from .slots import SlotSession

__all__ = ["ContinuousLoop"]


class ContinuousLoop(TokenLoop):
    """A token loop whose rows come from a `RowFeed` (`run_fed`); see the module docstring."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.feed: RowFeed | None = None
        self.free: list[int] = []  # rows that ended and were handed back: the next to join take them
        self.waiting: dict[int, _Waiting] = {}  # rows held in their slots while their branch decodes as rows of the batch
        self.groups: dict[int, _BranchRows] = {}  # each waiting row's branch and the rows decoding it
        # rows to add after the step, with their logits: a branch's rows (their session), a held row (its slot)
        self.arriving: list[tuple[list[int], DecodingSession | int, torch.Tensor]] = []
        self.parts: dict[int, int] = {}  # rows held in their slots to rewind: their slot (they rejoin after the step)

    def run_fed(self, feed: RowFeed, capacity: int, hooks: list[Hook] | None = None) -> None:
        """Continuous batching: decode the rows `feed` offers, at most `capacity` at once, until no
        row is writing and the feed offers none (see the module docstring). The session starts
        empty; each row's record is the feed's, handed back by `feed.ended`; `hooks` see every row
        (each row's own hooks come with it)."""
        self.start_fed(feed, capacity, hooks)
        while self.step_fed():
            pass

    def start_fed(self, feed: RowFeed, capacity: int, hooks: list[Hook] | None = None) -> None:
        """`run_fed`'s start: the loop then decodes one step per `step_fed` (the engine's `step`)."""
        if capacity < 1:
            raise ValueError(f"capacity={capacity} must be at least 1")
        if self.session.kv_cache != "dynamic":
            raise ValueError("continuous batching keeps its rows in slots of its own (engine/slots.py), "
                             f"which needs decoding.kv_cache 'dynamic' (got {self.session.kv_cache!r})")
        self.session = SlotSession(self.session, capacity)  # each row in a slot of its own (slots.py)
        self.feed, self.capacity = feed, capacity
        self.rows, self.live = [], []
        self.hook = Hooks([*(hooks or []), _RequestHooks()])
        self.next_logits: torch.Tensor | None = None

    def step_fed(self) -> bool:
        """Hand back the rows that ended, admit the rows the feed offers, and decode one step; False
        (and nothing decoded) once no row is writing and the feed offers none."""
        logits = self._turn(self.next_logits)
        if logits is None:
            return False
        self.next_logits = self._advance(logits)
        return True

    def _turn(self, logits: torch.Tensor | None) -> torch.Tensor | None:
        """Between two steps of a fed loop: hand back the rows that ended, add the rows that join;
        the logits to sample from [rows, V], None when no row is writing."""
        for row, request in enumerate(self.rows):
            if request.finish_reason is not None and row not in self.free and request.parent is None:
                if isinstance(request.record, Continuation):
                    request.record.finish_reason = request.finish_reason
                self.free.append(row)
                self.feed.ended(self, row)
        self._drop_stopped()
        writing = sum(1 for r in self.rows if r.finish_reason is None and r.parent is None)
        slots = sorted(self.free) + list(range(len(self.rows), len(self.rows) + self.capacity))
        joining = self.feed.joining(self, slots[:self.capacity - writing]) if writing < self.capacity else []
        if not joining:
            return None if writing == 0 else logits
        fresh = {}
        for row, new in zip(slots, joining):
            fresh[row] = self._join(row, new)
        width = max(len(self.rows), max(fresh) + 1)
        full = next(iter(fresh.values())).new_zeros((width, next(iter(fresh.values())).shape[-1]))
        if logits is not None:
            full[:logits.shape[0]] = logits
        for row, row_logits in fresh.items():
            full[row] = row_logits[0]
        return full

    def _join(self, row: int, new: Request) -> torch.Tensor:
        """Prefill `new` on its own and add it to the batch as row `row`; its next logits [1, V]."""
        t0 = time.perf_counter()
        new.memory.applied = new.memory.version  # its prefill reads the state it holds now
        part = self.session.fresh(new.memory.state)
        logits = part.prefill(torch.tensor([list(new.prompt_ids)]))
        self.session.add_row(part)
        seconds = time.perf_counter() - t0
        self.prefill_s += seconds
        self.model_s += seconds
        self._new_row(row, new, len(new.prompt_ids))
        self.live.append(row)
        return logits

    def _new_row(self, row: int, request: Request, prompt: int) -> None:
        """Row `row` (a free one, or the next) now writes `request`, whose prompt holds `prompt` tokens."""
        request.start_row(prompt)
        if row == len(self.rows):
            self.rows.append(request)
        else:
            self.free.remove(row)
            self.rows[row] = request

    def writing(self, row: int) -> bool:
        return self.rows[row].finish_reason is None and row not in self.waiting

    def alone(self) -> bool:
        return False  # even one row is a row of the slot session: held in its slot to rewind or wait for its branch

    def slot_of(self, row: int) -> int:
        """The slot of record `row` (a batch row, or one held out of the steps)."""
        if row in self.waiting:
            return self.waiting[row].slot
        if row in self.parts:
            return self.parts[row]
        return self.session.order[self.session_row(row)]

    def session_row(self, row: int) -> int:
        """Where record `row` is in the session's batch (rows that stopped or wait leave it)."""
        return self.live.index(row)

    def _set_memory(self, row: int, memory) -> None:
        if memory.reencode:
            raise ValueError("memory.reencode_context re-reads the whole batch's context: decode the prompts one "
                             "by one (controller.batch_rows: false)")
        self.session.set_slot_memory(self.slot_of(row), memory.state)

    def _advance(self, logits: torch.Tensor) -> torch.Tensor | None:
        """One step: end the rows at their limit, sample, record, feed; the next logits, None when done.
        A row that rewinds is held in its slot out of the others' step, gets its logits from the
        rewind and rejoins after that step; a row that branches is held while its branch's rows
        decode in the batch; rows back from their branch, and the branch's rows, join after the step."""
        for row in range(len(self.rows)):
            while self.writing(row) and (reason := self._limit(row)):
                if (rewound := self._end(row, reason)) is None:
                    break
                logits = self._put_back({row: rewound}, logits)
        self._settle_branches()
        logits = self._arrive(logits)
        writing = [row for row in range(len(self.rows)) if self.writing(row)]
        if not writing:
            return None
        fed, completed = self._sample_step(logits, writing)
        fresh: dict[int, torch.Tensor] = {}  # rows that rewound: their next logits
        for row in writing:
            action, ending = self._answer(row, fed[row], completed)
            if isinstance(action, Branch):
                self._wait(row, action, None if ending else fed[row], ending)
                continue
            rewound = self._settle(row, action, ending)
            if rewound is not None:
                fresh[row] = rewound
        self._settle_branches()
        if not any(self.writing(r) and not self._limit(r) and r not in fresh for r in self.live):
            if not any(self.writing(r) for r in range(len(self.rows))) and not (self.waiting or self.arriving):
                return None
            return self._arrive(self._put_back(fresh, logits))  # nothing to feed: the next round samples or ends rows
        return self._arrive(self._put_back(fresh, self._forward(lambda: self._step(fed), "decode")))

    def _end(self, row: int, reason: str) -> torch.Tensor | None:
        action = self.hook.on_end(self, row, reason)
        if isinstance(action, Branch):
            self._wait(row, action, None, reason)
            return None
        return self._settle(row, action, reason)

    def _carry(self, row: int, action) -> torch.Tensor | None:
        """Carry out `row`'s Rewind in its slot, the row held out of the step (in `parts` until it
        rejoins after the step; a row back from its branch is held already); the row's next logits
        [1, V], None if it ended (its slot then free)."""
        if row not in self.parts:
            self.parts[row] = self.session.hold(self.session_row(row))
            self.live.remove(row)
        logits = self._rewind(self.session.row(self.parts[row]), row, action)
        if logits is None:
            self.session.free(self.parts.pop(row))
        return logits

    def _ended(self, row: int, reason: str) -> None:
        super()._ended(row, reason)
        if row in self.parts:
            self.session.free(self.parts.pop(row))

    def _put_back(self, fresh: dict[int, torch.Tensor], logits: torch.Tensor) -> torch.Tensor:
        """The rows that rewound rejoin the steps (after the others' step) with their own next logits."""
        if not fresh:
            return logits
        logits = logits.clone()
        for row, row_logits in fresh.items():
            self.session.release(self.parts.pop(row))
            self.live.append(row)
            logits[row] = row_logits[0]
        return logits

    def _wait(self, row: int, branch: Branch, token: int | None, ending: str | None) -> None:
        """Row `row` leaves the batch until `branch`, decoded as rows of the batch, is answered;
        `token`: the one it sampled (fed when it goes on), `ending`: why it was ending, if it was."""
        slot = self.session.hold(self.session_row(row))
        self.live.remove(row)
        self.waiting[row] = _Waiting(slot, token, ending)
        self._spawn(row, branch)

    def _spawn(self, row: int, branch: Branch) -> None:
        """The rows of `branch` (from the waiting row `row`'s answer) join the batch after this step."""
        t0 = time.perf_counter()
        parent = self.rows[row]
        slot, n = self.waiting[row].slot, len(branch.records)
        if branch.prompt_ids is None:
            session, logits = self.session.branch(slot, parent.prompt_len + branch.start, n, branch.memory_state)
            prompt = parent.prompt_len
        else:
            view = self.session.view(slot)
            session, logits = view.read(branch.prompt_ids, branch.prompt_memory_state, branch.reuse_prefix)
            session.repeat_rows(n, branch.memory_state)
            logits, prompt = logits.repeat(n, 1), len(branch.prompt_ids)
        rows = []
        limit = branch.start + branch.max_tokens
        for record in branch.records:
            rows.append(min(self.free) if self.free else len(self.rows))
            child = Request(record=record, hooks=branch.hooks, max_new_tokens=limit, budget=limit, status=Status.RUNNING,
                            parent=parent)
            self._new_row(rows[-1], child, prompt)
        self.arriving.append((rows, session, logits))
        seconds = time.perf_counter() - t0
        self.groups[row] = _BranchRows(branch, rows, seconds)
        self.branch_s += seconds

    def _settle_branches(self) -> None:
        """Hand each waiting row its branch's rows once they have all ended; the row goes on (it
        rejoins the batch after this step), ends, or waits for the next branch its hook asks for."""
        for row in [r for r, g in self.groups.items() if all(self.rows[b].finish_reason for b in g.rows)]:
            group = self.groups.pop(row)
            self._remove(set(group.rows))
            self.free += group.rows
            branch = group.branch
            decoded = sum(len(rec.tokens) - branch.start for rec in branch.records)
            for b in group.rows:
                self.rows[b].status = Status.FINISHED
            action = branch.then(branch.records, [self.rows[b].finish_reason for b in group.rows], decoded,
                                 group.own_s)
            if isinstance(action, Branch):
                self._spawn(row, action)
                continue
            waiting = self.waiting.pop(row)
            logits = self._go_on(row, waiting, action)
            if logits is not None:
                self.arriving.append(([row], waiting.slot, logits))

    def _go_on(self, row: int, waiting: "_Waiting", action) -> torch.Tensor | None:
        """`_settle` for a row back from its branch, in its slot: its logits to rejoin with, None if
        it ended (its slot then free)."""
        if action is None and waiting.ending is None:
            self._read_memory(row)
            return self._forward(lambda: self.session.row(waiting.slot).step(torch.tensor([waiting.token])), "decode")
        self.parts[row] = waiting.slot  # where `_carry` rewinds it, and `_ended` frees it
        logits = self._settle(row, action, waiting.ending)
        slot = self.parts.pop(row, None)
        if logits is None and slot is not None:  # it ended without `_ended` (a Stop)
            self.session.free(slot)
        return logits

    def _arrive(self, logits: torch.Tensor | None) -> torch.Tensor | None:
        """Add the rows waiting to join (a branch's rows, a row back from its branch) to the batch,
        with their logits in `logits` [rows, V]."""
        if not self.arriving:
            return logits
        width = len(self.rows)
        if logits is None or logits.shape[0] < width:
            grown = self.arriving[0][2].new_zeros((width, self.arriving[0][2].shape[-1]))
            if logits is not None:
                grown[:logits.shape[0]] = logits
            logits = grown
        else:
            logits = logits.clone()
        for rows, source, row_logits in self.arriving:
            if isinstance(source, int):
                self.session.release(source)  # a held row, back from its branch
            else:
                self.session.add_row(source)  # a branch's rows, each copied into a free slot
            self.live += rows
            logits[rows] = row_logits
        self.arriving = []
        return logits

    def sample(self, logits: torch.Tensor):
        """The writing rows' next tokens (the others get placeholders, never recorded): the rows
        decoding a branch by the branch's own sampler (all its rows at once, as when the branch is
        decoded alone), the others by their hooks' or the loop's."""
        width = logits.shape[0]
        ids = torch.zeros(width, dtype=torch.long, device=logits.device)
        logprobs, entropies = logits.new_zeros(width, dtype=torch.float), logits.new_zeros(width, dtype=torch.float)
        grouped = set()
        for group in self.groups.values():
            if any(self.writing(r) for r in group.rows):
                rows = torch.tensor(group.rows, device=logits.device)
                i, lp, ent = group.branch.sampler(logits[rows])
                ids[rows], logprobs[rows], entropies[rows] = i.to(ids.device), lp, ent
                grouped.update(group.rows)
        plain = [r for r in range(width) if self.writing(r) and r not in grouped]
        if plain:
            rows = torch.tensor(plain, device=logits.device)
            own = self.hook.sampler(self)
            if isinstance(own, RowSampler):
                own = own.of_rows(plain)
            i, lp, ent = (own or self.sampler)(logits[rows])
            ids[rows], logprobs[rows], entropies[rows] = i.to(ids.device), lp, ent
        return ids, logprobs, entropies


class _RequestHooks(RowHooks):
    """Each row answered by its request's own hooks (a client's row: its method's and watchers'; a
    branch's row: the branch's)."""

    def __init__(self):
        super().__init__([])

    def of_rows(self, loop: "ContinuousLoop") -> list[Hook]:
        return [Hooks(request.hooks) for request in loop.rows]

    def of_row(self, loop: "ContinuousLoop", row: int) -> Hook:
        return Hooks(loop.rows[row].hooks)


class _Waiting:
    """A row held in its slot while its branch decodes: the slot, the token it sampled (fed when it
    goes on), why it was ending (None: it was not)."""

    def __init__(self, slot: int, token: int | None, ending: str | None):
        self.slot, self.token, self.ending = slot, token, ending


class _BranchRows:
    """A branch decoding as rows of the batch: the branch, its rows, and the seconds its start took
    (reading the prompt or branching the cache; its rows' steps are the batch's)."""

    def __init__(self, branch: Branch, rows: list[int], own_s: float):
        self.branch, self.rows, self.own_s = branch, rows, own_s
