"""The working memory: units, FIFO pools and batched unit encoding (what attention reads of it,
`MemoryState`, is in ewe/ops/layer_memory.py)."""
from .encoder import UnitEncoder
from .pools import MemoryPool
from .units import MemoryUnit, unit_id
from .working_memory import POOLS, WorkingMemory

__all__ = ["MemoryPool", "MemoryUnit", "POOLS", "UnitEncoder", "WorkingMemory", "unit_id"]
