"""The compiled memory attention (csrc/), when it is built.

`make ext` compiles csrc/ into `ewe/_C*.so`, which registers the op
`torch.ops.ewe_ext.memory_attention` (a CPU kernel, plus a CUDA one when built with nvcc
against a CUDA build of torch). Nothing here fails when the library is missing or does not
load: `available()` says False and `load_error()` says why, and `dispatch` falls back to the
fused PyTorch path.

The op, with every tensor's shape (log-sum-exp values inside are natural logarithms):

    memory_attention(query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight,
                     ctx_bias, scale) -> out
    query           [B, Hq, Q, D]   float32 or bfloat16 on CPU; float16, bfloat16 or float32 on CUDA
    key, value      [B, Hkv, L, D]  the context, cache included; query's dtype; Hq % Hkv == 0
    mem_key/value   [B, Hkv, N, D]  all memory units back to back; N may be 0
    mem_bias        [B, 1, 1, N]    float32, 0 on unit tokens and -inf on row padding; or None
    log_ctx_weight  [B, 1, 1, 1]    float32, log(k_b + 1) for row b holding k_b units
    ctx_bias        [B|1, 1, Q, L]  float32 additive context bias; None = causal, the Q queries
                                    at the last Q of the L key positions (nothing materialized)
    out             [B, Q, Hq, D]   query's dtype

Every tensor needs stride 1 along its last dimension (other strides are free); the op
checks devices, dtypes, shapes and that stride, naming the argument when one is wrong.
"""
from __future__ import annotations

import torch
from torch import Tensor

from .layer_memory import LayerMemory
from .masks import context_bias

OP_NAME = "ewe_ext::memory_attention"
BUILD_HINT = "run `make ext` (python setup.py build_ext --inplace)"

CPU_DTYPES = (torch.float32, torch.bfloat16)
CUDA_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
CUDA_MAX_HEAD_DIM = 256

_state: dict = {"loaded": None, "error": None}


def _load() -> bool:
    if _state["loaded"] is None:
        try:
            import ewe._C  # noqa: F401  (loading the library registers the op)

            _register_fake()
            _state["op"] = torch.ops.ewe_ext.memory_attention.default  # resolved once: decode calls it per layer
            _state["loaded"] = True
        except Exception as exc:  # missing, or built against another torch: never fatal
            _state["loaded"] = False
            _state["error"] = f"{type(exc).__name__}: {exc}"
    return _state["loaded"]


def available() -> bool:
    """True when the compiled extension is built and loads."""
    return _load()


def load_error() -> str | None:
    """Why the extension is not available (None when it is)."""
    _load()
    return _state["error"]


def has_cuda_kernel() -> bool:
    """True when the extension was compiled with its CUDA kernels."""
    if "cuda" not in _state:
        _state["cuda"] = available() and torch._C._dispatch_has_kernel_for_dispatch_key(OP_NAME, "CUDA")
    return _state["cuda"]


def _register_fake() -> None:
    @torch.library.register_fake(OP_NAME)
    def _(query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale):
        B, Hq, Q, D = query.shape
        return query.new_empty((B, Q, Hq, D))


def supports(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, memory: LayerMemory) -> bool:
    """Whether the extension handles these inputs (else "auto" runs the fused PyTorch path)."""
    # Asked once per layer per decoded token: device indices (ints) are compared rather than
    # torch.device objects, which cost several microseconds a call with the caches cold.
    if not available() or not memory.is_eq1:
        return False  # the kernel computes eq. 1 only; APE's read-out runs on the fused path
    dtype, device_index, on_cpu = query.dtype, query.get_device(), query.is_cpu
    tensors = (key, value, memory.key, memory.value)
    if any(t.dtype != dtype or t.get_device() != device_index or t.is_cpu != on_cpu for t in tensors):
        return False  # (get_device() is -1 for every non-CUDA device, hence the CPU test)
    if torch.is_grad_enabled() and (query.requires_grad or any(t.requires_grad for t in tensors)):
        return False  # the op has no backward: inference only
    if query.dim() != 4 or key.shape[1] == 0 or query.shape[1] % key.shape[1]:
        return False
    if on_cpu:
        return dtype in CPU_DTYPES
    if query.is_cuda:
        return has_cuda_kernel() and dtype in CUDA_DTYPES and query.shape[-1] <= CUDA_MAX_HEAD_DIM
    return False


def _last_dim_contiguous(t: torch.Tensor) -> torch.Tensor:
    return t if t.stride(-1) == 1 or t.shape[-1] <= 1 else t.contiguous()


def memory_attention_extension(query: Tensor, key: Tensor, value: Tensor, memory: LayerMemory,
                               ctx_mask: Tensor | None, scale: float) -> Tensor:
    """Eq. 1 in the compiled kernel; same arguments and result as `memory_attention_reference`.

    query: [B, Hq, Q, D]; key, value: [B, Hkv, L, D]; ctx_mask: bool/float [B or 1, 1, Q, L],
    or None for causal (the kernel then masks by position, nothing is materialized).
    Returns [B, Q, Hq, D] in query's dtype.
    """
    # Kept lean: in decode this runs once per layer per token, with the caches cold.
    op = _state.get("op")
    if op is None:
        if not available():
            raise RuntimeError(f"the compiled memory-attention extension is not available ({load_error()}); {BUILD_HINT}")
        op = _state["op"]
    if not memory.is_eq1:
        raise ValueError(f"the compiled kernel computes eq. 1 only, not APE's read-out (memory.temperature="
                         f"{memory.temperature}, memory.lse_scale={memory.lse_scale}); use attention_impl auto or fused")
    ctx_bias = None
    if ctx_mask is not None:
        ctx_bias = _last_dim_contiguous(context_bias(ctx_mask, query.shape[2], key.shape[2], query.device))
    mem_bias = None if memory.bias is None else _last_dim_contiguous(memory.bias.to(query.device, torch.float32))
    log_w = memory.log_ctx_weight
    if log_w.dtype != torch.float32 or log_w.get_device() != query.get_device() or not log_w.is_contiguous():
        log_w = log_w.to(query.device, torch.float32).contiguous()
    mem_key, mem_value = memory.key, memory.value
    if (query.stride(-1) != 1 or key.stride(-1) != 1 or value.stride(-1) != 1 or mem_key.stride(-1) != 1
            or mem_value.stride(-1) != 1):  # rare: caches and transformers' query views have stride 1 there
        query, key, value, mem_key, mem_value = map(_last_dim_contiguous, (query, key, value, mem_key, mem_value))
    return op(query, key, value, mem_key, mem_value, mem_bias, log_w, ctx_bias, float(scale))
