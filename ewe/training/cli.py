"""`ewe train memory`: train the adapter that teaches a generator to read its memory units."""
from __future__ import annotations

import json
from pathlib import Path

from ..argtypes import command_group, non_negative_int, positive_float, positive_int, seed, share


def cmd_memory(args) -> int:
    from .memory_reader import MemoryTrainConfig, train_memory_adapter

    cfg = MemoryTrainConfig(
        model=args.model, scope=args.scope, seed=args.seed, examples=args.examples, epochs=args.epochs,
        held_out=args.held_out, batch_size=args.batch_size, lr=args.lr, rank=args.rank, alpha=args.alpha,
        targets=[t.strip() for t in args.targets.split(",") if t.strip()], kl_weight=args.kl_weight,
        ce_weight=args.ce_weight, unit_tokens=args.unit_tokens, start_token=not args.no_start_token,
        units=list(args.units), no_answer=args.no_answer,
        max_answer_tokens=args.max_answer_tokens, threads=args.threads, device=args.device,
        checkpoint_every=args.checkpoint_every, save_dtype=args.save_dtype)
    manifest = train_memory_adapter(Path(args.out), cfg)
    print(json.dumps({"held_out_before": (manifest["held_out_before"] or {}).get("all"),
                      "held_out_after": (manifest["held_out_after"] or {}).get("all"),
                      "steps": manifest["steps"], "out": args.out}, indent=2))
    return 0


def _counts(v: str) -> tuple[int, ...]:
    """Whole numbers >= 1 separated by commas ("1,1,2,3,4")."""
    return tuple(positive_int(p.strip()) for p in v.split(","))


def add_train_commands(subparsers) -> None:
    sub = command_group(subparsers, "train", "train ewe's own weights (the memory adapter)")
    m = sub.add_parser(
        "memory", help="a LoRA adapter with which the model reads memory units as well as prompt text",
        description="Distil the model reading passages as prompt text into the same model reading them as memory "
        "units (eq. 1, each unit encoded on its own), on examples built from the embedded Wikipedia (evaluation "
        "and held-out titles left out). Resumable: a rerun with the same settings continues from OUT's "
        "checkpoint. About an hour on 2 CPU cores with the defaults; on a GPU add --device cuda (bfloat16 "
        "autocast) and more --examples.")
    m.add_argument("--out", required=True, help="folder for the adapter, its manifest and checkpoints")
    m.add_argument("--model", default="embedded", help='"embedded" or a Llama-family model folder')
    m.add_argument("--scope", choices=("units", "all"), default="units",
                   help="units: the adapter acts only while encoding memory units (decoding keeps the base "
                   "weights); all: everywhere")
    m.add_argument("--examples", type=positive_int, default=1600, help="training examples per epoch")
    m.add_argument("--epochs", type=positive_int, default=1)
    m.add_argument("--held-out", type=non_negative_int, default=32, help="held-out examples measured before and after")
    m.add_argument("--batch-size", type=positive_int, default=4, help="examples per optimizer step")
    m.add_argument("--lr", type=positive_float, default=3e-4)
    m.add_argument("--rank", type=positive_int, default=16)
    m.add_argument("--alpha", type=positive_float, default=32.0)
    m.add_argument("--targets", default="q_proj,k_proj,v_proj,o_proj", help="the projections given LoRA, comma-separated")
    m.add_argument("--kl-weight", type=share, default=1.0, help="weight of the teacher-to-student KL")
    m.add_argument("--ce-weight", type=share, default=0.25, help="weight of the next-token loss on the answer")
    m.add_argument("--unit-tokens", type=positive_int, default=128, help="M, as memory.unit_tokens")
    m.add_argument("--no-start-token", action="store_true", help="units without the start token "
                   "(memory.unit_start_token: false)")
    m.add_argument("--units", type=_counts, default=(1, 1, 2, 3, 4), help="unit counts an example's memory is drawn from")
    m.add_argument("--no-answer", type=share, default=0.15, help="share of examples whose memory holds only distractors")
    m.add_argument("--max-answer-tokens", type=positive_int, default=48)
    m.add_argument("--threads", type=positive_int, default=2)
    m.add_argument("--device", default="cpu")
    m.add_argument("--checkpoint-every", type=positive_int, default=25, help="optimizer steps between checkpoints")
    m.add_argument("--save-dtype", choices=("bfloat16", "float32"), default="bfloat16")
    m.add_argument("--seed", type=seed, default=0)
    m.set_defaults(func=cmd_memory)
