"""A model folder with another model's architecture and tokenizer and random weights (seeded).

For speed measurements where the real weights cannot travel: the embedded SmolLM2 ships as a
98 MB GGUF, more than one call to a lent GPU machine may carry beside the project. Speed does
not depend on the weights' values; answers do, so nothing but speed is read from such a model.

    python benchmarks/random_model.py SOURCE_FOLDER OUT_FOLDER [--seed 0]

SOURCE_FOLDER holds config.json and the tokenizer files (for the embedded model:
~/.cache/ewe/models/<name>/ after any `ewe` command has loaded it once).
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json",
                   "special_tokens_map.json")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    config = json.loads((args.source / "config.json").read_text())
    config.pop("quantization_config", None)  # the embedded folder's config names the GGUF it came from
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(config))
    torch.manual_seed(args.seed)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(args.out))
    model.save_pretrained(args.out)
    for name in TOKENIZER_FILES:
        if (args.source / name).exists():
            shutil.copy(args.source / name, args.out / name)
    print(f"{args.out}: {config.get('model_type')} with {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M "
          f"random parameters (seed {args.seed}) and {args.source.name}'s tokenizer")


if __name__ == "__main__":
    main()
