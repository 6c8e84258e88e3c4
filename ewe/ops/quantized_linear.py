"""Linear layers with lighter weights, for a faster decode step (config `model.weights`).

A decode step multiplies one row (or a few: candidate rewrites) by every weight matrix of the
model, so its time is the time to read the weights. Lighter weights read faster:

    None        the layers keep model.dtype (the default)
    "bfloat16"  weights in bfloat16 and `F.linear` in bfloat16 (the input is rounded to
                bfloat16, the output cast back): half of float32's bytes, any device
    "int8"      weights in int8 with one float32 scale per output channel (symmetric, round to
                nearest), a quarter of float32's bytes; CPU only. The compiled kernel
                `torch.ops.ewe_ext.int8_linear` (csrc/cpu/int8_linear.cpp) reads them as they
                are. Without the extension the same int8 weights are dequantized to float32 once
                and run through `F.linear`, with a one-line notice: same numbers, no speed-up.

`apply_weight_format(model, fmt)` swaps every `nn.Linear` of a model (lm_head included) for one
of these modules. Inference only: the modules hold buffers, not parameters, and have no backward.

The int8 op, with every tensor's shape:

    int8_linear(x, weight, scale, wsum, bias, out_features, isa) -> y
    x        [..., K]          float32
    weight   [Nb, Kq, 16, 4]   int8, q[n, k] at [n // 16, k // 4, n % 16, k % 4], zero padded;
                               Nb = ceil(N / 16), Kq = ceil(K / 4)  (`pack_int8` makes it)
    scale    [Nb * 16]         float32 per output channel (0 on padding)
    wsum     [Nb * 16]         int32, sum_k q[n, k]
    bias     [N] float32, or None
    y        [..., N]          float32:  y = scale[n] * sum_k x[k] q[n, k] + bias[n]

`isa` picks the code path: "auto" (the best this CPU has), "avx512_vnni" (x quantized per row
in two int8 passes, about 16 bits of it, and multiplied by vpdpbusd), "avx2" (exact float32 x,
FMA) or "scalar" (the same in plain C++). The environment variable EWE_LINEAR_ISA, read when a
layer is built, overrides "auto", so a test or a user can force a fallback; asking for a path
this CPU lacks is an error.

Bad arguments never reach the compiled code: `check_int8_linear_args` mirrors every check of
csrc/cpu/int8_linear.cpp (same messages, naming the argument) and raises ValueError; `int8_linear`
runs it before each call, `Int8Linear` once for its buffers (and again after `.to()`) and on each
input's device and width (see ewe/ops/extension.py for why).
"""
from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import dispatch, extension

FORMATS = ("bfloat16", "int8")
ISAS = ("auto", "avx512_vnni", "avx2", "scalar")
ISA_ENV_VAR = "EWE_LINEAR_ISA"
OP_NAME = "ewe_ext::int8_linear"
BLOCK, QUAD = 16, 4  # the packed layout: 16 output channels x 4 inputs per 64-byte line

logger = logging.getLogger("ewe")
_state: dict = {"op": None, "notice": False}


def kernel_available() -> bool:
    """True when the compiled extension is built with the int8 linear op (its fake kernel is
    registered where the extension is loaded, ewe/ops/extension.py)."""
    if _state["op"] is None:
        _state["op"] = False
        if extension.available() and hasattr(torch.ops.ewe_ext, "int8_linear"):
            _state["op"] = torch.ops.ewe_ext.int8_linear.default
    return _state["op"] is not False


def _unavailable_reason() -> str:
    error = extension.load_error()
    return f"extension not built: {error}" if error else "the extension was built before it"


def best_isa() -> str | None:
    """The code path "auto" takes on this CPU ("avx512_vnni", "avx2", "scalar"); None without the kernel."""
    if "best_isa" not in _state:
        _state["best_isa"] = torch.ops.ewe_ext.int8_linear_isa() if kernel_available() else None
    return _state["best_isa"]


def requested_isa(isa: str | None = None) -> str:
    """`isa`, else $EWE_LINEAR_ISA, else "auto"; checked against ISAS."""
    return dispatch.choice(isa, "isa", ISA_ENV_VAR, ISAS, "an int8 linear code path")


def _shape(t: Tensor) -> list:
    return list(t.shape)


def check_x(x: Tensor, in_features: int) -> None:
    """The checks on the input alone, for a module whose buffers were checked already."""
    if not x.is_cpu:
        raise ValueError("int8_linear: x, weight, scale and wsum must be CPU tensors")
    if x.dim() == 0:
        raise ValueError("int8_linear: x must be [..., K], got a 0-d tensor")
    if x.shape[-1] != in_features:
        raise ValueError(f"int8_linear: x has K={x.shape[-1]} inputs but the layer has in_features={in_features}")


def check_int8_linear_args(x: Tensor, weight: Tensor, scale: Tensor, wsum: Tensor, bias: Tensor | None,
                           out_features: int, isa: str) -> None:
    """Raise ValueError, naming the argument, for whatever the compiled op would refuse: the
    checks of int8_linear_cpu (csrc/cpu/int8_linear.cpp) in its order and words, `isa` included."""
    if not (x.is_cpu and weight.is_cpu and scale.is_cpu and wsum.is_cpu):
        raise ValueError("int8_linear: x, weight, scale and wsum must be CPU tensors")
    if x.dtype != torch.float32:
        raise ValueError(f"int8_linear: x must be float32, got {x.dtype}")
    if x.dim() == 0:
        raise ValueError("int8_linear: x must be [..., K], got a 0-d tensor")
    if (weight.dtype != torch.int8 or weight.dim() != 4 or weight.shape[2:] != (BLOCK, QUAD)
            or not weight.is_contiguous()):
        raise ValueError(f"int8_linear: weight must be a contiguous int8 [Nb, Kq, 16, 4] tensor, got {weight.dtype} "
                         f"{_shape(weight)}")
    K, (Nb, Kq), N = x.shape[-1], weight.shape[:2], out_features
    if Kq != (K + QUAD - 1) // QUAD:
        raise ValueError(f"int8_linear: x has K={K} inputs but weight is packed for Kq={Kq} groups of 4 "
                         f"(K in {4 * Kq - 3}..{4 * Kq})")
    if not (Nb - 1) * BLOCK < N <= Nb * BLOCK:
        raise ValueError(f"int8_linear: out_features={N} does not match weight's {Nb} blocks of 16 outputs")
    if scale.dtype != torch.float32 or scale.shape != (Nb * BLOCK,) or not scale.is_contiguous():
        raise ValueError(f"int8_linear: scale must be a contiguous float32 [{Nb * BLOCK}] tensor, got {scale.dtype} "
                         f"{_shape(scale)}")
    if wsum.dtype != torch.int32 or wsum.shape != (Nb * BLOCK,) or not wsum.is_contiguous():
        raise ValueError(f"int8_linear: wsum must be a contiguous int32 [{Nb * BLOCK}] tensor, got {wsum.dtype} "
                         f"{_shape(wsum)}")
    if bias is not None and (not bias.is_cpu or bias.dtype != torch.float32 or bias.shape != (N,)
                             or not bias.is_contiguous()):
        raise ValueError(f"int8_linear: bias must be a contiguous float32 CPU [{N}] tensor, got {bias.dtype} "
                         f"{_shape(bias)}")
    check_isa(isa)


def check_isa(isa: str) -> None:
    """`isa` as the kernel parses it: a known name, and a path this CPU has."""
    if isa not in ISAS:
        raise ValueError(f"int8_linear: isa must be one of {', '.join(ISAS)}; got '{isa}'")
    best = best_isa()
    if isa != "auto" and best is not None and ISAS.index(isa) < ISAS.index(best):  # ISAS: strongest first
        raise ValueError(f"int8_linear: isa='{isa}' is not supported by this CPU (the best it has is {best})")


def quantize_int8(weight: Tensor) -> tuple[Tensor, Tensor]:
    """Symmetric per-output-channel int8: (q [N, K] int8 in -127..127, scale [N] float32).

    weight ~ q * scale[:, None]; a row of zeros gets scale 1 (and q 0).
    """
    w = weight.detach().float()
    amax = w.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    q = torch.round(w / scale[:, None]).clamp_(-127, 127).to(torch.int8)
    return q, scale


def pack_int8(q: Tensor, scale: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(weight [Nb, Kq, 16, 4] int8, scale [Nb * 16] float32, wsum [Nb * 16] int32) for the op."""
    n, k = q.shape
    n_pad, k_pad = -(-n // BLOCK) * BLOCK, -(-k // QUAD) * QUAD
    padded = torch.zeros(n_pad, k_pad, dtype=torch.int8)
    padded[:n, :k] = q
    packed = padded.view(n_pad // BLOCK, BLOCK, k_pad // QUAD, QUAD).permute(0, 2, 1, 3).contiguous()
    scale_pad = torch.zeros(n_pad, dtype=torch.float32)
    scale_pad[:n] = scale
    return packed, scale_pad, padded.sum(dim=1, dtype=torch.int32)


def int8_linear(x: Tensor, weight: Tensor, scale: Tensor, wsum: Tensor, bias: Tensor | None,
                out_features: int, isa: str | None = None) -> Tensor:
    """The compiled op on float32 x [..., K] (see the module docstring); y [..., out_features]."""
    if not kernel_available():
        raise RuntimeError(f"the compiled int8 linear kernel is not available ({_unavailable_reason()}); "
                           f"{extension.BUILD_HINT}")
    isa = requested_isa(isa)
    check_int8_linear_args(x, weight, scale, wsum, bias, out_features, isa)
    return _state["op"](x, weight, scale, wsum, bias, out_features, isa)


class Int8Linear(nn.Module):
    """A `nn.Linear` with int8 weights, one scale per output channel; float32 in, float32 math out.

    x: [..., in_features] of any float dtype; returns [..., out_features] in x's dtype. Runs the
    compiled kernel when it is built (else float32 weights dequantized from the same int8
    values, see the module docstring). `isa` forces a code path of the kernel (tests).
    """

    def __init__(self, linear: nn.Linear, isa: str | None = None, use_kernel: bool | None = None):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.isa = requested_isa(isa)
        self.use_kernel = kernel_available() if use_kernel is None else use_kernel
        if self.use_kernel and not kernel_available():
            raise RuntimeError(f"Int8Linear(use_kernel=True): the compiled int8 linear kernel is not available "
                               f"({_unavailable_reason()}); {extension.BUILD_HINT}")
        if linear.weight.device.type != "cpu":
            raise ValueError(f"int8 weights run on CPU only, got a weight on {linear.weight.device}")
        q, scale = quantize_int8(linear.weight)
        bias = None if linear.bias is None else linear.bias.detach().float().contiguous()
        self.register_buffer("bias", bias)
        if self.use_kernel:
            packed, scale_pad, wsum = pack_int8(q, scale)
            self.register_buffer("weight_int8", packed)
            self.register_buffer("scale", scale_pad)
            self.register_buffer("wsum", wsum)
            self._op = _state["op"]
            self._check_buffers()
        else:
            self.register_buffer("weight_dequantized", q.float() * scale[:, None])

    def _check_buffers(self) -> None:
        """The op's checks on everything but x (x is checked per call, the rest once: decode calls
        every layer per token)."""
        x = torch.empty(0, self.in_features)
        check_int8_linear_args(x, self.weight_int8, self.scale, self.wsum, self.bias, self.out_features, self.isa)
        self._buffers_checked = True

    def _apply(self, fn, recurse=True):
        self._buffers_checked = False  # .to() / .cuda() / .half() may move or cast the buffers
        return super()._apply(fn, recurse)

    def forward(self, x: Tensor) -> Tensor:
        if not self.use_kernel:
            return F.linear(x.float(), self.weight_dequantized, self.bias).to(x.dtype)
        if not self._buffers_checked:
            self._check_buffers()
        check_x(x, self.in_features)
        if x.dtype != torch.float32:
            return self._op(x.float(), self.weight_int8, self.scale, self.wsum, self.bias, self.out_features,
                            self.isa).to(x.dtype)
        return self._op(x, self.weight_int8, self.scale, self.wsum, self.bias, self.out_features, self.isa)

    def dequantized_weight(self) -> Tensor:
        """The float32 [out, in] weight this module computes with (q * scale)."""
        if not self.use_kernel:
            return self.weight_dequantized
        w = self.weight_int8.permute(0, 2, 1, 3).reshape(self.scale.numel(), -1).float() * self.scale[:, None]
        return w[: self.out_features, : self.in_features]

    def extra_repr(self) -> str:
        path = self.isa if self.use_kernel else "dequantized float32 (no kernel)"
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 per channel, {path}"


class BFloat16Linear(nn.Module):
    """A `nn.Linear` with bfloat16 weights: `F.linear` in bfloat16, the output in x's dtype."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight", linear.weight.detach().to(torch.bfloat16).contiguous())
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(torch.bfloat16))

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x.to(torch.bfloat16), self.weight, self.bias).to(x.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bfloat16"


def apply_weight_format(model: nn.Module, fmt: str | None, isa: str | None = None) -> int:
    """Swap every `nn.Linear` in `model` for the `fmt` version, in place; returns how many.

    fmt: None (nothing changes), "bfloat16" or "int8" (see the module docstring). Tied weights
    (lm_head and the input embedding) are untied: the embedding keeps its own weight.
    """
    if fmt is None:
        return 0
    if fmt not in FORMATS:
        raise ValueError(f"weights={fmt!r} is not a weight format; choose one of {FORMATS} (or None)")
    if fmt == "int8" and not kernel_available() and not _state["notice"]:
        _state["notice"] = True
        logger.warning("ewe: int8 weights: the compiled kernel is not available (%s), running them dequantized "
                       "to float32 (same results, no speed-up; `make ext` builds it)", _unavailable_reason())
    targets = [(name, m) for name, m in model.named_modules() if type(m) is nn.Linear]
    for name, linear in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        new = Int8Linear(linear, isa) if fmt == "int8" else BFloat16Linear(linear)
        setattr(parent, child, new)
    return len(targets)
