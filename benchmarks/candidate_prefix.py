"""What the candidates' shared prompt beginning saves: EWE's loop with passages as text (configs/ewe-text.yaml, whose
candidate rewrites re-read the prompt with the checker's passages in it) with that beginning
(the request and the passages the answer's prompt already holds) taken from the answer's cache,
against every round reading its whole prompt again, the same prompts in one process, interleaved.

Reported: median seconds per prompt each way and their ratio, the candidate rounds' own seconds
(`rewrite_s`), the tokens the model read for candidate prompts, and how many answers are the same
token for token (the copied beginning equals what reading it computes, up to float rounding, and
the candidates are sampled, so a rare answer may differ; the ratio then compares different work).

    python benchmarks/candidate_prefix.py [--config configs/ewe-text.yaml] [--prompts 12] [--tokens 128]
        [--passages given|retrieve] [--out results.json]
"""
import argparse
import json
import statistics
import time

import torch

from ewe import EWE
from ewe.data import wiki
from ewe.data.prompt_sets import prompt_set
from ewe.engine.session import DecodingSession


class CandidateReads:
    """Counts the tokens the model reads for candidate prompts (`DecodingSession.read`); with
    `reuse` False every such read starts from nothing, as before the beginning was shared."""

    def __init__(self):
        self.reuse, self.tokens, self.inside = True, 0, False
        read, forward = DecodingSession.read, DecodingSession._forward

        def counted_read(session, ids, memory_state=None, reuse=False):
            self.inside = True
            try:
                return read(session, ids, memory_state, reuse and self.reuse)
            finally:
                self.inside = False

        def counted_forward(session, ids, positions):
            if self.inside:
                self.tokens += ids.numel()
            return forward(session, ids, positions)

        DecodingSession.read, DecodingSession._forward = counted_read, counted_forward


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/ewe-text.yaml")
    ap.add_argument("--prompts", type=int, default=12)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--passages", choices=["given", "retrieve"], default="given",
                    help="given: each prompt's own Wikipedia summary; retrieve: the configuration's retrieval")
    ap.add_argument("--out")
    args = ap.parse_args()
    ewe = EWE.from_config(args.config)
    rows = prompt_set("bio", args.prompts, suffix=None)
    reads = CandidateReads()
    ways = {"shared beginning": True, "whole prompt": False}
    seen = {w: {"seconds": [], "rewrite_s": [], "read_tokens": 0, "rounds": 0, "answers": []} for w in ways}
    ewe.generate(rows[0]["prompt"], max_new_tokens=4, temperature=0.0)  # warm up (the datastore, the judge)
    for i, row in enumerate(rows):
        given = [wiki.passage(row["topic"])] if args.passages == "given" else None
        for way in (list(ways) if i % 2 == 0 else list(reversed(list(ways)))):
            reads.reuse, reads.tokens = ways[way], 0
            t0 = time.perf_counter()
            out = ewe.generate(row["prompt"], passages=given, max_new_tokens=args.tokens, temperature=0.0)
            s = seen[way]
            s["seconds"].append(time.perf_counter() - t0)
            s["rewrite_s"].append(out.stats["rewrite_s"])
            s["read_tokens"] += reads.tokens
            s["rounds"] += sum(1 for e in out.trace if e["type"] == "candidates")
            s["answers"].append(out.token_ids)
    same = sum(a == b for a, b in zip(seen["shared beginning"]["answers"], seen["whole prompt"]["answers"]))
    med = {w: statistics.median(seen[w]["seconds"]) for w in ways}
    print(f"candidate prompts, {len(rows)} bio prompts, {args.passages} passages, greedy answers, "
          f"{args.tokens} new tokens at most, {args.config}, interleaved, threads {torch.get_num_threads()}")
    print(f"{'way':<18}{'s/prompt (median)':>19}{'total s':>9}{'rewrite s':>11}{'rounds':>8}{'tokens read':>13}")
    for w in ways:
        s = seen[w]
        print(f"{w:<18}{med[w]:>19.1f}{sum(s['seconds']):>9.1f}{sum(s['rewrite_s']):>11.1f}{s['rounds']:>8}"
              f"{s['read_tokens']:>13}")
    ratio = sum(seen["whole prompt"]["seconds"]) / sum(seen["shared beginning"]["seconds"])
    print(f"whole prompt / shared beginning, total seconds: {ratio:.2f}x; candidate-prompt tokens read: "
          f"{seen['shared beginning']['read_tokens'] / max(1, seen['whole prompt']['read_tokens']):.2f} of before; "
          f"answers token for token the same: {same}/{len(rows)}"
          + ("" if same == len(rows) else " (the rest compare different work)"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"config": args.config, "prompts": len(rows), "passages": args.passages, "tokens": args.tokens,
                       "median_s": med, "ratio_total": round(ratio, 3), "same_answers": same,
                       **{w: {k: v for k, v in seen[w].items() if k != "answers"} for w in ways}}, f, indent=1)


if __name__ == "__main__":
    main()
