"""`ewe bench decode --weight-formats float32,bfloat16,int8`: the linear layers' weights, side by side.

One process and one prompt. The baseline is plain HF `generate` on the model as loaded (float32
by default). Each format is a copy of that model with its linear layers swapped
(ewe/ops/quantized_linear.py), decoding with ewe's loop at k = 0 and with k units of M tokens.
The runs are interleaved, repeat after repeat; medians and ratios to the baseline are printed.

Then each format's perplexity on held-out text: 20 fixed Wikipedia summaries that are neither
in the prompt nor among the memory passages, every token predicted from the ones before it
(the first token of each summary is not scored), same process, same tokens for every format.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import math
import statistics
import sys

# 20 summaries of the embedded Wikipedia (every 500th title, sorted, from the 8th): not the
# benchmark prompt's subject, and none of the memory passages (BENCH_TITLES).
HELDOUT_TITLES = (
    "1931 China floods", "Ansel Adams", "Bengaluru", "Caucasus Mountains", "Conspiracy theory", "Douglas fir",
    "Ezra", "Georgy Zhukov", "Hermann von Helmholtz", "Interchangeable parts", "Kievan Rus'", "Mac (computer)",
    "Moat", "Nudity", "Philosophy of mind", "Radioactive decay", "Scavenger", "Sphinx", "The Girl from Ipanema",
    "Variable (mathematics)",
)


def weight_formats(text: str) -> list[str]:
    """argparse type: a comma-separated list of weight formats, e.g. "float32,int8"."""
    from ..ops.quantized_linear import FORMATS

    names = [t.strip() for t in text.split(",") if t.strip()]
    allowed = ("float32", "float16", "bfloat16", "int8")
    bad = [n for n in names if n not in allowed]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a comma-separated list of {', '.join(allowed)} (the model's own dtype, or one of "
            f"the formats {', '.join(FORMATS)})")
    return list(dict.fromkeys(names))


def heldout_texts() -> list[str]:
    from ..data.wiki import passage

    return [passage(t) for t in HELDOUT_TITLES]


def perplexity(model, tokenizer, texts: list[str]) -> tuple[float, int]:
    """(exp of the mean token NLL, tokens scored) of `model` on `texts`, one forward per text."""
    import torch
    import torch.nn.functional as F

    nll, count = 0.0, 0
    with torch.inference_mode():  # no memory: ewe's attention, if patched in, is plain SDPA
        for text in texts:
            ids = torch.tensor([tokenizer(text)["input_ids"]], device=model.device)
            logits = model(ids).logits[0, :-1].float()
            nll += F.cross_entropy(logits, ids[0, 1:], reduction="sum").item()
            count += ids.shape[1] - 1
    return math.exp(nll / count), count


def run_weight_formats(args, load_ewe) -> int:
    """`ewe bench decode --weight-formats ...` (see the module docstring)."""
    import torch

    from ..api import EWE
    from ..config import EWEConfig
    from ..data.wiki import passage
    from ..ops import quantized_linear
    from .decode import (BENCH_PROMPT, BENCH_TITLES, UnequalCounts, check_equal_counts, eos_masked, hf_greedy,
                    time_interleaved)

    ewe = load_ewe(args)
    base_dtype = ewe.config.model.dtype
    if ewe.config.model.weights is not None:
        print(f"ewe bench decode: --weight-formats compares formats of the model as loaded: leave model.weights "
              f"unset (it is {ewe.config.model.weights!r})", file=sys.stderr)
        return 2
    formats = args.weight_formats
    stray = [f for f in formats if f not in (base_dtype, *quantized_linear.FORMATS)]
    if stray:
        print(f"ewe bench decode: --weight-formats: {', '.join(stray)} is neither the model's dtype ({base_dtype}) "
              f"nor one of {', '.join(quantized_linear.FORMATS)}", file=sys.stderr)
        return 2
    n, k = args.tokens, args.units
    retrieval_units = max(k, ewe.config.memory.retrieval_units)  # room for the k passages
    config = EWEConfig.build(ewe.config.model_dump(), **{"memory.retrieval_units": retrieval_units})
    passages = [passage(t) for t in BENCH_TITLES[:k]]
    assert not set(HELDOUT_TITLES) & set(BENCH_TITLES), "held-out text must not be in memory"
    ids = torch.tensor([ewe.prompt_ids(BENCH_PROMPT)])
    base_model = ewe.model

    variants = {}
    for fmt in formats:
        model = base_model
        if fmt != base_dtype:
            model = copy.deepcopy(base_model)
            quantized_linear.apply_weight_format(model, fmt)
        variants[fmt] = EWE(model, ewe.tokenizer, config)

    def hf_generate():
        return hf_greedy(base_model, ids, n)

    runs = {("hf_generate", base_dtype): hf_generate}
    for fmt, v in variants.items():
        runs[("ewe_k0", fmt)] = lambda v=v: v.generate(BENCH_PROMPT, passages=[], max_new_tokens=n).token_ids
        if k:
            runs[(f"ewe_k{k}", fmt)] = lambda v=v: v.generate(BENCH_PROMPT, passages=passages,
                                                              max_new_tokens=n).token_ids
    with contextlib.ExitStack() as masks:  # exactly n tokens everywhere: end-of-sequence masked in every model
        for v in variants.values():
            if v.model is not base_model:
                masks.enter_context(eos_masked(v.model, ewe.stop_ids))
        masks.enter_context(eos_masked(base_model, ewe.stop_ids))
        for v in variants.values():  # warm up, and encode the units once per format
            v.generate(BENCH_PROMPT, passages=passages, max_new_tokens=2)
        hf_generate()
        times, counts, tokens = time_interleaved(runs, args.repeats)

    def linear_kind(fmt: str) -> str:
        if fmt == base_dtype:
            return "torch"
        if fmt == "bfloat16":
            return "torch bfloat16"
        if not quantized_linear.kernel_available():
            return "dequantized (no ext)"
        isa = quantized_linear.requested_isa()
        return f"ewe_ext {quantized_linear.best_isa() if isa == 'auto' else isa}"

    hf_tokens = tokens[("hf_generate", base_dtype)]

    def same_as_hf(name: str, fmt: str) -> str:
        if name == "hf_generate":
            return "-"
        if name != "ewe_k0":
            return "n/a (reads memory)"
        got = tokens[(name, fmt)]
        lead = next((i for i, (a, b) in enumerate(zip(got, hf_tokens)) if a != b), min(len(got), len(hf_tokens)))
        return "yes" if got == hf_tokens else f"first {lead} of {len(hf_tokens)}"

    print(f"decode: {n} new tokens, prompt {ids.shape[1]} tokens, {args.repeats} repeats interleaved, "
          f"M={config.memory.unit_tokens}, k={k}, threads {torch.get_num_threads()}; "
          f"baseline: HF generate, {base_dtype} weights")
    print("equal work: every run decodes exactly the same number of tokens (end-of-sequence masked), greedy, "
          "from the same prompt; units are encoded once per format (warm-up) and reused")
    equal = all(c == n for cs in counts.values() for c in cs)
    key = ("hf_generate", base_dtype)
    base = len(tokens[key]) / statistics.median(times[key])
    print(f"{'weights':<10}{'linear layers':<22}{'run':<13}{'tokens':>7}{'median s':>10}{'tok/s':>8}{'vs hf':>7}"
          f"  same tokens as hf")
    for (name, fmt), t in times.items():
        rate = len(tokens[(name, fmt)]) / statistics.median(t)
        ratio = f"{rate / base:>7.2f}" if equal else f"{'-':>7}"
        print(f"{fmt:<10}{linear_kind(fmt):<22}{name:<13}{len(tokens[(name, fmt)]):>7}{statistics.median(t):>10.3f}"
              f"{rate:>8.2f}{ratio}  {same_as_hf(name, fmt)}")
    try:
        check_equal_counts({f"{name} {fmt} (repeat {i + 1})": c for (name, fmt), cs in counts.items()
                            for i, c in enumerate(cs)}, n)
    except UnequalCounts as e:
        print(f"ewe bench decode: {e}", file=sys.stderr)
        return 1

    texts = heldout_texts()
    ref, count = perplexity(base_model, ewe.tokenizer, texts)
    print(f"held-out perplexity: {len(texts)} Wikipedia summaries ({count} tokens scored), none in the prompt "
          "or the memory; same process, same tokens")
    print(f"{'weights':<10}{'perplexity':>11}{'vs ' + base_dtype:>14}")
    print(f"{base_dtype:<10}{ref:>11.4f}{'-':>14}")
    for fmt, v in variants.items():
        if v.model is not base_model:
            p, _ = perplexity(v.model, ewe.tokenizer, texts)
            print(f"{fmt:<10}{p:>11.4f}{(p / ref - 1) * 100:>+13.2f}%")
    return 0
