"""The continuous batch's KV cache as per-row slots: rows join, leave and are written back without
copying any other row.

Each layer's keys and values live in buffers [slots, heads, positions, D] allocated once (doubled
only when the batch or a row outgrows them). A row owns one slot and holds its tokens from
position 0 on, so its length is its own: joining copies the row's own cache into a free slot,
leaving frees the slot (nothing moves), and a row written back after a rewind overwrites its
slot alone. Before, rows shared one left-padded cache that `torch.cat` rebuilt whenever a row
joined or left (engine/session.py, which `COPIES` measured at 11 MiB per answer token).

A decode step feeds the rows in use only: each row writes its token's keys at its slot and its
own length (an index_put), and its attention runs at its slot over slots 0..n-1 (n: the rows in
use; modeling/attention.py `ewe_slots` when the batch's row order is not the slots' order),
attending to its first length + 1 positions under a [n, 1, 1, positions] mask (none when every
row has the same length), with those lengths beside it for flash-attention (ops/flash.py). New
rows take the lowest free slot; a slot left free that no joining row took by the next step gets
the row of the highest slot moved down into it (one row's copy, `COPIES.moved`), so a step never
attends over a free slot and slots 0..n-1 are the rows in use.
"""
from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from ..ops.masks import prefix_mask
from .copies import COPIES
from .session import DecodingSession
from .slot_memory import SlotMemory

GROWTH = 2  # slots or positions multiplier when the buffers are outgrown
MIN_POSITIONS = 256


class SlotLayer(DynamicLayer):
    """One decoder layer's slots. A forward through it is a decode step the session planned
    (`SlotCache.plan`): one token for each row in use, written at its slot and its length; attention
    then reads slots 0..n-1."""

    def __init__(self):
        super().__init__()
        self.key_buffer: torch.Tensor | None = None
        self.value_buffer: torch.Tensor | None = None
        self.plan: tuple | None = None

    def allocate(self, like: DynamicLayer, slots: int, positions: int) -> None:
        k, v = like.keys, like.values
        self.key_buffer = k.new_zeros(slots, k.shape[1], positions, k.shape[3])
        self.value_buffer = v.new_zeros(slots, v.shape[1], positions, v.shape[3])
        self.dtype, self.device, self.is_initialized = k.dtype, k.device, True

    def resize(self, slots: int, positions: int) -> None:
        """Larger buffers holding what the old ones held (every slot copied: rare, counted)."""
        for name in ("key_buffer", "value_buffer"):
            old = getattr(self, name)
            new = old.new_zeros(slots, old.shape[1], positions, old.shape[3])
            new[:old.shape[0], :, :old.shape[2]] = old
            setattr(self, name, new)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if self.plan is None:
            raise RuntimeError("a slot cache is written by SlotSession.step only (one token per row)")
        rows, positions, n, length = self.plan
        self.key_buffer[rows, :, positions] = key_states[:, :, 0]
        self.value_buffer[rows, :, positions] = value_states[:, :, 0]
        self.keys, self.values = self.key_buffer[:n, :, :length], self.value_buffer[:n, :, :length]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return 0 if self.plan is None else self.plan[3] - 1

    def get_max_length(self) -> int:
        return -1

    def get_mask_sizes(self, query_length: int, *args) -> tuple[int, int]:
        return (0 if self.plan is None else self.plan[3]), 0


class SlotCache(Cache):
    """One `SlotLayer` per decoder layer."""

    def __init__(self, num_layers: int):
        super().__init__(layers=[SlotLayer() for _ in range(num_layers)])

    @property
    def slots(self) -> int:
        first = self.layers[0].key_buffer
        return 0 if first is None else first.shape[0]

    @property
    def positions(self) -> int:
        first = self.layers[0].key_buffer
        return 0 if first is None else first.shape[2]

    def bytes(self, length: int) -> int:
        """Bytes of one slot's first `length` positions, every layer."""
        return sum(2 * layer.key_buffer[0, :, :length].numel() * layer.key_buffer.element_size()
                   for layer in self.layers)

    def set_plan(self, plan: tuple | None) -> None:
        for layer in self.layers:
            layer.plan = plan


class SlotSession:
    """The rows of a continuous batch (ContinuousLoop), each in its own slot; the same interface
    the loop uses of a DecodingSession: `step`, `add_row`, `select_rows`, `take_row`, `put_row`,
    `clear`, `fresh`, and each row's memory. One-row sessions (a prompt's prefill, a row taken out
    to rewind, a branch) are DecodingSessions made by `fresh`, with `template`'s settings."""

    def __init__(self, template: DecodingSession, slots: int = 1):
        from ..modeling import NAME, attention_of

        if attention_of(template.model) != NAME:
            raise ValueError(f"a slot cache's rows attend at their slots through the {NAME!r} attention "
                             f"(modeling.patch_model); this model runs {attention_of(template.model)!r}")
        self.template = template
        self.model, self.position_offset = template.model, template.position_offset
        self.attention_impl, self.device = template.attention_impl, template.device
        self.initial_slots = max(1, slots)
        self.cache: SlotCache | None = None
        self.order: list[int] = []  # the slot of each batch row, in the batch's row order
        self.lengths: list[int] = []  # tokens each slot holds (a free slot: 0)
        self.tokens: list[list[int]] = []  # each slot's token ids
        self.memories: list = []  # what each slot's row reads: (a MemoryState, its row), None for none
        self.memory = SlotMemory(self.initial_slots)  # the same, in slots attention reads

    # -- rows in and out ------------------------------------------------------------------------

    def fresh(self, memory_state=None) -> DecodingSession:
        return self.template.fresh(memory_state)

    def _free_slot(self) -> int:
        used = set(self.order)
        return next(s for s in range(len(self.lengths) + 1) if s not in used)

    def _ensure(self, slot: int, length: int, like: DynamicCache | None = None) -> None:
        """Buffers with a slot `slot` and `length` positions (allocated from `like`'s shapes, or grown)."""
        if self.cache is None:
            self.cache = SlotCache(len(like.layers))
            positions = max(MIN_POSITIONS, GROWTH * length)
            for layer, part in zip(self.cache.layers, like.layers):
                layer.allocate(part, max(self.initial_slots, slot + 1), positions)
        elif slot >= self.cache.slots or length > self.cache.positions:
            slots = self.cache.slots * GROWTH if slot >= self.cache.slots else self.cache.slots
            slots = max(slots, slot + 1)
            positions = max(self.cache.positions * GROWTH, length) if length > self.cache.positions else self.cache.positions
            grown = sum(self.cache.bytes(self.lengths[s]) for s in self.order)
            COPIES.grown += grown
            COPIES.other_rows += grown
            for layer in self.cache.layers:
                layer.resize(slots, positions)
        while len(self.lengths) <= slot:
            self.lengths.append(0)
            self.tokens.append([])
            self.memories.append(None)

    def _write(self, slot: int, part: DecodingSession, row: int) -> None:
        """Slot `slot` holds row `row` of `part` (its real tokens, padding dropped)."""
        valid = part.valid[row]
        keep = slice(None) if bool(valid.all()) else valid.nonzero().view(-1)  # a slice copies once
        length = int(valid.sum())
        self._ensure(slot, length + 1, part.cache)
        for layer, new in zip(self.cache.layers, part.cache.layers):
            layer.key_buffer[slot, :, :length] = new.keys[row, :, keep]
            layer.value_buffer[slot, :, :length] = new.values[row, :, keep]
        COPIES.own_rows += self.cache.bytes(length)
        self.lengths[slot], self.tokens[slot] = length, part.tokens[row, keep].tolist()

    @torch.inference_mode()
    def add_row(self, part: DecodingSession) -> None:
        """The rows of `part` (a prefilled session) join as the batch's last rows, each in a free
        slot, each reading its own memory."""
        for row in range(part.tokens.shape[0]):
            slot = self._free_slot()
            self._write(slot, part, row)
            self._set_memory(slot, part.memory_state, row)
            self.order.append(slot)

    def select_rows(self, rows: list[int]) -> None:
        """Keep only these rows, in this order; the others' slots are free (nothing is copied)."""
        kept = [self.order[r] for r in rows]
        for slot in set(self.order) - set(kept):
            self.lengths[slot], self.tokens[slot] = 0, []
            self._set_memory(slot, None)
        self.order = kept

    def clear(self) -> None:
        """Every row left (the buffers stay, for the rows to come)."""
        self.select_rows([])

    @torch.inference_mode()
    def take_row(self, row: int) -> DecodingSession:
        """Row `row` as a one-row session of its own (a copy of its slot), reading its own memory."""
        slot, length = self.order[row], self.lengths[self.order[row]]
        out = self.fresh(self._one_row(slot))
        out.cache = DynamicCache(config=self.model.config)
        for i, layer in enumerate(self.cache.layers):
            out.cache.update(layer.key_buffer[slot:slot + 1, :, :length].clone(),
                             layer.value_buffer[slot:slot + 1, :, :length].clone(), i)
        out.tokens = torch.tensor([self.tokens[slot]], device=self.device)
        out.valid = torch.ones_like(out.tokens)
        COPIES.own_rows += self.cache.bytes(length)
        return out

    @torch.inference_mode()
    def put_row(self, row: int, part: DecodingSession) -> None:
        """Row `row` holds `part` (a one-row session from `take_row`, since cropped or extended)."""
        self._write(self.order[row], part, 0)

    # -- each row's memory ----------------------------------------------------------------------

    def row_memory(self, row: int):
        """What row `row` reads: a one-row MemoryState, None for none."""
        return self._one_row(self.order[row])

    def set_row_memory(self, row: int, state) -> None:
        """Row `row` reads `state` (a one-row MemoryState) from its next token on (the others keep theirs)."""
        self._set_memory(self.order[row], state)

    def _set_memory(self, slot: int, state, row: int = 0) -> None:
        """Slot `slot` reads row `row` of `state` (its memory slot written from it directly; the one-row
        state is only cut out of it when the row is taken out)."""
        own = None if state is None or not state.unit_bounds[row] else (state, row)
        self.memories[slot] = own
        self.memory.set(slot, state if own else None, row)

    def _one_row(self, slot: int):
        if self.memories[slot] is None:
            return None
        state, row = self.memories[slot]
        return state if len(state.unit_bounds) == 1 else state.select_rows([row])

    # -- decoding -------------------------------------------------------------------------------

    @torch.inference_mode()
    def _fill_free_slots(self) -> None:
        """Move the row of the highest slot into the lowest free slot below it until slots 0..n-1
        are the n rows in use."""
        while (top := max(self.order)) >= len(self.order):
            used = set(self.order)
            self._move(top, next(s for s in range(top) if s not in used))

    def _move(self, source: int, slot: int) -> None:
        """The row of slot `source` now sits in the free slot `slot` (its cache, tokens and memory)."""
        length = self.lengths[source]
        for layer in self.cache.layers:
            layer.key_buffer[slot, :, :length] = layer.key_buffer[source, :, :length]
            layer.value_buffer[slot, :, :length] = layer.value_buffer[source, :, :length]
        moved = self.cache.bytes(length)
        COPIES.moved += moved
        COPIES.other_rows += moved
        self.lengths[slot], self.tokens[slot], self.memories[slot] = length, self.tokens[source], self.memories[source]
        self.lengths[source], self.tokens[source], self.memories[source] = 0, [], None
        self.memory.move(source, slot)
        self.order[self.order.index(source)] = slot

    @torch.inference_mode()
    def step(self, next_ids: torch.Tensor) -> torch.Tensor:
        """Append one token to each row [rows]; return each row's next logits [rows, V]."""
        self._fill_free_slots()
        n = len(self.order)  # slots 0..n-1, every one in use
        length = max(self.lengths[s] for s in self.order) + 1
        self._ensure(n - 1, length)
        rows = torch.tensor(self.order, device=self.device)
        lengths = torch.tensor(self.lengths[:n], device=self.device)
        in_order = self.order == list(range(n))  # the batch's rows are the slots in order
        if all(self.lengths[s] == length - 1 for s in self.order):
            mask = attended = None  # every row attends to every position: plain causal, as a one-row session
        else:
            attended = (lengths + 1).to(torch.int32)  # by slot: its cache and the token it writes now
            mask = prefix_mask(attended, length)
        self.cache.set_plan((rows, lengths[rows], n, length))
        try:
            out = self.model(
                input_ids=next_ids.to(self.device).view(-1, 1),
                position_ids=(self.position_offset + lengths[rows])[:, None],
                attention_mask=mask,  # by slot: attention runs at the slots (ewe_slots)
                past_key_values=self.cache,
                use_cache=True,
                logits_to_keep=1,
                ewe_memory=self.memory.state(n),
                ewe_attention_impl=self.attention_impl,
                ewe_slots=None if in_order else rows,
                ewe_context_lengths=attended,  # the mask's lengths, for kernels that take them (ops/flash.py)
            )
        finally:
            self.cache.set_plan(None)
        for slot, token in zip(self.order, next_ids.view(-1).tolist()):
            self.lengths[slot] += 1
            self.tokens[slot].append(token)
        return out.logits[:, -1, :]
