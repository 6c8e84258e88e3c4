"""The engine clients drive: `add_request()`, `step()`, `abort()` (vLLM's LLMEngine shape).

Requests wait in a queue; each `step()` admits waiting requests into the free rows of one
continuously batched loop and decodes one token for every row writing (the method builds the
loop: `joining_loop`, EWE's controller with its pauses, checks and candidate rounds per row). A
request's result goes to its `on_done` as soon as its row ends; the caller that steps the engine
is the only thread that touches the model. When the last row ends and nothing waits, the loop is
let go; the next request starts a new one.
"""
from __future__ import annotations

from collections import deque

from .actions import Hook, Stop
from .request import Request, Status


class RequestAborted(Exception):
    """A request aborted before it got a row (`Engine.abort`)."""


class Engine:
    """Requests in, one decoding step at a time out. `method`: a method instance whose class joins
    (`method.joins(config)`), `capacity`: rows decoded at once, `dec`: the settings of a request
    that names none (a row writes up to its own max_new_tokens)."""

    def __init__(self, method, capacity: int, dec):
        if capacity < 1:
            raise ValueError(f"capacity={capacity} must be at least 1")
        self.method, self.capacity, self.dec = method, capacity, dec
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.loop = None  # the batch's loop while rows are writing or waiting to

    def add_request(self, request: Request) -> None:
        """Queue `request`; it gets a row at a step when one is free (first come, first served)."""
        if request.status is not Status.NEW:
            raise ValueError(f"request already {request.status.value}: a Request is added once")
        request.status = Status.WAITING
        self.waiting.append(request)

    def abort(self, request: Request) -> bool:
        """Stop `request`: a waiting one leaves the queue (its on_error gets RequestAborted); a running
        one ends at its next token with what it wrote (finish_reason "abort", to its on_done). False
        when it had already ended (or was never added)."""
        if request.status is Status.WAITING:
            self.waiting.remove(request)
            request.status = Status.ABORTED
            if request.on_error is not None:
                request.on_error(RequestAborted("aborted before it started"))
            return True
        if request.status is Status.RUNNING:
            request.status = Status.ABORTING  # its row's request: the loop's abort hook sees it
            return True
        return False

    def has_unfinished(self) -> bool:
        return bool(self.waiting) or any(r.status in (Status.RUNNING, Status.ABORTING) for r in self.running)

    def step(self) -> bool:
        """Admit waiting requests into free rows and decode one step; whether any request is still
        waiting or running after it."""
        if self.loop is None:
            if not self.waiting:
                return False
            self.loop = self.method.joining_loop(self._take, self.capacity, self.dec, hooks=[_AbortRows()])
        if not self.loop.step_fed():
            self.loop = None
        self.running = [r for r in self.running if r.status in (Status.RUNNING, Status.ABORTING)]
        return self.has_unfinished()

    def run(self) -> None:
        """Step until every request added has ended."""
        while self.step():
            pass

    def _take(self, n: int) -> list[Request]:
        out = []
        while self.waiting and len(out) < n:
            request = self.waiting.popleft()
            request.status = Status.RUNNING
            self.running.append(request)
            out.append(request)
        return out


class _AbortRows(Hook):
    """Stops the row of a request being aborted at its next token or end."""

    def _stop(self, loop, row: int) -> Stop | None:
        return Stop("abort") if loop.rows[row].status is Status.ABORTING else None

    def on_token(self, loop, row: int, token: int, completed: list) -> Stop | None:
        return self._stop(loop, row)

    def on_end(self, loop, row: int, reason: str) -> Stop | None:
        return self._stop(loop, row)
