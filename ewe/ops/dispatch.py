"""Which memory-attention implementation runs: decided here and nowhere else.

Order of precedence: an explicit `impl` argument, then the environment variable
EWE_ATTENTION_IMPL, then "auto". "auto" picks the compiled extension when it is
built and supports the inputs, else the fused PyTorch path. Forcing "extension" when
it is not built is an error, never a silent fallback.
"""
from __future__ import annotations

import os
from typing import Callable

from .fused import memory_attention_fused
from .reference import memory_attention_reference

IMPLEMENTATIONS = ("auto", "reference", "fused", "extension")
ENV_VAR = "EWE_ATTENTION_IMPL"


def requested_impl(impl: str | None = None) -> str:
    name = impl or os.environ.get(ENV_VAR) or "auto"
    if name not in IMPLEMENTATIONS:
        source = "impl" if impl else ENV_VAR
        raise ValueError(f"{source}={name!r} is not a memory-attention implementation; choose one of {IMPLEMENTATIONS}")
    return name


def select(impl: str | None = None) -> Callable:
    """Return the memory-attention function for `impl` (see module docstring)."""
    name = requested_impl(impl)
    if name == "reference":
        return memory_attention_reference
    if name == "extension":
        raise NotImplementedError(
            "impl='extension': the compiled memory-attention extension (csrc/) is not built in this "
            "version of ewe; use 'fused' or 'auto'"
        )
    return memory_attention_fused
