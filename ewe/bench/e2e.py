"""`ewe bench e2e`: a Llama-3.1-8B-shaped model (random weights built on the device) through
`EWE.generate` with memory units, refreshes, checks and backtracks, against HF `generate` on the
same model and against the weight-streaming limit (weight bytes read per step / copy bandwidth).

Random weights write gibberish, so three stand-ins, for speed only, script what real text would
decide: a datastore returning fixed passages (one new passage per search), a checker rejecting every
Nth sentence it is asked about, and a head hook that raises "." and then " The" every S-th forward
(on the device, so captured in CUDA graphs; on in the loop runs only) so that the model writes
sentences. The head still computes every logit; ids the tokenizer lacks are masked (-inf).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from ..argtypes import non_negative_int, positive_int
from ..retrieval.datastore import Hit
from ..verify.types import SUPPORTED, UNSUPPORTED, Claim, Evidence, SentenceCheck, Verdict
from .decode import UnequalCounts, check_equal_counts, eos_masked, hf_greedy, time_interleaved

PROMPT, SUBJECT = "Tell me a bio of Albert Einstein.", "Albert Einstein"
ROPE_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
LAYOUTS = {  # exact Llama-3.1-8B values; tiny: the same structure, small, for CPU tests
    "llama3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                        num_key_value_heads=8, head_dim=128, vocab_size=128256, rope_theta=500000.0,
                        rope_scaling=ROPE_LLAMA3, max_position_embeddings=131072, rms_norm_eps=1e-5,
                        tie_word_embeddings=False, hidden_act="silu", attention_bias=False, mlp_bias=False),
    "tiny": dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, rope_theta=500000.0,
                 rope_scaling={**ROPE_LLAMA3, "original_max_position_embeddings": 256},
                 max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False),
}
WARMUP_TOKENS = 16  # each run once, this long, before the timed repeats
TARGETS = {"llama3.1-8b": {"vs_hf": 5.0, "of_limit": 0.6}, "embedded": {"vs_hf": 10.0}}  # issue 60, on a GPU
FACTS = ["was a German-born theoretical physicist who developed the theory of relativity.",
         "received the 1921 Nobel Prize in Physics for his explanation of the photoelectric effect.",
         "was born in Ulm in 1879 and worked at the patent office in Bern, where he wrote four papers in 1905.",
         "moved to the United States in 1933 and joined the Institute for Advanced Study in Princeton.",
         "published the general theory of relativity in 1915 and died in Princeton in 1955."]


def add_bench_arguments(p) -> None:
    p.add_argument("--layout", choices=[*LAYOUTS, "embedded"], default="llama3.1-8b",
                   help="llama3.1-8b: Llama-3.1-8B's configuration; embedded: SmolLM2-135M's (the --tokenizer "
                        "folder's config.json); tiny: a small Llama of the same structure (CPU tests)")
    p.add_argument("--tokenizer", default="embedded", help='"embedded" or a folder holding the tokenizer files '
                   "(and config.json for --layout embedded)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    p.add_argument("--layers", type=positive_int, default=None, help="fewer layers than the layout's (quick checks)")
    p.add_argument("--tokens", type=positive_int, default=128, help="new tokens per answer")
    p.add_argument("--units", type=positive_int, default=4, help="k memory units")
    p.add_argument("--unit-tokens", type=positive_int, default=None, help="M (default 128; tiny: 32)")
    p.add_argument("--repeats", type=positive_int, default=3)
    p.add_argument("--kv-caches", nargs="+", choices=["dynamic", "static"], default=["dynamic", "static"],
                   help="ewe's runs per KV cache (static: CUDA graphs on a CUDA device)")
    p.add_argument("--sentence-tokens", type=positive_int, default=12, help="S: the scripted writer's sentence length")
    p.add_argument("--reject-every", type=positive_int, default=3, help="the scripted checker rejects every Nth check")
    p.add_argument("--attention-impl", choices=_impls(), default="auto", help="memory attention (model.attention_impl)")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--json", metavar="FILE", help="write every figure as JSON to FILE (atomically)")


def _impls() -> list[str]:
    from typing import get_args

    from ..config import ModelConfig

    return [a for t in get_args(ModelConfig.model_fields["attention_impl"].annotation) for a in get_args(t)]


# -- the model --------------------------------------------------------------------------------------


def layout_config(layout: str, tokenizer, source: str | None = None, layers: int | None = None):
    """The layout's transformers config, its token ids the tokenizer's (never built, only described)."""
    from transformers import AutoConfig, LlamaConfig

    if layout == "embedded":
        from ..model_loading import resolve

        config = AutoConfig.from_pretrained(resolve(source or "embedded"))
        if hasattr(config, "quantization_config"):  # the embedded folder's names the GGUF it came from
            del config.quantization_config
    else:
        values = dict(LAYOUTS[layout])
        if values.get("vocab_size") is None:  # tiny: twice the tokenizer's, so the mask is exercised
            values["vocab_size"] = -(-2 * len(tokenizer) // 64) * 64
        config = LlamaConfig(**values)
    if layers is not None:
        config.num_hidden_layers = layers
    if config.vocab_size < len(tokenizer):
        raise ValueError(f"the {layout} layout's vocabulary ({config.vocab_size}) is smaller than the tokenizer's "
                         f"({len(tokenizer)})")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    config.bos_token_id, config.eos_token_id, config.pad_token_id = tokenizer.bos_token_id, tokenizer.eos_token_id, pad
    return config


@torch.no_grad()
def build_model(config, device: str, dtype: torch.dtype, seed: int):
    """The model with seeded random weights, made on `device` in `dtype` (8B never passes through the
    host): matrices N(0, 0.02) as Llama's initializer, norm weights 1."""
    from transformers import AutoModelForCausalLM

    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    where = next(model.parameters()).device
    if where.type != torch.device(device).type:
        raise RuntimeError(f"the model was built on {where}, not on {device}")
    gen = torch.Generator(device=device).manual_seed(seed)
    for p in model.parameters():  # every parameter written here: none is left as torch.empty found it
        p.normal_(0.0, config.initializer_range, generator=gen) if p.dim() > 1 else p.fill_(1.0)
    model.generation_config.bos_token_id = config.bos_token_id
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    return model.eval()


def weight_bytes(model) -> tuple[int, int]:
    """(bytes of all parameters, a shared head counted once; bytes one batch-1 decode step reads: all of
    them but an untied input embedding, of which one row)."""
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    emb = model.get_input_embeddings().weight
    if emb is model.get_output_embeddings().weight:
        return total, total
    return total, total - emb.numel() * emb.element_size() + emb.shape[1] * emb.element_size()


class ScriptedHead:
    """A forward hook on the output head: ids >= `vocab` at -inf (the tokenizer has no such token),
    and, while `on` is 1, `end` raised at every S-th forward and `start` at the next, so random
    weights write sentences of about S tokens. Device tensors only: a CUDA graph captures it."""

    def __init__(self, model, vocab: int, end: int, start: int, every: int):
        head = model.get_output_embeddings()
        device = head.weight.device
        self.vocab, self.end, self.start, self.every = vocab, end, start, every
        self.count = torch.zeros((), dtype=torch.long, device=device)
        self.on = torch.zeros((), dtype=torch.float32, device=device)
        self.handle = head.register_forward_hook(self)

    def __call__(self, _module, _inputs, logits):
        logits[..., self.vocab:] = float("-inf")
        self.count.add_(1)
        phase = self.count % self.every
        logits[..., self.end] += (self.on * (phase == 0) * 1e4).to(logits.dtype)
        logits[..., self.start] += (self.on * (phase == 1) * 1e4).to(logits.dtype)
        return logits

    def writing(self, on: bool) -> None:
        self.on.fill_(1.0 if on else 0.0)

    def remove(self) -> None:
        self.handle.remove()


def first_token(tokenizer, text: str) -> int:
    return tokenizer(text, add_special_tokens=False)["input_ids"][0]  # " The" may split: its first piece
    # still begins with the space a sentence boundary needs


# -- the scripted stand-ins (speed only) --------------------------------------------------------------


def fixed_passages(tokenizer, count: int, max_tokens: int) -> list[str]:
    """`count` distinct passages about SUBJECT, each cut to fit one unit of `max_tokens`."""
    out = []
    for i in range(count):
        facts = FACTS[i % len(FACTS):] + FACTS[:i % len(FACTS)]
        text = f"{SUBJECT} (part {i + 1}): " + " ".join(f"{SUBJECT} {f}" for f in facts)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][:max_tokens]
        out.append(tokenizer.decode(ids).strip())
    return out


class ScriptedDatastore:
    """A datastore stand-in: search i returns passages i .. i+k-1 of a fixed ring, so every refresh
    brings one new passage into memory (and evicts the oldest)."""

    def __init__(self, passages: list[str]):
        self.passages, self.searches = passages, 0

    def search(self, queries, k, threshold=None, dedup_sources=True):
        out = []
        for _ in queries:
            n = len(self.passages)
            out.append([Hit(id=(self.searches + j) % n, score=0.9, text=self.passages[(self.searches + j) % n],
                            title=SUBJECT, source_id=f"scripted-{(self.searches + j) % n}", start=0, end=0)
                        for j in range(min(k, n))])
            self.searches += 1
        return out

    def __len__(self) -> int:
        return len(self.passages)


class ScriptedChecker:
    """A fact-checker stand-in: the n-th sentence checked is unsupported when n % `every` == 0 (its
    refuting evidence one of the passages), else supported. Deterministic, and costs nothing."""

    name = "scripted"

    def __init__(self, passages: list[str], every: int):
        self.passages, self.every, self.calls = passages, every, 0

    def check_sentence(self, sentence, context=None, prompt=None, evidence=None) -> SentenceCheck:
        self.calls += 1
        claim = Claim(sentence, sentence, 0, len(sentence))
        reject = self.calls % self.every == 0
        passage = Evidence(self.passages[self.calls % len(self.passages)], SUBJECT, 0.9)
        verdict = Verdict(claim, UNSUPPORTED if reject else SUPPORTED, 0.0 if reject else 1.0, [passage], self.name)
        return SentenceCheck(sentence=sentence, claims=[claim], verdicts=[verdict], extractor=self.name)


# -- the benchmark ----------------------------------------------------------------------------------


def _config(args, kv: str, loop: bool, unit_tokens: int):
    from ..config import EWEConfig

    k = args.units
    controller = {"retrieval_trigger": "interval", "retrieval_interval": 1, "verify_trigger": "interval",
                  "verify_interval": 8, "rewrite_candidates": 4, "max_retries": 2, "on_retries_exhausted": "drop",
                  "max_backtracks": 12, "feedback_placement": "memory", "batch_rows": False}
    return EWEConfig.build({
        "model": {"device": args.device, "dtype": args.dtype, "attention_impl": args.attention_impl},
        "memory": {"unit_tokens": unit_tokens, "retrieval_units": k, "feedback_units": 2},
        "retrieval": {"source": "scripted" if loop else None, "top_k": k, "threshold": None},
        "decoding": {"max_new_tokens": args.tokens, "temperature": 0.0, "kv_cache": kv},
        # the scripted checker alone decides: the rules would reject random text on their own
        "checker": {"reject_repeats": False, "reject_degenerate": False, "reject_off_subject": False},
        **({"controller": controller} if loop else {}),
    })


def _device(name: str) -> torch.device:
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"ewe bench e2e: --device {name}, but torch sees no CUDA device "
                         f"(torch {torch.__version__}, CUDA {torch.version.cuda})")
    return device


def run_e2e_bench(args) -> int:
    """Build, run every side interleaved, print the table and the loop's counts, write --json."""
    from ..api import EWE
    from ..model_loading import load_tokenizer, torch_dtype
    from .attention import copy_bandwidth, copy_buffers

    device = _device(args.device)
    n, k = args.tokens, args.units
    tokenizer = load_tokenizer(args.tokenizer)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    config = layout_config(args.layout, tokenizer, args.tokenizer, args.layers)
    torch.manual_seed(args.seed)
    model = build_model(config, str(device), torch_dtype(args.dtype), args.seed)
    unit_tokens = args.unit_tokens or (32 if args.layout == "tiny" else 128)
    passages = fixed_passages(tokenizer, 2 * k + 2, unit_tokens - 4)

    def engine(kv: str, loop: bool):
        if not loop:
            return EWE(model, tokenizer, _config(args, kv, False, unit_tokens))
        return EWE(model, tokenizer, _config(args, kv, True, unit_tokens), datastore=ScriptedDatastore(passages),
                   fact_checker=ScriptedChecker(passages, args.reject_every))

    plain = {kv: engine(kv, False) for kv in args.kv_caches}
    loops = {kv: engine(kv, True) for kv in args.kv_caches}
    first = plain[args.kv_caches[0]]
    ids = torch.tensor([first.prompt_ids(PROMPT)], device=device)
    head = ScriptedHead(model, len(tokenizer), first_token(tokenizer, "."), first_token(tokenizer, " The"),
                        args.sentence_tokens)
    results: dict[str, list] = {}

    def looped(name, e, tokens):
        def run():
            head.writing(True)
            try:
                out = e.generate(PROMPT, max_new_tokens=tokens)
            finally:
                head.writing(False)
            results.setdefault(name, []).append(out)
            return out.token_ids
        return run

    def make_runs(tokens: int) -> dict:
        runs = {"hf_generate": lambda: hf_greedy(model, ids, tokens)}
        for kv in args.kv_caches:
            suffix = "" if kv == "dynamic" else f"_{kv}"
            for name, units in ((f"ewe_k0{suffix}", []), (f"ewe_k{k}{suffix}", passages[:k])):
                runs[name] = lambda e=plain[kv], units=units: e.generate(PROMPT, passages=units,
                                                                         max_new_tokens=tokens).token_ids
        for kv in args.kv_caches:
            name = f"ewe_loop_k{k}" + ("" if kv == "dynamic" else f"_{kv}")
            runs[name] = looped(name, loops[kv], tokens)
        return runs

    try:
        with eos_masked(model, first.stop_ids):
            for fn in make_runs(min(n, WARMUP_TOKENS)).values():  # kernels, allocator, the units' encodings
                fn()
            results.clear()
            bandwidth = copy_bandwidth(copy_buffers(device, 1024 if device.type == "cuda" else 64),
                                       10 if device.type == "cuda" else 3)
            times, counts, tokens = time_interleaved(make_runs(n), args.repeats)
    finally:
        head.remove()
    report = _report(args, model, tokenizer, device, bandwidth, times, counts, tokens, results, unit_tokens)
    _print(report)
    if args.json:
        _write_json(Path(args.json), report)
    return 0 if not report["problems"] else _fail(report["problems"])


def _fail(problems: list[str]) -> int:
    for p in problems:
        print(f"ewe bench e2e: {p}", file=sys.stderr)
    return 1


def _report(args, model, tokenizer, device, bandwidth, times, counts, tokens, results, unit_tokens) -> dict:
    """Every figure, as printed and written to --json; `problems` says what makes a ratio meaningless."""
    import transformers

    from ..ops import dispatch

    total, per_step = weight_bytes(model)
    limit = bandwidth * 1e9 / per_step  # tokens/s at batch 1 if a step cost only its weights' streaming
    plain = [name for name in times if not name.startswith("ewe_loop")]
    problems = []
    try:
        check_equal_counts({f"{name} (repeat {i + 1})": c for name in plain for i, c in enumerate(counts[name])},
                           args.tokens)
    except UnequalCounts as e:
        problems.append(str(e))
    base = args.tokens / statistics.median(times["hf_generate"])
    runs = {}
    for name in plain:
        rate = args.tokens / statistics.median(times[name])
        twin = name.removesuffix("_static") if name.endswith("_static") else None
        same = [o for o in ([twin] if twin else []) + (["hf_generate"] if "_k0" in name else []) if o in tokens]
        runs[name] = {"tokens": counts[name], "median_s": statistics.median(times[name]), "tok_s": rate,
                      "vs_hf": rate / base, "of_limit": rate / limit,
                      "same_tokens_as": {o: tokens[name] == tokens[o] for o in same}}
    loops = {}
    for name, outs in results.items():
        stats = [o.stats for o in outs]
        decode_rate = statistics.median(s["decoded_tokens"] / s["decode_s"] for s in stats)
        counted = [{"refreshes": s["pauses_retrieval"], "memory_changes": sum(e["type"] == "memory" for e in o.trace),
                    "checks": s["checks"], "rejected": s["failed_checks"], "backtracks": s["backtracks"],
                    "candidates_decoded": s["candidates_decoded"]} for s, o in zip(stats, outs)]
        last = stats[-1]
        loops[name] = {"new_tokens": last["new_tokens"], "decoded_tokens": last["decoded_tokens"],
                       "candidate_tokens": last["candidate_tokens"], "wall_median_s": statistics.median(times[name]),
                       "decode_tok_s": decode_rate, "decode_vs_hf": decode_rate / base,
                       "decode_of_limit": decode_rate / limit, "counts": counted[-1], "counts_per_repeat": counted,
                       "answer_tok_s": last["new_tokens"] / statistics.median(times[name]),
                       "seconds": {key: last[key] for key in ("decode_s", "rewrite_s", "backtrack_s", "retrieve_s",
                                                              "encode_s", "check_s", "total_s")}}
        missing = [what for what in ("refreshes", "checks", "backtracks") if not all(c[what] for c in counted)]
        if missing:
            problems.append(f"{name} did no {', no '.join(missing)} in some repeat: it did not exercise EWE's loop")
    every_id = [t for ts in tokens.values() for t in ts] + [t for outs in results.values() for o in outs
                                                             for t in o.token_ids]
    if max(every_id) >= len(tokenizer):
        problems.append(f"token id {max(every_id)} >= the tokenizer's {len(tokenizer)} ids was written")
    targets = {}
    for key, target in TARGETS.get(args.layout, {}).items():
        name = f"ewe_k{args.units}_static" if f"ewe_k{args.units}_static" in runs else f"ewe_k{args.units}"
        value = runs[name][key]
        targets[f"{name} {key}"] = {"target": target, "value": value, "met": value >= target}
    c = model.config
    return {
        "layout": args.layout, "device": str(device), "dtype": args.dtype, "tokens": args.tokens,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "units": args.units, "unit_tokens": unit_tokens, "repeats": args.repeats, "kv_caches": args.kv_caches,
        "attention_impl": args.attention_impl,
        "attention_calls": dict(dispatch.used),  # kernel -> calls made from Python (CUDA graph replays uncounted)
        "torch": torch.__version__, "transformers": transformers.__version__,
        "model": {"layers": c.num_hidden_layers, "hidden": c.hidden_size, "heads": c.num_attention_heads,
                  "kv_heads": c.num_key_value_heads, "vocab": c.vocab_size,
                  "parameters": sum(p.numel() for p in model.parameters()), "parameter_bytes": total,
                  "bytes_read_per_step": per_step, "tied_head": bool(c.tie_word_embeddings)},
        "tokenizer": {"ids": len(tokenizer), "masked_ids": c.vocab_size - len(tokenizer)},
        "max_token_id": max(every_id), "scripted": {"sentence_tokens": args.sentence_tokens,
                                                    "reject_every": args.reject_every},
        "copy_gbps": bandwidth, "copy_convention": "dst.copy_(src) of one buffer, bytes read + written per second, "
        "median of repeats", "streaming_limit_tok_s": limit,
        "runs": runs, "loop": loops, "targets": targets, "problems": problems,
    }


def _print(r: dict) -> None:
    m, t = r["model"], r["tokenizer"]
    print(f"e2e: layout {r['layout']} ({m['layers']} layers, {m['heads']}/{m['kv_heads']} heads, vocab {m['vocab']}, "
          f"{m['parameters'] / 1e9:.2f}B random parameters), {r['dtype']} on {r['device_name']}, {r['tokens']} new "
          f"tokens, k={r['units']} units of M={r['unit_tokens']}, {r['repeats']} repeats interleaved")
    print(f"vocabulary: the tokenizer has {t['ids']} ids; the head computes all {m['vocab']} logits and the "
          f"{t['masked_ids']} ids beyond the tokenizer's are masked (-inf), highest id written {r['max_token_id']}; "
          "end-of-sequence masked in every run")
    print(f"streaming limit: {m['bytes_read_per_step'] / 1e9:.3f} GB of weights read per batch-1 step (all "
          f"{m['parameter_bytes'] / 1e9:.3f} GB but the input embedding's unread rows) / device copy "
          f"{r['copy_gbps']:.1f} GB/s (read + written) = {r['streaming_limit_tok_s']:.1f} tokens/s")
    print(f"{'run':<22}{'tokens':>7}{'median s':>10}{'tok/s':>9}{'vs hf':>8}{'of limit':>9}  same tokens as")
    for name, x in r["runs"].items():
        same = ", ".join(f"{o}: {'yes' if v else 'NO'}" for o, v in x["same_tokens_as"].items()) or "-"
        print(f"{name:<22}{statistics.median_low(x['tokens']):>7}{x['median_s']:>10.3f}{x['tok_s']:>9.2f}"
              f"{x['vs_hf']:>8.2f}{x['of_limit']:>9.1%}  {same}")
    print("  hf_generate: HF generate, eager, sdpa attention, greedy; ewe_kN: EWE.generate with N memory units, "
          "no pauses (plain decode, what the 5x target is about); _static: static KV cache, steps replayed as a "
          "CUDA graph on CUDA; every run above decodes exactly the same number of tokens")
    print(f"{'loop run':<22}{'new':>5}{'decoded':>8}{'cand':>6}{'refresh':>8}{'checks':>7}{'reject':>7}"
          f"{'backtr':>7}{'wall s':>8}{'dec tok/s':>10}{'vs hf':>7}{'of limit':>9}")
    for name, x in r["loop"].items():
        c = x["counts"]
        print(f"{name:<22}{x['new_tokens']:>5}{x['decoded_tokens']:>8}{x['candidate_tokens']:>6}{c['refreshes']:>8}"
              f"{c['checks']:>7}{c['rejected']:>7}{c['backtracks']:>7}{x['wall_median_s']:>8.2f}"
              f"{x['decode_tok_s']:>10.2f}{x['decode_vs_hf']:>7.2f}{x['decode_of_limit']:>9.1%}")
    print("  ewe_loop: EWE.generate with the controller (refresh every sentence, a check every 8 tokens, 4 candidate "
          "rewrites per rejected sentence) on scripted stand-ins (datastore, checker, sentence writer: speed only); "
          "dec tok/s = the answer's decoded tokens / its decode seconds (stats.decode_s: steps and sampling, "
          "pauses, checks and candidates excluded); wall s: the whole call, all of it; counts of the last repeat")
    for name, x in r["targets"].items():
        print(f"target {name} >= {x['target']}: {x['value']:.2f} {'met' if x['met'] else 'NOT met'}"
              + ("" if r["device"].startswith("cuda") else " (not on a GPU: not what the target is about)"))


def _write_json(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
