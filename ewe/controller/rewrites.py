"""Candidate rewrites (issue 18): after a sentence fails its check, N rewrites are decoded as
one batch that shares the answer so far, so the judge can pick a supported one.

One rewrite at a time, as the paper does, rarely fixes a sentence with a small model: the
greedy rewrite is mostly the same sentence again. Sampling several and keeping one the
judge supports turns the model's occasional right answer into the kept one. The rows
share the prefix: with the feedback in memory they branch from the cropped cache (no
recomputation); with the feedback in the prompt the prompt is read once, with the
passages as text, and then copied into every row. The token loop decodes them (a `Branch`
action): the controller asks for a round and judges what comes back.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..engine import BanFirstTokens, Branch, Hook, Sampler, Stop, TokenLoop
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


class _FirstSentence(Hook):
    """Ends each row once the sentence starting at `start` is complete."""

    def __init__(self, start: int):
        self.start = start

    def on_token(self, loop: TokenLoop, row: int, token: int, completed: list) -> Stop | None:
        return Stop("sentence") if any(s.end > self.start for s in completed) else None


def candidate_branch(runtime, tracker: SentenceTracker, start: int, memory, rows: int, sampler: Sampler,
                     max_tokens: int, then, prompt_passages: list[str] | None = None, system_prompt: str | None = None,
                     prompt: str = "", position_offset: int = 0, reuse_prefix: bool = False,
                     first_banned: frozenset[int] = frozenset()) -> Branch:
    """The loop's action that decodes `rows` rewrites of the sentence at token `start` of `tracker`'s
    answer, each until its first sentence ends; `then(attempts, decoded, seconds)` answers with the
    next action (see `attempts`).

    prompt_passages: None to branch from the answer's cache; a list to re-read the prompt with
    these passages in it (feedback placed in the prompt), the answer's first `start` tokens after it.
    reuse_prefix: the memory is what the answer's cache was computed under, so the beginning that
    prompt shares with the answer's (the request, the passages already there) comes from that cache.
    first_banned: tokens no rewrite may start with (the rows start together, so one row's length is all rows').
    """
    records = [tracker.prefix(start) for _ in range(rows)]
    prompt_ids = None
    if prompt_passages is not None:
        [prompt_ids] = runtime.prepare([prompt], system_prompt, max_tokens, [prompt_passages], position_offset,
                                       generated=tracker.tokens[:start])

    def judged(records, reasons, decoded, seconds):
        return then(attempts(records, reasons, start), decoded, seconds)

    hooks: list[Hook] = [_FirstSentence(start)]
    if first_banned:
        ban = BanFirstTokens(records[0])
        ban.ban(start, first_banned)
        hooks.append(ban)
    return Branch(start, records, sampler, max_tokens, judged, hooks=hooks,
                  memory_state=memory.state(rows) if len(memory) else None, prompt_ids=prompt_ids,
                  prompt_memory_state=memory.state(1) if len(memory) else None, reuse_prefix=reuse_prefix)


def attempts(records: list, reasons: list, start: int) -> list[Attempt]:
    """The complete candidate sentences of a branch's rows (a row cut off before its sentence ends is dropped)."""
    out = []
    for rec, reason in zip(records, reasons):
        if reason == "eos":
            rec.finish(complete=True)
        sentence = next((s for s in rec.sentences if s.end > start), None)
        if sentence is None:  # cut off by max_tokens before its end: not a sentence
            continue
        end = sentence.end
        out.append(Attempt(rec.tokens[start:end], rec.logprobs[start:end], rec.entropies[start:end],
                           rec.decode(start, end).strip()))
    return out


def candidate_rank(candidate: Attempt, check) -> tuple:
    """Which passing candidate is kept: the one adding the most supported claims the answer does
    not hold yet, then the likeliest. Only supported candidates pass (when a candidate holding no
    checkable claim could pass, a quarter of the bio rewrites kept were such filler); the verdict
    stays first in the key so a looser pass rule could never rank filler first."""
    return (check.verdict == "supported", candidate.new_supported or 0, candidate.mean_logprob)
