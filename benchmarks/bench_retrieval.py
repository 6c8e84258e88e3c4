"""Retrieval benchmark on the embedded Wikipedia: build throughput, search latency, recall,
and each index's speed as a ratio to exact (Flat) search on the same queries in the same run.

    python benchmarks/bench_retrieval.py [--factory HNSW32 ...] [--queries 200] [-k 10] [--datastore DIR] [--json out.json]

Same as `ewe bench retrieval` (no second implementation); the code is ewe.bench.retrieval.
"""
import sys

from ewe.bench.retrieval import main

if __name__ == "__main__":
    sys.exit(main())
