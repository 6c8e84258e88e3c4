"""Is a retrieval pause cheaper than a token? One query embedded and searched on the embedded
Wikipedia datastore, against one decoding step of the embedded model, interleaved in one
process; medians and their ratio.

    python benchmarks/pause_vs_token.py [--repeats 30]
"""
import argparse
import statistics
import time

import torch

from ewe import EWE
from ewe.engine import DecodingSession
from ewe.retrieval import default_datastore

ap = argparse.ArgumentParser()
ap.add_argument("--repeats", type=int, default=30)
args = ap.parse_args()
ewe = EWE.from_config()
ds = default_datastore(ewe.tokenizer, chunk_tokens=127, progress=True)
session = DecodingSession(ewe.model, None, 0)
logits = session.prefill(torch.tensor([ewe.prompt_ids("Tell me a bio of Albert Einstein.")]))
queries = [f"Tell me a bio of Albert Einstein. He was born in {1800 + i}." for i in range(args.repeats)]
ds.search(queries[0], k=4)  # warm up
embed, search, step = [], [], []
for q in queries:
    t0 = time.perf_counter()
    vec = ds.embedder.encode_queries([q])
    t1 = time.perf_counter()
    ds.search(vec, k=4, dedup_sources=True)
    t2 = time.perf_counter()
    logits = session.step(logits.argmax(-1))
    t3 = time.perf_counter()
    embed.append(t1 - t0), search.append(t2 - t1), step.append(t3 - t2)
m = {name: statistics.median(v) * 1000 for name, v in (("embed", embed), ("search", search), ("step", step))}
print(f"median ms over {args.repeats}: query embedding {m['embed']:.1f}, Flat search {m['search']:.1f}, "
      f"decode step {m['step']:.1f}; pause / token = {(m['embed'] + m['search']) / m['step']:.2f} "
      f"(torch threads {torch.get_num_threads()}, {len(ds)} passages)")
