"""argparse types for the bounded numbers of every `ewe` command: one rule, one message."""
from __future__ import annotations

import argparse


def _int(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r} is not a whole number") from None


def positive_int(v: str) -> int:
    """N >= 1 (a count, a size, a limit)."""
    n = _int(v)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{v} must be at least 1")
    return n


def non_negative_int(v: str) -> int:
    """N >= 0 (a seed)."""
    n = _int(v)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{v} must be 0 or more")
    return n


def positive_ints(count: int, names: str):
    """A type for `count` whole numbers >= 1 separated by commas, e.g. positive_ints(3, "K,M,CTX") reads "8,256,1024"."""

    def parse(v: str) -> tuple[int, ...]:
        parts = v.split(",")
        if len(parts) != count:
            raise argparse.ArgumentTypeError(f"{v!r}: expected {names} ({count} whole numbers separated by commas)")
        return tuple(positive_int(p.strip()) for p in parts)

    parse.__name__ = names
    return parse


SEED_MAX = 2**63 - 1  # torch and numpy seeds are 64-bit


def seed(v: str) -> int:
    """0 <= N < 2**63 (what torch.manual_seed takes)."""
    n = non_negative_int(v)
    if n > SEED_MAX:
        raise argparse.ArgumentTypeError(f"{v} is too large for a seed (at most 2**63 - 1)")
    return n


def _float(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r} is not a number") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{v} is not a finite number")
    return x


def finite_float(v: str) -> float:
    """Any finite number (a score threshold)."""
    return _float(v)


def positive_float(v: str) -> float:
    """A finite number > 0 (a learning rate)."""
    x = _float(v)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"{v} must be greater than 0")
    return x


def share(v: str) -> float:
    """A finite number from 0 to 1 (a share of examples)."""
    x = _float(v)
    if not 0 <= x <= 1:
        raise argparse.ArgumentTypeError(f"{v} must be between 0 and 1")
    return x


def command_group(subparsers, name: str, help: str):
    """`ewe NAME SUBCOMMAND`: the group's parser registered on `subparsers`, and the
    subparsers its subcommands go on (the chosen one lands in `args.<name>_command`)."""
    group = subparsers.add_parser(name, help=help)
    return group.add_subparsers(dest=f"{name}_command", required=True)
