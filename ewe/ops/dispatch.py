"""Which memory-attention implementation runs: decided here and nowhere else.

Order of precedence: an explicit `impl` argument, then the environment variable
EWE_ATTENTION_IMPL, then "auto". "auto" picks the compiled extension when it is
built and supports the inputs (see `extension.supports`), else the fused PyTorch path;
when it falls back because the extension is not built, it says so once per process
(logger "ewe", level WARNING, so the CLI shows it). Forcing "extension" when it is not built
is an error, never a silent fallback. `used` counts the calls each kernel served, so a test
(or a user) can see which one ran.
"""
from __future__ import annotations

import logging
import os
from collections import Counter
from typing import Callable

import torch

from . import extension
from .extension import memory_attention_extension
from .fused import memory_attention_fused
from .reference import memory_attention_reference

IMPLEMENTATIONS = ("auto", "reference", "fused", "extension")
ENV_VAR = "EWE_ATTENTION_IMPL"

logger = logging.getLogger("ewe")
_notice = {"given": False}
used: Counter = Counter()  # kernel name -> memory-attention calls it served in this process


def choice(value: str | None, argument: str, env_var: str, choices, what: str) -> str:
    """`value`, else $env_var, else "auto"; refused, naming where it came from, unless in `choices`."""
    name = value or os.environ.get(env_var) or "auto"
    if name not in choices:
        source = argument if value else env_var
        raise ValueError(f"{source}={name!r} is not {what}; choose one of {choices}")
    return name


def requested_impl(impl: str | None = None) -> str:
    return choice(impl, "impl", ENV_VAR, IMPLEMENTATIONS, "a memory-attention implementation")


def memory_attention_auto(query, key, value, memory, ctx_mask, scale):
    """The extension where it supports the inputs, else the fused path (same signature)."""
    if extension.supports(query, key, value, memory):
        _count("extension")
        return memory_attention_extension(query, key, value, memory, ctx_mask, scale)
    _count("fused")
    return memory_attention_fused(query, key, value, memory, ctx_mask, scale)


def _count(name: str) -> None:
    # Not while torch.compile traces: a guard on the counter would recompile the graph at every call.
    # (Likewise a captured CUDA graph replays without Python: `used` counts the calls Python made.)
    if not torch.compiler.is_compiling():
        used[name] += 1


def run(fn: Callable, *args):
    """Call a kernel `select` returned, counting it in `used` (auto counts the one it picks)."""
    if fn is not memory_attention_auto:
        _count(_NAMES[fn])
    return fn(*args)


_NAMES = {memory_attention_reference: "reference", memory_attention_fused: "fused",
          memory_attention_extension: "extension"}


def select(impl: str | None = None) -> Callable:
    """Return the memory-attention function for `impl` (see module docstring)."""
    name = requested_impl(impl)
    if name == "reference":
        return memory_attention_reference
    if name == "fused":
        return memory_attention_fused
    if name == "extension":
        if not extension.available():
            raise RuntimeError(
                f"impl='extension': the compiled memory-attention extension is not available "
                f"({extension.load_error()}); {extension.BUILD_HINT}, or use 'fused' or 'auto'"
            )
        return memory_attention_extension
    if not extension.available():
        if not _notice["given"]:
            _notice["given"] = True
            logger.warning("ewe: memory attention: compiled extension not built, using the fused PyTorch path "
                           "(`make ext` builds it)")
        return memory_attention_fused
    return memory_attention_auto
