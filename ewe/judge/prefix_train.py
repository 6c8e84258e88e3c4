"""Training and measuring the prefix judge (`ewe judge train --prefix`).

One forward pass over (premise, hypothesis) labels every prefix at once: the judge is causal, so
its state at a token depends only on the text up to it, and each token carries the label of the
prefix ending there (`data.prefix_label`; unknown ones are left out of the loss). Hypotheses are
sometimes led by one or two other true claims about the same passage, so that the judge also
sees prefixes that run over several sentences, as an answer's do.

The frozen layers' states are computed once and kept (bfloat16); each epoch trains the top
layer(s), the norm and the head on them. Held-out articles (`data.is_held_out`) are measured on
every word-boundary prefix with a known label: balanced accuracy at 0.5, the paper's threshold.
"""
from __future__ import annotations

import hashlib
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..verify.types import SUPPORTED
from .data import SOURCE_FRAMES, lead_in, model_written_apart, prefix_label, read
from .prefix_model import PrefixJudge, PrefixJudgeSpec

IGNORE = -1


@dataclass
class PrefixTrainConfig:
    spec: PrefixJudgeSpec = field(default_factory=PrefixJudgeSpec)
    seed: int = 0
    epochs: int = 2
    batch_size: int = 8
    lr: float = 2e-4
    max_train: int = 3000
    max_test: int = 800
    threads: int = 2
    context_claims: float = 0.5  # share of training hypotheses led by other true claims of the passage
    source_frames: float = 0.0  # share put in a summary's lead-in ("The article explains that ..."), either label


@dataclass
class Row:
    """One (premise, hypothesis) as tokens, with a prefix label per token (IGNORE: none) and
    whether the token ends a word of the claim (the held-out prefixes are read there)."""

    ids: list[int]
    labels: list[int]
    word_end: list[bool]


def make_row(judge: PrefixJudge, ex: dict, context: list[str]) -> Row:
    tok = judge.tokenizer
    header = judge.header_ids(ex["evidence"])
    lead = " ".join(context) + " " if context else ""
    hyp = lead + ex["claim"]
    enc = tok(hyp, add_special_tokens=False, return_offsets_mapping=True)
    labels, word_end = [IGNORE] * len(header), [False] * len(header)
    for _, end in enc["offset_mapping"]:
        if end <= len(lead):
            labels.append(1)  # the leading claims are true of the passage
            word_end.append(False)
            continue
        cut = end - len(lead)
        known = prefix_label(ex["claim"], ex["label"], ex.get("edit_start"), cut, ex.get("kind", ""))
        labels.append(IGNORE if known is None else int(known))
        word_end.append(known is not None and (cut == len(ex["claim"]) or ex["claim"][cut:cut + 1].isspace()))
    return Row(header + enc["input_ids"], labels, word_end)


def make_rows(judge: PrefixJudge, examples: list[dict], rng: random.Random, context_share: float,
              frame_share: float = 0.0) -> list[Row]:
    """One row per example: a share led by other true claims of its passage, a share (drawn
    after, from its own generator) inside a source frame (`data.SOURCE_FRAMES`)."""
    true_claims: dict[str, list[str]] = {}
    for ex in examples:
        if ex["label"] == SUPPORTED:
            true_claims.setdefault(ex["evidence"], []).append(ex["claim"])
    frames = random.Random(rng.random())
    rows = []
    for ex in examples:
        others = [c for c in true_claims.get(ex["evidence"], []) if c != ex["claim"]]
        context = rng.sample(others, min(len(others), rng.choice((1, 2)))) if others and rng.random() < context_share else []
        if frame_share and frames.random() < frame_share:
            claim, edit = lead_in(ex["claim"], ex.get("edit_start"), frames.choice(SOURCE_FRAMES))
            ex = {**ex, "claim": claim, "edit_start": edit}
        rows.append(make_row(judge, ex, context))
    return rows


def draw_training(examples: list[dict], most: int, rng: random.Random) -> list[dict]:
    """Every example in the generator's own words (kinds "model-...", few and the text PrefixNLI
    reads), then synthetic ones drawn up to `most` in all."""
    written, synthetic = model_written_apart(examples)
    return written + rng.sample(synthetic, max(0, min(most - len(written), len(synthetic))))


def _batches(rows: list[Row], size: int) -> list[list[int]]:
    """Row indices in batches of similar length (little padding)."""
    order = sorted(range(len(rows)), key=lambda i: len(rows[i].ids))
    return [order[i:i + size] for i in range(0, len(order), size)]


def _pad(rows: list[Row], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r.ids) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r.ids)] = torch.tensor(r.ids)
        labels[i, :len(r.labels)] = torch.tensor(r.labels)
    return ids, labels


def lower_states(judge: PrefixJudge, rows: list[Row], size: int, log=print) -> list[tuple[list[int], torch.Tensor]]:
    """(row indices, frozen states [B, T, H] in bfloat16) per batch."""
    pad = judge.tokenizer.pad_token_id or 0
    out, t0 = [], time.perf_counter()
    for n, batch in enumerate(_batches(rows, size)):
        ids, _ = _pad([rows[i] for i in batch], pad)
        out.append((batch, judge.lower(ids).to(torch.bfloat16)))
        if n % 50 == 0:
            log(f"  frozen states: batch {n + 1}, {time.perf_counter() - t0:.0f} s")
    return out


def measure(judge: PrefixJudge, rows: list[Row], states) -> dict:
    """Balanced accuracy at 0.5 over the word-boundary prefixes with a known label; also over
    every labelled token, and the score of the whole claims."""
    got = {"word": ([], []), "token": ([], [])}
    with torch.no_grad():
        for batch, h in states:
            probs = torch.sigmoid(judge.upper(h.float()))
            for j, i in enumerate(batch):
                r = rows[i]
                for t, (lab, we) in enumerate(zip(r.labels, r.word_end)):
                    if lab == IGNORE:
                        continue
                    got["token"][0].append(lab)
                    got["token"][1].append(float(probs[j, t]))
                    if we:
                        got["word"][0].append(lab)
                        got["word"][1].append(float(probs[j, t]))
    return {k: balanced(y, p) for k, (y, p) in got.items()}


def balanced(labels: list[int], probs: list[float], threshold: float = 0.5) -> dict:
    pos = [p for y, p in zip(labels, probs) if y == 1]
    neg = [p for y, p in zip(labels, probs) if y == 0]
    tpr = sum(p >= threshold for p in pos) / max(1, len(pos))
    tnr = sum(p < threshold for p in neg) / max(1, len(neg))
    return {"balanced_accuracy": round((tpr + tnr) / 2, 4), "entailed_kept": round(tpr, 4),
            "not_entailed_caught": round(tnr, 4), "entailed": len(pos), "not_entailed": len(neg)}


def train(data_dir: Path, out_dir: Path, cfg: PrefixTrainConfig, log=print) -> dict:
    from ..model_loading import load_model

    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    rng = random.Random(cfg.seed)
    model, tokenizer, _ = load_model(cfg.spec.base, "float32", "cpu", None)
    judge = PrefixJudge(model, tokenizer, cfg.spec)
    train_ex = read(data_dir / "train.jsonl")
    test_ex = read(data_dir / "test.jsonl")
    train_ex = draw_training(train_ex, cfg.max_train, rng)
    test_ex = random.Random(cfg.seed + 1).sample(test_ex, min(cfg.max_test, len(test_ex)))
    train_rows = make_rows(judge, train_ex, rng, cfg.context_claims, cfg.source_frames)
    test_rows = make_rows(judge, test_ex, random.Random(cfg.seed + 2), 0.0)

    t0 = time.perf_counter()
    log(f"frozen layers over {len(train_rows)} training and {len(test_rows)} held-out hypotheses")
    train_states = lower_states(judge, train_rows, cfg.batch_size, log)
    test_states = lower_states(judge, test_rows, cfg.batch_size, log)
    frozen_s = time.perf_counter() - t0

    labels = [lab for r in train_rows for lab in r.labels if lab != IGNORE]
    n_pos, n_neg = sum(labels), len(labels) - sum(labels)
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(n_neg / max(1, n_pos)), reduction="none")
    opt = torch.optim.AdamW(list(judge.trained_parameters()), lr=cfg.lr, weight_decay=0.01)
    before = measure(judge, test_rows, test_states)
    history = []
    for epoch in range(cfg.epochs):
        order = list(range(len(train_states)))
        random.Random(cfg.seed + 10 + epoch).shuffle(order)
        judge.train()
        total, t1 = 0.0, time.perf_counter()
        for n, b in enumerate(order):
            batch, h = train_states[b]
            _, y = _pad([train_rows[i] for i in batch], 0)
            y = y[:, :h.shape[1]]
            logits = judge.upper(h.float())
            mask = y != IGNORE
            loss = (loss_fn(logits, y.clamp(min=0).float()) * mask).sum() / mask.sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            if n % 100 == 0:
                log(f"  epoch {epoch + 1} batch {n + 1}/{len(order)} loss {total / (n + 1):.4f} "
                    f"({time.perf_counter() - t1:.0f} s)")
        judge.eval()
        history.append({"epoch": epoch + 1, "loss": round(total / max(1, len(order)), 4),
                        "held_out": measure(judge, test_rows, test_states)})
        log(f"epoch {epoch + 1}: {history[-1]}")

    data_manifest = (data_dir / "manifest.json").read_bytes() if (data_dir / "manifest.json").exists() else b""
    manifest = {
        "base": cfg.spec.base, "train": {**{k: v for k, v in asdict(cfg).items() if k != "spec"},
                                          "examples": len(train_rows), "labelled_tokens": len(labels),
                                          "entailed_share": round(n_pos / max(1, len(labels)), 4)},
        "data": {"folder": str(data_dir), "manifest_sha256": hashlib.sha256(data_manifest).hexdigest()},
        "held_out": {"examples": len(test_rows), "before_training": before, **history[-1]["held_out"],
                     "threshold": 0.5, "read_at": "word-boundary prefixes with a known label"},
        "history": history, "seconds": {"frozen_states": round(frozen_s, 1),
                                        "total": round(time.perf_counter() - t0, 1)},
    }
    judge.save(out_dir, manifest)
    return manifest
