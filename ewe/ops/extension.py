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

Every tensor needs stride 1 along its last dimension (other strides are free).

Bad arguments never reach the compiled code: `check_memory_attention_args` mirrors every check
of csrc/memory_attention.h (and the CUDA kernel's limits) and raises ValueError, with the C++
message, naming the argument. The wrappers here (`memory_attention_op`, `memory_attention_extension`)
call it before the op. The C++ TORCH_CHECKs stay as a second line. Why twice: on one machine
(torch 2.11+cu130, the extension built there with the system g++ 13.3) a failing TORCH_CHECK
whose message formats a number crashed the process with SIGSEGV instead of raising
(benchmarks/bad_argument_probe.py shows it). `_load` also refuses a build whose torch version or C++ ABI differ from the running
torch's (`build_info()` says what it was built against).
"""
from __future__ import annotations

import json
import math
import re

import torch
from torch import Tensor

from .layer_memory import LayerMemory
from .masks import context_bias

OP_NAME = "ewe_ext::memory_attention"
INT8_LINEAR_OP_NAME = "ewe_ext::int8_linear"
BUILD_HINT = "run `make ext` (python setup.py build_ext --inplace)"

CPU_DTYPES = (torch.float32, torch.bfloat16)
CUDA_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
CUDA_MAX_HEAD_DIM = 256  # kMaxHeadDim in csrc/cuda/memory_attention.cu
CUDA_MAX_GROUP = 16  # kMaxRows there: query heads per key head
CUDA_MAX_GRID = 65535  # one launch's grid.y / grid.z

_state: dict = {"loaded": None, "error": None}
_fakes_registered: set = set()  # register_fake refuses a second registration (tests reload)


def _load() -> bool:
    if _state["loaded"] is None:
        try:
            import ewe._C  # (loading the library registers the ops)

            info = json.loads(ewe._C.BUILD_INFO) if hasattr(ewe._C, "BUILD_INFO") else None
            _state["build_info"] = info
            mismatch = build_mismatch(info)
            if mismatch:  # never call into it: a mismatched build may crash instead of raising
                _state["loaded"] = False
                _state["error"] = mismatch
                return False
            _register_fakes()
            _state["op"] = torch.ops.ewe_ext.memory_attention.default  # resolved once: decode calls it per layer
            _state["loaded"] = True
        except Exception as exc:  # missing, or built against another torch: never fatal
            _state["loaded"] = False
            _state["error"] = f"{type(exc).__name__}: {exc}"
    return _state["loaded"]


def _release(version: str) -> str:
    """"2.13.0" of "2.13.0+cu130" (the local suffix names the build, not the C++ interface)."""
    found = re.match(r"\d+\.\d+\.\d+", str(version))
    return found.group(0) if found else str(version)


def build_mismatch(info: dict | None, torch_version: str | None = None, cxx11_abi: bool | None = None) -> str | None:
    """Why a build described by `info` (ewe._C.BUILD_INFO) must not run on this torch; None when it may."""
    running = _release(torch.__version__ if torch_version is None else torch_version)
    abi = int(torch.compiled_with_cxx11_abi() if cxx11_abi is None else cxx11_abi)
    if not info:
        return f"the extension records no build info (built before it was added), running torch {running}: " \
               "rebuild with `make ext`"
    if _release(info.get("torch")) != running:
        return f"built against torch {info.get('torch')}, running torch {running}: rebuild with `make ext`"
    if info.get("cxx11_abi") is not None and int(info["cxx11_abi"]) != abi:
        return f"built with _GLIBCXX_USE_CXX11_ABI={info['cxx11_abi']}, running torch uses {abi}: " \
               "rebuild with `make ext`"
    return None


def build_info() -> dict | None:
    """What the compiled extension was built against (torch, compiler, C++ ABI, OpenMP, CUDA
    kernels), for benchmarks and bug reports; also when `available()` refused it. None if not importable."""
    _load()
    info = _state.get("build_info")
    if not info:
        return None
    return {**info, "cuda_kernels": torch._C._dispatch_has_kernel_for_dispatch_key(OP_NAME, "CUDA")}


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


def _register_fakes() -> None:
    """Fake (meta) kernels of the ops, so torch.compile / FX / opcheck see the output shapes."""
    if OP_NAME not in _fakes_registered:
        @torch.library.register_fake(OP_NAME)
        def _(query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale):
            B, Hq, Q, D = query.shape
            return query.new_empty((B, Q, Hq, D))

        _fakes_registered.add(OP_NAME)
    if INT8_LINEAR_OP_NAME not in _fakes_registered and hasattr(torch.ops.ewe_ext, "int8_linear"):
        @torch.library.register_fake(INT8_LINEAR_OP_NAME)
        def _(x, weight, scale, wsum, bias, out_features, isa):
            return x.new_empty((*x.shape[:-1], out_features))

        _fakes_registered.add(INT8_LINEAR_OP_NAME)


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
        return (has_cuda_kernel() and dtype in CUDA_DTYPES and query.shape[-1] <= CUDA_MAX_HEAD_DIM
                and query.shape[1] // key.shape[1] <= CUDA_MAX_GROUP)
    return False


def _shape(t: Tensor) -> list:
    return list(t.shape)


def _device_error(t: Tensor, name: str, query: Tensor) -> ValueError:
    return ValueError(f"memory_attention: {name} is on {t.device} but query is on {query.device}")


def _stride_error(t: Tensor, name: str) -> ValueError:
    return ValueError(f"memory_attention: {name} must have a contiguous last dimension (stride(-1) == 1), "
                      f"got strides {list(t.stride())}")


def check_memory_attention_args(query: Tensor, key: Tensor, value: Tensor, mem_key: Tensor, mem_value: Tensor,
                                mem_bias: Tensor | None, log_ctx_weight: Tensor, ctx_bias: Tensor | None,
                                scale: float) -> None:
    """Raise ValueError, naming the argument, for whatever the compiled op would refuse.

    The checks of check_memory_attention_args in csrc/memory_attention.h, in its order and with
    its messages, plus the CUDA kernel's limits (D <= 256, Hq / Hkv <= 16, grid size) and a CUDA
    query without CUDA kernels. Only attribute reads and comparisons: no tensor op, nothing that
    synchronizes or allocates, as decode runs this once per layer per token (hence the inlined
    tests, and is_contiguous() tried before the dearer stride(-1)).
    """
    on_cpu = query.is_cpu
    if on_cpu:
        dtypes, index = CPU_DTYPES, -1
    elif query.is_cuda:
        dtypes, index = CUDA_DTYPES, query.get_device()
        if not has_cuda_kernel():
            raise ValueError(f"memory_attention: query is on {query.device}, but the extension was built without "
                             f"its CUDA kernels; {BUILD_HINT} on a machine with nvcc")
    else:
        raise ValueError(f"memory_attention: query must be a CPU or CUDA tensor for this kernel, got {query.device}")
    dtype = query.dtype
    if dtype not in dtypes:
        raise ValueError(f"memory_attention: query dtype {dtype} is not supported on {'cpu' if on_cpu else 'cuda'}")
    q_shape, k_shape, m_shape = query.shape, key.shape, mem_key.shape
    if len(q_shape) != 4:
        raise ValueError(f"memory_attention: query must be [B, Hq, Q, D], got shape {list(q_shape)}")
    if len(k_shape) != 4:
        raise ValueError(f"memory_attention: key must be [B, Hkv, L, D], got shape {list(k_shape)}")
    if len(m_shape) != 4:
        raise ValueError(f"memory_attention: mem_key must be [B, Hkv, N, D], got shape {list(m_shape)}")
    B, Hq, Q, D = q_shape
    Hkv, L, N = k_shape[1], k_shape[2], m_shape[2]
    if Hkv <= 0 or Hq % Hkv:
        raise ValueError(f"memory_attention: query heads ({Hq}) must be a multiple of key heads ({Hkv})")

    ctx_shape, mem_shape = (B, Hkv, L, D), (B, Hkv, N, D)
    for t, name, want in ((key, "key", ctx_shape), (value, "value", ctx_shape), (mem_key, "mem_key", mem_shape),
                          (mem_value, "mem_value", mem_shape)):
        if not (t.is_cpu if on_cpu else t.is_cuda and t.get_device() == index):
            raise _device_error(t, name, query)
        if t.dtype is not dtype:
            raise ValueError(f"memory_attention: {name} dtype {t.dtype} differs from query dtype {dtype}")
        if t.shape != want:
            raise ValueError(f"memory_attention: {name} must be [B={B}, Hkv={Hkv}, {want[2]}, D={D}], "
                             f"got {_shape(t)}")
        if not t.is_contiguous() and t.stride(-1) != 1 and D > 1 and t.numel():
            raise _stride_error(t, name)
    if not query.is_contiguous() and query.stride(-1) != 1 and D > 1 and query.numel():
        raise _stride_error(query, "query")

    f32 = torch.float32
    if mem_bias is not None:
        if not (mem_bias.is_cpu if on_cpu else mem_bias.is_cuda and mem_bias.get_device() == index):
            raise _device_error(mem_bias, "mem_bias", query)
        if mem_bias.dtype is not f32:
            raise ValueError(f"memory_attention: mem_bias must be float32, got {mem_bias.dtype}")
        if mem_bias.shape != (B, 1, 1, N):
            raise ValueError(f"memory_attention: mem_bias must be [B={B}, 1, 1, N={N}], got {_shape(mem_bias)}")
        if not mem_bias.is_contiguous() and mem_bias.stride(-1) != 1 and N > 1 and B:
            raise _stride_error(mem_bias, "mem_bias")

    w = log_ctx_weight
    if not (w.is_cpu if on_cpu else w.is_cuda and w.get_device() == index):
        raise _device_error(w, "log_ctx_weight", query)
    if w.dtype is not f32:
        raise ValueError(f"memory_attention: log_ctx_weight must be float32, got {w.dtype}")
    if w.numel() != B or not w.is_contiguous():
        raise ValueError(f"memory_attention: log_ctx_weight must be a contiguous [B, 1, 1, 1] or [B] tensor with "
                         f"B={B}, got shape {_shape(w)}")

    if ctx_bias is not None:
        cb = ctx_bias
        if not (cb.is_cpu if on_cpu else cb.is_cuda and cb.get_device() == index):
            raise _device_error(cb, "ctx_bias", query)
        if cb.dtype is not f32:
            raise ValueError(f"memory_attention: ctx_bias must be float32, got {cb.dtype}")
        cb_shape = cb.shape
        if len(cb_shape) != 4 or cb_shape[1:] != (1, Q, L) or cb_shape[0] not in (B, 1):
            raise ValueError(f"memory_attention: ctx_bias must be [B={B} or 1, 1, Q={Q}, L={L}], "
                             f"got {list(cb_shape)}")
        if not cb.is_contiguous() and cb.stride(-1) != 1 and L > 1 and cb.numel():
            raise _stride_error(cb, "ctx_bias")
    elif Q > L:
        raise ValueError("memory_attention: ctx_bias=None means causal with the queries at the last Q key "
                         f"positions, which needs Q <= L; got Q={Q}, L={L}")
    if not math.isfinite(scale):
        raise ValueError(f"memory_attention: scale must be finite, got {scale}")
    if D <= 0:
        raise ValueError("memory_attention: head dim D must be positive")
    if not on_cpu:  # the CUDA kernel's own limits (csrc/cuda/memory_attention.cu)
        G = Hq // Hkv
        if D > CUDA_MAX_HEAD_DIM:
            raise ValueError(f"memory_attention: head dim D={D} exceeds the CUDA kernel's {CUDA_MAX_HEAD_DIM}")
        if G > CUDA_MAX_GROUP:
            raise ValueError(f"memory_attention: {G} query heads per key head exceeds the CUDA kernel's "
                             f"{CUDA_MAX_GROUP}")
        q_block = 1 if Q == 1 else min(Q, max(1, CUDA_MAX_GROUP // G))
        if B * Hq * Q and ((Q + q_block - 1) // q_block > CUDA_MAX_GRID or B * Hkv > CUDA_MAX_GRID):
            raise ValueError("memory_attention: too many query blocks or batch x heads for one CUDA launch")


def _op():
    """The resolved op, or RuntimeError saying why the extension is not available."""
    op = _state.get("op")
    if op is None:
        if not available():
            raise RuntimeError(f"the compiled memory-attention extension is not available ({load_error()}); {BUILD_HINT}")
        op = _state["op"]
    return op


def memory_attention_op(query: Tensor, key: Tensor, value: Tensor, mem_key: Tensor, mem_value: Tensor,
                        mem_bias: Tensor | None, log_ctx_weight: Tensor, ctx_bias: Tensor | None,
                        scale: float) -> Tensor:
    """The compiled op with the op's own arguments (module docstring), checked in Python first."""
    op = _op()
    check_memory_attention_args(query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale)
    return op(query, key, value, mem_key, mem_value, mem_bias, log_ctx_weight, ctx_bias, scale)


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
        op = _op()
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
    scale = float(scale)
    check_memory_attention_args(query, key, value, mem_key, mem_value, mem_bias, log_w, ctx_bias, scale)
    return op(query, key, value, mem_key, mem_value, mem_bias, log_w, ctx_bias, scale)
