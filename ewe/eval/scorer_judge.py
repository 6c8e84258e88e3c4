"""The scorer's own verdict: a judge trained apart from the loop's, on claims cut the way the
scorer cuts them.

Why: the default loop checks its sentences with the shipped judge (minilm-cross) and vetoes with
the alignment checker's span rules; a score that judged claims with either would grade the loop
by the rules it was steered by. The scorer judge (`scorer-cross`) is trained from the bare
MiniLM (not from the loop's weights) on the judge data pipeline (`ewe judge data`) with, as its
supported claims in the generator's place, the atomic claims this scorer's extractor cuts from
*train*-split article sentences (`python -m ewe.eval.scorer_judge claims`): each claim is stated by
the sentence it was cut from, so its label holds by construction, and the pipeline adds its
contrasts (an alteration the passage contradicts; the passage without that sentence).

Shared with the loop, by necessity: the MiniLM base, the judge network class and its passage
windows (ewe/judge/model.py, checker.py), the datastore the evidence comes from, and the
rule-made alterations of the judge data. Not shared: the loop judge's weights, its threshold,
the veto, the alignment checker's spans, the rule claim splitter.

    python -m ewe.eval.scorer_judge claims --out runs/scorer-judge/atomic.jsonl
    ewe judge data --out runs/scorer-judge/data --no-prefixes --paraphrases runs/scorer-judge/atomic.jsonl \\
        ewe/judge/labelled/model_written.jsonl ewe/judge/labelled/answers.jsonl
    ewe judge train --data runs/scorer-judge/data --out runs/scorer-judge/w --max-train 3000 --no-bf16
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from ..data import wiki
from ..data.splits import split_of
from ..files import atomic_write
from ..verify.text import split_sentences

SCORER_JUDGE = "scorer-cross"


def atomic_training_claims(summaries: dict, n_articles: int = 500, sentences_per_article: int = 3,
                           max_claims: int = 1500, seed: int = 73) -> list[dict]:
    """Rows for `ewe judge data --paraphrases`: atomic claims of train-split articles' sentences,
    labelled supported (each is stated by its sentence), with the sentence's index in the
    article as the judge data splits it."""
    from .atomic_facts import atomic_claims
    from .claim_checkers import answer_subject

    titles = sorted(t for t, e in summaries.items() if split_of(t) == "train" and len(e.get("extract") or "") >= 200)
    rng = random.Random(seed)
    rows = []
    for title in rng.sample(titles, min(n_articles, len(titles))):
        sentences = split_sentences(" ".join(summaries[title]["extract"].split()))
        subject = answer_subject(title, "")
        for si, sentence in enumerate(sentences[:sentences_per_article]):
            for j, claim in enumerate(dict.fromkeys(c.text for c in atomic_claims(sentence, subject))):
                rows.append({"id": f"atomic:{title}:{si}:{j}", "title": title, "claim": claim,
                             "sentence_index": si, "label": "supported", "source": sentence})
        if len(rows) >= max_claims:
            break
    return rows[:max_claims]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ewe.eval.scorer_judge", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("claims", help="atomic claims of train-split article sentences (JSONL for ewe judge data)")
    c.add_argument("--out", required=True)
    c.add_argument("--articles", type=int, default=500)
    c.add_argument("--max-claims", type=int, default=1500)
    c.add_argument("--seed", type=int, default=73)
    args = parser.parse_args(argv)
    rows = atomic_training_claims(wiki.summaries(), args.articles, max_claims=args.max_claims, seed=args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(Path(args.out), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} claims from {len({r['title'] for r in rows})} train-split articles -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
