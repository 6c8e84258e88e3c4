"""Pools of memory units with their own capacity and first-in, first-out eviction."""
from __future__ import annotations

from collections import OrderedDict

from .units import MemoryUnit


class MemoryPool:
    """An ordered set of units, oldest first; adding to a full pool evicts the oldest.

    Re-adding a unit already present leaves its place unchanged (the paper's FIFO is over
    arrivals of new knowledge, and a passage retrieved again is not new).
    """

    def __init__(self, name: str, capacity: int):
        if capacity < 0:
            raise ValueError(f"{name} pool capacity={capacity} must be >= 0")
        self.name = name
        self.capacity = capacity
        self._units: OrderedDict[str, MemoryUnit] = OrderedDict()

    def __len__(self) -> int:
        return len(self._units)

    def __contains__(self, unit_id: str) -> bool:
        return unit_id in self._units

    def __iter__(self):
        return iter(self._units.values())

    @property
    def units(self) -> list[MemoryUnit]:
        return list(self._units.values())

    def add(self, unit: MemoryUnit) -> list[MemoryUnit]:
        """Insert `unit`; return the units evicted to make room (oldest first)."""
        if self.capacity == 0 or unit.id in self._units:
            return []
        evicted = []
        while len(self._units) >= self.capacity:
            evicted.append(self._units.popitem(last=False)[1])
        self._units[unit.id] = unit
        return evicted

    def remove(self, unit_id: str) -> MemoryUnit | None:
        return self._units.pop(unit_id, None)

    def clear(self) -> list[MemoryUnit]:
        removed = list(self._units.values())
        self._units.clear()
        return removed

    @property
    def nbytes(self) -> int:
        return sum(u.nbytes for u in self._units.values())
