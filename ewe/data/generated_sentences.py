"""Sentences the generator wrote, ready to label by hand (tests/data/judge/generated.jsonl).

`python -m ewe.data.generated_sentences RUN.jsonl [RUN.jsonl ...] --out unlabelled.jsonl` reads
`ewe run` outputs (the method is the file's stem) and writes one row per sentence as the
labelled set holds it (`ewe.verify.text.split_sentences`, the answer's text before it as context),
with `label` and `note` empty and `split` set by article: `validation` (the judge's operating
point is chosen there) or `test` (its figures are reported there), never both for one article.

With `--claims` it writes one row per claim the checker would judge (the rule splitter's, pronouns
resolved from the answer so far), for training data (ewe/judge/labelled/answers.jsonl): `split`
is then the judge data's article split (train, or test for its held-out articles).
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Optional

from ..verify.text import sentence_spans

SPLITS = ("validation", "test")


def split_of(topic: str) -> str:
    """Half the articles choose the judge's threshold, the other half measure it."""
    return SPLITS[int(hashlib.sha256(("labelled:" + topic).encode("utf-8")).hexdigest(), 16) % 2]


def sentences(run_path: Path, method: Optional[str] = None) -> list[dict]:
    method = method or run_path.stem
    out = []
    for line in run_path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        text = rec.get("text") or ""
        for k, (a, b) in enumerate(sentence_spans(text)):
            out.append({"id": f"{method}-{rec['id']}-s{k}", "method": method, "dataset": rec.get("dataset", ""),
                        "prompt": rec["prompt"], "topic": rec["topic"], "sentence": text[a:b], "context": text[:a],
                        "label": "", "note": "", "split": split_of(rec["topic"])})
    return out


def claims(run_path: Path, method: Optional[str] = None) -> list[dict]:
    """One row per claim of each sentence, as the loop's checker extracts it."""
    from .splits import is_held_out
    from ..verify.claims import RuleClaimExtractor

    extractor = RuleClaimExtractor()
    out = []
    for row in sentences(run_path, method):
        found = extractor.extract(row["sentence"], context=row["context"] or None, prompt=row["prompt"]).claims
        for j, c in enumerate(found):
            out.append({**row, "id": f"{row['id']}-c{j}", "claim": c.text,
                        "split": "test" if is_held_out(row["topic"]) else "train"})
    return out


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="`ewe run` output files; the method is each file's stem")
    ap.add_argument("--out", required=True)
    ap.add_argument("--claims", action="store_true", help="one row per claim the checker judges (training data)")
    args = ap.parse_args(argv)
    rows = [r for p in args.runs for r in (claims if args.claims else sentences)(Path(p))]
    from ..files import write_jsonl

    write_jsonl(args.out, rows)
    print(f"{len(rows)} {'claims' if args.claims else 'sentences'} -> {args.out}")


if __name__ == "__main__":
    main()
