"""An answer streamed as it is written, with retractions.

EWE's controller removes a sentence that failed its check and writes it again, so a stream
of text alone would show a reader words the answer no longer holds. Here the stream is a
list of events: `TextDelta` (text appended), `Retraction` (the text from character `at` on is
withdrawn, with the controller's reason and the evidence it put into memory) and, last,
`Finished` with the method's GenerationResult. Applying the events in order (`apply_events`)
gives the final text exactly (tests/test_stream.py holds every method to it).

`AnswerStream` is a hook that only looks: it watches the record of the loop that writes the
answer (engine/watch.py) and turns each change of its text into events. Methods that
compose their answer after all their stages (CoVe, A2R, Full-VR) write no answer loop to
watch; their text arrives whole at the end.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..engine.actions import Hook, Stop
from ..engine.watch import watching
from ..result import GenerationResult

FINAL_REASON = "the method's final answer differs from the text it streamed"


@dataclass(frozen=True)
class TextDelta:
    """`text` appended to the answer."""

    text: str
    type: str = "text"


@dataclass(frozen=True)
class Retraction:
    """The answer's text from character `at` on (`removed`) is withdrawn; the rewrite follows as
    TextDeltas. `reason`: why (the controller's words); `evidence`: the passages its check
    put into memory for the rewrite (form, title, text)."""

    at: int
    removed: str
    reason: str
    evidence: list = field(default_factory=list)
    type: str = "retraction"


@dataclass(frozen=True)
class Finished:
    """The answer is complete: the method's result (final text, sentences with verdicts, trace)."""

    result: GenerationResult
    type: str = "done"


def apply_events(events, text: str = "") -> str:
    """The text a reader holds after `events` (a Finished event changes nothing)."""
    for ev in events:
        if isinstance(ev, TextDelta):
            text += ev.text
        elif isinstance(ev, Retraction):
            if text[ev.at:] != ev.removed:
                raise ValueError(f"retraction at {ev.at} removes {ev.removed!r}, but the text there is "
                                 f"{text[ev.at:]!r}")
            text = text[:ev.at]
    return text


class AnswerStream(Hook):
    """Turns the record of one row of the answer loop into events for `emit` (see the module docstring).

    Text ending in half a character (a token that is part of a UTF-8 sequence) is held back
    until the rest arrives. A retraction starts where the controller's backtrack starts (its
    trace event's first token), or where the texts first differ if that is earlier."""

    def __init__(self, tokenizer, emit: Callable, row: int = 0):
        self.tokenizer, self.emit, self.row = tokenizer, emit, row
        self.shown = ""  # the text the reader holds
        self.trace = None
        self.seen = 0  # trace events already read
        self.cancelled = threading.Event()
        self.step = 0  # decoding steps of the answer loop so far
        self.first_text_step: int | None = None  # the step at which the reader got its first text

    def watch(self, row: int, trace) -> None:
        """Watch `row` of the loop now starting (`engine.watch.answer_watchers`); its hooks record
        their backtracks in `trace`."""
        self.row, self.trace = row, trace
        self.seen = len(trace.events) if trace is not None else 0

    def cancel(self) -> None:
        """The reader went away: the row stops at its next token (the batch's other rows go on)."""
        self.cancelled.set()

    # -- the loop's hook: look; act only to stop a row nobody reads ---------------------------------

    def on_step(self, loop) -> None:
        if not loop.rows[self.row].finish_reason:
            self.step += 1  # the answer's own steps (its row may have joined a running batch)
            self._show(loop.rows[self.row].record.tokens)

    def on_token(self, loop, row: int, token: int, completed: list):
        if row != self.row:
            return None
        if self.cancelled.is_set():
            return Stop("cancelled")
        self._show(loop.rows[row].record.tokens)
        return None

    def on_end(self, loop, row: int, reason: str):
        if row == self.row:
            self._show(loop.rows[row].record.tokens)
        return None

    # -- text to events ---------------------------------------------------------------------------

    def _decode(self, tokens) -> str:
        return self.tokenizer.decode(list(tokens), skip_special_tokens=True)

    def _show(self, tokens: list[int], text: str | None = None) -> None:
        """Show the answer's `tokens` (as `text` when given: the method's final text), with the
        reasons of the backtracks traced since the last look."""
        text = self._decode(tokens).rstrip("\ufffd") if text is None else text
        causes = self._new_backtracks()
        at = None
        if causes:
            start = min(e.get("start_token", len(tokens)) for e in causes)
            at = len(self._decode(tokens[:start]).rstrip("\ufffd")) if start < len(tokens) else len(text)
        self.update(text, causes, at)

    def finish(self, result: GenerationResult) -> None:
        """Show the method's final text (an answer that ended by a rewind was not looked at since),
        then the Finished event."""
        self._show(result.token_ids, result.text)
        self.emit(Finished(result))

    def _new_backtracks(self) -> list[dict]:
        if self.trace is None:
            return []
        new = self.trace.events[self.seen:]
        self.seen = len(self.trace.events)
        return [e for e in new if e["type"] == "backtrack"]

    def update(self, text: str, causes: list[dict] | None = None, at: int | None = None) -> None:
        """Show `text`: a Retraction of what the reader holds beyond what `text` keeps (from `at`
        at the latest), then the rest of `text`."""
        keep = 0
        for a, b in zip(self.shown, text):
            if a != b:
                break
            keep += 1
        if at is not None:
            keep = min(keep, at)
        if keep < len(self.shown):
            causes = causes or []
            reason = "; ".join(dict.fromkeys(e.get("why", "") for e in causes if e.get("why"))) or FINAL_REASON
            evidence = [f for e in causes for f in e.get("feedback", [])]
            self.emit(Retraction(keep, self.shown[keep:], reason, evidence))
            self.shown = self.shown[:keep]
        if len(text) > len(self.shown):
            if self.first_text_step is None:
                self.first_text_step = self.step
            self.emit(TextDelta(text[len(self.shown):]))
            self.shown = text


def run_streamed(runtime, prompts: list[str], dec, passages: list[list[str]] | None,
                 streams: list[AnswerStream]) -> list[GenerationResult]:
    """Answer `prompts` with the configured method in this thread, as one batch where the method
    batches, `streams[i]` watching answer i; each stream's events end with the method's final
    text and a Finished event."""
    from ..methods.registry import method_class

    with watching(*streams):
        results = method_class(runtime.config.method)(runtime).run_batch(prompts, dec, passages)
    for stream, result in zip(streams, results):
        stream.finish(result)
    return results


_END = object()


@dataclass
class _Failed:
    error: BaseException


def stream_in_thread(runtime, prompt: str, dec, passages: list[str] | None) -> Iterator:
    """The events of `run_streamed`, decoded in a worker thread while the caller reads them.

    A reader that stops early (closes the iterator) cancels the answer at its next token and
    waits for the worker, so the model is free again when this returns. An error in the
    method is raised to the reader."""
    events: queue.SimpleQueue = queue.SimpleQueue()
    stream = AnswerStream(runtime.tokenizer, events.put)

    def work():
        try:
            run_streamed(runtime, [prompt], dec, None if passages is None else [passages], [stream])
        except BaseException as e:  # handed to the reader, who raises it
            events.put(_Failed(e))
        finally:
            events.put(_END)

    worker = threading.Thread(target=work, name="ewe-stream", daemon=True)
    worker.start()
    try:
        while (item := events.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stream.cancel()
        worker.join()
