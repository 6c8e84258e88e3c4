"""Serving: an answer streamed with its retractions (stream.py) and the OpenAI-compatible
HTTP server `ewe serve` (server.py, protocol.py)."""
from .stream import AnswerStream, Finished, Retraction, TextDelta, apply_events

__all__ = ["AnswerStream", "Finished", "Retraction", "TextDelta", "apply_events"]
