"""Encoding passages into memory units: all new units in one batched forward pass.

Each unit is encoded on its own (it attends only to itself) with position ids 0..m-1.
Shorter units are right-padded; under causal attention a real token never sees the
padding after it, and the padding's keys are dropped before the unit is stored, so
padding is masked everywhere it could matter.
"""
from __future__ import annotations

import logging
import warnings
from collections import OrderedDict
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from ..tokens import text_ids
from .units import MemoryUnit, unit_id

logger = logging.getLogger(__name__)


@dataclass
class EncoderStats:
    encoded: int = 0  # units that went through the model
    reused: int = 0  # units served from the encoder's cache
    batches: int = 0  # forward passes


class UnitEncoder:
    """Turns texts into MemoryUnits, reusing any text it has encoded before.

    unit_tokens:  M, the most tokens a unit holds (start token included); longer texts
                  are truncated with a warning.
    start_token:  begin every unit with the tokenizer's BOS token.
    cache_units:  how many encoded units to keep for reuse (least recently used evicted).
    """

    def __init__(self, model, tokenizer, unit_tokens: int, start_token: bool = False, cache_units: int = 256):
        self.model = model
        self.tokenizer = tokenizer
        self.unit_tokens = unit_tokens
        self.start_token = start_token
        self.cache_units = cache_units
        self.stats = EncoderStats()
        self._cache: OrderedDict[str, MemoryUnit] = OrderedDict()
        if start_token and tokenizer.bos_token_id is None:
            raise ValueError("start_token=True but the tokenizer has no BOS token")

    @property
    def cached_units(self) -> int:
        """Encoded units kept for reuse (at most `cache_units`)."""
        return len(self._cache)

    def tokenize(self, text: str) -> tuple[list[int], bool]:
        """The unit's token ids (start token first, at most M) and whether the text was cut."""
        ids = unit_token_ids(self.tokenizer, text, None, self.start_token)
        truncated = len(ids) > self.unit_tokens
        if truncated:
            warnings.warn(
                f"passage of {len(ids)} tokens truncated to unit_tokens={self.unit_tokens}: "
                f"{text[:60]!r}...",
                stacklevel=3,
            )
            ids = ids[: self.unit_tokens]
        return ids, truncated

    def encode(self, texts: list[str], meta: list[dict] | None = None) -> list[MemoryUnit]:
        """Units for `texts`, in order; texts not seen before are encoded in one batch."""
        meta = meta or [{} for _ in texts]
        out: list[MemoryUnit | None] = []
        todo: dict[str, tuple[str, dict]] = {}
        for text, m in zip(texts, meta):
            if not text or not text.strip():
                raise ValueError("a memory passage is empty")
            uid = unit_id(text)
            if uid in self._cache:
                self._cache.move_to_end(uid)
                self.stats.reused += 1
                out.append(self._cache[uid])
            else:
                todo.setdefault(uid, (text, m))
                out.append(None)
        if todo:
            fresh = self._encode_batch([(uid, *v) for uid, v in todo.items()])
            for unit in fresh:
                self._remember(unit)
            out = [u if u is not None else self._cache[unit_id(t)] for u, t in zip(out, texts)]
        return out

    def _remember(self, unit: MemoryUnit) -> None:
        self._cache[unit.id] = unit
        while len(self._cache) > self.cache_units:
            self._cache.popitem(last=False)

    @torch.inference_mode()
    def _encode_batch(self, items: list[tuple[str, str, dict]]) -> list[MemoryUnit]:
        tokenized = [self.tokenize(text) for _, text, _ in items]
        lengths = [len(ids) for ids, _ in tokenized]
        # Always M wide: a unit's keys must not depend on which passages shared its batch (a wider
        # batch shifts their last bits, and results would depend on the order prompts ran in).
        keys, values = unit_states(self.model, [ids for ids, _ in tokenized], self.unit_tokens, self.tokenizer.pad_token_id)
        self.stats.encoded += len(items)
        self.stats.batches += 1
        units = []
        for row, ((uid, text, m), (ids, truncated)) in enumerate(zip(items, tokenized)):
            n = lengths[row]
            units.append(
                MemoryUnit(
                    id=uid,
                    text=text,
                    token_ids=ids,
                    keys=keys[row, :, :, :n].clone(),
                    values=values[row, :, :, :n].clone(),
                    truncated=truncated,
                    meta=dict(m),
                )
            )
        return units


def unit_token_ids(tokenizer, text: str, unit_tokens: int | None, start_token: bool) -> list[int]:
    """A passage's ids as a unit holds them: the start token first (if asked), at most `unit_tokens`
    (None: all of them, for the encoder to say what it cut)."""
    ids = text_ids(tokenizer, text)
    if start_token:
        ids = [tokenizer.bos_token_id] + ids
    return ids if unit_tokens is None else ids[:unit_tokens]


def unit_states(model, rows: list[list[int]], width: int, pad_id: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Every layer's keys and values of each row encoded on its own, at positions 0..width-1.

    rows: token ids of each unit (at most `width`), right-padded to `width`. Returns keys and
    values [U, n_layers, Hkv, width, D]; a unit's real tokens are its first len(row) positions.
    Inference calls it under inference_mode; `ewe train memory` calls it with gradients, so the
    adapter is trained on units encoded exactly as inference encodes them.
    """
    device = next(model.parameters()).device
    input_ids = torch.full((len(rows), width), pad_id if pad_id is not None else 0, dtype=torch.long, device=device)
    for row, ids in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    positions = torch.arange(width, device=device).unsqueeze(0).expand(len(rows), -1)
    cache = DynamicCache(config=model.config)
    # The decoder alone: a unit needs every layer's keys and values, never logits.
    model.base_model(input_ids=input_ids, position_ids=positions, past_key_values=cache, use_cache=True)
    keys = torch.stack([layer.keys for layer in cache.layers], dim=1)
    values = torch.stack([layer.values for layer in cache.layers], dim=1)
    return keys, values
