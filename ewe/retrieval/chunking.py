"""Cutting documents into passages that fit one working-memory unit.

A passage's text is what goes into memory, so its length is counted with the
*generator's* tokenizer (no special tokens), title prefix included:

    "{title} ({description}): {chunk}"   or   "{title}: {chunk}"   (no description)
    "{chunk}"                                                    (no title)

`chunk` is `document.text[start:end]` exactly, so offsets always point at the source.
A document that fits one passage is one chunk. A longer one becomes the fewest chunks that fit,
balanced (the largest as small as it can be), cut on sentence boundaries (pysbd) where they can
be; a sentence longer than a chunk is cut at a word boundary, or mid-word when one word is too
long; a chunk of a longer document under the floor (a quarter of the budget) takes words from
its neighbour, so no chunk is a tail of a few words. CHUNKING_VERSION names this rule in
the datastore's manifest and the embedded store's cache key.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..tokens import text_ids, text_ids_many
from .corpus import Document

# A memory unit of M tokens holds one passage plus its start token, so the default passage is
# M - 1 = 127 tokens for ewe's default M = 128 (config memory.unit_tokens); every config, with
# or without the start token, reads the same datastore (issue 16: one datastore, not two).
DEFAULT_CHUNK_TOKENS = 127
MIN_CHUNK_TOKENS = 8
CHUNKING_VERSION = 2  # 1: greedy fill, one tail per long document; 2: balanced, with a floor


def format_passage(title: str, description: str, body: str) -> str:
    """The passage text stored for a chunk and put into memory."""
    if not title:
        return body
    if description:
        return f"{title} ({description}): {body}"
    return f"{title}: {body}"


def split_passage(text: str) -> tuple[str, str, str]:
    """(title, description, body) of a passage written by format_passage; ("", "", text)
    when it does not open with such a head. Descriptions may hold parentheses of their own
    ("physicist (1867-1934)")."""
    m = re.match(r"([^():\n]{1,120}?)(\s*\(|:\s)", text)
    if not m:
        return "", "", text
    title, i = m.group(1).strip(), m.end()
    if m.group(2).strip() != "(":
        return title, "", text[i:]
    groups = []  # "(planet) (smallest planet)": the last group is the description
    while True:
        start, depth = i, 1
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth:
            return "", "", text
        groups.append((start - 1, i))
        nxt = re.match(r"\s*\(|:\s", text[i:])
        if not nxt:
            return "", "", text
        i += nxt.end()
        if nxt.group(0).strip() == ":":
            break
    (d0, d1) = groups[-1]
    title = text[:d0].strip()
    return title, text[d0 + 1:d1 - 1], text[i:]


@dataclass(frozen=True)
class Chunk:
    """A piece of one document. `text` is `source.text[start:end]`; `passage` adds the title prefix."""

    doc_id: str
    title: str
    description: str
    text: str
    start: int
    end: int
    n_tokens: int  # tokens of `passage`, no special tokens

    @property
    def passage(self) -> str:
        return format_passage(self.title, self.description, self.text)


def tokenizer_name(tokenizer) -> str:
    return str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)


def tokenizer_fingerprint(tokenizer) -> str:
    """A short hash of the tokenizer's vocabulary and rules: chunks made with one
    tokenizer are not guaranteed to fit the budget of another."""
    h = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        state = json.loads(backend.to_str())
        state.pop("truncation", None)  # call-time settings the wrapper changes as it is used
        state.pop("padding", None)
        h.update(json.dumps(state, sort_keys=True).encode())
    else:
        h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    return h.hexdigest()[:16]


class Chunker:
    """Chunks documents to at most `chunk_tokens` tokens of `tokenizer` per passage.

    Args:
        tokenizer: a Hugging Face tokenizer (the generator's: memory units are counted in it).
        chunk_tokens: the most tokens of a passage, title prefix included, no special tokens.
        language: pysbd's language code for sentence splitting.
    """

    def __init__(self, tokenizer, chunk_tokens: int = DEFAULT_CHUNK_TOKENS, language: str = "en"):
        if not isinstance(chunk_tokens, int) or chunk_tokens < MIN_CHUNK_TOKENS:
            raise ValueError(f"chunk_tokens must be an integer >= {MIN_CHUNK_TOKENS}, got {chunk_tokens!r}")
        self.tokenizer = tokenizer
        self.chunk_tokens = chunk_tokens
        self.language = language
        self._segmenter = None

    # -- token counting -------------------------------------------------------------

    def count(self, text: str) -> int:
        return len(text_ids(self.tokenizer, text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [len(x) for x in text_ids_many(self.tokenizer, list(texts))]

    # -- chunking -------------------------------------------------------------------

    def chunk(self, doc: Document) -> list[Chunk]:
        return self.chunk_all([doc])

    def chunk_all(self, docs: Iterable[Document], progress: bool = False) -> list[Chunk]:
        """Chunks of every document, in document order."""
        docs = list(docs)
        # Fast path, in batches: most short documents fit whole, and need no sentence split.
        title_desc = [self._prefix(d) for d in docs]
        spans = [_strip_span(d.text, 0, len(d.text)) for d in docs]
        whole = [format_passage(t, ds, d.text[s:e]) for d, (t, ds), (s, e) in zip(docs, title_desc, spans)]
        counts: list[int] = []
        for i in range(0, len(whole), 512):
            counts.extend(self.count_many(whole[i : i + 512]))
        out: list[Chunk] = []
        it = zip(docs, title_desc, spans, counts)
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(it, total=len(docs), desc="chunking", unit="doc")
        for doc, (title, desc), (s, e), n in it:
            if n <= self.chunk_tokens:
                out.append(Chunk(doc.id, title, desc, doc.text[s:e], s, e, n))
            else:
                out.extend(self._split(doc, title, desc))
        return out

    def _prefix(self, doc: Document) -> tuple[str, str]:
        """(title, description) as kept on every chunk: the prefix may use at most half
        the budget; the description goes first, then the title is shortened."""
        half = self.chunk_tokens // 2
        title, desc = doc.title, doc.description
        if not title:
            return "", ""
        if desc and self.count(format_passage(title, desc, "")) <= half:
            return title, desc
        if self.count(format_passage(title, "", "")) <= half:
            return title, ""
        end = _longest_fitting(lambda e: self.count(format_passage(title[:e].rstrip() + "…", "", "")) <= half, 0, len(title))
        return title[:end].rstrip() + "…", ""

    def _split(self, doc: Document, title: str, desc: str) -> list[Chunk]:
        """A document too long for one passage, as the fewest passages that fit, cut at sentence
        boundaries so that the largest is as small as it can be (balanced: a greedy fill left
        973 of the embedded articles' last chunks at 30 words or fewer, whose embedding is mostly
        the title). A chunk still under the floor takes words from a neighbour (`_lift_short`)."""
        text = doc.text
        budget = self.chunk_tokens - self.count(format_passage(title, desc, "x")) + self.count("x")
        pieces: list[tuple[int, int]] = []
        for s, e in self._sentences(text):
            if self.count(text[s:e]) <= budget:
                pieces.append((s, e))
            else:
                pieces.extend(self._cut(text, s, e, budget))
        pieces = [p for piece in pieces for p in self._fitting(title, desc, text, *piece)]
        spans = self._balanced(title, desc, text, pieces)
        spans = self._lift_short(title, desc, text, spans)
        return [Chunk(doc.id, title, desc, text[s:e], s, e, self.count(format_passage(title, desc, text[s:e])))
                for s, e in spans]

    def floor_tokens(self) -> int:
        """The fewest body tokens a chunk of a longer document holds (a quarter of the budget)."""
        return self.chunk_tokens // 4

    def _fitting(self, title, desc, text, s, e) -> list[tuple[int, int]]:
        """Piece [s, e) as pieces that fit a passage alone with the prefix (tokens can merge
        differently after it, so a piece within `budget` may still overflow by one)."""
        out = []
        while s < e:
            if self.count(format_passage(title, desc, text[s:e])) <= self.chunk_tokens:
                out.append((s, e))
                break
            fits = lambda end: self.count(format_passage(title, desc, text[s:end])) <= self.chunk_tokens  # noqa: E731
            cut = _word_cut(text, s, _longest_fitting(fits, s + 1, e))
            out.append(_strip_span(text, s, cut))
            s, e = _strip_span(text, cut, e)
        return out

    def _balanced(self, title, desc, text, pieces) -> list[tuple[int, int]]:
        """Contiguous groups of `pieces`: the fewest that fit, then the smallest largest group
        (a min-max partition by dynamic programming; summaries have a few dozen pieces at most)."""
        m = len(pieces)
        cost: dict[tuple[int, int], int] = {}

        def size(i: int, j: int) -> int:  # tokens of the passage made of pieces i..j-1
            if (i, j) not in cost:
                cost[(i, j)] = self.count(format_passage(title, desc, text[pieces[i][0]:pieces[j - 1][1]]))
            return cost[(i, j)]

        inf = (float("inf"), float("inf"))
        # best[j] = (groups, largest group) covering the first j pieces; prev[j] = where the last group starts
        best: list[tuple[float, float]] = [(0, 0)] + [inf] * m
        prev = [0] * (m + 1)
        for j in range(1, m + 1):
            for i in range(j - 1, -1, -1):
                n = size(i, j)
                if n > self.chunk_tokens:
                    break  # a longer group only grows
                cand = (best[i][0] + 1, max(best[i][1], n))
                if cand < best[j]:
                    best[j], prev[j] = cand, i
        cuts, j = [], m
        while j > 0:
            cuts.append((prev[j], j))
            j = prev[j]
        return [(pieces[i][0], pieces[j - 1][1]) for i, j in reversed(cuts)]

    def _lift_short(self, title, desc, text, spans) -> list[tuple[int, int]]:
        """A chunk under the floor takes words from its neighbour, a word at a time, while the
        neighbour keeps the floor and the short chunk still fits: from the end of the chunk before
        it, or, for a first chunk, from the start of the second (a short lead before a long
        sentence)."""
        floor = self.floor_tokens()
        spans = list(spans)
        fits = lambda s, e: self.count(format_passage(title, desc, text[s:e])) <= self.chunk_tokens  # noqa: E731
        for k in range(len(spans)):
            s, e = spans[k]
            if len(spans) < 2 or self.count(text[s:e]) >= floor:
                continue
            if k > 0:  # move the cut before it back
                ps, pe = spans[k - 1]
                for w in reversed([mt.start() for mt in re.finditer(r"(?<=\s)\S", text[ps:pe])]):
                    if not fits(ps + w, e) or self.count(text[ps:ps + w]) < floor:
                        break
                    s = ps + w
                    if self.count(text[s:e]) >= floor:
                        break
                spans[k - 1], spans[k] = _strip_span(text, ps, s), (s, e)
            else:  # move the cut after it forward
                ns, ne = spans[1]
                for mt in re.finditer(r"\S(?=\s)", text[ns:ne]):
                    cut = ns + mt.end()
                    if not fits(s, cut) or self.count(text[cut:ne]) < floor:
                        break
                    e = cut
                    if self.count(text[s:e]) >= floor:
                        break
                spans[0], spans[1] = (s, e), _strip_span(text, e, ne)
        return spans

    def _sentences(self, text: str) -> list[tuple[int, int]]:
        """Sentence spans (whitespace trimmed) covering the text in order."""
        if self._segmenter is None:
            import pysbd

            self._segmenter = pysbd.Segmenter(language=self.language, clean=False)
        spans, pos = [], 0
        for seg in self._segmenter.segment(text):
            seg = seg.strip()
            if not seg:
                continue
            at = text.find(seg, pos)
            if at < 0:  # pysbd changed the text: keep the rest whole, _cut will split it
                break
            spans.append((at, at + len(seg)))
            pos = at + len(seg)
        rest = _strip_span(text, pos, len(text))
        if rest[1] > rest[0]:
            spans.append(rest)
        return spans

    def _cut(self, text: str, s: int, e: int, budget: int) -> list[tuple[int, int]]:
        """Split an over-long sentence into pieces of at most `budget` tokens."""
        out = []
        while s < e:
            if self.count(text[s:e]) <= budget:
                out.append((s, e))
                break
            end = _longest_fitting(lambda x: self.count(text[s:x]) <= budget, s + 1, e)
            cut = _word_cut(text, s, end)
            out.append(_strip_span(text, s, cut))
            s = _strip_span(text, cut, e)[0]
        return out


def chunk_documents(
    documents: Iterable[Document], tokenizer, chunk_tokens: int = DEFAULT_CHUNK_TOKENS, progress: bool = False
) -> list[Chunk]:
    """Convenience: `Chunker(tokenizer, chunk_tokens).chunk_all(documents)`."""
    return Chunker(tokenizer, chunk_tokens).chunk_all(documents, progress=progress)


def _strip_span(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _longest_fitting(fits, lo: int, hi: int) -> int:
    """Largest x in [lo, hi] with fits(x), assuming fits is monotone; lo if none."""
    best = lo
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def _word_cut(text: str, s: int, end: int) -> int:
    """Move a cut at `end` back to the last whitespace, unless that loses over half the piece."""
    ws = max(text.rfind(" ", s, end + 1), text.rfind("\n", s, end + 1))
    if ws > s + (end - s) // 2:
        return ws
    return max(end, s + 1)
