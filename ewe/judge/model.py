"""The judge's network: the embedded all-MiniLM-L6-v2 as a late-interaction cross-encoder.

The lower `split` layers encode the claim and each passage on their own (frozen: they are
MiniLM's, trained for single texts), so a passage's lower states are computed once and
reused for every claim checked against it; the upper layers run over the claim and the
passage joined and are trained, with a 3-way head (supported, unsupported,
not_enough_evidence) on the claim's tokens. `split = 0` is a plain cross-encoder (claim and
passage joined from the embeddings up), the design it was measured against.

Only the trained part (the upper layers and the head) is saved, as safetensors; the frozen
part is the embedded package's, checked by the hash in the manifest.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from torch import nn

from ..resources import embedded_minilm_path

LABELS = ("supported", "unsupported", "not_enough_evidence")


@dataclass(frozen=True)
class JudgeSpec:
    """What a trained judge is: its base, where the claim and passage meet, and input sizes."""

    base: str = "all-MiniLM-L6-v2"
    split: int = 4  # layers run on claim and passage apart; the rest jointly
    trained_layers: int = 2  # the top layers that training changes (the others stay MiniLM's)
    max_claim_tokens: int = 64
    max_passage_tokens: int = 96  # longer passages are cut into windows of whole sentences
    claim_only: bool = False  # the leak detector: the passage is hidden
    bf16: bool = True  # matrix products in bfloat16 (torch autocast) where the hardware has it (bf16_active)


BF16_ENV = "EWE_JUDGE_BF16"


def bf16_active(device: str = "cpu") -> bool:
    """Whether bfloat16 autocast pays here. On a CPU with AVX-512 it is about 1.7x faster than
    float32; on one with AVX2 only (no native bfloat16) torch emulates it, about 6x *slower*
    (docs/JUDGE.md), so there the judge runs in float32. EWE_JUDGE_BF16=1 or 0 forces either
    (to reproduce another machine's scores to the last digit)."""
    from ..ops.dispatch import choice

    forced = choice(None, BF16_ENV, BF16_ENV, ("auto", "1", "0"), "a bfloat16 setting for the judge")
    if forced != "auto":
        return forced == "1"
    return device != "cpu" or _cpu_has_bf16()


@functools.lru_cache(maxsize=1)
def _cpu_has_bf16() -> bool:
    """torch's own dispatch level: "AVX512" (or better) where its bfloat16 kernels run natively."""
    return torch.backends.cpu.get_cpu_capability().upper().startswith(("AVX512", "AMX"))


class JudgeModel(nn.Module):
    """(claim, passage) -> logits over LABELS.

    Tensors: `claim_ids`, `claim_mask` (B, Lc); `passage_ids`, `passage_mask` (B, Lp), int64.
    """

    def __init__(self, spec: JudgeSpec, base_path: Optional[Path] = None):
        super().__init__()
        from transformers import BertModel
        from transformers.utils import logging as hf_logging

        self.spec = spec
        path = Path(base_path or embedded_minilm_path())
        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # the base's unused pooler would be reported as unexpected
        try:
            self.bert = BertModel.from_pretrained(str(path), attn_implementation="sdpa", add_pooling_layer=False)
        finally:
            hf_logging.set_verbosity(level)
        n = self.bert.config.num_hidden_layers
        if not 0 <= spec.split < n:
            raise ValueError(f"split={spec.split} must be in [0, {n - 1}] for a {n}-layer base")
        hidden = self.bert.config.hidden_size
        self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(2 * hidden, len(LABELS)))
        for p in self.bert.parameters():
            p.requires_grad_(False)
        if not 1 <= spec.trained_layers <= n - spec.split:
            raise ValueError(f"trained_layers={spec.trained_layers} must be in [1, {n - spec.split}] with split={spec.split}")
        for layer in self.trained_layers:
            for p in layer.parameters():
                p.requires_grad_(True)

    @property
    def upper_layers(self) -> nn.ModuleList:
        return self.bert.encoder.layer[self.spec.split:]

    @property
    def first_trained(self) -> int:
        return self.bert.config.num_hidden_layers - self.spec.trained_layers

    @property
    def trained_layers(self) -> nn.ModuleList:
        return self.bert.encoder.layer[self.first_trained:]

    def _mask(self, hidden: torch.Tensor, mask: torch.Tensor):
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.bert.config, inputs_embeds=hidden, attention_mask=mask)

    def precision(self):
        """bfloat16 autocast where the spec asks for it and `bf16_active` allows it, else nothing."""
        device = next(self.parameters()).device.type
        if not (self.spec.bf16 and bf16_active(device)):
            return contextlib.nullcontext()
        return torch.autocast(device_type=device, dtype=torch.bfloat16)

    def lower(self, ids: torch.Tensor, mask: torch.Tensor, segment: int) -> torch.Tensor:
        """(B, L, H) states after the embeddings and the first `split` layers of one text."""
        with self.precision():
            return self._lower(ids, mask, segment)

    def _lower(self, ids, mask, segment):
        types = torch.full_like(ids, segment)
        h = self.bert.embeddings(input_ids=ids, token_type_ids=types)
        m = self._mask(h, mask)
        for layer in self.bert.encoder.layer[: self.spec.split]:
            h = layer(h, attention_mask=m)
        return h

    def upper(self, claim_h: torch.Tensor, claim_mask: torch.Tensor, passage_h: torch.Tensor,
              passage_mask: torch.Tensor) -> torch.Tensor:
        """Logits (B, 3) from the lower states of claims and passages (one passage per claim)."""
        h = torch.cat([claim_h, passage_h.to(claim_h.dtype)], dim=1)
        mask = torch.cat([claim_mask, passage_mask], dim=1)
        with self.precision():
            return self._top(h, mask, torch.cat([claim_mask, torch.zeros_like(passage_mask)], dim=1)).float()

    def _top(self, h: torch.Tensor, mask: torch.Tensor, claim_tokens: torch.Tensor) -> torch.Tensor:
        m = self._mask(h, mask)
        for layer in self.upper_layers:
            h = layer(h, attention_mask=m)
        w = claim_tokens.unsqueeze(-1).to(h.dtype)
        mean = (h * w).sum(1) / w.sum(1).clamp(min=1)
        return self.head(torch.cat([h[:, 0], mean], dim=-1))

    def forward(self, claim_ids, claim_mask, passage_ids, passage_mask) -> torch.Tensor:
        if self.spec.split > 0:
            return self.upper(self.lower(claim_ids, claim_mask, 0), claim_mask,
                              self.lower(passage_ids, passage_mask, 1), passage_mask)
        # a plain cross-encoder: "[CLS] claim [SEP] passage [SEP]" as one sequence, positions running on
        rows = [torch.cat([c[cm.bool()], p[pm.bool()][1:]]) for c, cm, p, pm in
                zip(claim_ids, claim_mask, passage_ids, passage_mask)]
        n_claim = [int(cm.sum()) for cm in claim_mask]
        length = max(len(r) for r in rows)
        ids = claim_ids.new_zeros(len(rows), length)
        mask, types, claim_tokens = torch.zeros_like(ids), torch.zeros_like(ids), torch.zeros_like(ids)
        for i, (r, nc) in enumerate(zip(rows, n_claim)):
            ids[i, : len(r)], mask[i, : len(r)], types[i, nc: len(r)], claim_tokens[i, :nc] = r, 1, 1, 1
        with self.precision():
            h = self.bert.embeddings(input_ids=ids, token_type_ids=types)
            return self._top(h, mask, claim_tokens).float()

    # --- the trained part -------------------------------------------------------------

    def trained_state(self) -> dict[str, torch.Tensor]:
        """Upper layers and head: what training changes, and all that is saved."""
        out = {f"head.{k}": v for k, v in self.head.state_dict().items()}
        for i, layer in enumerate(self.trained_layers, self.first_trained):
            out.update({f"layer.{i}.{k}": v for k, v in layer.state_dict().items()})
        return {k: v.detach().contiguous().clone() for k, v in out.items()}

    def load_trained_state(self, state: dict[str, torch.Tensor]) -> None:
        head = {k[5:]: v for k, v in state.items() if k.startswith("head.")}
        self.head.load_state_dict(head)
        for i, layer in enumerate(self.trained_layers, self.first_trained):
            prefix = f"layer.{i}."
            layer.load_state_dict({k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)})

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]


def base_fingerprint(path: Optional[Path] = None) -> str:
    """sha256 of the base model's weights file: a judge is only valid on the base it was trained on."""
    p = Path(path or embedded_minilm_path()) / "model.safetensors"
    h = hashlib.sha256()
    with p.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_tokenizer(path: Optional[Path] = None):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path or embedded_minilm_path()))
