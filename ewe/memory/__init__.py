"""The working memory: units, FIFO pools, batched unit encoding, and the attention's view of it."""
from .encoder import UnitEncoder
from .pools import MemoryPool
from .units import MemoryUnit, unit_id
from .working_memory import POOLS, MemoryState, WorkingMemory

__all__ = ["MemoryPool", "MemoryState", "MemoryUnit", "POOLS", "UnitEncoder", "WorkingMemory", "unit_id"]
