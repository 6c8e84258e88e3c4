"""The working memory: FIFO pools of units: retrieved passages, fact-checking feedback, and (with
subject_units) the prompt's subject article, pinned: added once, before decoding, and never
evicted, since no refresh adds to it (issue 72: a refresh used to evict the subject's passage).

It owns no decoding state. When its contents change it bumps `version`; `state()`
assembles, once per version, the per-layer tensors the patched attention reads.
"""
from __future__ import annotations

from dataclasses import replace

from ..ops import MemoryState
from .encoder import UnitEncoder
from .pools import MemoryPool
from .units import MemoryUnit

POOLS = ("subject", "retrieval", "feedback")


class WorkingMemory:
    """k units of at most M tokens each, split between a retrieval and a feedback pool."""

    def __init__(self, encoder: UnitEncoder, retrieval_units: int, feedback_units: int,
                 temperature: float = 1.0, lse_scale: float = 1.0, subject_units: int = 0):
        self.encoder = encoder
        self.readout = {"temperature": temperature, "lse_scale": lse_scale}  # APE's, see LayerMemory
        self.pools = {"retrieval": MemoryPool("retrieval", retrieval_units), "feedback": MemoryPool("feedback", feedback_units)}
        if subject_units:  # only then: memories without one describe themselves as before
            self.pools = {"subject": MemoryPool("subject", subject_units), **self.pools}
        self.version = 0
        self._states: dict[int, MemoryState] = {}  # row count -> the view, for `_states_version`
        self._states_version = -1

    @property
    def unit_tokens(self) -> int:
        return self.encoder.unit_tokens

    @property
    def capacity(self) -> int:
        return sum(p.capacity for p in self.pools.values())

    @property
    def units(self) -> list[MemoryUnit]:
        return [u for name in POOLS if name in self.pools for u in self.pools[name]]

    def __len__(self) -> int:
        return sum(len(p) for p in self.pools.values())

    def _pool(self, pool: str) -> MemoryPool:
        if pool not in self.pools:
            raise ValueError(f"pool={pool!r} is not a pool of this memory; choose one of {tuple(self.pools)}"
                             + (" (the subject pool needs memory.subject_units >= 1)" if pool == "subject" else ""))
        return self.pools[pool]

    def add(self, texts: list[str], pool: str = "retrieval", meta: list[dict] | None = None) -> dict:
        """Put `texts` into `pool`, encoding only what was never encoded.

        Texts beyond the pool's capacity push out the oldest units (FIFO); when more
        texts arrive at once than the pool holds, the last ones stay. Returns what
        happened: ids added, ids evicted, ids already present. A unit added carries this
        call's `meta` (the encoder reuses a text's tensors, not the meta it first came with:
        the same text may be a pinned chunk and the controller's focus, or retrieved with
        another score).
        """
        target = self._pool(pool)
        units = self.encoder.encode(list(texts), meta)
        added, evicted, present = [], [], []
        for unit, m in zip(units, meta or [None] * len(units)):
            if unit.id in target:
                present.append(unit.id)
                continue
            if m is not None and unit.meta != m:
                unit = replace(unit, meta=dict(m))
            evicted += [u.id for u in target.add(unit)]
            added.append(unit.id)
        added = [uid for uid in added if uid in target]  # a later text of the same call may evict an earlier one
        if added or evicted:
            self.version += 1
        return {"pool": pool, "added": added, "evicted": evicted, "present": present}

    def remove(self, unit_id: str, pool: str | None = None) -> bool:
        """Take the unit out of `pool` (None: the first pool that holds it)."""
        for pool in [self._pool(pool)] if pool else self.pools.values():
            if pool.remove(unit_id) is not None:
                self.version += 1
                return True
        return False

    def clear(self, pool: str | None = None) -> None:
        pools = [self._pool(pool)] if pool else list(self.pools.values())
        if any(len(p) for p in pools):
            self.version += 1
        for p in pools:
            p.clear()

    def footprint(self) -> dict:
        """Bytes held by the units now in memory, per pool, and by the encoder's reuse cache."""
        per_pool = {name: p.nbytes for name, p in self.pools.items()}
        return {
            "units": len(self),
            "tokens": sum(u.num_tokens for u in self.units),
            "bytes": sum(per_pool.values()),
            "bytes_per_pool": per_pool,
            "encoder_cache_units": self.encoder.cached_units,
        }

    def describe(self) -> dict:
        return {name: [u.describe() for u in p] for name, p in self.pools.items()}

    def state_of(self, unit_ids: list[str]) -> "MemoryState":
        """The attention's view of these units alone (one row; each id once), not cached: a view the
        controller reads for one sentence (MemoryRefresh.focus)."""
        chosen = {}
        for u in self.units:
            if u.id in unit_ids:
                chosen.setdefault(u.id, u)
        return MemoryState.from_rows([list(chosen.values())], **self.readout)

    def state(self, rows: int = 1) -> "MemoryState":
        """The attention's view of the memory now, for `rows` batch rows (built once per version and
        row count: candidate rewrites ask for N rows while the answer keeps reading one)."""
        if self._states_version != self.version:
            self._states, self._states_version = {}, self.version
        if rows not in self._states:
            self._states[rows] = MemoryState.from_rows([self.units] * rows, **self.readout)
        return self._states[rows]
