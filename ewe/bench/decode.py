"""`ewe bench decode`: plain HF `generate` against ewe's loop at k = 0 and with k memory units,
and the helpers every decode benchmark shares (equal work, interleaved timing)."""
from __future__ import annotations

import itertools
import statistics
import sys
import time
from contextlib import contextmanager

import torch

BENCH_PROMPT = "Tell me a bio of Albert Einstein."
BENCH_TITLES = ["Albert Einstein", "Marie Curie", "Isaac Newton", "Charles Darwin", "Niels Bohr", "Max Planck"]


def _median_rate(times: list[float], tokens: int) -> float:
    return tokens / statistics.median(times)


class UnequalCounts(RuntimeError):
    """The runs of a benchmark did not do the same number of tokens: their ratio would mean nothing."""


@contextmanager
def eos_masked(model, stop_ids):
    """Every forward's logits with the end-of-sequence ids at -inf, for HF's loop and ewe's alike.

    A benchmark decodes exactly n tokens on every side this way (what HF's `min_new_tokens`
    does, applied to all runs), so no run can stop early and look faster per answer."""
    ids = sorted(i for i in stop_ids if i is not None)
    head = model.get_output_embeddings()
    # the index is made on the head's device before any call (Int8Linear holds buffers, not
    # parameters): a CUDA graph's capture allows no copy from the host, and .to() of a tensor
    # already there is the tensor itself
    device = next(itertools.chain(head.parameters(), head.buffers())).device
    index = torch.tensor(ids, dtype=torch.long, device=device)

    def mask(_module, _inputs, logits):
        logits.index_fill_(-1, index.to(logits.device), float("-inf"))
        return logits

    handle = head.register_forward_hook(mask) if ids else None
    try:
        yield
    finally:
        if handle is not None:
            handle.remove()


def time_interleaved(runs: dict, repeats: int) -> tuple[dict, dict, dict]:
    """Run every `runs` entry (a function returning its tokens) `repeats` times, interleaved
    so machine noise hits them alike. Returns each run's seconds and token count per repeat,
    and its last tokens."""
    times = {name: [] for name in runs}
    counts = {name: [] for name in runs}  # every repeat's count, all checked
    tokens = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            tokens[name] = fn()
            times[name].append(time.perf_counter() - start)
            counts[name].append(len(tokens[name]))
    return times, counts, tokens


def check_equal_counts(produced: dict[str, int], expected: int, what: str = "tokens") -> None:
    """Raise UnequalCounts unless every run produced `expected` {what}."""
    off = {name: n for name, n in produced.items() if n != expected}
    if off:
        raise UnequalCounts(f"unequal work: every run must produce {expected} {what}, but "
                            + ", ".join(f"{name} produced {n}" for name, n in off.items())
                            + "; no ratio is given for different work")


def hf_greedy(model, ids, n: int) -> list[int]:
    """Plain HF `generate` (the unpatched attention), greedy: the decode baseline's new token ids."""
    import torch

    model.set_attn_implementation("sdpa")
    try:
        with torch.inference_mode():
            out = model.generate(ids, max_new_tokens=n, do_sample=False)
    finally:
        model.set_attn_implementation("ewe")
    return out[0, ids.shape[1]:].tolist()


def _same_tokens(name: str, tokens: dict) -> str:
    """Which run's tokens `name` must equal, and whether it does: k=0 runs HF generate's (no memory is
    read), a static-cache run its dynamic-cache twin's."""
    if name == "hf_generate":
        return "-"
    twin = name.rsplit("_", 1)[0] if name.endswith(("_static", "_compiled")) else None
    checks = [twin] if twin else []
    if name.startswith("ewe_k0"):
        checks.append("hf_generate")
    if not checks:
        return "- (reads memory)"
    return ", ".join(f"{other}: {'yes' if tokens[name] == tokens[other] else 'NO'}" for other in checks)


def bench_decode(args, load_ewe) -> int:
    """Plain HF `generate` against ewe's loop at k = 0 and with k units of M tokens, same prompt, interleaved.

    Every run decodes exactly n tokens (end-of-sequence masked in all of them, `eos_masked`);
    a run that produced another count fails the command instead of printing a ratio."""
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
        return hf_greedy(model, ids, n)

    def ewe_run(engine, units):
        return lambda: engine.generate(BENCH_PROMPT, passages=units, max_new_tokens=n).token_ids

    runs = {"hf_generate": hf_generate}
    engines = {}
    for kv in getattr(args, "kv_caches", None) or ["dynamic"]:
        suffix = "" if kv == "dynamic" else f"_{kv}"
        settings = {"decoding.kv_cache": "static" if kv == "compiled" else kv, "decoding.compile": kv == "compiled"}
        same = all(ewe.config.model_dump()["decoding"][k.split(".")[1]] == v for k, v in settings.items())
        engines[kv] = engine = ewe if same else EWE(
            model, ewe.tokenizer, EWEConfig.build(ewe.config.model_dump(), **settings))
        runs[f"ewe_k0{suffix}"] = ewe_run(engine, [])
        if k:
            runs[f"ewe_k{k}{suffix}"] = ewe_run(engine, passages)
    with eos_masked(model, ewe.stop_ids):
        for engine in engines.values():  # warm up (a static cache captures its graphs), encode the units once
            engine.generate(BENCH_PROMPT, passages=passages, max_new_tokens=4)
            engine.generate(BENCH_PROMPT, passages=[], max_new_tokens=4)
        times, counts, tokens = time_interleaved(runs, args.repeats)
    produced = {name: statistics.median_low(c) for name, c in counts.items()}
    print(f"decode: {n} new tokens, prompt {ids.shape[1]} tokens, {args.repeats} repeats interleaved, "
          f"dtype {ewe.config.model.dtype}, M={ewe.config.memory.unit_tokens}, threads {torch.get_num_threads()}")
    print("equal work: every run decodes exactly the same number of tokens (end-of-sequence masked in all of "
          "them), greedy, from the same prompt; units are encoded once (warm-up) and reused, as a passage "
          "already encoded is not encoded again")
    equal = all(c == n for cs in counts.values() for c in cs)
    print(f"{'run':<18}{'tokens':>8}{'median s':>10}{'tok/s':>9}{'vs hf':>8}  same tokens as")
    base = _median_rate(times["hf_generate"], produced["hf_generate"])
    for name in runs:
        rate = _median_rate(times[name], produced[name])
        ratio = f"{rate / base:>8.2f}" if equal else f"{'-':>8}"
        print(f"{name:<18}{produced[name]:>8}{statistics.median(times[name]):>10.3f}{rate:>9.2f}{ratio}  "
              f"{_same_tokens(name, tokens)}")
    print("vs hf: tokens/s over HF generate's, the same token count on both sides; k=0 must write HF's tokens; "
          "a static-cache run must write its dynamic-cache twin's")
    try:
        check_equal_counts({f"{name} (repeat {i + 1})": c for name, cs in counts.items()
                            for i, c in enumerate(cs)}, n)
    except UnequalCounts as e:
        print(f"ewe bench decode: {e}", file=sys.stderr)
        return 1
    return 0
