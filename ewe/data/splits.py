"""The article-level split every judge and evaluation set agrees on: an article is held out of
the judges' training by a hash of its title, the same on every machine and every run. Prompt
sets, the binding set and the critics' texts draw only held-out articles, so no judge was
trained on what it is measured on."""
from __future__ import annotations

import hashlib

HELD_OUT_FRACTION = 5  # one article in five is held out (test)


def is_held_out(title: str) -> bool:
    """Whether the article `title` is held out of every judge's training data."""
    return int(hashlib.sha256(title.encode("utf-8")).hexdigest(), 16) % HELD_OUT_FRACTION == 0
