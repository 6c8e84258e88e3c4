"""EWE's failure policy (ewe/controller/policy.py) without a model: every branch of what happens
to a sentence that failed its check. tests/test_controller.py runs the same decisions through
the loop with scripted models, and tests/test_golden.py token for token."""
import pytest

from ewe.controller.policy import (
    CANDIDATES, GIVE_UP, KEEP, NEXT_ROUND, RETRY, REWRITE, Decision, Failed, after_round, best_attempt, exhausted,
    on_failed,
)


@pytest.mark.parametrize("failed, decision", [
    # no backtrack left: the sentence stays (the run ends the answer before it if it repeats the answer)
    (Failed(attempts=1, backtracks_left=0), Decision(KEEP, "backtrack budget spent")),
    (Failed(attempts=1, backtracks_left=0, candidates=True, budget_spent=True), Decision(KEEP, "backtrack budget spent")),
    # the paper's retry: rewrite in place while retries remain
    (Failed(attempts=1), Decision(RETRY, "unsupported claims")),
    (Failed(attempts=2, max_retries=2), Decision(RETRY, "unsupported claims")),
    (Failed(attempts=1, repeats=True), Decision(RETRY, "repeats")),
    (Failed(attempts=3, max_retries=2), Decision(GIVE_UP, "retries used up")),
    (Failed(attempts=2, same_as=1), Decision(GIVE_UP, "attempt 2 repeats attempt 1")),
    (Failed(attempts=1, retry_would_repeat=True),
     Decision(GIVE_UP, "a retry would write attempt 1 again (greedy, the memory it was written under)")),
    # candidate rounds
    (Failed(attempts=1, candidates=True), Decision(CANDIDATES)),
    (Failed(attempts=5, candidates=True, same_as=1), Decision(CANDIDATES)),  # rounds count their own retries
    (Failed(attempts=1, candidates=True, budget_spent=True), Decision(GIVE_UP, "rewrite budget spent")),
    (Failed(attempts=1, candidates=True, max_retries=0), Decision(GIVE_UP, "no candidate passed")),
    (Failed(attempts=1, candidates=True, max_retries=0, repeats=True),
     Decision(GIVE_UP, "no candidate added a supported claim")),
])
def test_on_failed(failed, decision):
    assert on_failed(failed) == decision


@pytest.mark.parametrize("args, action", [
    ((True, True, 1, 2, False), REWRITE),
    ((True, True, 2, 2, True), REWRITE),  # a candidate that passed is taken whatever the budget
    ((False, True, 1, 2, False), NEXT_ROUND),
    ((False, True, 2, 2, False), GIVE_UP),  # rounds used up
    ((False, True, 1, 2, True), GIVE_UP),  # budget spent
    ((False, False, 1, 2, False), GIVE_UP),  # nothing new was checked: another round would repeat it
])
def test_after_round(args, action):
    assert after_round(*args).action == action


def test_after_round_says_why_it_gives_up():
    assert after_round(False, False, 1, 2, False).why == "no candidate passed"
    assert after_round(False, False, 1, 2, False, repeats=True).why == "no candidate added a supported claim"


@pytest.mark.parametrize("configured, repeats, kept_repeats, then", [
    ("keep_best", False, False, "keep_best"),
    ("keep_last", False, False, "keep_last"),
    ("drop", False, False, "drop"),
    ("stop", False, False, "stop"),
    ("keep_best", True, False, "stop"),  # a repeat nothing new replaced: the answer ends
    ("drop", True, False, "stop"),
    ("keep_best", False, True, "stop"),  # what keep would keep repeats the answer
    ("drop", False, True, "drop"),  # nothing is kept, so nothing repeats
])
def test_exhausted(configured, repeats, kept_repeats, then):
    assert exhausted(configured, repeats, kept_repeats) == then


@pytest.mark.parametrize("configured, then", [("drop", "stop"), ("keep_best", "keep_best"), ("keep_last", "keep_last"),
                                              ("stop", "stop")])
def test_a_spent_rewrite_budget_turns_a_drop_into_a_stop(configured, then):
    assert exhausted(configured, False, budget_spent=True) == then


def test_best_attempt_prefers_an_answer_then_fewest_unsupported_then_the_latest():
    assert best_attempt([2, 1, 3], [False, False, False]) == 1
    assert best_attempt([1, 1, 3], [False, False, False]) == 1  # a tie goes to the later attempt
    assert best_attempt([0, 2, 1], [True, False, False]) == 2  # the 0 is no answer (a loop, a heading)
    assert best_attempt([0, 2], [True, True]) == 0  # none answers: all are considered
