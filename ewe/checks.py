"""Batch fact-checking files for `ewe check --input`: cases in, one verdict line per case out.

A case is {"claim": str, "evidence"?: [passage, ...], "prompt"?: str, "context"?: str, "id"?};
without "evidence" the configured datastore is searched. Every bad line is reported (file:line)
before any checking starts.
"""
from __future__ import annotations

from pathlib import Path

from .runner import read_records


def read_cases(path: Path) -> list[dict]:
    def problem(row: dict):
        if not isinstance(row.get("claim"), str) or not row["claim"].strip():
            return 'needs a non-empty string field "claim"'
        ev = row.get("evidence")
        if ev is not None and (not isinstance(ev, list) or not ev or not all(isinstance(x, str) and x.strip() for x in ev)):
            return '"evidence" must be a non-empty list of non-empty strings (or absent: search)'
        for key in ("prompt", "context"):
            if row.get(key) is not None and not isinstance(row[key], str):
                return f'"{key}" must be a string'
        return None

    return read_records(path, problem, "cases")


def verdict_line(case: dict, check) -> dict:
    """The case with the sentence's verdict, its score (the least supported claim's) and its claims."""
    scores = [v.score for v in check.verdicts]
    return {
        **case,
        "verdict": check.verdict,
        "score": round(min(scores), 4) if scores else None,
        "claims": [{"text": v.claim.text, "label": v.label, "score": round(v.score, 4), "error": v.error,
                    "evidence": [e.title or e.text[:80] for e in v.evidence[:3]]} for v in check.verdicts],
    }
