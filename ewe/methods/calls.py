"""What the checked baselines share: one EWE's parts and fact-checker (`EWE.fact_checker`),
one plain model call (chat template, no working memory, no pauses) with the room left in
the context checked first, and which of an answer's sentences get checked."""
from __future__ import annotations

from ..tokens import text_ids
from ..verify.text import sentence_spans


def checked_spans(answer: str, cut_off: bool) -> list[tuple[int, int]]:
    """The answer's sentences that get checked: all but a last one cut off by the token budget
    (`cut_off`; as in EWE's controller, a cut-off sentence is never checked)."""
    spans = list(sentence_spans(answer))
    return spans[:-1] if cut_off and spans else spans


def greedy(ewe, dec, max_new_tokens: int):
    """The decoding settings of a greedy stage of `max_new_tokens` (dec's system prompt kept)."""
    return ewe._decoding(max_new_tokens=max_new_tokens, temperature=0.0, top_p=1.0, system_prompt=dec.system_prompt)


def complete(ewe, text: str, dec, what: str):
    """`text` answered with `dec`'s settings, its token budget cut to the room the context has
    left; a prompt that leaves no room is an error naming `what` it was for."""
    ids = ewe.prompt_ids(text, dec.system_prompt)
    room = ewe.max_positions - len(ids)
    if room < 1:
        raise ValueError(f"the {what} prompt is {len(ids)} tokens; the context holds at most {ewe.max_positions} "
                         "(max_position_embeddings)")
    if dec.max_new_tokens > room:
        dec = dec.model_copy(update={"max_new_tokens": room})
    [out] = ewe._generate_batch([text], [[]], dec)
    return out


def text_tokens(ewe, text: str) -> list[int]:
    """The token ids of a text no single model call produced (an answer assembled after the fact)."""
    return text_ids(ewe.tokenizer, text)


class CheckedMethod:
    """A baseline run with one EWE's model, datastore and fact-checker."""

    def __init__(self, ewe):
        self.ewe = ewe

    @property
    def checker(self):
        """The EWE's fact-checker (`EWE.fact_checker` builds it on first use and keeps it)."""
        return self.ewe.fact_checker()
