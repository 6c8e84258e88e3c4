"""Prompts for reading what memory holds of the subject (issue 72): people and things drawn from the
articles every judge is held out of (ewe.data.splits), and subjects the embedded datastore lacks.

    python benchmarks/subject_prompts.py --people 24 --things 8 --missing 4 --seed 7272 \
        --exclude benchmarks/prompts/subject_memory.jsonl --out benchmarks/prompts/subject_memory_report.jsonl

A set drawn with another seed, without the titles of a set already read, is a split no rule was
written on. Missing subjects are the first names of MISSING that have no article (checked here).
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from ewe.data import wiki
from ewe.data.splits import is_held_out
from ewe.files import write_jsonl

# well-known subjects, checked against the datastore before use: only those without an article are asked
MISSING = ["Rosalind Franklin", "Srinivasa Ramanujan", "Grace Hopper", "Emmy Noether", "Lise Meitner",
           "Barbara McClintock", "Dorothy Hodgkin", "Vera Rubin", "Chien-Shiung Wu", "Ibn al-Haytham",
           "the Great Fire of London", "the Treaty of Westphalia", "the Antikythera mechanism",
           "Wangari Maathai", "Mary Anning", "Ibn Battuta", "Hypatia", "Alfred Wegener", "the Tunguska event",
           "the Voynich manuscript", "the Dreyfus affair"]


def draw(people: int, things: int, missing: int, seed: int, exclude: set[str]) -> list[dict]:
    entries = wiki.summaries()
    pool = sorted((e for e in entries.values() if len(e.get("extract", "")) >= 200 and is_held_out(e["title"])
                   and e["title"] not in exclude), key=lambda e: e["title"])
    rng = random.Random(seed)
    persons = rng.sample([e for e in pool if e.get("topic") == "People"], people)
    objects = rng.sample([e for e in pool if e.get("topic") not in ("People", "Uncategorized")], things)
    titles = {t.lower() for t in entries}
    absent = [m for m in MISSING if m.lower().removeprefix("the ") not in titles and m not in exclude][:missing]
    rows = [{"prompt": f"Tell me a bio of {e['title']}.", "topic": e["title"], "kind": "person"} for e in persons]
    rows += [{"prompt": f"What can you tell me about {e['title']}?", "topic": e["title"], "kind": "thing"}
             for e in objects]
    rows += [{"prompt": f"Tell me a bio of {m}." if not m.startswith("the ") else f"What can you tell me about {m}?",
              "topic": m, "kind": "missing"} for m in absent]
    return [{"id": f"s{i}", **r} for i, r in enumerate(rows)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--people", type=int, default=24)
    ap.add_argument("--things", type=int, default=8)
    ap.add_argument("--missing", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7272)
    ap.add_argument("--exclude", type=Path, action="append", default=[], help="a prompt set whose topics to leave out")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    exclude = {json.loads(line)["topic"] for path in args.exclude for line in path.read_text().splitlines() if line}
    rows = draw(args.people, args.things, args.missing, args.seed, exclude)
    write_jsonl(args.out, rows)
    print(f"{len(rows)} prompts -> {args.out}")


if __name__ == "__main__":
    main()
