"""The engine: a decoding session over the patched model, sampling, and the one token loop."""
from .loop import Continuation, Hook, Rewind, Stop, TokenLoop, decode
from .sampling import Sampler
from .session import DecodingSession

__all__ = ["Continuation", "DecodingSession", "Hook", "Rewind", "Sampler", "Stop", "TokenLoop", "decode"]
