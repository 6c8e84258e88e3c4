"""What EWE's controller does with a sentence that failed its check, as pure functions of what
happened so far (issue 58). ControlledRun gathers the facts (attempts, budgets, whether a retry
would write the same tokens), asks here, and carries the answer out: backtracks, candidate
rounds, memory. tests/test_policy.py holds every branch without a model.

The decisions, in the order a failed sentence meets them:

  on_failed      keep it (no backtrack left), rewrite it once more (the paper's retry), ask for a
                 round of candidate rewrites, or give up on it;
  after_round    a candidate passed (rewrite to it), another round, or give up;
  exhausted      giving up: keep the best attempt, keep the last one, drop the sentence (the
                 answer goes on without it), or stop the answer before it;
  best_attempt   which attempt keep_best keeps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

KEEP, RETRY, CANDIDATES, GIVE_UP = "keep", "retry", "candidates", "give_up"
REWRITE, NEXT_ROUND = "rewrite", "next_round"


@dataclass(frozen=True)
class Failed:
    """What the policy knows about a sentence that failed its check.

    attempts: versions of the sentence written so far, the failed one included; repeats: it
    failed for repeating the answer, not for its claims; backtracks_left: backtracks the answer
    may still make; candidates: rewrites come as rounds of candidates (rewrite_candidates > 1);
    max_retries: rewrites (or rounds) allowed per sentence; budget_spent: the candidates' token
    budget is spent; same_as: the earlier attempt (1-based) the failed one repeats token for
    token, if any; retry_would_repeat: a retry now would decode the failed attempt again (greedy,
    under the same memory)."""

    attempts: int
    repeats: bool = False
    backtracks_left: int = 1
    candidates: bool = False
    max_retries: int = 2
    budget_spent: bool = False
    same_as: int | None = None
    retry_would_repeat: bool = False


@dataclass(frozen=True)
class Decision:
    """`action` (KEEP, RETRY, CANDIDATES, GIVE_UP) and why, in the trace's words. KEEP with no
    backtrack left keeps the sentence unless it repeats the answer or is no answer (degenerate,
    off its subject): then the answer ends before it."""

    action: str
    why: str = ""


def on_failed(f: Failed) -> Decision:
    """What to do with the failed sentence (see the module docstring)."""
    if f.backtracks_left <= 0:
        return Decision(KEEP, "backtrack budget spent")
    if f.candidates:
        if f.max_retries < 1:
            return Decision(GIVE_UP, "no candidate added a supported claim" if f.repeats else "no candidate passed")
        if f.budget_spent:
            return Decision(GIVE_UP, "rewrite budget spent")
        return Decision(CANDIDATES)
    if f.attempts <= f.max_retries and f.same_as is None:
        if f.retry_would_repeat:
            return Decision(GIVE_UP, f"a retry would write attempt {f.attempts} again (greedy, the memory it "
                                     "was written under)")
        return Decision(RETRY, "repeats" if f.repeats else "unsupported claims")
    return Decision(GIVE_UP, f"attempt {f.attempts} repeats attempt {f.same_as}" if f.same_as else "retries used up")


def after_round(passed: bool, checked: bool, round_: int, max_retries: int, budget_spent: bool,
                repeats: bool = False) -> Decision:
    """After round `round_` of candidates: REWRITE to the one that passed, NEXT_ROUND (some were
    checked, rounds and budget remain), or GIVE_UP (every candidate repeated an earlier attempt or
    the answer, none completed, or rounds or budget are used up)."""
    if passed:
        return Decision(REWRITE, "a candidate rewrite passed its check")
    if checked and round_ < max_retries and not budget_spent:
        return Decision(NEXT_ROUND)
    return Decision(GIVE_UP, "no candidate added a supported claim" if repeats else "no candidate passed")


def exhausted(configured: str, repeats: bool, kept_repeats_answer: bool = False, budget_spent: bool = False) -> str:
    """The on_retries_exhausted policy that applies: after a repeat nothing new replaced, or when
    the attempt a keep policy would keep repeats the answer, the answer stops there; so it does
    instead of a drop once the rewrite budget is spent (going on would decode more text to check,
    and each failure cut would cost more than the budget allowed). The caller says the budget is
    spent only where the answer has a sentence before the failed one: an empty answer goes on."""
    if repeats or (configured.startswith("keep") and kept_repeats_answer):
        return "stop"
    if budget_spent and configured == "drop":
        return "stop"
    return configured


def best_attempt(unsupported: Sequence[int], no_answer: Sequence[bool]) -> int:
    """keep_best's choice among the attempts (their unsupported-claim counts, and whether each is
    no answer: degenerate or off its subject): the fewest unsupported claims among those that
    answer (all of them if none does), ties to the latest."""
    readable = [i for i, bad in enumerate(no_answer) if not bad] or list(range(len(unsupported)))
    return min(reversed(readable), key=lambda i: unsupported[i])
