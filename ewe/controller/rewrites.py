"""Candidate rewrites (issue 18): after a sentence fails its check, N rewrites are decoded as
one batch that shares the answer so far, so the judge can pick a supported one.

One rewrite at a time, as the paper does, rarely fixes a sentence with a small model: the
greedy rewrite is mostly the same sentence again. Sampling several and keeping one the
judge supports turns the model's occasional right answer into the kept one. The rows
share the prefix: with the feedback in memory they branch from the cropped cache (no
recomputation); with the feedback in the prompt the prompt is read once, with the
passages as text, and then copied into every row.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from ..engine import DecodingSession, Hook, Sampler, Stop, TokenLoop
from .sentences import SentenceTracker


@dataclass
class Attempt:
    """One written version of the sentence starting at a given token."""

    tokens: list[int]
    logprobs: list[float]
    entropies: list[float]
    text: str
    unsupported: int = 0
    check: dict | None = None  # its check, as a trace "check" event's data (kept if this attempt is restored)
    new_supported: int | None = None  # a candidate's supported claims the answer does not hold yet (None: not counted)

    @property
    def mean_logprob(self) -> float:
        return sum(self.logprobs) / max(len(self.logprobs), 1)


# Digits fused with a word ("189december", "188ressing") or a word three times in a row: what a
# small model writes when it loses the thread; no checker verdict makes such text worth keeping.
_FUSED = re.compile(r"\d[^\W\d_]{3,}|[^\W\d_]{3,}\d", re.UNICODE)
_REPEATED = re.compile(r"\b(\w+)\b(?:\W+\1\b){2,}", re.UNICODE | re.IGNORECASE)
_ORDINAL_OR_DECADE = re.compile(r"\d+(?:st|nd|rd|th|s)\b", re.IGNORECASE)


def looks_garbled(text: str) -> bool:
    """Fused digits and letters (not an ordinal or a decade) or a word repeated three times in a row."""
    plain = _ORDINAL_OR_DECADE.sub(" ", text)
    return bool(_FUSED.search(plain) or _REPEATED.search(text))


class _FirstSentence(Hook):
    """Ends each row once the sentence starting at `start` is complete."""

    def __init__(self, start: int):
        self.start = start

    def on_token(self, loop: TokenLoop, row: int, token: int, completed: list) -> Stop | None:
        return Stop("sentence") if any(s.end > self.start for s in completed) else None


def decode_candidates(runtime, session: DecodingSession, prompt_len: int, tracker: SentenceTracker, start: int,
                      memory, rows: int, sampler: Sampler, max_tokens: int,
                      prompt_passages: list[str] | None = None, system_prompt: str | None = None,
                      prompt: str = "") -> tuple[list[Attempt], int]:
    """Decode `rows` rewrites of the sentence at token `start` of `tracker`'s answer.

    session: the answer's own session (one row, its cache holding the prompt and at least
    `start` answer tokens); it is not changed. prompt_passages: None to branch from that
    cache; a list to re-read the prompt with these passages in it (feedback placed in
    the prompt). Returns the complete candidate sentences (cut-off rows are dropped) and
    the tokens decoded for them, all rows together.
    """
    records = [tracker.prefix(start) for _ in range(rows)]
    rows_memory = memory.state(rows) if len(memory) else None

    def loop(on: DecodingSession) -> TokenLoop:
        return TokenLoop(on, sampler, runtime.stop_ids, start + max_tokens, records=records, hooks=[_FirstSentence(start)])

    if prompt_passages is None:
        branch, logits = session.branch(prompt_len + start, rows, rows_memory)
        decoding = loop(branch)
        decoding.run_from(logits, prompt_len)
    else:
        [ids] = runtime.prepare([prompt], system_prompt, max_tokens, [prompt_passages], session.position_offset,
                                generated=tracker.tokens[:start])
        fresh = runtime.session(memory.state(1) if len(memory) else None, session.position_offset)
        decoding = loop(fresh)
        decoding.run(torch.tensor([ids]), copies=rows, memory_state=rows_memory)
    out, decoded = [], 0
    for rec, reason in zip(records, decoding.reasons):
        decoded += len(rec.tokens) - start
        if reason == "eos":
            rec.finish(complete=True)
        sentence = next((s for s in rec.sentences if s.end > start), None)
        if sentence is None:  # cut off by max_tokens before its end: not a sentence
            continue
        end = sentence.end
        out.append(Attempt(rec.tokens[start:end], rec.logprobs[start:end], rec.entropies[start:end],
                           rec.decode(start, end).strip()))
    return out, decoded
