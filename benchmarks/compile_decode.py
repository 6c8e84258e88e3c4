"""torch.compile on the CPU for one decode step of the embedded model: the fixed-shape step (what
a CUDA graph replays on a GPU, engine/cuda_graph.py) compiled by inductor, against the same step
eager, the static cache's exact-length step and the dynamic cache's, interleaved in one process.

Each session decodes the same greedy tokens from the same prompt (checked), one step at a time;
the figure is the median milliseconds per step, and the ratio to the dynamic cache's.

    python benchmarks/compile_decode.py [--steps 48] [--units 4] [--dtype float32|bfloat16]
"""
import argparse
import statistics
import time

import torch

from ewe import EWE
from ewe.bench.decode import BENCH_PROMPT, BENCH_TITLES
from ewe.data.wiki import passage
from ewe.engine import DecodingSession

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=48)
ap.add_argument("--units", type=int, default=4)
ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
args = ap.parse_args()
ewe = EWE.from_config(**{"model.dtype": args.dtype, "memory.retrieval_units": max(args.units, 1)})
rt = ewe.runtime
memory = rt.new_memory()
if args.units:
    memory.add([passage(t) for t in BENCH_TITLES[: args.units]], pool="retrieval")
state = memory.state() if args.units else None
offset = ewe.config.memory.context_offset(bool(args.units))
ids = torch.tensor([ewe.prompt_ids(BENCH_PROMPT)])
reserve = args.steps + 8
sessions = {
    "dynamic": DecodingSession(ewe.model, state, offset),
    "static": DecodingSession(ewe.model, state, offset, kv_cache="static", reserve=reserve),
    "fixed-shape": DecodingSession(ewe.model, state, offset, kv_cache="static", reserve=reserve, graph="eager"),
    "fixed-shape compiled": DecodingSession(ewe.model, state, offset, kv_cache="static", reserve=reserve, graph="eager",
                                            compile=True),  # decoding.compile: inductor's C++ code for this CPU
}
logits = {name: s.prefill(ids) for name, s in sessions.items()}
t0 = time.perf_counter()
logits["fixed-shape compiled"] = sessions["fixed-shape compiled"].step(logits["fixed-shape compiled"].argmax(-1))
compile_s = time.perf_counter() - t0
for name in sessions:  # every other session one step too, so all stay on the same token
    if name != "fixed-shape compiled":
        logits[name] = sessions[name].step(logits[name].argmax(-1))
times = {name: [] for name in sessions}
for _ in range(args.steps):
    for name, s in sessions.items():
        nxt = logits[name].argmax(-1)
        start = time.perf_counter()
        logits[name] = s.step(nxt)
        times[name].append(time.perf_counter() - start)
tokens = {name: s.tokens[0, ids.shape[1]:].tolist() for name, s in sessions.items()}
base = statistics.median(times["dynamic"])
print(f"decode step, embedded model, {args.dtype}, k={args.units} units, prompt {ids.shape[1]} tokens, "
      f"{args.steps} steps interleaved, {torch.get_num_threads()} threads; compile took {compile_s:.1f} s")
for name, ts in times.items():
    same = "yes" if tokens[name] == tokens["dynamic"] else "NO"
    print(f"{name:<22} {statistics.median(ts) * 1000:8.2f} ms/step  {base / statistics.median(ts):5.2f}x dynamic's "
          f"speed  same tokens as dynamic: {same}")
