"""What one attention layer sees of the working memory.

Units are stored back to back along the key axis, each keeping only its real tokens
(padding is dropped when a unit is stored), so a batch row's memory is one segment of
keys. Rows of a batch with different memories are right-padded to a common length and
the padding carries a -inf bias.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class LayerMemory:
    """The memory keys and values of one layer, plus what eq. 1 needs to weigh them.

    key, value:      [B, Hkv, N, D] rotated keys and values of all units, concatenated.
    bias:            [B, 1, 1, N] float32 additive bias: 0 on unit tokens, -inf on the
                     padding that equalizes rows; None when no row is padded.
    unit_bounds:     per row, the (start, end) key range of each unit; the literal
                     reference needs units apart, the fused path only their count.
    log_ctx_weight:  [B, 1, 1, 1] float32, log(k_b + 1) for row b holding k_b units:
                     eq. 1 counts the context once per memory unit plus once alone.
    temperature, lse_scale:
                     APE's training-free read-out (Yang et al., 2025; DESIGN.md section 6):
                     memory logits divided by T, and the memory group's log-sum-exp
                     multiplied by T * S before it is merged with the context's. 1 and 1
                     (the default) is eq. 1 exactly.
    """

    key: torch.Tensor
    value: torch.Tensor
    bias: torch.Tensor | None
    unit_bounds: list[list[tuple[int, int]]]
    log_ctx_weight: torch.Tensor
    temperature: float = 1.0
    lse_scale: float = 1.0

    @property
    def is_eq1(self) -> bool:
        """Whether this is the paper's eq. 1 (no APE read-out)."""
        return self.temperature == 1.0 and self.lse_scale == 1.0

    def select_rows(self, rows: list[int]) -> "LayerMemory":
        """The memory of these batch rows only, in this order."""
        idx = torch.tensor(rows, dtype=torch.long, device=self.key.device)
        return LayerMemory(self.key[idx], self.value[idx], None if self.bias is None else self.bias[idx],
                           [self.unit_bounds[r] for r in rows], self.log_ctx_weight[idx.to(self.log_ctx_weight.device)],
                           self.temperature, self.lse_scale)

    @property
    def num_units(self) -> list[int]:
        return [len(b) for b in self.unit_bounds]

    @staticmethod
    def context_weight(num_units: list[int], device: torch.device | str = "cpu") -> torch.Tensor:
        return torch.tensor([math.log(k + 1) for k in num_units], dtype=torch.float32, device=device).view(-1, 1, 1, 1)
