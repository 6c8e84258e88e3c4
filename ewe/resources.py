"""Where ewe finds its embedded packages and keeps its cache."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def cache_dir() -> Path:
    """ewe's cache root: `$EWE_CACHE_DIR`, else `~/.cache/ewe`."""
    return Path(os.environ.get("EWE_CACHE_DIR", Path.home() / ".cache" / "ewe")).expanduser()


def package_dir(module: str, pip_name: str, purpose: str) -> Path:
    """Folder of an installed data-carrying package, found without importing it.

    The embedded packages' own `__init__` modules pull in heavy or unrelated stacks
    (llm, OVOS), and ewe only needs their files.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"{purpose} needs the package {pip_name}: `pip install --no-deps {pip_name}` (or `make setup`)"
        )
    return Path(list(spec.submodule_search_locations)[0])
