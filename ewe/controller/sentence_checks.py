"""The checker's verdicts on one answer's sentences, with their time: checked one by one as a
pause asks, or found already done where several sentences (a round's candidates, or the rows
of a batch that pause at the same step) were checked as one batch first.
"""
from __future__ import annotations

import time


class SentenceChecks:
    """`timings` is the run's time breakdown (stats.Timings): "check" gets every check, "check_candidates" the
    candidates' share, and "check_extract" / "check_search" / "check_judge" the checker's parts."""

    def __init__(self, checker, prompt: str, timings):
        self.checker, self.prompt, self.timings = checker, prompt, timings
        self.prefetched: dict[tuple[str, str], object] = {}  # (sentence, context) -> its check, done in a batch

    def check(self, text: str, context: str, candidate: bool = False):
        """The checker's verdict on one sentence (checked already if it was part of a batch)."""
        t0 = time.perf_counter()
        check = self.prefetched.pop((text, context), None)
        if check is None:
            check = self.checker.check_sentence(text, context=context, prompt=self.prompt)
            seconds = time.perf_counter() - t0
        else:  # its share of the batch that checked it
            seconds = (getattr(check, "timings", None) or {}).get("total", 0.0)
        self.timings.add("check", seconds)
        if candidate:
            self.timings.add("check_candidates", seconds)
        timings = getattr(check, "timings", None) or {}
        for part, key in (("extract", "check_extract"), ("search", "check_search"), ("check", "check_judge")):
            self.timings.add(key, timings.get(part, 0.0))
        return check

    def check_together(self, items: list[tuple[str, str]]) -> None:
        """Check these (sentence, context) pairs as one batch now; `check` then finds each done."""
        if len(items) > 1:
            for (text, context), check in zip(items, check_all(self.checker, [(t, c, self.prompt) for t, c in items])):
                self.prefetched[(text, context)] = check


def check_all(checker, items: list[tuple[str, str, str]]) -> list:
    """(sentence, context, prompt) checked as one batch where the checker can, else one by one."""
    if hasattr(checker, "check_sentences"):
        return checker.check_sentences(items)
    return [checker.check_sentence(text, context=context, prompt=prompt) for text, context, prompt in items]
