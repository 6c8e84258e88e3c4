"""Watchers of the answer being written: hooks that only look (a stream, ewe/serving/stream.py).

A request that streams sets its watchers for as long as it runs (`watching`); the loop that
writes a method's answer, and only that one (not a candidate rewrite's batch, not a CoVe
stage), adds `answer_watchers(...)` to its hooks. A context variable, so a watcher set in
one thread never sees another thread's request.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

_WATCHERS: ContextVar[tuple] = ContextVar("ewe_answer_watchers", default=())


@contextmanager
def watching(*watchers):
    """The answer loops started inside this block report to `watchers`."""
    token = _WATCHERS.set(tuple(watchers))
    try:
        yield
    finally:
        _WATCHERS.reset(token)


def answer_watchers(trace=None) -> list:
    """The hooks to add to the loop that writes the answer; `trace` (a controller.Trace, or None)
    is where that loop's hooks record why they remove text, so a watcher can say why."""
    watchers = list(_WATCHERS.get())
    for w in watchers:
        w.follow(trace)
    return watchers
