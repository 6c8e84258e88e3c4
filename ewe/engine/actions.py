"""What a hook says to the token loop: the answers of `Hook` (go on, `Rewind`, `Stop`) and the
record a row writes (`Continuation`). Plain types without torch, so that a method module can
define its hooks without loading the model's libraries (a configuration is checked by the
method's own module)."""
from __future__ import annotations

from dataclasses import dataclass, field

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
class Stop:
    """End this row here: its record keeps what it has (a batch of candidates ends row by row)."""

    reason: str = "stop"


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

    def on_token(self, loop: "TokenLoop", row: int, token: int, completed: list) -> Rewind | Stop | None:
        """`token` joined the answer of `row`; `completed`: what the row's record reports it completed."""
        return None

    def on_end(self, loop: "TokenLoop", row: int, reason: str) -> Rewind | None:
        """The row is about to stop for `reason` ("eos", "length", "budget"); a Rewind goes on instead."""
        return None
