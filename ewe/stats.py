"""What each method reports about one answer (`GenerationResult.stats`), typed in one place.

Each class is a dataclass that also reads as a mapping (`stats["new_tokens"]`,
`stats.get("backtracks", 0)`, `dict(stats)`), so results written before, and code that reads
them as dicts, stay valid; in JSON each is one flat object with these keys, in this order.
Seconds are wall-clock, rounded to 0.1 ms. Tokens: `new_tokens` are the answer's,
`decoded_tokens` every token the generator decoded for it, discarded ones included.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields


class Timings:
    """One answer's wall seconds by part, added to by the parts that spend them (memory refresh,
    checks, the repeat guard, a method's stages) and read once by the result that reports them.
    The parts are named up front, so a misspelt part is an error rather than a new, unreported one."""

    def __init__(self, parts: Iterable[str]):
        self._seconds = dict.fromkeys(parts, 0.0)

    def add(self, part: str, seconds: float) -> None:
        if part not in self._seconds:
            raise KeyError(f"no time part {part!r} (parts: {', '.join(self._seconds)})")
        self._seconds[part] += seconds

    @contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """Add the seconds the block takes to `part` (when it completes)."""
        t0 = time.perf_counter()
        yield
        self.add(part, time.perf_counter() - t0)

    def __getitem__(self, part: str) -> float:
        return self._seconds[part]

    def as_fields(self, digits: int = 4) -> dict[str, float]:
        """{part + "_s": seconds}, rounded as stats are."""
        return {f"{k}_s": round(v, digits) for k, v in self._seconds.items()}


class _Stats(Mapping):
    """The mapping view of a stats dataclass: its fields, in order."""

    def __getitem__(self, key: str):
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self)!r})"


@dataclass(eq=False, repr=False)
class PlainStats(_Stats):
    """Decoding without pauses: bare, RA, EWE's memory without its controller."""

    prompt_tokens: int
    new_tokens: int
    memory_units: int
    memory_bytes: int
    retrieve_encode_s: float
    prefill_s: float
    decode_s: float
    total_s: float


@dataclass(eq=False, repr=False)
class PrefixNLIStats(PlainStats):
    """PrefixNLI-guided decoding: plain decoding's counts plus the prefix judge's work."""

    judged_steps: int  # steps at which the judge scored the candidates
    interventions: int  # judged steps where a penalty moved the top candidate
    judge_forwards: int  # the judge's forward passes (its premise's included)
    judge_tokens: int  # tokens the judge read (premise, answer and candidates)
    judge_s: float  # of decode_s


@dataclass(eq=False, repr=False)
class ControlledStats(_Stats):
    """EWE with its controller: pauses, checks, backtracks (and FLARE, a special case)."""

    prompt_tokens: int
    new_tokens: int
    decoded_tokens: int
    pauses_retrieval: int
    pauses_verification: int
    skipped_ticks: dict  # pause kind -> interval ticks that found no new complete sentence
    checks: int
    failed_checks: int
    errored_checks: int  # checks whose backend or evidence search raised
    backtracks: int
    rejected_sentences: int  # answer positions whose sentence failed a check (dropped ones included)
    repeats_rejected: int  # checks failed because the sentence added no claim beyond the answer so far
    rejected_by_rule: dict  # reason (loop, meta, heading, garbled, off_subject) -> checks failed because the sentence is no answer
    rewritten_supported: int  # of those, the ones whose final sentence's claims were all supported
    rewritten_claimless: int  # of those, the ones whose final sentence passed only by holding no checkable claim
    candidates_decoded: int  # candidate rewrites decoded (rewrite_candidates > 1 or feedback in the prompt)
    candidates_judged: int  # of those, the ones judged (repeats of an earlier attempt are not)
    candidate_tokens: int  # tokens decoded for candidates, all rows
    rewrite_budget_hit: bool  # candidate rewrites spent controller.rewrite_budget: later failures got none
    end_refusals: int  # ends of text refused while the pinned article had unstated sentences (controller.refuse_end)
    memory_units: int
    memory_bytes: int
    retrieve_s: float
    encode_s: float
    check_s: float
    rewrite_s: float  # decoding candidate rewrites
    total_s: float
    prefill_s: float
    decode_s: float  # sampling and the forward pass of each sampled token (the main answer's)
    backtrack_s: float  # cropping the cache and re-feeding restored tokens after a Rewind
    repeats_s: float  # whether a sentence adds a claim beyond the answer so far
    check_candidates_s: float  # of check_s: the candidate rewrites' checks
    check_extract_s: float  # of check_s: claim extraction
    check_search_s: float  # of check_s: evidence search
    check_judge_s: float  # of check_s: subject binding and the judge
    other_s: float  # the rest of total_s: the controller's own bookkeeping (sentences, schedules, trace)


@dataclass(eq=False, repr=False)
class VerifyRefineStats(_Stats):
    """Streaming-VR and Full-VR. `refine_tokens` is the paper's T_Ref."""

    method: str
    mode: str  # streaming-vr: live | offline; full-vr: full
    prompt_tokens: int
    new_tokens: int
    decoded_tokens: int
    refine_tokens: int
    checks: int
    failed_checks: int
    refined: int
    retrieve_s: float
    generate_s: float
    check_s: float
    refine_s: float
    total_s: float


@dataclass(eq=False, repr=False)
class CoVeStats(_Stats):
    """CoVe factor+revise: baseline, plan, answers, checks, revision."""

    method: str
    prompt_tokens: int
    new_tokens: int
    decoded_tokens: int
    stage_tokens: dict  # stage -> tokens decoded in it
    questions: int
    questions_fallback: bool  # the plan had no list: questions were taken from its sentences
    inconsistent: int
    unclear: int
    revised: bool
    retrieve_s: float
    baseline_s: float
    plan_s: float
    answer_s: float
    check_s: float
    revise_s: float
    total_s: float


@dataclass(eq=False, repr=False)
class A2RStats(_Stats):
    """A2R: the drafts' scores, why it stopped, and the returned answer's scores."""

    method: str
    prompt_tokens: int
    new_tokens: int
    decoded_tokens: int
    stage_tokens: dict
    iterations: int
    stop: str  # scores | max_iterations | echo (a refinement wrote score lines, not an answer)
    scores: list  # per draft: {correctness, citation_recall, citation_precision}
    final_scores: dict | None
    documents: int
    retrieve_s: float
    answer_s: float
    assess_s: float
    feedback_s: float
    total_s: float


# The parts of an answer's wall time, as (label, seconds) from its stats: they add up to total_s
# (ControlledStats measures "other", the controller's bookkeeping; PlainStats has none). Checks
# are split into those at pauses and the candidates' (with the decoding of candidates: a round).
_PARTS = {
    "controlled": (("prefill", ("prefill_s",)), ("decode", ("decode_s",)), ("backtracks", ("backtrack_s",)),
                   ("memory encoding", ("encode_s",)), ("retrieval", ("retrieve_s",)),
                   ("checks", ("check_s", "-check_candidates_s")), ("repeats", ("repeats_s",)),
                   ("candidate rounds", ("rewrite_s", "check_candidates_s")), ("other", ("other_s",))),
    "plain": (("retrieval + encoding", ("retrieve_encode_s",)), ("prefill", ("prefill_s",)),
              ("decode", ("decode_s",))),
}
CHECK_PARTS = (("claim extraction", "check_extract_s"), ("evidence search", "check_search_s"),
               ("judge", "check_judge_s"))


def time_parts(stats: Mapping) -> dict[str, float] | None:
    """An answer's wall time by part, in seconds ({label: seconds}); None for stats that do not
    break it down (methods other than plain decoding and the controller, older results)."""
    kind = "controlled" if "backtrack_s" in stats else "plain" if "retrieve_encode_s" in stats else None
    if kind is None:
        return None
    out = {}
    for label, keys in _PARTS[kind]:
        out[label] = sum(-(stats.get(k[1:]) or 0.0) if k.startswith("-") else (stats.get(k) or 0.0) for k in keys)
    return out


def decode_step_s(stats: Mapping) -> float | None:
    """Seconds per decoded token of the answer itself: the unit of "decode-step equivalents"."""
    tokens = stats.get("decoded_tokens", stats.get("new_tokens")) or 0
    return stats["decode_s"] / tokens if tokens and stats.get("decode_s") else None


def in_decode_steps(parts: dict[str, float], step_s: float | None) -> dict[str, float | None]:
    """Each part's seconds as the number of decode steps it would buy."""
    return {k: (v / step_s if step_s else None) for k, v in parts.items()}
