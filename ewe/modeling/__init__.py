"""How ewe's attention enters a transformers model: by registry, not by fork."""
from .attention import NAME, attention_of, ewe_attention_forward, patch_model, register

__all__ = ["NAME", "attention_of", "ewe_attention_forward", "patch_model", "register"]
