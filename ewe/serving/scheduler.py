"""The server's requests, answered by one worker thread from a bounded queue, several at a time
as the rows of one batch where the method batches.

The model, its caches and the controller are not safe to share between threads, so one
worker decodes; the web server's event loop only reads events. The worker takes the oldest
request and, up to `max_batch`, the queued ones that can share its batch (the same configuration
and decoding settings, passages given or not alike). With EWE's controller and
controller.batch_rows, batching is continuous: a request joins the running batch at the next
step after a row frees up, writes up to its own max_tokens with its own temperature, top_p and
seed, and is answered as soon as its own row ends. Other
methods that decode prompts as rows (plain decoding, PrefixNLI) run a batch until all its rows
end (static batching). A request that cannot share the running batch waits at the head of the
queue until it ends (first come, first served). A full queue is refused at once (429) and a
stopping server answers 503, so overload never turns into a hang.
"""
from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass

from ..engine import Engine, Request
from ..methods.registry import method_class
from .stream import AnswerStream, run_streamed

END = object()  # the last event of every job


@dataclass
class Failed:
    """The job's error, handed to the request that waits for it."""

    error: BaseException


class QueueFull(Exception):
    pass


class Stopped(Exception):
    pass


class Job:
    """One request: its answer's events arrive on `events` (an asyncio queue of the server's loop)."""

    def __init__(self, ewe, prompt: str, passages: list[str] | None, dec, loop: asyncio.AbstractEventLoop):
        self.ewe, self.prompt, self.passages, self.dec, self.loop = ewe, prompt, passages, dec, loop
        self.events: asyncio.Queue = asyncio.Queue()
        self.stream = AnswerStream(ewe.runtime.tokenizer, self.put)

    def put(self, item) -> None:
        """From the worker thread: hand `item` to the request's event loop."""
        try:
            self.loop.call_soon_threadsafe(self.events.put_nowait, item)
        except RuntimeError:  # the server's loop has closed: nobody reads this job any more
            self.stream.cancel()

    @property
    def watchers(self) -> list:
        return [self.stream]

    def finish(self, result) -> None:
        """The job's answer is complete: its last events."""
        self.stream.finish(result)
        self.put(END)

    def fail(self, error: BaseException) -> None:
        self.put(Failed(error))
        self.put(END)

    def cancel(self) -> None:
        """The client went away: a queued job is skipped, a running one stops at its next token."""
        self.stream.cancel()

    @property
    def cancelled(self) -> bool:
        return self.stream.cancelled.is_set()

    def batches_with(self, other: "Job", own_limits: bool = False) -> bool:
        """Whether this job may decode in `other`'s batch: the same configuration and settings
        (`own_limits`: a row that writes up to its own max_new_tokens and samples with its own
        temperature, top_p and seed, as a joining row does, may differ in those), passages given or
        not alike."""
        own = {"max_new_tokens": 1, "temperature": 0.0, "top_p": 1.0, "seed": None}
        mine, theirs = (self.dec, other.dec) if not own_limits else (
            self.dec.model_copy(update=own), other.dec.model_copy(update=own))
        return other.ewe is self.ewe and mine == theirs and (other.passages is None) == (self.passages is None)


class Scheduler:
    """A bounded FIFO of Jobs and the one thread that answers them, in batches of up to `max_batch`."""

    def __init__(self, max_queue: int = 32, max_batch: int = 1, continuous: bool = True):
        self.max_queue, self.max_batch, self.continuous = max_queue, max_batch, continuous
        self.pending: deque[Job] = deque()
        self.changed = threading.Condition()
        self.running: list[Job] = []
        self.served = 0
        self.batches = 0
        self.stopping = False
        self.worker = threading.Thread(target=self._work, name="ewe-serve-worker", daemon=True)

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        """Stop the running rows at their next token, refuse the queued jobs, end the worker."""
        with self.changed:
            self.stopping = True
            refused, self.pending = list(self.pending), deque()
            for job in self.running:
                job.cancel()
            self.changed.notify_all()
        for job in refused:
            job.put(Failed(Stopped("the server is shutting down")))
            job.put(END)
        self.worker.join(timeout=30)

    def submit(self, job: Job) -> None:
        with self.changed:
            if self.stopping or not self.worker.is_alive():
                raise Stopped("the server is shutting down" if self.stopping else "the worker is not running")
            if len(self.pending) >= self.max_queue:
                raise QueueFull(f"{self.max_queue} requests are already waiting")
            self.pending.append(job)
            self.changed.notify()

    @property
    def waiting(self) -> int:
        return len(self.pending)

    def _next_job(self) -> Job | None:
        with self.changed:
            while not self.pending and not self.stopping:
                self.changed.wait()
            if self.stopping:
                return None
            first = self.pending.popleft()
            self.running = [first]
            return first

    def _more(self, first: Job, n: int, own_limits: bool = False) -> list[Job]:
        """Up to `n` queued jobs that can share `first`'s batch, oldest first; none past a job that
        cannot (it is next, once this batch ends). `own_limits`: rows keep their own max_new_tokens."""
        out = []
        with self.changed:
            while (len(out) < n and self.pending and not self.stopping
                   and self.pending[0].batches_with(first, own_limits)):
                out.append(self.pending.popleft())
            self.running += out
        return out

    def _work(self) -> None:
        while (first := self._next_job()) is not None:
            method = method_class(first.ewe.runtime.config.method)
            config = first.ewe.runtime.config
            try:
                if self.max_batch > 1 and self.continuous and method.joins(config):
                    self._answer_joining(first, method(first.ewe.runtime))
                else:
                    batch = [first] + (self._more(first, self.max_batch - 1) if self.max_batch > 1
                                       and method.batches(config) else [])
                    self._answer_all(batch)
                self.batches += 1
            finally:
                with self.changed:
                    self.running = []

    def _answer_all(self, batch: list[Job]) -> None:
        """Static batching: the jobs as one batch, each answered when the whole batch ends."""
        try:
            live = [job for job in batch if not job.cancelled]
            if live:
                self._answer(live)
        finally:
            self.served += len(batch)
            for job in batch:
                job.put(END)

    def _answer_joining(self, first: Job, method) -> None:
        """Continuous batching: jobs are requests of one engine (ewe/engine/engine.py), joining the
        running batch as rows free up, each answered as its row ends. If the batch fails, the jobs
        it had not answered are answered each alone."""
        unanswered: list[Job] = []  # added, not yet answered
        engine = Engine(method, self.max_batch, first.dec)

        def add(job: Job) -> None:
            unanswered.append(job)
            if job.cancelled:
                self._done(job, None, unanswered)
                return
            engine.add_request(Request(job.prompt, job.passages, decoding=job.dec,
                                       on_done=lambda result, job=job: self._done(job, result, unanswered),
                                       on_error=lambda error, job=job: self._done(job, error, unanswered),
                                       watchers=job.watchers))

        try:
            add(first)
            while True:
                room = self.max_batch - len(engine.running) - len(engine.waiting)
                for job in self._more(first, room, own_limits=True) if room > 0 else []:
                    add(job)
                if not engine.step():
                    break
        except Exception:
            for job in unanswered[:]:  # each alone, so that an error reaches only its own request
                unanswered.remove(job)
                self._answer_all([job])

    def _done(self, job: Job, outcome, unanswered: list[Job]) -> None:
        """Hand `job` its answer (a result, an error, or None: it was cancelled before it started)."""
        unanswered.remove(job)
        if isinstance(outcome, BaseException):
            job.fail(outcome)
        elif outcome is None:
            job.put(END)
        else:
            job.finish(outcome)
        self.served += 1
        with self.changed:
            if job in self.running:
                self.running.remove(job)

    def _answer(self, jobs: list[Job]) -> None:
        """Answer `jobs` as one batch; if the batch fails, each alone, so that an error reaches only
        the request it belongs to (a stream shown part of a failed batch goes on from what it holds)."""
        first = jobs[0]
        try:
            run_streamed(first.ewe.runtime, [j.prompt for j in jobs], first.dec,
                         None if first.passages is None else [j.passages for j in jobs], [j.stream for j in jobs])
        except Exception as e:  # the request's error, answered to its client; the worker goes on
            if len(jobs) == 1:
                first.put(Failed(e))
                return
            for job in jobs:
                self._answer([job])
