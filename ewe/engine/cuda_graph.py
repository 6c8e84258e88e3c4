"""One decode step as a fixed-shape function, captured as a CUDA graph and replayed per token.

Why: with a small model a decode step waits on Python and on hundreds of kernel launches, not
on the GPU (135M parameters on an H100: 34 tokens/s eager, where streaming the weights allows
thousands). Here everything one step reads sits at a fixed address: the static KV cache
(`static_cache.py`), the working memory in fixed-size slots (empty positions carry a -inf bias),
the token ids and the write position; the context mask and the position ids are computed on the
device from that position. Refreshes, backtracks and pauses happen between replays: a crop only
moves the position, a refresh copies the new memory into the slots, and whatever moves a buffer
(a batch resized, the cache grown, a memory larger than its slots) makes the next step capture
a new graph.

With capture=False the same function runs eagerly (any device): the tests hold its tokens to
the ordinary path's on CPU, where no graph can be captured. With compile=True (CPU) it runs
compiled by torch.compile: one compiled function for every step object, specialized per shape.
"""
from __future__ import annotations

import math

import torch

from .slot_memory import SlotMemory
from .static_cache import PreallocatedCache

MIN_SLOT_TOKENS = 128  # smallest memory capacity; larger memories round up to a power of two
WARMUP_STEPS = 2  # eager runs on a side stream before capture (allocator and library handles settle)


def _memory_slots(state) -> SlotMemory:
    """`state` in slots at fixed addresses, MIN_SLOT_TOKENS positions or the next power of two above its own."""
    n = state.layers[0].key.shape[2]
    slots = SlotMemory.preallocated(state, max(MIN_SLOT_TOKENS, 2 ** math.ceil(math.log2(max(n, 1)))))
    slots.load(state)
    return slots


class GraphedStep:
    """The decode step of one session at its current batch size and memory (see module docstring)."""

    def __init__(self, session, capture: bool, compile: bool = False):
        cache = session.cache
        if not isinstance(cache, PreallocatedCache):
            raise TypeError("a graph step needs the static KV cache (decoding.kv_cache 'static')")
        device, rows = session.device, session.tokens.shape[0]
        if capture and compile:
            raise ValueError("a graph step is captured or compiled, not both (compile is for CPU decoding)")
        self.session, self.cache, self.capture = session, cache, capture
        self.step_fn = _compiled_forward() if compile else GraphedStep.forward
        self.allocations = cache.allocations()
        self.ids = torch.zeros(rows, 1, dtype=torch.long, device=device)
        self.index = torch.zeros(1, dtype=torch.long, device=device)
        self.arange = torch.arange(cache.capacity, device=device)
        self.valid = torch.ones(rows, cache.capacity, dtype=torch.bool, device=device)
        self.valid[:, : session.valid.shape[1]] = session.valid.bool()  # left padding stays masked
        self.row_base = session.position_offset - (session.valid == 0).sum(dim=1, keepdim=True)
        self.prefix = bool(self.valid.all())  # no left padding: each row attends to its first index + 1 positions
        state = session.memory_state
        self.slots = None if state is None or state.is_empty else _memory_slots(state)
        self.source = state  # the MemoryState the slots hold
        self.memory = None if self.slots is None else self.slots.whole_state()  # what attention reads
        self.graph = None
        self.logits = None

    def still_valid(self) -> bool:
        """Whether the captured buffers are still the session's (else a new step must be built)."""
        s = self.session
        if s.cache is not self.cache or self.cache.allocations() != self.allocations:
            return False
        if s.tokens.shape[0] != self.ids.shape[0] or s.length >= self.cache.capacity:
            return False
        state = s.memory_state
        if state is None or state.is_empty:
            return self.slots is None
        if self.slots is None or not self.slots.fits(state):
            return False
        if self.source is not state:
            self.slots.load(state)  # a refresh: new keys into the same slots, between replays
            self.source, self.memory = state, self.slots.whole_state()
        return True

    def forward(self) -> torch.Tensor:
        """The fixed-shape step: what a graph captures, what `compile` compiles."""
        mask = ((self.arange <= self.index) & self.valid)[:, None, None, :]
        lengths = (self.index + 1).to(torch.int32).repeat(self.ids.shape[0]) if self.prefix else None
        self.cache.set_graph_index(self.index)
        try:
            out = self.session.model(
                input_ids=self.ids,
                position_ids=self.row_base + self.index,
                attention_mask=mask,
                past_key_values=self.cache,
                use_cache=True,
                logits_to_keep=1,
                ewe_memory=self.memory,
                ewe_attention_impl=self.session.attention_impl,
                ewe_context_lengths=lengths,  # the mask's, where it is a prefix (ops/flash.py takes them instead)
            )
        finally:
            self.cache.set_graph_index(None)
        return out.logits[:, -1, :]

    def _capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):  # each writes this step's token at the same position: harmless
                self.forward()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self.forward()

    def __call__(self, next_ids: torch.Tensor) -> torch.Tensor:
        """Append one token per row [B]; return the next logits [B, V] (a copy, safe to keep)."""
        length = self.session.length
        self.ids.copy_(next_ids.view(-1, 1))
        self.index.fill_(length)
        if self.capture:
            if self.graph is None:
                self._capture()
            self.graph.replay()
            logits = self.logits.clone()
        else:
            logits = self.step_fn(self)
        self.cache.set_length(length + 1)
        return logits


_COMPILED: list = []


def _compiled_forward():
    """GraphedStep.forward under torch.compile, made once per process (the compiled code is cached
    per code object and shape, so every session's steps share it)."""
    if not _COMPILED:
        _COMPILED.append(torch.compile(GraphedStep.forward, dynamic=False))
    return _COMPILED[0]
