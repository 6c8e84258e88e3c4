"""The token loop: sample, append, stop at end of sequence or at the token budget."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .sampling import Sampler
from .session import DecodingSession


@dataclass
class Continuation:
    """What one batch row generated."""

    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    finish_reason: str | None = None  # "eos" or "length"


def decode(
    session: DecodingSession,
    logits: torch.Tensor,
    sampler: Sampler,
    max_new_tokens: int,
    stop_ids: set[int],
) -> list[Continuation]:
    """Continue every row of `session` from `logits` [B, V] until it stops.

    A row that stopped keeps being fed its stop token (its output no longer grows) so
    the batch stays rectangular; the loop ends when every row has stopped.
    """
    rows = [Continuation() for _ in range(logits.shape[0])]
    for step in range(max_new_tokens):
        ids, logprobs, entropies = sampler(logits)
        for row, (tok, lp, ent) in enumerate(zip(ids.tolist(), logprobs.tolist(), entropies.tolist())):
            cont = rows[row]
            if cont.finish_reason:
                ids[row] = next(iter(stop_ids)) if stop_ids else tok
                continue
            if tok in stop_ids:
                cont.finish_reason = "eos"
                continue
            cont.token_ids.append(tok)
            cont.logprobs.append(lp)
            cont.entropies.append(ent)
        if all(c.finish_reason for c in rows) or step == max_new_tokens - 1:
            break
        logits = session.step(ids)
    for cont in rows:
        cont.finish_reason = cont.finish_reason or "length"
    return rows
