"""The prefix judge: PrefixNLI's MiniTruePrefixes (Harary et al.) on ewe's embedded generator.

A decoder-only judge, so that the prefix being written can be judged one token further on a
KV cache instead of being read again (the paper's reason for a Llama judge): the generator's
lower layers, frozen; its top layer(s) and final norm, trained; a linear head on a token's
state giving the probability that the text up to that token is entailed by the premise (that
some completion of it is). As in the paper, only the top layer is trained by default.

Input: `PREMISE_FORMAT` then the hypothesis's tokens as the generator wrote them. The judge
uses the generator's own tokenizer, so the answer's token ids go in as they are.

Only the trained part is saved (safetensors); the frozen part is the base model's, named in
the manifest.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from ..model_loading import EMBEDDED

PREMISE_FORMAT = "Premise: {premise}\nHypothesis:\n"
SHIPPED = Path(__file__).parent / "weights"


@dataclass(frozen=True)
class PrefixJudgeSpec:
    """What a trained prefix judge is: its base model, how many top layers are its own, its premise room."""

    base: str = EMBEDDED
    trained_layers: int = 1
    max_premise_tokens: int = 512


class PrefixJudge(nn.Module):
    """Entailment probability of every prefix of a hypothesis, given a premise; see the module docstring."""

    def __init__(self, model, tokenizer, spec: PrefixJudgeSpec = PrefixJudgeSpec()):
        super().__init__()
        layers = model.model.layers
        if not 1 <= spec.trained_layers <= len(layers):
            raise ValueError(f"trained_layers={spec.trained_layers}: the base has {len(layers)} layers")
        self.model, self.tokenizer, self.spec = model.eval(), tokenizer, spec
        self.head = nn.Linear(model.config.hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        for p in model.parameters():
            p.requires_grad_(False)
        for p in self.trained_parameters():
            p.requires_grad_(True)

    # -- what is trained and saved ----------------------------------------------------------

    @property
    def split(self) -> int:
        """Index of the first trained layer (the layers below it are the base's, frozen)."""
        return len(self.model.model.layers) - self.spec.trained_layers

    def trained_modules(self) -> dict[str, nn.Module]:
        mods = {f"layers.{i}": self.model.model.layers[i] for i in range(self.split, len(self.model.model.layers))}
        return {**mods, "norm": self.model.model.norm, "head": self.head}

    def trained_parameters(self):
        for mod in self.trained_modules().values():
            yield from mod.parameters()

    def trained_state(self) -> dict[str, torch.Tensor]:
        return {f"{name}.{k}": v.detach().float().contiguous().cpu()
                for name, mod in self.trained_modules().items() for k, v in mod.state_dict().items()}

    def load_trained(self, state: dict[str, torch.Tensor]) -> None:
        mods = self.trained_modules()
        expected = {f"{n}.{k}" for n, m in mods.items() for k in m.state_dict()}
        if set(state) != expected:
            missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
            raise ValueError(f"prefix judge weights do not fit its spec (missing {missing[:3]}, unexpected {extra[:3]})")
        dtype = next(self.model.parameters()).dtype
        for name, mod in mods.items():
            mod.load_state_dict({k[len(name) + 1:]: v.to(dtype) for k, v in state.items() if k.startswith(name + ".")})

    def save(self, folder: Path, manifest: dict) -> None:
        from safetensors.torch import save_file

        from ..files import atomic_write

        folder.mkdir(parents=True, exist_ok=True)
        save_file(self.trained_state(), str(folder / "judge.safetensors"))
        atomic_write(folder / "manifest.json", json.dumps({"design": "prefix", "spec": asdict(self.spec), **manifest},
                                                          indent=2) + "\n")

    @classmethod
    def load(cls, name_or_folder: str, model=None, tokenizer=None, dtype: str = "float32") -> "PrefixJudge":
        """A trained prefix judge: a shipped name (ewe/judge/weights/<name>) or a folder. `model` and
        `tokenizer`: a loaded base to use (its top layers are replaced: pass a copy, not the generator)."""
        from safetensors.torch import load_file

        folder = resolve(name_or_folder)
        manifest = json.loads((folder / "manifest.json").read_text())
        if manifest.get("design") != "prefix":
            raise ValueError(f"{folder}: not a prefix judge (design {manifest.get('design')!r}); "
                             "`ewe judge train --prefix` makes one")
        spec = PrefixJudgeSpec(**manifest["spec"])
        if model is None:
            from ..model_loading import load_model

            model, tokenizer, _ = load_model(spec.base, dtype, "cpu", None)
        judge = cls(model, tokenizer, spec)
        judge.load_trained(load_file(str(folder / "judge.safetensors")))
        judge.manifest = manifest
        return judge.eval()

    # -- inputs -----------------------------------------------------------------------------

    def header_ids(self, premise: str) -> list[int]:
        """The premise and the hypothesis's label, as tokens; a premise longer than the judge's room
        keeps its beginning."""
        tok = self.tokenizer
        ids = tok(premise, add_special_tokens=False).input_ids[: self.spec.max_premise_tokens]
        head, tail = PREMISE_FORMAT.split("{premise}")
        return (tok(head, add_special_tokens=False).input_ids + ids
                + tok(tail, add_special_tokens=False).input_ids)

    # -- forward passes ---------------------------------------------------------------------

    def probability(self, states: torch.Tensor) -> torch.Tensor:
        """Entailment probabilities of final hidden states [..., H]."""
        return torch.sigmoid(self.head(states).squeeze(-1).float())

    @torch.no_grad()
    def score_full(self, ids: list[int]) -> torch.Tensor:
        """Entailment probability after every token of `ids` (header and hypothesis), read at once
        without a cache: the reference the cached scorer is held to."""
        x = torch.tensor([ids], device=self.model.device)
        return self.probability(self.model.model(x).last_hidden_state[0])

    def lower(self, ids: torch.Tensor) -> torch.Tensor:
        """The frozen layers' states [B, T, H] of right-padded rows `ids` [B, T] (computed once
        for training: they never change)."""
        with torch.no_grad():
            return self._layers(self.model.model.embed_tokens(ids), 0, self.split)

    def upper(self, states: torch.Tensor) -> torch.Tensor:
        """Entailment logits [B, T] from the frozen layers' states: the trained layers, norm and head."""
        h = self.model.model.norm(self._layers(states, self.split, len(self.model.model.layers)))
        return self.head(h).squeeze(-1).float()

    def _layers(self, h: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """Layers [start, stop) over whole right-padded rows: causal, no cache (padding sits after
        every real token, so no real token reads it)."""
        m = self.model.model
        position_ids = torch.arange(h.shape[1], device=h.device)[None].expand(h.shape[0], -1)
        rope = m.rotary_emb(h, position_ids=position_ids)
        for layer in m.layers[start:stop]:
            h = layer(h, attention_mask=None, position_ids=position_ids, position_embeddings=rope)
            h = h[0] if isinstance(h, tuple) else h
        return h


def resolve(name_or_folder: str) -> Path:
    """A shipped prefix judge's folder by name, or the folder given."""
    folder = Path(name_or_folder)
    if not folder.is_dir():
        folder = SHIPPED / name_or_folder
    if not (folder / "manifest.json").is_file():
        shipped = sorted(p.name for p in SHIPPED.iterdir() if (p / "manifest.json").is_file()
                         and json.loads((p / "manifest.json").read_text()).get("design") == "prefix")
        raise ValueError(f"prefix judge {name_or_folder!r}: neither a folder with manifest.json nor a shipped judge "
                         f"(shipped: {', '.join(shipped) or 'none'})")
    return folder
