"""The one unit of work, from the client that adds it to the row of a batch that writes it.

A client (`EWE.generate`, `ewe run`, `ewe serve`) fills what it asks: the prompt, its passages,
who watches the answer being written, where the result and an error go. The method fills, when
the request gets a row, how the row writes it: the prompt's token ids, the record, the hooks,
the memory it reads, its limits, and `run`, the method's own state for it (EWE's ControlledRun).
The loop keeps the row's state on it: tokens sampled, why it stopped. A branch's candidate rows
are requests too, children of the request whose answer they continue (`parent`). Every row of
a loop is one; nothing about a row is kept beside it. Loads without torch, like the hook
vocabulary (actions.py).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable


class Status(enum.Enum):
    """Where a request is. NEW: made; WAITING: in the engine's queue; RUNNING: its row writes;
    ABORTING: `Engine.abort` asked its row to stop at its next token; FINISHED: its row ended and
    its result went to `on_done` (why: `finish_reason`); ABORTED: stopped by `Engine.abort` (before
    it started: `on_error` got RequestAborted; while it ran: `on_done` got what it wrote,
    finish_reason "abort"); FAILED: it could not start (`on_error` got the error)."""

    NEW = "new"
    WAITING = "waiting"
    RUNNING = "running"
    ABORTING = "aborting"
    FINISHED = "finished"
    ABORTED = "aborted"
    FAILED = "failed"

    @classmethod
    def ended(cls, finish_reason: str | None) -> "Status":
        """The status of a request whose row ended for `finish_reason`."""
        return cls.ABORTED if finish_reason == "abort" else cls.FINISHED


@dataclass(eq=False)
class Request:
    """prompt, passages (None: retrieved as the configuration says; [] none), decoding (its own
    settings, a DecodingConfig; None: the batch's), watchers (engine/watch.py), on_done(result)
    when its row ends, on_error(error) when it cannot start (None: the error ends the whole
    batch); status: a `Status`.
    Filled for its row: prompt_ids, record, hooks (they
    answer for its row only, as in `RowHooks`), memory (what the row reads: a `RowMemory`, which
    its method changes and the loop carries out), max_new_tokens and budget (sampled tokens; None: the loop's), run.
    The loop's, while the row writes: prompt_len (the tokens its cache holds before the answer,
    padding not counted), sampled (tokens sampled, discarded ones included: the budget counts
    them), finish_reason (None while it writes; "eos", "length", "budget", a Stop's reason), and
    parent (the request whose branch this candidate row decodes; None for a client's)."""

    prompt: str = ""
    passages: list[str] | None = None
    decoding: object = None
    on_done: Callable | None = None
    on_error: Callable | None = None
    watchers: list = field(default_factory=list)
    prompt_ids: list[int] = field(default_factory=list)
    record: object = None
    hooks: list = field(default_factory=list)
    memory: "RowMemory" = field(default_factory=lambda: RowMemory())
    max_new_tokens: int | None = None
    budget: int | None = None
    run: object = None
    status: Status = Status.NEW
    prompt_len: int = 0
    sampled: int = 0
    finish_reason: str | None = None
    parent: "Request | None" = None

    def start_row(self, prompt_len: int) -> None:
        """The row starts writing: its prompt holds `prompt_len` tokens, nothing sampled yet."""
        self.prompt_len, self.sampled, self.finish_reason = prompt_len, 0, None


@dataclass(eq=False)
class RowMemory:
    """What a row reads, as data: its method `set`s a new state (a one-row MemoryState, None for
    none; EWE's refresh), and the loop carries it out before the row's next forward, into the row's
    session or slot (`applied`: the version it read last). A memory change is never a call into the
    session: the loop sees it here, as it sees a text change in a hook's action. reencode: the
    context is read again under the new memory (memory.reencode_context; one row alone only)."""

    state: object = None
    version: int = 0
    applied: int = 0
    reencode: bool = False

    def set(self, state, reencode: bool = False) -> None:
        self.state, self.reencode = state, reencode
        self.version += 1

    @property
    def pending(self) -> bool:
        """Whether a state was set that the row's session does not read yet."""
        return self.version != self.applied
