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

    def to_dict(self) -> dict:
        return asdict(self)
