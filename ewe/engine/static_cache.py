"""A KV cache allocated once: cropping moves an index, and a decode step has a fixed shape.

Each layer's keys and values live in buffers of `capacity` positions, allocated at the first
forward (the prompt plus the answer's most tokens) and doubled only if an answer outruns them.
An eager forward sees exact-length views of the buffers, so it computes what transformers'
DynamicCache gives, without DynamicCache's concatenation of the whole cache at every step. A
graph step (`engine/cuda_graph.py`) instead writes one token per row at a device-side index
and reads the whole buffer under a mask: the same kernels on the same addresses every token.
"""
from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicLayer

GROWTH = 2  # capacity multiplier when an answer outruns the buffers (graphs are captured again then)


class PreallocatedLayer(DynamicLayer):
    """DynamicLayer's behaviour (exact-length `keys`/`values`) over preallocated buffers."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self.graph_index: torch.Tensor | None = None  # set while a graph step is captured or warmed up
        self.allocations = 0  # buffers (re)allocated so far: a captured graph holds the old addresses

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        b, h, _, d = key_states.shape
        self.key_buffer = key_states.new_zeros(b, h, self.capacity, d)
        self.value_buffer = value_states.new_zeros(b, h, self.capacity, value_states.shape[-1])
        self.allocations += 1
        self.is_initialized = True
        self.set_length(0)

    def set_length(self, length: int) -> None:
        """Make the first `length` positions the cache (a crop, or the token a graph step wrote)."""
        self.length = length
        self.keys = self.key_buffer.narrow(2, 0, length)
        self.values = self.value_buffer.narrow(2, 0, length)

    def _grow(self, needed: int) -> None:
        capacity = max(needed, self.capacity * GROWTH)
        keys, values = self.key_buffer, self.value_buffer
        self.key_buffer = keys.new_zeros(*keys.shape[:2], capacity, keys.shape[3])
        self.value_buffer = values.new_zeros(*values.shape[:2], capacity, values.shape[3])
        self.key_buffer[:, :, : self.length] = keys[:, :, : self.length]
        self.value_buffer[:, :, : self.length] = values[:, :, : self.length]
        self.capacity = capacity
        self.allocations += 1

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if self.graph_index is not None:  # a graph step: one token per row, at a position held on the device
            self.key_buffer.index_copy_(2, self.graph_index, key_states)
            self.value_buffer.index_copy_(2, self.graph_index, value_states)
            return self.key_buffer, self.value_buffer
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            self._grow(end)
        self.key_buffer.narrow(2, self.length, end - self.length).copy_(key_states)
        self.value_buffer.narrow(2, self.length, end - self.length).copy_(value_states)
        self.set_length(end)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1  # grows when needed, like DynamicLayer: masks are built for the exact length

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError(f"crop takes a negative count of tokens to remove, got {tokens_to_remove}")
        if tokens_to_remove and self.is_initialized:
            self.set_length(max(0, self.length - abs(tokens_to_remove)))

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.is_initialized:
            self.key_buffer = self.key_buffer.repeat_interleave(repeats, dim=0)
            self.value_buffer = self.value_buffer.repeat_interleave(repeats, dim=0)
            self.allocations += 1
            self.set_length(self.length)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self.key_buffer = self.key_buffer[indices]
            self.value_buffer = self.value_buffer[indices]
            self.allocations += 1
            self.set_length(self.length)

    def reset(self) -> None:
        if self.is_initialized:
            self.set_length(0)


class PreallocatedCache(Cache):
    """One `PreallocatedLayer` per decoder layer, `capacity` positions each."""

    def __init__(self, config, capacity: int):
        text = config.get_text_config(decoder=True)
        kinds = set(getattr(text, "layer_types", None) or ["full_attention"])
        if kinds != {"full_attention"}:
            raise ValueError(f"decoding.kv_cache 'static' supports full-attention layers only; this model has "
                             f"{sorted(kinds)}: use decoding.kv_cache 'dynamic'")
        if capacity < 1:
            raise ValueError(f"a static KV cache needs a capacity of at least 1 position, got {capacity}")
        super().__init__(layers=[PreallocatedLayer(capacity) for _ in range(text.num_hidden_layers)])

    @property
    def capacity(self) -> int:
        return self.layers[0].capacity

    def allocations(self) -> int:
        """Grows whenever any layer's buffers are allocated anew: a captured graph is valid while it is unchanged."""
        return sum(layer.allocations for layer in self.layers)

    def set_length(self, length: int) -> None:
        for layer in self.layers:
            layer.set_length(length)

    def set_graph_index(self, index: torch.Tensor | None) -> None:
        for layer in self.layers:
            layer.graph_index = index
