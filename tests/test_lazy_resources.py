"""Resources load when first needed and are built once (issue 33, item 4): `ewe check --input`
with the evidence in every case never opens the datastore (nor the generator), and processes
started together on a fresh cache build the default datastore once between them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tiny import tiny_tokenizer

from ewe import cli
from ewe.retrieval import Datastore

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tokenizer_folder(tmp_path):
    """A folder holding only a tokenizer: enough for the datastore, while loading a generator
    from it fails (so a check that loaded one would show)."""
    folder = tmp_path / "tok"
    tiny_tokenizer().save_pretrained(folder)
    return folder


def write_cases(path: Path, cases: list[dict]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def test_check_input_with_evidence_everywhere_never_opens_the_datastore(tmp_path, monkeypatch, tokenizer_folder):
    monkeypatch.setenv("EWE_CACHE_DIR", str(tmp_path / "cache"))

    def refuse(*args, **kw):
        raise AssertionError("the datastore was opened, though every case gives its evidence")

    monkeypatch.setattr(Datastore, "build", refuse)
    monkeypatch.setattr(Datastore, "load", refuse)
    cases = write_cases(tmp_path / "cases.jsonl", [
        {"id": "a", "claim": "Alexander Fleming discovered penicillin in 1928.",
         "evidence": ["Alexander Fleming discovered the antibacterial effect of penicillin in 1928."]},
        {"id": "b", "claim": "Mount Everest is in South America.",
         "evidence": ["Mount Everest is Earth's highest mountain, in the Himalayas of Asia."]},
    ])
    out = tmp_path / "verdicts.jsonl"
    argv = ["check", "--input", str(cases), "--output", str(out), "--model", str(tokenizer_folder),
            "--checker", "alignment"]
    assert cli.main(argv) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b"] and all(r["claims"] for r in rows)
    assert not (tmp_path / "cache" / "datastores").exists()


def test_a_case_without_evidence_builds_the_datastore_once(tmp_path, monkeypatch, tokenizer_folder):
    monkeypatch.setenv("EWE_CACHE_DIR", str(tmp_path / "cache"))
    built = []
    real_build = Datastore.build

    def small_build(corpus, path, **kw):  # the small corpus stands in for the embedded one
        built.append(path)
        return real_build(DATA / "corpus.jsonl", path, **kw)

    monkeypatch.setattr(Datastore, "build", small_build)
    cases = write_cases(tmp_path / "cases.jsonl", [
        {"id": "given", "claim": "Alexander Fleming discovered penicillin.", "evidence": ["Fleming found penicillin."]},
        {"id": "searched-1", "claim": "Alexander Fleming discovered penicillin in 1928."},
        {"id": "searched-2", "claim": "Mount Everest is the highest mountain on Earth."},
    ])
    out = tmp_path / "verdicts.jsonl"
    assert cli.main(["check", "--input", str(cases), "--output", str(out), "--model", str(tokenizer_folder),
                     "--checker", "alignment"]) == 0
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert len(built) == 1 and built[0].parent == tmp_path / "cache" / "datastores"
    assert rows["searched-1"]["claims"][0]["evidence"][0] == "Penicillin"  # found in the built datastore



def test_a_missing_datastore_is_still_a_clear_error_when_a_check_searches(tmp_path, tokenizer_folder, capsys):
    """Opened on first need, not first mention: a check that searches says what is wrong with the
    datastore, rather than writing a verdict that says "evidence search failed"."""
    common = ["--datastore", str(tmp_path / "no-ds"), "--model", str(tokenizer_folder), "--checker", "alignment"]
    assert cli.main(["check", "Paris is the capital of France.", *common]) == 2
    assert "no datastore at" in capsys.readouterr().err
    assert cli.main(["check", "Paris is the capital of France.", *common,
                     "--evidence", "Paris is the capital and largest city of France."]) == 0
    assert "Paris is the capital of France." in capsys.readouterr().out  # the given passage needs no datastore

CHILD = r"""
import json, os, sys, time, zlib
from pathlib import Path

import numpy as np

from ewe.retrieval import Datastore, Embedder, default_datastore

corpus, marker, ready = sys.argv[1:4]


class WordTokenizer:
    # a token a word: enough to chunk by, and no transformers to import (seconds per process)
    name_or_path = "words"

    def __call__(self, text, **kw):
        ids = lambda t: [zlib.crc32(w.encode()) % 1000 for w in t.split()]
        return {"input_ids": ids(text) if isinstance(text, str) else [ids(t) for t in text]}

    def get_vocab(self):
        return {}


class WordHashEmbedder(Embedder):
    # hashed bag of words: a real build (chunks, FAISS, manifest, commit) without loading a model
    def __init__(self):
        self.name, self.path, self.device, self.batch_size = "word-hash", "", "cpu", 64
        self.query_prefix = self.passage_prefix = ""
        self.pooling, self.normalize, self.dimension, self.max_seq_length, self.fingerprint = "mean", True, 64, 0, "h1"

    def encode(self, texts, **kw):
        out = np.full((len(texts), self.dimension), 1e-3, dtype=np.float32)
        for row, text in zip(out, texts):
            for word in text.lower().split():
                row[zlib.crc32(word.encode()) % self.dimension] += 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


real_build = Datastore.build

def counted_build(_, path, **kw):
    with open(marker, "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(2.0)  # a slow build: the other process asks for the datastore meanwhile
    return real_build(corpus, path, **kw)

Datastore.build = counted_build
Path(ready, str(os.getpid())).touch()
deadline = time.time() + 60
while len(os.listdir(ready)) < 2 and time.time() < deadline:  # start together
    time.sleep(0.01)
ds = default_datastore(WordTokenizer(), chunk_tokens=48, embedder=WordHashEmbedder(), progress=False)
print(json.dumps({"path": str(ds.path), "created": ds.manifest["created"], "files": ds.manifest["files"],
                  "passages": len(ds)}))
"""


def test_processes_started_together_on_a_fresh_cache_build_the_datastore_once(tmp_path):
    marker, ready = tmp_path / "builds.txt", tmp_path / "ready"
    ready.mkdir()
    env = {**os.environ, "EWE_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    args = [sys.executable, "-c", CHILD, str(DATA / "corpus.jsonl"), str(marker), str(ready)]
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    assert len(marker.read_text().split()) == 1  # one build between them
    waited = [err for _, err in outs if "waiting for process" in err]
    assert len(waited) == 1  # the other asked while it ran, waited, and loaded its result
    first, second = (json.loads(out.strip().splitlines()[-1]) for out, _ in outs)
    assert first == second and first["passages"] > 0
    assert [p.name for p in (tmp_path / "cache" / "datastores").iterdir() if not p.name.endswith(".lock")] \
        == [Path(first["path"]).name]  # no second copy, no work folder left behind
