"""`ewe train memory`: a LoRA adapter that teaches the generator to read its memory units.

The student reads each passage as a memory unit, encoded on its own exactly as inference
encodes it (`unit_states`: positions 0..M-1, the start token, at most M tokens), through eq. 1
(the fused path of ewe's registered attention); the teacher is the same base model, adapter
off, reading the same passages as text in its prompt (retrieval.prompt_format "after"). The loss
is the teacher-to-student KL on the answer tokens (dense, needs no labels, aims straight at the
memory-vs-prompt gap), plus a weighted next-token loss on the answer.

Scope (where the adapter acts):
  units   only while encoding memory units; the context, the prompt and every token the model
          writes go through the base weights. With no unit in memory the model is exactly the
          base model, and whatever reads its prompt (RA, the text loops) is unchanged.
  all     everywhere (the reader adapts too); the adapter is then merged into the generator.

Deterministic for a seed (order, initialization; threads pinned), with a progress bar (loss,
ETA), resumable: every `checkpoint_every` steps the adapter, AdamW's moments and the position
go to OUT/checkpoint.safetensors + OUT/checkpoint.json (no pickle), and a rerun with the same
settings continues. The result: OUT/adapter_model.safetensors and OUT/adapter_config.json
(peft's LoRA format) and OUT/manifest.json (the base model's fingerprint, data, settings,
steps, loss, held-out figures before and after).
"""
from __future__ import annotations

import json
import math
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Literal, Optional

import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..files import write_json, write_jsonl
from ..memory.adapter import MANIFEST, SCOPES, weights_fingerprint
from ..memory.encoder import unit_states, unit_token_ids
from ..memory.units import MemoryUnit
from ..ops import MemoryState
from ..retrieval.in_prompt import PASSAGE_FORMATS
from ..tokens import prompt_ids, text_ids
from .checkpoint import Checkpoint
from .memory_data import MemoryExample, build_examples

TEACHER_FORMAT = "after"  # how the teacher reads the passages: ewe's default in-prompt format


@dataclass
class MemoryTrainConfig:
    model: str = "embedded"
    scope: Literal["units", "all"] = "units"
    seed: int = 0
    examples: int = 1600  # training examples (one pass = one epoch)
    epochs: int = 1
    held_out: int = 32  # held-out examples measured before and after
    batch_size: int = 4  # examples per optimizer step
    lr: float = 3e-4
    warmup: float = 0.05
    weight_decay: float = 0.0
    rank: int = 16
    alpha: float = 32.0
    targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    kl_weight: float = 1.0
    ce_weight: float = 0.25
    unit_tokens: int = 128  # M
    start_token: bool = True
    units: list[int] = field(default_factory=lambda: [1, 1, 2, 3, 4])  # unit counts drawn per example
    no_answer: float = 0.15
    max_answer_tokens: int = 48
    threads: int = 2
    device: str = "cpu"
    checkpoint_every: int = 25
    save_dtype: str = "bfloat16"

    def validate(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"scope={self.scope!r} must be one of {SCOPES}")
        for name in ("examples", "epochs", "batch_size", "rank", "unit_tokens", "max_answer_tokens", "threads",
                     "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be at least 1")
        if self.held_out < 0 or not 0 <= self.no_answer < 1 or self.lr <= 0:
            raise ValueError("held_out >= 0, 0 <= no_answer < 1 and lr > 0 are required")
        if not self.units or min(self.units) < 1:
            raise ValueError(f"units={self.units}: each unit count must be at least 1")
        if self.save_dtype not in ("float32", "bfloat16"):
            raise ValueError(f"save_dtype {self.save_dtype!r} must be float32 or bfloat16")


# settings that change what is saved or measured, not the training: a checkpoint made under other
# values of these is resumed all the same
_NOT_TRAINING = ("save_dtype", "held_out", "checkpoint_every", "threads")


class Batch:
    """One example as token ids: the units, the student's context and the teacher's input."""

    def __init__(self, ex: MemoryExample, tokenizer, cfg: MemoryTrainConfig):
        self.example = ex
        self.units = [unit_ids(tokenizer, p, cfg) for p in ex.passages]
        self.answer = text_ids(tokenizer, ex.answer)[: cfg.max_answer_tokens]
        self.prompt = prompt_ids(tokenizer, ex.prompt)
        self.teacher_prompt = prompt_ids(tokenizer, PASSAGE_FORMATS[TEACHER_FORMAT](ex.prompt, ex.passages))


def unit_ids(tokenizer, text: str, cfg: MemoryTrainConfig) -> list[int]:
    """A passage's unit tokens as UnitEncoder.tokenize makes them (start token, cut at M)."""
    return unit_token_ids(tokenizer, text, cfg.unit_tokens, cfg.start_token)


def covered_chars(tokenizer, cfg: MemoryTrainConfig) -> Callable[[str], int]:
    """How many characters of a passage one unit holds (answers are drawn from that part)."""
    def chars(text: str) -> int:
        ids = unit_ids(tokenizer, text, cfg)
        body = ids[1:] if cfg.start_token else ids
        return len(tokenizer.decode(body))
    return chars


def answer_logits(model, ids: list[int], answer_len: int, positions: Optional[torch.Tensor] = None, memory=None):
    """The logits that predict the last `answer_len` tokens of `ids` [answer_len, V]."""
    device = next(model.parameters()).device
    out = model(input_ids=torch.tensor([ids], device=device), position_ids=positions, ewe_memory=memory,
                ewe_attention_impl="fused", use_cache=False)
    return out.logits[0, len(ids) - answer_len - 1: len(ids) - 1].float()


def memory_of(model, units: list[list[int]], cfg: MemoryTrainConfig, pad_id: int | None) -> MemoryState:
    """The working memory of these units, built as inference builds it (gradients flow)."""
    keys, values = unit_states(model, units, cfg.unit_tokens, pad_id)
    mem_units = [MemoryUnit(id=str(i), text="", token_ids=ids, keys=keys[i, :, :, :len(ids)],
                            values=values[i, :, :, :len(ids)]) for i, ids in enumerate(units)]
    return MemoryState.from_rows([mem_units])


class Student:
    """The base model with LoRA adapters (peft), and the two forwards the loss compares."""

    def __init__(self, model, tokenizer, cfg: MemoryTrainConfig):
        from peft import LoraConfig, get_peft_model

        self.cfg, self.tokenizer = cfg, tokenizer
        lora = LoraConfig(r=cfg.rank, lora_alpha=cfg.alpha, target_modules=list(cfg.targets), lora_dropout=0.0,
                          bias="none")
        self.peft = get_peft_model(model, lora)
        self.lm = self.peft.get_base_model()  # the Llama model, LoRA layers injected

    def trainable(self) -> list[torch.nn.Parameter]:
        return [p for p in self.peft.parameters() if p.requires_grad]

    def adapter_state(self) -> dict[str, torch.Tensor]:
        from peft import get_peft_model_state_dict

        return {k: v.detach().clone() for k, v in get_peft_model_state_dict(self.peft).items()}

    def load_adapter_state(self, state: dict[str, torch.Tensor]) -> None:
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(self.peft, {k: v.float() for k, v in state.items()})

    def teacher(self, b: Batch) -> torch.Tensor:
        with torch.no_grad(), self.peft.disable_adapter():
            return answer_logits(self.lm, b.teacher_prompt + b.answer, len(b.answer))

    def student(self, b: Batch) -> torch.Tensor:
        memory = memory_of(self.lm, b.units, self.cfg, self.tokenizer.pad_token_id)
        ids = b.prompt + b.answer
        positions = torch.arange(self.cfg.unit_tokens, self.cfg.unit_tokens + len(ids),
                                 device=next(self.lm.parameters()).device).unsqueeze(0)
        if self.cfg.scope == "units":
            with self.peft.disable_adapter():
                return answer_logits(self.lm, ids, len(b.answer), positions, memory)
        return answer_logits(self.lm, ids, len(b.answer), positions, memory)

    def losses(self, b: Batch) -> dict[str, torch.Tensor]:
        # float32 on a CPU; bfloat16 autocast on a GPU (the loss itself in float32)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.cfg.device.startswith("cuda")):
            t = self.teacher(b)
            s = self.student(b)
        target = torch.tensor(b.answer, device=s.device)
        log_s, log_t = F.log_softmax(s, -1), F.log_softmax(t, -1)
        kl = (log_t.exp() * (log_t - log_s)).sum(-1).mean()
        nll = F.nll_loss(log_s, target)
        teacher_nll = F.nll_loss(log_t, target)
        total = self.cfg.kl_weight * kl + self.cfg.ce_weight * nll
        return {"loss": total, "kl": kl, "nll": nll, "teacher_nll": teacher_nll}


def held_out_figures(student: Student, batches: list[Batch]) -> dict:
    """Mean answer NLL with the passages in memory (the student) and in the prompt (the
    teacher), their gap, and the KL; overall, and by unit count."""
    rows = []
    with torch.no_grad():
        for b in batches:
            parts = student.losses(b)
            rows.append({"units": len(b.units), "nll": parts["nll"].item(), "teacher_nll": parts["teacher_nll"].item(),
                         "kl": parts["kl"].item()})

    def summary(rs):
        return {"n": len(rs), "memory_nll": round(statistics.mean(r["nll"] for r in rs), 4),
                "prompt_nll": round(statistics.mean(r["teacher_nll"] for r in rs), 4),
                "gap": round(statistics.mean(r["nll"] - r["teacher_nll"] for r in rs), 4),
                "kl": round(statistics.mean(r["kl"] for r in rs), 4)}
    out = {"all": summary(rows)} if rows else {}
    for k in sorted({r["units"] for r in rows}):
        out[f"units={k}"] = summary([r for r in rows if r["units"] == k])
    return out


def _load_base(cfg: MemoryTrainConfig):
    from ..model_loading import load_model, resolve
    from ..modeling import patch_model

    model, tokenizer, _ = load_model(cfg.model, "float32", cfg.device)
    patch_model(model)
    return model, tokenizer, Path(resolve(cfg.model))


def train_memory_adapter(out_dir: Path, cfg: MemoryTrainConfig, progress: bool = True, model=None, tokenizer=None,
                         base_folder: Optional[Path] = None, on_step: Optional[Callable[[int], None]] = None) -> dict:
    """Train (or resume), measure on held-out titles, write the adapter and its manifest.

    model/tokenizer/base_folder: a loaded base instead of `cfg.model` (tests pass a tiny random
    one); `on_step(step)` runs after every optimizer step and checkpoint."""
    from safetensors.torch import save_file

    cfg.validate()
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if model is None:
        model, tokenizer, base_folder = _load_base(cfg)
    model.train(False)  # no dropout: the loss is deterministic for a seed
    for p in model.parameters():
        p.requires_grad_(False)

    train_ex, held_ex = training_examples(tokenizer, cfg)
    write_jsonl(out_dir / "train.jsonl", [e.to_dict() for e in train_ex])
    write_jsonl(out_dir / "held_out.jsonl", [e.to_dict() for e in held_ex])
    data_sha = examples_sha256(train_ex)
    settings = {**asdict(cfg), "train_sha256": data_sha}

    student = Student(model, tokenizer, cfg)
    train_b = [Batch(e, tokenizer, cfg) for e in train_ex]
    held_b = [Batch(e, tokenizer, cfg) for e in held_ex]
    params = student.trainable()
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(train_b) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    warm = max(1, int(cfg.warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, 0.5 * (1 + math.cos(math.pi * min(1.0, s / max(1, total))))))

    step, history, before = 0, [], None
    checkpoint = Checkpoint(out_dir)
    resumed = checkpoint.resume(lambda s: _training_part(s) == _training_part(settings), opt, sched)
    if resumed is not None:
        trained, meta = resumed
        student.load_adapter_state(trained)
        step, history, before = meta["step"], meta.get("history", []), meta.get("held_out_before")
        print(f"resuming from step {step} of {total} ({checkpoint.json})")
    if before is None and held_b:
        before = held_out_figures(student, held_b)
        if progress:
            print(f"held out, before: {json.dumps(before.get('all'))}")

    t0 = time.perf_counter()
    bar = tqdm(total=total, initial=step, desc="training the memory adapter", unit="step", disable=not progress)
    while step < total:
        epoch, pos = divmod(step, steps_per_epoch)
        order = list(range(len(train_b)))
        random.Random(cfg.seed * 1000 + epoch).shuffle(order)
        chunk = [train_b[i] for i in order[pos * cfg.batch_size:(pos + 1) * cfg.batch_size]]
        opt.zero_grad(set_to_none=True)
        sums = {"loss": 0.0, "kl": 0.0, "nll": 0.0}
        for b in chunk:
            parts = student.losses(b)
            (parts["loss"] / len(chunk)).backward()
            for k in sums:
                sums[k] += parts[k].item() / len(chunk)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        history.append({"step": step, **{k: round(v, 4) for k, v in sums.items()}})
        bar.update(1)
        bar.set_postfix(loss=f"{sums['loss']:.3f}", kl=f"{sums['kl']:.3f}", epoch=epoch)
        if step % cfg.checkpoint_every == 0 or step == total:
            checkpoint.save(student.adapter_state(), opt, sched,
                            {"settings": settings, "step": step, "history": history, "held_out_before": before})
        if on_step is not None:
            on_step(step)
    bar.close()
    train_s = time.perf_counter() - t0

    weights = out_dir / "adapter_model.safetensors"
    state = {k: v.to(getattr(torch, cfg.save_dtype)).contiguous() for k, v in student.adapter_state().items()}
    save_file(state, str(weights) + ".tmp", metadata={"format": "pt"})
    Path(str(weights) + ".tmp").replace(weights)
    weights.chmod(0o644)
    student.peft.peft_config["default"].save_pretrained(str(out_dir))
    student.load_adapter_state(state)  # measure what is saved
    after = held_out_figures(student, held_b) if held_b else None
    last = history[-min(len(history), 25):]
    manifest = {
        "kind": "ewe memory adapter", "scope": cfg.scope,
        "base": {"model": cfg.model, "weights_sha256": weights_fingerprint(base_folder) if base_folder else None},
        "unit_tokens": cfg.unit_tokens, "start_token": cfg.start_token,
        "lora": {"rank": cfg.rank, "alpha": cfg.alpha, "targets": list(cfg.targets)},
        "data": {"source": "embedded Wikipedia summaries: train split (ewe/data/splits.py); measured on dev",
                 "splits": {"train": "train", "held_out": "dev"},
                 "train_examples": len(train_ex), "held_out_examples": len(held_ex), "train_sha256": data_sha},
        "settings": settings, "steps": total,
        "final_loss": round(statistics.mean(h["loss"] for h in last), 4) if last else None,
        "final_kl": round(statistics.mean(h["kl"] for h in last), 4) if last else None,
        "held_out_before": before, "held_out_after": after,
        "train_seconds_this_run": round(train_s, 1), "torch": torch.__version__,
    }
    write_json(out_dir / MANIFEST, manifest)
    write_jsonl(out_dir / "history.jsonl", history)
    return manifest


def training_examples(tokenizer, cfg: MemoryTrainConfig) -> tuple[list[MemoryExample], list[MemoryExample]]:
    """The examples `cfg` trains on (train split) and measures before and after (dev split)."""
    chars = covered_chars(tokenizer, cfg)
    train_ex = build_examples(cfg.examples, cfg.seed, "train", chars, tuple(cfg.units), cfg.no_answer)
    held_ex = build_examples(cfg.held_out, cfg.seed + 1, "dev", chars, tuple(cfg.units), cfg.no_answer) \
        if cfg.held_out else []
    return train_ex, held_ex


def examples_sha256(rows: list[MemoryExample]) -> str:
    """The data hash a manifest records ("train_sha256"): what the weights were trained on."""
    import hashlib

    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps(r.to_dict(), sort_keys=True).encode("utf-8"))
    return h.hexdigest()


def _training_part(settings: dict) -> dict:
    return {k: v for k, v in settings.items() if k not in _NOT_TRAINING}
