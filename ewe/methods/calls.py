"""What the checked baselines share: one EWE's parts with its fact-checker built on first use,
and one plain model call (chat template, no working memory, no pauses) with the room left
in the context checked first."""
from __future__ import annotations


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


class CheckedMethod:
    """A baseline run with one EWE's model, datastore and fact-checker (the configured one,
    built on first use, unless one is given)."""

    def __init__(self, ewe, fact_checker=None):
        self.ewe = ewe
        self._checker = fact_checker

    @property
    def checker(self):
        if self._checker is None:
            self._checker = self.ewe.fact_checker()
        return self._checker
