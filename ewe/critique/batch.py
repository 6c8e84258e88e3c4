"""`ewe critique --input texts.jsonl --output critiques.jsonl`: one critique line per text,
appended as each is done (RecordLog: one writer, a rerun resumes from the ids already there)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from ..checks import passage_problem
from ..record_log import RecordLog, refuse_same_file, refuse_unwritable
from ..runner import read_records
from .critic import Critic


def read_texts(path: Path) -> list[dict]:
    """Every line checked before any model runs: {"id"?, "text", "evidence"?: [passage, ...]}."""
    def problem(row: dict):
        if not isinstance(row.get("text"), str) or not row["text"].strip():
            return 'needs a non-empty string field "text"'
        ev = row.get("evidence")
        if ev is not None:
            if not isinstance(ev, list) or not ev:
                return '"evidence" must be a non-empty list of passages (or absent: retrieved)'
            for i, p in enumerate(ev):
                why = passage_problem(p)
                if why:
                    return f'"evidence" item {i + 1}{why[0]} {why[1]}'
        return None

    return read_records(path, problem, "texts")


def critique_file(critic_for, inp: Path, out: Path, retrieve: bool = False, limit: Optional[int] = None,
                  progress: bool = True) -> dict:
    """Critique every text of `inp` not yet in `out`. `critic_for(need_evidence)` builds the Critic
    only when a text is left to do (a resumed, finished run loads nothing); `retrieve`: search the
    datastore even where a text brings its evidence."""
    from tqdm import tqdm

    refuse_same_file(inp, out, out.with_name(out.name + ".lock"))
    rows = read_texts(inp)[:limit]
    refuse_unwritable(out)
    with RecordLog(out) as log:
        todo = [r for r in rows if r["id"] not in log.done]
        if len(todo) < len(rows):
            print(f"ewe: resuming: {len(rows) - len(todo)} of {len(rows)} texts already in {out}", file=sys.stderr)
        critic: Critic | None = None
        if todo:
            critic = critic_for(retrieve or any(r.get("evidence") is None for r in todo))
        rejected = 0
        for row in tqdm(todo, desc="critiques", unit="text", disable=not progress):
            c = critic.critique(row["text"], evidence=None if retrieve else row.get("evidence"))
            rejected += len(c.rejected)
            log.append({"id": row["id"], "evidence": "retrieved" if retrieve or row.get("evidence") is None else "given",
                        **c.to_dict()})
    return {"texts": len(rows), "critiqued": len(todo), "rejected_claims": rejected, "output": str(out)}
