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
    """True when the compiled extension is built with the int8 linear op."""
    if _state["op"] is None:
        _state["op"] = False
        if extension.available() and hasattr(torch.ops.ewe_ext, "int8_linear"):
            _state["op"] = torch.ops.ewe_ext.int8_linear.default
            _register_fake()
    return _state["op"] is not False


def _unavailable_reason() -> str:
    error = extension.load_error()
    return f"extension not built: {error}" if error else "the extension was built before it"


def best_isa() -> str | None:
    """The code path "auto" takes on this CPU ("avx512_vnni", "avx2", "scalar"); None without the kernel."""
    return torch.ops.ewe_ext.int8_linear_isa() if kernel_available() else None


def requested_isa(isa: str | None = None) -> str:
    """`isa`, else $EWE_LINEAR_ISA, else "auto"; checked against ISAS."""
    return dispatch.choice(isa, "isa", ISA_ENV_VAR, ISAS, "an int8 linear code path")


def _register_fake() -> None:
    @torch.library.register_fake(OP_NAME)
    def _(x, weight, scale, wsum, bias, out_features, isa):
        return x.new_empty((*x.shape[:-1], out_features))


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
    return _state["op"](x, weight, scale, wsum, bias, out_features, requested_isa(isa))


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
        else:
            self.register_buffer("weight_dequantized", q.float() * scale[:, None])

    def forward(self, x: Tensor) -> Tensor:
        if not self.use_kernel:
            return F.linear(x.float(), self.weight_dequantized, self.bias).to(x.dtype)
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
