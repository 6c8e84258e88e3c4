"""Watchers of the answers being written: hooks that only look (a stream, ewe/serving/stream.py).

A request that streams sets its watchers for as long as it runs (`watching`), one per prompt
of the batch it asked for; the loop that writes a method's answers, and only that one (not a
candidate rewrite's batch, not a CoVe stage), adds `answer_watchers(...)` to each row's hooks.
A method that answers its prompts one by one says which prompt it is on (`one_prompt`), so its
one-row loop reports to that prompt's watcher. Context variables, so a watcher set in one
thread never sees another thread's request.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

_WATCHERS: ContextVar[tuple] = ContextVar("ewe_answer_watchers", default=())
_PROMPT: ContextVar[int] = ContextVar("ewe_answer_prompt", default=0)


@contextmanager
def watching(*watchers):
    """The answer loops started inside this block report prompt i's answer to `watchers[i]`."""
    token = _WATCHERS.set(tuple(watchers))
    try:
        yield
    finally:
        _WATCHERS.reset(token)


@contextmanager
def one_prompt(index: int):
    """Inside this block the answer loops write prompt `index` of the batch (one by one)."""
    token = _PROMPT.set(index)
    try:
        yield
    finally:
        _PROMPT.reset(token)


def answer_watchers(trace=None, row: int = 0) -> list:
    """The hooks to add to the hooks of `row` of the loop that writes the answers; `trace` (a
    controller.Trace, or None) is where that row's hooks record why they remove text, so a
    watcher can say why."""
    watchers = prompt_watchers(_PROMPT.get() + row)
    for watcher in watchers:
        watcher.watch(row, trace)
    return watchers


def prompt_watchers(index: int) -> list:
    """The watchers of prompt `index` of the request, not yet watching a row (a loop whose rows
    join as they free up says which row, `watcher.watch(row, trace)`, when the prompt joins)."""
    watchers = _WATCHERS.get()
    return [watchers[index]] if index < len(watchers) else []
