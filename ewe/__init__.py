"""ewe: Explicit Working Memory for factual long-form generation.

`from ewe import EWE` is the entry point; see `ewe.api`. Importing ewe never needs
the compiled extension or a GPU.
"""
from .version import __version__

__all__ = ["EWE", "EWEConfig", "GenerationResult", "__version__"]


def __getattr__(name):  # lazy, so `ewe --help` does not pay for importing transformers
    if name in ("EWE", "GenerationResult"):
        from . import api

        return getattr(api, name)
    if name == "EWEConfig":
        from .config import EWEConfig

        return EWEConfig
    raise AttributeError(f"module 'ewe' has no attribute {name!r}")
