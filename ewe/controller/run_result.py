"""A controlled answer as the caller gets it: its text, sentences (each with its check, the
passages behind it and the attempts it replaced), stats with the time breakdown, and trace.
"""
from __future__ import annotations

import time
from collections import Counter

from ..result import GenerationResult
from ..stats import ControlledStats
from . import unchecked


def run_result(run, loop, t_start: float, row: int = 0,
               since: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> GenerationResult:
    """The answer a ControlledRun wrote (row `row` of the loop) with its sentences, stats and
    trace; `since`: the loop's prefill, decode and rewind seconds when the row joined (its model times are the
    batch's from then on)."""
    if loop.reasons[row] != "eos":
        unchecked.cut_off_tail(run)
    t, finish = run.tracker, loop.reasons[row]
    total = time.perf_counter() - t_start
    sec = run.timings
    prefill_s, decode_s, rewind_s = (now - then for now, then in
                                     zip((loop.prefill_s, loop.decode_s, loop.rewind_s), since))
    measured = (prefill_s + decode_s + rewind_s + sec["retrieve"] + sec["encode"] + sec["check"]
                + sec["repeats"] + sec["rewrite"])
    run.trace.add("finish", reason=finish, new_tokens=len(t.tokens), decoded_tokens=run.decoded,
                  backtracks=run.backtracks)
    sentences, rewritten = [], Counter()
    cut_off = t.unfinished()
    for s in t.sentences + ([cut_off] if cut_off else []):
        check = run.checks.get((s.start, s.text))
        sentences.append({**s.describe(), "checked": check is not None,
                          "needs_rewrite": check["needs_rewrite"] if check else None,
                          "verdict": check["verdict"] if check else None,
                          "evidence": support(check),
                          "failed_attempts": len(run.attempts.get(s.start, [])),
                          "rejected": [a.text.strip() for a in run.attempts.get(s.start, [])]})
        if sentences[-1]["failed_attempts"] and check and not check["needs_rewrite"]:
            rewritten["supported" if check["verdict"] == "supported" else "claimless"] += 1
    tr = run.trace
    stats = ControlledStats(
        prompt_tokens=run.prompt_len,
        new_tokens=len(t.tokens),
        decoded_tokens=run.decoded,
        pauses_retrieval=tr.count("pause", kind="retrieval"),
        pauses_verification=tr.count("pause", kind="verification"),
        skipped_ticks={k: s.skipped for k, s in run.schedules.items()},
        checks=tr.count("check"),
        failed_checks=sum(1 for e in tr.events if e["type"] == "check" and e["needs_rewrite"]),
        errored_checks=sum(1 for e in tr.events if e["type"] == "check" and e.get("verdict") == "error"),
        backtracks=run.backtracks,
        rejected_sentences=len(run.attempts),
        repeats_rejected=run.repeats_rejected,
        rejected_by_rule=dict(run.rejected_by_rule),
        rewrite_budget_hit=run.budget_hit,
        end_refusals=run.end_refusals,
        rewritten_supported=rewritten["supported"],
        rewritten_claimless=rewritten["claimless"],
        candidates_decoded=run.candidates["decoded"],
        candidates_judged=run.candidates["judged"],
        candidate_tokens=run.candidates["tokens"],
        memory_units=len(run.memory),
        memory_bytes=run.memory.footprint()["bytes"],
        retrieve_s=round(sec["retrieve"], 4),
        encode_s=round(sec["encode"], 4),
        check_s=round(sec["check"], 4),
        rewrite_s=round(sec["rewrite"], 4),
        total_s=round(total, 4),
        prefill_s=round(prefill_s, 4),
        decode_s=round(decode_s, 4),
        backtrack_s=round(rewind_s, 4),
        repeats_s=round(sec["repeats"], 4),
        check_candidates_s=round(sec["check_candidates"], 4),
        check_extract_s=round(sec["check_extract"], 4),
        check_search_s=round(sec["check_search"], 4),
        check_judge_s=round(sec["check_judge"], 4),
        other_s=round(total - measured, 4),
    )
    return GenerationResult(
        prompt=run.prompt,
        text=t.text,
        token_ids=list(t.tokens),
        logprobs=list(t.logprobs),
        finish_reason=finish,
        memory=run.memory.describe(),
        retrieved=run.retrieved,
        stats=stats,
        trace=tr.to_list(),
        sentences=sentences,
        subject=run.subject_report(),
    )


def support(check: dict | None) -> list[dict]:
    """The passages (title, source, offsets, score) behind the supported claims of a check."""
    if not check:
        return []
    seen, out = set(), []
    for v in check["verdicts"]:
        if v["label"] == "supported":
            for e in v["evidence"][:1]:  # the best passage per claim: the one the judge read first
                cite = {k: e[k] for k in ("title", "source_id", "start", "end", "score") if k in e}
                key = (cite.get("source_id"), cite.get("start"))
                if key not in seen:
                    seen.add(key)
                    out.append({**cite, "claim": v["claim"]})
    return out
