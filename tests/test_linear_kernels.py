"""Lighter linear layers (config model.weights, ewe/ops/quantized_linear.py) against slow references.

The compiled int8 kernel is held to float64 arithmetic on the dequantized weights, on every code
path this CPU has (avx512_vnni, avx2, scalar: each forced in turn), for odd shapes and 1 to 9
rows. Tolerances are derived, not tuned: float32 rounding, 1e-5 of sum |x| |w| (measured errors
are about 1e-7 of it); the VNNI path adds its input quantization, at most
max|x_row| / (127 * 508) per input, times sum |w| of the output channel.

Kernel tests skip when the extension is not built (`make ext`), except under `make test-ext`
(EWE_REQUIRE_EXTENSION=1), where a build that does not load fails. The packing, the formats on
a tiny model and the configuration field need no extension.
"""
import logging
import math
import os

import pytest
import torch
from torch import nn

from ewe.config import ConfigError, EWEConfig
from ewe.ops import extension, quantized_linear
from ewe.ops.quantized_linear import (BFloat16Linear, Int8Linear, apply_weight_format, int8_linear, pack_int8,
                                      quantize_int8)

KERNEL = quantized_linear.kernel_available()
if not KERNEL and os.environ.get("EWE_REQUIRE_EXTENSION") == "1":  # `make test-ext`: must load
    raise RuntimeError(f"EWE_REQUIRE_EXTENSION=1 but the int8 linear kernel does not load: {extension.load_error()}")
needs_kernel = pytest.mark.skipif(not KERNEL, reason=f"extension not built: run `make ext` ({extension.load_error()})")



from bad_arguments import probe  # noqa: E402
LINEAR_CASES = probe.cases("int8_linear")
PATHS = ("scalar", "avx2", "avx512_vnni")  # weakest first
BEST = quantized_linear.best_isa() if KERNEL else None
# float32 rounding, relative to sum |x| |w| (see the module docstring)
EXACT_RTOL = 1e-5
# VNNI: each input off by at most s / 508 with s = max|x_row| / 127 (hi, then lo in 254 steps), 1% slack
VNNI_STEP = 1.01 / (127 * 508)


def path_param(isa):
    reason = None if KERNEL and PATHS.index(isa) <= PATHS.index(BEST) else f"this CPU has no {isa} path"
    return pytest.param(isa, id=isa, marks=pytest.mark.skipif(reason is not None, reason=reason or ""))


ALL_PATHS = [path_param(isa) for isa in PATHS]


def random_linear(n, k, bias=True, seed=0):
    gen = torch.Generator().manual_seed(seed)
    lin = nn.Linear(k, n, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(n, k, generator=gen) * 0.05)
        if bias:
            lin.bias.copy_(torch.randn(n, generator=gen))
    return lin


def reference(x, q, scale, bias):
    """float64: x @ (q * scale)^T + bias, and the tolerance for `isa` (see the module docstring)."""
    w = q.double() * scale.double()[:, None]
    x64 = x.double().reshape(-1, x.shape[-1])
    y = x64 @ w.T + (0 if bias is None else bias.double())
    magnitude = x64.abs() @ w.abs().T
    vnni = x64.abs().amax(dim=1, keepdim=True) * VNNI_STEP * w.abs().sum(dim=1)
    shape = (*x.shape[:-1], q.shape[0])
    return y.reshape(shape), magnitude.reshape(shape), vnni.reshape(shape)


def tolerance(isa, magnitude, vnni):
    return EXACT_RTOL * magnitude + 1e-6 + (vnni if isa == "avx512_vnni" else 0)


# ---------------------------------------------------------------------------------------------
# packing and quantization (no extension)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, k", [(1, 1), (17, 13), (33, 1537), (48, 64)])
def test_pack_layout_is_the_documented_one(n, k):
    q = torch.randint(-127, 128, (n, k), dtype=torch.int8)
    scale = torch.rand(n) + 0.1
    packed, scale_pad, wsum = pack_int8(q, scale)
    nb, kq = -(-n // 16), -(-k // 4)
    assert packed.shape == (nb, kq, 16, 4) and packed.dtype == torch.int8 and packed.is_contiguous()
    assert scale_pad.shape == wsum.shape == (nb * 16,)
    for nn_, kk in [(0, 0), (n - 1, k - 1), (n // 2, k // 3)]:
        assert packed[nn_ // 16, kk // 4, nn_ % 16, kk % 4] == q[nn_, kk]
    unpacked = packed.permute(0, 2, 1, 3).reshape(nb * 16, kq * 4)
    assert torch.equal(unpacked[:n, :k], q) and not unpacked[n:].any() and not unpacked[:, k:].any()
    assert torch.equal(wsum[:n], q.sum(dim=1, dtype=torch.int32)) and not wsum[n:].any()
    assert torch.equal(scale_pad[:n], scale) and not scale_pad[n:].any()


def test_quantize_int8_per_channel():
    w = torch.tensor([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [3.0, 1.0, -2.0]])
    q, scale = quantize_int8(w)
    assert q.dtype == torch.int8 and q.abs().max() == 127
    assert torch.equal(q[1], torch.zeros(3, dtype=torch.int8)) and scale[1] == 1  # a zero row
    assert ((q.float() * scale[:, None] - w).abs() <= scale[:, None] / 2 * (1 + 1e-6)).all()  # half a step
    assert torch.equal(q[0], torch.tensor([64, -127, 32], dtype=torch.int8))  # 63.5 rounds to even


# ---------------------------------------------------------------------------------------------
# the kernel against float64
# ---------------------------------------------------------------------------------------------


@needs_kernel
@pytest.mark.parametrize("isa", ALL_PATHS)
@pytest.mark.parametrize("n, k", [(1, 1), (5, 3), (17, 13), (49, 4), (100, 63), (576, 576), (33, 1537), (192, 577)])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 9])
def test_kernel_matches_float64(isa, n, k, rows):
    gen = torch.Generator().manual_seed(n * 1000 + k + rows)
    lin = random_linear(n, k, bias=rows % 2 == 1, seed=n + k)
    q, scale = quantize_int8(lin.weight)
    packed, scale_pad, wsum = pack_int8(q, scale)
    x = torch.randn(rows, k, generator=gen) * (1 + 10 * torch.rand(rows, 1, generator=gen))
    bias = None if lin.bias is None else lin.bias.detach()
    y = int8_linear(x, packed, scale_pad, wsum, bias, n, isa)
    ref, magnitude, vnni = reference(x, q, scale, bias)
    assert y.shape == (rows, n) and y.dtype == torch.float32
    err = (y.double() - ref).abs()
    tol = tolerance(isa, magnitude, vnni)
    assert (err <= tol).all(), f"worst error {err.max():.3g}, over its tolerance by {(err - tol).max():.3g}"


@needs_kernel
@pytest.mark.parametrize("isa", ALL_PATHS)
def test_kernel_leading_dims_strides_and_empty(isa):
    lin = random_linear(40, 24)
    mod = Int8Linear(lin, isa=isa)
    x = torch.randn(3, 24, 5).transpose(1, 2)  # [3, 5, 24], not contiguous
    ref, magnitude, vnni = reference(x, *quantize_int8(lin.weight), lin.bias.detach())
    y = mod(x)
    assert y.shape == (3, 5, 40)
    assert ((y.double() - ref).abs() <= tolerance(isa, magnitude, vnni)).all()
    assert mod(torch.randn(0, 24)).shape == (0, 40)
    assert mod(torch.zeros(2, 24)).allclose(lin.bias.detach().expand(2, 40))  # a zero row gives the bias
    empty_sum = int8_linear(torch.randn(3, 0), *pack_int8(torch.zeros(40, 0, dtype=torch.int8), torch.ones(40)),
                            lin.bias.detach(), 40, isa)
    assert torch.equal(empty_sum, lin.bias.detach().expand(3, 40))  # K = 0: the bias alone


@needs_kernel
@pytest.mark.parametrize("isa", ALL_PATHS)
def test_kernel_propagates_inf_and_nan(isa):
    lin = random_linear(20, 12, bias=False)
    mod = Int8Linear(lin, isa=isa)
    x = torch.randn(3, 12)
    x[0, 3], x[2, 5] = float("nan"), float("inf")
    y = mod(x)
    expected = x @ mod.dequantized_weight().T
    assert y[0].isnan().all() and torch.equal(y[2].isfinite(), expected[2].isfinite())
    assert torch.allclose(y[1], expected[1], rtol=1e-4, atol=1e-4)  # the finite row is unaffected


@needs_kernel
def test_module_keeps_the_input_dtype():
    lin = random_linear(32, 16)
    mod = Int8Linear(lin)
    x = torch.randn(2, 16)
    for dtype in (torch.bfloat16, torch.float16):
        y = mod(x.to(dtype))
        assert y.dtype == dtype
        assert torch.allclose(y.float(), mod(x.to(dtype).float()), rtol=1e-2, atol=1e-2)


@needs_kernel
def test_isa_is_forced_by_argument_or_environment(monkeypatch):
    lin = random_linear(16, 8)
    monkeypatch.setenv(quantized_linear.ISA_ENV_VAR, "scalar")
    assert Int8Linear(lin).isa == "scalar"
    assert Int8Linear(lin, isa="avx2").isa == "avx2"  # the argument wins
    monkeypatch.setenv(quantized_linear.ISA_ENV_VAR, "sse9")
    with pytest.raises(ValueError, match="EWE_LINEAR_ISA='sse9' is not an int8 linear code path"):
        Int8Linear(lin)


@needs_kernel
def test_auto_takes_the_best_path():
    assert BEST in PATHS
    lin = random_linear(64, 64, bias=False)
    x = torch.randn(2, 64)
    assert torch.equal(Int8Linear(lin, isa="auto")(x), Int8Linear(lin, isa=BEST)(x))


@pytest.fixture
def op_never_entered(monkeypatch):
    """The resolved op, replaced by one that fails the test: a bad argument must stop in Python."""
    def entered(*args):
        pytest.fail("the compiled op was entered with a bad argument")

    monkeypatch.setitem(quantized_linear._state, "op", entered)


@needs_kernel
@pytest.mark.parametrize("case", LINEAR_CASES, ids=lambda c: c.name.split("/")[1])
def test_kernel_argument_errors_name_the_argument(case, op_never_entered):
    """Every bad argument stops in the Python check with the C++ check's words, before the op."""
    with pytest.raises(ValueError, match=case.message):
        int8_linear(*probe.case_args(case))


@needs_kernel
def test_module_checks_its_input_and_its_buffers_before_the_op(op_never_entered):
    """Int8Linear checks x per call and its buffers once, again after .to() (which may cast them)."""
    mod = Int8Linear(random_linear(20, 19))
    with pytest.raises(ValueError, match="x has K=18 inputs but the layer has in_features=19"):
        mod(torch.randn(2, 18))  # same packed width as 19: the kernel alone would not notice
    with pytest.raises(ValueError, match="x must be"):
        mod(torch.tensor(1.0))
    mod.to(torch.bfloat16)  # casts the float32 scale and bias
    with pytest.raises(ValueError, match="scale must be a contiguous float32"):
        mod(torch.randn(2, 19))


@needs_kernel
def test_good_arguments_reach_the_op(monkeypatch):
    """The handles the tests above replace are the ones the wrappers call."""
    calls = []
    monkeypatch.setitem(quantized_linear._state, "op", lambda *a: calls.append(a[-1]) or torch.zeros(2, 20))
    int8_linear(*probe.int8_linear_args())
    Int8Linear(random_linear(20, 19), isa="scalar")(torch.randn(2, 19))
    assert calls == ["auto", "scalar"]


@needs_kernel
def test_raw_op_checks_raise_in_a_subprocess():
    """The C++ checks, the second line: the raw op on each bad argument, all in one child process,
    so that a crash fails this test ("crashed with signal N") instead of taking pytest down."""
    problems = probe.raw_op_problems(LINEAR_CASES)
    assert not problems, "\n".join(problems)


@needs_kernel
def test_a_path_this_cpu_lacks_is_an_error():
    missing = PATHS[PATHS.index(BEST) + 1:]
    if not missing:
        pytest.skip(f"this CPU has every path (best: {BEST})")
    lin = random_linear(16, 8)
    with pytest.raises(ValueError, match="not supported by this CPU"):
        Int8Linear(lin, isa=missing[0])


# ---------------------------------------------------------------------------------------------
# the formats on a tiny model
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_pair():
    from tiny import tiny_model

    ids = torch.tensor([[5, 17, 99, 3, 250, 42, 7, 128, 64, 11]])
    return tiny_model(seed=1), ids


def _logits(model, ids):
    with torch.inference_mode():
        return model(ids).logits.float()


def _swapped(model, fmt, **kwargs):
    import copy

    out = copy.deepcopy(model)
    count = apply_weight_format(out, fmt, **kwargs)
    assert count == sum(type(m) is nn.Linear for m in model.modules()) > 0
    assert not any(type(m) is nn.Linear for m in out.modules())
    return out


def _relative(a, b):
    return ((a - b).norm() / b.norm()).item()


@pytest.mark.parametrize("fmt, rel", [("bfloat16", 0.03), ("int8", 0.03)])
def test_tiny_model_logits_close_to_float32(tiny_pair, fmt, rel):
    """The weights' rounding moves the logits a little: bfloat16 ~ 2^-9 and int8 ~ 1/254 per weight."""
    model, ids = tiny_pair
    expected = _logits(model, ids)
    got = _logits(_swapped(model, fmt), ids)
    assert _relative(got, expected) < rel
    assert (got.argmax(-1) == expected.argmax(-1)).float().mean() >= 0.8


@needs_kernel
@pytest.mark.parametrize("isa", ALL_PATHS)
def test_tiny_model_int8_kernel_equals_its_dequantized_weights(tiny_pair, isa):
    """The kernel computes with exactly the int8 weights: against float32 math on them, only rounding."""
    model, ids = tiny_pair
    kernel = _swapped(model, "int8", isa=isa)
    dequantized = _swapped(model, "int8")
    for m in dequantized.modules():
        if isinstance(m, Int8Linear):
            m.register_buffer("weight_dequantized", m.dequantized_weight().clone())
            m.use_kernel = False
    assert _relative(_logits(kernel, ids), _logits(dequantized, ids)) < (1e-4 if isa == "avx512_vnni" else 1e-5)


def test_int8_without_the_kernel_runs_dequantized_with_a_notice(tiny_pair, monkeypatch, caplog):
    model, ids = tiny_pair
    monkeypatch.setattr(quantized_linear, "kernel_available", lambda: False)
    monkeypatch.setitem(quantized_linear._state, "notice", False)
    with caplog.at_level(logging.WARNING, logger="ewe"):
        swapped = _swapped(model, "int8")
        _swapped(model, "int8")  # once per process
    notices = [r.message for r in caplog.records if "int8 weights" in r.message]
    assert len(notices) == 1 and "compiled kernel is not available" in notices[0] and "make ext" in notices[0]
    assert all(not m.use_kernel for m in swapped.modules() if isinstance(m, Int8Linear))
    assert _relative(_logits(swapped, ids), _logits(model, ids)) < 0.03
    with pytest.raises(RuntimeError, match="not available"):
        Int8Linear(nn.Linear(4, 4), use_kernel=True)


def test_apply_weight_format_none_and_unknown(tiny_pair):
    model, _ = tiny_pair
    assert apply_weight_format(model, None) == 0
    with pytest.raises(ValueError, match="weights='int4' is not a weight format"):
        apply_weight_format(model, "int4")


def test_bfloat16_linear_keeps_the_input_dtype():
    lin = random_linear(8, 6)
    mod = BFloat16Linear(lin)
    x = torch.randn(3, 6)
    assert mod(x).dtype == torch.float32 and mod.weight.dtype == torch.bfloat16
    assert torch.allclose(mod(x), lin(x), rtol=2e-2, atol=2e-2)


def test_int8_refuses_a_weight_off_the_cpu():
    lin = nn.Linear(4, 4, device="meta")
    with pytest.raises(ValueError, match="int8 weights run on CPU only"):
        Int8Linear(lin)


# ---------------------------------------------------------------------------------------------
# the configuration field
# ---------------------------------------------------------------------------------------------


def test_config_weights_field():
    assert EWEConfig().model.weights is None  # default: the layers keep model.dtype
    for fmt in quantized_linear.FORMATS:
        assert EWEConfig.build({}, **{"model.weights": fmt}).model.weights == fmt
    with pytest.raises(ConfigError, match=r"model.weights: Input should be 'bfloat16' or 'int8' \(got 'int4'\)"):
        EWEConfig.build({}, **{"model.weights": "int4"})
    with pytest.raises(ConfigError, match="model.weights 'int8' runs on CPU only, but model.device is 'cuda'"):
        EWEConfig.build({}, **{"model.weights": "int8", "model.device": "cuda"})
    assert EWEConfig.build({}, **{"model.weights": "bfloat16", "model.device": "cuda"}).model.weights == "bfloat16"


def test_bench_weight_formats_argument():
    import argparse

    from ewe.bench.decode_weights import HELDOUT_TITLES, weight_formats
    from ewe.bench.decode import BENCH_TITLES

    assert weight_formats("float32, int8,int8") == ["float32", "int8"]
    with pytest.raises(argparse.ArgumentTypeError, match="comma-separated list"):
        weight_formats("float32,int4")
    assert len(HELDOUT_TITLES) == 20 and not set(HELDOUT_TITLES) & set(BENCH_TITLES)


@pytest.mark.slow
def test_embedded_model_int8_perplexity_within_one_percent():
    """The real model, held-out Wikipedia: int8 weights cost well under 1% of perplexity."""
    from ewe.bench.decode_weights import heldout_texts, perplexity
    from ewe.model_loading import load_model

    model, tokenizer, _ = load_model()
    texts = heldout_texts()[:8]
    base, _ = perplexity(model, tokenizer, texts)
    apply_weight_format(model, "int8")
    got, _ = perplexity(model, tokenizer, texts)
    assert math.isfinite(got) and abs(got / base - 1) < 0.01, (base, got)


def test_bench_weight_formats_smoke(tiny, capsys):
    """`ewe bench decode --weight-formats` end to end on the tiny model: a row per run, a perplexity per format."""
    import argparse

    from ewe.bench.decode_weights import run_weight_formats

    args = argparse.Namespace(tokens=3, units=1, repeats=1, weight_formats=["float32", "bfloat16", "int8"])
    assert run_weight_formats(args, lambda _args: tiny) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()]
    assert "held-out perplexity: 20 Wikipedia summaries" in out
    for fmt in ("float32", "bfloat16", "int8"):
        assert any(r[0] == fmt and "ewe_k0" in r for r in rows) and any(r[0] == fmt and "ewe_k1" in r for r in rows)
        assert sum(1 for r in rows if r and r[0] == fmt and len(r) in (2, 3)) == 1, out  # its perplexity row
    assert any("hf_generate" in r for r in rows)


def test_config_weights_reach_the_model_loader(monkeypatch):
    """`model.weights` in a configuration (or `--weights`) is what the Runtime asks the loader for."""
    from ewe import EWEConfig, model_loading
    from ewe.runtime import Runtime

    seen = []

    def fake_apply(model, weights):
        seen.append((model, weights))
        raise RuntimeError("stop here")

    monkeypatch.setattr(model_loading, "load_model", lambda name, dtype, device: ("the model", None, None))
    monkeypatch.setattr(model_loading, "apply_weights", fake_apply)
    with pytest.raises(RuntimeError, match="stop here"):
        Runtime(EWEConfig.build({}, **{"model.weights": "int8", "model.memory_adapter": "none"})).model
    assert seen == [("the model", "int8")]
