"""Eq. 1 in one pass over k*M + L keys.

Summing the k+1 passes of eq. 1 gives (sum_i O_i + (k+1) O_c) / (sum_i S_i + (k+1) S_c):
one softmax over all memory tokens and the context, with log(k+1) added to every
context logit. We compute it as two segments, memory and context, each giving an
(output, log-sum-exp) state, and merge the states as flash-decoding's split-KV
combine does. Log-sum-exp values here are natural logarithms (flash-attention's
convention, not flashinfer's base 2).

Grouped-query attention is handled by folding the query heads of a group into the
query axis, so keys are never repeated.
"""
from __future__ import annotations

import torch
from torch import Tensor

from .layer_memory import LayerMemory
from .masks import context_bias


def attention_state(q, k, v, bias, scale):
    """Softmax attention over one key segment, as an (output, lse) state.

    q: [B, Hkv, R, D] (R = group * Q rows); k, v: [B, Hkv, N, D];
    bias: float32, broadcastable to [B, Hkv, R, N]. Returns output [B, Hkv, R, D] in
    float32 and lse [B, Hkv, R, 1]. A row whose keys are all masked gets lse = -inf and
    output 0, so it drops out of any merge.
    """
    scores = torch.matmul(q, k.transpose(-1, -2)).float() * scale
    if bias is not None:
        scores = scores + bias
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    probs = torch.exp(scores - safe)
    out = torch.matmul(probs.to(v.dtype), v).float()
    return out, lse


def merge_states(out_a, lse_a, out_b, lse_b):
    """Merge two attention states over disjoint key sets (associative, like flashinfer's merge_state)."""
    lse = torch.logaddexp(lse_a, lse_b)
    safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
    return out_a * torch.exp(lse_a - safe) + out_b * torch.exp(lse_b - safe), lse


def memory_attention_fused(query: Tensor, key: Tensor, value: Tensor, memory: LayerMemory,
                           ctx_mask: Tensor | None, scale: float) -> Tensor:
    """Eq. 1 as one pass; same arguments and result as `memory_attention_reference`."""
    B, Hq, Q, D = query.shape
    Hkv, L = key.shape[1], key.shape[2]
    group = Hq // Hkv
    q = query.reshape(B, Hkv, group * Q, D)
    bias_c = context_bias(ctx_mask, Q, L, query.device, allow_none=True)
    if bias_c is not None and group > 1:  # rows of the folded query axis are (group, Q): repeat the mask per group
        bias_c = bias_c.unsqueeze(2).expand(bias_c.shape[0], 1, group, Q, L).reshape(-1, 1, group * Q, L)
    out_c, lse_c = attention_state(q, key, value, bias_c, scale)
    if memory.is_eq1:
        out_m, lse_m = attention_state(q, memory.key, memory.value, memory.bias, scale)
    else:  # APE's read-out (see LayerMemory)
        out_m, lse_m = attention_state(q, memory.key, memory.value, memory.bias, scale / memory.temperature)
        lse_m = lse_m * (memory.temperature * memory.lse_scale)
    out, _ = merge_states(out_m, lse_m, out_c, lse_c + memory.log_ctx_weight)
    return out.view(B, Hq, Q, D).transpose(1, 2).to(query.dtype)
