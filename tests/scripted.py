"""A tiny Llama whose next token follows a script, and a fact-checker that follows one too.

The model still runs its real forward (so the KV cache, cropping and memory attention all
work as usual); only the final logits are replaced, so tests can say exactly which
sentences get written, with what confidence, and what changes once feedback is in memory.
"""
from __future__ import annotations

import math
import weakref

import torch
from transformers import LlamaForCausalLM

from tiny import tiny_model, tiny_tokenizer

from ewe.verify.prompt_subject import subject_of
from ewe.verify.types import SUPPORTED, UNSUPPORTED, Claim, Evidence, SentenceCheck, Verdict


class ScriptedLM(LlamaForCausalLM):
    """`script(generated_ids, memory_units) -> (token_id, probability)` picks each next token.

    A script may instead return {token_id: probability, ...} (a choice the sampler makes),
    and a script with `wants_prompt = True` is called with the row's prompt ids as a third
    argument (to see passages placed in the prompt). Each batch row follows the script on
    its own tokens and memory.
    """

    script = None

    def forward(self, input_ids=None, position_ids=None, past_key_values=None, **kwargs):
        fresh = past_key_values is None or past_key_values.get_seq_length() == 0
        out = super().forward(input_ids=input_ids, position_ids=position_ids, past_key_values=past_key_values, **kwargs)
        # one state per cache, so sessions may interleave (a refiner call in the middle of a generation);
        # a cache never seen and not fresh is a branch of the last one used: it starts from its tokens
        states = self.__dict__.setdefault("_states", {})
        key = id(past_key_values)
        if fresh:
            _remember(states, past_key_values, [({}, int(position_ids[b, -1])) for b in range(input_ids.shape[0])])
        elif key not in states:  # (a prompt read on top of a copied beginning ends where `read` says)
            end_of_read = self.__dict__.pop("_read_prompt_end", None)
            _remember(states, past_key_values,
                      [(dict(seq), end if end_of_read is None else end_of_read) for seq, end in self._last[:1]])
        if past_key_values is not None and past_key_values.__dict__.get("_scripted_key") != key:
            _follow_row_selection(past_key_values, states, key)
        rows = states[key]
        self._last = rows
        while len(rows) < input_ids.shape[0]:  # the rows were repeated (candidates sharing a prefix)
            rows.append((dict(rows[0][0]), rows[0][1]))
        memory = kwargs.get("ewe_memory")
        slots = kwargs.get("ewe_slots")  # a slot cache's step: batch row b is the cache's row slots[b]
        vocab = out.logits.shape[-1]
        for b in range(input_ids.shape[0]):
            seq, prompt_end = rows[b if slots is None else int(slots[b])]
            pos = position_ids[b if position_ids.shape[0] > 1 else 0].tolist()
            for p, t in zip(pos, input_ids[b].tolist()):
                seq[p] = t
            last = pos[-1]
            for p in [p for p in seq if p > last]:
                del seq[p]  # cropped away
            generated = [seq[p] for p in range(prompt_end + 1, last + 1)]
            units = len(memory.unit_bounds[b if slots is None else int(slots[b])]) if memory is not None else 0
            self.seq, self.prompt_end = seq, prompt_end  # the row's view, for scripts and tests that look inside
            if getattr(self.script, "wants_prompt", False):
                choice = self.script(generated, units, [seq[p] for p in sorted(seq) if p <= prompt_end])
            else:
                choice = self.script(generated, units)
            out.logits[b, -1, :] = _logits(choice, vocab)
        self.seq, self.prompt_end = rows[0]
        return out


def _remember(states: dict, cache, rows: list) -> None:
    """The script state of `cache`'s rows, kept by the cache's id for as long as the cache lives (a
    new cache that gets a dead one's id must not inherit its state)."""
    if cache is None:
        return
    key = id(cache)
    if key not in states:
        weakref.finalize(cache, states.pop, key, None)
    states[key] = rows


def _follow_row_selection(cache, states: dict, key: int) -> None:
    """When rows leave the batch (the loop drops stopped rows from the cache), drop their script
    states too, so each remaining row keeps following its own tokens."""
    select = type(cache).batch_select_indices.__get__(cache)  # not a copied cache's patch (branches deep-copy)

    def select_and_follow(indices):
        select(indices)
        states[key] = [states[key][i] for i in indices.tolist()]

    cache.batch_select_indices, cache._scripted_key = select_and_follow, key


def states_of(session):
    """The script states of the model `session` decodes with (None: not a scripted model)."""
    return session.model.__dict__.get("_states") if isinstance(session.model, ScriptedLM) else None


def _follow_branches() -> None:
    """A branch of a session (its candidates, a prompt read on top of its beginning) follows the
    script from the session's tokens."""
    from ewe.engine.session import DecodingSession

    branch = DecodingSession.branch

    def branch_from(self, *args, **kwargs):  # a branch copies the cache it is taken from: follow that one
        states = states_of(self)
        if states is not None and id(self.cache) in states:
            self.model._last = states[id(self.cache)]
        return branch(self, *args, **kwargs)

    read = DecodingSession.read

    def read_from(self, ids, memory_state=None, reuse=False):  # a prompt whose beginning is copied from this cache
        states = states_of(self)
        if states is not None and id(self.cache) in states:
            self.model._last = states[id(self.cache)]
            self.model._read_prompt_end = self.position_offset + len(ids) - 1
        try:
            return read(self, ids, memory_state, reuse)
        finally:
            self.model.__dict__.pop("_read_prompt_end", None)

    repeat = DecodingSession.repeat_rows

    def repeat_rows(self, rows, memory_state=None):  # every copy follows the row's script from now on
        repeat(self, rows, memory_state)
        states = states_of(self)
        if states is not None and id(self.cache) in states:
            seq, end = states[id(self.cache)][0]
            states[id(self.cache)] = [(dict(seq), end) for _ in range(rows)]

    DecodingSession.repeat_rows = repeat_rows
    DecodingSession.branch, DecodingSession.read = branch_from, read_from


def _follow_slots() -> None:
    """A continuous batch's rows sit in slots (engine/slots.py): a slot follows the script of the
    row that joined into it; a forward of one held row at its slot, a view of it and a branch from
    it follow that slot's."""
    from ewe.engine.slots import SlotSession

    write, row_cache, view, branch = SlotSession._write, SlotSession.row_cache, SlotSession.view, SlotSession.branch

    def write_slot(self, slot, part, row):
        write(self, slot, part, row)
        states = states_of(self)
        if states is not None and id(part.cache) in states:
            if id(self.cache) not in states:
                _remember(states, self.cache, [])
            rows = states[id(self.cache)]
            while len(rows) <= slot:
                rows.append(({}, 0))  # a free slot: never fed
            seq, end = states[id(part.cache)][row]
            rows[slot] = (dict(seq), end)
        self.cache._scripted_key = id(self.cache)  # rows move between slots by `_move` only (followed below)

    def slot_state(self, slot):
        states = states_of(self)
        if states is not None and id(self.cache) in states:
            return states, states[id(self.cache)][slot]
        return states, None

    def row_cache_of(self, slot):  # the slot's own state (its tokens dict shared: the forward writes the slot's)
        out = row_cache(self, slot)
        states, state = slot_state(self, slot)
        if state is not None:
            _remember(states, out, [state])
        return out

    def view_of(self, slot):
        out = view(self, slot)
        states, state = slot_state(self, slot)
        if state is not None:
            _remember(states, out.cache, [(dict(state[0]), state[1])])
        return out

    def branch_of(self, slot, *args, **kwargs):  # the branch's new cache starts from the slot's tokens
        states, state = slot_state(self, slot)
        if state is not None:
            self.model._last = [state]
        return branch(self, slot, *args, **kwargs)

    def move_slot(self, source, slot):
        move(self, source, slot)
        states = states_of(self)
        if states is not None and id(self.cache) in states:
            rows = states[id(self.cache)]
            while len(rows) <= max(source, slot):
                rows.append(({}, 0))
            rows[slot], rows[source] = rows[source], ({}, 0)

    move = SlotSession._move
    SlotSession._write, SlotSession._move = write_slot, move_slot
    SlotSession.row_cache, SlotSession.view, SlotSession.branch = row_cache_of, view_of, branch_of


_follow_branches()
_follow_slots()


def _logits(choice, vocab: int) -> torch.Tensor:
    """(token, p) or {token: p}: those probabilities, the rest spread evenly over the vocabulary."""
    probs = dict([choice]) if isinstance(choice, tuple) else dict(choice)
    rest = 1 - sum(probs.values())
    logits = torch.full((vocab,), math.log(rest / (vocab - len(probs))) if rest > 1e-9 else -1e4)
    for token, p in probs.items():
        logits[token] = math.log(p)
    return logits


def scripted_model(script, seed: int = 0) -> ScriptedLM:
    base = tiny_model(seed)
    model = ScriptedLM(base.config)
    model.load_state_dict(base.state_dict())
    model.generation_config = base.generation_config
    model.script = script
    return model.eval()


def text_script(choose_text, unsure: tuple[str, ...] = (), unsure_prob: float = 0.05):
    """A script that writes `choose_text(memory_units)`, token by token, then ends.

    Tokens of any sentence listed in `unsure` get probability `unsure_prob`; the rest 0.9.
    If the text written so far is not a prefix of the text chosen now, it ends (EOS).
    """
    tok = tiny_tokenizer()

    def script(generated: list[int], units: int):
        text = choose_text(units)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        n = len(generated)
        if generated != ids[:n] or n >= len(ids):
            return tok.eos_token_id, 0.9
        before = tok.decode(ids[:n])
        sentence_ends = [i for i in range(len(text)) if text[i] == "." and (i + 1 == len(text) or text[i + 1] == " ")]
        start = max([e + 1 for e in sentence_ends if e < len(before)], default=0)
        end = min([e + 1 for e in sentence_ends if e >= len(before)], default=len(text))
        sentence = text[start:end].strip()
        blank = not tok.decode(ids[n : n + 1]).strip()  # a space between sentences belongs to neither
        return ids[n], (unsure_prob if sentence in unsure and not blank else 0.9)

    return script


class ScriptedChecker:
    """Judges a sentence unsupported when it is in `false`; refuting evidence names the fix."""

    name = "scripted"

    def __init__(self, false: set[str], fail_with_error: set[str] = frozenset(), unknown: set[str] = frozenset(),
                 claimless: set[str] = frozenset()):
        self.false = set(false)
        self.claimless = set(claimless)
        self.unknown = set(unknown)
        self.fail_with_error = set(fail_with_error)
        self.calls: list[str] = []

    def check_sentence(self, sentence, context=None, prompt=None, evidence=None) -> SentenceCheck:
        self.calls.append(sentence)
        if sentence in self.claimless:
            return SentenceCheck(sentence=sentence, claims=[], verdicts=[], extractor="scripted")
        claim = Claim(sentence, sentence, 0, len(sentence))
        # the passages are the prompt's subject's own article, as a checker's search finds them (a page
        # about something else would be kept out of the feedback pool: controller/memory_refresh.py)
        subject = subject_of(prompt)
        title = subject.name if subject else None
        if sentence in self.fail_with_error:
            v = Verdict(claim, "not_enough_evidence", 0.0, [], self.name, error="backend failed: TimeoutError")
        elif sentence in self.unknown:
            v = Verdict(claim, "not_enough_evidence", 0.0, [], self.name, rationale="no passage close enough")
        elif sentence in self.false:
            v = Verdict(claim, UNSUPPORTED, 0.0, [Evidence(f"Evidence against: {sentence}", title or "Refuting page",
                                                           0.8)], self.name)
        else:
            v = Verdict(claim, SUPPORTED, 1.0, [Evidence(f"Evidence for: {sentence}", title or "Supporting page", 0.9)],
                        self.name)
        return SentenceCheck(sentence=sentence, claims=[claim], verdicts=[v], extractor="scripted")
