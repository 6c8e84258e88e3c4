"""Critique a given text (ITA's task): find its wrong claims, say why, cite where to check.

    critic.py   text -> sentences -> claims (self-contained) -> evidence -> verdicts, trees, references
    batch.py    `ewe critique --input texts.jsonl --output critiques.jsonl`: resumable, locked
    report.py   the critiques as an HTML page: each text with its claims marked, trees collapsible
"""
from .critic import Critic, Critique, CritiquedClaim

__all__ = ["Critic", "Critique", "CritiquedClaim"]
