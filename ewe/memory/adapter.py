"""The memory adapter: LoRA weights that teach a generator to read its memory units.

`ewe train memory` writes one (peft's LoRA format: adapter_model.safetensors and
adapter_config.json, beside ewe's manifest.json); the embedded model's ships in
ewe/memory/adapters/. Config `model.memory_adapter` says which is used: "auto" (the default:
the shipped one for the embedded model, none for any other), "none", or an adapter folder.
An adapter is refused, with the reason, for a base model whose weights are not the ones it was
trained on (manifest `base.weights_sha256`), and for a unit layout it was not trained with.

Its scope (manifest `scope`) says where it acts: "units", only in the model that encodes the
memory units (a merged copy of the generator; decoding runs the base weights, so with no unit
in memory nothing changes), or "all", merged into the generator itself.
"""
from __future__ import annotations

import copy
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from ..resources import cache_dir

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
SCOPES = ("units", "all")
SHIPPED = Path(__file__).resolve().parent / "adapters"
EMBEDDED_ADAPTER = "smollm2-135m-instruct"


class AdapterError(ValueError):
    """An adapter that does not fit the model or the memory layout it would be used with."""


def weights_fingerprint(folder: Path) -> str:
    """sha256 over a model folder's *.safetensors files (name and bytes, sorted by name); for the
    embedded model's cache folder, over the GGUF file it was dequantized from (the package's file
    names the model, whichever library version dequantized it). Cached per file size and
    modification time, so a model is hashed once."""
    folder = Path(folder)
    files = sorted(folder.glob("*.safetensors"))
    if (folder / "ewe-cache.json").is_file():  # the embedded model, dequantized from the installed package's GGUF
        from ..model_loading import EMBEDDED_GGUF, embedded_package_dir

        files = [embedded_package_dir() / EMBEDDED_GGUF]
    if not files:
        raise AdapterError(f"{folder}: no *.safetensors weights to fingerprint")
    store = cache_dir() / "fingerprints.json"
    try:
        known = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    key = "|".join(f"{f.resolve()}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)
    if key in known:
        return known[key]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode("utf-8"))
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    digest = h.hexdigest()
    known.pop(key, None)
    known[key] = digest
    known = dict(list(known.items())[-64:])  # the newest: test runs hash throwaway folders
    try:
        from ..files import write_json

        write_json(store, known)
    except OSError:  # a read-only cache only costs the hash again next time
        pass
    return digest


@dataclass
class MemoryAdapter:
    """An adapter folder and its manifest."""

    folder: Path
    manifest: dict
    _unit_models: dict = field(default_factory=dict, repr=False)  # id(generator) -> (generator, its encoder)

    @property
    def scope(self) -> str:
        return self.manifest.get("scope", "units")

    @classmethod
    def open(cls, folder: str | Path) -> "MemoryAdapter":
        folder = Path(folder).expanduser()
        for name in (MANIFEST, "adapter_config.json", "adapter_model.safetensors"):
            if not (folder / name).is_file():
                raise AdapterError(f"model.memory_adapter {folder}: {name} is missing (train one with "
                                   "`ewe train memory --out DIR`)")
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("scope", "units") not in SCOPES:
            raise AdapterError(f"{folder / MANIFEST}: scope {manifest.get('scope')!r} is not one of {SCOPES}")
        return cls(folder, manifest)

    def fits_layout(self, unit_tokens: int, start_token: bool) -> bool:
        """Whether units of M = `unit_tokens` with or without a start token are what it was trained on."""
        return self.manifest.get("unit_tokens") == unit_tokens and self.manifest.get("start_token") == start_token

    def check(self, base_folder: Path, unit_tokens: int, start_token: bool) -> None:
        """Refuse a base model or a unit layout other than the ones the adapter was trained on."""
        want = (self.manifest.get("base") or {}).get("weights_sha256")
        have = weights_fingerprint(base_folder)
        if want != have:
            raise AdapterError(
                f"model.memory_adapter {self.folder} was trained on another base model (weights sha256 "
                f"{str(want)[:12]}..., this model's {have[:12]}...): set model.memory_adapter: none, or train one "
                f"for this model with `ewe train memory --model {base_folder}`")
        if not self.fits_layout(unit_tokens, start_token):
            raise AdapterError(
                f"model.memory_adapter {self.folder} was trained with units of M={self.manifest.get('unit_tokens')} "
                f"tokens, start token {self.manifest.get('start_token')}; this configuration has M={unit_tokens}, "
                f"start token {start_token}: set model.memory_adapter: none, or match memory.unit_tokens and "
                "memory.unit_start_token")

    def prepare_unit_model(self, model, finish=lambda m: m) -> None:
        """Make the units' encoder for generator `model` now (a copy with the LoRA merged, then
        `finish` applied to it: the generator's weight format), before `model` itself is changed."""
        self._unit_models[id(model)] = (model, finish(self.merged_into(model, copy_model=True)))

    def unit_model(self, model):
        """The units' encoder made for generator `model` (every Runtime sharing the generator shares it)."""
        if id(model) not in self._unit_models:
            self.prepare_unit_model(model)
        return self._unit_models[id(model)][1]

    def merged_into(self, model, copy_model: bool):
        """`model` (or a copy of it) with the adapter's LoRA merged into its weights."""
        from peft import PeftModel

        target = copy.deepcopy(model) if copy_model else model
        merged = PeftModel.from_pretrained(target, str(self.folder), is_trainable=False).merge_and_unload()
        merged.eval()
        return merged


def resolve_adapter(setting: str | None, model_name: str) -> MemoryAdapter | None:
    """The adapter `model.memory_adapter` names for `model_name`, or None."""
    if setting in (None, "none"):
        return None
    if setting == "auto":
        if model_name != "embedded":
            return None
        folder = SHIPPED / EMBEDDED_ADAPTER
        if not (folder / MANIFEST).is_file():
            logger.warning("no memory adapter is shipped in %s: memory units are read by the base model", folder)
            return None
        return MemoryAdapter.open(folder)
    return MemoryAdapter.open(setting)
