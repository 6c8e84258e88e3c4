"""The continuous batch's KV cache as per-row slots: rows join, leave and rewind without copying
any other row, and a rewind copies nothing at all.

Each layer's keys and values live in buffers [slots, heads, positions, D] allocated once (doubled
only when the batch or a row outgrows them). A row owns one slot and holds its tokens from
position 0 on, so its length is its own: joining copies the row's own cache into a free slot,
leaving frees the slot (nothing moves), and a rewind is a change of the row's length followed by
one forward of that row alone at its slot (`SlotRow`: no KV copied). A row waiting out its
branch is held in its slot (`hold`), out of the steps, and the branch's rows copy its prefix
straight from the slot (`branch`). Before, rows shared one left-padded cache that `torch.cat` rebuilt whenever a row
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


class RowLayer(DynamicLayer):
    """One slot of a `SlotLayer` seen as a one-row cache holding its first `start` positions: a
    forward writes its tokens' keys at the slot from `start` on and attends over the slot's
    positions up to them (views of the buffers, nothing copied)."""

    def __init__(self, slots: SlotLayer, slot: int, start: int):
        super().__init__()
        self.slots, self.slot, self.start = slots, slot, start
        self.dtype, self.device, self.is_initialized = slots.dtype, slots.device, True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        end = self.start + key_states.shape[2]
        self.slots.key_buffer[self.slot, :, self.start:end] = key_states[0]
        self.slots.value_buffer[self.slot, :, self.start:end] = value_states[0]
        self.keys = self.slots.key_buffer[self.slot:self.slot + 1, :, :end]
        self.values = self.slots.value_buffer[self.slot:self.slot + 1, :, :end]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.start

    def get_max_length(self) -> int:
        return -1

    def get_mask_sizes(self, query_length: int, *args) -> tuple[int, int]:
        return self.start + query_length, 0


class RowCache(Cache):
    """One `RowLayer` per decoder layer: one slot's row as the cache of a one-row forward."""

    def __init__(self, cache: SlotCache, slot: int, start: int):
        super().__init__(layers=[RowLayer(layer, slot, start) for layer in cache.layers])


class SlotSession:
    """The rows of a continuous batch (ContinuousLoop), each in its own slot; the interface the
    loop uses of a DecodingSession (`step`, `add_row`, `select_rows`, `clear`, `fresh`, each row's
    memory), and what it does to one row in its slot: `hold` it out of the steps and `release` it,
    rewind it (`row`: a `SlotRow`), `branch` from it, `view` it. One-row sessions (a prompt's
    prefill, a branch's rows) are DecodingSessions made by `fresh`, with `template`'s settings."""

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
        self.held: set[int] = set()  # slots of rows out of the steps (rewinding, waiting for a branch)
        self.lengths: list[int] = []  # tokens each slot holds (a free slot: 0)
        self.tokens: list[list[int]] = []  # each slot's token ids
        self.memories: list = []  # what each slot's row reads: (a MemoryState, its row), None for none
        self.memory = SlotMemory(self.initial_slots)  # the same, in slots attention reads

    # -- rows in and out ------------------------------------------------------------------------

    def fresh(self, memory_state=None) -> DecodingSession:
        return self.template.fresh(memory_state)

    def _free_slot(self) -> int:
        used = set(self.order) | self.held
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

    def hold(self, row: int) -> int:
        """Take batch row `row` out of the steps, keeping its slot (its cache stays where it is);
        the slot, by which it is rewound, branched from and released."""
        slot = self.order.pop(row)
        self.held.add(slot)
        return slot

    def release(self, slot: int) -> None:
        """The held row of `slot` joins the steps again, as the batch's last row."""
        self.held.remove(slot)
        self.order.append(slot)

    def free(self, slot: int) -> None:
        """The held row of `slot` ended: its slot is free."""
        self.held.remove(slot)
        self.lengths[slot], self.tokens[slot] = 0, []
        self._set_memory(slot, None)

    def row(self, slot: int) -> "SlotRow":
        """The held row of `slot` as the one-row session a Rewind is carried out on."""
        return SlotRow(self, slot)

    def view(self, slot: int) -> DecodingSession:
        """The row of `slot` as a one-row session over views of its slot (nothing copied; reading
        from it is fine, writing to it is not: `read` copies what it takes)."""
        length = self.lengths[slot]
        out = self.fresh(self._one_row(slot))
        out.cache = DynamicCache(config=self.model.config)
        for i, layer in enumerate(self.cache.layers):
            out.cache.update(layer.key_buffer[slot:slot + 1, :, :length], layer.value_buffer[slot:slot + 1, :, :length], i)
        out.tokens = torch.tensor([self.tokens[slot]], device=self.device)
        out.valid = torch.ones_like(out.tokens)
        return out

    @torch.inference_mode()
    def branch(self, slot: int, length: int, rows: int, memory_state=None) -> tuple[DecodingSession, torch.Tensor]:
        """`DecodingSession.branch` from the row of `slot`: `rows` copies of its first `length`
        tokens (the last run again under `memory_state`) as a new session, and their logits [rows, V].
        The prefix is copied once per row, straight from the slot (counted as `branched`)."""
        if not 1 <= length <= self.lengths[slot]:
            raise ValueError(f"branch length={length} must be between 1 and the row's length {self.lengths[slot]}")
        out = self.fresh()
        out.cache = DynamicCache(config=self.model.config)
        for i, layer in enumerate(self.cache.layers):
            out.cache.update(layer.key_buffer[slot:slot + 1, :, :length - 1].repeat(rows, 1, 1, 1),
                             layer.value_buffer[slot:slot + 1, :, :length - 1].repeat(rows, 1, 1, 1), i)
        COPIES.branched += rows * self.cache.bytes(length - 1)
        out.tokens = torch.tensor([self.tokens[slot][:length - 1]] * rows, device=self.device)
        out.valid = torch.ones_like(out.tokens)
        out.memory_state = memory_state
        return out, out.step(torch.tensor([self.tokens[slot][length - 1]] * rows))

    @torch.inference_mode()
    def forward_row(self, slot: int, ids: list[int]) -> torch.Tensor:
        """Append `ids` to the row of `slot` in one forward of that row alone, at its slot, reading
        its own memory; the logits after the last [1, V]."""
        start = self.lengths[slot]
        self._ensure(slot, start + len(ids))
        out = self.model(
            input_ids=torch.tensor([ids], device=self.device),
            position_ids=(self.position_offset + torch.arange(start, start + len(ids), device=self.device))[None],
            attention_mask=None,
            past_key_values=self.row_cache(slot),
            use_cache=True,
            logits_to_keep=1,
            ewe_memory=self._one_row(slot),
            ewe_attention_impl=self.attention_impl,
        )
        self.lengths[slot] += len(ids)
        self.tokens[slot] += list(ids)
        return out.logits[:, -1, :]

    def row_cache(self, slot: int) -> RowCache:
        """The cache a one-row forward of `slot` writes through (its first `lengths[slot]` positions kept)."""
        return RowCache(self.cache, slot, self.lengths[slot])

    def crop_row(self, slot: int, length: int) -> None:
        """The row of `slot` keeps its first `length` tokens: a change of its length, nothing moved."""
        if not 0 <= length <= self.lengths[slot]:
            raise ValueError(f"crop length={length} must be between 0 and the row's length {self.lengths[slot]}")
        self.lengths[slot] = length
        del self.tokens[slot][length:]

    # -- each row's memory ----------------------------------------------------------------------

    def row_memory(self, row: int):
        """What row `row` reads: a one-row MemoryState, None for none."""
        return self._one_row(self.order[row])

    def set_row_memory(self, row: int, state) -> None:
        """Row `row` reads `state` (a one-row MemoryState) from its next token on (the others keep theirs)."""
        self._set_memory(self.order[row], state)

    def set_slot_memory(self, slot: int, state) -> None:
        """The row of `slot` (held, or a batch row) reads `state` from its next token on."""
        self._set_memory(slot, state)

    def _set_memory(self, slot: int, state, row: int = 0) -> None:
        """Slot `slot` reads row `row` of `state` (its memory slot written from it directly; the one-row
        state is only cut out of it for a forward of that row alone)."""
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
        are the n rows in use (held rows stay in their slots: a free slot below one stays free
        until it is released)."""
        while self.order and (top := max(self.order)) >= len(self.order) + len(self.held):
            used = set(self.order) | self.held  # fewer than top + 1 slots in use: one below top is free
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
        n = max(self.order) + 1  # slots 0..n-1: every one in use, but for held rows (and free slots below them)
        if self.held:
            n = max(n, max(self.held) + 1)
        length = max(self.lengths[s] for s in self.order) + 1
        self._ensure(n - 1, length)
        rows = torch.tensor(self.order, device=self.device)
        lengths = torch.tensor(self.lengths[:n], device=self.device)  # (a free or held slot: not fed)
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


class SlotRow:
    """A held row in its slot as the one-row session a Rewind is carried out on (loop.py
    `_rewind`): `truncate` is a change of its length and one forward of its last kept token,
    `extend` and `step` forwards of the row alone at its slot. No KV is copied."""

    def __init__(self, slots: SlotSession, slot: int):
        self.slots, self.slot = slots, slot

    @property
    def length(self) -> int:
        return self.slots.lengths[self.slot]

    def truncate(self, length: int) -> torch.Tensor:
        if not 1 <= length <= self.length:
            raise ValueError(f"truncate length={length} must be between 1 and the row's length {self.length}")
        last = self.slots.tokens[self.slot][length - 1]
        self.slots.crop_row(self.slot, length - 1)
        return self.slots.forward_row(self.slot, [last])

    def extend(self, ids: torch.Tensor) -> torch.Tensor:
        return self.slots.forward_row(self.slot, ids.view(-1).tolist())

    def step(self, next_ids: torch.Tensor) -> torch.Tensor:
        return self.slots.forward_row(self.slot, next_ids.view(-1).tolist())
