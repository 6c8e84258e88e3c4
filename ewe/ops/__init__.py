"""Memory attention kernels: the literal eq. 1 reference, the fused path, and the dispatcher."""
from .dispatch import IMPLEMENTATIONS, select
from .fused import attention_state, memory_attention_fused, merge_states
from .layer_memory import LayerMemory, MemoryState
from .reference import memory_attention_reference

__all__ = [
    "IMPLEMENTATIONS",
    "LayerMemory",
    "MemoryState",
    "attention_state",
    "memory_attention_fused",
    "memory_attention_reference",
    "merge_states",
    "select",
]
