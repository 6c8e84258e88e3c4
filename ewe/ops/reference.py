"""Eq. 1 of the EWE paper, literally: k + 1 attention passes averaged by their normalizers.

This is the specification every faster path is tested against, so it favours plainness
over speed: each pass is ordinary softmax attention in float32, over [unit_i ; context]
for each unit and over the context alone, and the outputs are averaged with weights
alpha_i = sum of exp(scores) of that pass.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .layer_memory import LayerMemory
from .masks import context_bias


def _attend(q, k, v, bias, scale):
    """Softmax attention returning (output, log of the normalizer alpha)."""
    scores = (q @ k.transpose(-1, -2)) * scale + bias
    log_alpha = torch.logsumexp(scores, dim=-1, keepdim=True)
    return torch.softmax(scores, dim=-1) @ v, log_alpha


def memory_attention_reference(query: Tensor, key: Tensor, value: Tensor, memory: LayerMemory,
                               ctx_mask: Tensor | None, scale: float) -> Tensor:
    """Literal eq. 1.

    query: [B, Hq, Q, D]; key, value: [B, Hkv, L, D] (the context, cache included);
    ctx_mask: bool/float [B or 1, 1, Q, L] or None for causal. Returns [B, Q, Hq, D]
    in query's dtype.
    """
    B, Hq, Q, D = query.shape
    Hkv, L = key.shape[1], key.shape[2]
    group = Hq // Hkv
    bias_c = context_bias(ctx_mask, Q, L, query.device).expand(B, 1, Q, L)
    q = query.float()
    k_c = key.float().repeat_interleave(group, dim=1)
    v_c = value.float().repeat_interleave(group, dim=1)
    k_m = memory.key.float().repeat_interleave(group, dim=1)
    v_m = memory.value.float().repeat_interleave(group, dim=1)
    if not memory.is_eq1:
        return _ape_reference(q, k_c, v_c, k_m, v_m, bias_c, memory, scale).transpose(1, 2).to(query.dtype)
    rows = []
    for b in range(B):
        outs, log_alphas = [], []
        for start, end in memory.unit_bounds[b]:
            keys = torch.cat([k_m[b : b + 1, :, start:end], k_c[b : b + 1]], dim=2)
            vals = torch.cat([v_m[b : b + 1, :, start:end], v_c[b : b + 1]], dim=2)
            unit_bias = torch.zeros(1, 1, Q, end - start, device=query.device)
            bias = torch.cat([unit_bias, bias_c[b : b + 1]], dim=-1)
            o, la = _attend(q[b : b + 1], keys, vals, bias, scale)
            outs.append(o)
            log_alphas.append(la)
        o, la = _attend(q[b : b + 1], k_c[b : b + 1], v_c[b : b + 1], bias_c[b : b + 1], scale)
        outs.append(o)
        log_alphas.append(la)
        weights = torch.softmax(torch.stack(log_alphas), dim=0)  # alpha_i / sum_j alpha_j
        rows.append((weights * torch.stack(outs)).sum(dim=0))
    out = torch.cat(rows, dim=0)  # [B, Hq, Q, D]
    return out.transpose(1, 2).to(query.dtype)


def _ape_reference(q, k_c, v_c, k_m, v_m, bias_c, memory: LayerMemory, scale: float) -> Tensor:
    """Eq. 1 with APE's read-out, plainly: the units' tokens as one group attended at temperature T,
    its log-normalizer times T * S, weighed against the context's (counted k + 1 times, as in eq. 1)."""
    T, S = memory.temperature, memory.lse_scale
    rows = []
    for b in range(q.shape[0]):
        o_c, la_c = _attend(q[b : b + 1], k_c[b : b + 1], v_c[b : b + 1], bias_c[b : b + 1], scale)
        bounds = memory.unit_bounds[b]
        if not bounds:
            rows.append(o_c)
            continue
        keys = torch.cat([k_m[b : b + 1, :, s:e] for s, e in bounds], dim=2)
        vals = torch.cat([v_m[b : b + 1, :, s:e] for s, e in bounds], dim=2)
        o_m, la_m = _attend(q[b : b + 1], keys, vals, torch.zeros(1, 1, 1, keys.shape[2]), scale / T)
        weights = torch.softmax(torch.stack([la_m * (T * S), la_c + math.log(len(bounds) + 1)]), dim=0)
        rows.append(weights[0] * o_m + weights[1] * o_c)
    return torch.cat(rows, dim=0)
