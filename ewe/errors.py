"""What went wrong, by whose doing: an input the caller can fix, or a fault in ewe.

A runner over a prompt file records a prompt that cannot run (`InputError`: too long for
the context, an empty prompt, bad passages) and goes on with the others; any other
exception is a fault, and stops the run with everything finished kept.
"""
from __future__ import annotations


class InputError(ValueError):
    """A prompt, passage or argument that cannot be used as given; the message names it."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (still a TypeError for callers that catch that)."""


class RunError(InputError):
    """A run that cannot start or go on: a bad input file, an output another run holds or
    that was made with another configuration, a checker that only errors."""
