"""`ewe bench ...`: speed measured side by side in one process, reported as medians and ratios.

    __init__.py   the commands, and `ewe bench decode` (HF generate vs ewe's loop)
    attention.py  the memory attention: compiled kernel vs fused PyTorch vs literal eq. 1
    retrieval.py  the embedded datastore: build rate, search latency, recall per index type
    refresh.py    a memory refresh and a backtrack vs the re-prefill a re-prompting method pays
    judge.py      one check by the trained judge, in decode steps of the generator
    run.py        wall time per prompt: the full EWE pipeline vs the RA baseline
"""
from __future__ import annotations

import statistics
import time

from ..argtypes import command_group, non_negative_int, positive_int

BENCH_PROMPT = "Tell me a bio of Albert Einstein."
BENCH_TITLES = ["Albert Einstein", "Marie Curie", "Isaac Newton", "Charles Darwin", "Niels Bohr", "Max Planck"]


def _median_rate(times: list[float], tokens: int) -> float:
    return tokens / statistics.median(times)


def bench_decode(args, load_ewe) -> int:
    """Plain HF `generate` against ewe's loop at k = 0 and with k units of M tokens, same prompt, interleaved."""
    import torch

    from ..data.wiki import passage

    from ..api import EWE
    from ..config import EWEConfig

    ewe = load_ewe(args)
    n, k = args.tokens, args.units
    if k > ewe.config.memory.retrieval_units:  # room for the k passages, same model
        config = EWEConfig.build(ewe.config.model_dump(), **{"memory.retrieval_units": k})
        ewe = EWE(ewe.model, ewe.tokenizer, config)
    passages = [passage(t) for t in BENCH_TITLES[:k]]
    ids = torch.tensor([ewe.prompt_ids(BENCH_PROMPT)])
    model = ewe.model

    def hf_generate():
        model.set_attn_implementation("sdpa")  # the unpatched model
        try:
            with torch.inference_mode():
                out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
        finally:
            model.set_attn_implementation("ewe")
        return out.shape[1] - ids.shape[1]

    def ewe_plain():
        r = ewe.generate(BENCH_PROMPT, passages=[], max_new_tokens=n)
        return len(r.token_ids)

    def ewe_memory():
        r = ewe.generate(BENCH_PROMPT, passages=passages, max_new_tokens=n)
        return len(r.token_ids)

    ewe.generate(BENCH_PROMPT, passages=passages, max_new_tokens=2)  # warm up, and encode the units once
    runs = {"hf_generate": hf_generate, "ewe_k0": ewe_plain, f"ewe_k{k}": ewe_memory}
    times = {name: [] for name in runs}
    produced = {}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            produced[name] = fn()
            times[name].append(time.perf_counter() - start)
    print(f"decode: {n} new tokens, prompt {ids.shape[1]} tokens, {args.repeats} repeats interleaved, "
          f"dtype {ewe.config.model.dtype}, M={ewe.config.memory.unit_tokens}, threads {torch.get_num_threads()}")
    print("units are encoded once (warm-up) and reused, as a passage already encoded is not encoded again")
    base = _median_rate(times["hf_generate"], produced["hf_generate"])
    print(f"{'run':<14}{'tokens':>8}{'median s':>10}{'tok/s':>9}{'vs hf':>8}")
    for name in runs:
        rate = _median_rate(times[name], produced[name])
        print(f"{name:<14}{produced[name]:>8}{statistics.median(times[name]):>10.3f}{rate:>9.2f}{rate / base:>8.2f}")
    return 0


def add_bench_commands(sub, add_model_options, load_ewe) -> None:
    which = command_group(sub, "bench", "benchmarks (medians and ratios, baseline in the same process)")
    d = which.add_parser("decode", help="HF generate vs ewe at k=0 and k units")
    d.add_argument("--tokens", type=positive_int, default=64, help="new tokens per run")
    d.add_argument("--units", type=non_negative_int, default=4, help="memory units for the memory run")
    d.add_argument("--repeats", type=positive_int, default=5)
    add_model_options(d)
    d.set_defaults(func=lambda a: bench_decode(a, load_ewe), **{"memory.unit_tokens": 128})

    from .attention import add_bench_arguments, run_attention_bench

    a = which.add_parser("attention", help="memory attention: compiled extension vs fused PyTorch vs literal eq. 1")
    add_bench_arguments(a)
    a.set_defaults(func=lambda args: run_attention_bench(args) and 0)

    from .retrieval import add_bench_arguments as add_retrieval_arguments, run_retrieval_bench

    r = which.add_parser("retrieval", help="embedded Wikipedia datastore: build, search latency, recall of ANN indexes")
    add_retrieval_arguments(r)
    r.set_defaults(func=lambda args: run_retrieval_bench(args) and 0)

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

    from .run import add_bench_arguments as add_run_arguments, run_run_bench

    rb = which.add_parser("run", help="wall time per prompt: full EWE pipeline vs the RA baseline, same prompts")
    add_run_arguments(rb)
    add_model_options(rb)
    rb.set_defaults(func=lambda args: run_run_bench(args, load_ewe), config="configs/ewe.yaml",
                    **{"decoding.max_new_tokens": 128})
