"""What EWE's rewrites became, by the independent scorer, and where EWE's time went.

    python benchmarks/rewrite_outcomes.py OUT/bio/ewe-rewrite.details.jsonl [more details files]

For each `ewe eval run` / `ewe eval score` details file (its results file, the same name
without ".details", beside it): the sentences EWE's controller rejected (stats
rejected_sentences), how many ended as a rewrite its own judge supports, and of those how many
the scoring checker supports claim by claim; then the share of EWE's seconds in each stage
(its stats). The rewrite and time figures of docs/RESULTS.md ("Placement, candidate rewrites and what follows a failed sentence") come from this script.
"""
import json
import sys
from pathlib import Path

STAGES = ("prefill_s", "decode_s", "retrieve_s", "encode_s", "check_s", "rewrite_s")


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def outcomes(details: Path) -> str:
    results = Path(str(details).replace(".details.jsonl", ".jsonl"))
    runs = {str(r["id"]): r for r in map(json.loads, results.read_text(encoding="utf-8").splitlines())}
    rejected = by_judge = by_scorer = 0
    seconds = dict.fromkeys(STAGES + ("total_s",), 0.0)
    for line in details.read_text(encoding="utf-8").splitlines():
        scored = json.loads(line)
        run = runs[str(scored["id"])]
        rejected += run["stats"].get("rejected_sentences") or 0
        for key in seconds:
            seconds[key] += run["stats"].get(key) or 0.0
        verdicts = {norm(s["text"]): s for s in scored["sentences"]}
        for s in run.get("sentences") or []:
            if s.get("rejected") and s.get("verdict") == "supported" and not s.get("needs_rewrite"):
                by_judge += 1
                claims = (verdicts.get(norm(s["text"])) or {}).get("claims") or []
                by_scorer += bool(claims) and all(c["label"] == "supported" for c in claims)
    share = ", ".join(f"{k[:-2]} {100 * seconds[k] / max(seconds['total_s'], 1e-9):.0f}%" for k in STAGES)
    return (f"{details}: {rejected} sentences rejected; a rewrite the run's judge supports for {by_judge} "
            f"({100 * by_judge / max(rejected, 1):.0f}%), every claim supported by the scorer for {by_scorer} "
            f"({100 * by_scorer / max(rejected, 1):.0f}%)\n  time: {share}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        print(outcomes(Path(path)))
