"""Candidate rewrites decode as rows of one batch; a row that has finished its sentence leaves
the batch (engine/loop.py). What that saves: the same rows (the embedded model, 4 memory units
of M = 128, a 400-token prompt with passages as text, rows sampled as ewe-rewrite samples
them), each stopping at a fixed length, decoded with stopped rows dropped against the
reference that keeps them in the batch fed a stop token; interleaved in one process, medians,
the same tokens checked first.

    python benchmarks/candidate_rows.py [--repeats 3] [--lengths 24,28,31,45 22,30,41,64]
"""
import argparse
import statistics
import time

import torch

from ewe import EWE
from ewe.engine import DecodingSession, Hook, Sampler, Stop, TokenLoop

ap = argparse.ArgumentParser()
ap.add_argument("--repeats", type=int, default=3)
ap.add_argument("--lengths", nargs="+", default=["24,28,31,45", "22,30,41,64"],
                help="one comma-separated set of row lengths per round (default: two rounds seen in ewe-rewrite runs)")
args = ap.parse_args()
rounds = [tuple(int(x) for x in s.split(",")) for s in args.lengths]

ewe = EWE.from_config("configs/ewe-rewrite.yaml")
rt = ewe.runtime
memory = rt.new_memory()
hits = rt.retrieve(["Marie Curie physicist chemist"], 5)[0]
memory.add([h.text for h in hits[:4]], pool="retrieval")
ids = rt.prompt_ids(rt.prompt_with_passages("Tell me a bio of Marie Curie.", [h.text for h in hits[:4]]), None)
offset = rt.config.memory.unit_tokens
source = DecodingSession(rt.model, memory.state(1), offset, rt.config.model.attention_impl)
source.prefill(torch.tensor([ids]))


class StopAt(Hook):
    def __init__(self, lengths):
        self.lengths = lengths

    def on_token(self, loop, row, token, completed):
        return Stop("sentence") if len(loop.records[row].tokens) >= self.lengths[row] else None


def decode(lengths, compact):
    branch, logits = source.branch(len(ids), len(lengths), memory.state(len(lengths)))
    loop = TokenLoop(branch, Sampler(0.8, 1.0, seed=2, greedy_rows=1), set(), max(lengths), hooks=[StopAt(lengths)],
                     compact=compact)
    t0 = time.perf_counter()
    records = loop.run_from(logits, len(ids))
    return time.perf_counter() - t0, [r.token_ids for r in records]


print(f"prompt {len(ids)} tokens, {len(memory)} memory units of M = {offset}, torch threads {torch.get_num_threads()}")
print(f"{'row lengths':<16}{'kept rows s':>12}{'drop rows s':>12}{'ratio':>7}  same tokens")
for lengths in rounds:
    times = {True: [], False: []}
    same = True
    for rep in range(args.repeats):
        outs = {}
        for compact in ((True, False) if rep % 2 == 0 else (False, True)):
            seconds, outs[compact] = decode(lengths, compact)
            times[compact].append(seconds)
        same &= outs[True] == outs[False]
    keep, drop = statistics.median(times[False]), statistics.median(times[True])
    print(f"{','.join(map(str, lengths)):<16}{keep:>12.2f}{drop:>12.2f}{keep / drop:>7.2f}  {'yes' if same else 'NO'}")
