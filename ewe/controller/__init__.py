"""The controller around the token loop (engine/loop.py): when to pause, what a pause does, and the trace.

    sentences.py  SentenceTracker: generated tokens -> complete sentences (pysbd), confidence
    schedule.py   PauseSchedule: interval (T_r, T_v) and confidence (entropy, min-prob) triggers
    feedback.py   fact-check outcome -> feedback messages for the feedback pool (table 4 forms)
    trace.py      Trace: every event as JSON-ready data; render() for people
    rewrites.py   candidate rewrites: N decoded as one batch branched from the cropped cache
    policy.py     what happens to a failed sentence (keep, retry, candidates, give up): pure functions
    memory_refresh.py  MemoryRefresh: what enters one answer's memory (retrieval, feedback) and when
    repeat_guard.py    RepeatGuard: whether a sentence adds anything to the answer before it
    sentence_checks.py SentenceChecks: the checker's verdicts, one by one or found done in a batch
    controlled_run.py  ControlledRun: the loop's hook that pauses, refreshes, checks, backtracks
    run_result.py the answer, sentences, stats and trace a controlled run returns
    rows.py       several controlled runs as the rows of one loop (controller.batch_rows)

The method "ewe" that runs it (plain decoding, or a controlled run per prompt) and its settings,
the configuration's `controller` section, are ewe/methods/ewe.py.
"""
from importlib import import_module

from .sentences import Sentence, SentenceTracker
from .trace import Trace, render

__all__ = ["ControlledRun", "Sentence", "SentenceTracker", "Trace", "render"]


def __getattr__(name: str):  # the run (and torch with it) loads on first use
    if name == "ControlledRun":
        return import_module(".controlled_run", __name__).ControlledRun
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
