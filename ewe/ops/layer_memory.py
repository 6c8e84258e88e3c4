"""What the patched attention reads of the working memory: one `LayerMemory` per layer, and the
`MemoryState` of a batch that holds them (built from memory units by `MemoryState.from_rows`).

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


@dataclass
class MemoryState:
    """What the patched attention reads: the memory of each batch row, one `LayerMemory` per
    layer (they share the bias, unit bounds, context weights and read-out). Built from unit
    lists with `from_rows`; with no unit in any row there are no layers and attention runs
    on the context alone (a row with no units still gets its log(1) = 0 context weight).
    """

    layers: list[LayerMemory]
    unit_bounds: list[list[tuple[int, int]]]

    @property
    def is_empty(self) -> bool:
        return not any(self.unit_bounds)

    def layer(self, idx: int) -> LayerMemory:
        return self.layers[idx]

    def select_rows(self, rows: list[int]) -> "MemoryState":
        """The memory of these batch rows only, in this order (rows that stopped leave a batch)."""
        return MemoryState([m.select_rows(rows) for m in self.layers], [self.unit_bounds[r] for r in rows])

    @classmethod
    def from_rows(cls, rows: list[list], temperature: float = 1.0, lse_scale: float = 1.0) -> "MemoryState":
        """Each batch row's units (memory/units.py MemoryUnit: keys and values [L, Hkv, n, D], num_tokens)
        back to back, rows right-padded to the longest under a -inf bias."""
        bounds, totals = [], []
        for units in rows:
            start, b = 0, []
            for u in units:
                b.append((start, start + u.num_tokens))
                start += u.num_tokens
            bounds.append(b)
            totals.append(start)
        n = max(totals)
        if n == 0:
            return cls([], bounds)
        ref = next(u for units in rows for u in units)
        log_w = LayerMemory.context_weight([len(b) for b in bounds], ref.keys.device)
        n_layers, hkv, _, d = ref.keys.shape
        shape = (len(rows), n_layers, hkv, n, d)
        keys = ref.keys.new_zeros(shape)
        values = ref.values.new_zeros(shape)
        for r, units in enumerate(rows):
            if units:
                keys[r, :, :, : totals[r]] = torch.cat([u.keys for u in units], dim=2)
                values[r, :, :, : totals[r]] = torch.cat([u.values for u in units], dim=2)
        bias = None
        if min(totals) < n:
            bias = torch.zeros(len(rows), 1, 1, n, device=ref.keys.device)
            for r, t in enumerate(totals):
                bias[r, ..., t:] = float("-inf")
        # one contiguous [B, Hkv, N, D] tensor per layer, so attention reads each without copies
        return cls([LayerMemory(keys[:, i].contiguous(), values[:, i].contiguous(), bias, bounds, log_w,
                                temperature, lse_scale) for i in range(n_layers)], bounds)
