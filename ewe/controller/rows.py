"""Controlled runs as the rows of one continuously batched loop (controller.batch_rows; the
engine's requests, ewe/engine/engine.py): a run joins when a row is free, with its own memory,
pauses, checks, rewinds and candidate rounds, and the checks several rows run at the same step go
to the checker as one batch.
"""
from __future__ import annotations

import time
from typing import Callable

from ..engine import ContinuousLoop, Hook, Request, RowFeed, Status, TokenLoop
from .controlled_run import ControlledRun, answer_budget, answer_loop
from .sentence_checks import check_all


def check_rows(config) -> None:
    """Controlled answers as rows of one batch rewind on their own: say so where the settings cannot."""
    if config.decoding.kv_cache != "dynamic" or config.memory.reencode_context:
        raise ValueError("controller.batch_rows decodes rows that rewind on their own, which needs "
                         "decoding.kv_cache 'dynamic' and memory.reencode_context false; set controller.batch_rows: "
                         "false to decode the prompts one by one")


class ControlledRows(RowFeed):
    """Controlled runs as the rows of one continuously batched loop (`ContinuousLoop.run_fed`): a run
    joins when a row is free (its passages retrieved and encoded then, its memory its own), and its
    result goes to its `on_done` as soon as its row ends. `take(n)`: up to n Requests to start now,
    each with its `run`."""

    def __init__(self, take: Callable[[int], list[Request]]):
        self.take = take
        self.rows: dict[int, tuple[Request, float, tuple]] = {}

    def joining(self, loop: TokenLoop, rows: list[int]) -> list[Request]:
        out = []
        for request in self.take(len(rows)):
            run, row = request.run, rows[len(out)]
            t0 = time.perf_counter()
            try:
                request.prompt_ids = run.prepare()
            except Exception as e:  # this request's error (a bad passage, a failed search): the batch goes on
                if request.on_error is None:
                    raise
                request.status = Status.FAILED
                request.on_error(e)
                continue
            run.reads(request)
            for watcher in request.watchers:
                watcher.watch(row, run.trace)
            self.rows[row] = (request, t0, (loop.prefill_s, loop.decode_s, loop.rewind_s))
            request.record, request.hooks = run.tracker, [run, run.banned, *request.watchers]
            request.memory.set(run.memory.state() if len(run.memory) else None)
            request.max_new_tokens = run.dec.max_new_tokens  # its own limits, whatever the batch's
            request.budget = answer_budget(run.runtime.config, run.dec)
            out.append(request)
        return out

    def ended(self, loop: TokenLoop, row: int) -> None:
        request, t0, since = self.rows.pop(row)
        request.status = Status.ended(request.finish_reason)
        request.on_done(request.run.result(loop, t0, row, since))

    def run_of(self, row: int) -> ControlledRun | None:
        """The run writing row `row` (None: the row is free)."""
        return self.rows[row][0].run if row in self.rows else None


class RowChecks(Hook):
    """The checks that several rows of a batch are about to run at the same step, run as one batch
    first (their hooks then find them done): a loop-level hook of `decode_rows`."""

    def __init__(self, feed: "ControlledRows"):
        self.feed = feed

    def before_tokens(self, loop: TokenLoop, completed: dict[int, list]) -> None:
        wanted = [(run, pair) for row, done in completed.items() if (run := self.feed.run_of(row)) is not None
                  for pair in run.upcoming_checks(done)]
        if len({id(run) for run, _ in wanted}) < 2:
            return  # one row's checks run as they always do
        for checker in {id(run.checker): run.checker for run, _ in wanted}.values():
            mine = [(run, pair) for run, pair in wanted if run.checker is checker]
            for (run, pair), check in zip(mine, check_all(checker, [(*pair, run.prompt) for run, pair in mine])):
                run.sentence_checks.prefetched[pair] = check


def start_rows(runtime, dec, take: Callable[[int], list[Request]], capacity: int,
               hooks: list[Hook] = ()) -> ContinuousLoop:
    """The continuously batched loop of controlled runs, started: up to `capacity` at once, each
    joining when a row is free (`take(n)`: up to n Requests, each with its `run`, to start now),
    each with its own memory, pauses, checks, rewinds and candidate rounds (the loop carries out a
    row's actions on that row alone; a row's candidates decode as rows of the same batch while it
    waits; the checks several rows run at the same step go to the checker as one batch); greedy
    rows write what they write one by one. Each `step_fed()` decodes one step. `hooks` see every
    row before the rows' own (the engine's abort)."""
    check_rows(runtime.config)
    loop = answer_loop(runtime, dec, runtime.session(None, runtime.config.memory.context_offset()), loop=ContinuousLoop)
    feed = ControlledRows(take)
    loop.start_fed(feed, capacity, hooks=[*hooks, RowChecks(feed)])
    return loop
