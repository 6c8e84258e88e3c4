"""The datastore seen by the fact-checker: `verify.EvidenceSource` over `Datastore.search`.

The checker only knows the EvidenceSource protocol; this adapter reads the retrieval package's
datastore (verify uses retrieval, never the reverse), so evidence passages are the same chunks
memory units are made of.
"""
from __future__ import annotations

from typing import Callable

from ..retrieval.datastore import Datastore, Hit
from .types import Evidence


def hit_to_evidence(hit: Hit) -> Evidence:
    return Evidence(text=hit.text, title=hit.title, score=float(hit.score), source_id=f"{hit.source_id}#{hit.id}",
                    start=hit.start, end=hit.end)


class DatastoreEvidence:
    """Evidence for claims from a retrieval datastore (one passage per article by default).

    `opener` in place of `datastore` is called on the first search instead, so a checker whose
    every claim comes with its own evidence never loads, or builds, a datastore.
    """

    def __init__(self, datastore: Datastore | None, threshold: float | None = None, dedup_sources: bool = True,
                 *, opener: Callable[[], Datastore] | None = None):
        if (datastore is None) == (opener is None):
            raise ValueError("give a datastore or an opener, one of the two")
        self._datastore, self._opener = datastore, opener
        self.threshold = threshold
        self.dedup_sources = dedup_sources

    @property
    def datastore(self) -> Datastore:
        """The datastore, opened now on first use if an opener was given."""
        if self._datastore is None:
            self._datastore = self._opener()
        return self._datastore

    def search(self, queries: list[str], k: int) -> list[list[Evidence]]:
        if not queries:
            return []
        hits = self.datastore.search(list(queries), k=k, threshold=self.threshold, dedup_sources=self.dedup_sources)
        return [[hit_to_evidence(h) for h in row] for row in hits]
