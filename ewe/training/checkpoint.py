"""Resumable training state without pickle: tensors in safetensors, scalars in JSON.

Shared by `ewe judge train` and `ewe train memory`: AdamW's moments are stored per parameter
as tensors, its step counters as JSON numbers, so a rerun restores the optimizer exactly.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import torch


def optimizer_tensors(opt: torch.optim.Optimizer, into: dict) -> dict:
    """The optimizer's moments into `into` (as opt.<group>.<param>.<name>); the scalars returned for JSON."""
    meta = {}
    for gi, group in enumerate(opt.param_groups):
        for pi, p in enumerate(group["params"]):
            st = opt.state.get(p, {})
            for name, v in st.items():
                key = f"opt.{gi}.{pi}.{name}"
                if torch.is_tensor(v) and v.dim() > 0:
                    into[key] = v.contiguous()
                else:
                    meta[key] = float(v)
    return meta


def load_optimizer(opt: torch.optim.Optimizer, tensors: dict, meta: dict) -> None:
    """Restore what `optimizer_tensors` stored."""
    for gi, group in enumerate(opt.param_groups):
        for pi, p in enumerate(group["params"]):
            prefix = f"opt.{gi}.{pi}."
            st = {k[len(prefix):]: v.clone() for k, v in tensors.items() if k.startswith(prefix)}
            st.update({k[len(prefix):]: torch.tensor(v) for k, v in meta.items() if k.startswith(prefix)})
            if st:
                opt.state[p] = st


class Checkpoint:
    """OUT/checkpoint.safetensors (the trained tensors, AdamW's moments, the RNG state) and
    OUT/checkpoint.json (the settings, the step, the scheduler, whatever else the trainer keeps),
    each replaced in one rename. `resume` restores them only for the same training settings."""

    def __init__(self, folder: Path):
        self.json = Path(folder) / "checkpoint.json"
        self.tensors = Path(folder) / "checkpoint.safetensors"

    def save(self, trained: dict[str, torch.Tensor], opt, sched, meta: dict) -> None:
        from safetensors.torch import save_file

        from ..files import write_json

        tensors = {f"trained.{k}": v.contiguous() for k, v in trained.items()}
        opt_meta = optimizer_tensors(opt, tensors)
        tensors["rng"] = torch.get_rng_state()
        tmp = Path(str(self.tensors) + ".tmp")
        save_file(tensors, str(tmp))
        tmp.replace(self.tensors)
        write_json(self.json, {**meta, "optimizer": opt_meta, "scheduler": sched.state_dict()})

    def resume(self, same_training: Callable[[dict], bool], opt, sched) -> tuple[dict, dict] | None:
        """(the trained tensors, the JSON meta) of a checkpoint whose settings `same_training`
        accepts, with the optimizer, scheduler and RNG restored; None when there is none to resume."""
        if not (self.json.is_file() and self.tensors.is_file()):
            return None
        from safetensors.torch import load_file

        meta = json.loads(self.json.read_text(encoding="utf-8"))
        if not same_training(meta.get("settings") or {}):
            print(f"{self.json} was written with other settings or data: starting over")
            return None
        tensors = load_file(str(self.tensors))
        load_optimizer(opt, tensors, meta["optimizer"])
        sched.load_state_dict(meta["scheduler"])
        for group, lr in zip(opt.param_groups, sched.get_last_lr()):
            group["lr"] = lr  # the scheduler sets it only at its next step
        torch.set_rng_state(tensors["rng"])
        trained = {k[len("trained."):]: v for k, v in tensors.items() if k.startswith("trained.")}
        return trained, meta
