"""Text into token ids without forging control tokens.

A tokenizer, called plainly, turns the text "<|im_start|>system" into the chat template's
real control token, so anyone who writes a prompt, or a document into the datastore, could
open a system turn. Everything ewe tokenizes that a user, a corpus or the model wrote goes
through `text_ids` (special-token strings are split into ordinary text tokens); only the chat
template itself (`chat_ids`) may put control tokens into a sequence.
"""
from __future__ import annotations

import functools
import re


def text_ids(tokenizer, text: str) -> list[int]:
    """The ids of `text` as plain text: no BOS/EOS added, no special token recognised."""
    return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True, verbose=False)["input_ids"])


def text_ids_many(tokenizer, texts: list[str]) -> list[list[int]]:
    if not texts:
        return []
    out = tokenizer(list(texts), add_special_tokens=False, split_special_tokens=True, verbose=False)["input_ids"]
    return [list(x) for x in out]


_SLOT = "\x00ewe-slot-{}\x00"
_SLOT_RE = re.compile("\x00ewe-slot-(\\d+)\x00")


def chat_ids(tokenizer, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
    """The chat template's ids for `messages`, with every message's content read as plain text.

    The template is rendered around placeholders to learn where each content lies, the
    whole text is tokenized as the template would be (so ordinary prompts get exactly the
    template's ids), and any special token whose characters lie inside a content is replaced
    by the ids of its characters as text."""
    slotted = [{**m, "content": _SLOT.format(i)} for i, m in enumerate(messages)]
    rendered = tokenizer.apply_chat_template(slotted, add_generation_prompt=add_generation_prompt, tokenize=False)
    found = [int(m.group(1)) for m in _SLOT_RE.finditer(rendered)]
    if sorted(found) != list(range(len(messages))):
        raise ValueError("the tokenizer's chat template does not place each message's content once, as written; "
                         "ewe cannot keep user text apart from the template's control tokens with it")
    text, spans, pos = "", [], 0
    for m in _SLOT_RE.finditer(rendered):
        text += rendered[pos:m.start()]
        content = messages[int(m.group(1))]["content"]
        spans.append((len(text), len(text) + len(content)))
        text += content
        pos = m.end()
    text += rendered[pos:]
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    ids: list[int] = []
    for tid, (a, b) in zip(enc["input_ids"], enc["offset_mapping"]):
        if tid in special and any(lo <= a < hi for lo, hi in spans):
            ids += text_ids(tokenizer, text[a:b])
        else:
            ids.append(tid)
    return ids


def prompt_ids(tokenizer, prompt: str, system_prompt: str | None = None) -> list[int]:
    """A user prompt as the model's input: through the chat template where the tokenizer has
    one, else the prompt as plain text within the tokenizer's own BOS/EOS."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": prompt}]
        if system_prompt:
            messages.insert(0, {"role": "system", "content": system_prompt})
        return chat_ids(tokenizer, messages)
    text = f"{system_prompt}\n\n{prompt}" if system_prompt else prompt
    return list(tokenizer.build_inputs_with_special_tokens(text_ids(tokenizer, text)))


@functools.lru_cache(maxsize=8)
def line_break_ids(tokenizer) -> frozenset[int]:
    """The ids of tokens that are only whitespace and hold a line break ("\\n", "\\n\\n", " \\n"): what
    a model writes to open a new paragraph (controller.refuse_end bans them with the end token,
    so that a refused end goes on in the same paragraph, not with a restart below it)."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return frozenset(i for i, t in enumerate(texts) if "\n" in t and not t.strip())
