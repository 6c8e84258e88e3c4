"""The passage datastore: chunked documents, their embeddings and a FAISS index, in one folder.

    index.faiss      faiss.write_index (inner-product metric; exact `Flat` by default)
    embeddings.npy   float32 (passages, dim), memory-mapped on load
    passages.jsonl   one record a line; line i is passage id i (= FAISS id = embeddings row)
    manifest.json    how it was made (embedder, pooling, normalization, tokenizer, chunk size,
                     index factory) and sha256 checksums of the three files

No pickle anywhere. A build (or an `add`) writes a hidden temporary folder next to the
target and renames it into place at the end: an interrupted build leaves the previous
datastore, or nothing, never a half-written one.
"""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import logging
import mmap as _mmap
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from .chunking import CHUNKING_VERSION, DEFAULT_CHUNK_TOKENS, Chunk, Chunker, tokenizer_fingerprint
from .chunking import tokenizer_name as _tokenizer_name
from .corpus import Corpus, Document, read_corpus
from .embedder import Embedder
from .folders import commit, recover, work_dir

logger = logging.getLogger(__name__)

FORMAT = "ewe-datastore"
FORMAT_VERSION = 1
INDEX_FILE, EMBEDDINGS_FILE, PASSAGES_FILE, MANIFEST_FILE = "index.faiss", "embeddings.npy", "passages.jsonl", "manifest.json"
DATA_FILES = (INDEX_FILE, EMBEDDINGS_FILE, PASSAGES_FILE)
BLOCK = 1024  # passages embedded / added per step
EXACT_SCORE_INDEXES = ("IndexFlatIP", "IndexFlat", "IndexHNSWFlat", "IndexIVFFlat")  # uncompressed vectors
PASSAGE_FORMAT = "{title} ({description}): {text}  |  {title}: {text}  |  {text}"


class DatastoreError(ValueError):
    """A datastore folder that cannot be used: missing, corrupt, inconsistent, mismatched."""


@dataclass(frozen=True)
class Hit:
    """One search result.

    text: the passage as it goes into memory (title prefix included).
    body: the chunk alone, = source document text[start:end].
    """

    id: int
    score: float
    text: str
    title: str
    source_id: str
    start: int
    end: int
    description: str = ""
    body_start: int = 0

    @property
    def offsets(self) -> tuple[int, int]:
        return (self.start, self.end)

    @property
    def body(self) -> str:
        return self.text[self.body_start :]

    def to_dict(self, text: bool = False) -> dict:
        """How results and traces list a hit: id, title, score to 4 places (and the text if asked)."""
        d = {"id": self.id, "title": self.title, "score": round(float(self.score), 4)}
        if text:
            d["text"] = self.text
        return d


class Datastore:
    """Searchable passages. Make one with `Datastore.build` or `Datastore.load`.

    Example:
        >>> ds = Datastore.build("tests/data/corpus.jsonl", "/tmp/ds", tokenizer=tok)
        >>> [h.title for h in ds.search(["who discovered penicillin"], k=3)[0]]
    """

    def __init__(self, path: Path, manifest: dict, index, embeddings: np.ndarray, passages: "_Passages",
                 embedder: Embedder | None, mmap: bool, device: str):
        self.path = path
        self.manifest = manifest
        self.index = index
        self.embeddings = embeddings
        self._passages = passages
        self._article_index = None  # (the passages it was read from, _articles())
        self._embedder = embedder
        self.mmap = mmap
        self.device = device  # where FAISS searches: "cpu" or "gpu"
        # Indexes storing compressed vectors (PQ, SQ, ...) only approximate scores: fetch
        # `rerank` times more candidates and re-score them exactly from the stored embeddings.
        self._approx_scores = manifest["index"]["type"] not in EXACT_SCORE_INDEXES
        self.rerank = 4 if self._approx_scores else 1

    # -- construction ---------------------------------------------------------------

    @classmethod
    def build(
        cls,
        documents: Corpus | Iterable[Document] | str | os.PathLike,
        path: str | os.PathLike,
        *,
        tokenizer,
        embedder: Embedder | str = "embedded",
        chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
        factory: str = "Flat",
        search_params: str | None = None,
        tokenizer_name: str | None = None,
        on_error: Literal["skip", "raise"] = "skip",
        train_size: int = 100_000,
        device: Literal["auto", "cpu", "gpu"] = "auto",
        progress: bool = False,
    ) -> "Datastore":
        """Chunk, embed and index `documents` into the folder `path` (replaced atomically).

        Args:
            documents: a Corpus, Documents, or a corpus source for `read_corpus`
                ("embedded", a .jsonl or .tsv file; `on_error` applies).
            path: the datastore folder. An existing datastore there is replaced; any other
                non-empty folder is refused.
            tokenizer: the generator's Hugging Face tokenizer; passages are at most
                `chunk_tokens` of its tokens (no special tokens), title prefix included.
            embedder: an Embedder, or a model name for `Embedder(name)`.
            factory: a `faiss.index_factory` string ("Flat", "HNSW32", "IVF64,Flat",
                "IVF64,PQ16", ...), always with the inner-product metric.
            search_params: FAISS search-time parameters, e.g. "nprobe=16" or "efSearch=64";
                None picks them from the factory (nprobe = max(8, nlist/16), efSearch = 64).
            tokenizer_name: the name recorded for the tokenizer (default its name_or_path).
            train_size: at most this many vectors (a seeded sample) train IVF/PQ indexes.
            device: "auto" uses GPU FAISS when `faiss.get_num_gpus() > 0`.
            progress: tqdm bars for chunking and embedding.

        Returns:
            the new Datastore, loaded from `path`. Rebuilding the same input gives the same
            passage ids, embeddings and results (IVF/PQ training is seeded); an HNSW graph
            built on several threads may differ slightly between builds.
        """
        path = Path(path).expanduser().absolute()
        _check_target(path)
        docs, source = _read_documents(documents, on_error)
        if not docs:
            raise DatastoreError("no documents to index")
        emb = embedder if isinstance(embedder, Embedder) else Embedder(embedder)
        t0 = time.perf_counter()
        chunks = Chunker(tokenizer, chunk_tokens).chunk_all(docs, progress=progress)
        dim = emb.dimension
        _check_factory(dim, factory, len(chunks))  # fail before the slow part
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = work_dir(path)
        try:
            _write_passages(tmp / PASSAGES_FILE, chunks, first_id=0)
            t1 = time.perf_counter()
            vectors = np.lib.format.open_memmap(tmp / EMBEDDINGS_FILE, mode="w+", dtype=np.float32, shape=(len(chunks), dim))
            _embed_into(vectors, [c.passage for c in chunks], emb, progress)
            vectors.flush()
            t2 = time.perf_counter()
            index_info = _index_into(tmp / INDEX_FILE, vectors, factory, search_params, device, train_size)
            del vectors
            manifest = {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "ewe_version": _ewe_version(),
                "created": _now(),
                "corpus": [source or {"source": None, "documents": len(docs), "skipped": 0}],
                "chunking": {
                    "chunk_tokens": chunk_tokens,
                    "version": CHUNKING_VERSION,
                    "tokenizer": tokenizer_name or _tokenizer_name(tokenizer),
                    "tokenizer_fingerprint": tokenizer_fingerprint(tokenizer),
                    "passage_format": PASSAGE_FORMAT,
                },
                "embedder": emb.spec(),
                "dimension": dim,
                "index": index_info,
                "counts": {"documents": len(docs), "passages": len(chunks)},
                "build_seconds": {
                    "chunking": round(t1 - t0, 3),
                    "embedding": round(t2 - t1, 3),
                    "index": index_info.pop("seconds"),
                    "cpus": os.cpu_count(),
                },
            }
            _finish(tmp, manifest)
            commit(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        logger.info("built datastore %s: %d documents, %d passages, %s", path, len(docs), len(chunks), factory)
        return cls.load(path, embedder=emb, verify=False, device=device)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        mmap: bool = True,
        verify: bool = True,
        embedder: Embedder | None = None,
        search_params: str | None = None,
        device: Literal["auto", "cpu", "gpu"] = "auto",
    ) -> "Datastore":
        """Open a datastore folder.

        Args:
            mmap: memory-map embeddings.npy, index.faiss and passages.jsonl instead of reading them.
            verify: check the sha256 checksums in the manifest (reads every file once).
            embedder: the query embedder; checked against the manifest (EmbedderMismatchError).
                None loads the manifest's embedder on the first text query.
            search_params: override the manifest's FAISS search parameters.
        """
        import faiss

        path = Path(path).expanduser().absolute()
        if not path.exists():
            recover(path)  # a rebuild killed while swapping folders
        manifest = read_manifest(path)
        for name in DATA_FILES:
            if not (path / name).is_file():
                raise DatastoreError(f"datastore {path} is missing {name}")
        if verify:
            verify_checksums(path, manifest)
        if embedder is not None:
            embedder.check_matches(manifest["embedder"], what=f"the datastore {path}")
        embeddings = np.load(path / EMBEDDINGS_FILE, mmap_mode="r" if mmap else None, allow_pickle=False)
        flags = faiss.IO_FLAG_MMAP_IFC if mmap else 0
        index = faiss.read_index(str(path / INDEX_FILE), flags)
        passages = _Passages(path / PASSAGES_FILE, mmap)
        n = manifest["counts"]["passages"]
        sizes = {"index": index.ntotal, "embeddings": len(embeddings), "passages": len(passages), "manifest": n}
        if len(set(sizes.values())) != 1 or embeddings.shape[1:] != (manifest["dimension"],) or index.d != manifest["dimension"]:
            raise DatastoreError(f"datastore {path} is inconsistent: passage counts {sizes}, dimension "
                                 f"index {index.d} / embeddings {embeddings.shape[1:]} / manifest {manifest['dimension']}")
        index, dev = _to_device(index, device)
        params = search_params if search_params is not None else manifest["index"].get("search_params", "")
        if params:
            _set_search_params(index, params)
        return cls(path, manifest, index, embeddings, passages, embedder, mmap, dev)

    # -- queries --------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The query embedder (loaded from the manifest on first use)."""
        if self._embedder is None:
            self._embedder = Embedder.from_spec(self.manifest["embedder"])
        return self._embedder

    def __len__(self) -> int:
        return self.index.ntotal

    def search(
        self,
        queries: str | Sequence[str] | np.ndarray,
        k: int = 5,
        *,
        threshold: float | None = None,
        dedup_sources: bool = False,
    ) -> list[list[Hit]]:
        """The best `k` passages for each query, best first.

        Args:
            queries: texts (a single string counts as one query), or query vectors
                (n, dim) already made by a matching embedder.
            k: results per query; more than the datastore holds returns all of them.
            threshold: keep only hits scoring at least this (inner product; cosine for
                normalized embedders). Fewer than k hits may come back, or none.
            dedup_sources: at most one passage (the best) per source document.

        Returns:
            one list of Hits per query. Scores are exact inner products: where the index only
            approximates them (PQ), 4k candidates are re-scored from the stored embeddings.
        """
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        if isinstance(queries, str):
            queries = [queries]
        if isinstance(queries, np.ndarray):
            vecs = _as_queries(queries, self.manifest["dimension"])
        else:
            vecs = self.embedder.encode_queries(list(queries))
        n = len(self)
        if k == 0 or n == 0:
            return [[] for _ in range(len(vecs))]
        out: list[list[Hit] | None] = [None] * len(vecs)
        todo = np.arange(len(vecs))
        fetch = min(n, k * self.rerank * (4 if dedup_sources else 1))
        while len(todo):
            scores, ids = self.index.search(np.ascontiguousarray(vecs[todo]), fetch)
            again = []
            for row, q in enumerate(todo):
                cand = ids[row][ids[row] >= 0]
                sc = scores[row][ids[row] >= 0]
                if self._approx_scores and len(cand):
                    sc = self.embeddings[np.sort(cand)] @ vecs[q]
                    cand = np.sort(cand)
                    order = np.lexsort((cand, -sc))
                    cand, sc = cand[order], sc[order]
                hits, exhausted = self._select(cand, sc, k, threshold, dedup_sources)
                if len(hits) < k and not exhausted and fetch < n:
                    again.append(q)
                else:
                    out[q] = hits
            todo = np.array(again, dtype=np.int64)
            fetch = min(n, fetch * 4)
        return out  # type: ignore[return-value]

    def _select(self, ids, scores, k, threshold, dedup) -> tuple[list[Hit], bool]:
        """Hits from candidates; `exhausted` when fetching more could not add any."""
        hits: list[Hit] = []
        seen: set[str] = set()
        for pid, score in zip(ids.tolist(), scores.tolist()):
            if threshold is not None and score < threshold:
                return hits, True  # candidates come best first
            rec = self._passages[pid]
            if dedup and rec["source_id"] in seen:
                continue
            seen.add(rec["source_id"])
            hits.append(_hit(pid, score, rec))
            if len(hits) == k:
                return hits, True
        return hits, False

    def passage(self, pid: int) -> Hit:
        """Passage `pid` as a Hit with score nan."""
        if not 0 <= pid < len(self):
            raise IndexError(f"passage id {pid} out of range 0..{len(self) - 1}")
        return _hit(pid, float("nan"), self._passages[pid])

    def source_ids(self) -> set[str]:
        return set(self._articles()[0])

    def article(self, source_id: str) -> list[Hit]:
        """Every chunk of one source document, in the document's order (score nan); [] if none."""
        return [self.passage(pid) for pid in self._articles()[0].get(source_id, [])]

    def article_titles(self) -> dict[str, str]:
        """Each source document's title (its first chunk's, before any shortening) -> its source id."""
        return self._articles()[1]

    def _articles(self) -> tuple[dict[str, list[int]], dict[str, str]]:
        """source id -> its passage ids in order; title -> source id (read once per set of passages: a
        pinned article is looked up by title for every prompt)."""
        if self._article_index is not None and self._article_index[0] is self._passages:
            return self._article_index[1]
        chunks: dict[str, list[int]] = {}
        titles: dict[str, str] = {}
        for pid in range(len(self._passages)):
            rec = self._passages[pid]
            chunks.setdefault(rec["source_id"], []).append(pid)
            titles.setdefault(rec["title"], rec["source_id"])
        for sid, pids in chunks.items():
            pids.sort(key=lambda p: self._passages[p]["start"])
        self._article_index = (self._passages, (chunks, titles))
        return chunks, titles

    def info(self) -> dict[str, Any]:
        """The manifest plus where this copy runs."""
        return {**self.manifest, "path": str(self.path), "search_device": self.device, "mmap": self.mmap}

    def set_search_params(self, params: str) -> None:
        """FAISS search-time parameters for this session, e.g. "nprobe=32" or "efSearch=128"."""
        _set_search_params(self.index, params)

    def reindex(
        self,
        path: str | os.PathLike,
        factory: str,
        *,
        search_params: str | None = None,
        train_size: int = 100_000,
        device: Literal["auto", "cpu", "gpu"] = "auto",
    ) -> "Datastore":
        """A copy of this datastore at `path` with another FAISS index, from the stored
        embeddings (nothing is re-chunked or re-embedded). Same passage ids."""
        path = Path(path).expanduser().absolute()
        if path == self.path:
            raise DatastoreError("reindex writes a new folder; give a path other than the datastore's own")
        _check_target(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = work_dir(path)
        try:
            for name in (PASSAGES_FILE, EMBEDDINGS_FILE):
                shutil.copyfile(self.path / name, tmp / name)
            vectors = np.load(tmp / EMBEDDINGS_FILE, mmap_mode="r")
            index_info = _index_into(tmp / INDEX_FILE, vectors, factory, search_params, device, train_size)
            del vectors
            manifest = json.loads(json.dumps(self.manifest))
            manifest["index"] = index_info
            manifest.setdefault("build_seconds", {})["index"] = index_info.pop("seconds")
            manifest["updated"] = _now()
            _finish(tmp, manifest)
            commit(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return Datastore.load(path, mmap=self.mmap, verify=False, embedder=self._embedder, device=device)

    # -- growth ---------------------------------------------------------------------

    def add(
        self,
        documents: Corpus | Iterable[Document] | str | os.PathLike,
        *,
        tokenizer,
        on_error: Literal["skip", "raise"] = "skip",
        progress: bool = False,
    ) -> list[int]:
        """Add documents; existing passages keep their ids, new ones follow. Rewrites the
        folder atomically. A trained index (IVF, PQ) is not retrained.

        Returns: the new passage ids.
        Raises: DatastoreError for a tokenizer other than the build's, or a document id
            already present.
        """
        import faiss

        man = self.manifest
        if tokenizer_fingerprint(tokenizer) != man["chunking"]["tokenizer_fingerprint"]:
            raise DatastoreError(
                f"the datastore was chunked with tokenizer {man['chunking']['tokenizer']!r} "
                f"({man['chunking']['tokenizer_fingerprint']}); the given one "
                f"{_tokenizer_name(tokenizer)!r} ({tokenizer_fingerprint(tokenizer)}) differs"
            )
        docs, source = _read_documents(documents, on_error)
        dup = sorted({d.id for d in docs} & self.source_ids())
        if dup:
            raise DatastoreError(f"{len(dup)} document ids already in the datastore, e.g. {dup[:5]}")
        if not docs:
            return []
        chunks = Chunker(tokenizer, man["chunking"]["chunk_tokens"]).chunk_all(docs, progress=progress)
        old_n, dim = len(self), man["dimension"]
        tmp = work_dir(self.path)
        try:
            shutil.copyfile(self.path / PASSAGES_FILE, tmp / PASSAGES_FILE)
            _write_passages(tmp / PASSAGES_FILE, chunks, first_id=old_n, append=True)
            vectors = np.lib.format.open_memmap(tmp / EMBEDDINGS_FILE, mode="w+", dtype=np.float32, shape=(old_n + len(chunks), dim))
            for i in range(0, old_n, BLOCK * 16):
                vectors[i : min(old_n, i + BLOCK * 16)] = self.embeddings[i : i + BLOCK * 16]
            _embed_into(vectors[old_n:], [c.passage for c in chunks], self.embedder, progress)
            index = faiss.read_index(str(self.path / INDEX_FILE))
            index, _ = _to_device(index, "auto" if self.device == "gpu" else "cpu")
            for i in range(old_n, len(vectors), BLOCK * 16):
                index.add(np.ascontiguousarray(vectors[i : i + BLOCK * 16]))
            vectors.flush()
            del vectors
            _write_index(index, tmp / INDEX_FILE)
            manifest = json.loads(json.dumps(man))
            manifest["corpus"].append(source or {"source": None, "documents": len(docs), "skipped": 0})
            manifest["counts"] = {"documents": man["counts"]["documents"] + len(docs), "passages": old_n + len(chunks)}
            manifest["updated"] = _now()
            _finish(tmp, manifest)
            commit(tmp, self.path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        fresh = Datastore.load(self.path, mmap=self.mmap, verify=False, embedder=self._embedder,
                               device="gpu" if self.device == "gpu" else "cpu")
        self.__dict__.update(fresh.__dict__)
        return list(range(old_n, old_n + len(chunks)))


# -- manifest and files -----------------------------------------------------------------


def read_manifest(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_dir():
        raise DatastoreError(f"no datastore at {path} (not a folder)")
    mf = path / MANIFEST_FILE
    if not mf.is_file():
        raise DatastoreError(f"no datastore at {path} ({MANIFEST_FILE} missing)")
    try:
        manifest = json.loads(mf.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DatastoreError(f"{mf}: invalid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DatastoreError(f"{mf} is not an ewe datastore manifest")
    version = manifest.get("format_version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise DatastoreError(f"{mf}: format_version must be an integer, got {json.dumps(version)[:40]}")
    if version > FORMAT_VERSION:
        raise DatastoreError(f"{mf} has format version {version}; this ewe reads up to {FORMAT_VERSION}")
    wrong = [f"{key} (not {kind.__name__})" if key in manifest else f"{key} (missing)"
             for key, kind in _MANIFEST_FIELDS.items()
             if not isinstance(manifest.get(key), kind) or isinstance(manifest.get(key), bool)]
    if wrong:
        raise DatastoreError(f"{mf} is damaged or not ewe's: {', '.join(wrong)}; rebuild it with `ewe index build`")
    return manifest


# what every reader of a manifest uses (all written since the first format version)
_MANIFEST_FIELDS = {"corpus": list, "chunking": dict, "embedder": dict, "dimension": int, "index": dict,
                    "counts": dict, "files": dict}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def verify_checksums(path: Path, manifest: dict) -> None:
    """Raise DatastoreError naming every file whose size or sha256 differs from the manifest."""
    bad = []
    for name, rec in manifest["files"].items():
        f = path / name
        if not f.is_file():
            bad.append(f"{name} missing")
        elif f.stat().st_size != rec["bytes"]:
            bad.append(f"{name} has {f.stat().st_size} bytes, manifest says {rec['bytes']}")
        elif sha256_file(f) != rec["sha256"]:
            bad.append(f"{name} sha256 differs from the manifest")
    if bad:
        raise DatastoreError(f"datastore {path} failed its checksum check: " + "; ".join(bad) + " (rebuild it)")


def _finish(tmp: Path, manifest: dict) -> None:
    manifest["files"] = {n: {"sha256": sha256_file(tmp / n), "bytes": (tmp / n).stat().st_size} for n in DATA_FILES}
    data = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    with open(tmp / MANIFEST_FILE, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _check_target(path: Path) -> None:
    """A build replaces the whole folder: only an empty one, or an ewe datastore holding nothing
    but its own files, may be replaced (a folder that merely has some manifest.json, such as a
    web app's, or a datastore someone put notes in, is refused: its other files would be lost)."""
    if path.exists():
        if not path.is_dir():
            raise DatastoreError(f"{path} exists and is not a folder")
        entries = sorted(p.name for p in path.iterdir())
        if not entries:
            return
        try:
            manifest = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise DatastoreError(f"{path} is a non-empty folder that is not an ewe datastore; refusing to replace it")
        foreign = [n for n in entries if n not in (MANIFEST_FILE, *DATA_FILES)]
        if foreign:
            raise DatastoreError(f"{path} holds files that are not the datastore's ({', '.join(foreign[:5])}"
                                 f"{', ...' if len(foreign) > 5 else ''}); a rebuild replaces the whole folder: "
                                 "move them, or choose another folder")


def _write_passages(file: Path, chunks: list[Chunk], first_id: int, append: bool = False) -> None:
    with open(file, "a" if append else "w", encoding="utf-8", newline="\n") as f:
        for i, c in enumerate(chunks, first_id):
            text = c.passage
            rec = {
                "id": i,
                "source_id": c.doc_id,
                "title": c.title,
                "description": c.description,
                "text": text,
                "body_start": len(text) - len(c.text),
                "start": c.start,
                "end": c.end,
                "n_tokens": c.n_tokens,
            }
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def _embed_into(out: np.ndarray, texts: list[str], emb: Embedder, progress: bool) -> None:
    """Embed `texts` into the rows of `out`, longest first so batches carry little padding."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(texts), desc="embedding", unit="passage")
    for i in range(0, len(order), BLOCK):
        rows = order[i : i + BLOCK]
        out[rows] = emb.encode_passages([texts[r] for r in rows])
        if bar is not None:
            bar.update(len(rows))
    if bar is not None:
        bar.close()


def _index_into(file: Path, vectors: np.ndarray, factory: str, search_params: str | None, device: str, train_size: int) -> dict:
    """Make, train and fill a FAISS index from `vectors` and write it to `file`; its manifest entry."""
    import faiss

    t0 = time.perf_counter()
    index = _make_index(vectors.shape[1], factory)
    index, build_device = _to_device(index, device)
    if not index.is_trained:
        _train(index, vectors, factory, train_size)
    for i in range(0, len(vectors), BLOCK * 16):
        index.add(np.ascontiguousarray(vectors[i : i + BLOCK * 16]))
    _write_index(index, file)
    return {
        "factory": factory,
        "metric": "inner_product",
        "type": type(faiss.downcast_index(_to_cpu(index))).__name__,
        "search_params": _default_search_params(factory) if search_params is None else search_params,
        "build_device": build_device,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _make_index(dim: int, factory: str):
    import faiss

    if factory == "Flat":
        return faiss.IndexFlatIP(dim)
    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as e:
        raise DatastoreError(f"faiss.index_factory cannot make {factory!r}: {str(e).strip().splitlines()[-1]}") from None
    # Polysemous code training (on by default for IVF-PQ) serves Hamming-threshold search, which
    # is never used here, and took 130 of 135 s training IVF64,PQ16 on 14k vectors.
    for sub in (index, faiss.try_extract_index_ivf(index)):
        sub = faiss.downcast_index(sub) if sub is not None else None
        if sub is not None and hasattr(sub, "do_polysemous_training"):
            sub.do_polysemous_training = False
    return index


def _check_factory(dim: int, factory: str, n: int) -> None:
    _make_index(dim, factory)
    m = re.search(r"IVF(\d+)", factory)
    if m and int(m.group(1)) > n:
        raise DatastoreError(f"index {factory!r} needs at least {m.group(1)} passages to train its clusters; "
                             f"the corpus has {n} (use fewer lists, e.g. IVF{max(1, n // 39)},Flat, or Flat)")


def _train(index, vectors: np.ndarray, factory: str, train_size: int) -> None:
    n = len(vectors)
    _check_factory(vectors.shape[1], factory, n)
    rows = np.arange(n) if n <= train_size else np.sort(np.random.default_rng(0).choice(n, train_size, replace=False))
    try:
        index.train(np.ascontiguousarray(vectors[rows]))
    except RuntimeError as e:
        raise DatastoreError(f"training index {factory!r} on {len(rows)} vectors failed: {e}") from None


def _write_index(index, file: Path) -> None:
    import faiss

    faiss.write_index(_to_cpu(index), str(file))


@functools.lru_cache(maxsize=1)
def _gpu_resources():
    """One StandardGpuResources for the process (FAISS's advice: one per GPU, shared by its
    indexes); held here, so it outlives every index moved to the GPU."""
    import faiss

    return faiss.StandardGpuResources()


def _to_device(index, device: str):
    """(index, "gpu"|"cpu"): GPU FAISS only when asked or "auto", and present."""
    import faiss

    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f'device must be "auto", "cpu" or "gpu", got {device!r}')
    if device == "cpu":
        return index, "cpu"
    has_gpu = hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    if not has_gpu:
        if device == "gpu":
            raise DatastoreError("device='gpu' but FAISS sees no GPU (faiss-cpu installed, or no CUDA device)")
        return index, "cpu"
    try:
        return faiss.index_cpu_to_gpu(_gpu_resources(), 0, index), "gpu"
    except (RuntimeError, AttributeError) as e:  # e.g. HNSW has no GPU version
        if device == "gpu":
            raise DatastoreError(f"this index cannot run on GPU FAISS: {e}") from None
        logger.info("index stays on CPU: %s", e)
        return index, "cpu"


def _to_cpu(index):
    import faiss

    if hasattr(faiss, "index_gpu_to_cpu") and "Gpu" in type(index).__name__:
        return faiss.index_gpu_to_cpu(index)
    return index


def _default_search_params(factory: str) -> str:
    params = []
    m = re.search(r"IVF(\d+)", factory)
    if m:
        nlist = int(m.group(1))
        params.append(f"nprobe={min(nlist, max(8, nlist // 16))}")
    if "HNSW" in factory:
        params.append("efSearch=64")
    return ",".join(params)


def _set_search_params(index, params: str) -> None:
    import faiss

    space = faiss.GpuParameterSpace() if "Gpu" in type(index).__name__ else faiss.ParameterSpace()
    try:
        space.set_index_parameters(index, params)
    except RuntimeError as e:
        raise DatastoreError(f"cannot set FAISS search parameters {params!r} on {type(index).__name__}: {e}") from None


def _as_queries(x: np.ndarray, dim: int) -> np.ndarray:
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != dim:
        raise ValueError(f"query vectors must have shape (n, {dim}), got {x.shape}")
    return np.ascontiguousarray(x, dtype=np.float32)


def _read_documents(documents, on_error: str) -> tuple[list[Document], dict | None]:
    """Documents from a corpus path, a Corpus or any iterable, with where they came from; ids checked unique."""
    source = None
    if isinstance(documents, (str, os.PathLike)):
        documents = read_corpus(documents, on_error=on_error)
    if isinstance(documents, Corpus):
        source = {"source": documents.source, "documents": len(documents), "skipped": len(documents.skipped)}
    docs = list(documents)
    _check_unique(docs)
    return docs, source


def _check_unique(docs: list[Document]) -> None:
    seen = set()
    for d in docs:
        if not isinstance(d, Document):
            raise TypeError(f"expected Document objects, got {type(d).__name__}")
        if d.id in seen:
            raise DatastoreError(f"duplicate document id {d.id!r}")
        seen.add(d.id)


def _hit(pid: int, score: float, rec: dict) -> Hit:
    return Hit(pid, float(score), rec["text"], rec["title"], rec["source_id"], rec["start"], rec["end"],
               rec.get("description", ""), rec.get("body_start", 0))


def _ewe_version() -> str:
    try:
        from ..version import __version__

        return __version__
    except ImportError:
        return "unknown"


class _Passages:
    """passages.jsonl, read by line number without parsing the whole file."""

    def __init__(self, file: Path, use_mmap: bool):
        with open(file, "rb") as f:
            if use_mmap and os.fstat(f.fileno()).st_size > 0:
                self._data = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_READ)
            else:
                self._data = f.read()
        nl = np.flatnonzero(np.frombuffer(self._data, dtype=np.uint8) == 10) if len(self._data) else np.zeros(0, np.int64)
        self._ends = nl
        self._starts = np.concatenate([[0], nl[:-1] + 1]) if len(nl) else nl

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i: int) -> dict:
        return json.loads(self._data[self._starts[i] : self._ends[i]])
