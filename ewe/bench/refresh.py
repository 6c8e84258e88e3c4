"""`ewe bench refresh`: what a memory refresh and a backtrack cost, against the re-prefill
that a re-prompting method (FLARE, DRAGIN) pays for the same change.

The context is a real prompt followed by G "generated" tokens: Wikipedia text prefilled
rather than decoded, since only the cache's length matters for these costs. The memory
holds k units of M tokens; one new passage arrives.

* EWE refresh: `WorkingMemory.add` encodes the one new unit (one batched `UnitEncoder`
  forward), `state()` assembles the MemoryState, `set_memory` keeps the context's cache,
  then the next decoding step. The memory keeps all k + 1 units, so EWE reads the same
  passages the re-prompter puts in its prompt.
* Re-prompt: one prefill from scratch of the prompt with the k + 1 passages as text
  (`EWE.prompt_with_passages`) plus the G tokens (the last one included), the cheapest way
  a re-prompting method gets the same thing: the logits of the next token.
* Unchanged / reused unit: re-adding a passage already in memory, and adding one that
  left memory but is still in the encoder's reuse cache. Neither should run the model;
  the report counts model forwards and unit encodings per variant to show it.
* Backtrack: `truncate` by one sentence (a cache crop + the one decoding step that gives
  the next token's logits under the new memory, which a rewrite needs anyway), against a
  prefill from scratch of the context up to that point (same memory), which ends with the
  same logits. That pair is the headline ratio: both sides end where a rewrite can begin.
  `DecodingSession.crop` alone (the truncation, which computes no logits) is timed too and
  reported on a secondary line only; it is not a like-for-like comparison.

Every headline ratio (and target) compares two ways of reaching the same point: the next
token's logits after the same tokens, with the same passages available (in memory for EWE,
as text for the re-prompt).

Each repeat runs every variant once, interleaved, on fresh passages (so "new" is new);
a warm-up repeat comes first; medians are reported.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from collections import defaultdict
from contextlib import contextmanager

import torch

from ..argtypes import non_negative_int, positive_int
from ..engine import DecodingSession
from ..memory.encoder import UnitEncoder
from ..memory.units import unit_id
from ..memory.working_memory import WorkingMemory

PROMPT, SUBJECT = "Tell me a bio of Albert Einstein.", "Albert Einstein"
# (generated tokens the target is judged at or None for every row, minimum ratio)
# Both are equal-work ratios (each side ends with the next token's logits).
TARGETS = {"reprompt_over_refresh": (512, 6.0), "reprefill_over_backtrack": (512, 10.0)}


def add_bench_arguments(p) -> None:
    p.add_argument("--generated", type=positive_int, nargs="+", default=[128, 512, 1024],
                   help="generated tokens of context (default 128 512 1024)")
    p.add_argument("--units", type=non_negative_int, default=4, help="k: units in memory before the new one arrives")
    p.add_argument("--repeats", type=positive_int, default=5, help="timed repeats (after one warm-up)")
    p.add_argument("--sentence-tokens", type=positive_int, default=25, help="tokens one backtrack removes")
    p.add_argument("--threads", type=positive_int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                   help="write the report as JSON to FILE; alone, print JSON instead of the table")


class _Meter:
    """Times named blocks and counts the model forwards and unit encodings inside each."""

    def __init__(self, model, encoder: UnitEncoder):
        self.encoder = encoder
        self.device = next(model.parameters()).device
        self.times: dict[str, list[float]] = defaultdict(list)
        self.forwards: dict[str, int] = {}
        self.encoded: dict[str, int] = {}
        self.calls = 0
        self._hook = model.base_model.register_forward_pre_hook(self._count)

    def _count(self, *_):
        self.calls += 1

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextmanager
    def __call__(self, name: str):
        calls, encoded = self.calls, self.encoder.stats.encoded
        self._sync()
        start = time.perf_counter()
        yield
        self._sync()
        self.times[name].append(time.perf_counter() - start)
        self.forwards[name] = max(self.forwards.get(name, 0), self.calls - calls)
        self.encoded[name] = max(self.encoded.get(name, 0), self.encoder.stats.encoded - encoded)

    def close(self):
        self._hook.remove()


def _wiki_material(tokenizer, passages: int, passage_tokens: int, generated_tokens: int) -> tuple[list[str], list[int]]:
    """`passages` distinct Wikipedia summaries cut to exactly `passage_tokens` tokens (so every
    unit is a full M), and the token ids of other summaries, the subject's first, as generated text."""
    from ..data.wiki import passage, summaries

    chosen, rest = [], []
    for title in summaries():
        if title == SUBJECT:
            continue
        text = passage(title)
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        if len(chosen) < passages and len(enc["input_ids"]) >= passage_tokens:
            cut = text[: enc["offset_mapping"][passage_tokens - 1][1]]
            while len(tokenizer(cut, add_special_tokens=False)["input_ids"]) > passage_tokens:
                cut = cut[:-1]
            chosen.append(cut)
        elif len(chosen) == passages:
            rest.append(text)
        if len(chosen) == passages and sum(len(t) for t in rest) > 8 * generated_tokens:
            break
    ids = tokenizer(" ".join([passage(SUBJECT)] + rest), add_special_tokens=False)["input_ids"]
    if len(chosen) < passages or len(ids) < generated_tokens:
        raise ValueError(f"the embedded Wikipedia holds too little text for {passages} passages "
                         f"of {passage_tokens} tokens and {generated_tokens} generated tokens")
    return chosen, ids[:generated_tokens]


def _repeat(ewe, meter, encoder, prompt_ids, generated, old, new, sentence_tokens):
    """One interleaved round of every variant at one context length."""
    M, impl = encoder.unit_tokens, ewe.config.model.attention_impl
    next_id = torch.tensor([generated[-1]])
    context = torch.tensor([prompt_ids + generated[:-1]])
    memory = WorkingMemory(encoder, retrieval_units=len(old) + 1, feedback_units=0)
    memory.add(old)
    session = DecodingSession(ewe.model, memory.state(), M, impl)
    session.prefill(context)

    with meter("refresh_encode"):
        memory.add([new])
    with meter("refresh_state"):
        session.set_memory(memory.state())  # keeps the context's cache
    with meter("refresh_step"):  # the next token's logits, under the new memory
        refreshed = session.step(next_id)
    with meter("unchanged"):  # already in memory: nothing to encode, the state is unchanged
        memory.add([old[-1]])
        session.set_memory(memory.state())
    memory.remove(unit_id(new))  # out of memory, still in the encoder's reuse cache
    with meter("reused"):
        memory.add([new])
        session.set_memory(memory.state())

    cut = session.length - sentence_tokens
    with meter("backtrack_crop"):  # the truncation alone: no logits (secondary figure)
        session.crop(cut)
    session.step(context[:, cut])  # put one token back, so the next variant removes the same sentence
    with meter("backtrack"):  # truncation + the one step that reads the new memory: the next logits
        logits = session.truncate(cut)
    with meter("backtrack_reprefill"):  # the same tokens from scratch: the same next logits
        again = DecodingSession(ewe.model, memory.state(), M, impl).prefill(session.tokens)
    _same_shape(logits, again, "backtrack")

    text_prompt = ewe.prompt_ids(ewe.prompt_with_passages(PROMPT, old + [new]))
    reprompt = torch.tensor([text_prompt + generated])  # the last token included: one forward
    with meter("reprompt"):
        logits = DecodingSession(ewe.model, None, 0, impl).prefill(reprompt)
    _same_shape(logits, refreshed, "refresh")
    return {"context_tokens": context.shape[1], "reprompt_tokens": reprompt.shape[1],
            "backtrack_tokens": cut}


def _same_shape(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    """Both sides of a ratio must end with the next token's logits for the same rows."""
    if a is None or b is None or a.shape != b.shape:
        raise RuntimeError(f"{what}: the two sides did not both compute the next token's logits "
                           f"({None if a is None else tuple(a.shape)} vs {None if b is None else tuple(b.shape)})")


def refresh_bench(ewe, generated=(128, 512, 1024), units: int = 4, repeats: int = 5, sentence_tokens: int = 25) -> dict:
    """Run the benchmark described in the module docstring on `ewe`; return the report (times in ms)."""
    mem = ewe.config.memory
    if max(generated) + (units + 2) * mem.unit_tokens + 64 > ewe.max_positions:  # the re-prompt's context, roughly
        raise ValueError(f"generated={max(generated)} with {units + 1} passages of M={mem.unit_tokens} exceeds "
                         f"the model's {ewe.max_positions} positions")
    # A private encoder with the configured settings: "new" passages must really be new to it.
    encoder = UnitEncoder(ewe.model, ewe.tokenizer, mem.unit_tokens, mem.unit_start_token, mem.encoder_cache_units)
    M = mem.unit_tokens
    texts, gen_ids = _wiki_material(ewe.tokenizer, units + 1 + repeats * len(generated),
                                    M - int(mem.unit_start_token), max(generated) + 1)
    old, fresh = texts[:units], iter(texts[units:])
    prompt_ids = ewe.prompt_ids(PROMPT)
    meter = _Meter(ewe.model, encoder)
    rows = []
    try:
        _repeat(ewe, meter, encoder, prompt_ids, gen_ids[: min(generated) + 1], old, next(fresh), sentence_tokens)
        for g in generated:
            for counts in (meter.times, meter.forwards, meter.encoded):
                counts.clear()
            for _ in range(repeats):
                sizes = _repeat(ewe, meter, encoder, prompt_ids, gen_ids[: g + 1], old, next(fresh), sentence_tokens)
            t = meter.times
            t["refresh"] = [sum(x) for x in zip(t["refresh_encode"], t["refresh_state"], t["refresh_step"])]
            ms = {name: 1e3 * statistics.median(v) for name, v in t.items()}
            rows.append({
                "generated": g, **sizes, "ms": ms,
                "forwards": dict(meter.forwards), "encoded": dict(meter.encoded),
                # equal work: each side ends with the next token's logits
                "reprompt_over_refresh": ms["reprompt"] / ms["refresh"],
                "reprefill_over_backtrack": ms["backtrack_reprefill"] / ms["backtrack"],
                # secondary, NOT equal work: the crop computes no logits
                "reprefill_over_crop": ms["backtrack_reprefill"] / ms["backtrack_crop"],
            })
    finally:
        meter.close()
    verdicts = {}
    for ratio, (at, minimum) in TARGETS.items():
        for row in rows:
            if at is None or row["generated"] == at:
                verdicts[f"{ratio}@{row['generated']}"] = {"value": row[ratio], "target": minimum,
                                                           "met": row[ratio] >= minimum}
    return {
        "prompt": PROMPT, "prompt_tokens": len(prompt_ids), "M": M, "units": units, "new_units": 1,
        "repeats": repeats, "sentence_tokens": sentence_tokens, "dtype": ewe.config.model.dtype,
        "device": str(next(ewe.model.parameters()).device), "threads": torch.get_num_threads(),
        "rows": rows, "targets": verdicts,
    }


def run_refresh_bench(args, load_ewe) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    report = refresh_bench(load_ewe(args), args.generated, args.units, args.repeats, args.sentence_tokens)
    report["load_average"] = os.getloadavg()
    if args.json == "-":
        print(json.dumps(report, indent=2))
        return 0
    _print(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


def _print(r: dict) -> None:
    print(f"refresh vs re-prompt: prompt {r['prompt_tokens']} tokens + G generated; memory k={r['units']} units "
          f"of M={r['M']} + 1 new; backtrack {r['sentence_tokens']} tokens; median of {r['repeats']} interleaved "
          f"repeats after a warm-up; {r['dtype']}, {r['device']}, {r['threads']} threads, "
          f"load average {r['load_average'][0]:.1f}")
    print("equal work: every headline ratio compares two ways of reaching the next token's logits after the "
          "same tokens, with the same passages (EWE: in memory; re-prompt: as text)")
    cols = [("refresh", "refresh"), ("encode", "refresh_encode"), ("state", "refresh_state"),
            ("step", "refresh_step"), ("re-prompt", "reprompt"), ("crop+step", "backtrack"),
            ("re-prefill", "backtrack_reprefill"), ("unchanged", "unchanged"), ("reused", "reused"),
            ("crop alone", "backtrack_crop")]
    print(f"{'G':>5} {'ctx':>5} {'reprompt':>8} |" + "".join(f"{c:>11}" for c, _ in cols)
          + f" | {'re-prompt/':>10} {'re-prefill/':>11} | {'re-prefill/':>11}")
    print(f"{'':>5} {'tok':>5} {'tok':>8} |" + "".join(f"{'ms':>11}" for _ in cols)
          + f" | {'refresh':>10} {'crop+step':>11} | {'crop alone':>11}")
    for row in r["rows"]:
        ms = row["ms"]
        print(f"{row['generated']:>5} {row['context_tokens']:>5} {row['reprompt_tokens']:>8} |"
              + "".join(f"{ms[k]:>11.2f}" for _, k in cols)
              + f" | {row['reprompt_over_refresh']:>10.1f} {row['reprefill_over_backtrack']:>11.1f}"
              f" | {row['reprefill_over_crop']:>11.0f}")
    print("re-prompt/refresh: one prefill of the prompt with the k+1 passages as text and the G tokens, against "
          "encoding the new unit + rebuilding the memory view + one decoding step (the context's cache is kept)")
    print("re-prefill/crop+step: a prefill of the context up to the backtrack point (same memory), against a cache "
          "crop + the one decoding step that gives the same next-token logits (DecodingSession.truncate)")
    print("re-prefill/crop alone (secondary, NOT equal work): the crop computes no logits; a rewrite needs the step")
    f, e = r["rows"][0]["forwards"], r["rows"][0]["encoded"]
    print("model forwards (unit encodings): " + ", ".join(f"{k} {f[k]} ({e[k]})" for k in
          ("refresh_encode", "refresh_step", "reprompt", "backtrack", "backtrack_reprefill", "unchanged", "reused",
           "backtrack_crop")))
    for name, v in r["targets"].items():
        what = ("refresh >= {t:g}x cheaper than the re-prompt's prefill at G={g}" if name.startswith("reprompt")
                else "backtrack (crop + step) >= {t:g}x cheaper than a re-prefill at G={g}")
        print(f"target: {what.format(t=v['target'], g=name.split('@')[1])}: {v['value']:.1f}x -> "
              f"{'met' if v['met'] else 'NOT met'}")
