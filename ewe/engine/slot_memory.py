"""The continuous batch's working memories as per-row slots, beside its KV cache's (slots.py).

Each layer's memory keys and values live in buffers [slots, Hkv, positions, D]; a slot's row
holds its units from position 0, with a bias of 0 on them and -inf after, and log(k + 1) for its
k units. A row that joins, leaves, or refreshes its memory writes its own slot only: before, the
batch's memory was stacked anew from every row's at each of those events.
Attention reads slots 0..n-1 as one `MemoryState` of views, nothing copied, up to the last
position any of them holds (the room left for a refresh's units is not read).

A captured decode step (cuda_graph.py) keeps its memory here too, at fixed addresses:
`preallocated` buffers of a fixed size, every row written at once by `load` (a refresh between
replays), and `whole_state` read over all positions, so every replay reads the same shapes.
"""
from __future__ import annotations

import torch

from ..ops.layer_memory import LayerMemory, MemoryState
from .copies import COPIES

GROWTH = 2


class SlotMemory:
    """What each slot's row reads (see the module docstring); `set(slot, state)`, `state(n)`."""

    def __init__(self, slots: int = 1):
        self.initial_slots = slots
        self.keys: list[torch.Tensor] = []  # per layer [slots, Hkv, positions, D]
        self.values: list[torch.Tensor] = []
        self.bias: torch.Tensor | None = None  # [slots, 1, 1, positions]
        self.log_w: torch.Tensor | None = None  # [slots, 1, 1, 1]
        self.bounds: list[list[tuple[int, int]]] = []  # each slot's units' (start, end)
        self.readout: tuple[float, float] | None = None  # (temperature, lse_scale), one for the batch

    @classmethod
    def preallocated(cls, like, positions: int) -> "SlotMemory":
        """Slots for each row of the MemoryState `like`, of `positions` positions each (see `load`)."""
        memory = cls(like.layers[0].key.shape[0])
        memory.allocate(like, memory.initial_slots, positions)
        return memory

    def allocate(self, like, slots: int, positions: int) -> None:
        """Empty buffers (no slot reads anything) of `slots` slots and `positions` positions, laid out as `like`'s."""
        first = like.layers[0]
        self.keys = [m.key.new_zeros(slots, m.key.shape[1], positions, m.key.shape[3]) for m in like.layers]
        self.values = [m.value.new_zeros(slots, m.value.shape[1], positions, m.value.shape[3]) for m in like.layers]
        self.bias = torch.full((slots, 1, 1, positions), float("-inf"), device=first.key.device)
        self.log_w = torch.zeros(slots, 1, 1, 1, device=first.key.device)
        self.readout = (first.temperature, first.lse_scale)

    def _grow(self, slots: int, positions: int) -> None:
        """Buffers of at least `slots` slots and `positions` positions (doubled), holding what the
        old ones held (every slot copied: counted as grown, rare)."""
        old_slots, old_positions = self.bias.shape[0], self.bias.shape[3]
        slots = max(slots, GROWTH * old_slots) if slots > old_slots else old_slots
        positions = max(positions, GROWTH * old_positions) if positions > old_positions else old_positions
        held = sum(b[-1][1] for b in self.bounds if b)  # the rows' unit tokens, what is copied that matters
        COPIES.grown += sum(2 * held * k[0, :, 0].numel() * k.element_size() for k in self.keys)
        for buffers in (self.keys, self.values):
            for i, old in enumerate(buffers):
                buffers[i] = old.new_zeros(slots, old.shape[1], positions, old.shape[3])
                buffers[i][:old_slots, :, :old_positions] = old
        bias, log_w = self.bias, self.log_w
        self.bias = bias.new_full((slots, 1, 1, positions), float("-inf"))
        self.bias[:old_slots, ..., :old_positions] = bias
        self.log_w = log_w.new_zeros(slots, 1, 1, 1)
        self.log_w[:old_slots] = log_w

    @torch.inference_mode()
    def set(self, slot: int, state, row: int = 0) -> None:
        """Slot `slot`'s row reads row `row` of `state` (a MemoryState; None or no units there: no memory)."""
        while len(self.bounds) <= slot:
            self.bounds.append([])
        if state is None or not state.unit_bounds[row]:
            if self.bias is not None and slot < self.bias.shape[0]:
                self.bias[slot] = float("-inf")
                self.log_w[slot] = 0.0
            self.bounds[slot] = []
            return
        first = state.layers[0]
        total = state.unit_bounds[row][-1][1]
        if self.bias is None:
            self.allocate(state, max(self.initial_slots, slot + 1), GROWTH * total)  # room for a refresh's units
        elif (first.temperature, first.lse_scale) != self.readout:
            raise ValueError(f"rows of one batch read their memories one way: {self.readout} (temperature, "
                             f"lse_scale) here, {(first.temperature, first.lse_scale)} for the row joining")
        if slot >= self.bias.shape[0] or total > self.bias.shape[3]:
            self._grow(slot + 1, total)
        for keys, values, layer in zip(self.keys, self.values, state.layers):
            keys[slot, :, :total] = layer.key[row, :, :total]
            values[slot, :, :total] = layer.value[row, :, :total]
        self.bias[slot] = float("-inf")
        self.bias[slot, ..., :total] = 0.0 if first.bias is None else first.bias[row, ..., :total]
        self.log_w[slot] = first.log_ctx_weight[row]
        self.bounds[slot] = list(state.unit_bounds[row])

    @torch.inference_mode()
    def move(self, source: int, slot: int) -> None:
        """Slot `slot` reads what slot `source` read; `source` reads nothing (a row moved down)."""
        while len(self.bounds) <= max(source, slot):
            self.bounds.append([])
        if self.bounds[source]:
            total = self.bounds[source][-1][1]
            for buffers in (self.keys, self.values):
                for b in buffers:
                    b[slot, :, :total] = b[source, :, :total]
            self.bias[slot] = self.bias[source]
            self.log_w[slot] = self.log_w[source]
        elif self.bias is not None and slot < self.bias.shape[0]:
            self.bias[slot] = float("-inf")
            self.log_w[slot] = 0.0
        self.bounds[slot] = self.bounds[source]
        self.set(source, None)

    def fits(self, state) -> bool:
        """Whether `load` can write `state` into these buffers as they are (same rows, layers, dtype, read-out)."""
        first = state.layers[0]
        return (self.bias is not None and len(state.layers) == len(self.keys)
                and first.key.shape[0] == self.bias.shape[0] and first.key.shape[2] <= self.bias.shape[3]
                and first.key.dtype == self.keys[0].dtype and (first.temperature, first.lse_scale) == self.readout)

    @torch.inference_mode()
    def load(self, state) -> None:
        """Row b of `state` into slot b, every row at once, nothing reallocated (the caller checked `fits`)."""
        n = state.layers[0].key.shape[2]
        for key, value, layer in zip(self.keys, self.values, state.layers):
            key[:, :, :n].copy_(layer.key)
            value[:, :, :n].copy_(layer.value)
        self.bias.fill_(float("-inf"))
        bias = state.layers[0].bias
        if bias is None:
            self.bias[..., :n] = 0.0
        else:
            self.bias[..., :n].copy_(bias)
        self.log_w.copy_(state.layers[0].log_ctx_weight)
        self.bounds = [list(b) for b in state.unit_bounds]

    def whole_state(self):
        """Every slot over every position as one MemoryState: the same tensors whatever the slots hold."""

        return MemoryState([LayerMemory(k, v, self.bias, self.bounds, self.log_w, *self.readout)
                            for k, v in zip(self.keys, self.values)], self.bounds)

    @torch.inference_mode()
    def state(self, n: int):
        """Slots 0..n-1 as one batch's MemoryState (views); None when none of them holds a unit."""
        if self.bias is None or not any(self.bounds[s] for s in range(min(n, len(self.bounds)))):
            return None

        if n > self.bias.shape[0]:
            self._grow(n, self.bias.shape[3])
        bounds = [self.bounds[s] if s < len(self.bounds) else [] for s in range(n)]
        used = max(b[-1][1] for b in bounds if b)  # the positions any of them reads (the room after costs nothing)
        return MemoryState([LayerMemory(k[:n, :, :used], v[:n, :, :used], self.bias[:n, ..., :used], bounds,
                                        self.log_w[:n], *self.readout)
                            for k, v in zip(self.keys, self.values)], bounds)
