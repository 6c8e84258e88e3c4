"""What `EWE.generate` returns for one prompt."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field


@dataclass
class GenerationResult:
    """One prompt's answer, with what produced it.

    `trace` (controlled runs) lists every pause, retrieval, check, backtrack and memory
    change as JSON-ready dicts (with method "cove": every CoVe stage); `sentences` gives each final sentence with whether it
    was checked and how many of its attempts failed.
    """

    prompt: str
    text: str
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    memory: dict = field(default_factory=dict)  # pool -> unit descriptions
    retrieved: list = field(default_factory=list)  # passages retrieved for the prompt: id, title, score
    stats: Mapping = field(default_factory=dict)  # ewe.stats: token counts, timings, pauses, checks, footprint
    trace: list = field(default_factory=list)
    sentences: list = field(default_factory=list)
    # controlled runs: the prompt's subject ("name"), whether the datastore has it ("found": its article
    # pinned, or a retrieved passage that can speak about it; null when there is no subject or no search),
    # and, pinned, its article's "title", "how" it was resolved and its "chunks"
    subject: dict = field(default_factory=dict)

    @property
    def subject_found(self) -> bool | None:
        return self.subject.get("found")

    def to_dict(self) -> dict:
        return {**asdict(self), "subject_found": self.subject_found}
