"""Context masks as additive float32 biases, whatever form transformers handed over."""
from __future__ import annotations

import torch


def context_bias(
    mask: torch.Tensor | None, q_len: int, kv_len: int, device: torch.device, allow_none: bool = False
) -> torch.Tensor | None:
    """An additive [B or 1, 1, Q, L] float32 bias for the context keys.

    `mask` is what transformers' mask function produced: a boolean mask (True = attend),
    an additive float mask, or None, meaning plain causal attention with the Q queries
    sitting at the last Q positions of the L keys (prefill and decode alike). With
    `allow_none`, a bias that would be all zeros (one causal query sees every key) is
    returned as None so the caller can skip it.
    """
    if mask is None and q_len == 1 and allow_none:
        return None
    if mask is None:
        q_pos = torch.arange(kv_len - q_len, kv_len, device=device).view(q_len, 1)
        allowed = torch.arange(kv_len, device=device).view(1, kv_len) <= q_pos
        mask = allowed.view(1, 1, q_len, kv_len)
    if mask.dtype == torch.bool:  # (no tensor made from a Python number: a CUDA graph cannot capture that copy)
        return torch.zeros(mask.shape, dtype=torch.float32, device=device).masked_fill_(~mask, float("-inf"))
    mask = mask.float()
    # transformers' float masks use the dtype's min rather than -inf; treat both as "blocked"
    return mask.masked_fill(mask <= torch.finfo(torch.float32).min / 2, float("-inf"))


def prefix_mask(lengths: torch.Tensor, kv_len: int) -> torch.Tensor:
    """A boolean [B, 1, 1, L] mask by which row b attends to its first lengths[b] keys.

    A context under such a mask needs no mask at all in a kernel that takes each row's used keys
    (flash-attention's `seqused_k`): the slot cache passes `lengths` beside it (engine/slots.py).
    """
    return (torch.arange(kv_len, device=lengths.device)[None, :] < lengths[:, None])[:, None, None, :]
