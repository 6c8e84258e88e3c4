"""`ewe judge train`: fit the judge's upper layers and head on `ewe judge data` output.

Deterministic for a seed (the order, the dropout and the initialization all come from
it; the threads are pinned), with a progress bar, and resumable: every
`checkpoint_every` steps the trained tensors and the optimizer's moments go to
`OUT/checkpoint.safetensors` and the position to `OUT/checkpoint.json` (no pickle), and a
rerun with the same settings continues from there. The result is `OUT/judge.safetensors`
(the trained part only) and `OUT/manifest.json` (base, its hash, the data's hashes, the
settings, the held-out metrics).
"""
from __future__ import annotations

import hashlib
import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

import torch
from tqdm import tqdm

from ..files import write_json
from ..training.checkpoint import Checkpoint
from .data import model_written_apart, read
from .metrics import binary_report
from .model import LABELS, JudgeModel, JudgeSpec, base_fingerprint, load_tokenizer


@dataclass
class TrainConfig:
    spec: JudgeSpec = field(default_factory=JudgeSpec)
    seed: int = 0
    epochs: int = 2
    batch_size: int = 32
    lr: float = 1e-4
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.06
    max_train: Optional[int] = None  # examples drawn (seeded) from train.jsonl; None: all
    max_test: Optional[int] = None
    threads: int = 2
    checkpoint_every: int = 200
    save_dtype: str = "bfloat16"  # the shipped weights' dtype (bfloat16 halves them)
    init: Optional[str] = None  # a trained judge (name or folder) to start from, same spec: continued training


# settings that change what is saved or measured, not the training: a checkpoint made under other
# values of these is resumed all the same
_NOT_TRAINING = ("save_dtype", "max_test", "checkpoint_every")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _subset(rows: list[dict], n: Optional[int], seed: int) -> list[dict]:
    """`n` rows drawn (seeded); the model-written ones ("model-..." kinds, scarce and the closest
    to what the judge is asked in the loop) are all kept, the rest drawn to fill up to `n`."""
    if n is None or n >= len(rows):
        return rows
    written, rest = model_written_apart(rows)
    if not written:
        return random.Random(seed).sample(rows, n)
    drawn = written[:n] + random.Random(seed).sample(rest, max(0, min(len(rest), n - len(written))))
    random.Random(seed + 7).shuffle(drawn)
    return drawn


class Encoded:
    """Token ids of every distinct text, and (split > 0) the frozen lower states of each,
    computed once: a passage is shared by many claims."""

    def __init__(self, model: JudgeModel, tokenizer, texts: list[str], max_tokens: int, segment: int,
                 desc: str, batch: int = 64, progress: bool = True):
        self.index = {t: i for i, t in enumerate(dict.fromkeys(texts))}
        uniq = list(self.index)
        enc = tokenizer(uniq, truncation=True, max_length=max_tokens)
        self.ids = [torch.tensor(x, dtype=torch.long) for x in enc["input_ids"]]
        self.states: Optional[list[torch.Tensor]] = None
        if model.spec.split > 0:
            self.states = []
            order = sorted(range(len(uniq)), key=lambda i: len(self.ids[i]))
            out: list[Optional[torch.Tensor]] = [None] * len(uniq)
            with torch.no_grad():
                for s in tqdm(range(0, len(order), batch), desc=desc, unit="batch", disable=not progress):
                    idx = order[s:s + batch]
                    ids, mask = pad([self.ids[i] for i in idx])
                    h = model.lower(ids, mask, segment)
                    for j, i in enumerate(idx):
                        out[i] = h[j, : len(self.ids[i])].clone()
            self.states = out  # type: ignore[assignment]

    def batch(self, texts: list[str]):
        """(ids, mask, states or None) padded for the rows' texts."""
        idx = [self.index[t] for t in texts]
        ids, mask = pad([self.ids[i] for i in idx])
        states = None
        if self.states is not None:
            h = [self.states[i] for i in idx]
            states = torch.zeros(len(h), ids.shape[1], h[0].shape[-1], dtype=h[0].dtype)
            for j, x in enumerate(h):
                states[j, : len(x)] = x
        return ids, mask, states


def pad(seqs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    length = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), length, dtype=torch.long)
    mask = torch.zeros(len(seqs), length, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = s
        mask[i, : len(s)] = 1
    return ids, mask


def _evidence(row: dict, spec: JudgeSpec) -> str:
    return "" if spec.claim_only else row["window"]


def add_windows(rows: list[dict], tokenizer, max_tokens: int) -> None:
    """Each row's evidence window, as the checker will see it: the passage is cut into windows
    (checker.windows) and the row keeps the one holding the sentence its claim was made from,
    else (the sentence removed, a claim from elsewhere) the one sharing most words with the claim:
    the hardest case for a not-enough-evidence label."""
    from .checker import windows

    cache: dict[str, list[str]] = {}
    for r in rows:
        ws = cache.get(r["evidence"])
        if ws is None:
            ws = cache[r["evidence"]] = windows(r["evidence"], tokenizer, max_tokens)
        src = r.get("source") or ""
        hit = [w for w in ws if src and src in w]
        if hit:
            r["window"] = hit[0]
            continue
        words = set(r["claim"].lower().split())
        r["window"] = max(ws, key=lambda w: len(words & set(w.lower().split())))


def logits_for(model: JudgeModel, claims: Encoded, passages: Encoded, rows: list[dict]) -> torch.Tensor:
    cid, cm, ch = claims.batch([r["claim"] for r in rows])
    pid, pm, ph = passages.batch([_evidence(r, model.spec) for r in rows])
    if model.spec.split > 0:
        return model.upper(ch, cm, ph, pm)
    return model(cid, cm, pid, pm)


def evaluate(model: JudgeModel, claims: Encoded, passages: Encoded, rows: list[dict], batch: int = 64) -> dict:
    """Held-out metrics: binary (supported vs not) balanced accuracy, 3-way accuracy, per kind."""
    model.eval()
    probs = []
    with torch.no_grad():
        for s in range(0, len(rows), batch):
            probs.append(torch.softmax(logits_for(model, claims, passages, rows[s:s + batch]), -1))
    p = torch.cat(probs)
    pred3 = [LABELS[i] for i in p.argmax(-1).tolist()]
    sup = (p[:, 0] > 0.5).tolist()
    report = binary_report([r["label"] == "supported" for r in rows], sup, [r.get("kind", "") for r in rows])
    report["accuracy_3way"] = sum(a == r["label"] for a, r in zip(pred3, rows)) / max(1, len(rows))
    return report


def train(data_dir: Path, out_dir: Path, cfg: TrainConfig, progress: bool = True, base_path: Optional[Path] = None,
          on_step: Optional[Callable[[int], None]] = None) -> dict:
    """Train (or resume), evaluate on the held-out articles, write the weights and manifest.

    `base_path`: another BERT folder than the embedded MiniLM (tests use a tiny random one);
    `on_step(step)` is called after every optimizer step and checkpoint."""
    from safetensors.torch import load_file, save_file

    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    train_path, test_path = data_dir / "train.jsonl", data_dir / "test.jsonl"
    for p in (train_path, test_path):
        if not p.is_file():
            raise FileNotFoundError(f"{p} is missing: make the data first with `ewe judge data --out {data_dir}`")
    train_rows = _subset(read(train_path), cfg.max_train, cfg.seed)
    test_rows = _subset(read(test_path), cfg.max_test, cfg.seed + 1)
    settings = {**asdict(cfg), "train_sha256": _sha(train_path), "test_sha256": _sha(test_path)}

    model = JudgeModel(cfg.spec, base_path)
    if cfg.init is not None:
        settings["init_weights_sha256"] = _start_from(model, cfg)
    tok = load_tokenizer()
    rows = train_rows + test_rows
    add_windows(rows, tok, cfg.spec.max_passage_tokens)
    claims = Encoded(model, tok, [r["claim"] for r in rows], cfg.spec.max_claim_tokens, 0, "claims", progress=progress)
    passages = Encoded(model, tok, [_evidence(r, cfg.spec) for r in rows], cfg.spec.max_passage_tokens, 1,
                       "passages", progress=progress)

    head = [p for p in model.head.parameters()]
    layers = [p for p in model.trainable_parameters() if all(p is not q for q in head)]
    opt = torch.optim.AdamW([{"params": layers, "lr": cfg.lr}, {"params": head, "lr": cfg.head_lr}],
                            weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(train_rows) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    warm = max(1, int(cfg.warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))
    label_id = {lab: i for i, lab in enumerate(LABELS)}

    step = 0
    checkpoint = Checkpoint(out_dir)
    resumed = checkpoint.resume(lambda s: _training_part(s) == _training_part(settings), opt, sched)
    if resumed is not None:
        trained, meta = resumed
        model.load_trained_state(trained)
        step = meta["step"]
        print(f"resuming from step {step} of {total} ({checkpoint.json})")

    t0 = time.perf_counter()
    bar = tqdm(total=total, initial=step, desc="training", unit="step", disable=not progress)
    model.train()
    while step < total:
        epoch, pos = divmod(step, steps_per_epoch)
        order = list(range(len(train_rows)))
        random.Random(cfg.seed * 1000 + epoch).shuffle(order)
        batch = [train_rows[i] for i in order[pos * cfg.batch_size:(pos + 1) * cfg.batch_size]]
        logits = logits_for(model, claims, passages, batch)
        target = torch.tensor([label_id[r["label"]] for r in batch])
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.trainable_parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", epoch=epoch)
        if step % cfg.checkpoint_every == 0 or step == total:
            checkpoint.save(model.trained_state(), opt, sched, {"settings": settings, "step": step})
        if on_step is not None:
            on_step(step)
    bar.close()
    train_s = time.perf_counter() - t0

    if cfg.save_dtype not in ("float32", "bfloat16"):
        raise ValueError(f"save_dtype {cfg.save_dtype!r} must be float32 or bfloat16")
    weights = out_dir / "judge.safetensors"
    state = {k: v.to(getattr(torch, cfg.save_dtype)) for k, v in model.trained_state().items()}
    save_file(state, str(weights) + ".tmp", metadata={"labels": ",".join(LABELS)})
    Path(str(weights) + ".tmp").replace(weights)
    weights.chmod(0o644)  # safetensors writes it private; weights are for reading
    model.load_trained_state(load_file(str(weights)))  # measure what is saved
    metrics = evaluate(model, claims, passages, test_rows)
    manifest = {
        "spec": asdict(cfg.spec), "base_sha256": base_fingerprint(base_path), "labels": list(LABELS),
        "settings": settings, "weights_sha256": _sha(weights), "train_examples": len(train_rows),
        "test_examples": len(test_rows), "steps": total, "train_seconds_this_run": round(train_s, 1),
        "torch": torch.__version__, "held_out": metrics,
    }
    write_json(out_dir / "manifest.json", manifest)
    return manifest


def _start_from(model: JudgeModel, cfg: TrainConfig) -> str:
    """Load the trained part of judge `cfg.init` (it must share the spec); returns its weights' hash."""
    from safetensors.torch import load_file

    from .checker import resolve

    folder = resolve(cfg.init)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    same = {k: v for k, v in asdict(cfg.spec).items() if k != "bf16"}  # autocast changes no weight
    if {k: v for k, v in (manifest.get("spec") or {}).items() if k != "bf16"} != same:
        raise ValueError(f"--init {cfg.init}: its spec {manifest.get('spec')} is not this run's {asdict(cfg.spec)}")
    weights = folder / "judge.safetensors"
    model.load_trained_state({k: v.float() for k, v in load_file(str(weights)).items()})
    return _sha(weights)


def _training_part(settings: dict) -> dict:
    return {k: v for k, v in settings.items() if k not in _NOT_TRAINING}
