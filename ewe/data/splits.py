"""The frozen split of the embedded Wikipedia that every learned part and every figure agrees on,
by a hash of the article's title (the same on every machine and every run):

    train  4 in 5    what the judge, the memory adapter and any other learned part train on
    dev    1 in 10   answers read, rules written and settings tuned on
    test   1 in 10   the figures the README quotes

dev and test together are the articles the judges were always held out of (`is_held_out`: one in
five by the same hash), so splitting the held-out part in two re-labelled nothing a shipped judge
trained on. Prompt sets draw from one split by name (`ewe eval prompts bio --split test`)."""
from __future__ import annotations

import hashlib

SPLITS = ("train", "dev", "test")
HELD_OUT_FRACTION = 5  # one article in five is held out of training (dev and test)


def _digest(title: str) -> int:
    return int(hashlib.sha256(title.encode("utf-8")).hexdigest(), 16)


def split_of(title: str) -> str:
    """"train", "dev" or "test": the split the article `title` belongs to."""
    h = _digest(title)
    if h % HELD_OUT_FRACTION:
        return "train"
    return "test" if (h // HELD_OUT_FRACTION) % 2 == 0 else "dev"


def is_held_out(title: str) -> bool:
    """Whether the article `title` is held out of every learned part's training (dev or test)."""
    return _digest(title) % HELD_OUT_FRACTION == 0


def check_split(split: str) -> str:
    """`split` if it names a split, else a ValueError saying which do."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {SPLITS}")
    return split
