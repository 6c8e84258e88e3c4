"""Retrieval: a FAISS + sentence-transformers datastore of passages sized for memory units.

    corpus.py     read JSONL / TSV / the embedded Wikipedia summaries -> Documents
    chunking.py   Documents -> passages of at most chunk_tokens generator tokens (and back: split_passage)
    embedder.py   sentence-transformers wrapper with explicit pooling / normalization
    datastore.py  build / load / search / add a datastore folder (index, embeddings, passages, manifest)
    embedded.py   default_datastore(tokenizer): the embedded Wikipedia, built once and cached
    in_prompt.py  how passages are written into a prompt (retrieval.prompt_format)
    cli.py        `ewe index build|search|info|add`
    bench.py      build and search benchmark on the embedded Wikipedia

Importing this package loads neither faiss nor sentence-transformers; they load on first use.
"""
from .chunking import DEFAULT_CHUNK_TOKENS, Chunk, Chunker, chunk_documents, format_passage
from .corpus import Corpus, CorpusError, CorpusIssue, Document, read_corpus
from .datastore import Datastore, DatastoreError, Hit
from .embedded import default_datastore, default_datastore_path
from .embedder import Embedder, EmbedderMismatchError

__all__ = [
    "DEFAULT_CHUNK_TOKENS",
    "Chunk",
    "Chunker",
    "Corpus",
    "CorpusError",
    "CorpusIssue",
    "Datastore",
    "DatastoreError",
    "Document",
    "Embedder",
    "EmbedderMismatchError",
    "Hit",
    "chunk_documents",
    "default_datastore",
    "default_datastore_path",
    "format_passage",
    "read_corpus",
]
