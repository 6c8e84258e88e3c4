"""Retrieval benchmark on the embedded Wikipedia datastore.

Build throughput (from the default datastore's build, timed now or recorded in its
manifest), query-embedding time, and for each FAISS index (exact, HNSW, IVF, ...)
its build time, median search latency (single queries and batched, query embedding
excluded) and recall@k against exact search. `ewe bench retrieval` runs it;
`add_bench_arguments` declares its options.

Equal work: the exact index (Flat) is always searched too, on the same query vectors for
the same k, interleaved with every other index (query by query for single queries, repeat
by repeat for batches, the order alternating), and each approximate index's speed is given
as a ratio to exact search timed in that same run: the median over queries (or batch
repeats) of exact time / index time. Recall@k is against the same exact results.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from ..argtypes import positive_int

DEFAULT_FACTORIES = ["Flat", "HNSW32", "IVF64,Flat", "IVF64,PQ16"]


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--factory", action="append", dest="factories",
                   help=f"FAISS index to compare with exact search, which always runs too (repeatable; default "
                        f"{' '.join(DEFAULT_FACTORIES[1:])})")
    p.add_argument("--queries", type=positive_int, default=200, help="number of queries")
    p.add_argument("-k", type=positive_int, default=10, help="results per query (recall@k)")
    p.add_argument("--chunk-tokens", type=positive_int, default=None, help="datastore chunk size (default 128)")
    p.add_argument("--tokenizer", default="embedded", help='"embedded" (SmolLM2) or a local tokenizer folder')
    p.add_argument("--datastore", default=None, metavar="FOLDER",
                   help="bench this datastore folder (ewe index build) instead of the embedded Wikipedia one")
    p.add_argument("--batch-repeats", type=positive_int, default=5,
                   help="timed repeats of the batched search, interleaved across indexes (default 5)")
    p.add_argument("--faiss-threads", type=positive_int, help="faiss.omp_set_num_threads for the run (default: FAISS's own)")
    p.add_argument("--json", help="also write the results to this JSON file")


def run_retrieval_bench(args) -> int:
    from ..retrieval.chunking import DEFAULT_CHUNK_TOKENS
    from ..retrieval.cli import resolve_tokenizer
    from ..retrieval.embedded import default_datastore, default_datastore_path

    factories = list(dict.fromkeys(["Flat"] + (args.factories or DEFAULT_FACTORIES)))  # exact first, always
    if getattr(args, "faiss_threads", None):
        import faiss

        faiss.omp_set_num_threads(args.faiss_threads)
    if args.datastore:
        from ..retrieval import Datastore

        cached = True  # its build times are the ones recorded in its manifest
        start = time.perf_counter()
        ds = Datastore.load(args.datastore)
        chunk_tokens = ds.manifest["chunking"]["chunk_tokens"]
    else:
        chunk_tokens = args.chunk_tokens or DEFAULT_CHUNK_TOKENS
        tokenizer = resolve_tokenizer(args.tokenizer)
        cached = default_datastore_path(tokenizer, chunk_tokens=chunk_tokens).exists()
        start = time.perf_counter()
        ds = default_datastore(tokenizer, chunk_tokens=chunk_tokens, tokenizer_name=args.tokenizer)
    open_s = time.perf_counter() - start
    m = ds.manifest
    n = len(ds)
    bs = m.get("build_seconds", {})
    build_total = sum(bs.get(key, 0.0) for key in ("chunking", "embedding", "index"))

    titles = _sample_titles(ds, args.queries)
    queries = [f"Tell me about {t}." for t in titles]
    emb = ds.embedder
    emb.encode_queries(queries[:4])  # warm up
    single_embed = [_timed(lambda q=q: emb.encode_queries([q]))[0] for q in queries]
    batch_embed, vecs = _timed(lambda: emb.encode_queries(queries))

    with tempfile.TemporaryDirectory(prefix="ewe-bench-") as tmp:
        stores = {f: ds if f == "Flat" else ds.reindex(Path(tmp) / f"ix{i}", f) for i, f in enumerate(factories)}
        single, batched, results = _time_interleaved(stores, vecs, args.k, args.batch_repeats)
        exact_ids = [[h.id for h in r] for r in results["Flat"]]
        rows = []
        for factory, store in stores.items():
            index_s = store.manifest["build_seconds"]["index"]
            ids = [[h.id for h in r] for r in results[factory]]
            top1 = np.mean([bool(r) and r[0].title == t for r, t in zip(results[factory], titles)])
            rows.append({
                "factory": factory,
                "type": store.manifest["index"]["type"],
                "search_params": store.manifest["index"]["search_params"],
                "index_build_s": index_s,
                "index_passages_per_s": n / index_s if index_s else float("inf"),
                "search_single_ms_median": 1000 * statistics.median(single[factory]),
                "search_batched_ms_per_query": 1000 * statistics.median(batched[factory]) / len(vecs),
                # equal work: exact search on the same queries, timed alongside; > 1 is faster than exact
                "exact_over_index_single": statistics.median(
                    e / t for e, t in zip(single["Flat"], single[factory], strict=True)),
                "exact_over_index_batched": statistics.median(
                    e / t for e, t in zip(batched["Flat"], batched[factory], strict=True)),
                "recall_at_k": float(np.mean([len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(ids, exact_ids)])),
                "top1_title_accuracy": float(top1),
                "index_mb": (store.path / "index.faiss").stat().st_size / 2**20,
            })

    report = {
        "passages": n,
        "documents": m["counts"]["documents"],
        "chunk_tokens": chunk_tokens,
        "embedder": m["embedder"]["name"],
        "dimension": m["dimension"],
        "datastore_from_cache": cached,
        "open_s": open_s,
        "build_seconds": bs,
        "build_passages_per_s": n / build_total if build_total else None,
        "embed_passages_per_s": n / bs["embedding"] if bs.get("embedding") else None,
        "queries": len(queries),
        "k": args.k,
        "batch_repeats": args.batch_repeats,
        "query_embed_single_ms_median": 1000 * statistics.median(single_embed),
        "query_embed_batched_ms_per_query": 1000 * batch_embed / len(queries),
        "indexes": rows,
    }
    _print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _time_interleaved(stores: dict, vecs: np.ndarray, k: int, repeats: int):
    """Seconds of every store's search on the same query vectors, the stores interleaved (their
    order alternating): per single query, and per batched search of all the queries; and each
    store's results of the last batched search."""
    names = list(stores)
    for store in stores.values():
        store.search(vecs[:2], k=k)  # warm up
    single = {name: [] for name in names}
    for i, v in enumerate(vecs):
        for name in (names if i % 2 == 0 else names[::-1]):
            single[name].append(_timed(lambda s=stores[name]: s.search(v[None, :], k=k))[0])
    batched, results = {name: [] for name in names}, {}
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            seconds, results[name] = _timed(lambda s=stores[name]: s.search(vecs, k=k))
            batched[name].append(seconds)
    return single, batched, results


def _sample_titles(ds, count: int) -> list[str]:
    """Titles of `count` distinct documents, seeded, spread over the datastore."""
    rng = np.random.default_rng(0)
    titles: list[str] = []
    seen = set()
    for pid in rng.permutation(len(ds)).tolist():
        t = ds.passage(pid).title
        if t and t not in seen:
            seen.add(t)
            titles.append(t)
            if len(titles) == count:
                break
    return titles


def _print(r: dict) -> None:
    bs = r["build_seconds"]
    where = "recorded when the cached datastore was built" if r["datastore_from_cache"] else "built just now"
    print(f"datastore: {r['documents']} documents -> {r['passages']} passages of <= {r['chunk_tokens']} tokens, "
          f"{r['embedder']} (dim {r['dimension']}); opened in {r['open_s']:.1f} s")
    if bs:
        total = sum(bs.get(k, 0.0) for k in ("chunking", "embedding", "index"))
        print(f"build ({where}, {bs.get('cpus', '?')} CPUs): chunking {bs.get('chunking', 0):.1f} s, "
              f"embedding {bs.get('embedding', 0):.1f} s, index {bs.get('index', 0):.2f} s; total {total:.1f} s "
              f"= {r['build_passages_per_s']:.0f} passages/s (embedding alone {r['embed_passages_per_s']:.0f}/s)")
    print(f"query embedding: {r['query_embed_single_ms_median']:.1f} ms median single, "
          f"{r['query_embed_batched_ms_per_query']:.2f} ms/query batched ({r['queries']} queries)")
    head = ["index", "params", "build s", "size MB", "search 1 q ms", "x exact", "batched ms/q", "x exact",
            f"recall@{r['k']}", "top1 title"]
    lines = [[x["factory"], x["search_params"] or "-", f"{x['index_build_s']:.2f}", f"{x['index_mb']:.1f}",
              f"{x['search_single_ms_median']:.3f}", f"{x['exact_over_index_single']:.2f}",
              f"{x['search_batched_ms_per_query']:.3f}", f"{x['exact_over_index_batched']:.2f}",
              f"{x['recall_at_k']:.3f}", f"{x['top1_title_accuracy']:.3f}"]
             for x in r["indexes"]]
    print_columns(head, lines)
    print(f"x exact: exact (Flat) search time over the index's, on the same {r['queries']} query vectors and k, "
          f"timed interleaved in this run (median of per-query ratios; batched: of {r['batch_repeats']} repeats); "
          "> 1 is faster than exact. Search times exclude query embedding; recall is against the same exact results.")


def print_columns(head: list[str], lines: list[list[str]]) -> None:
    """A table as aligned columns under a ruled header (also ewe bench faiss-devices')."""
    widths = [max(len(h), *(len(l[i]) for l in lines)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("  ".join("-" * w for w in widths))
    for l in lines:
        print("  ".join(c.ljust(w) for c, w in zip(l, widths)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_retrieval", description=__doc__.splitlines()[0])
    add_bench_arguments(p)
    return run_retrieval_bench(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
