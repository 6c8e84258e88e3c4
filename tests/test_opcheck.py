"""torch.library.opcheck over the compiled ops: schema, fake kernels and torch.compile's dispatch.

Skipped as a whole when the extension is not built (`make ext`), except under `make test-ext`
(EWE_REQUIRE_EXTENSION=1), where a build that does not load fails.

Which of opcheck's test_utils run (torch 2.13 has five), and why:
  test_schema                the schema matches what the kernel does (no mutation, a fresh output)
  test_faketensor            the fake kernels registered in ewe/ops/extension.py give the real
                             output's shape, dtype, device and strides
  test_aot_dispatch_static,  the op under AOT dispatch (torch.compile's path), static and dynamic
  test_aot_dispatch_dynamic  shapes, same results as eager
Left out: test_autograd_registration. It checks something only when an input requires grad, and
these ops are inference only, with no backward (decode runs without grad; `extension.supports`
sends inputs that require grad to the fused path). Given such inputs, opcheck's checks run a
backward through torch's "autograd not implemented" fallback, which only warns that the
gradients may be silently wrong: nothing there to hold the ops to.
"""
import os

import pytest
import torch

from ewe.ops import extension

if not extension.available():
    if os.environ.get("EWE_REQUIRE_EXTENSION") == "1":  # `make test-ext`: a build that does not load is a failure
        raise RuntimeError(f"EWE_REQUIRE_EXTENSION=1 but the extension does not load: {extension.load_error()}")
    pytest.skip(f"extension not built: run `make ext` ({extension.load_error()})", allow_module_level=True)

from ewe.ops.quantized_linear import pack_int8, quantize_int8  # noqa: E402

UTILS = ("test_schema", "test_faketensor", "test_aot_dispatch_static", "test_aot_dispatch_dynamic")


def attention_args(q_len, dtype, mem_bias, ctx_bias, device="cpu"):
    """batch 2 (row 1's memory padded), GQA 4 query heads on 2 key heads, 7 memory tokens, 11 context keys."""
    gen = torch.Generator().manual_seed(q_len)
    ctx, n = 11, 7
    q = torch.randn(2, 4, q_len, 64, generator=gen).to(device, dtype)
    k, v = (torch.randn(2, 2, ctx, 64, generator=gen).to(device, dtype) for _ in range(2))
    mk, mv = (torch.randn(2, 2, n, 64, generator=gen).to(device, dtype) for _ in range(2))
    mb = torch.zeros(2, 1, 1, n, device=device)
    mb[1, ..., n - 2:] = float("-inf")
    lw = torch.tensor([2.0, 1.0], device=device).log1p().view(2, 1, 1, 1)
    cb = None
    if ctx_bias:  # causal, and row 1 left-padded by 3
        allowed = torch.arange(ctx).view(1, ctx) <= torch.arange(ctx - q_len, ctx).view(q_len, 1)
        allowed = allowed.view(1, 1, q_len, ctx).repeat(2, 1, 1, 1)
        allowed[1, ..., :3] = False
        cb = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf")).to(device)
    return [q, k, v, mk, mv, mb if mem_bias else None, lw, cb, 0.125]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("ctx_bias", [False, True], ids=["causal", "ctx-bias"])
@pytest.mark.parametrize("mem_bias", [False, True], ids=["no-mem-bias", "mem-bias"])
@pytest.mark.parametrize("q_len", [5, 1], ids=["prefill", "decode"])
def test_memory_attention(q_len, mem_bias, ctx_bias, dtype):
    torch.library.opcheck(torch.ops.ewe_ext.memory_attention.default,
                          attention_args(q_len, dtype, mem_bias, ctx_bias), test_utils=UTILS)


def test_memory_attention_no_memory_and_strided_query():
    q, k, v, mk, mv, mb, lw, cb, scale = attention_args(3, torch.float32, True, False)
    q = q.transpose(1, 2).contiguous().transpose(1, 2)  # transformers' query: a view of [B, Q, Hq, D]
    empty = mk[:, :, :0]
    torch.library.opcheck(torch.ops.ewe_ext.memory_attention.default,
                          [q, k, v, empty, empty, mb[..., :0], lw, cb, scale], test_utils=UTILS)


@pytest.mark.parametrize("rows, bias, isa", [(1, True, "auto"), (4, False, "auto"), (3, True, "scalar")])
def test_int8_linear(rows, bias, isa):
    gen = torch.Generator().manual_seed(rows)
    weight = torch.randn(20, 19, generator=gen) * 0.05
    x = torch.randn(19, rows, generator=gen).t()  # not contiguous
    args = [x, *pack_int8(*quantize_int8(weight)), torch.randn(20, generator=gen) if bias else None, 20, isa]
    torch.library.opcheck(torch.ops.ewe_ext.int8_linear.default, args, test_utils=UTILS)


@pytest.mark.skipif(not (torch.cuda.is_available() and extension.has_cuda_kernel()),
                    reason="needs a GPU and the extension built with its CUDA kernels")
@pytest.mark.parametrize("q_len", [5, 1], ids=["prefill", "decode"])
def test_memory_attention_cuda(q_len):
    torch.library.opcheck(torch.ops.ewe_ext.memory_attention.default,
                          attention_args(q_len, torch.float16, True, q_len > 1, "cuda"), test_utils=UTILS)
