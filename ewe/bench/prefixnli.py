"""`ewe bench prefixnli`: what PrefixNLI's guidance costs per token, against plain decoding, in one
process, interleaved.

Each prompt ("Tell me a bio of X.", X's Wikipedia passage given as the source, in the prompt as
the configuration places it) is answered greedily three ways on the same Runtime: plain decoding,
PrefixNLI with the judge's cache (the prefix extended one token per step, the candidates scored as
one batch on it), and PrefixNLI without it (every candidate's text read whole, the paper's cost
without prefix caching; fewer tokens, since it is slow). Reported: the median over prompts and
repeats of seconds per answer token (decode time over tokens written, prefill excluded) and its
ratio to plain decoding's, the judge's share, and candidates judged per step.
"""
from __future__ import annotations

import statistics

import torch

from ..argtypes import positive_int

SUBJECTS = ["Marie Curie", "Albert Einstein", "Isaac Newton", "Charles Darwin", "Ada Lovelace", "Nikola Tesla"]


def run_prefixnli_bench(args, load_ewe) -> int:
    from ..data.wiki import passage
    from ..methods.prefixnli import PrefixNLI

    if args.config is None:
        from ..eval.harness import CONFIGS

        args.config = str(CONFIGS / "prefixnli.yaml")
    ewe = load_ewe(args)
    if ewe.config.method != "prefixnli":
        raise SystemExit(f"ewe bench prefixnli: --config {args.config} is for method {ewe.config.method!r}; "
                         "give a prefixnli configuration (configs/prefixnli.yaml)")
    runtime = ewe.runtime
    subjects = SUBJECTS[: args.prompts]
    prompts = [f"Tell me a bio of {s}." for s in subjects]
    rows = [[passage(s)] for s in subjects]
    cached = PrefixNLI(runtime)
    uncached_options = runtime.config.method_section.model_copy(update={"cache": False})

    def plain(i, tokens):
        return runtime.generate_plain([prompts[i]], [rows[i]], runtime.greedy(runtime.decoding(), tokens))[0]

    def guided(i, tokens, method=cached):
        return method.run_batch([prompts[i]], runtime.greedy(runtime.decoding(), tokens), [rows[i]])[0]

    def without_cache(i, tokens):
        method = PrefixNLI(runtime)
        method.options = uncached_options
        return guided(i, tokens, method)

    runs = {"plain": (plain, args.tokens), "prefixnli, cached judge": (guided, args.tokens),
            "prefixnli, no cache": (without_cache, args.no_cache_tokens)}
    for fn, _ in runs.values():
        fn(0, 2)  # warm up: load the judge, the first-call costs
    per_token = {name: [] for name in runs}
    judge_share = {name: [] for name in runs}
    per_step = {name: [] for name in runs}
    same = []
    for _ in range(args.repeats):
        answers = {}
        for i in range(len(prompts)):
            for name, (fn, tokens) in runs.items():
                res = fn(i, tokens)
                n = max(1, len(res.token_ids))
                per_token[name].append(res.stats["decode_s"] / n)
                if "judge_s" in res.stats:
                    judge_share[name].append(res.stats["judge_s"] / max(1e-9, res.stats["decode_s"]))
                    steps = max(1, res.stats["judged_steps"])
                    per_step[name].append((res.stats["judge_tokens"]) / steps)
                answers[(name, i)] = res.token_ids
            k = min(len(answers[("prefixnli, cached judge", i)]), len(answers[("prefixnli, no cache", i)]))
            same.append(answers[("prefixnli, cached judge", i)][:k] == answers[("prefixnli, no cache", i)][:k])
    base = statistics.median(per_token["plain"])
    opts = runtime.config.method_section
    print(f"prefixnli bench: {len(prompts)} bio prompts with their Wikipedia passage, greedy, {args.repeats} repeats "
          f"interleaved, threads {torch.get_num_threads()}; judge {opts.judge}, top_p {opts.top_p}, at most "
          f"{opts.max_candidates} candidates, scope {opts.scope}")
    print(f"{'run':<26}{'tokens':>7}{'ms/token':>10}{'x plain':>9}{'judge share':>13}{'judge tokens/step':>19}")
    for name, (_, tokens) in runs.items():
        med = statistics.median(per_token[name])
        share = f"{statistics.median(judge_share[name]):13.0%}" if judge_share[name] else f"{'':>13}"
        step = f"{statistics.median(per_step[name]):19.1f}" if per_step[name] else f"{'':>19}"
        print(f"{name:<26}{tokens:>7}{med * 1000:10.1f}{med / base:9.2f}{share}{step}")
    print("ms/token: decode time over answer tokens (prefill excluded), median over prompts and repeats; x plain: "
          "its ratio to plain decoding's, same process. The no-cache run writes fewer tokens (it is slow); its "
          f"answers agree with the cached judge's on their common tokens in {sum(same)} of {len(same)} runs.")
    print("target (issue 34): cached <= 2.5x plain decoding; the paper measures about 2.4x-2.9x (1B generator, GPU)")
    return 0


def add_bench_arguments(p) -> None:
    p.add_argument("--prompts", type=positive_int, default=3, help=f"bio prompts (at most {len(SUBJECTS)})")
    p.add_argument("--tokens", type=positive_int, default=48, help="answer tokens, plain and cached")
    p.add_argument("--no-cache-tokens", type=positive_int, default=12, help="answer tokens without the judge's cache")
    p.add_argument("--repeats", type=positive_int, default=2)
