"""`ewe bench attention`: the memory-attention implementations timed side by side, in one process.

Times one attention-layer call (eq. 1 over k units of M tokens plus the context) for the
compiled extension, the fused PyTorch path and the literal k+1-pass reference, at
SmolLM2-135M's shapes (9 query heads, 3 KV heads, head dim 64, batch 1), in decode (Q = 1)
and prefill (Q = --prefill-len new tokens at the end of the context). Times are per layer
call, the median over repeats; multiply by 30 for SmolLM2's whole stack.

Decode cycles through --layers distinct sets of tensors (30 by default, as many as the
model has), so keys and values stream from memory as they do in a model rather than from
cache. On CPU the same run times a plain streaming read (`x.sum()` over 256 MB) between the
decode calls and reports the extension's decode bandwidth (bytes of K and V read per call /
time) as a fraction of it, the median of the per-repeat fractions (each repeat's calls against
the stream read right after them); each timed loop there starts from caches holding clean
lines only (see `_time_interleaved`). Implementations are interleaved within each repeat, so
a busy machine slows them alike; the load average is printed because 2-thread timings on an
oversubscribed machine are mostly scheduler noise (try --threads 1 there).
"""
from __future__ import annotations

import json
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass

import torch

from ..argtypes import positive_int, positive_ints
from ..ops import extension
from ..ops.fused import memory_attention_fused
from ..ops.layer_memory import LayerMemory
from ..ops.reference import memory_attention_reference

# SmolLM2-135M-Instruct's attention
HEADS, KV_HEADS, HEAD_DIM = 9, 3, 64
GRID = [(k, 128, ctx) for ctx in (512, 2048) for k in (1, 4, 8, 16)]
DESIGN_CASE = (8, 256, 1024)  # docs/DESIGN.md section 6: k = 8, M = 256, context 1024
TARGETS = {"fused_over_ext": 1.0, "ref_over_ext": 6.0, "stream_fraction": 0.5}
# Largest |difference| from the literal reference (the fused path when it is skipped) for which two
# implementations count as computing the same output, so that timing them side by side compares equal work.
SAME_OUTPUT_ATOL = {"float32": 1e-3, "bfloat16": 6e-2}


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

    @property
    def fused_over_ext(self):
        return self.fused_ms / self.ext_ms if self.ext_ms else None

    @property
    def ref_over_ext(self):
        return self.ref_ms / self.ext_ms if self.ext_ms and self.ref_ms else None


def add_bench_arguments(parser) -> None:
    """Options of `ewe bench attention`."""
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a few minutes on 2 cores)")
    parser.add_argument("--repeats", type=positive_int, default=None, help="timed repeats per case (default 15, quick 5)")
    parser.add_argument("--dtype", nargs="+", choices=["float32", "bfloat16"], default=["float32", "bfloat16"])
    parser.add_argument("--modes", nargs="+", choices=["decode", "prefill"], default=["decode", "prefill"])
    parser.add_argument("--prefill-len", type=positive_int, default=128, help="new tokens per prefill call")
    parser.add_argument("--layers", type=positive_int, default=30, help="distinct layers' tensors cycled through in decode")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--no-reference", action="store_true", help="skip the literal k+1-pass reference")
    parser.add_argument("--case", dest="cases", action="append", type=positive_ints(3, "K,M,CTX"), default=None,
                        help="a case to time instead of the default grid (repeatable), e.g. --case 8,256,1024")
    parser.add_argument("--stream-mb", type=positive_int, default=256,
                        help="size of the streaming-read buffer (larger than the caches; default 256)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None, help="also write the rows to this file")


def _make_layers(k, M, ctx, q_len, dtype, device, count, seed=0):
    gen = torch.Generator().manual_seed(seed)
    layers = []
    for _ in range(count):
        rnd = lambda *shape: torch.randn(*shape, generator=gen).to(device, dtype)
        memory = LayerMemory(
            rnd(1, KV_HEADS, k * M, HEAD_DIM),
            rnd(1, KV_HEADS, k * M, HEAD_DIM),
            None,
            [[(i * M, (i + 1) * M) for i in range(k)]],
            LayerMemory.context_weight([k], device),
        )
        layers.append((rnd(1, HEADS, q_len, HEAD_DIM), rnd(1, KV_HEADS, ctx, HEAD_DIM), rnd(1, KV_HEADS, ctx, HEAD_DIM), memory))
    return layers


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _time_interleaved(fns: dict, layers, repeats, device, stream_buffer=None) -> dict[str, list[float]]:
    """Seconds per layer call of each function, one sample per repeat, the functions
    interleaved within each repeat (`statistics.median` of a list gives the usual figure).

    With a stream_buffer, each repeat also times one `stream_buffer.sum()` (key "stream"), and
    every timed loop starts after an untimed read of its first 64 MB: the caches then hold
    clean lines only, as in a model's decode step (whose other ops read weights), instead of
    the previous implementation's written temporaries, whose write-back would be charged to
    whichever implementation runs next.
    """
    scale = HEAD_DIM**-0.5
    samples = {name: [] for name in list(fns) + (["stream"] if stream_buffer is not None else [])}
    clean = stream_buffer[: 64 * 2**20 // stream_buffer.element_size()] if stream_buffer is not None else None
    for rep in range(repeats + 1):  # the first round warms up
        for name, fn in fns.items():
            if clean is not None:
                clean.sum()
            _sync(device)
            start = time.perf_counter()
            for q, key, value, memory in layers:
                fn(q, key, value, memory, None, scale)
            _sync(device)
            if rep:
                samples[name].append((time.perf_counter() - start) / len(layers))
        if stream_buffer is not None:
            clean.sum()
            start = time.perf_counter()
            stream_buffer.sum()
            if rep:
                samples["stream"].append(time.perf_counter() - start)
    return samples


def same_outputs(fns: dict, layer, dtype_name: str, reference=None) -> float:
    """Run every implementation once on the same inputs and return the largest |difference| from the
    reference's output (`reference`, else the fused path's); raise if any is beyond SAME_OUTPUT_ATOL,
    since timing implementations that compute different outputs would not compare equal work."""
    q, key, value, memory = layer
    scale = HEAD_DIM**-0.5
    expected = (reference or fns["fused"])(q, key, value, memory, None, scale).float()
    worst = 0.0
    for name, fn in fns.items():
        diff = (fn(q, key, value, memory, None, scale).float() - expected).abs().max().item()
        if not diff <= SAME_OUTPUT_ATOL[dtype_name]:  # also catches NaN
            raise RuntimeError(f"{name} computes another output than the reference ({dtype_name}: max |diff| "
                               f"{diff:.3g} > {SAME_OUTPUT_ATOL[dtype_name]}): timing them side by side would not "
                               "compare equal work")
        worst = max(worst, diff)
    return worst


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


def run_attention_bench(args) -> list[Row]:
    """Run the benchmark described in the module docstring; print a table and return its rows."""
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (5 if args.quick else 15)
    device = args.device
    have_ext = extension.available()
    print(f"memory attention, one layer call, SmolLM2-135M shapes (Hq={HEADS}, Hkv={KV_HEADS}, D={HEAD_DIM}, B=1); "
          f"median of {repeats}; {torch.get_num_threads()} threads; device {device}")
    if not have_ext:
        print(f"extension not available ({extension.load_error()}): timing fused and reference only; `make ext` builds it")
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    on_cpu = torch.device(device).type == "cpu"
    stream = stream_bandwidth(repeats=max(5, repeats), megabytes=args.stream_mb) if on_cpu else None
    if stream:
        print(f"streaming read (x.sum() over {args.stream_mb} MB): {stream:.1f} GB/s at the start; decode rows time "
              "it again between their calls ('stream GB/s') and compare with that")
    print("fused/ext and ref/ext: the same layer call (same q, K, V and memory; every output checked equal to the "
          "reference's, 'max|d|') timed interleaved; ext/stream: the extension's K/V read bandwidth as a fraction "
          "of a plain streaming read's, not a speed-up")
    buffer = stream_buffer(args.stream_mb) if on_cpu and "decode" in args.modes else None

    rows = []
    cases = [tuple(c) for c in args.cases] if args.cases else GRID + [DESIGN_CASE]
    for mode in args.modes:
        q_len = 1 if mode == "decode" else args.prefill_len
        for dtype_name in args.dtype:
            dtype = getattr(torch, dtype_name)
            for k, M, ctx in cases:
                count = max(1, args.layers) if mode == "decode" else 1
                layers = _make_layers(k, M, max(ctx, q_len), q_len, dtype, device, count)
                fns = {"fused": memory_attention_fused}
                if have_ext and extension.supports(*layers[0][:3], layers[0][3]):
                    fns["ext"] = extension.memory_attention_extension
                if not args.no_reference:
                    fns["ref"] = memory_attention_reference
                max_diff = same_outputs(fns, layers[0], dtype_name, memory_attention_reference
                                        if not args.no_reference else None)
                samples = _time_interleaved(fns, layers, repeats, device, buffer if mode == "decode" else None)
                times = {name: statistics.median(ts) for name, ts in samples.items()}
                row = Row(mode, dtype_name, k, M, ctx, times.get("ext", None) and times["ext"] * 1e3,
                          times["fused"] * 1e3, times.get("ref", None) and times["ref"] * 1e3, max_diff=max_diff)
                if "stream" in times:
                    row.stream_gbps = buffer.numel() * 4 / times["stream"] / 1e9
                if mode == "decode" and row.ext_ms:
                    kv_bytes = 2 * KV_HEADS * (k * M + ctx) * HEAD_DIM * dtype.itemsize
                    row.ext_gbps = kv_bytes / (row.ext_ms / 1e3) / 1e9
                    if "stream" in samples:
                        row.stream_fraction = paired_fraction(kv_bytes, samples["ext"], buffer.numel() * 4,
                                                              samples["stream"])
                rows.append(row)
                _print_row(row, header=len(rows) == 1)
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    _print_targets(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"stream_gbps": stream, "threads": torch.get_num_threads(),
                       "rows": [asdict(r) for r in rows]}, f, indent=1)
    return rows


def _fmt(x, spec=".3f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _print_row(row: Row, header: bool) -> None:
    if header:
        print(f"{'mode':8} {'dtype':9} {'k':>3} {'M':>4} {'ctx':>5} | {'ext ms':>8} {'fused ms':>9} {'ref ms':>9} | "
              f"{'fused/ext':>9} {'ref/ext':>8} {'max|d|':>8} | {'ext GB/s':>8} {'stream GB/s':>11} {'ext/stream':>10}")
    print(f"{row.mode:8} {row.dtype:9} {row.k:3d} {row.M:4d} {row.ctx:5d} | {_fmt(row.ext_ms):>8} "
          f"{_fmt(row.fused_ms):>9} {_fmt(row.ref_ms):>9} | {_fmt(row.fused_over_ext, '.2f'):>9} "
          f"{_fmt(row.ref_over_ext, '.2f'):>8} {_fmt(row.max_diff, '.1e'):>8} | {_fmt(row.ext_gbps, '.1f'):>8} {_fmt(row.stream_gbps, '.1f'):>11} "
          f"{_fmt(row.stream_fraction, '.0%'):>10}",
          flush=True)


def _print_targets(rows) -> None:
    """The decode targets, checked at the docs/DESIGN.md case (section 6)."""
    for row in rows:
        if row.mode != "decode" or (row.k, row.M, row.ctx) != DESIGN_CASE or row.ext_ms is None:
            continue
        checks = [
            ("decode at least as fast as fused", row.fused_over_ext, TARGETS["fused_over_ext"]),
            ("at least 6x faster than the reference", row.ref_over_ext, TARGETS["ref_over_ext"]),
            ("at least half the streaming bandwidth", row.stream_fraction, TARGETS["stream_fraction"]),
        ]
        for what, value, target in checks:
            if value is None:
                continue
            verdict = "met" if value >= target else "NOT met"
            print(f"target ({row.dtype}, k={row.k} M={row.M} ctx={row.ctx}): {what}: {value:.2f} vs {target} -> {verdict}")
