"""A decoding session: one batch's context KV cache, its positions, and its memory.

The session is the engine's only stateful object. It knows nothing about pauses or
fact-checking; the controller drives it through `prefill`, `step`, `truncate` and
`set_memory`. Rolling back is a cache crop, not a recomputation.

The KV cache is transformers' DynamicCache, or with kv_cache="static" one allocated once
(`static_cache.py`), whose decode steps can run as a replayed CUDA graph (`cuda_graph.py`).
"""
from __future__ import annotations

import copy

import torch
from transformers import DynamicCache

from .copies import COPIES, cache_bytes
from .cuda_graph import GraphedStep
from .static_cache import PreallocatedCache

KV_CACHES = ("dynamic", "static")
GRAPH_MODES = (None, "cuda", "eager")
CAPACITY_STEP = 256  # compiled steps: cache capacities rounded up to this, so prompts of similar length share a shape


class DecodingSession:
    """Context decoding over a patched model.

    position_offset: where the context's position ids start. EWE's memory units occupy
    positions 0..M-1, so with a memory the context starts at M; without one, at 0,
    exactly like the unpatched model.
    kv_cache: "dynamic" (transformers' DynamicCache) or "static" (preallocated for the prompt
    plus `reserve` tokens; grown if outrun).
    graph: with the static cache, how one-token steps run: None as ordinary forwards over
    exact-length views; "cuda" as a captured CUDA graph replayed per token; "eager" the same
    fixed-shape step without capture (what the graph replays, runnable on CPU).
    compile: with graph="eager", the fixed-shape step compiled by torch.compile; the cache's
    capacity is then rounded up to a multiple of CAPACITY_STEP, so sessions share compiled shapes.
    """

    def __init__(self, model, memory_state=None, position_offset: int = 0, attention_impl: str | None = None,
                 kv_cache: str = "dynamic", reserve: int = 256, graph: str | None = None, compile: bool = False):
        if kv_cache not in KV_CACHES:
            raise ValueError(f"kv_cache={kv_cache!r} is not one of {KV_CACHES}")
        if graph not in GRAPH_MODES:
            raise ValueError(f"graph={graph!r} is not one of {GRAPH_MODES}")
        if graph is not None and kv_cache != "static":
            raise ValueError(f"graph={graph!r} needs kv_cache='static' (a fixed-shape step needs preallocated buffers)")
        if compile and graph != "eager":
            raise ValueError(f"compile=True compiles the uncaptured fixed-shape step: it needs graph='eager', got {graph!r}")
        self.model = model
        self.kv_cache, self.reserve, self.graph, self.compile = kv_cache, reserve, graph, compile
        self._steps: dict[bool, GraphedStep] = {}  # by whether a memory is read
        self.memory_state = memory_state
        self.position_offset = position_offset
        self.attention_impl = attention_impl
        self.device = next(model.parameters()).device
        self.cache: DynamicCache | None = None
        self.tokens: torch.Tensor | None = None  # [B, T] every context token, prompt included
        self.valid: torch.Tensor | None = None  # [B, T] 0 where a row is left-padded
        self.forward_calls = 0

    @property
    def length(self) -> int:
        """Context tokens in the cache (padding included)."""
        return 0 if self.tokens is None else self.tokens.shape[1]

    def _forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        self.forward_calls += 1
        padded = self.valid is not None and not bool(self.valid.all())
        out = self.model(
            input_ids=input_ids,
            position_ids=positions,
            attention_mask=self.valid if padded else None,
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=1,
            ewe_memory=self.memory_state,
            ewe_attention_impl=self.attention_impl,
        )
        return out.logits[:, -1, :]

    def _positions(self, start: int) -> torch.Tensor:
        """Position ids of tokens start..T-1: offset plus the count of real tokens before each."""
        before = self.valid.cumsum(dim=1) - 1
        return (self.position_offset + before.clamp(min=0))[:, start:]

    @torch.inference_mode()
    def prefill(self, input_ids: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """Start the context with `input_ids` [B, T] (left-padded where `valid` is 0); return last logits [B, V]."""
        self.cache = self._new_cache(input_ids.shape[1])
        self._steps.clear()
        self.tokens = input_ids.to(self.device)
        self.valid = (valid if valid is not None else torch.ones_like(input_ids)).to(self.device).long()
        return self._forward(self.tokens, self._positions(0))

    def _new_cache(self, prompt_tokens: int):
        if self.kv_cache == "static":
            capacity = prompt_tokens + self.reserve
            if self.compile:
                capacity = -(-capacity // CAPACITY_STEP) * CAPACITY_STEP
            return PreallocatedCache(self.model.config, capacity)
        return DynamicCache(config=self.model.config)

    @torch.inference_mode()
    def step(self, next_ids: torch.Tensor) -> torch.Tensor:
        """Append one token per row [B]; return the next logits [B, V]."""
        step = self._graph_step()
        if step is None:
            return self.extend(next_ids.view(-1, 1))
        ids = next_ids.view(-1, 1).to(self.device)
        logits = step(ids)  # (it writes at self.length: the tokens are recorded after it)
        self.forward_calls += 1
        self._append(ids)
        return logits

    def _append(self, ids: torch.Tensor) -> None:
        """Record tokens [B, n] as context, every one a real token."""
        self.tokens = torch.cat([self.tokens, ids], dim=1)
        self.valid = torch.cat([self.valid, torch.ones_like(ids)], dim=1)

    def _graph_step(self) -> GraphedStep | None:
        """The fixed-shape step for the session as it is now, built anew when its buffers moved;
        None where the step runs as an ordinary forward (no graph, or the cache is full: the
        ordinary forward grows it, and the next step captures at the new size)."""
        if self.graph is None or self.length >= self.cache.capacity:
            return None
        reads_memory = self.memory_state is not None and not self.memory_state.is_empty
        step = self._steps.get(reads_memory)
        if step is None or not step.still_valid():
            step = self._steps[reads_memory] = GraphedStep(self, capture=self.graph == "cuda", compile=self.compile)
        return step

    @torch.inference_mode()
    def extend(self, ids: torch.Tensor) -> torch.Tensor:
        """Append tokens [B, n] in one forward pass; return the logits after the last [B, V]."""
        ids = ids.to(self.device)
        start = self.length
        self._append(ids)
        return self._forward(ids, self._positions(start))

    def crop(self, length: int) -> None:
        """Keep the first `length` context tokens, dropping the rest from the cache (no forward pass).

        The logits after the kept text are not known afterwards: feed a token next, or use
        `truncate`, which also recomputes them.
        """
        if not 0 <= length <= self.length:
            raise ValueError(f"crop length={length} must be between 0 and the context length {self.length}")
        if length < self.length:
            self.cache.crop(-(self.length - length))  # transformers 5 crops by a negative count
        self.tokens = self.tokens[:, :length]
        self.valid = self.valid[:, :length]

    @torch.inference_mode()
    def truncate(self, length: int) -> torch.Tensor:
        """Keep the first `length` context tokens and return the logits that follow them [B, V].

        The cache is cropped to length-1 and the last kept token is run again, which
        yields its logits under the memory now set and leaves the cache exactly as a
        fresh run would (the cost of one decoding step).
        """
        if not 1 <= length <= self.length:
            raise ValueError(f"truncate length={length} must be between 1 and the context length {self.length}")
        last = self.tokens[:, length - 1]
        self.crop(length - 1)
        return self.step(last)

    def repeat_rows(self, rows: int, memory_state=None) -> None:
        """Make this one-row session `rows` identical rows reading `memory_state` (one row each)."""
        if self.tokens is None or self.tokens.shape[0] != 1:
            raise ValueError("repeat_rows needs a prefilled session of one row")
        self.cache.batch_repeat_interleave(rows)
        self.tokens = self.tokens.repeat(rows, 1)
        self.valid = self.valid.repeat(rows, 1)
        self.memory_state = memory_state

    def select_rows(self, rows: list[int]) -> None:
        """Keep only these rows of the batch (cache, tokens, memory), in this order: rows that
        stopped leave, so the next steps cost what the rows still writing need."""
        idx = torch.tensor(rows, dtype=torch.long, device=self.device)
        self.cache.batch_select_indices(idx)
        if self.kv_cache == "dynamic":
            COPIES.other_rows += cache_bytes(self.cache)
        self.tokens, self.valid = self.tokens[idx], self.valid[idx]
        if self.memory_state is not None:
            self.memory_state = self.memory_state.select_rows(rows)

    def row_memory(self, row: int):
        """What row `row` reads: a one-row MemoryState, None for none."""
        return None if self.memory_state is None else self.memory_state.select_rows([row])

    def clear(self) -> None:
        """Every row left: the session is empty."""
        self.cache = self.tokens = self.valid = None
        self.memory_state = None

    def fresh(self, memory_state=None) -> "DecodingSession":
        """An empty session with this one's settings (model, positions, kernels, cache), reading `memory_state`."""
        return DecodingSession(self.model, memory_state, self.position_offset, self.attention_impl, self.kv_cache,
                               self.reserve, self.graph, self.compile)

    @torch.inference_mode()
    def branch(self, length: int, rows: int, memory_state=None) -> tuple["DecodingSession", torch.Tensor]:
        """`rows` copies of this one-row session's first `length` tokens, reading `memory_state`.

        Returns the new session and the logits after its last token [rows, V] (that token
        is run again, under the new memory, as `truncate` does). This session is untouched,
        so candidates decoded on the branch share its prefix without recomputing it.
        """
        if not 1 <= length <= self.length:
            raise ValueError(f"branch length={length} must be between 1 and the context length {self.length}")
        out = self.fresh()
        out.cache = copy.deepcopy(self.cache)
        out.tokens, out.valid = self.tokens, self.valid
        out.crop(length - 1)
        out.repeat_rows(rows, memory_state)
        COPIES.branched += cache_bytes(self.cache) + cache_bytes(out.cache)
        return out, out.step(self.tokens[:, length - 1].repeat(rows))

    @torch.inference_mode()
    def read(self, ids: list[int], memory_state=None, reuse: bool = False) -> tuple["DecodingSession", torch.Tensor]:
        """A new one-row session holding `ids` read under `memory_state`, and the logits after them
        [1, V]. reuse: this one-row session's cache was computed under `memory_state`, so the first
        tokens `ids` shares with its context are copied from it and only the rest is read (at least
        the last token, for its logits). This session is untouched."""
        out = self.fresh(memory_state)
        shared = 0
        if reuse and self.kv_cache == "dynamic" and self.tokens is not None:
            if self.tokens.shape[0] != 1:
                raise ValueError("read(reuse=True) copies from a one-row session")
            context = self.tokens[0, self.valid[0].bool()].tolist()
            limit = min(len(context), len(ids) - 1)
            while shared < limit and context[shared] == ids[shared]:
                shared += 1
        if shared == 0:
            return out, out.prefill(torch.tensor([ids]))
        first = int((self.valid[0] == 0).sum())  # this session's left padding
        out.cache = DynamicCache(config=self.model.config)
        for i, layer in enumerate(self.cache.layers):
            out.cache.update(layer.keys[:, :, first:first + shared].clone(),
                             layer.values[:, :, first:first + shared].clone(), i)
        out.tokens = self.tokens[:, first:first + shared].clone()
        out.valid = torch.ones_like(out.tokens)
        return out, out.extend(torch.tensor([ids[shared:]]))

    @torch.inference_mode()
    def set_memory(self, memory_state, reencode: bool = False) -> torch.Tensor | None:
        """Attend to a new memory from the next token on.

        By default the context's cache is kept (the paper's behaviour: only tokens
        generated after the refresh see the new memory). With `reencode=True` the whole
        context is prefilled again over the new memory; the new last logits are returned.
        """
        self.memory_state = memory_state
        if reencode and self.tokens is not None:
            return self.prefill(self.tokens, self.valid)
        return None
