"""The server's requests, answered one at a time by one worker thread, from a bounded queue.

The model, its caches and the controller are not safe to share between threads, so one
worker decodes; the web server's event loop only reads events. A full queue is refused at
once (429) and a stopped worker answers 503, so overload never turns into a hang. Batched
decoding of several requests (issue 36, item 1) is not built yet: requests wait in turn.
"""
from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass

from .stream import AnswerStream, StreamCancelled, run_streamed

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

    def cancel(self) -> None:
        """The client went away: a queued job is skipped, a running one stops at its next step."""
        self.stream.cancel()

    @property
    def cancelled(self) -> bool:
        return self.stream.cancelled.is_set()


class Scheduler:
    """A bounded FIFO of Jobs and the one thread that answers them."""

    def __init__(self, max_queue: int = 32):
        self.max_queue = max_queue
        self.jobs: queue.Queue = queue.Queue(maxsize=max_queue)
        self.running: Job | None = None
        self.served = 0
        self.stopping = False
        self.worker = threading.Thread(target=self._work, name="ewe-serve-worker", daemon=True)

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        """Finish the running job's step, refuse the queued ones, end the worker."""
        self.stopping = True
        while True:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.put(Failed(Stopped("the server is shutting down")))
                job.put(END)
        if self.running is not None:
            self.running.cancel()
        self.jobs.put(None)
        self.worker.join(timeout=30)

    def submit(self, job: Job) -> None:
        if self.stopping or not self.worker.is_alive():
            raise Stopped("the server is shutting down" if self.stopping else "the worker is not running")
        try:
            self.jobs.put_nowait(job)
        except queue.Full:
            raise QueueFull(f"{self.max_queue} requests are already waiting") from None

    @property
    def waiting(self) -> int:
        return self.jobs.qsize()

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            if job.cancelled:
                job.put(END)
                continue
            self.running = job
            try:
                run_streamed(job.ewe.runtime, job.prompt, job.dec, job.passages, job.stream)
            except StreamCancelled:
                pass
            except Exception as e:  # the request's error, answered to its client; the worker goes on
                job.put(Failed(e))
            finally:
                self.running = None
                self.served += 1
                job.put(END)
