"""What a hook says to the token loop: the answers of `Hook` (go on, `Rewind`, `Branch`, `Stop`), the
record a row writes (`Continuation`), `Hooks` (a list of hooks as one) and the logits
processor `BanFirstTokens`. Plain types without torch, so that a method module can
define its hooks without loading the model's libraries (a configuration is checked by the
method's own module)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# The annotations below name torch.Tensor, TokenLoop (loop.py) and Sampler (sampling.py); with
# postponed evaluation they are never imported here.

@dataclass
class Continuation:
    """What one row generated: its tokens, their log-probabilities and entropies, why it stopped."""

    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    finish_reason: str | None = None  # "eos", "length" or (a hook's budget) "budget"

    # the record interface the loop writes through (a SentenceTracker has the same one)
    @property
    def tokens(self) -> list[int]:
        return self.token_ids

    def append(self, token: int, logprob: float, entropy: float) -> list:
        self.token_ids.append(token)
        self.logprobs.append(logprob)
        self.entropies.append(entropy)
        return []

    def extend(self, tokens: list[int], logprobs: list[float], entropies: list[float]) -> list:
        self.token_ids += tokens
        self.logprobs += logprobs
        self.entropies += entropies
        return []

    def truncate(self, length: int) -> None:
        del self.token_ids[length:], self.logprobs[length:], self.entropies[length:]

    def finish(self, complete: bool) -> list:
        return []


@dataclass
class Rewind:
    """Keep the first `start` generated tokens and go on from there.

    tokens: then append these. With `logprobs` and `entropies` (recorded when they were
    first written) they go in in one forward pass; without, one at a time, each recorded
    with the model's own log-probability under the memory now set (a forced-token queue).
    end: the answer ends after them (the record is finished as complete).
    """

    start: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    entropies: list[float] | None = None
    end: bool = False


@dataclass
class Branch:
    """Decode `len(records)` continuations of the answer from its token `start` as one batch, then
    hand them to `then`, whose answer is the loop's next action: a Rewind, another Branch, or None
    (go on as if the hook had said nothing). The loop carries it out, so a hook that tries
    rewrites (EWE's candidate rounds) holds no loop of its own.

    records: one per row, each holding the answer's first `start` tokens (the rows write on them).
    sampler, max_tokens, hooks: how the rows are sampled, their most new tokens, and the hooks that
    stop them (e.g. at their first complete sentence). memory_state: what the rows read, one row
    each. prompt_ids: None branches from the answer's own cache; else this prompt (the answer's
    first `start` tokens included) is read anew under `prompt_memory_state` and copied into every
    row (passages placed in the prompt). reuse_prefix: the hook vouches that the answer's cache was
    computed under `prompt_memory_state`, so the prompt's first tokens that equal the answer's
    context are taken from that cache, not read again (the request and the passages already in the
    answer's prompt). then(records, reasons, decoded, seconds): `reasons` why each row stopped,
    `decoded` the tokens sampled for all rows, `seconds` the branch's own time (in a continuous
    batch its rows' decode steps are the batch's, counted there, so only reading its start).
    """

    start: int
    records: list
    sampler: "Sampler"
    max_tokens: int
    then: Callable
    hooks: list = field(default_factory=list)
    memory_state: object = None
    prompt_ids: list[int] | None = None
    prompt_memory_state: object = None
    reuse_prefix: bool = False


def or_else(action, otherwise):
    """`action`, where it (or, for a Branch, whatever its rounds come to) ends in no action: `otherwise()`."""
    if isinstance(action, Branch):
        then = action.then
        action.then = lambda *result: or_else(then(*result), otherwise)
        return action
    return action if action is not None else otherwise()


@dataclass
class Stop:
    """End this row here: its record keeps what it has (a batch of candidates ends row by row)."""

    reason: str = "stop"


class RowFeed:
    """Where a continuously batched loop gets its rows and hands back those that ended: between
    two steps the loop reports each row that ended (`ended`), then offers the free rows
    (`joining`); it stops when no row is writing and the feed offers none."""

    def joining(self, loop: "TokenLoop", rows: list[int]) -> list["Request"]:
        """Up to `len(rows)` requests to join now (engine/request.py, filled for their rows), the
        i-th becoming row `rows[i]` ([]: none now)."""
        return []

    def ended(self, loop: "TokenLoop", row: int) -> None:
        """Row `row` ended (why: `loop.reasons[row]`); its record is final, and the row is free after this."""


class Hook:
    """What a method plugs into the loop; every answer defaults to "go on"."""

    def sampler(self, loop: "TokenLoop") -> Sampler | None:
        """The sampler for the next token (None: the loop's own)."""
        return None

    def logits(self, loop: "TokenLoop", logits: torch.Tensor) -> torch.Tensor:
        """Adjust the next-token logits [B, V] before sampling (a guided-decoding hook)."""
        return logits

    def on_step(self, loop: "TokenLoop") -> None:
        """A token was sampled (`loop.decoded` counts them, discarded ones included)."""

    def before_tokens(self, loop: "TokenLoop", completed: dict[int, list]) -> None:
        """In a batch, after every row's token of this step joined its record and before `on_token`
        is asked row by row (`completed`: what each row's record reports it completed): work that
        several rows' hooks are about to do one by one can be done here as one batch."""

    def on_token(self, loop: "TokenLoop", row: int, token: int, completed: list) -> Rewind | Stop | None:
        """`token` joined the answer of `row`; `completed`: what the row's record reports it completed."""
        return None

    def on_end(self, loop: "TokenLoop", row: int, reason: str) -> Rewind | None:
        """The row is about to stop for `reason` ("eos", "length", "budget"); a Rewind goes on instead."""
        return None


class Hooks(Hook):
    """Several hooks as the loop's one: each adjusts the logits in turn and sees every step; the
    first that names a sampler, and the first that answers a token or an end with an action,
    decide (the hooks after it are not asked about that token: a rewind removes it anyway)."""

    def __init__(self, hooks: list[Hook]):
        self.hooks = list(hooks)

    def sampler(self, loop: "TokenLoop") -> Sampler | None:
        return next((s for h in self.hooks if (s := h.sampler(loop)) is not None), None)

    def logits(self, loop: "TokenLoop", logits: torch.Tensor) -> torch.Tensor:
        for h in self.hooks:
            logits = h.logits(loop, logits)
        return logits

    def on_step(self, loop: "TokenLoop") -> None:
        for h in self.hooks:
            h.on_step(loop)

    def before_tokens(self, loop: "TokenLoop", completed: dict[int, list]) -> None:
        for h in self.hooks:
            h.before_tokens(loop, completed)

    def on_token(self, loop: "TokenLoop", row: int, token: int, completed: list) -> Rewind | Branch | Stop | None:
        return next((a for h in self.hooks if (a := h.on_token(loop, row, token, completed)) is not None), None)

    def on_end(self, loop: "TokenLoop", row: int, reason: str) -> Rewind | Branch | None:
        return next((a for h in self.hooks if (a := h.on_end(loop, row, reason)) is not None), None)


class RowHooks(Hook):
    """Each row of a batch with hooks of its own (a list per row, composed as `Hooks`): row r's
    hooks adjust row r's logits, see the steps while row r writes, and answer for row r only,
    so B prompts each with its own controller decode as one batch."""

    def __init__(self, rows: list[list[Hook]]):
        self.rows = [Hooks(h) for h in rows]

    def of_rows(self, loop: "TokenLoop") -> list[Hook]:
        """Each row's hooks, in row order."""
        return self.rows

    def of_row(self, loop: "TokenLoop", row: int) -> Hook:
        """Row `row`'s hooks (asked per token: a subclass answers it without building every row's)."""
        return self.of_rows(loop)[row]

    def sampler(self, loop: "TokenLoop") -> Sampler | None:
        own = [h.sampler(loop) for h in self.of_rows(loop)]
        return None if all(s is None for s in own) else RowSampler(own, loop.sampler)

    def logits(self, loop: "TokenLoop", logits: torch.Tensor) -> torch.Tensor:
        out = logits
        for r, h in enumerate(self.of_rows(loop)):
            if not loop.writing(r):
                continue
            view = logits[r:r + 1]
            row = h.logits(loop, view)
            if row.data_ptr() != view.data_ptr():  # the hook made new logits (a ban clones)
                if out is logits:
                    out = logits.clone()
                out[r] = row[0]
        return out

    def on_step(self, loop: "TokenLoop") -> None:
        for r, h in enumerate(self.of_rows(loop)):
            if loop.writing(r):
                h.on_step(loop)

    def on_token(self, loop: "TokenLoop", row: int, token: int, completed: list) -> Rewind | Branch | Stop | None:
        return self.of_row(loop, row).on_token(loop, row, token, completed)

    def on_end(self, loop: "TokenLoop", row: int, reason: str) -> Rewind | Branch | None:
        return self.of_row(loop, row).on_end(loop, row, reason)


class RowSampler:
    """Each row sampled by its own sampler (None: `default`), for rows whose hooks name one. Greedy
    rows take their argmax in one call (no draw: which greedy sampler does it makes no difference)."""

    def __init__(self, samplers: list, default):
        self.samplers, self.default = samplers, default

    def of_rows(self, rows: list[int]) -> "RowSampler":
        """The samplers of these rows only, in this order (a batch sampling the rows still writing)."""
        return RowSampler([self.samplers[r] for r in rows], self.default)

    def __call__(self, logits: torch.Tensor):
        import torch

        own = [s or self.default for s in self.samplers]
        greedy = [r for r, s in enumerate(own) if s.temperature == 0]
        ids = torch.empty(len(own), dtype=torch.long, device=logits.device)
        logprobs = torch.empty(len(own), device=logits.device)
        entropies = torch.empty(len(own), device=logits.device)
        if greedy:
            rows = torch.tensor(greedy, device=logits.device)
            ids[rows], logprobs[rows], entropies[rows] = own[greedy[0]](logits[rows])
        for r, s in enumerate(own):
            if s.temperature != 0:
                ids[r:r + 1], logprobs[r:r + 1], entropies[r:r + 1] = s(logits[r:r + 1])
        return ids, logprobs, entropies


class BanFirstTokens(Hook):
    """A logits processor: at chosen positions of an answer, tokens it may not start with there
    (after a dropped sentence, the answer goes on with a first token no dropped attempt had);
    and, with `min_tokens`, no end of the answer (the loop's stop tokens) before it holds that
    many tokens."""

    def __init__(self, record, min_tokens: int = 0):
        self.record = record  # the answer's record (its `tokens` give the position)
        self.banned: dict[int, set[int]] = {}
        self.min_tokens = min_tokens

    def ban(self, position: int, tokens) -> None:
        self.banned.setdefault(position, set()).update(tokens)

    def logits(self, loop: "TokenLoop", logits: torch.Tensor) -> torch.Tensor:
        position = len(self.record.tokens)
        banned = self.banned.get(position, set())
        if position < self.min_tokens:
            banned = banned | set(loop.stop_ids)
        if banned:
            logits = logits.clone()
            logits[:, list(banned)] = float("-inf")
        return logits

