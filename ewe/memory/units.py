"""A memory unit: one passage or feedback message and its own KV cache."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import torch


def unit_id(text: str) -> str:
    """Content address of a passage: the same text is the same unit, wherever it came from."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class MemoryUnit:
    """One passage encoded on its own with position ids 0..m-1.

    keys, values: [n_layers, Hkv, m, D], rotated keys as the model caches them; padding
    used while encoding is already dropped, so m is the unit's real token count.
    """

    id: str
    text: str
    token_ids: list[int]
    keys: torch.Tensor
    values: torch.Tensor
    truncated: bool = False
    meta: dict = field(default_factory=dict)

    @property
    def num_tokens(self) -> int:
        return self.keys.shape[2]

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.values.nbytes

    def describe(self, chars: int = 80) -> dict:
        text = self.text if len(self.text) <= chars else self.text[: chars - 3] + "..."
        return {"id": self.id, "tokens": self.num_tokens, "text": text, **self.meta}
