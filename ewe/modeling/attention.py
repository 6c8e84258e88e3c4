"""The working-memory attention, plugged into transformers by name.

`register()` adds "ewe" to transformers' attention-function registry together with a
mask function, so any model that dispatches attention through the registry (Llama and
its family) runs eq. 1 with `model.set_attn_implementation("ewe")`; no modeling code is
forked. The memory travels with each forward call as the keyword argument
`ewe_memory` (a `MemoryState`), which transformers forwards to every attention layer.
With no memory, or an empty one, the call is exactly transformers' SDPA attention, so
a model with k = 0 generates what the unpatched model generates.
"""
from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from ..ops import dispatch, select

NAME = "ewe"
TESTED_TRANSFORMERS = "5.23.0"


def ewe_attention_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    ewe_memory=None,
    ewe_attention_impl: str | None = None,
    ewe_slots: torch.Tensor | None = None,
    ewe_context_lengths: torch.Tensor | None = None,
    **kwargs,
):
    """Attention over the working memory and the context (eq. 1).

    query: [B, Hq, Q, D]; key, value: [B, Hkv, L, D], the context including the cache;
    attention_mask: what the "ewe" mask function built (boolean, True = attend) or None
    for plain causal. Returns ([B, Q, Hq, D], None) like every registered attention.
    ewe_slots: the query rows' rows of key and value, when they differ from the query order (a
    continuous batch's slot cache, engine/slots.py, keeps each row in its slot). The rows run at
    their slots and come back in query order.
    ewe_context_lengths: [B] int32, given with an attention_mask that is the prefix mask of these
    lengths (ops/masks.py `prefix_mask`, by key row), so that flash-attention can take the lengths
    instead of the mask.
    """
    if ewe_slots is not None:
        at_slots = query.new_zeros((key.shape[0], *query.shape[1:]))
        at_slots[ewe_slots] = query
        out, _ = ewe_attention_forward(module, at_slots, key, value, attention_mask, scaling, dropout, ewe_memory,
                                       ewe_attention_impl, ewe_context_lengths=ewe_context_lengths, **kwargs)
        return out[ewe_slots], None
    if ewe_memory is None or ewe_memory.is_empty:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    if dropout and module.training:
        raise NotImplementedError("ewe attention is for inference: dropout is not supported")
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    fn = select(ewe_attention_impl)
    out = dispatch.run(fn, query, key, value, ewe_memory.layer(module.layer_idx), attention_mask, scale,
                       ctx_lengths=ewe_context_lengths)
    return out, None


def register() -> None:
    """Make attn_implementation="ewe" available (idempotent)."""
    AttentionInterface.register(NAME, ewe_attention_forward)
    # The boolean SDPA mask: None for plain causal, [B, 1, Q, L] with padding.
    AttentionMaskInterface.register(NAME, sdpa_mask)


def attention_of(model) -> str:
    """The attention implementation `model` runs ("ewe" once patched)."""
    return model.config._attn_implementation


def patch_model(model) -> None:
    """Switch a loaded model to the working-memory attention."""
    register()
    model.set_attn_implementation(NAME)
    if attention_of(model) != NAME:
        raise RuntimeError(f"{type(model).__name__} did not accept attn_implementation={NAME!r}")
