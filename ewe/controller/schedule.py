"""When a kind of pause (retrieval or verification) is due.

Interval triggers count decoding steps (the paper's T_r, T_v) and fire only if a
sentence completed since that kind's last pause; otherwise the pause is skipped.
Confidence triggers (appendix B) fire for a sentence whose mean token entropy is above,
or whose least likely token's probability is below, a threshold.
"""
from __future__ import annotations

from .sentences import Sentence


class PauseSchedule:
    def __init__(self, kind: str, trigger: str, interval: int, entropy_threshold: float, min_prob_threshold: float):
        self.kind = kind
        self.trigger = trigger
        self.interval = interval
        self.entropy_threshold = entropy_threshold
        self.min_prob_threshold = min_prob_threshold
        self.pending: list[Sentence] = []  # complete sentences this kind has not handled
        self.since = 0  # decoding steps since this kind's last interval tick
        self.skipped = 0  # interval ticks with no new sentence

    @property
    def enabled(self) -> bool:
        return self.trigger != "never"

    def add(self, sentences: list[Sentence]) -> None:
        if self.enabled:
            self.pending += sentences

    def forget_from(self, token: int) -> None:
        """Drop pending sentences at or after `token` (they were removed)."""
        self.pending = [s for s in self.pending if s.end <= token]

    def tick(self) -> None:
        self.since += 1

    def due(self, final: bool = False) -> tuple[list[Sentence], str]:
        """Sentences to pause for now and why ([] when no pause); they leave `pending`.

        `final`: decoding ended, so interval triggers fire for whatever is pending.
        """
        if not self.enabled:
            return [], ""
        if self.trigger == "interval":
            if not (final or self.since >= self.interval):
                return [], ""
            self.since = 0
            if not self.pending:
                self.skipped += 1
                return [], ""
            due, self.pending = self.pending, []
            return due, "end of decoding" if final else f"interval {self.interval} tokens"
        due, reasons = [], []
        for s in self.pending:
            if self.trigger == "entropy" and s.mean_entropy > self.entropy_threshold:
                due.append(s)
                reasons.append(f"mean entropy {s.mean_entropy:.2f} > {self.entropy_threshold}")
            elif self.trigger == "min_prob" and s.min_prob < self.min_prob_threshold:
                due.append(s)
                reasons.append(f"min token probability {s.min_prob:.3f} < {self.min_prob_threshold}")
        self.pending = []
        return due, "; ".join(reasons)


def pause_schedules(controller) -> dict[str, PauseSchedule]:
    """The retrieval (T_r) and verification (T_v) schedules of the configuration's `controller` section."""
    c = controller
    return {kind: PauseSchedule(kind, getattr(c, f"{prefix}_trigger"), getattr(c, f"{prefix}_interval"),
                                c.entropy_threshold, c.min_prob_threshold)
            for kind, prefix in (("retrieval", "retrieval"), ("verification", "verify"))}
