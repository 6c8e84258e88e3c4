"""`ewe bench ...`: speed measured side by side in one process, reported as medians and ratios.

Ratios compare equal work: the same inputs, the same token counts, the same outputs computed
(`ewe bench decode` fails rather than print a ratio for runs of unequal token counts; `ewe
bench attention` checks every implementation's output against the reference first). Each
command's printout says what its ratios compare; `ewe bench run`'s methods do different
work by design on the same prompts, and it says so.

    __init__.py   the commands
    decode.py     `ewe bench decode` (HF generate vs ewe's loop) and the decode benchmarks' helpers
    decode_weights.py  `ewe bench decode --weight-formats`: float32 / bfloat16 / int8 linear layers
    attention.py  the memory attention: compiled kernel vs fused PyTorch vs literal eq. 1
    retrieval.py  the embedded datastore: build rate, search latency, recall per index type
    faiss_devices.py  one FAISS index on CPU and GPU FAISS: equal results, queries/s both ways
    refresh.py    a memory refresh and a backtrack vs the re-prefill a re-prompting method pays
    judge.py      one check by the trained judge, in decode steps of the generator
    prefixnli.py  PrefixNLI's guided decoding per token, cached judge and not, against plain decoding
    run.py        wall time per prompt and its breakdown: EWE vs RA, or several configurations
    batch.py      B prompts as the rows of one batch (EWE's controller: controller.batch_rows) vs one by one
    e2e.py        an 8B-shaped random model through EWE.generate (units, refreshes, checks, backtracks) vs HF
"""
from __future__ import annotations

from ..argtypes import command_group, non_negative_int, positive_int

def add_bench_commands(sub, add_model_options, load_ewe) -> None:
    which = command_group(sub, "bench", "benchmarks (medians and ratios, baseline in the same process)")
    d = which.add_parser("decode", help="HF generate vs ewe at k=0 and k units")
    d.add_argument("--tokens", type=positive_int, default=64,
                   help="new tokens per run; every run decodes exactly this many (end-of-sequence masked)")
    d.add_argument("--units", type=non_negative_int, default=4, help="memory units for the memory run")
    d.add_argument("--repeats", type=positive_int, default=5)
    d.add_argument("--kv-caches", nargs="+", choices=["dynamic", "static", "compiled"], default=["dynamic"],
                   help="ewe's runs per KV cache: static preallocates it, and on a CUDA device replays each decode "
                        "step as a captured CUDA graph (decoding.kv_cache); compiled (CPU) is static with the step "
                        "compiled by torch.compile (decoding.compile); e.g. --kv-caches dynamic static compiled")
    from .decode import bench_decode
    from .decode_weights import run_weight_formats, weight_formats

    d.add_argument("--weight-formats", type=weight_formats, default=None, metavar="LIST",
                   help="compare the linear layers' weights, e.g. float32,bfloat16,int8: ewe at k=0 and k per "
                        "format against HF generate on the model as loaded, and held-out perplexity "
                        "(ewe/bench/decode_weights.py)")
    add_model_options(d)
    d.set_defaults(func=lambda a: (run_weight_formats if a.weight_formats else bench_decode)(a, load_ewe),
                   **{"memory.unit_tokens": 128})

    from .attention import add_bench_arguments, run_attention_bench

    a = which.add_parser("attention", help="memory attention: compiled extension vs fused PyTorch vs literal eq. 1")
    add_bench_arguments(a)
    a.set_defaults(func=lambda args: run_attention_bench(args) and 0)

    from .retrieval import add_bench_arguments as add_retrieval_arguments, run_retrieval_bench

    r = which.add_parser("retrieval", help="embedded Wikipedia datastore: build, search latency, recall of ANN indexes")
    add_retrieval_arguments(r)
    r.set_defaults(func=lambda args: run_retrieval_bench(args) and 0)

    from .faiss_devices import add_bench_arguments as add_devices_arguments, run_faiss_devices_bench

    fd = which.add_parser("faiss-devices", help="one FAISS index on CPU and GPU FAISS: equal results, queries/s")
    add_devices_arguments(fd)
    fd.set_defaults(func=run_faiss_devices_bench)

    from .refresh import add_bench_arguments as add_refresh_arguments, run_refresh_bench

    f = which.add_parser("refresh", help="memory refresh and backtrack vs a re-prompting method's re-prefill")
    add_refresh_arguments(f)
    add_model_options(f)
    f.set_defaults(func=lambda args: run_refresh_bench(args, load_ewe), **{"memory.unit_tokens": 128})

    from .judge import add_bench_arguments as add_judge_arguments, run_judge_bench

    j = which.add_parser("judge", help="one check (a sentence against 5 passages) in seconds and decode steps")
    add_judge_arguments(j)
    add_model_options(j)
    j.set_defaults(func=lambda args: run_judge_bench(args, load_ewe))

    from .prefixnli import add_bench_arguments as add_prefixnli_arguments, run_prefixnli_bench

    pn = which.add_parser("prefixnli", help="PrefixNLI's guided decoding per token, with and without the judge's "
                                            "cache, against plain decoding, same process")
    add_prefixnli_arguments(pn)
    add_model_options(pn)
    pn.set_defaults(func=lambda args: run_prefixnli_bench(args, load_ewe))

    from .run import add_bench_arguments as add_run_arguments, run_run_bench

    rb = which.add_parser("run", help="wall time per prompt and where it goes: EWE vs RA, or several configurations, "
                                      "same prompts, interleaved")
    add_run_arguments(rb)
    add_model_options(rb, several_configs=True)
    rb.set_defaults(func=lambda args: run_run_bench(args, load_ewe), **{"decoding.max_new_tokens": 128})

    from .batch import add_bench_arguments as add_batch_arguments, run_batch_bench

    bb = which.add_parser("batch", help="B prompts as the rows of one batch vs one by one: throughput, same process")
    add_batch_arguments(bb)
    add_model_options(bb, several_configs=True)
    bb.set_defaults(func=lambda args: run_batch_bench(args, load_ewe), **{"decoding.max_new_tokens": 128})

    from .e2e import add_bench_arguments as add_e2e_arguments, run_e2e_bench

    e2 = which.add_parser("e2e", help="a Llama-3.1-8B-shaped random model through EWE.generate (units, refreshes, "
                                      "checks, backtracks) vs HF generate and the weight-streaming limit")
    add_e2e_arguments(e2)
    e2.set_defaults(func=run_e2e_bench)
