"""Prompt sets for long-form factuality runs, drawn from the embedded Wikipedia so every
prompt's subject has an article in the datastore (and the score can check against it).

    bio       "Tell me a bio of <person>."  (articles with topic People; the paper's Biography)
    objects   "What can you tell me about <entity>?"  (other topics, LongFact-objects-style)
    summaries "Summarize the article below ..." with the article given as the prompt's passage,
              scored against that article only ("score_against": "source"): PrefixNLI's task,
              the source given

Each set draws from one split of the articles (data/splits.py): "test" by default (the figures),
"dev" for reading answers and writing rules, "train" for what learned parts train on; "any"
draws from every article as the sets did before the split (the held-out articles for
summaries), to reproduce figures measured then. The appendix A suffix ("Provide as many
specific details and examples as possible ...") is appended unless `suffix=None`. Sampling is
seeded and stratified by topic for objects.
"""
from __future__ import annotations

import random
from pathlib import Path

from . import wiki
from .splits import SPLITS, is_held_out, split_of
from ..files import write_jsonl

SUFFIX = ("Provide as many specific details and examples as possible (such as names of people, numbers, "
          "events, locations, dates, times, etc.)")
SETS = ("bio", "objects", "summaries")
SPLIT_CHOICES = (*SPLITS, "any")
DEFAULT_SPLIT = "test"
SUMMARY_PROMPT = "Summarize the article below in two or three sentences."
_SKIP_TOPICS = {"People", "Uncategorized"}


def _with_suffix(prompt: str, suffix: str | None) -> str:
    return f"{prompt} {suffix}" if suffix else prompt


def prompt_set(name: str, n: int = 30, seed: int = 0, suffix: str | None = SUFFIX,
               split: str = DEFAULT_SPLIT) -> list[dict]:
    """`n` prompts of set `name` from the articles of `split`: {"id", "prompt", "topic" (the article
    title), "dataset", "split"}."""
    if name not in SETS:
        raise ValueError(f"prompt set {name!r} is not one of {SETS}; for your own prompts pass a JSONL file")
    if split not in SPLIT_CHOICES:
        raise ValueError(f"split {split!r} is not one of {SPLIT_CHOICES}")
    if n < 1:
        raise ValueError(f"n={n} must be at least 1")
    entries = [e for e in wiki.summaries().values() if len(e.get("extract", "")) >= 200
               and (split == "any" or split_of(e["title"]) == split)]
    rng = random.Random(seed)
    if name == "summaries":
        return summary_set(entries, n, rng, split)
    if name == "bio":
        pool = sorted((e for e in entries if e.get("topic") == "People"), key=lambda e: e["title"])
        chosen = rng.sample(pool, min(n, len(pool)))
        template = "Tell me a bio of {}."
    else:
        by_topic: dict[str, list[dict]] = {}
        for e in entries:
            if e.get("topic") not in _SKIP_TOPICS:
                by_topic.setdefault(e["topic"], []).append(e)
        for items in by_topic.values():
            items.sort(key=lambda e: e["title"])
            rng.shuffle(items)
        chosen, topics = [], sorted(by_topic)
        while len(chosen) < n and any(by_topic.values()):
            for t in topics:  # round-robin over topics
                if by_topic[t] and len(chosen) < n:
                    chosen.append(by_topic[t].pop())
        template = "What can you tell me about {}?"
    return [
        {"id": f"{name}-{i:04d}", "prompt": _with_suffix(template.format(e["title"]), suffix), "topic": e["title"],
         "dataset": name, "split": split}
        for i, e in enumerate(chosen, 1)
    ]


def summary_set(entries: list[dict], n: int, rng: random.Random, split: str) -> list[dict]:
    """Articles of at least 400 characters, the article given (split "any": those held out of
    training, as the set drew before the split)."""
    pool = sorted((e for e in entries if len(e["extract"]) >= 400 and (split != "any" or is_held_out(e["title"]))),
                  key=lambda e: e["title"])
    return [{"id": f"summaries-{i:04d}", "prompt": SUMMARY_PROMPT, "passages": [wiki.passage(e["title"])],
             "topic": e["title"], "dataset": "summaries", "split": split, "score_against": "source"}
            for i, e in enumerate(rng.sample(pool, min(n, len(pool))), 1)]


def load_prompts(source: str, n: int | None = None, seed: int = 0, suffix: str | None = SUFFIX,
                 split: str = DEFAULT_SPLIT) -> list[dict]:
    """A named set ("bio", "objects") from `split`, or a JSONL file of {"id"?, "prompt", "topic"?} lines."""
    if source in SETS:
        return prompt_set(source, n or 30, seed, suffix, split)
    from ..runner import read_prompts

    rows = read_prompts(Path(source))
    dataset = Path(source).stem
    for row in rows:
        row.setdefault("dataset", dataset)
        if row.get("topic") is not None and row["topic"] not in wiki.summaries():
            row["topic_missing"] = True  # scored against the datastore only
    return rows[:n] if n else rows


def write_prompts(rows: list[dict], path: Path) -> None:
    write_jsonl(path, rows)
