"""What one decode step costs by the number of rows it feeds: how much a batch can share here.

The embedded model (configs/ewe.yaml) at a 400-token context, each row reading 4 memory units
(M = 128) or none; steps of 1..16 rows timed interleaved in one process, medians, and each
printed as ms per step, ms per row and the step's cost against one row's. A batch of B rows
shares at most B / (that ratio); `ewe bench batch` reports what the rows per step of real
answers make of it.

    python benchmarks/step_cost.py [--rows 1 2 4 8 16] [--repeats 7] [--context 400]
"""
import argparse
import statistics
import time

import torch

from ewe import EWE
from ewe.data import wiki
from ewe.data.prompt_sets import prompt_set

ap = argparse.ArgumentParser()
ap.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8, 16])
ap.add_argument("--repeats", type=int, default=7)
ap.add_argument("--context", type=int, default=400)
args = ap.parse_args()

ewe = EWE.from_config("configs/ewe.yaml")
rt = ewe.runtime
memory = rt.new_memory()
memory.add([wiki.passage(r["topic"]) for r in prompt_set("bio", 4, suffix=None)])

print(f"decode step cost, embedded model ({next(rt.model.parameters()).dtype}), {args.context} context tokens, "
      f"threads {torch.get_num_threads()}, median of {args.repeats}")
print(f"{'memory':<8}{'rows':>5}{'ms/step':>10}{'ms/row':>9}{'vs 1 row':>10}")
for units in (4, 0):
    sessions = {}
    for rows in args.rows:
        state = memory.state(rows) if units else None
        session = rt.session(state, rt.config.memory.context_offset(bool(units)))
        session.prefill(torch.randint(100, 1000, (rows, args.context)))
        sessions[rows] = session
    times = {rows: [] for rows in args.rows}
    for _ in range(args.repeats):
        for rows, session in sessions.items():
            session.crop(args.context)
            ids = torch.randint(100, 1000, (rows,))
            t0 = time.perf_counter()
            session.step(ids)
            times[rows].append(time.perf_counter() - t0)
    base = statistics.median(times[args.rows[0]]) / args.rows[0]
    for rows in args.rows:
        ms = 1000 * statistics.median(times[rows])
        print(f"{units:<8}{rows:>5}{ms:>10.1f}{ms / rows:>9.1f}{ms / 1000 / base:>9.2f}x")
