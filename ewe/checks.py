"""Batch fact-checking files for `ewe check --input`: cases in, one verdict line per case out.

A case is {"claim": str, "evidence"?: [passage, ...], "prompt"?: str, "context"?: str, "id"?},
a passage being its text or {"title", "text"} (a title says whom it is about; without one, ewe
reads it from the passage's opening); without "evidence" the configured datastore is searched. Every bad line is reported (file:line)
before any checking starts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from .runner import read_records


def passage_problem(p) -> Optional[tuple[str, str]]:
    """What is wrong with one given passage (a non-empty string or {"title", "text"}), or None:
    (the part that is wrong, "" or ".title" or ".text"; what is wrong). The one check for every
    way a passage is given: `EWE.check` / `EWE.generate` (api.py), `ewe check --input`,
    `ewe critique --input`."""
    if isinstance(p, dict):
        unknown = set(p) - {"title", "text"}
        if unknown:
            return "", f"has unknown field(s) {', '.join(sorted(unknown))}; a passage is a string or {{\"title\", \"text\"}}"
        title, text, part = p.get("title", ""), p.get("text"), ".text"
        if not isinstance(title, str):
            return ".title", f"must be a string, got {type(title).__name__}"
    elif isinstance(p, str):
        text, part = p, ""
    else:
        return "", f'must be a non-empty string or {{"title", "text"}}, got {type(p).__name__}'
    if not isinstance(text, str) or not text.strip():
        return part, "must be a non-empty string, got " + ("an empty one" if isinstance(text, str) else type(text).__name__)
    return None


def read_cases(path: Path) -> list[dict]:
    def problem(row: dict):
        if not isinstance(row.get("claim"), str) or not row["claim"].strip():
            return 'needs a non-empty string field "claim"'
        ev = row.get("evidence")
        if ev is not None:
            if not isinstance(ev, list) or not ev:
                return '"evidence" must be a non-empty list of passages (or absent: search)'
            for i, p in enumerate(ev):
                if (why := passage_problem(p)) is not None:
                    return f'"evidence" passage {i}{why[0]} {why[1]}'
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
