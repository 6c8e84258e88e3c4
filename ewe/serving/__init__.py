"""Serving: an answer streamed with its retractions (stream.py) and the OpenAI-compatible
HTTP server `ewe serve` (server.py, protocol.py)."""
from .stream import AnswerStream, Finished, Retraction, StreamCancelled, TextDelta, apply_events

__all__ = ["AnswerStream", "Finished", "Retraction", "StreamCancelled", "TextDelta", "apply_events"]
