"""The sentences no fact-check decides, and what happens to them: a sentence that repeats the
answer where nothing is checked, the last sentence the token budget cut off, and a sentence that
goes round in a loop before it ends. Each is dropped or ends the answer; functions of a
ControlledRun (its tracker, trace, backtracks and first-token bans).
"""
from __future__ import annotations

from ..engine import Rewind
from ..verify.degenerate import HEADING, LOOP, after_copied_head, repeated_clause

# an unfinished sentence is read for a loop from its 24th token on, every 8 tokens (T_v's rhythm)
LOOP_CHECK_FROM, LOOP_CHECK_EVERY = 24, 8


def unverified_repeat(run) -> Rewind | None:
    """Where nothing is fact-checked, a sentence that adds nothing to the answer still pads it:
    the answer ends before it (traced "repeats"; greedy decoding would only go on repeating)."""
    pending, run.unverified = run.unverified, []
    t = run.tracker
    for s in pending:
        if t.decode(s.start, s.end).strip() != s.text:
            continue  # rewound away since
        found, claims = run.repeat_guard.text_repeats(s.start, s.text)
        if found:
            run.trace.add("repeats", sentence=s.text, repeats=found)
            run.repeats_rejected += 1
            rewind = run.backtrack(s.start, "repeats: the answer ends before it", 1, [])
            rewind.end = True
            return rewind
        run.repeat_guard.unverified_claims[(s.start, s.text)] = claims
    return None


def cut_off_tail(run) -> None:
    """A last sentence the token budget cut off is never fact-checked (it is unfinished), but one
    whose claims the answer already holds only pads it, and one that is no answer (a loop:
    "Russian poet, poet, poet, ...") is none: the answer ends before it. (A passage's head copied
    before the passage's text is no reason: that text would go with it.)"""
    tail = run.tracker.unfinished()
    if tail is None:
        return
    why = run.why_no_answer(tail.text)
    if why == HEADING and after_copied_head(tail.text):
        why = None  # a head copied before the passage's text: unfinished and unchecked, it stays as written
    if why:
        run.trace.add("no_answer_dropped", sentence=tail.text, reason=why, cut_off=True)
        run.tracker.truncate(tail.start)
        run.rejected_by_rule[why] += 1
        return
    if not run.reject_repeats:
        return
    found, _ = run.repeat_guard.text_repeats(tail.start, tail.text, cut_off=True)
    if found:
        run.trace.add("repeats_dropped", dropped=[{"sentence": tail.text, "repeats": found, "cut_off": True}])
        run.tracker.truncate(tail.start)
        run.repeats_rejected += 1


def looping_tail(run) -> Rewind | None:
    """A sentence still being written that already goes round in a loop ("Kofi Annan, Ghanaian
    diplomat and statesman, Kofi Annan, Ghanaian diplomat and statesman, ...") would run to the
    token budget and, cut off, be dropped with everything it cost: the whole answer empty, 2 of
    100 bio answers. It is dropped as soon as the loop shows (checker.reject_degenerate), as a
    sentence whose retries ran out: its first token banned there, the answer goes on."""
    t = run.tracker
    start = t.tail_start
    written = len(t.tokens) - start
    if (written < LOOP_CHECK_FROM or written % LOOP_CHECK_EVERY or run.backtracks >= run.cfg.max_backtracks
            or not run.runtime.config.checker.reject_degenerate):
        return None
    tail = t.decode(start).strip()
    if repeated_clause(tail) is None:
        return None
    run.trace.add("no_answer_dropped", sentence=tail, reason=LOOP, cut_off=False)
    run.rejected_by_rule[LOOP] += 1
    run.banned.ban(start, [t.tokens[start]])
    return run.backtrack(start, "a loop inside the sentence: dropped", 1, [])
