"""`ewe eval critics run`: critics side by side on the Critics benchmark, in one run.

Each critic is a checker configuration run by ewe's Critic (ewe/critique/) over every text, once
with the text's source article given as its evidence and once with evidence retrieved from the
datastore: ITA (trees, the trained judge at each node), the flat judge (each claim judged once)
and the alignment heuristic; the judge with hard contradictions overruling it (`-veto`, flat and at
ITA's nodes), ITA splitting accepted claims too (`ita-details`) or only unsure ones (`ita-unsure`). Critiques are appended per critic (resumable), then scored
(critics.score) with their cost per text beside: seconds, claims judged, LLM calls, searches.
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Optional

from ..files import write_json
from ..record_log import RecordLog
from .critics import read_benchmark, score, write_table

CRITICS = {
    "ita": {"backend": "ita", "ita_base": "judge", "ita_span": "rules"},
    "ita-details": {"backend": "ita", "ita_base": "judge", "ita_span": "rules", "ita_span_accepted": True},
    # the band chosen on the judge-data texts (0.8 / 0.9 / 0.95 tried, retrieved; docs/RESULTS.md)
    "ita-unsure": {"backend": "ita", "ita_base": "judge", "ita_span": "rules", "ita_unsure_below": 0.9},
    "judge": {"backend": "judge"},
    "ita-veto": {"backend": "ita", "ita_base": "judge", "ita_span": "rules", "veto": "contradiction"},
    "judge-veto": {"backend": "judge", "veto": "contradiction"},
    "alignment": {"backend": "alignment"},
}
EVIDENCE = ("given", "retrieved")


def _critic(runtime, name: str, settings: dict):
    from ..critique import Critic
    from ..verify.datastore_evidence import DatastoreEvidence
    from ..checker_factory import build_fact_checker

    cfg = runtime.config.checker.model_copy(update=settings)
    evidence = DatastoreEvidence(None, opener=lambda: runtime.datastore)
    return Critic(build_fact_checker(cfg, evidence, runtime.as_llm(), device=runtime.config.model.device))


def cost(critiques: list[dict]) -> dict:
    """Median seconds and mean model calls per text."""
    costs = [c.get("cost", {}) for c in critiques]
    if not costs:
        return {}
    mean = lambda key: round(sum(c.get(key, 0) for c in costs) / len(costs), 2)  # noqa: E731
    return {"seconds_per_text": round(statistics.median(c.get("seconds", 0.0) for c in costs), 3),
            "judged_claims_per_text": mean("judged_claims"), "llm_calls_per_text": mean("llm_calls"),
            "searches_per_text": mean("searches")}


def run(bench: Path, out_dir: Path, config: str = "configs/ita.yaml", critics: tuple[str, ...] = tuple(CRITICS),
        evidence: tuple[str, ...] = EVIDENCE, limit: Optional[int] = None, progress: bool = True) -> dict:
    """Critique, score and table; returns {"critic-evidence": score + cost}."""
    from tqdm import tqdm

    from ..api import EWE

    unknown = [c for c in critics if c not in CRITICS] + [e for e in evidence if e not in EVIDENCE]
    if unknown:
        raise ValueError(f"unknown critic or evidence mode {unknown}: critics are {list(CRITICS)}, "
                         f"evidence modes {list(EVIDENCE)}")
    rows = read_benchmark(Path(bench))[:limit]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runtime = EWE.from_config(config, load_model=False).runtime
    results = {}
    for name in critics:
        critic = None
        for mode in evidence:
            label = f"{name}-{mode}"
            with RecordLog(out_dir / f"{label}.jsonl") as log:
                todo = [r for r in rows if r["id"] not in log.done]
                if todo and critic is None:
                    critic = _critic(runtime, name, CRITICS[name])
                for r in tqdm(todo, desc=label, unit="text", disable=not progress, file=sys.stderr):
                    given = [{"title": r.get("title", ""), "text": p} for p in r["evidence"]] if mode == "given" else None
                    c = critic.critique(r["text"], evidence=given)
                    log.append({"id": r["id"], "evidence": mode, **c.to_dict()})
                ids = {r["id"] for r in rows}
                critiques = [c for c in log.records() if c["id"] in ids]
            results[label] = {**score(rows, critiques), "cost": cost(critiques)}
    write_json(out_dir / "critics.json", results)
    write_table(results, out_dir)
    return results
