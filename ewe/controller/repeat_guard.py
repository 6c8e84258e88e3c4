"""Whether a sentence adds anything to the answer written before it (checker.reject_repeats):
greedy decoding of a small model circles back to what it already said, and a repeated fact
pads the answer without adding a true one (verify/redundancy.py decides; this part knows the
answer so far).
"""
from __future__ import annotations

from ..verify.redundancy import Redundancy, sentence_repeats, text_repeats
from ..verify.types import SUPPORTED


class RepeatGuard:
    """The answer's earlier claims, read from the checks already made (`checks`: (start, text) ->
    check event) or, for sentences never checked, from `unverified_claims` or their text; its
    seconds go to the run's timings, part "repeats"."""

    def __init__(self, redundancy: Redundancy, extractor, prompt: str, subject: str | None, tracker,
                 checks: dict, timings):
        self.redundancy, self.extractor, self.prompt, self.subject = redundancy, extractor, prompt, subject
        self.tracker, self.checks, self.timings = tracker, checks, timings
        self.unverified_claims: dict[tuple[int, str], list[str]] = {}

    def earlier_claims(self, start: int) -> list[str]:
        """What the answer before token `start` says: the claims of its checked sentences, and the
        text of those never checked."""
        out = []
        for x in self.tracker.sentences:
            if x.end > start:
                break
            event = self.checks.get((x.start, x.text))
            out += ([v["claim"] for v in event["verdicts"]] if event and event["verdicts"]
                    else self.unverified_claims.get((x.start, x.text)) or [x.text])
        return out

    def _earlier_texts(self, start: int) -> list[str]:
        return [x.text for x in self.tracker.sentences if x.end <= start]

    def text_repeats(self, start: int, text: str, cut_off: bool = False) -> tuple[list[dict], list[str]]:
        """Why `text` at token `start` adds nothing to the answer before it ([] when it adds
        something), and its claims: for text that has no check of its own to read claims from.
        `cut_off`: the unfinished last sentence."""
        with self.timings.timed("repeats"):
            return text_repeats(self.redundancy, self.extractor, text, self.tracker.decode(0, start), self.prompt,
                                self._earlier_texts(start), self.earlier_claims(start), cut_off)

    def sentence_repeats(self, start: int, text: str, check) -> list[dict]:
        """Why the checked sentence at `start` adds nothing to the answer so far; [] when it adds something."""
        with self.timings.timed("repeats"):
            return sentence_repeats(self.redundancy, text, [c.text for c in check.claims], self._earlier_texts(start),
                                    self.earlier_claims(start), self.subject, self.prompt)

    def new_supported(self, start: int, check) -> int:
        """Supported claims of a candidate's check that the answer before `start` does not already hold."""
        claims = [v.claim.text for v in check.verdicts if v.label == SUPPORTED]
        if not claims:
            return 0
        with self.timings.timed("repeats"):
            novel = self.redundancy.novel(claims, self.earlier_claims(start), self.subject)
        return sum(1 for s in novel if s is None)
