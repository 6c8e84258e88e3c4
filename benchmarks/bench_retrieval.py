"""Retrieval benchmark on the embedded Wikipedia: build throughput, search latency, recall.

    python benchmarks/bench_retrieval.py [--factory HNSW32 ...] [--queries 200] [-k 10] [--json out.json]

Same as `ewe bench retrieval`; the code is ewe.bench.retrieval.
"""
import sys

from ewe.bench.retrieval import main

if __name__ == "__main__":
    sys.exit(main())
