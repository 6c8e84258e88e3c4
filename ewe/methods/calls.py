"""What the checked baselines share: the Runtime's parts and fact-checker, and which of an
answer's sentences get checked."""
from __future__ import annotations

from ..tokens import text_ids
from ..verify.degenerate import drop_no_answers
from ..verify.text import sentence_spans
from .registry import Method


def without_repeats(runtime, text: str, prompt: str, trace, extractor=None, cut_off: bool = False) -> str:
    """The answer a whole-answer method returns, without its sentences that are no answer
    (degenerate, or about someone else: checker.reject_degenerate, reject_off_subject; traced as
    "no_answer_dropped", as EWE's loop fails them) and those that add nothing to the sentences
    before them (checker.reject_repeats; traced as "repeats_dropped"). `cut_off`: the token
    budget ended the text (its last sentence may be unfinished)."""
    ck = runtime.config.checker
    text, dropped = drop_no_answers(text, prompt, ck.reject_degenerate, ck.reject_off_subject)
    for d in dropped:
        trace.add("no_answer_dropped", **d, cut_off=False)
    if not ck.reject_repeats or not text.strip():
        return text
    from ..judge.checker import shipped_judge
    from ..verify.redundancy import Redundancy, drop_repeats

    kept, dropped = drop_repeats(Redundancy(shipped_judge), extractor, text, prompt, cut_off)
    if dropped:
        trace.add("repeats_dropped", dropped=dropped)
    return kept


def checked_spans(answer: str, cut_off: bool) -> list[tuple[int, int]]:
    """The answer's sentences that get checked: all but a last one cut off by the token budget
    (`cut_off`; as in EWE's controller, a cut-off sentence is never checked)."""
    spans = list(sentence_spans(answer))
    return spans[:-1] if cut_off and spans else spans


def text_tokens(runtime, text: str) -> list[int]:
    """The token ids of a text no single model call produced (an answer assembled after the fact)."""
    return text_ids(runtime.tokenizer, text)


class CheckedMethod(Method):
    """A baseline that checks with the Runtime's fact-checker."""

    @classmethod
    def check_config(cls, config) -> None:
        if config.retrieval.source is None:  # also where vr.open_book and a2r retrieve their passages
            raise ValueError(f"method {cls.name!r} checks against evidence from a datastore: set retrieval.source "
                             "(e.g. 'embedded' or a datastore folder)")

    @classmethod
    def checks_itself(cls, config) -> bool:
        return True

    @property
    def checker(self):
        """The Runtime's fact-checker (built on first use and kept)."""
        return self.runtime.fact_checker()
