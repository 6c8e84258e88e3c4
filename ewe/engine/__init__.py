"""The engine: a decoding session over the patched model, sampling, and the token loop."""
from .decode import Continuation, decode
from .sampling import Sampler
from .session import DecodingSession

__all__ = ["Continuation", "DecodingSession", "Sampler", "decode"]
