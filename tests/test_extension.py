"""The compiled memory attention (csrc/) against the literal eq. 1 reference.

Skipped as a whole when the extension is not built (`make ext`), except under
`make test-ext` (EWE_REQUIRE_EXTENSION=1), where a build that does not load fails. The yardstick, as in
flash-attention's tests: the kernel's error against a float32 reference may be at most twice
the fused PyTorch path's error in the same precision, plus a small absolute floor.
"""
import contextlib
import dataclasses
import json
import logging
import os
import re

import pytest
import torch
import torch.nn.functional as F

from ewe.ops import LayerMemory, dispatch, extension, memory_attention_fused, memory_attention_reference

if not extension.available():
    if os.environ.get("EWE_REQUIRE_EXTENSION") == "1":  # `make test-ext`: a build that does not load is a failure
        raise RuntimeError(f"EWE_REQUIRE_EXTENSION=1 but the extension does not load: {extension.load_error()}")
    pytest.skip(f"extension not built: run `make ext` ({extension.load_error()})", allow_module_level=True)

from attention_cases import make_memory  # noqa: E402
from ewe.ops.extension import memory_attention_extension  # noqa: E402


from bad_arguments import probe  # noqa: E402
ATTENTION_CASES = probe.cases("memory_attention", "cpu")

# Absolute error floor per dtype, on top of 2x the fused path's error (see module docstring).
ERROR_FLOOR = {torch.float32: 2e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def left_padded_mask(batch, q_len, kv_len, gen, as_float=False):
    """transformers' mask for a left-padded batch: causal, and blind to each row's padding."""
    pad = torch.randint(0, kv_len - q_len + 1, (batch,), generator=gen)
    kv_idx = torch.arange(kv_len).view(1, 1, 1, kv_len)
    q_idx = torch.arange(kv_len - q_len, kv_len).view(1, 1, q_len, 1)
    mask = (kv_idx <= q_idx) & (kv_idx >= pad.view(batch, 1, 1, 1))
    if as_float:
        return torch.zeros(mask.shape).masked_fill(~mask, torch.finfo(torch.float32).min)
    return mask


def random_case(seed, dtype, decode, device="cpu"):
    """k in 0..16 units of odd lengths per row, odd context, GQA 1..4, head dim 64 or 128."""
    gen = torch.Generator().manual_seed(seed)
    r = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=gen))
    batch, hkv, group, d = r(1, 3), r(1, 3), r(1, 4), [64, 128][r(0, 1)]
    ctx = 2 * r(0, 48) + 1
    q_len = 1 if decode else r(1, ctx)
    unit_lengths = [[2 * r(0, 20) + 1 for _ in range(r(0, 16))] for _ in range(batch)]
    query = torch.randn(batch, hkv * group, q_len, d, generator=gen).to(device, dtype)
    key = torch.randn(batch, hkv, ctx, d, generator=gen).to(device, dtype)
    value = torch.randn(batch, hkv, ctx, d, generator=gen).to(device, dtype)
    memory = make_memory(batch, hkv, d, unit_lengths, dtype, gen, device)
    mask = [None, "bool", "float"][seed % 3]
    if mask is not None:
        mask = left_padded_mask(batch, q_len, ctx, gen, as_float=mask == "float").to(device)
    return query, key, value, memory, mask, d**-0.5


@contextlib.contextmanager
def one_thread():
    """The reference's many small ops run far faster on one thread (and on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def as_float32(memory):
    return LayerMemory(memory.key.float(), memory.value.float(), memory.bias, memory.unit_bounds, memory.log_ctx_weight)


def check_against_reference(query, key, value, memory, mask, scale):
    """Extension error vs an fp32 reference <= 2x the fused path's error (same dtype) + floor."""
    dtype = query.dtype
    cpu = lambda t: None if t is None else t.cpu()
    mem32 = as_float32(memory)
    mem32 = LayerMemory(cpu(mem32.key), cpu(mem32.value), cpu(mem32.bias), mem32.unit_bounds, cpu(mem32.log_ctx_weight))
    with one_thread():
        expected = memory_attention_reference(
            query.float().cpu(), key.float().cpu(), value.float().cpu(), mem32, cpu(mask), scale
        )
        fused = memory_attention_fused(query, key, value, memory, mask, scale)
    actual = memory_attention_extension(query, key, value, memory, mask, scale)  # all threads: splits the keys
    assert actual.dtype == dtype and actual.shape == expected.shape
    assert actual.device == query.device
    err = (actual.float().cpu() - expected).abs().max().item()
    fused_err = (fused.float().cpu() - expected).abs().max().item()
    assert err <= 2 * fused_err + ERROR_FLOOR[dtype], f"extension error {err:.3g}, fused error {fused_err:.3g}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("decode", [False, True], ids=["prefill", "decode"])
@pytest.mark.parametrize("seed", range(16))
def test_matches_reference_random_shapes(seed, decode, dtype):
    check_against_reference(*random_case(seed, dtype, decode))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize(
    "q_len, ctx, units, unit_len, group, d",
    [
        (1, 1001, 16, 127, 3, 64),  # decode over ~3000 keys: the key axis is split and merged
        (1, 777, 5, 255, 4, 128),
        (100, 301, 5, 101, 3, 128),  # prefill over several query blocks and key tiles
        (70, 135, 3, 65, 1, 64),
        (33, 33, 0, 1, 2, 64),  # no memory at all
        (1, 301, 3, 65, 3, 72),  # head dims that are no multiple of the kernels' column blocks
        (3, 41, 2, 17, 2, 44),
        (2, 51, 2, 33, 4, 40),
        (1, 257, 2, 33, 5, 64),  # decode's value pass takes the group's rows 4 + 1, 3 + 3, 4 + 3, 4 + 4
        (1, 129, 3, 17, 6, 40),
        (1, 65, 1, 63, 7, 72),
        (1, 301, 4, 31, 8, 128),
    ],
)
def test_matches_reference_large(q_len, ctx, units, unit_len, group, d, dtype):
    gen = torch.Generator().manual_seed(q_len * 1000 + ctx)
    batch, hkv = 2, 3
    query = torch.randn(batch, hkv * group, q_len, d, generator=gen).to(dtype)
    key = torch.randn(batch, hkv, ctx, d, generator=gen).to(dtype)
    value = torch.randn(batch, hkv, ctx, d, generator=gen).to(dtype)
    lengths = [[unit_len] * units, [unit_len - 2] * max(0, units - 1)]
    memory = make_memory(batch, hkv, d, lengths, dtype, gen)
    check_against_reference(query, key, value, memory, None, d**-0.5)
    check_against_reference(query, key, value, memory, left_padded_mask(batch, q_len, ctx, gen), d**-0.5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("rise", [6.0, 600.0], ids=["within-slack", "past-slack"])
def test_logits_that_rise_along_the_keys(rise, dtype):
    """Decode keeps a row's softmax base until a logit exceeds it by more than a slack (8 nats):
    logits rising by 6 nats over all the keys never move it after the first tile (exponentials
    above 1 are summed); rising by 600 they move it every tile or two, mid-segment and across the
    memory/context boundary."""
    gen = torch.Generator().manual_seed(int(rise))
    batch, hkv, group, d, ctx, units, unit_len = 2, 3, 3, 64, 700, 4, 130
    scale = d**-0.5
    q_head = torch.randn(batch, hkv, 1, 1, d, generator=gen)  # the group's query heads share one query
    query = q_head.expand(batch, hkv, group, 1, d).reshape(batch, hkv * group, 1, d)
    unit = q_head.squeeze(2) / (q_head.squeeze(2).norm(dim=-1, keepdim=True) ** 2 * scale)  # logit(unit) = 1
    total = units * unit_len + ctx

    def rising(n, offset):  # keys whose logits rise linearly from 0 to `rise` over all `total` keys
        ramp = (offset + torch.arange(n, dtype=torch.float32)).view(1, 1, n, 1) * rise / total
        return (torch.randn(batch, hkv, n, d, generator=gen) * 0.2 + ramp * unit).to(dtype)

    memory = make_memory(batch, hkv, d, [[unit_len] * units, [unit_len] * units], dtype, gen)
    memory = LayerMemory(rising(units * unit_len, 0), memory.value, memory.bias, memory.unit_bounds,
                         memory.log_ctx_weight)
    key = rising(ctx, units * unit_len)
    value = torch.randn(batch, hkv, ctx, d, generator=gen).to(dtype)
    query = query.to(dtype)
    check_against_reference(query, key, value, memory, None, scale)
    check_against_reference(query, key, value, memory, left_padded_mask(batch, 1, ctx, gen), scale)


def test_same_result_with_one_thread_and_with_several():
    query, key, value, memory, mask, scale = random_case(5, torch.float32, decode=True)
    many = memory_attention_extension(query, key, value, memory, mask, scale)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = memory_attention_extension(query, key, value, memory, mask, scale)
    finally:
        torch.set_num_threads(threads)
    torch.testing.assert_close(one, many, atol=1e-6, rtol=1e-5)


def test_no_units_is_plain_attention():
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(2, 6, 9, 64, generator=gen)
    key, value = torch.randn(2, 3, 21, 64, generator=gen), torch.randn(2, 3, 21, 64, generator=gen)
    empty = make_memory(2, 3, 64, [[], []], torch.float32, gen)
    causal = torch.arange(21).view(1, -1) <= torch.arange(21 - 9, 21).view(-1, 1)
    expected = F.scaled_dot_product_attention(query, key, value, attn_mask=causal, enable_gqa=True).transpose(1, 2)
    torch.testing.assert_close(memory_attention_extension(query, key, value, empty, None, 64**-0.5), expected,
                               atol=2e-5, rtol=1e-4)


def test_causal_none_equals_explicit_causal_mask_and_strided_query():
    gen = torch.Generator().manual_seed(7)
    query = torch.randn(2, 6, 13, 64, generator=gen)
    key, value = torch.randn(2, 3, 29, 64, generator=gen), torch.randn(2, 3, 29, 64, generator=gen)
    memory, scale = make_memory(2, 3, 64, [[9, 7], [5]], torch.float32, gen), 0.125
    B, Hq, Q, D = query.shape
    L = key.shape[2]
    causal = (torch.arange(L).view(1, L) <= torch.arange(L - Q, L).view(Q, 1)).view(1, 1, Q, L)
    implicit = memory_attention_extension(query, key, value, memory, None, scale)
    explicit = memory_attention_extension(query, key, value, memory, causal, scale)
    torch.testing.assert_close(implicit, explicit, atol=1e-6, rtol=1e-6)
    # transformers hands over query as a transposed view of [B, Q, Hq, D]: read in place
    strided = query.transpose(1, 2).contiguous().transpose(1, 2)
    assert not strided.is_contiguous()
    torch.testing.assert_close(memory_attention_extension(strided, key, value, memory, None, scale), implicit)


def test_row_that_sees_nothing_gives_zeros_like_fused():
    gen = torch.Generator().manual_seed(1)
    query = torch.randn(1, 2, 1, 64, generator=gen)
    key, value = torch.randn(1, 2, 5, 64, generator=gen), torch.randn(1, 2, 5, 64, generator=gen)
    empty = make_memory(1, 2, 64, [[]], torch.float32, gen)
    blind = torch.zeros(1, 1, 1, 5, dtype=torch.bool)
    out = memory_attention_extension(query, key, value, empty, blind, 0.125)
    assert out.abs().max() == 0
    torch.testing.assert_close(out, memory_attention_fused(query, key, value, empty, blind, 0.125))


@pytest.fixture
def op_never_entered(monkeypatch):
    """The resolved op, replaced by one that fails the test: a bad argument must stop in Python."""
    def entered(*args):
        pytest.fail("the compiled op was entered with a bad argument")

    monkeypatch.setitem(extension._state, "op", entered)


@pytest.mark.parametrize("case", ATTENTION_CASES, ids=lambda c: c.name.split("/")[1])
def test_argument_checks_name_the_argument(case, op_never_entered):
    """Every bad argument stops in the Python check with the C++ check's words, before the op."""
    with pytest.raises(ValueError, match=case.message):
        extension.memory_attention_op(*probe.case_args(case))


def decode_inputs():
    gen = torch.Generator().manual_seed(3)
    query = torch.randn(2, 4, 1, 64, generator=gen)
    key, value = torch.randn(2, 2, 9, 64, generator=gen), torch.randn(2, 2, 9, 64, generator=gen)
    memory = make_memory(2, 2, 64, [[3, 4], [5]], torch.float32, gen)
    return {"query": query, "key": key, "value": value, "memory": memory, "ctx_mask": None, "scale": 0.125}


def _memory(i, **changes):
    return dataclasses.replace(i["memory"], **changes)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda i: i.update(key=i["key"].double()), "key dtype"),
        (lambda i: i.update(value=i["value"][:, :, :-1]), "value must be"),
        (lambda i: i.update(memory=_memory(i, key=i["memory"].key[:1])), "mem_key must be"),
        (lambda i: i.update(memory=_memory(i, bias=i["memory"].bias[..., :-1])), "mem_bias must be"),
        (lambda i: i.update(memory=_memory(i, log_ctx_weight=i["memory"].log_ctx_weight[:1])), "log_ctx_weight"),
        (lambda i: i.update(ctx_mask=torch.ones(2, 1, 1, 5, dtype=torch.bool)), "ctx_bias must be"),
        (lambda i: i.update(query=i["query"].expand(2, 4, 10, 64)), "Q <= L"),
        (lambda i: i.update({k: i[k].half() for k in ("query", "key", "value")},
                            memory=_memory(i, key=i["memory"].key.half(), value=i["memory"].value.half())),
         "not supported"),
        (lambda i: i.update(query=i["query"][:, :3]), "multiple of key heads"),
        (lambda i: i.update(scale=float("nan")), "scale must be finite"),
    ],
    ids=["dtype", "shape", "memory-rows", "bias-shape", "weight-rows", "mask-shape", "causal-q-gt-l", "fp16-cpu",
         "gqa", "scale"],
)
def test_decode_wrapper_checks_before_the_op(change, message, op_never_entered):
    """memory_attention_extension (what decoding calls) checks what it hands the op, derived biases included."""
    inputs = decode_inputs()
    change(inputs)
    with pytest.raises(ValueError, match=message):
        memory_attention_extension(**inputs)


def test_good_arguments_reach_the_op(monkeypatch):
    """The handle the tests above replace is the one the wrappers call."""
    calls = []
    monkeypatch.setitem(extension._state, "op", lambda *a: calls.append(len(a)) or "out")
    assert extension.memory_attention_op(*probe.attention_args()) == "out"
    assert memory_attention_extension(**decode_inputs()) == "out" and calls == [9, 9]


def test_raw_op_checks_raise_in_a_subprocess():
    """The C++ checks, the second line: the raw op on each bad argument, all in one child process,
    so that a crash fails this test ("crashed with signal N") instead of taking pytest down."""
    problems = probe.raw_op_problems(ATTENTION_CASES)
    assert not problems, "\n".join(problems)


def test_build_info_matches_the_running_torch():
    info = extension.build_info()
    assert info["torch"] == re.match(r"\d+\.\d+\.\d+", torch.__version__).group(0)
    assert info["cxx11_abi"] == int(torch._C._GLIBCXX_USE_CXX11_ABI)
    assert info["cuda_kernels"] == extension.has_cuda_kernel()
    assert info["gcc"] or info["clang"]
    assert json.loads(torch.ops.ewe_ext.build_info()) == {k: v for k, v in info.items() if k != "cuda_kernels"}


def test_build_mismatch():
    info = {"torch": "2.11.0", "cxx11_abi": 1}
    assert extension.build_mismatch(info, "2.13.0+cpu", True) == \
        "built against torch 2.11.0, running torch 2.13.0: rebuild with `make ext`"
    assert extension.build_mismatch(info, "2.11.0+cu130", True) is None  # the local suffix is no mismatch
    assert "_GLIBCXX_USE_CXX11_ABI=1, running torch uses 0" in extension.build_mismatch(info, "2.11.0", False)
    assert "no build info" in extension.build_mismatch(None, "2.11.0", True)


@pytest.mark.parametrize("other_torch", [True, False], ids=["other-torch", "no-build-info"])
def test_a_mismatched_build_is_refused(other_torch, monkeypatch):
    """A build for another torch (or one that predates the build info) is never called: auto falls
    back to the fused path, and asking for the extension says why."""
    import ewe._C

    running = re.match(r"\d+\.\d+\.\d+", torch.__version__).group(0)
    build_info = ("2.12.0" if running == "2.11.0" else "2.11.0") if other_torch else None
    if build_info is None:
        monkeypatch.delattr(ewe._C, "BUILD_INFO")
        expected = "no build info"
    else:
        monkeypatch.setattr(ewe._C, "BUILD_INFO", json.dumps({**json.loads(ewe._C.BUILD_INFO), "torch": build_info}))
        expected = f"built against torch {build_info}, running torch {running}: rebuild with `make ext`"
    monkeypatch.setattr(extension, "_state", {"loaded": None, "error": None})
    monkeypatch.setattr(dispatch, "_notice", {"given": False})
    assert not extension.available()
    assert expected in extension.load_error()
    assert (extension.build_info() or {}).get("torch") == build_info
    assert dispatch.select("auto") is memory_attention_fused
    with pytest.raises(RuntimeError, match="rebuild with `make ext`"):
        memory_attention_extension(**decode_inputs())


def test_dispatch_auto_uses_extension_and_falls_back_per_input(monkeypatch):
    monkeypatch.delenv(dispatch.ENV_VAR, raising=False)
    monkeypatch.setenv(dispatch.ENV_VAR, "extension")
    assert dispatch.select() is memory_attention_extension
    monkeypatch.delenv(dispatch.ENV_VAR)
    fn = dispatch.select()
    assert fn is dispatch.memory_attention_auto
    query, key, value, memory, mask, scale = random_case(2, torch.float32, decode=True)
    calls = []
    monkeypatch.setattr(dispatch, "memory_attention_extension", lambda *a: calls.append(1) or memory_attention_extension(*a))
    fn(query, key, value, memory, mask, scale)
    assert calls == [1]
    half = LayerMemory(memory.key.half(), memory.value.half(), memory.bias, memory.unit_bounds, memory.log_ctx_weight)
    out = fn(query.half(), key.half(), value.half(), half, mask, scale)  # float16 on CPU: fused path
    assert calls == [1] and out.dtype == torch.float16


def test_ape_readout_runs_on_the_fused_path_never_the_kernel(monkeypatch):
    """The kernel computes eq. 1 only: with APE's read-out "auto" takes the fused path, and asking
    for the kernel by name is refused rather than silently ignoring the read-out."""
    query, key, value, memory, mask, scale = random_case(4, torch.float32, decode=True)
    ape = LayerMemory(memory.key, memory.value, memory.bias, memory.unit_bounds, memory.log_ctx_weight, 0.9, 0.9)
    assert extension.supports(query, key, value, memory) and not extension.supports(query, key, value, ape)
    expected = memory_attention_fused(query, key, value, ape, mask, scale)
    torch.testing.assert_close(dispatch.memory_attention_auto(query, key, value, ape, mask, scale), expected)
    with pytest.raises(ValueError, match="eq. 1 only"):
        memory_attention_extension(query, key, value, ape, mask, scale)


def test_dispatch_when_extension_missing(monkeypatch, caplog):
    monkeypatch.setattr(extension, "_state", {"loaded": False, "error": "ImportError: no ewe._C"})
    monkeypatch.setattr(dispatch, "_notice", {"given": False})
    with pytest.raises(RuntimeError, match="make ext"):
        dispatch.select("extension")
    with caplog.at_level(logging.INFO, logger="ewe"):
        assert dispatch.select("auto") is memory_attention_fused
        assert dispatch.select("auto") is memory_attention_fused
    notices = [r for r in caplog.records if "extension not built" in r.getMessage()]
    assert len(notices) == 1


cuda = pytest.mark.skipif(
    not (torch.cuda.is_available() and extension.has_cuda_kernel()),
    reason="needs a GPU and the extension built with its CUDA kernels",
)


@cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("decode", [False, True], ids=["prefill", "decode"])
@pytest.mark.parametrize("seed", range(12))
def test_cuda_matches_reference(seed, decode, dtype):
    check_against_reference(*random_case(seed, dtype, decode, device="cuda"))


@cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_cuda_long_decode_and_prefill(dtype):
    gen = torch.Generator().manual_seed(0)
    for q_len, ctx in ((1, 2001), (130, 515)):
        query = torch.randn(2, 9, q_len, 128, generator=gen).to("cuda", dtype)
        key, value = (torch.randn(2, 3, ctx, 128, generator=gen).to("cuda", dtype) for _ in range(2))
        memory = make_memory(2, 3, 128, [[255] * 8, [201] * 7], dtype, gen, "cuda")
        check_against_reference(query, key, value, memory, None, 128**-0.5)


@cuda
@pytest.mark.parametrize("case", probe.cases("memory_attention", "cuda"), ids=lambda c: c.name.split("/")[1])
def test_cuda_argument_checks_name_the_argument(case, op_never_entered):
    """On CUDA too, the kernel's own limits (head dim, group size) included."""
    with pytest.raises(ValueError, match=case.message):
        extension.memory_attention_op(*probe.case_args(case, "cuda"))


@cuda
def test_cuda_raw_op_checks_raise_in_a_subprocess():
    problems = probe.raw_op_problems(probe.cases("memory_attention", "cuda"), "cuda")
    assert not problems, "\n".join(problems)


def test_attention_bench_smoke(monkeypatch, capsys):
    """`ewe bench attention` end to end on tiny shapes: rows, ratios and the targets' lines."""
    import argparse

    from ewe.bench import attention as bench

    monkeypatch.setattr(bench, "GRID", [(1, 8, 16)])
    monkeypatch.setattr(bench, "DESIGN_CASE", (2, 8, 16))
    monkeypatch.setattr(bench, "stream_bandwidth", lambda repeats, megabytes=256: 10.0)
    monkeypatch.setattr(bench, "stream_buffer", lambda megabytes=256: torch.ones(1024))
    parser = argparse.ArgumentParser()
    bench.add_bench_arguments(parser)
    rows = bench.run_attention_bench(parser.parse_args(["--repeats", "1", "--layers", "2", "--prefill-len", "4"]))
    assert len(rows) == 8 and all(r.ext_ms and r.fused_ms and r.ref_ms for r in rows)
    assert all(r.stream_fraction is not None for r in rows if r.mode == "decode")
    out = capsys.readouterr().out
    assert "fused/ext" in out and "target (float32, k=2 M=8 ctx=16)" in out


def test_whole_model_generation_with_extension_equals_pytorch_path():
    """Greedy fp32 generation through every layer: the extension and the fused path agree token for token."""
    from tiny import tiny_ewe

    ewe = tiny_ewe()
    passages = ["Marie Curie was a Polish physicist.", "The Eiffel Tower is in Paris."]
    out = {}
    for impl in ("extension", "fused"):
        ewe.config.model.attention_impl = impl
        out[impl] = ewe.generate("Tell me a bio of Marie Curie.", passages=passages, max_new_tokens=24)
    assert out["extension"].token_ids == out["fused"].token_ids
    assert out["extension"].logprobs == pytest.approx(out["fused"].logprobs, abs=1e-4)


def test_ewe_generate_runs_the_extension_by_default():
    """Through the public API, with nothing configured, the compiled kernel is what runs."""
    from tiny import tiny_ewe

    before = dict(dispatch.used)
    tiny_ewe().generate("hi", passages=["a passage in memory"], max_new_tokens=3)
    ran = {k: dispatch.used[k] - before.get(k, 0) for k in dispatch.used}
    assert ran.get("extension", 0) > 0 and ran.get("fused", 0) == 0 and ran.get("reference", 0) == 0, ran


# The CUDA decode kernel (csrc/cuda/memory_attention.cu, decode_kernel): one query, D 64 or 128,
# G <= 8, rows on a 16-byte grid. test_cuda_matches_reference's decode cases reach it with short
# contexts and G <= 4; these add long contexts, G up to 8, float32, views and the fallbacks.
@cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=["fp16", "bf16", "fp32"])
@pytest.mark.parametrize(
    "batch, hkv, group, d, ctx, units, unit_len",
    [
        (1, 8, 4, 128, 8191, 8, 128),  # Llama-3-8B's layout, k = 8 units of 128: the splits fill the GPU
        (2, 8, 1, 128, 16383, 8, 128),  # long splits: each warp loops over ~130 keys
        (2, 2, 8, 128, 3001, 5, 127),  # G = 8, the kernel's largest group
        (3, 2, 5, 64, 1500, 3, 100),  # G = 5 in 8 register rows, D = 64
        (2, 1, 1, 64, 700, 0, 1),  # G = 1, no memory
        (1, 1, 2, 64, 66001, 4, 255),  # one KV head: the split count reaches its cap (256)
    ],
)
def test_cuda_decode_kernel_matches_reference(batch, hkv, group, d, ctx, units, unit_len, dtype):
    gen = torch.Generator().manual_seed(ctx + group)
    query = torch.randn(batch, hkv * group, 1, d, generator=gen).to("cuda", dtype)
    key, value = (torch.randn(batch, hkv, ctx, d, generator=gen).to("cuda", dtype) for _ in range(2))
    lengths = [[unit_len] * units] + [[unit_len - 2] * max(0, units - 1)] * (batch - 1)
    memory = make_memory(batch, hkv, d, lengths, dtype, gen, "cuda")
    check_against_reference(query, key, value, memory, None, d**-0.5)
    check_against_reference(query, key, value, memory, left_padded_mask(batch, 1, ctx, gen).to("cuda"), d**-0.5)


@cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_cuda_decode_views_and_fallbacks(dtype):
    """A transposed query and a static cache's slices are read in place; rows off the 16-byte grid,
    D = 72 and G = 12 take the generic kernel (split and merged)."""
    gen = torch.Generator().manual_seed(5)
    batch, hkv, group, d, ctx = 2, 4, 4, 128, 2049
    query = torch.randn(batch, 1, hkv * group, d, generator=gen).to("cuda", dtype).transpose(1, 2)
    cache = torch.randn(2, batch, hkv, ctx + 100, d, generator=gen).to("cuda", dtype)
    key, value = cache[0, :, :, :ctx], cache[1, :, :, :ctx]
    memory = make_memory(batch, hkv, d, [[127] * 8, [127] * 5], dtype, gen, "cuda")
    mask = left_padded_mask(batch, 1, ctx, gen).to("cuda")
    check_against_reference(query, key, value, memory, None, d**-0.5)
    check_against_reference(query, key, value, memory, mask, d**-0.5)
    off_grid = torch.randn(batch, hkv, ctx, d + 1, generator=gen).to("cuda", dtype)[..., 1:]
    check_against_reference(query, off_grid, value, memory, mask, d**-0.5)
    for group, d in ((3, 72), (12, 64)):
        query = torch.randn(batch, hkv * group, 1, d, generator=gen).to("cuda", dtype)
        key, value = (torch.randn(batch, hkv, ctx, d, generator=gen).to("cuda", dtype) for _ in range(2))
        memory = make_memory(batch, hkv, d, [[127] * 8, [127] * 5], dtype, gen, "cuda")
        check_against_reference(query, key, value, memory, mask, d**-0.5)


@cuda
def test_cuda_decode_kernel_replays_in_a_cuda_graph():
    """Captured once, the decode step reads its inputs' current values at each replay and gives
    the eager result bit for bit (no host synchronization, split states from the graph's pool)."""
    gen = torch.Generator().manual_seed(6)
    dtype, batch, hkv, group, d, ctx, n = torch.bfloat16, 1, 8, 4, 128, 4095, 1024
    query = torch.randn(batch, hkv * group, 1, d, generator=gen).to("cuda", dtype)
    key, value, mem_key, mem_value = (
        torch.randn(batch, hkv, length, d, generator=gen).to("cuda", dtype) for length in (ctx, ctx, n, n))
    mem_bias = torch.zeros(batch, 1, 1, n, device="cuda")
    log_w = torch.full((batch, 1, 1, 1), 2.0, device="cuda")
    ctx_bias = torch.zeros(batch, 1, 1, ctx, device="cuda")
    ctx_bias[..., :100] = float("-inf")
    op = torch.ops.ewe_ext.memory_attention.default
    step = lambda: op(query, key, value, mem_key, mem_value, mem_bias, log_w, ctx_bias, d**-0.5)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # warm-up outside the capture, as engine/cuda_graph.py does
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step()
    for _ in range(2):
        query.normal_()
        graph.replay()
        torch.testing.assert_close(captured, step(), atol=0, rtol=0)
