"""`ewe bench faiss-devices`: one FAISS index searched on CPU FAISS and on GPU FAISS, same query
vectors, same k: are the results equal, and how many queries/s does each side serve?

Why: the datastore moves its index to GPU FAISS when asked or when it can (`Datastore.load(device=
"auto"|"gpu")`, which calls `faiss.index_cpu_to_gpu(StandardGpuResources(), 0, index)` with the
default cloner options); this checks that the GPU copy returns what the CPU index returns, and
measures what it buys.

Vectors: `--vectors random:N` (seeded unit vectors of dimension 384, the embedder's; nothing else
needed, so it runs on a GPU machine without the embedder model), or `--vectors datastore[:FOLDER]`
(a datastore's stored embeddings; default the embedded Wikipedia one, queries from its embedder).
Random queries are stored vectors plus seeded noise, renormalized: each has a clear nearest
passage and a tail of near ties.

Equal results (`compare`): for an exact index (Flat) the ids must be equal rank by rank, except
where the two sides order near ties differently (GPU sums floats in another order): a rank whose
ids differ passes when the GPU's id scores, recomputed exactly (float64) from the stored vectors,
within TIE_TOL of the CPU's score at that rank; otherwise it is a mismatch, listed with its score
gap. TIE_TOL = 1e-5 on unit vectors (scores in [-1, 1]): float32 inner products of dimension 384
differ between summation orders by about 1e-7..1e-6. An IVF index is compared the same way with
the same nprobe; its ids may also differ where a query's nprobe-th and next list tie.

Speed: single queries (one vector per search) and batched (all queries in one search), the
devices interleaved (order alternating), medians; queries/s and the ratio GPU/CPU (> 1: GPU
faster). `gpu` is the cloner's default (cuVS where FAISS was built with it, as the datastore
gets); `gpu-classic` sets use_cuvs=False (FAISS's own GPU kernels).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..argtypes import positive_float, positive_int, seed
from .retrieval import print_columns

TIE_TOL = 1e-5
DIM = 384  # the embedded embedder's (all-MiniLM-L6-v2)
DEVICES = ("cpu", "gpu", "gpu-classic")
BLOCK = 65536  # rows per generation step: the same vectors whatever N


class GpuFaissUnavailable(RuntimeError):
    """GPU FAISS was asked for but cannot run here: never a CPU run labelled GPU."""


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vectors", default="random:100000", metavar="SOURCE",
                   help="random:N (seeded unit vectors, dim 384) or datastore[:FOLDER] (a datastore's embeddings; "
                        "default folder: the embedded Wikipedia one). Default random:100000")
    p.add_argument("--factory", action="append", dest="factories", metavar="FACTORY",
                   help="FAISS index, inner product (repeatable; default Flat), e.g. --factory Flat --factory IVF1024,Flat")
    p.add_argument("--nprobe", type=positive_int, default=32, help="IVF lists searched, the same on both devices")
    p.add_argument("--devices", nargs="+", choices=DEVICES, default=["cpu", "gpu"],
                   help="where to search; cpu always runs (the reference). gpu: the cloner's defaults, as the "
                        "datastore; gpu-classic: use_cuvs=False")
    p.add_argument("--queries", type=positive_int, default=200, help="query vectors (single-query timings: each once)")
    p.add_argument("-k", type=positive_int, default=10, help="results per query")
    p.add_argument("--batch-repeats", type=positive_int, default=5, help="timed repeats of the batched search")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random vectors and queries")
    p.add_argument("--tolerance", type=positive_float, default=TIE_TOL, help=f"tie tolerance on scores (default {TIE_TOL:g})")
    p.add_argument("--faiss-threads", type=positive_int, help="faiss.omp_set_num_threads (default: FAISS's own)")
    p.add_argument("--json", help="also write the report to this JSON file (atomically)")


# -- vectors --------------------------------------------------------------------------------------


def random_unit_vectors(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    """n seeded float32 unit vectors; the same n, dim and seed give the same array."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, BLOCK):
        block = rng.standard_normal((min(BLOCK, n - start), dim), dtype=np.float32)
        out[start:start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def queries_near(base: np.ndarray, count: int, seed: int, noise: float = 0.5) -> np.ndarray:
    """`count` unit vectors, each a seeded stored vector plus Gaussian noise of norm about `noise`."""
    rng = np.random.default_rng(seed + 1)
    rows = base[rng.choice(len(base), size=min(count, len(base)), replace=False)].astype(np.float32)
    q = rows + noise / np.sqrt(base.shape[1]) * rng.standard_normal(rows.shape, dtype=np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def load_vectors(source: str, count: int, seed: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """(stored vectors, query vectors, what they are) for `--vectors`."""
    kind, _, arg = source.partition(":")
    if kind == "random":
        try:
            n = int(arg.replace("_", ""))
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"--vectors random:N needs a positive N, got {source!r}")
        base = random_unit_vectors(n, DIM, seed)
        return base, queries_near(base, count, seed), {"source": "random", "n": n, "dim": DIM, "seed": seed}
    if kind == "datastore":
        from ..retrieval import Datastore

        if arg:
            ds = Datastore.load(arg, device="cpu")
        else:
            from ..retrieval.cli import resolve_tokenizer
            from ..retrieval.embedded import default_datastore

            ds = default_datastore(resolve_tokenizer("embedded"), tokenizer_name="embedded")
        rng = np.random.default_rng(seed)
        titles = list(dict.fromkeys(ds.passage(int(i)).title for i in rng.permutation(len(ds))[: 4 * count]))[:count]
        q = ds.embedder.encode_queries([f"Tell me about {t}." for t in titles])
        base = np.ascontiguousarray(ds.embeddings, dtype=np.float32)
        return base, np.ascontiguousarray(q, dtype=np.float32), {
            "source": "datastore", "path": str(ds.path), "n": len(base), "dim": base.shape[1],
            "embedder": ds.manifest["embedder"]["name"]}
    raise ValueError(f"--vectors must be random:N or datastore[:FOLDER], got {source!r}")


# -- GPU FAISS ------------------------------------------------------------------------------------


def require_gpu_faiss():
    """The faiss module, when it can search on a GPU; else GpuFaissUnavailable saying what is missing."""
    import faiss

    where = f"faiss {getattr(faiss, '__version__', '?')} ({Path(faiss.__file__).parent})"
    if not hasattr(faiss, "StandardGpuResources"):
        raise GpuFaissUnavailable(f"GPU FAISS is not available: {where} is built without GPU support (faiss-cpu); "
                                  "install a faiss GPU build (benchmarks/gpu_wheels.sh packs one for CUDA 13)")
    if faiss.get_num_gpus() < 1:
        raise GpuFaissUnavailable(f"GPU FAISS is not available: {where} has GPU support but sees no CUDA device "
                                  "(faiss.get_num_gpus() == 0)")
    return faiss


def to_gpu(index, device: str, resources):
    """The GPU copy: the cloner's default options (what the datastore does), or use_cuvs=False."""
    import faiss

    options = faiss.GpuClonerOptions()
    if device == "gpu-classic":
        if not hasattr(options, "use_cuvs"):
            raise GpuFaissUnavailable("gpu-classic needs a faiss whose GpuClonerOptions has use_cuvs")
        options.use_cuvs = False
        return faiss.index_cpu_to_gpu(resources, 0, index, options)
    return faiss.index_cpu_to_gpu(resources, 0, index)


# -- equal results --------------------------------------------------------------------------------


def compare(ids_ref, scores_ref, ids_got, scores_got, tol: float = TIE_TOL, base=None, queries=None,
            show: int = 10) -> dict:
    """Rank-by-rank agreement of two (nq, k) result sets (reference first).

    A rank whose ids differ counts as a tie reordered when the other side's id scores within
    `tol` of the reference's score at that rank: its exact score (float64, from `base` and
    `queries`) when given, else the score it reported. Otherwise it is a mismatch; the first
    `show` are listed with their score gap. `equal`: no mismatch.
    """
    ids_ref, ids_got = np.asarray(ids_ref), np.asarray(ids_got)
    scores_ref, scores_got = np.asarray(scores_ref, dtype=np.float64), np.asarray(scores_got, dtype=np.float64)
    if ids_ref.shape != ids_got.shape:
        raise ValueError(f"result shapes differ: {ids_ref.shape} vs {ids_got.shape}")
    differ = np.argwhere(ids_ref != ids_got)
    ties, mismatches = 0, []
    for q, r in differ.tolist():
        got = int(ids_got[q, r])
        if base is not None and got >= 0:
            exact = float(np.dot(base[got].astype(np.float64), queries[q].astype(np.float64)))
        else:
            exact = float(scores_got[q, r])
        gap = abs(exact - float(scores_ref[q, r]))
        if got >= 0 and gap <= tol:
            ties += 1
        else:
            mismatches.append({"query": q, "rank": r, "id_ref": int(ids_ref[q, r]), "id_got": got,
                               "score_ref": float(scores_ref[q, r]), "score_got": float(scores_got[q, r]),
                               "gap": gap})
    valid = (ids_ref >= 0) & (ids_got >= 0)
    return {
        "queries": int(ids_ref.shape[0]),
        "ranks": int(ids_ref.size),
        "ids_equal": int(ids_ref.size - len(differ)),
        "ties_reordered": ties,
        "mismatches": len(mismatches),
        "first_mismatches": mismatches[:show],
        "max_score_gap": float(np.abs(scores_ref - scores_got)[valid].max()) if valid.any() else 0.0,
        "tolerance": tol,
        "equal": not mismatches,
    }


# -- the run --------------------------------------------------------------------------------------


def run_faiss_devices_bench(args) -> int:
    try:
        report = bench(args)
    except (GpuFaissUnavailable, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print_report(report)
    if args.json:
        write_json_atomic(args.json, report)
    return 0 if all(row["vs_cpu"]["equal"] for row in report["rows"] if row["exact"] and "vs_cpu" in row) else 1


def bench(args) -> dict:
    import faiss

    devices = list(dict.fromkeys(["cpu", *args.devices]))
    resources = require_gpu_faiss().StandardGpuResources() if len(devices) > 1 else None  # fail before the slow part
    if args.faiss_threads:
        faiss.omp_set_num_threads(args.faiss_threads)
    t = time.perf_counter()
    base, queries, about = load_vectors(args.vectors, args.queries, args.seed)
    about["load_s"] = time.perf_counter() - t
    rows = []
    for factory in args.factories or ["Flat"]:
        t = time.perf_counter()
        cpu_index = faiss.index_factory(base.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
        if not cpu_index.is_trained:
            train = base[np.random.default_rng(args.seed).choice(len(base), min(len(base), 100_000), replace=False)]
            cpu_index.train(train)
        cpu_index.add(base)
        build_s = time.perf_counter() - t
        indexes = {"cpu": cpu_index}
        for d in devices[1:]:
            indexes[d] = to_gpu(cpu_index, d, resources)
        params = set_nprobe(indexes, args.nprobe)
        single, batched, results = time_interleaved(indexes, queries, args.k, args.batch_repeats)
        ref = results["cpu"]
        for d in devices:
            row = {"factory": factory, "device": d, "type": type(indexes[d]).__name__, "params": params,
                   "exact": "IVF" not in factory and "HNSW" not in factory and "PQ" not in factory,
                   "cpu_build_s": build_s,
                   "single_ms_median": 1000 * statistics.median(single[d]),
                   "single_qps": 1 / statistics.median(single[d]),
                   "batched_ms_median": 1000 * statistics.median(batched[d]),
                   "batched_qps": len(queries) / statistics.median(batched[d])}
            if d != "cpu":
                row["vs_cpu"] = compare(ref[1], ref[0], results[d][1], results[d][0], args.tolerance, base, queries)
                # medians of per-query (per-repeat) ratios, the two sides timed side by side
                row["gpu_over_cpu_single"] = statistics.median(c / g for c, g in zip(single["cpu"], single[d]))
                row["gpu_over_cpu_batched"] = statistics.median(c / g for c, g in zip(batched["cpu"], batched[d]))
            rows.append(row)
    return {"vectors": about, "queries": len(queries), "k": args.k, "batch_repeats": args.batch_repeats,
            "devices": devices, "faiss": faiss.__version__, "faiss_threads": faiss.omp_get_max_threads(),
            "tolerance": args.tolerance, "gpu": gpu_name(len(devices) > 1), "rows": rows}


def set_nprobe(indexes: dict, nprobe: int) -> str:
    """The same nprobe on every copy of an IVF index; '' for other indexes."""
    import faiss

    if "IVF" not in type(indexes["cpu"]).__name__:
        return ""
    for name, index in indexes.items():
        space = faiss.ParameterSpace() if name == "cpu" else faiss.GpuParameterSpace()
        space.set_index_parameters(index, f"nprobe={nprobe}")
    return f"nprobe={nprobe}"


def time_interleaved(indexes: dict, queries: np.ndarray, k: int, repeats: int):
    """Seconds per single-query search and per batched search, the devices' order alternating;
    and each device's (scores, ids) of its last batched search."""
    names = list(indexes)
    for index in indexes.values():
        index.search(queries[:2], k)  # warm up: first GPU calls allocate and load kernels
    single = {n: [] for n in names}
    for i in range(len(queries)):
        q = queries[i:i + 1]
        for n in (names if i % 2 == 0 else names[::-1]):
            t = time.perf_counter()
            indexes[n].search(q, k)
            single[n].append(time.perf_counter() - t)
    batched, results = {n: [] for n in names}, {}
    for r in range(repeats):
        for n in (names if r % 2 == 0 else names[::-1]):
            t = time.perf_counter()
            results[n] = indexes[n].search(queries, k)
            batched[n].append(time.perf_counter() - t)
    return single, batched, results


def gpu_name(used: bool) -> str | None:
    if not used:
        return None
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        return None


def write_json_atomic(path: str | os.PathLike, report: dict) -> None:
    """The whole file or none: written beside the target, then renamed over it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(report, indent=2) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def print_report(r: dict) -> None:
    v = r["vectors"]
    print(f"vectors: {v['source']} {v['n']} x {v['dim']}; {r['queries']} queries, k={r['k']}; faiss {r['faiss']}, "
          f"{r['faiss_threads']} CPU threads; GPU: {r['gpu'] or '-'}")
    head = ["index", "device", "params", "1 q ms", "1 q q/s", "x cpu", "batch q/s", "x cpu", "ids equal",
            "ties", "mismatch", "max gap"]
    lines = []
    for x in r["rows"]:
        c = x.get("vs_cpu")
        lines.append([x["factory"], x["device"], x["params"] or "-", f"{x['single_ms_median']:.3f}",
                      f"{x['single_qps']:.0f}", f"{x['gpu_over_cpu_single']:.2f}" if c else "-",
                      f"{x['batched_qps']:.0f}", f"{x['gpu_over_cpu_batched']:.2f}" if c else "-",
                      f"{c['ids_equal']}/{c['ranks']}" if c else "(ref)", str(c["ties_reordered"]) if c else "-",
                      str(c["mismatches"]) if c else "-", f"{c['max_score_gap']:.1e}" if c else "-"])
    print_columns(head, lines)
    for x in r["rows"]:
        for m in x.get("vs_cpu", {}).get("first_mismatches", []):
            print(f"mismatch {x['factory']} {x['device']}: query {m['query']} rank {m['rank']}: cpu id {m['id_ref']} "
                  f"({m['score_ref']:.6f}) vs {m['id_got']} ({m['score_got']:.6f}), gap {m['gap']:.2e}")
    print(f"x cpu: GPU queries/s over CPU's (median of per-query, per-repeat ratios, timed interleaved); > 1 is "
          f"faster. ties: ranks whose ids differ but whose scores agree within {r['tolerance']:g} (recomputed "
          "exactly); mismatch: any other differing rank.")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="faiss_devices", description=__doc__.splitlines()[0])
    add_bench_arguments(p)
    return run_faiss_devices_bench(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
