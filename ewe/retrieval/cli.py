"""`ewe index ...`: build, search, inspect and grow a datastore from the command line.

`add_index_commands(subparsers)` registers the `index` command on an argparse
subparsers object; each subcommand sets `func` to its handler, which takes the parsed
args and returns an exit code. Also runnable alone: `python -m ewe.retrieval.cli index ...`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..argtypes import command_group, finite_float, positive_int

EMBEDDED = "embedded"


def add_index_commands(subparsers) -> None:
    """Register `index build|search|info|add` on `subparsers` (from add_subparsers)."""
    sub = command_group(subparsers, "index", "build, search, inspect or extend a retrieval datastore")

    b = sub.add_parser("build", help="chunk, embed and index a corpus into a datastore folder")
    b.add_argument("corpus", help='"embedded" (Wikipedia summaries), or a .jsonl / .tsv file (id, title, text)')
    b.add_argument("out", help="datastore folder (replaced atomically if it holds a datastore)")
    b.add_argument("--embedder", default=EMBEDDED, help='"embedded" (all-MiniLM-L6-v2) or a local model folder')
    b.add_argument("--pooling", choices=["mean", "cls", "max"], help="override the model's pooling (needed for plain HF folders)")
    b.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                   help="L2-normalize embeddings (default: as the model is configured; off with --pooling)")
    b.add_argument("--factory", default="Flat", help='faiss.index_factory string: "Flat" (exact), "HNSW32", "IVF64,Flat", ...')
    b.add_argument("--search-params", help='FAISS search parameters, e.g. "nprobe=16" (default: chosen from the factory)')
    b.add_argument("--chunk-tokens", type=positive_int, default=None, help="most tokens per passage, title included (default 127: a 128-token memory unit holds the passage and its start token)")
    b.add_argument("--tokenizer", default=EMBEDDED, help='tokenizer counting passage tokens: "embedded" (SmolLM2) or a local folder')
    b.add_argument("--on-error", choices=["skip", "raise"], default="skip", help="malformed corpus lines: skip and count, or stop")
    b.add_argument("--batch-size", type=positive_int, default=64, help="embedding batch size")
    b.set_defaults(func=cmd_index_build)

    s = sub.add_parser("search", help="search a datastore")
    s.add_argument("out", help="datastore folder")
    s.add_argument("query", nargs="+", help="one or more queries")
    s.add_argument("-k", type=positive_int, default=5, help="results per query")
    s.add_argument("--threshold", type=finite_float, help="keep only hits scoring at least this")
    s.add_argument("--dedup", action="store_true", help="at most one passage per source document")
    s.add_argument("--json", action="store_true", help="one JSON object per hit")
    s.add_argument("--no-verify", action="store_true", help="skip the checksum check")
    s.set_defaults(func=cmd_index_search)

    i = sub.add_parser("info", help="show a datastore's manifest")
    i.add_argument("out", help="datastore folder")
    i.add_argument("--json", action="store_true", help="the whole manifest as JSON")
    i.set_defaults(func=cmd_index_info)

    a = sub.add_parser("add", help="add a corpus to a datastore; existing passage ids stay")
    a.add_argument("out", help="datastore folder")
    a.add_argument("corpus", help='"embedded", or a .jsonl / .tsv file')
    a.add_argument("--tokenizer", help="default: the one recorded in the manifest")
    a.add_argument("--on-error", choices=["skip", "raise"], default="skip")
    a.set_defaults(func=cmd_index_add)


def resolve_tokenizer(name: str):
    """ "embedded" -> the generator's tokenizer via ewe.model_loading; else a local folder / cached hub id."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if name == EMBEDDED:
        from ..model_loading import load_tokenizer

        return load_tokenizer(EMBEDDED)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name, local_files_only=True)


def cmd_index_build(args) -> int:
    from .chunking import DEFAULT_CHUNK_TOKENS
    from .corpus import read_corpus
    from .datastore import Datastore
    from .embedder import Embedder

    start = time.perf_counter()
    corpus = read_corpus(args.corpus, on_error=args.on_error)
    if corpus.skipped:
        print(f"skipped {len(corpus.skipped)} malformed entries, e.g.:", file=sys.stderr)
        for issue in corpus.skipped[:5]:
            print(f"  {issue}", file=sys.stderr)
    tokenizer = resolve_tokenizer(args.tokenizer)
    embedder = Embedder(args.embedder, pooling=args.pooling, normalize=args.normalize, batch_size=args.batch_size)
    ds = Datastore.build(
        corpus,
        args.out,
        tokenizer=tokenizer,
        embedder=embedder,
        chunk_tokens=args.chunk_tokens or DEFAULT_CHUNK_TOKENS,
        factory=args.factory,
        search_params=args.search_params,
        tokenizer_name=args.tokenizer,
        on_error=args.on_error,
        progress=True,
    )
    m = ds.manifest
    print(f"built {ds.path}: {m['counts']['documents']} documents, {m['counts']['passages']} passages, "
          f"index {m['index']['factory']} ({m['index']['type']}, {m['index']['build_device']}) "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


def cmd_index_search(args) -> int:
    from .datastore import Datastore

    for n, q in enumerate(args.query, 1):
        if not q.strip():
            raise ValueError(f"query {n} is empty: give the text to search for")
    ds = Datastore.load(args.out, verify=not args.no_verify)
    results = ds.search(args.query, k=args.k, threshold=args.threshold, dedup_sources=args.dedup)
    for query, hits in zip(args.query, results):
        if args.json:
            for rank, h in enumerate(hits, 1):
                print(json.dumps({"query": query, "rank": rank, "id": h.id, "score": round(h.score, 6), "title": h.title,
                                  "source_id": h.source_id, "start": h.start, "end": h.end, "text": h.text},
                                 ensure_ascii=False))
            continue
        print(f"query: {query}")
        if not hits:
            print("  (no passage" + (f" scores at least {args.threshold})" if args.threshold is not None else ")"))
        for rank, h in enumerate(hits, 1):
            text = h.text if len(h.text) <= 240 else h.text[:237] + "..."
            print(f"  {rank}. [{h.score:.4f}] #{h.id} {h.source_id} [{h.start}:{h.end}]\n     {text}")
    return 0


def cmd_index_info(args) -> int:
    from .datastore import read_manifest

    m = read_manifest(args.out)
    if args.json:
        print(json.dumps(m, indent=2, ensure_ascii=False))
        return 0
    e, c, ix = m["embedder"], m["chunking"], m["index"]
    lines = [
        ("path", os.path.abspath(args.out)),
        ("passages", f"{m['counts']['passages']} from {m['counts']['documents']} documents"),
        ("corpus", ", ".join(str(x.get("source")) for x in m["corpus"])),
        ("embedder", f"{e['name']} ({e['path']}), pooling {e['pooling']}, "
                     f"{'normalized' if e['normalize'] else 'not normalized'}, dim {e['dimension']}"),
        ("chunking", f"{c['chunk_tokens']} tokens of {c['tokenizer']} (fingerprint {c['tokenizer_fingerprint']})"),
        ("index", f"{ix['factory']} -> {ix['type']}, inner product, search params {ix.get('search_params') or '-'}, "
                  f"built on {ix['build_device']}"),
        ("ewe", f"{m['ewe_version']}, created {m['created']}" + (f", updated {m['updated']}" if "updated" in m else "")),
    ]
    for name, rec in m["files"].items():
        lines.append((name, f"{rec['bytes']} bytes, sha256 {rec['sha256'][:16]}..."))
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k:<{width}}  {v}")
    return 0


def cmd_index_add(args) -> int:
    from .corpus import read_corpus
    from .datastore import Datastore

    ds = Datastore.load(args.out)
    corpus = read_corpus(args.corpus, on_error=args.on_error)
    if corpus.skipped:
        print(f"skipped {len(corpus.skipped)} malformed entries, e.g. {corpus.skipped[0]}", file=sys.stderr)
    tokenizer = resolve_tokenizer(args.tokenizer or ds.manifest["chunking"]["tokenizer"])
    ids = ds.add(corpus, tokenizer=tokenizer, progress=True)
    print(f"added {len(corpus)} documents as passages {ids[0]}..{ids[-1]}; {len(ds)} passages in {ds.path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ewe.retrieval.cli")
    add_index_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
