"""EWE.generate filling its memory from a datastore (tiny model, the shipped small corpus)."""
from pathlib import Path

import pytest

from ewe import EWE
from ewe.config import ConfigError, EWEConfig
from ewe.retrieval import Datastore
from tiny import tiny_model, tiny_tokenizer

CORPUS = Path(__file__).parent / "data" / "corpus.jsonl"


@pytest.fixture(scope="module")
def datastore(tmp_path_factory):
    path = tmp_path_factory.mktemp("ds") / "small"
    return Datastore.build(CORPUS, path, tokenizer=tiny_tokenizer(), chunk_tokens=24)


def make(datastore, **retrieval):
    cfg = EWEConfig.build({"memory": {"unit_tokens": 24, "retrieval_units": 3}, "retrieval": {"top_k": 3, **retrieval}})
    return EWE(tiny_model(), tiny_tokenizer(), cfg, datastore=datastore)


def test_prompt_without_passages_fills_memory_from_retrieval(datastore):
    ewe = make(datastore)
    r = ewe.generate("Tell me about penicillin and Alexander Fleming.", max_new_tokens=4)
    assert r.retrieved[0]["title"] == "Penicillin"
    assert len(r.retrieved) == 3 == r.stats["memory_units"]
    assert len({h["title"] for h in r.retrieved}) == 3  # one chunk per source article
    expected = datastore.search("Tell me about penicillin and Alexander Fleming.", k=3, dedup_sources=True)[0]
    assert [u["id"] for u in r.memory["retrieval"]] == [ewe.encoder.encode([h.text])[0].id for h in expected]


def test_threshold_keeps_only_passages_above_it(datastore):
    hits = datastore.search("Tell me about penicillin.", k=3, dedup_sources=True)[0]
    ewe = make(datastore, threshold=(hits[0].score + hits[1].score) / 2)
    r = ewe.generate("Tell me about penicillin.", max_new_tokens=2)
    assert [h["title"] for h in r.retrieved] == [hits[0].title] and r.stats["memory_units"] == 1
    none = make(datastore, threshold=2.0).generate("Tell me about penicillin.", max_new_tokens=2)
    assert none.retrieved == [] and none.stats["memory_units"] == 0


def test_explicit_passages_bypass_retrieval(datastore):
    r = make(datastore).generate("Tell me about penicillin.", passages=["A passage of my own."], max_new_tokens=2)
    assert r.retrieved == [] and r.stats["memory_units"] == 1
    assert make(datastore).generate("Hi", passages=[], max_new_tokens=2).stats["memory_units"] == 0


def test_ra_baseline_prepends_the_same_passages(datastore):
    mem = make(datastore).generate("Tell me about penicillin.", max_new_tokens=2)
    ra = make(datastore, placement="prompt").generate("Tell me about penicillin.", max_new_tokens=2)
    assert ra.retrieved == mem.retrieved and ra.stats["memory_units"] == 0
    assert ra.stats["prompt_tokens"] > mem.stats["prompt_tokens"] + 20


def test_top_k_must_fit_the_pool(datastore):
    with pytest.raises(ConfigError, match="retrieval.top_k=5 passages do not fit memory.retrieval_units=3"):
        make(datastore, top_k=5)


def test_every_shipped_config_the_demo_and_the_tests_read_one_embedded_datastore(monkeypatch):
    """Issue 16: configs with and without a unit start token used to build two 14k-passage
    datastores one token apart (c127, c128); now a unit holds a passage plus its start token."""
    import ewe.retrieval as retrieval
    from ewe.retrieval.embedded import default_datastore_path

    asked = set()
    monkeypatch.setattr(retrieval, "default_datastore",
                        lambda tok, chunk_tokens=retrieval.DEFAULT_CHUNK_TOKENS, **kw: asked.add(chunk_tokens))
    configs = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
    for path in configs:
        for start_token in (True, False):
            cfg = EWEConfig.from_yaml(str(path), **{"memory.unit_start_token": start_token})
            if cfg.retrieval.source == "embedded":
                _ = EWE(tiny_model(), tiny_tokenizer(), cfg).datastore
    assert asked == {retrieval.DEFAULT_CHUNK_TOKENS}  # the size tests/test_retrieval_embedded.py builds
    tok = tiny_tokenizer()
    assert default_datastore_path(tok).name == default_datastore_path(tok, chunk_tokens=127).name
