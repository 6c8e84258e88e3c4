"""`ewe judge data | train | eval`: make the judge's training data, train it, measure it."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..argtypes import command_group, non_negative_int, positive_float, positive_int, seed


def cmd_data(args) -> int:
    from ..data import wiki
    from .data import build, prefixes, write

    examples = build(wiki.summaries(), seed=args.seed, per_article=args.per_article, limit=args.limit)
    manifest = write(examples, Path(args.out), args.seed, prefixes(examples, args.seed) if args.prefixes else None)
    print(json.dumps(manifest["files"], indent=2))
    return 0


def cmd_train(args) -> int:
    from .model import JudgeSpec
    from .train import TrainConfig, train

    spec = JudgeSpec(split=args.split, trained_layers=args.trained_layers, claim_only=args.claim_only)
    cfg = TrainConfig(spec=spec, seed=args.seed, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                      max_train=args.max_train, max_test=args.max_test, threads=args.threads)
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


def add_judge_commands(sub) -> None:
    jsub = command_group(sub, "judge", "the trained fact-checking judge: make its data, train it, measure it")

    d = jsub.add_parser("data", help="(evidence, claim, label) triples from the embedded Wikipedia, split by article")
    d.add_argument("--out", required=True, help="folder for train.jsonl, test.jsonl, prefixes.jsonl, manifest.json")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--per-article", type=positive_int, default=8, help="supported claims drawn per article (x2 altered)")
    d.add_argument("--limit", type=positive_int, help="only the first N articles (by title)")
    d.add_argument("--no-prefixes", dest="prefixes", action="store_false", help="skip prefixes.jsonl")
    d.set_defaults(func=cmd_data)

    t = jsub.add_parser("train", help="train the judge's upper layers and head (seeded, resumable)")
    t.add_argument("--data", required=True, help="a folder written by `ewe judge data`")
    t.add_argument("--out", required=True, help="folder for judge.safetensors, manifest.json and checkpoints")
    t.add_argument("--split", type=non_negative_int, default=0,
                   help="MiniLM layers run on claim and passage apart (0, the shipped design: a plain cross-encoder)")
    t.add_argument("--trained-layers", type=positive_int, default=6, help="top layers trained (6: all, the shipped design)")
    t.add_argument("--claim-only", action="store_true", help="hide the evidence: the leak detector")
    t.add_argument("--seed", type=seed, default=0)
    t.add_argument("--epochs", type=positive_int, default=1)
    t.add_argument("--batch-size", type=positive_int, default=16)
    t.add_argument("--lr", type=positive_float, default=1e-4)
    t.add_argument("--max-train", type=positive_int, default=20000, help="train on N examples drawn (seeded) from train.jsonl")
    t.add_argument("--max-test", type=positive_int, default=4000, help="evaluate on N held-out examples")
    t.add_argument("--threads", type=positive_int, default=1,
                   help="torch threads (pinned: results depend on it; 1 avoids oversubscription next to other work)")
    t.set_defaults(func=cmd_train)

    e = jsub.add_parser("eval", help="balanced accuracy on the hand-labelled generated sentences")
    e.add_argument("--labelled", default="tests/data/judge/generated.jsonl")
    e.add_argument("--judge", action="append", help="alignment | a shipped judge (minilm-cross) | a judge folder (repeatable)")
    e.add_argument("--record", action="store_true",
                   help="write each judge's figure into its manifest (what `ewe eval` reports name)")
    e.set_defaults(func=cmd_eval)

    from ..eval.binding import add_arguments, run

    b = jsub.add_parser("eval-binding", help="subject binding: balanced accuracy on claims checked against a passage "
                        "about someone else (tests/data/subject/binding.jsonl)")
    add_arguments(b)
    b.set_defaults(func=run)
