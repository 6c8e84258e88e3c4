"""Which sentences of the pinned subject article an answer has stated, and which it has not.

The model ends an answer when it has said what it wanted to, often after one passage's worth
(issue 72: a median 40 words with the subject's whole summary in memory). The controller refuses
such an end while the article still holds unstated sentences (ControlledRun._refuse_end) and
puts those in focus, so it must know what the answer has stated. It reads that from the checks
already made, not from a second model:

- a claim of a kept answer sentence that the checker judged supported, with a chunk of the
  article as its lead evidence, states the sentence of that chunk it shares most content words
  with (at least half the claim's own, the subject's names left out);
- a sentence most of whose content words the answer writes is stated too (its claims may have
  been checked against another passage, or not yet at all).

A sentence without a content word besides the subject's names counts as stated: nothing is left
to say. This is the loop's own estimate; `ewe eval`'s coverage (verify/coverage.py) measures
the answer against the article separately, by alignment, and is not read here.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..verify.text import content_keys, split_sentences

LEXICAL_SHARE = 0.6  # a sentence whose content words the answer writes at least this share of is stated


@dataclass(frozen=True)
class ArticleSentence:
    chunk: int  # the chunk's passage id
    text: str
    keys: frozenset[str]  # content words, the subject's names left out


class ArticleUse:
    """The sentences of `chunks` (the pinned chunks, datastore Hits, in order) and what an answer states of them."""

    def __init__(self, title: str, chunks, names: str = ""):
        self.title = title
        drop = content_keys(f"{title} {names}")
        self.sentences = [ArticleSentence(h.id, s, frozenset(content_keys(s) - drop))
                          for h in chunks for s in split_sentences(h.body)]
        self.names = drop
        self.chunk_ids = {h.id for h in chunks}

    def stated(self, checks: list[dict], answer: str) -> list[bool]:
        """Per article sentence, whether the answer states it; `checks`: the check events (trace.check_event)
        of the answer's sentences as they stand now (a removed sentence's check must not be among them)."""
        out = [not s.keys for s in self.sentences]
        for check in checks:
            for v in check.get("verdicts", []):
                if v.get("label") == "supported" and v.get("evidence"):
                    i = self._led_to(v["claim"], v["evidence"][0])
                    if i is not None:
                        out[i] = True
        written = content_keys(answer)
        for i, s in enumerate(self.sentences):
            if not out[i] and len(s.keys & written) >= LEXICAL_SHARE * len(s.keys):
                out[i] = True
        return out

    def unstated(self, checks: list[dict], answer: str) -> list[str]:
        """The article's sentences the answer has not stated, in the article's order."""
        return [s.text for s, done in zip(self.sentences, self.stated(checks, answer)) if not done]

    def _led_to(self, claim: str, evidence: dict) -> int | None:
        """The article sentence a supported claim was read from, when its lead evidence is one of the pinned chunks."""
        chunk = _chunk_id(evidence.get("source_id", ""))
        if chunk not in self.chunk_ids:
            return None
        keys = content_keys(claim) - self.names
        if not keys:
            return None
        best, shared = None, 0
        for i, s in enumerate(self.sentences):
            if s.chunk == chunk and len(s.keys & keys) > shared:
                best, shared = i, len(s.keys & keys)
        return best if shared * 2 >= len(keys) else None


def _chunk_id(source_id: str) -> int | None:
    """The passage id in an evidence's source id ("<document>#<passage id>", verify/datastore_evidence.py)."""
    _, sep, tail = str(source_id).rpartition("#")
    return int(tail) if sep and tail.isdigit() else None
