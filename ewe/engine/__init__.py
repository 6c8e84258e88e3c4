"""The engine: requests added and stepped (engine.py), a decoding session over the patched model,
sampling, and the one token loop.

The hook vocabulary (actions.py) loads without torch; the loop, the session and the sampler
load on first use, so a method module that only defines hooks stays light to import."""
from importlib import import_module

from .actions import BanFirstTokens, Branch, Continuation, Hook, Hooks, Rewind, RowFeed, RowHooks, Stop
from .engine import Engine, RequestAborted
from .request import Request, RowMemory, Status

_LAZY = {"TokenLoop": ".loop", "decode": ".loop", "ContinuousLoop": ".continuous", "Sampler": ".sampling", "DecodingSession": ".session"}

__all__ = ["BanFirstTokens", "Branch", "ContinuousLoop", "Continuation", "Engine", "Hooks", "DecodingSession", "Hook", "Request",
           "RequestAborted", "RowMemory", "Status", "Rewind", "RowFeed", "RowHooks", "Sampler", "Stop", "TokenLoop", "decode"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
