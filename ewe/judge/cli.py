"""`ewe judge data | train | eval`: make the judge's training data, train it, measure it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..argtypes import command_group, non_negative_int, positive_float, positive_int, seed, share


def cmd_data(args) -> int:
    from ..data import wiki
    from .data import build, prefixes, read, write

    paraphrases = None
    if args.paraphrases:
        paraphrases = [row for path in args.paraphrases for row in read(Path(path))]
    examples = build(wiki.summaries(), seed=args.seed, per_article=args.per_article, limit=args.limit,
                     paraphrases=paraphrases, auto_labels=args.auto_labels)
    manifest = write(examples, Path(args.out), args.seed, prefixes(examples, args.seed) if args.prefixes else None)
    print(json.dumps(manifest["files"], indent=2))
    return 0


def cmd_paraphrase(args) -> int:
    import random

    import torch

    from ..data import wiki
    from .data import load_articles
    from .paraphrases import Labeller, Paraphraser, generate

    torch.set_num_threads(args.threads)
    entries = sorted((e for e in wiki.summaries().values() if len(e.get("extract") or "") >= 200),
                     key=lambda e: e["title"])
    chosen = random.Random(args.seed).sample(entries, min(args.articles, len(entries)))
    articles = load_articles({e["title"]: e for e in chosen})
    paraphraser = Paraphraser(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, seed=args.seed)
    labeller = Labeller(max_novel=args.max_novel, min_cosine=args.min_cosine)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    print(json.dumps(generate(articles, out, args.per_article, args.seed, paraphraser, labeller), indent=2))
    return 0


def cmd_train(args) -> int:
    if args.prefix:
        return cmd_train_prefix(args)
    if args.source_frames:
        raise SystemExit("ewe judge train: --source-frames is for the prefix judge (--prefix)")
    from .model import JudgeSpec
    from .train import TrainConfig, train

    spec = JudgeSpec(split=args.split or 0, trained_layers=args.trained_layers or 6, claim_only=args.claim_only, bf16=args.bf16)
    cfg = TrainConfig(spec=spec, seed=args.seed, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                      max_train=args.max_train, max_test=args.max_test, threads=args.threads, init=args.init)
    manifest = train(Path(args.data), Path(args.out), cfg)
    print(json.dumps(manifest["held_out"], indent=2))
    if args.claim_only or not args.release_check:
        return 0
    from .binding import release_check

    check = release_check(str(Path(args.out)))
    print(json.dumps({"release_check": check}, indent=2))
    if not check["passed"]:
        print(f"ewe judge train: {args.out} reads whom a passage is about worse than the shipped judge "
              f"(binding, plain passages: {check['binding_plain']}); not fit to ship", file=sys.stderr)
        return 1
    return 0


def cmd_train_prefix(args) -> int:
    """The prefix judge (PrefixNLI): the embedded generator's top layer(s) and a head, on prefix labels."""
    from .prefix_model import PrefixJudgeSpec
    from .prefix_train import PrefixTrainConfig, train

    for flag, given in (("--split", args.split), ("--claim-only", args.claim_only), ("--init", args.init)):
        if given:
            raise SystemExit(f"ewe judge train --prefix: {flag} is for the MiniLM judge")
    cfg = PrefixTrainConfig(spec=PrefixJudgeSpec(trained_layers=args.trained_layers or 1), seed=args.seed,
                            epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                            max_train=args.max_train, max_test=args.max_test, threads=args.threads,
                            source_frames=args.source_frames)
    manifest = train(Path(args.data), Path(args.out), cfg)
    print(json.dumps(manifest["held_out"], indent=2))
    return 0


def cmd_eval(args) -> int:
    from .evaluate import evaluate_generated, record

    judges = args.judge or ["minilm-cross", "alignment"]
    report = evaluate_generated(Path(args.labelled), judges=judges)
    print(json.dumps(report, indent=2))
    if args.record:
        for name, summary in report.items():
            print(f"recorded in {record(name, summary, args.labelled)}")
    return 0


def cmd_operating_point(args) -> int:
    from .data import read
    from .evaluate import (at_threshold, distinct, make_checker, operating_point, record_operating_point,
                           rewrite_rules, roc, scored)

    rows = read(Path(args.labelled))
    missing = sorted({r["id"] for r in rows if r.get("split") not in ("validation", "test")})
    if missing:
        raise SystemExit(f"{args.labelled}: {len(missing)} rows without split validation/test (first: {missing[0]}); "
                         "`python -m ewe.data.generated_sentences` writes it")
    fc = make_checker(args.judge)
    every = {s: scored(fc, [r for r in rows if r["split"] == s]) for s in ("validation", "test")}
    items = {s: v if args.every_occurrence else distinct(v) for s, v in every.items()}
    point = operating_point(items["validation"], args.false_accept_cost)
    report = {"judge": args.judge, "chosen_on": "validation", "sentences": "every occurrence" if args.every_occurrence
              else "distinct", **{k: point[k] for k in ("threshold", "false_accept_cost")},
              "validation": point, "test": at_threshold(items["test"], point["threshold"]),
              "test_at_0.5": at_threshold(items["test"], 0.5),
              "test_rewrite_rules": rewrite_rules(items["test"], point["threshold"]),
              "roc": {s: roc(v) for s, v in items.items()}}
    print(json.dumps({k: v for k, v in report.items() if k != "roc"}, indent=2))
    if args.roc:
        print(json.dumps(report["roc"], indent=1))
    if args.record:
        print(f"recorded in {record_operating_point(args.judge, report, args.labelled)}")
    return 0


def add_judge_commands(sub) -> None:
    jsub = command_group(sub, "judge", "the trained fact-checking judge: make its data, train it, measure it")

    d = jsub.add_parser("data", help="(evidence, claim, label) triples from the embedded Wikipedia, split by article")
    d.add_argument("--out", required=True, help="folder for train.jsonl, test.jsonl, prefixes.jsonl, manifest.json")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--per-article", type=positive_int, default=8, help="supported claims drawn per article (x2 altered)")
    d.add_argument("--limit", type=positive_int, help="only the first N articles (by title)")
    d.add_argument("--no-prefixes", dest="prefixes", action="store_false", help="skip prefixes.jsonl")
    d.add_argument("--paraphrases", nargs="+", help="model-written restatements (`ewe judge paraphrase`; the shipped "
                   "hand-labelled ones: ewe/judge/labelled/model_written.jsonl) or claims from answers "
                   "(ewe/judge/labelled/answers.jsonl): those with a reader's label, and their contrasts, join the data")
    d.add_argument("--auto-labels", action="store_true",
                   help="also take the restatements the consistency filter kept as supported (noisy: see docs/JUDGE.md)")
    d.set_defaults(func=cmd_data)

    p = jsub.add_parser("paraphrase", help="the embedded generator restates article sentences in its own words, "
                        "each kept or dropped by consistency with its source (for `ewe judge data --paraphrases`)")
    p.add_argument("--out", required=True, help="paraphrases.jsonl (appended; a rerun resumes)")
    p.add_argument("--articles", type=positive_int, default=800, help="articles drawn (seeded) from the summaries")
    p.add_argument("--per-article", type=positive_int, default=2, help="source sentences restated per article")
    p.add_argument("--batch-size", type=positive_int, default=16)
    p.add_argument("--max-new-tokens", type=positive_int, default=48)
    p.add_argument("--max-novel", type=non_negative_int, default=2, help="content words new to the passage allowed")
    p.add_argument("--min-cosine", type=positive_float, default=0.75, help="embedder cosine to the source required")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--threads", type=positive_int, default=2)
    p.set_defaults(func=cmd_paraphrase)

    t = jsub.add_parser("train", help="train the judge's upper layers and head (seeded, resumable)")
    t.add_argument("--data", required=True, help="a folder written by `ewe judge data`")
    t.add_argument("--out", required=True, help="folder for judge.safetensors, manifest.json and checkpoints")
    t.add_argument("--split", type=non_negative_int,
                   help="MiniLM layers run on claim and passage apart (0, the shipped design: a plain cross-encoder)")
    t.add_argument("--prefix", action="store_true",
                   help="train the prefix judge of PrefixNLI instead (the embedded generator's top layer and a head, "
                   "on every prefix of the claims; method prefixnli reads it)")
    t.add_argument("--trained-layers", type=positive_int,
                   help="top layers trained (MiniLM judge: 6, all, the shipped design; prefix judge: 1, as in the paper)")
    t.add_argument("--source-frames", type=share, default=0.0,
                   help="prefix judge: share of hypotheses put in a summary's lead-in (\"The article explains that "
                   "...\"), either label, so that PrefixNLI's summaries are read as claims (the shipped judge: 0.25)")
    t.add_argument("--claim-only", action="store_true", help="hide the evidence: the leak detector")
    t.add_argument("--no-release-check", dest="release_check", action="store_false",
                   help="skip the release check after training (by default the new judge's subject binding on plain "
                   "passages is measured beside the shipped judge's, and a lower figure fails the command, exit 1)")
    t.add_argument("--no-bf16", dest="bf16", action="store_false",
                   help="float32 matrix products always (by default bfloat16 autocast runs where the CPU has "
                   "AVX-512, ~1.7x faster, and float32 elsewhere, where bfloat16 is emulated and ~6x slower; "
                   "EWE_JUDGE_BF16=1/0 forces it)")
    t.add_argument("--seed", type=seed, default=0)
    t.add_argument("--epochs", type=positive_int, default=1)
    t.add_argument("--batch-size", type=positive_int, default=16)
    t.add_argument("--lr", type=positive_float, default=1e-4)
    t.add_argument("--max-train", type=positive_int, default=20000, help="train on N examples drawn (seeded) from train.jsonl")
    t.add_argument("--max-test", type=positive_int, default=4000, help="evaluate on N held-out examples")
    t.add_argument("--threads", type=positive_int, default=1,
                   help="torch threads (pinned: results depend on it; 1 avoids oversubscription next to other work)")
    t.add_argument("--init", help="start from this trained judge (name or folder; same design): continued training "
                   "on new data, with --max-train drawing the rest of the data as replay")
    t.set_defaults(func=cmd_train)

    e = jsub.add_parser("eval", help="balanced accuracy on the hand-labelled generated sentences")
    e.add_argument("--labelled", default="tests/data/judge/generated.jsonl")
    e.add_argument("--judge", action="append", help="alignment | alignment-atomic (the scorer's splitter) | a shipped judge (minilm-cross) | a judge folder (repeatable)")
    e.add_argument("--record", action="store_true",
                   help="write each judge's figure into its manifest (what `ewe eval` reports name)")
    e.set_defaults(func=cmd_eval)

    o = jsub.add_parser("operating-point", help="the judge's threshold, chosen on the hand-labelled validation split "
                        "for the loop's costs and measured on the test split (the ROC of both)")
    o.add_argument("--judge", default="minilm-cross", help="a shipped judge (minilm-cross) or a judge folder")
    o.add_argument("--labelled", default="tests/data/judge/generated.jsonl")
    o.add_argument("--false-accept-cost", type=positive_float, default=1.0,
                   help="the rate of wrong sentences kept, weighed against the rate of true ones rejected (a "
                   "backtrack and a candidate round each); 1: the best balanced accuracy")
    o.add_argument("--every-occurrence", action="store_true", help="count a sentence an answer repeats at each "
                   "occurrence (by default each article's sentence counts once)")
    o.add_argument("--roc", action="store_true", help="also print the ROC of both splits")
    o.add_argument("--record", action="store_true", help="write the point into the judge's manifest: the checker's "
                   "threshold when checker.judge_threshold is null")
    o.set_defaults(func=cmd_operating_point)

    from .binding import add_arguments, run

    b = jsub.add_parser("eval-binding", help="subject binding: balanced accuracy on claims checked against a passage "
                        "about someone else (tests/data/subject/binding.jsonl)")
    add_arguments(b)
    b.set_defaults(func=run)
