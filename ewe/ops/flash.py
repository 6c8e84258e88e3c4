"""Eq. 1 through flash-attention 4 (package `flash-attn-4`, module `flash_attn.cute`) on Hopper and Blackwell.

Eq. 1 is a merge of two attention states (see fused.py): the memory units' keys as one segment,
the context's as another whose log-sum-exp counts k + 1 times. flash-attention computes each
segment's output and log-sum-exp (natural log, [B, Hq, Q]) with tensor cores, at bandwidth, and
this module merges the two states in float32. Keys are read where the caches hold them
([B, Hkv, L, D] seen as [B, L, Hkv, D]): nothing is concatenated, repeated or copied.

What it takes (`supports`; anything else runs on the compiled extension or the fused path):
CUDA tensors in float16 or bfloat16 on compute capability 9.x or 10.x, eq. 1 itself (APE's read-out
runs on the fused path), and a context that is plain causal (a prompt's prefill, a dynamic
cache's decode) or, in each row, a prefix of its keys given as `ctx_lengths` beside the mask that
says the same (masks.py `prefix_mask`: the continuous batch's slot cache, whose rows have lengths of
their own, and the static cache's graph step over its buffer). A batch with left padding carries
another mask and runs elsewhere.
Flash-attention takes a row's used keys as `seqused_k` and aligns causal queries to the last of
them. A row holding fewer memory tokens than the longest row is right-padded (layer_memory.py); its
used keys are counted from the bias on the device, so no step waits for the host and a captured
CUDA graph replays it.

On Hopper flash-attention 4 has no split-KV: a decode call runs one thread block per row and KV
head, so with few rows it leaves most of the GPU idle, where the compiled extension's decode
kernel splits the keys. `auto` therefore takes it (`preferred`) for prefill and for decode with at
least MIN_DECODE_BLOCKS blocks; the rule is to be set from `ewe bench attention` on the GPU.

`memory_attention_states` composes eq. 1 from any segment kernel with `flash_state`'s signature:
the CPU tests hold it, run with `torch_state`, to the literal reference, and the CUDA tests hold
`flash_state` to `torch_state`.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from .fused import attention_state, merge_states
from .layer_memory import LayerMemory

DTYPES = (torch.float16, torch.bfloat16)
MAX_HEAD_DIM = {9: 256, 10: 128}  # flash-attention 4's head dims by compute capability major
INSTALL_HINT = "pip install flash-attn-4 (a CUDA build of torch and a Hopper or Blackwell GPU)"

MIN_DECODE_BLOCKS = 64  # rows x KV heads from which auto decodes on flash-attention (about half an H200's SMs)

_state: dict = {}


def _kernel():
    """flash_attn.cute.flash_attn_varlen_func, imported once; None (with the reason kept) when it cannot be."""
    if "fn" not in _state:
        _state["fn"], _state["error"] = None, None
        if not torch.cuda.is_available():
            _state["error"] = "no CUDA device"
        else:
            try:
                from flash_attn.cute import flash_attn_varlen_func

                _state["fn"] = flash_attn_varlen_func
            except Exception as exc:  # missing, or its CUTLASS DSL does not load here: never fatal
                _state["error"] = f"flash_attn.cute does not import ({type(exc).__name__}: {exc})"
    return _state["fn"]


def available() -> bool:
    """True when flash-attention 4 imports and a CUDA device is present."""
    return _kernel() is not None


def load_error() -> str | None:
    """Why `available()` is False (None when it is True)."""
    _kernel()
    return _state["error"]


def supports(query: Tensor, key: Tensor, value: Tensor, memory: LayerMemory, ctx_mask,
             ctx_lengths: Tensor | None = None) -> bool:
    """Whether `memory_attention_flash` takes these inputs (see the module docstring)."""
    if ctx_mask is not None and ctx_lengths is None:
        return False
    if not query.is_cuda or query.dtype not in DTYPES or not memory.is_eq1 or not available():
        return False
    if any(t.dtype != query.dtype or t.get_device() != query.get_device()
           for t in (key, value, memory.key, memory.value)):
        return False
    if torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value, memory.key, memory.value)):
        return False
    major = torch.cuda.get_device_capability(query.device)[0]
    head_dim = query.shape[-1]
    return (major in MAX_HEAD_DIM and head_dim <= MAX_HEAD_DIM[major] and head_dim % 8 == 0
            and query.shape[1] % key.shape[1] == 0)


def preferred(query: Tensor, key: Tensor) -> bool:
    """Whether `auto` runs flash-attention on inputs it supports (see the module docstring)."""
    return query.shape[2] > 1 or query.shape[0] * key.shape[1] >= MIN_DECODE_BLOCKS


def torch_state(q: Tensor, k: Tensor, v: Tensor, scale: float, causal: bool,
                seqused_k: Tensor | None) -> tuple[Tensor, Tensor]:
    """One segment's attention state, in plain PyTorch, with flash-attention's contract.

    q: [B, Q, Hq, D]; k, v: [B, N, Hkv, D]; causal: the Q queries sit at the last Q of the row's
    used keys; seqused_k: [B] int32, the keys each row uses (the first ones), or None for all N.
    Returns the output [B, Q, Hq, D] in q's dtype and the log-sum-exp [B, Hq, Q] in float32
    (-inf, with output 0, for a row that uses no key).
    """
    B, Q, Hq, D = q.shape
    N, Hkv = k.shape[1], k.shape[2]
    group = Hq // Hkv
    used = torch.full((B,), N, device=q.device) if seqused_k is None else seqused_k.to(q.device).long()
    cols = torch.arange(N, device=q.device).view(1, 1, N)
    allowed = cols < used.view(B, 1, 1)  # [B, 1, N]
    if causal:
        rows = torch.arange(Q, device=q.device).view(1, Q, 1)
        allowed = allowed & (cols <= used.view(B, 1, 1) - Q + rows)  # [B, Q, N]
    bias = torch.zeros(allowed.shape, device=q.device).masked_fill_(~allowed, float("-inf")).unsqueeze(1)
    if bias.shape[2] > 1:  # the folded query axis is (group, Q): one bias row per query, repeated per group
        bias = bias.expand(B, 1, Q, N).repeat(1, 1, group, 1)
    qh = q.permute(0, 2, 1, 3).reshape(B, Hkv, group * Q, D)
    out, lse = attention_state(qh.float(), k.permute(0, 2, 1, 3).float(), v.permute(0, 2, 1, 3).float(), bias, scale)
    return out.view(B, Hq, Q, D).permute(0, 2, 1, 3).to(q.dtype), lse.view(B, Hq, Q)


def flash_state(q: Tensor, k: Tensor, v: Tensor, scale: float, causal: bool,
                seqused_k: Tensor | None) -> tuple[Tensor, Tensor]:
    """One segment's attention state through flash-attention 4 (same contract as `torch_state`)."""
    return _kernel()(q, k, v, seqused_k=seqused_k, softmax_scale=scale, causal=causal, return_lse=True)


def memory_lengths(memory: LayerMemory) -> Tensor | None:
    """The memory keys each row uses, [B] int32, counted on the device; None when no row is padded."""
    if memory.bias is None:
        return None
    return torch.isfinite(memory.bias).flatten(1).sum(-1, dtype=torch.int32)


def memory_attention_states(query: Tensor, key: Tensor, value: Tensor, memory: LayerMemory, scale: float,
                            state: Callable, ctx_lengths: Tensor | None = None) -> Tensor:
    """Eq. 1 from two calls of a segment kernel `state` and one merge.

    Same tensors as `memory_attention_reference`: query [B, Hq, Q, D]; key, value [B, Hkv, L, D];
    returns [B, Q, Hq, D] in query's dtype. The context is plain causal over each row's first
    ctx_lengths[b] keys ([B] int32), or over all L when ctx_lengths is None.
    """
    if not memory.is_eq1:  # the merge below is eq. 1's; APE's read-out would be computed wrong, silently
        raise ValueError(f"memory attention through flash-attention computes eq. 1 only, not APE's read-out "
                         f"(memory.temperature={memory.temperature}, memory.lse_scale={memory.lse_scale}); "
                         "use attention_impl auto or fused")
    B, Hq, Q, _ = query.shape
    q = query.transpose(1, 2)
    out_c, lse_c = state(q, key.transpose(1, 2), value.transpose(1, 2), scale, Q > 1, ctx_lengths)
    out_m, lse_m = state(q, memory.key.transpose(1, 2), memory.value.transpose(1, 2), scale, False,
                         memory_lengths(memory))
    lse_c = lse_c + memory.log_ctx_weight.view(B, 1, 1).to(lse_c.device)
    as_state = lambda lse: lse.transpose(1, 2).unsqueeze(-1)  # [B, Hq, Q] -> [B, Q, Hq, 1], beside the outputs
    out, _ = merge_states(out_m.float(), as_state(lse_m), out_c.float(), as_state(lse_c))
    return out.to(query.dtype)


def memory_attention_flash(query: Tensor, key: Tensor, value: Tensor, memory: LayerMemory,
                           ctx_mask: Tensor | None, scale: float, ctx_lengths: Tensor | None = None) -> Tensor:
    """Eq. 1 through flash-attention 4; the signature of every memory-attention kernel (dispatch.py), and
    ctx_lengths: [B] int32, the keys each row attends to when ctx_mask is their prefix mask (it is then not read)."""
    if ctx_mask is not None and ctx_lengths is None:
        raise ValueError("memory_attention_flash: ctx_mask must be None (plain causal) or come with ctx_lengths "
                         "(a prefix mask); any other masked context runs on the extension or the fused path")
    if ctx_lengths is not None and (ctx_lengths.shape != (query.shape[0],) or ctx_lengths.dtype != torch.int32):
        raise ValueError(f"memory_attention_flash: ctx_lengths must be int32 of shape ({query.shape[0]},), one per "
                         f"row; got {ctx_lengths.dtype} {tuple(ctx_lengths.shape)}")
    if not available():
        raise RuntimeError(f"memory_attention_flash: flash-attention 4 is not available ({load_error()}); "
                           f"{INSTALL_HINT}")
    return memory_attention_states(query, key, value, memory, scale, flash_state, ctx_lengths)

