"""`ewe bench batch`: B prompts answered as the rows of one batch against one by one, same
process, same Runtime, interleaved.

For EWE's controller the batch is `controller.batch_rows` (each row with its own memory, checks
and rewinds); for a method without pauses it is the plain batched decoding every method has.
Reported: wall seconds for the whole set each way (medians over repeats), answer tokens per
second, the ratio, and how many rows wrote exactly what they write alone (greedy: all of them,
or the ratio compares different work and says so), and the KV cache bytes copied for rows other
than the one joining, leaving or written back (engine/copies.py COPIES, counted where each copy is
made: session.py's re-selected batches, and the slot cache's outgrown buffers and rows moved into
free slots, which are also shown apart).
"""
from __future__ import annotations

import contextlib

import statistics
import time

import torch

from ..argtypes import positive_int


def add_bench_arguments(p) -> None:
    p.add_argument("--prompts", type=positive_int, default=16, help="bio prompts (ewe eval prompts bio)")
    p.add_argument("--repeats", type=positive_int, default=1, help="each way, interleaved")
    p.add_argument("--passages", choices=["given", "retrieve"], default="given",
                   help="given: each prompt's own Wikipedia summary (no datastore); retrieve: the configuration's")
    p.add_argument("--max-batch", type=positive_int, default=None,
                   help="rows decoded at once (controller.max_rows: the next prompt joins as a row ends); "
                   "default: all the prompts")
    p.add_argument("--out", help="write the figures as JSON here")


def run_batch_bench(args, load_ewe) -> int:
    from ..data import wiki
    from ..data.prompt_sets import prompt_set
    from ..files import write_json
    from ..engine.session import COPIES
    from ..methods.registry import method_class

    if args.config is None:
        from ..eval.harness import CONFIGS

        args.config = [str(CONFIGS / "ewe.yaml")]
    if len(args.config) != 1:
        raise SystemExit("ewe bench batch: give one --config")
    args.config = args.config[0]
    ewe = load_ewe(args)
    rt = ewe.runtime
    cfg = rt.config
    rows = prompt_set("bio", args.prompts, suffix=None)
    prompts = [r["prompt"] for r in rows]
    passages = [[wiki.passage(r["topic"])] for r in rows] if args.passages == "given" else None
    dec = rt.greedy(rt.decoding(), cfg.decoding.max_new_tokens)
    method = method_class(cfg.method)(rt)
    controlled = cfg.method == "ewe" and cfg.pauses

    def one_by_one():  # each prompt a one-row loop of its own (controller.batch_rows off)
        with rows_setting(cfg, controlled, False, None):
            return [method.run_batch([p], dec, None if passages is None else [passages[i]])[0]
                    for i, p in enumerate(prompts)]

    def batched():  # the prompts as requests of one engine (controller.batch_rows on)
        with rows_setting(cfg, controlled, True, args.max_batch):
            return method.run_batch(prompts, dec, passages)

    method.run_batch([prompts[0]], rt.greedy(dec, 4), None if passages is None else [passages[0]])  # warm up
    runs = {"one by one": one_by_one, "batched": batched}
    seconds = {name: [] for name in runs}
    tokens, answers, checks, copied = {}, {}, {}, {}
    for rep in range(args.repeats):
        for name in (runs if rep % 2 == 0 else reversed(list(runs))):
            COPIES.reset()
            t0 = time.perf_counter()
            results = runs[name]()
            seconds[name].append(time.perf_counter() - t0)
            copied[name] = {"other_rows": COPIES.other_rows, "own_rows": COPIES.own_rows, "grown": COPIES.grown,
                            "moved": COPIES.moved, "branched": COPIES.branched}
            tokens[name] = sum(len(r.token_ids) for r in results)
            answers[name] = [r.token_ids for r in results]
            # every check's own time (claim extraction, evidence search, judge; the candidates' checks
            # included, not their decoding): a check holds the whole batch while it runs (the checks of
            # rows due at the same step run as one batch)
            checks[name] = sum(r.stats.get(k, 0.0) for r in results
                               for k in ("check_extract_s", "check_search_s", "check_judge_s"))
    same = sum(a == b for a, b in zip(answers["one by one"], answers["batched"]))
    med = {name: statistics.median(s) for name, s in seconds.items()}
    ratio = med["one by one"] / med["batched"]
    print(f"batch bench: {len(prompts)} bio prompts, {args.passages} passages, greedy, "
          f"{cfg.decoding.max_new_tokens} new tokens at most, config {args.config} (method {cfg.method}"
          f"{', controller batch_rows' if controlled else ', plain batched decoding'}"
          f"{f', at most {args.max_batch} rows at once' if controlled and args.max_batch else ''}), "
          f"{args.repeats} repeat(s) "
          f"interleaved, threads {torch.get_num_threads()}")
    print(f"{'run':<14}{'seconds':>10}{'tokens':>9}{'tokens/s':>10}")
    for name in runs:
        print(f"{name:<14}{med[name]:>10.1f}{tokens[name]:>9}{tokens[name] / med[name]:>10.2f}")
    mb = {name: c["other_rows"] / 2**20 for name, c in copied.items()}
    print(f"KV cache copied for other rows than the one joining, leaving or written back (outgrown buffers and "
          f"moved rows included): "
          f"{mb['batched']:.1f} MiB batched ({copied['batched']['other_rows'] / max(1, tokens['batched']) / 1024:.0f} KiB "
          f"per answer token), {mb['one by one']:.1f} MiB one by one; the rows' own: "
          f"{copied['batched']['own_rows'] / 2**20:.1f} and {copied['one by one']['own_rows'] / 2**20:.1f} MiB; "
          f"slot buffers outgrown: {copied['batched']['grown'] / 2**20:.1f} MiB batched; rows moved down into "
          f"free slots: {copied['batched']['moved'] / 2**20:.1f} MiB batched; branches' prefixes: "
          f"{copied['batched']['branched'] / 2**20:.1f} MiB batched, {copied['one by one']['branched'] / 2**20:.1f} MiB "
          f"one by one; rewinds: none (a length change)")
    if controlled:
        print(f"of which the checks' own seconds (they hold the batch while they run): {checks['one by one']:.1f} s one by one, "
              f"{checks['batched']:.1f} s batched")
    print(f"throughput, batched vs one by one: {ratio:.2f}x; rows that wrote what they write alone: "
          f"{same}/{len(prompts)}" + ("" if same == len(prompts) else " (the ratio compares different work)"))
    if args.out:
        write_json(args.out, {"prompts": len(prompts), "passages": args.passages, "config": args.config,
                              "max_new_tokens": cfg.decoding.max_new_tokens, "repeats": args.repeats,
                              "max_batch": args.max_batch,
                              "threads": torch.get_num_threads(), "seconds": seconds, "median_s": med,
                              "tokens": tokens, "check_s": checks, "cache_bytes_copied": copied, "throughput_ratio": round(ratio, 3),
                              "same_rows": same})
    return 0


@contextlib.contextmanager
def rows_setting(cfg, controlled: bool, batch_rows: bool, max_rows: int | None):
    """controller.batch_rows and max_rows set for one run (an EWE configuration with pauses), then restored."""
    if not controlled:
        yield
        return
    before = cfg.controller.batch_rows, cfg.controller.max_rows
    cfg.controller.batch_rows, cfg.controller.max_rows = batch_rows, max_rows
    try:
        yield
    finally:
        cfg.controller.batch_rows, cfg.controller.max_rows = before
