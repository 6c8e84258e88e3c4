"""Measure how well the model reads its working memory, against the same passages in its prompt.

For Wikipedia summaries: the mean negative log-likelihood (nats/token) of the article's
second sentence as the answer to "Tell me about TITLE.", with the summary (plus
`--distractors` other summaries) held in memory units, or prepended to the prompt as text
(retrieval-augmented prompting), or absent. Lower is better; the "gap" is memory minus
prompt, the loss the model pays for reading a passage through eq. 1's merge instead of its
prompt. Memory variants, cheapest first (DESIGN.md section 6):

  - the start token at the head of every unit (`memory.unit_start_token`) or not, in which
    case the context's own start token is the one sink every unit pass shares;
  - APE's training-free read-out (`memory.temperature` T, `memory.lse_scale` S): memory
    logits divided by T, the memory group's log-sum-exp multiplied by T * S.

  - the memory adapter (`ewe train memory`, `model.memory_adapter`): units encoded by the
    adapted model; `--adapter auto` is the shipped one.

Titles come from the splits `ewe train memory` never trains on (ewe/data/splits.py): the read-out
is chosen on "dev" titles and reported on "test" titles, so the figure is not fitted to the
passages it is reported on.

    python benchmarks/memory_vs_prompt.py [--n 24] [--distractors 0] [--unit-tokens 128] [--adapter auto]
                                          [--no-search] [--out results.json]

`--no-search` skips the development split's read-out search (and its rows); `--out` writes
every row's per-title values and the gaps with 95% paired-bootstrap intervals as JSON.
"""
import argparse
import json
import random
import statistics

import pysbd
import torch

from ewe import EWE
from ewe.data.wiki import passage, summaries
from ewe.engine import DecodingSession
from ewe.memory import UnitEncoder, WorkingMemory
from ewe.training.memory_data import titles_of

TEMPERATURES = (1.0, 0.9, 0.8, 0.7, 0.5)
SCALES = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5)


def nll(ewe, prompt_ids, target_ids, state, offset):
    session = DecodingSession(ewe.model, state, offset, "fused")
    logits = [session.prefill(torch.tensor([prompt_ids]))]
    for tok in target_ids[:-1]:
        logits.append(session.step(torch.tensor([tok])))
    logprobs = torch.log_softmax(torch.cat(logits).float(), -1)
    return -logprobs[torch.arange(len(target_ids)), torch.tensor(target_ids)].mean().item()


class Cases:
    """(title, passages, target ids, question ids) per title: the article first, then distractors."""

    def __init__(self, ewe, titles, pool, distractors, seed):
        seg = pysbd.Segmenter(language="en", clean=False)
        rng = random.Random(seed)
        self.items = []
        for title in titles:
            others = rng.sample([t for t in pool if t != title], distractors)
            texts = [passage(title)] + [passage(t) for t in others]
            target = seg.segment(summaries()[title]["extract"])[1].strip()
            target_ids = ewe.tokenizer(" " + target, add_special_tokens=False)["input_ids"][:40]
            self.items.append((title, texts, target_ids))


def measure(ewe, cases, unit_tokens, where, start_token=True, temperature=1.0, lse_scale=1.0, unit_model=None):
    """Mean NLL per case for one condition: where = none | prompt | memory (units encoded by
    `unit_model`, default the generator itself)."""
    encoder = UnitEncoder(unit_model or ewe.model, ewe.tokenizer, unit_tokens, start_token=start_token)
    out = []
    for title, texts, target_ids in cases.items:
        question = f"Tell me about {title}."
        if where == "none":
            out.append(nll(ewe, ewe.prompt_ids(question), target_ids, None, 0))
        elif where == "prompt":
            out.append(nll(ewe, ewe.prompt_ids(ewe.prompt_with_passages(question, texts)), target_ids, None, 0))
        else:
            memory = WorkingMemory(encoder, len(texts), 0, temperature, lse_scale)
            memory.add(texts)
            out.append(nll(ewe, ewe.prompt_ids(question), target_ids, memory.state(), unit_tokens))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=24, help="titles per split (dev and test)")
    ap.add_argument("--distractors", type=int, default=0, help="other summaries held beside the article")
    ap.add_argument("--unit-tokens", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--adapter", default=None, help='a memory adapter folder, or "auto" (the shipped one): '
                    "adds the row of units encoded by the adapted model")
    ap.add_argument("--no-search", action="store_true", help="skip the read-out search on the development split")
    ap.add_argument("--out", help="write the rows and gaps as JSON")
    args = ap.parse_args()
    ewe = EWE.from_config(**{"memory.unit_tokens": args.unit_tokens, "model.memory_adapter": "none"})
    adapted = reader = None
    if args.adapter:
        with_adapter = EWE.from_config(**{"memory.unit_tokens": args.unit_tokens, "model.memory_adapter": args.adapter})
        if with_adapter.runtime.memory_adapter is None:
            raise SystemExit(f"--adapter {args.adapter}: no adapter for this model and unit layout")
        adapted = with_adapter.runtime.unit_model
        reader = with_adapter if with_adapter.runtime.memory_adapter.scope == "all" else ewe  # who decodes
    seg = pysbd.Segmenter(language="en", clean=False)
    pools = {which: sorted(t for t in titles_of(which) if len(seg.segment(summaries()[t]["extract"])) >= 3)
             for which in ("dev", "test")}
    drawn = {which: random.Random(args.seed).sample(pool, min(args.n, len(pool))) for which, pool in pools.items()}
    dev = Cases(ewe, drawn["dev"], pools["dev"], args.distractors, args.seed)
    held = Cases(ewe, drawn["test"], pools["test"], args.distractors, args.seed + 1)
    M = args.unit_tokens

    def mean(vals):
        return statistics.mean(vals)

    best_t = best_s = start = None
    if not args.no_search:
        # 1. choose on the development split: the sink, then T at S = 1, then S at the best T
        print(f"development split ({args.n} titles, {args.distractors} distractor(s)): mean NLL, nats/token", flush=True)
        sink = {flag: mean(measure(ewe, dev, M, "memory", start_token=flag)) for flag in (True, False)}
        for flag, v in sink.items():
            print(f"  memory, {'a start token per unit' if flag else 'one shared sink (no unit start token)'}: {v:.3f}", flush=True)
        start = min(sink, key=sink.get)
        by_t = {1.0: sink[start]}
        for t in TEMPERATURES[1:]:
            by_t[t] = mean(measure(ewe, dev, M, "memory", start, t, 1.0))
            print(f"  T={t:<4} S=1.0  {by_t[t]:.3f}", flush=True)
        best_t = min(by_t, key=by_t.get)
        by_s = {1.0: by_t[best_t]}
        for s in SCALES:
            if s != 1.0:
                by_s[s] = mean(measure(ewe, dev, M, "memory", start, best_t, s))
                print(f"  T={best_t:<4} S={s:<4} {by_s[s]:.3f}", flush=True)
        best_s = min(by_s, key=by_s.get)
        print(f"  chosen: start token per unit {start}, T={best_t}, S={best_s}")

    # 2. report on the test split
    rows = {
        "no memory": measure(ewe, held, M, "none"),
        "passages in the prompt": measure(ewe, held, M, "prompt"),
        "memory (eq. 1, start token per unit)": measure(ewe, held, M, "memory", True),
    }
    if not args.no_search:
        rows["memory (eq. 1, one shared sink)"] = measure(ewe, held, M, "memory", False)
        rows[f"memory (APE T={best_t} S={best_s}, start token {start})"] = measure(ewe, held, M, "memory", start,
                                                                                 best_t, best_s)
    if adapted is not None:
        rows["memory (eq. 1, adapter)"] = measure(reader, held, M, "memory", True, unit_model=adapted)
    prompt = mean(rows["passages in the prompt"])
    base_gap = mean(rows["memory (eq. 1, start token per unit)"]) - prompt
    print(f"\ntest split ({args.n} titles), target = the summary's second sentence (<= 40 tokens), M={M}")
    print(f"{'condition':<52}{'mean NLL':>10}{'median':>9}{'gap':>8}{'gap / eq. 1 gap':>17}")
    for name, vals in rows.items():
        gap = mean(vals) - prompt
        share = f"{gap / base_gap:>17.2f}" if name.startswith("memory") and base_gap > 0 else f"{'':>17}"
        print(f"{name:<52}{mean(vals):>10.3f}{statistics.median(vals):>9.3f}{gap:>8.3f}{share}")
    if args.out:
        gaps = {name: {"gap": mean(vals) - prompt, "ci95": paired_interval(vals, rows["passages in the prompt"], args.seed)}
                for name, vals in rows.items() if name.startswith("memory")}
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"n": args.n, "distractors": args.distractors, "unit_tokens": M, "adapter": args.adapter,
                       "titles": [t for t, _, _ in held.items], "rows": rows, "gaps": gaps}, f, indent=1)
        print(f"wrote {args.out}")


def paired_interval(a, b, seed, draws=2000):
    """95% bootstrap interval of mean(a - b) over the titles (paired)."""
    diffs = [x - y for x, y in zip(a, b)]
    rng = random.Random(seed)
    means = sorted(statistics.mean(rng.choices(diffs, k=len(diffs))) for _ in range(draws))
    return [round(means[int(0.025 * draws)], 4), round(means[int(0.975 * draws) - 1], 4)]


if __name__ == "__main__":
    main()
