"""Which memory-attention implementation runs: decided here and nowhere else.

Order of precedence: an explicit `impl` argument, then the environment variable
EWE_ATTENTION_IMPL, then "auto". "auto" picks flash-attention 4 where it is installed, takes the
inputs (CUDA, half precision, no context mask or a prefix mask given with its lengths: see
`flash.supports`) and runs them well (prefill, decode of many rows: `flash.preferred`), else the
compiled extension when it is built and
supports the inputs (see `extension.supports`), else the fused PyTorch path. It says once per
process which of them it can use (logger "ewe", level WARNING, so the CLI shows it): on CPU only
when the extension is not built, on CUDA at the first call. Forcing "flash" or "extension" where
it is not available is an error, never a silent fallback. `used` counts the calls each kernel
served, so a test (or a user) can see which one ran.
"""
from __future__ import annotations

import logging
import os
from collections import Counter
from typing import Callable

import torch

from . import extension, flash
from .extension import memory_attention_extension
from .flash import memory_attention_flash
from .fused import memory_attention_fused
from .reference import memory_attention_reference

IMPLEMENTATIONS = ("auto", "reference", "fused", "extension", "flash")
ENV_VAR = "EWE_ATTENTION_IMPL"

logger = logging.getLogger("ewe")
_notice = {"given": False, "cuda": False}
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


def memory_attention_auto(query, key, value, memory, ctx_mask, scale, ctx_lengths=None):
    """flash-attention 4, else the extension, where each takes the inputs; else the fused path (the signature of
    memory_attention_flash: ctx_lengths, the keys each row attends to under a prefix ctx_mask, serves flash alone)."""
    if query.is_cuda and not _notice["cuda"]:
        _cuda_notice()
    if flash.preferred(query, key) and flash.supports(query, key, value, memory, ctx_mask, ctx_lengths):
        _count("flash")  # (the cheap test first)
        return memory_attention_flash(query, key, value, memory, ctx_mask, scale, ctx_lengths)
    if extension.supports(query, key, value, memory):
        _count("extension")
        return memory_attention_extension(query, key, value, memory, ctx_mask, scale)
    _count("fused")
    return memory_attention_fused(query, key, value, memory, ctx_mask, scale)


def _cuda_notice() -> None:
    """One line, once per process: which kernels serve memory attention on this GPU."""
    _notice["cuda"] = True
    first = "flash-attention 4 for prefill and many-row decode" if flash.available() else \
        f"flash-attention 4 not available ({flash.load_error()})"
    then = "the compiled extension" if extension.has_cuda_kernel() else "the fused PyTorch path (extension without CUDA kernels)"
    logger.warning("ewe: memory attention on CUDA: %s, else %s", first, then)


def _count(name: str) -> None:
    # Not while torch.compile traces: a guard on the counter would recompile the graph at every call.
    # (Likewise a captured CUDA graph replays without Python: `used` counts the calls Python made.)
    if not torch.compiler.is_compiling():
        used[name] += 1


def run(fn: Callable, *args, ctx_lengths=None):
    """Call a kernel `select` returned, counting it in `used` (auto counts the one it picks).

    ctx_lengths: the keys each row attends to when the context mask (args[4]) is their prefix mask
    (ops/masks.py); handed to the kernels that take it instead of the mask (flash, auto), the others
    read the mask.
    """
    if fn is not memory_attention_auto:
        _count(_NAMES[fn])
    if fn is memory_attention_auto or fn is memory_attention_flash:
        return fn(*args, ctx_lengths=ctx_lengths)
    return fn(*args)


_NAMES = {memory_attention_reference: "reference", memory_attention_fused: "fused",
          memory_attention_extension: "extension", memory_attention_flash: "flash"}


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
    if name == "flash":
        if not flash.available():
            raise RuntimeError(f"impl='flash': flash-attention 4 is not available ({flash.load_error()}); "
                               f"{flash.INSTALL_HINT}, or use 'auto'")
        return memory_attention_flash
    if not extension.available() and not flash.available():
        if not _notice["given"]:
            _notice["given"] = True
            logger.warning("ewe: memory attention: compiled extension not built, using the fused PyTorch path "
                           "(`make ext` builds it)")
        return memory_attention_fused
    return memory_attention_auto
