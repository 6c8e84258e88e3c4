"""`ewe bench attention`: the memory-attention implementations timed side by side, in one process.

Times one attention-layer call (eq. 1 over k units of M tokens plus the context) for the
compiled extension, the fused PyTorch path and the literal k+1-pass reference, at a head
layout (--heads HQ,HKV,D or --layout; SmolLM2-135M's 9 query heads, 3 KV heads, head dim 64
by default) and batch sizes (--batch, 1 by default), in decode (Q = 1) and prefill (Q =
--prefill-len new tokens at the end of the context). Times are per layer call, the median over
repeats; multiply by the model's layer count (30 for SmolLM2, 32 for Llama-3-8B) for its stack.

Decode cycles through --layers distinct sets of tensors (30 by default, as many as SmolLM2
has), so keys and values stream from memory as they do in a model rather than from cache.
Each set's keys are one [B, Hkv, k*M + ctx, D] tensor, the memory units then the context; eq.
1's memory and context are views of it, so every implementation reads the same bytes. The
tensors of a case stay within --max-gb (8 GB by default, counted with the fused path's float32
scores): fewer sets where they would not fit (never fewer than 2, so consecutive calls never
reuse tensors), and a case whose single call would not fit is skipped ("skipped: X GB"). The
literal reference is skipped where B*Hq*(k*M + ctx) exceeds --reference-max (2**20 by default:
its float32 copies of every key for every query head are slow and large there); the outputs
are then checked against the fused path's instead, so every timed implementation is still
checked to compute the same output.

On CPU the same run times a plain streaming read (`x.sum()` over 256 MB) between the
decode calls and reports the extension's decode bandwidth (bytes of K and V read per call /
time) as a fraction of it, the median of the per-repeat fractions (each repeat's calls against
the stream read right after them); each timed loop there starts from caches holding clean
lines only (see `_time_interleaved`). Implementations are interleaved within each repeat, so
a busy machine slows them alike; the load average is printed because 2-thread timings on an
oversubscribed machine are mostly scheduler noise (try --threads 1 there).

On CUDA the run measures the device's copy bandwidth (`dst.copy_(src)` over --copy-mb MB,
bytes read + written per second) at the start and again between the decode calls, and reports
the extension's decode bandwidth as a fraction of it ('ext/copy', paired per repeat as on
CPU). It also times torch's scaled_dot_product_attention (enable_gqa=True) over the
concatenated keys in decode ('sdpa', on by default on CUDA, --sdpa elsewhere): plain softmax
attention reading the same bytes, a bandwidth baseline, not eq. 1 (it lacks eq. 1's log(k+1)
context weight; its output is checked against the fused path's with that weight set to 0).
Each fused SDPA kernel that runs (flash, memory-efficient, cuDNN; --sdpa-kernels) is timed and the
fastest is reported; the math fallback only when none runs, and it is labelled.

Where flash-attention 4 is installed (a Hopper or Blackwell GPU, ewe/ops/flash.py), eq. 1 through it
is timed too ('flash'), and the layout targets are checked for ext, for flash, and for the faster
of the two on each shape ('best'), which is what a measured per-shape choice would run.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import statistics
import time
import warnings
from dataclasses import asdict, dataclass
from typing import NamedTuple

import torch

from ..argtypes import positive_float, positive_int, positive_ints
from ..ops import extension, flash
from ..ops.flash import memory_attention_flash
from ..ops.fused import memory_attention_fused
from ..ops.layer_memory import LayerMemory
from ..ops.reference import memory_attention_reference

# Head layouts (query heads, KV heads, head dim) of the models the bench has presets for
LAYOUTS = {"smollm2": (9, 3, 64), "llama3-8b": (32, 8, 128)}
LAYOUT_NAMES = {(9, 3, 64): "SmolLM2-135M", (32, 8, 128): "Llama-3-8B"}
# SmolLM2-135M-Instruct's attention: the default layout
HEADS, KV_HEADS, HEAD_DIM = LAYOUTS["smollm2"]
GRID = [(k, 128, ctx) for ctx in (512, 2048) for k in (1, 4, 8, 16)]
DESIGN_CASE = (8, 256, 1024)  # docs/DESIGN.md section 6: k = 8, M = 256, context 1024
TARGETS = {"fused_over_ext": 1.0, "ref_over_ext": 6.0, "stream_fraction": 0.5,
           # the GPU issue's (60): decode at the 8B layout, context >= 8k, reads K/V at >= 70% of the device copy's
           # bandwidth; decode at >= 0.9x the speed of SDPA over the concatenated keys; prefill never slower than fused
           "copy_fraction": 0.7, "sdpa_over_ext": 0.9, "prefill_fused_over_ext": 1.0}
COPY_TARGET_LAYOUT, COPY_TARGET_MIN_CTX = LAYOUTS["llama3-8b"], 8192
# Largest |difference| from the literal reference (the fused path when it is skipped) for which two
# implementations count as computing the same output, so that timing them side by side compares equal work.
SAME_OUTPUT_ATOL = {"float32": 1e-3, "bfloat16": 6e-2}
REFERENCE_MAX_KEYS = 2**20  # default --reference-max: B * Hq * (k*M + ctx) above which the reference is skipped
COPIES_PER_SAMPLE = 4  # device copies timed together (CUDA events) for one copy sample
# the fused SDPA kernels the sdpa baseline tries (torch.nn.attention.SDPBackend names)
SDPA_BACKENDS = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION"}


@dataclass
class Row:
    mode: str
    dtype: str
    k: int
    M: int
    ctx: int
    ext_ms: float | None
    fused_ms: float
    ref_ms: float | None
    ext_gbps: float | None = None
    stream_gbps: float | None = None
    stream_fraction: float | None = None
    max_diff: float | None = None  # largest |output - reference output| over the implementations timed
    batch: int = 1
    heads: int = HEADS
    kv_heads: int = KV_HEADS
    head_dim: int = HEAD_DIM
    layers: int = 1  # distinct tensor sets cycled through
    kv_bytes: int | None = None  # bytes of K and V (memory and context, all batch rows) one call reads
    ref_note: str | None = None  # why the reference was not timed
    sdpa_ms: float | None = None  # the fastest SDPA backend's time (decode)
    sdpa_backend: str | None = None
    sdpa_ms_by_backend: dict | None = None
    sdpa_note: str | None = None  # why SDPA was not timed, when asked for
    sdpa_refused: str | None = None  # the SDPA backends that did not run, and why, when another did
    copy_gbps: float | None = None  # device copy, bytes read + written per second, timed between this row's calls
    copy_fraction: float | None = None  # ext's K/V read bandwidth / copy_gbps, paired per repeat
    flash_ms: float | None = None  # eq. 1 through flash-attention 4, where it runs
    flash_copy_fraction: float | None = None  # flash's K/V read bandwidth / copy_gbps, paired per repeat

    @property
    def fused_over_ext(self):
        return self.fused_ms / self.ext_ms if self.ext_ms else None

    @property
    def ref_over_ext(self):
        return self.ref_ms / self.ext_ms if self.ext_ms and self.ref_ms else None

    @property
    def sdpa_over_ext(self):
        return self.sdpa_ms / self.ext_ms if self.ext_ms and self.sdpa_ms else None

    @property
    def best(self) -> str | None:
        """The faster of ext and flash on this shape (None when neither ran)."""
        times = {name: ms for name, ms in (("ext", self.ext_ms), ("flash", self.flash_ms)) if ms}
        return min(times, key=times.get) if times else None

    @property
    def layout(self) -> tuple[int, int, int]:
        return self.heads, self.kv_heads, self.head_dim


def head_layout(v: str) -> tuple[int, int, int]:
    """argparse type of --heads: HQ,HKV,D, whole numbers >= 1 with HQ a multiple of HKV."""
    hq, hkv, d = positive_ints(3, "HQ,HKV,D")(v)
    if hq % hkv:
        raise argparse.ArgumentTypeError(f"{v!r}: HQ ({hq}) must be a multiple of HKV ({hkv}): each KV head serves "
                                         "a whole group of query heads")
    return hq, hkv, d


head_layout.__name__ = "HQ,HKV,D"


def add_bench_arguments(parser) -> None:
    """Options of `ewe bench attention`."""
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a few minutes on 2 cores)")
    parser.add_argument("--repeats", type=positive_int, default=None, help="timed repeats per case (default 15, quick 5)")
    parser.add_argument("--dtype", nargs="+", choices=["float32", "bfloat16"], default=["float32", "bfloat16"])
    parser.add_argument("--modes", nargs="+", choices=["decode", "prefill"], default=["decode", "prefill"])
    parser.add_argument("--prefill-len", type=positive_int, default=128, help="new tokens per prefill call")
    parser.add_argument("--layers", type=positive_int, default=30,
                        help="distinct layers' tensors cycled through in decode (fewer where --max-gb is reached)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--no-reference", action="store_true", help="skip the literal k+1-pass reference")
    parser.add_argument("--reference-max", type=positive_int, default=REFERENCE_MAX_KEYS, metavar="N",
                        help="skip the literal reference where B*Hq*(k*M+ctx) exceeds N (default 2**20 = 1048576); "
                             "the outputs are then checked against the fused path's")
    parser.add_argument("--case", dest="cases", action="append", type=positive_ints(3, "K,M,CTX"), default=None,
                        help="a case to time instead of the default grid (repeatable), e.g. --case 8,256,1024")
    layout = parser.add_mutually_exclusive_group()
    layout.add_argument("--heads", type=head_layout, default=None, metavar="HQ,HKV,D",
                        help="head layout: query heads, KV heads, head dim (default 9,3,64: SmolLM2-135M)")
    layout.add_argument("--layout", choices=sorted(LAYOUTS), default=None,
                        help="a preset head layout: " + ", ".join(f"{n} = {','.join(map(str, h))}"
                                                                   for n, h in LAYOUTS.items()))
    parser.add_argument("--batch", nargs="+", type=positive_int, default=[1], metavar="N",
                        help="batch sizes to time (default 1)")
    parser.add_argument("--max-gb", type=positive_float, default=8.0,
                        help="GB (1e9 bytes) that one case's tensor sets and the fused path's scores may take "
                             "(default 8): fewer layer sets beyond it, and a case whose one call exceeds it is skipped")
    parser.add_argument("--sdpa", action=argparse.BooleanOptionalAction, default=None,
                        help="also time torch's scaled_dot_product_attention over the concatenated keys in decode "
                             "(a bandwidth baseline, not eq. 1; default: on CUDA only)")
    parser.add_argument("--sdpa-kernels", type=sdpa_kernels, default=list(SDPA_BACKENDS), metavar="LIST",
                        help="the fused SDPA kernels tried, each timed where it runs and the fastest reported "
                             f"(default {','.join(SDPA_BACKENDS)}); the math fallback only when none runs")
    parser.add_argument("--stream-mb", type=positive_int, default=256,
                        help="size of the streaming-read buffer on CPU (larger than the caches; default 256)")
    parser.add_argument("--copy-mb", type=positive_int, default=1024,
                        help="size of each of the device copy's two buffers on CUDA (default 1024)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None, help="also write the rows to this file")


def resolve_heads(args) -> tuple[int, int, int]:
    """The head layout that --heads / --layout ask for (SmolLM2-135M's when neither is given)."""
    if getattr(args, "heads", None):
        return tuple(args.heads)
    return LAYOUTS[getattr(args, "layout", None) or "smollm2"]


class Layer(NamedTuple):
    """One layer's inputs: q [B, Hq, Q, D]; key, value [B, Hkv, L, D] (the context); memory (its key and value
    [B, Hkv, k*M, D]); key_all, value_all [B, Hkv, k*M + L, D]: the memory then the context, of which key, value
    and memory's key and value are views."""

    q: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    memory: LayerMemory
    key_all: torch.Tensor
    value_all: torch.Tensor


def _make_layers(k, M, ctx, q_len, dtype, device, count, heads=(HEADS, KV_HEADS, HEAD_DIM), batch=1, seed=0):
    hq, hkv, d = heads
    n = k * M
    if torch.device(device).type == "cuda":  # made where they are used: no host copy of gigabytes
        gen = torch.Generator(device=device).manual_seed(seed)

        def fill(t):
            t.normal_(generator=gen)
    else:  # float32 from a CPU generator, then cast: the values the bench has always used on CPU
        gen = torch.Generator().manual_seed(seed)

        def fill(t):
            t.copy_(torch.randn(*t.shape, generator=gen))

    layers = []
    for _ in range(count):
        key_all = torch.empty(batch, hkv, n + ctx, d, dtype=dtype, device=device)
        value_all = torch.empty_like(key_all)
        q = torch.empty(batch, hq, q_len, d, dtype=dtype, device=device)
        for t in (key_all[:, :, :n], value_all[:, :, :n], q, key_all[:, :, n:], value_all[:, :, n:]):
            fill(t)
        memory = LayerMemory(
            key_all[:, :, :n],
            value_all[:, :, :n],
            None,
            [[(i * M, (i + 1) * M) for i in range(k)] for _ in range(batch)],
            LayerMemory.context_weight([k] * batch, device),
        )
        layers.append(Layer(q, key_all[:, :, n:], value_all[:, :, n:], memory, key_all, value_all))
    return layers


def _eq1(impl):
    """An eq. 1 implementation (query, key, value, memory, mask, scale) as a timed function of (layer, scale)."""
    return lambda layer, scale: impl(layer.q, layer.key, layer.value, layer.memory, None, scale)


def _sdpa(layer: Layer, scale: float):
    """Plain softmax attention over the memory and the context concatenated ahead of time (no log(k+1) weight)."""
    return torch.nn.functional.scaled_dot_product_attention(layer.q, layer.key_all, layer.value_all, scale=scale,
                                                            enable_gqa=True)


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _time_copy(src: torch.Tensor, dst: torch.Tensor, copies: int = COPIES_PER_SAMPLE) -> float:
    """Seconds per `dst.copy_(src)`, `copies` of them timed together (CUDA events on CUDA)."""
    if src.is_cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(copies):
            dst.copy_(src)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / copies
    start = time.perf_counter()
    for _ in range(copies):
        dst.copy_(src)
    return (time.perf_counter() - start) / copies


def copy_buffers(device, megabytes: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """Two byte buffers of `megabytes` MB each on `device`, for timing a device copy."""
    src = torch.ones(megabytes * 2**20, dtype=torch.uint8, device=device)
    return src, torch.empty_like(src)


def copy_bandwidth(buffers, repeats: int = 10) -> float:
    """GB/s of `dst.copy_(src)`, counting bytes read and written, the median over repeats."""
    src, dst = buffers
    _time_copy(src, dst, 1)
    times = [_time_copy(src, dst) for _ in range(repeats)]
    return 2 * src.numel() * src.element_size() / statistics.median(times) / 1e9


def _time_interleaved(fns: dict, layers, repeats, device, stream_buffer=None, copy=None, scale=None,
                      contexts=None) -> dict[str, list[float]]:
    """Seconds per layer call of each function (called as fn(layer, scale)), one sample per repeat, the
    functions interleaved within each repeat (`statistics.median` of a list gives the usual figure).

    With a stream_buffer, each repeat also times one `stream_buffer.sum()` (key "stream"), and
    every timed loop starts after an untimed read of its first 64 MB: the caches then hold
    clean lines only, as in a model's decode step (whose other ops read weights), instead of
    the previous implementation's written temporaries, whose write-back would be charged to
    whichever implementation runs next. With copy = (src, dst), each repeat also times the device
    copy (key "copy", seconds per copy). contexts: name -> a context manager factory entered around
    that function's timed loop, outside the timing (e.g. the choice of SDPA backend).
    """
    scale = layers[0].q.shape[-1] ** -0.5 if scale is None else scale
    contexts = contexts or {}
    extra = (["stream"] if stream_buffer is not None else []) + (["copy"] if copy is not None else [])
    samples = {name: [] for name in list(fns) + extra}
    clean = stream_buffer[: 64 * 2**20 // stream_buffer.element_size()] if stream_buffer is not None else None
    for rep in range(repeats + 1):  # the first round warms up
        for name, fn in fns.items():
            with contexts.get(name, contextlib.nullcontext)():
                if clean is not None:
                    clean.sum()
                _sync(device)
                start = time.perf_counter()
                for layer in layers:
                    fn(layer, scale)
                _sync(device)
                if rep:
                    samples[name].append((time.perf_counter() - start) / len(layers))
        if stream_buffer is not None:
            clean.sum()
            start = time.perf_counter()
            stream_buffer.sum()
            if rep:
                samples["stream"].append(time.perf_counter() - start)
        if copy is not None:
            seconds = _time_copy(*copy)
            if rep:
                samples["copy"].append(seconds)
    return samples


def same_outputs(fns: dict, layer, dtype_name: str, reference=None, scale=None) -> float:
    """Run every implementation (fn(layer, scale)) once on the same inputs and return the largest |difference|
    from the reference's output (`reference`, else the fused path's); raise if any is beyond SAME_OUTPUT_ATOL,
    since timing implementations that compute different outputs would not compare equal work."""
    scale = layer.q.shape[-1] ** -0.5 if scale is None else scale
    expected = (reference or fns["fused"])(layer, scale).float()
    worst = 0.0
    for name, fn in fns.items():
        diff = (fn(layer, scale).float() - expected).abs().max().item()
        if not diff <= SAME_OUTPUT_ATOL[dtype_name]:  # also catches NaN
            raise RuntimeError(f"{name} computes another output than the reference ({dtype_name}: max |diff| "
                               f"{diff:.3g} > {SAME_OUTPUT_ATOL[dtype_name]}): timing them side by side would not "
                               "compare equal work")
        worst = max(worst, diff)
    return worst


def sdpa_kernels(v: str) -> list[str]:
    """argparse type of --sdpa-kernels: fused SDPA backends separated by commas."""
    names = [n.strip() for n in v.split(",") if n.strip()]
    unknown = [n for n in names if n not in SDPA_BACKENDS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"{v!r}: expected some of {','.join(SDPA_BACKENDS)} separated by commas")
    return names


def _short(exc_or_text, limit=160) -> str:
    text = " ".join(str(exc_or_text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sdpa_backends(layer: Layer, dtype_name: str, scale: float, kernels=tuple(SDPA_BACKENDS)
                  ) -> tuple[dict, dict, str | None]:
    """The SDPA backends that run on this layer's inputs and give plain softmax attention over its keys.

    Returns (fns, contexts, refused): fns maps "sdpa:<backend>" to a timed function, contexts maps it to the
    `sdpa_kernel` context that selects that backend, refused says which backends did not run and why (None when
    all did). The fused kernels named in `kernels` (flash, memory-efficient, cuDNN) are tried; the math
    fallback, which copies K and V per query head when enable_gqa is set, only when none of them runs. Each
    output is checked against the fused path's with eq. 1's log(k+1) context weight set to 0, which is the
    same softmax over the same keys.
    """
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as exc:
        return {}, {}, f"torch {torch.__version__} has no torch.nn.attention ({_short(exc)})"
    plain = dataclasses.replace(layer.memory, log_ctx_weight=torch.zeros_like(layer.memory.log_ctx_weight))
    expected = memory_attention_fused(layer.q, layer.key, layer.value, plain, None, scale).float()  # [B, Q, Hq, D]
    fns, contexts, failures = {}, {}, []
    for names in ({name: SDPA_BACKENDS[name] for name in kernels}, {"math": "MATH"}):
        for name, attr in names.items():
            backend = getattr(SDPBackend, attr, None)
            if backend is None:
                failures.append(f"{name}: not in this torch")
                continue
            context = (lambda b: lambda: sdpa_kernel([b]))(backend)
            try:
                with warnings.catch_warnings(record=True) as caught, context():
                    warnings.simplefilter("always")
                    out = _sdpa(layer, scale)
                diff = (out.transpose(1, 2).float() - expected).abs().max().item()
            except Exception as exc:  # e.g. a backend that refuses enable_gqa, this dtype or head dim
                why = _short(caught[0].message, 120) if caught else ""
                failures.append(f"{name}: {why or _short(exc, 100)}")  # torch's warning gives the reason
                continue
            if not diff <= SAME_OUTPUT_ATOL[dtype_name]:
                failures.append(f"{name}: output differs from softmax attention over the same keys by {diff:.3g}")
                continue
            fns[f"sdpa:{name}"] = lambda layer, scale: _sdpa(layer, scale)
            contexts[f"sdpa:{name}"] = context
        if fns:
            break
    return fns, contexts, "; ".join(failures) or None


def paired_fraction(bytes_a: int, seconds_a: list[float], bytes_b: int, seconds_b: list[float]) -> float:
    """Median over repeats of (bandwidth of a) / (bandwidth of b), each repeat's pair timed
    back to back: a machine whose speed drifts during the run moves both sides of a ratio alike."""
    return statistics.median((bytes_a / ta) / (bytes_b / tb) for ta, tb in zip(seconds_a, seconds_b, strict=True))


def stream_buffer(megabytes: int = 256) -> torch.Tensor:
    """A float32 tensor larger than any cache, for timing a plain streaming read (`x.sum()`)."""
    return torch.ones(megabytes * 2**20 // 4)


def stream_bandwidth(repeats: int = 10, megabytes: int = 256) -> float:
    """GB/s of a plain streaming read (`x.sum()` over a float32 tensor larger than any cache)."""
    x = stream_buffer(megabytes)
    x.sum()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        x.sum()
        times.append(time.perf_counter() - start)
    return x.numel() * 4 / statistics.median(times) / 1e9


def case_bytes(heads, batch, k, M, ctx, q_len, itemsize) -> tuple[int, int]:
    """(bytes of one layer set: K, V and q; bytes of the fused path's float32 score-sized temporaries in one call)."""
    hq, hkv, d = heads
    keys = k * M + ctx
    tensors = 2 * batch * hkv * keys * d * itemsize + batch * hq * q_len * d * itemsize
    return tensors, 3 * batch * hq * q_len * keys * 4  # scores, exp(scores) and its cast live at once


def _layout_name(heads) -> str:
    return f"{LAYOUT_NAMES[heads]} shapes" if heads in LAYOUT_NAMES else "head layout"


def run_attention_bench(args) -> list[Row]:
    """Run the benchmark described in the module docstring; print a table and return its rows."""
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (5 if args.quick else 15)
    device = args.device
    heads = resolve_heads(args)
    hq, hkv, d = heads
    scale = d**-0.5
    batches = list(getattr(args, "batch", None) or [1])
    budget = getattr(args, "max_gb", 8.0) * 1e9
    reference_max = getattr(args, "reference_max", REFERENCE_MAX_KEYS)
    on_cpu = torch.device(device).type == "cpu"
    on_cuda = torch.device(device).type == "cuda"
    sdpa_on = on_cuda if getattr(args, "sdpa", None) is None else args.sdpa
    # today's CPU printout at the default layout and batch 1; more columns and targets for the rest
    extended = not on_cpu or sdpa_on or batches != [1] or heads != LAYOUTS["smollm2"]
    have_ext = extension.available()
    print(f"memory attention, one layer call, {_layout_name(heads)} (Hq={hq}, Hkv={hkv}, D={d}, "
          f"B={' '.join(map(str, batches))}); median of {repeats}; {torch.get_num_threads()} threads; device {device}")
    if not have_ext:
        print(f"extension not available ({extension.load_error()}): timing fused and reference only; `make ext` builds it")
    elif on_cuda and not extension.has_cuda_kernel():
        print("extension built without its CUDA kernel: timing fused and reference only; `make ext` with nvcc and a "
              "CUDA build of torch builds it")
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    stream = stream_bandwidth(repeats=max(5, repeats), megabytes=args.stream_mb) if on_cpu else None
    if stream:
        print(f"streaming read (x.sum() over {args.stream_mb} MB): {stream:.1f} GB/s at the start; decode rows time "
              "it again between their calls ('stream GB/s') and compare with that")
    copy = copy_buffers(device, args.copy_mb) if on_cuda and "decode" in args.modes else None
    copy_gbps = copy_bandwidth(copy, repeats=max(5, repeats)) if copy is not None else None
    if copy_gbps:
        print(f"device copy (dst.copy_(src), {args.copy_mb} MB): {copy_gbps:.0f} GB/s counting bytes read and "
              f"written, at the start; decode rows time it again between their calls ('copy GB/s') and compare the "
              "extension's K/V read bandwidth with that ('ext/copy')")
    if on_cuda:
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
        print(f"GPU: {torch.cuda.get_device_name(device)}, L2 {l2 / 1e6:.0f} MB; torch {torch.__version__}")
    print("fused/ext and ref/ext: the same layer call (same q, K, V and memory; every output checked equal to the "
          "reference's, 'max|d|') timed interleaved; ext/stream: the extension's K/V read bandwidth as a fraction "
          "of a plain streaming read's, not a speed-up")
    if sdpa_on:
        print("sdpa: torch's scaled_dot_product_attention (enable_gqa=True, decode only) over the memory and context "
              "keys concatenated ahead of time (untimed): a bandwidth baseline reading the same bytes, NOT eq. 1 (no "
              "log(k+1) context weight); the fastest fused SDPA kernel that runs; sdpa/ext > 1: ext faster")
    if extended:
        print(f"B: batch rows; ext GB/s: bytes of K and V (memory and context, all batch rows) per ext call / its "
              f"time; tensors within --max-gb {budget / 1e9:g} GB per case; the reference is skipped where "
              f"B*Hq*(k*M+ctx) > {reference_max}")
    buffer = stream_buffer(args.stream_mb) if on_cpu and "decode" in args.modes else None
    l2_bytes = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) if on_cuda else 0

    rows, skipped = [], []
    last_sdpa_note = None
    cases = [tuple(c) for c in args.cases] if args.cases else GRID + [DESIGN_CASE]
    for mode in args.modes:
        q_len = 1 if mode == "decode" else args.prefill_len
        for dtype_name in args.dtype:
            dtype = getattr(torch, dtype_name)
            for k, M, ctx in cases:
                ctx = max(ctx, q_len)
                for batch in batches:
                    set_bytes, work_bytes = case_bytes(heads, batch, k, M, ctx, q_len, dtype.itemsize)
                    label = f"{mode} {dtype_name} k={k} M={M} ctx={ctx} B={batch}"
                    if set_bytes + work_bytes > budget:
                        gb = (set_bytes + work_bytes) / 1e9
                        print(f"{label}: skipped: {gb:.3g} GB for one call (K, V and q {set_bytes / 1e9:.3g} GB, "
                              f"the fused path's scores {work_bytes / 1e9:.3g} GB) > --max-gb {budget / 1e9:g}",
                              flush=True)
                        skipped.append({"mode": mode, "dtype": dtype_name, "k": k, "M": M, "ctx": ctx, "batch": batch,
                                        "gb": gb})
                        continue
                    row = _run_case(args, mode, dtype_name, dtype, k, M, ctx, q_len, batch, heads, scale, repeats,
                                    device, budget, reference_max, have_ext, sdpa_on, buffer, copy)
                    rows.append(row)
                    _print_row(row, header=len(rows) == 1, extended=extended)
                    if row.sdpa_note and row.sdpa_note != last_sdpa_note:
                        print(f"  sdpa: n/a ({row.sdpa_note})", flush=True)
                        last_sdpa_note = row.sdpa_note
                    elif row.sdpa_refused and row.sdpa_refused != last_sdpa_note:
                        print(f"  sdpa: timed {', '.join(row.sdpa_ms_by_backend)}; did not run: {row.sdpa_refused}",
                              flush=True)
                        last_sdpa_note = row.sdpa_refused
                    if on_cuda and mode == "decode" and l2_bytes and row.layers * set_bytes < 2 * l2_bytes:
                        print(f"  note: {row.layers} sets x {set_bytes / 1e6:.1f} MB cycled is less than twice the "
                              f"{l2_bytes / 1e6:.0f} MB L2: reads partly hit L2 (raise --layers)", flush=True)
                    if on_cuda:
                        torch.cuda.empty_cache()
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    _print_targets(rows)
    if extended:
        _print_layout_targets(rows, on_cuda, sdpa_on)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"stream_gbps": stream, "threads": torch.get_num_threads(), "device": device,
                       "device_name": torch.cuda.get_device_name(device) if on_cuda else None,
                       "copy_gbps": copy_gbps, "copy_mb": args.copy_mb if copy is not None else None,
                       "heads": list(heads), "batches": batches, "max_gb": budget / 1e9,
                       "reference_max": reference_max, "torch": torch.__version__,
                       "ext_build": extension.build_info() if hasattr(extension, "build_info") else None,
                       "rows": [asdict(r) | {"fused_over_ext": r.fused_over_ext, "ref_over_ext": r.ref_over_ext,
                                             "sdpa_over_ext": r.sdpa_over_ext, "best": r.best} for r in rows],
                       "skipped": skipped}, f, indent=1)
    return rows


def _run_case(args, mode, dtype_name, dtype, k, M, ctx, q_len, batch, heads, scale, repeats, device, budget,
              reference_max, have_ext, sdpa_on, buffer, copy) -> Row:
    """One row: make the tensors, check the outputs agree, time the implementations interleaved."""
    hq, hkv, d = heads
    set_bytes, work_bytes = case_bytes(heads, batch, k, M, ctx, q_len, dtype.itemsize)
    count = 1
    if mode == "decode":  # as many sets as asked for and fit, and at least 2 (unless --layers 1)
        count = min(args.layers, max(2, int((budget - work_bytes) // set_bytes)))
    layers = _make_layers(k, M, ctx, q_len, dtype, device, count, heads, batch)
    fns = {"fused": _eq1(memory_attention_fused)}
    first = layers[0]
    if have_ext and extension.supports(first.q, first.key, first.value, first.memory):
        fns["ext"] = _eq1(extension.memory_attention_extension)
    if flash.supports(first.q, first.key, first.value, first.memory, None):
        fns["flash"] = _eq1(memory_attention_flash)
    ref_note = None
    if args.no_reference:
        ref_note = "--no-reference"
    elif batch * hq * (k * M + ctx) > reference_max:
        ref_note = f"B*Hq*(k*M+ctx) = {batch * hq * (k * M + ctx)} > --reference-max {reference_max}"
    else:
        fns["ref"] = _eq1(memory_attention_reference)
    max_diff = same_outputs(fns, first, dtype_name, fns.get("ref"), scale)
    contexts, sdpa_note, sdpa_refused = {}, None, None
    if sdpa_on and mode == "decode":
        sdpa_fns, contexts, sdpa_refused = sdpa_backends(first, dtype_name, scale,
                                                         getattr(args, "sdpa_kernels", None) or list(SDPA_BACKENDS))
        fns.update(sdpa_fns)
        if not sdpa_fns:  # none runs: say why in the row, "sdpa: n/a (...)"
            sdpa_note, sdpa_refused = sdpa_refused, None
    samples = _time_interleaved(fns, layers, repeats, device, buffer if mode == "decode" else None,
                                copy if mode == "decode" else None, scale, contexts)
    del layers, first
    times = {name: statistics.median(ts) for name, ts in samples.items()}
    row = Row(mode, dtype_name, k, M, ctx, times.get("ext", None) and times["ext"] * 1e3,
              times["fused"] * 1e3, times.get("ref", None) and times["ref"] * 1e3, max_diff=max_diff,
              batch=batch, heads=hq, kv_heads=hkv, head_dim=d, layers=count, ref_note=ref_note, sdpa_note=sdpa_note,
              sdpa_refused=sdpa_refused, flash_ms=times.get("flash", None) and times["flash"] * 1e3)
    row.kv_bytes = 2 * batch * hkv * (k * M + ctx) * d * dtype.itemsize
    sdpa_times = {name.split(":", 1)[1]: t * 1e3 for name, t in times.items() if name.startswith("sdpa:")}
    if sdpa_times:
        row.sdpa_ms_by_backend = sdpa_times
        row.sdpa_backend = min(sdpa_times, key=sdpa_times.get)
        row.sdpa_ms = sdpa_times[row.sdpa_backend]
    if "stream" in times:
        row.stream_gbps = buffer.numel() * 4 / times["stream"] / 1e9
    if "copy" in times:
        copy_bytes = 2 * copy[0].numel() * copy[0].element_size()
        row.copy_gbps = copy_bytes / times["copy"] / 1e9
    if mode == "decode" and row.ext_ms:
        row.ext_gbps = row.kv_bytes / (row.ext_ms / 1e3) / 1e9
        if "stream" in samples:
            row.stream_fraction = paired_fraction(row.kv_bytes, samples["ext"], buffer.numel() * 4, samples["stream"])
        if "copy" in samples:
            row.copy_fraction = paired_fraction(row.kv_bytes, samples["ext"], copy_bytes, samples["copy"])
    if mode == "decode" and row.flash_ms and "copy" in samples:
        row.flash_copy_fraction = paired_fraction(row.kv_bytes, samples["flash"], copy_bytes, samples["copy"])
    return row


def _fmt(x, spec=".3f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def row_of(saved: dict) -> Row:
    """A Row back from the JSON `--json` wrote (its derived ratios dropped: they are recomputed)."""
    names = {f.name for f in dataclasses.fields(Row)}
    return Row(**{k: v for k, v in saved.items() if k in names})


def _print_row(row: Row, header: bool, extended: bool = False) -> None:
    if header:
        print(f"{'mode':8} {'dtype':9} {'k':>3} {'M':>4} {'ctx':>5} | {'ext ms':>8} {'fused ms':>9} {'ref ms':>9} | "
              f"{'fused/ext':>9} {'ref/ext':>8} {'max|d|':>8} | {'ext GB/s':>8} {'stream GB/s':>11} {'ext/stream':>10}"
              + (f" | {'B':>3} {'sdpa ms':>8} {'sdpa/ext':>8} | {'copy GB/s':>9} {'ext/copy':>8} | sdpa kernel"
                 f" | {'flash ms':>8} {'flash/copy':>10}" if extended else ""))
    print(f"{row.mode:8} {row.dtype:9} {row.k:3d} {row.M:4d} {row.ctx:5d} | {_fmt(row.ext_ms):>8} "
          f"{_fmt(row.fused_ms):>9} {_fmt(row.ref_ms):>9} | {_fmt(row.fused_over_ext, '.2f'):>9} "
          f"{_fmt(row.ref_over_ext, '.2f'):>8} {_fmt(row.max_diff, '.1e'):>8} | {_fmt(row.ext_gbps, '.1f'):>8} {_fmt(row.stream_gbps, '.1f'):>11} "
          f"{_fmt(row.stream_fraction, '.0%'):>10}"
          + (f" | {row.batch:3d} {_fmt(row.sdpa_ms):>8} {_fmt(row.sdpa_over_ext, '.2f'):>8} | "
             f"{_fmt(row.copy_gbps, '.0f'):>9} {_fmt(row.copy_fraction, '.0%'):>8} | {row.sdpa_backend or '-':11}"
             f" | {_fmt(row.flash_ms):>8} {_fmt(row.flash_copy_fraction, '.0%'):>10}" if extended else ""),
          flush=True)


def _print_targets(rows) -> None:
    """The decode targets, checked at the docs/DESIGN.md case (section 6), at SmolLM2's layout."""
    for row in rows:
        if (row.mode != "decode" or (row.k, row.M, row.ctx) != DESIGN_CASE or row.ext_ms is None
                or row.layout != LAYOUTS["smollm2"]):
            continue
        checks = [
            ("decode at least as fast as fused", row.fused_over_ext, TARGETS["fused_over_ext"]),
            ("at least 6x faster than the reference", row.ref_over_ext, TARGETS["ref_over_ext"]),
            ("at least half the streaming bandwidth", row.stream_fraction, TARGETS["stream_fraction"]),
        ]
        where = f"k={row.k} M={row.M} ctx={row.ctx}" + (f" B={row.batch}" if row.batch != 1 else "")
        for what, value, target in checks:
            if value is None:
                continue
            verdict = "met" if value >= target else "NOT met"
            print(f"target ({row.dtype}, {where}): {what}: {value:.2f} vs {target} -> {verdict}")


def row_where(row: Row) -> str:
    return f"{row.mode} {row.dtype} k={row.k} M={row.M} ctx={row.ctx} B={row.batch} Hq={row.heads}"


def worst_row(rows, value):
    """(the row with the lowest value, how many rows have one); (None, 0) when none has."""
    rows = [r for r in rows if value(r) is not None]
    return (min(rows, key=value), len(rows)) if rows else (None, 0)


def impl_ms(row: Row, impl: str):
    """One implementation's time on a row: "ext", "flash", or "best" (the faster of the two there)."""
    return {"ext": row.ext_ms, "flash": row.flash_ms}.get(row.best if impl == "best" else impl)


def impl_copy_fraction(row: Row, impl: str):
    """That implementation's K/V read bandwidth / the device copy's (decode rows on CUDA)."""
    name = row.best if impl == "best" else impl
    return {"ext": row.copy_fraction, "flash": row.flash_copy_fraction}.get(name)


def impl_over(base_ms, row: Row, impl: str):
    """base_ms / that implementation's time on the row (> 1: it is faster than the base)."""
    ms = impl_ms(row, impl)
    return base_ms / ms if base_ms and ms else None


def _print_layout_targets(rows, on_cuda: bool, sdpa_on: bool) -> None:
    """The GPU issue's targets: K/V read bandwidth / copy at the 8B layout with ctx >= 8k; sdpa/X and prefill's
    fused/X over every row measured (the worst row named), and again over the 8B layout's rows with ctx >= 8k.
    X is the extension, then flash-attention 4 and the faster of the two per shape where flash ran."""
    impls = ["ext"] + (["flash", "best"] if any(r.flash_ms for r in rows) else [])
    for impl in impls:
        _print_impl_targets(rows, on_cuda, sdpa_on, impl)


def _print_impl_targets(rows, on_cuda: bool, sdpa_on: bool, impl: str) -> None:
    hq, hkv, d = COPY_TARGET_LAYOUT
    scope = f"Hq={hq} Hkv={hkv} D={d}, ctx >= {COPY_TARGET_MIN_CTX}"
    big = [r for r in rows if r.layout == COPY_TARGET_LAYOUT and r.ctx >= COPY_TARGET_MIN_CTX]
    decode = [r for r in rows if r.mode == "decode"]
    prefill = [r for r in rows if r.mode == "prefill"]

    def verdict(value, target):
        return "met" if value >= target else "NOT met"

    if on_cuda and decode:
        worst, n = worst_row([r for r in big if r.mode == "decode"], lambda r: impl_copy_fraction(r, impl))
        target = TARGETS["copy_fraction"]
        if worst is None:
            print(f"target (decode, {scope}): {impl} >= {target:.0%} of copy: no such rows with {impl} measured")
        else:
            value = impl_copy_fraction(worst, impl)
            print(f"target (decode, {scope}): {impl} >= {target:.0%} of copy: {value:.0%} at worst over {n} "
                  f"rows ({row_where(worst)}) -> {verdict(value, target)}")
    checks = []
    if sdpa_on:
        checks.append(("decode", f"{impl} at >= {TARGETS['sdpa_over_ext']}x sdpa's speed", f"sdpa/{impl}", decode,
                       lambda r: impl_over(r.sdpa_ms, r, impl), TARGETS["sdpa_over_ext"]))
    checks.append(("prefill", f"{impl} never slower than fused", f"fused/{impl}", prefill,
                   lambda r: impl_over(r.fused_ms, r, impl), TARGETS["prefill_fused_over_ext"]))
    for mode, what, ratio, candidates, value, target in checks:
        if not candidates:
            continue
        worst, n = worst_row(candidates, value)
        if worst is None:
            notes = {r.sdpa_note for r in candidates if r.sdpa_note} if ratio.startswith("sdpa/") else set()
            print(f"target ({mode}): {what}: not measured" + (f" ({'; '.join(sorted(notes))})" if notes else ""))
            continue
        line = (f"target ({mode}): {what}: worst {ratio} {value(worst):.2f} over {n} rows ({row_where(worst)}) -> "
                f"{verdict(value(worst), target)}")
        big_worst, big_n = worst_row([r for r in candidates if r in big], value)
        if big_worst is not None and big_n < n:
            line += (f"; at {scope}: worst {value(big_worst):.2f} over {big_n} rows -> "
                     f"{verdict(value(big_worst), target)}")
        print(line)


def main(argv=None) -> int:
    """`python -m ewe.bench.attention ...`: the same bench with only torch needed (e.g. on a GPU machine where
    the CLI's other dependencies are not installed)."""
    parser = argparse.ArgumentParser(prog="python -m ewe.bench.attention", description=__doc__.split("\n\n")[0])
    add_bench_arguments(parser)
    run_attention_bench(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
