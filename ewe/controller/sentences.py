"""Which generated tokens form complete sentences.

The segmenter is pysbd (via verify.text); a sentence counts as complete only once the
next one has begun after whitespace (or decoding ended), since "Dr." or "3." may still
continue, and the same text fed token by token or at once gives the same sentences. Only
the text after the last complete sentence is re-segmented, and only when it holds a
sentence-ending character followed by more text, so the per-token cost stays small.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..verify.text import sentence_spans

_MAYBE_BOUNDARY = re.compile(r"[.!?\n…][\"'”’)\]]*\s+\S|\n\s*\S")


@dataclass
class Sentence:
    """Tokens [start, end) of the generated text, and their confidence."""

    start: int
    end: int
    text: str
    logprobs: list[float]
    entropies: list[float]
    complete: bool = True

    @property
    def mean_entropy(self) -> float:
        return sum(self.entropies) / len(self.entropies) if self.entropies else 0.0

    @property
    def min_prob(self) -> float:
        return math.exp(min(self.logprobs)) if self.logprobs else 1.0

    def describe(self) -> dict:
        return {"start": self.start, "end": self.end, "text": self.text, "complete": self.complete,
                "mean_entropy": round(self.mean_entropy, 4), "min_prob": round(self.min_prob, 4)}


class SentenceTracker:
    """The generated tokens (with log-probs and entropies) and the sentences they complete."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.tokens: list[int] = []
        self.logprobs: list[float] = []
        self.entropies: list[float] = []
        self.sentences: list[Sentence] = []  # complete sentences, in order

    def decode(self, start: int = 0, end: int | None = None) -> str:
        return self.tokenizer.decode(self.tokens[start:end], skip_special_tokens=True)

    @property
    def text(self) -> str:
        return self.decode()

    @property
    def tail_start(self) -> int:
        """First token after the last complete sentence."""
        return self.sentences[-1].end if self.sentences else 0

    def append(self, token: int, logprob: float, entropy: float) -> list[Sentence]:
        """Add one token; return the sentences it completed."""
        self.tokens.append(token)
        self.logprobs.append(logprob)
        self.entropies.append(entropy)
        return self._complete(final=False)

    def extend(self, tokens: list[int], logprobs: list[float], entropies: list[float]) -> list[Sentence]:
        self.tokens += tokens
        self.logprobs += logprobs
        self.entropies += entropies
        return self._complete(final=False)

    def finish(self, complete: bool) -> list[Sentence]:
        """Decoding ended: the remaining text is a last sentence (complete at end of sequence)."""
        out = self._complete(final=True)
        if out:
            out[-1].complete = complete
            if not complete:
                self.sentences.pop()  # a cut-off sentence is reported, never treated as finished
        return out

    def unfinished(self) -> Sentence | None:
        """The text after the last complete sentence (cut off by the token budget), if any."""
        start = self.tail_start
        if start >= len(self.tokens) or not self.decode(start).strip():
            return None
        return Sentence(start, len(self.tokens), self.decode(start).strip(), self.logprobs[start:],
                        self.entropies[start:], complete=False)

    def prefix(self, length: int) -> "SentenceTracker":
        """A new tracker holding only the first `length` tokens and the sentences within them."""
        out = SentenceTracker(self.tokenizer)
        out.tokens, out.logprobs, out.entropies = self.tokens[:length], self.logprobs[:length], self.entropies[:length]
        out.sentences = [s for s in self.sentences if s.end <= length]
        return out

    def truncate(self, length: int) -> str:
        """Keep the first `length` tokens; return the removed text."""
        removed = self.decode(length)
        del self.tokens[length:], self.logprobs[length:], self.entropies[length:]
        while self.sentences and self.sentences[-1].end > length:
            self.sentences.pop()
        return removed

    def _complete(self, final: bool) -> list[Sentence]:
        base = start = self.tail_start
        if start >= len(self.tokens):
            return []
        tail = self.decode(base)
        if not final and (not _MAYBE_BOUNDARY.search(tail) or tail.endswith("\ufffd")):
            return []  # no boundary yet, or a character whose bytes are still arriving
        spans = sentence_spans(tail)
        done = spans if final else spans[:-1]
        if not final:  # decoding goes on: a sentence ends only where whitespace parts it from the next
            # ("waited.." may still become "waited...", which pysbd splits differently)
            parted = next((i for i in range(len(done)) if spans[i + 1][0] <= spans[i][1]), len(done))
            done = done[:parted]
        new = []
        for i, (a, b) in enumerate(done):
            if final and i == len(done) - 1:
                end = len(self.tokens)
            else:
                end = self._token_at(base, spans[i + 1][0])
            if end <= start:
                continue
            new.append(self._sentence(start, end))
            start = end
        self.sentences += new
        return new

    def _token_at(self, base: int, char: int) -> int:
        """The last token boundary at or before character `char` of the text decoded from `base`."""
        best = base
        for j in range(base + 1, len(self.tokens) + 1):
            if len(self.decode(base, j)) > char:
                break
            best = j
        return best

    def _sentence(self, start: int, end: int) -> Sentence:
        return Sentence(start, end, self.decode(start, end).strip(), self.logprobs[start:end], self.entropies[start:end])
