"""The README's results table, made from an `ewe eval run` folder by one command, so that no
figure in the README is copied by hand.

`ewe eval table RUN/summary.json --baseline ra,ra-4 --out docs/results/NAME.json` reads each
method's unique-claim scores from the run's summary, the paired difference of its F1@K to the
best baseline of each dataset (`compare.paired_difference`: mean and 95% bootstrap interval,
over the run's details files), and writes them as JSON together with the Markdown table. The
README carries that table between `<!-- table:NAME -->` and `<!-- /table:NAME -->`;
tests/test_readme_tables.py holds the two equal. Where the run measured coverage (the mean
share of the subject's article the answers state, ewe.verify.coverage), a coverage column
follows F1; tables of runs without it are unchanged.

s/prompt is each answer's own time, start to end (its stats' total_s). A method that decodes
several prompts at once as the rows of one batch (controller.batch_rows) takes longer per answer
than its share of the machine, so where the run's results files have their summary beside them
(`<method>.jsonl.summary.json`, written by `ewe run` and `ewe eval run`) the table shows both:
"s/answer" (total_s) and "wall s/prompt" (the generation's wall time over the prompts it wrote).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..files import atomic_write
from .compare import paired_difference

COLUMNS = ("F1@K (P)", "vs best baseline, F1 (95% interval)", "claims/answer: unique (raw)",
           "repeated sentences/answer", "claims credited from another subject", "s/prompt")
# the scorer's own defect counts (eval/defects.py), shown where a table's rows carry them
DEFECT_COLUMNS = ("off-subject claims/answer", "loop sentences", "meta sentences")
DEFECT_KEYS = ("off_subject_claims_per_response", "loop_sentences", "meta_sentences")
COVERAGE_COLUMN = "coverage of the article (answers)"
TIME_COLUMNS = ("s/answer", "wall s/prompt")  # in place of s/prompt where the run's wall time is known


class MixedCodeError(ValueError):
    """A run whose rows were generated or scored at more than one commit, or with uncommitted code."""


def build(summary_path: Path, baselines: list[str], allow_mixed: bool = False) -> dict:
    """Rows per dataset: every method's figures, and its paired F1 difference to the dataset's
    best baseline (the baseline with the highest F1@K on that dataset)."""
    summary = json.loads(Path(summary_path).read_text(encoding="utf-8"))
    made_by = provenance(summary, summary_path, allow_mixed)
    rows_by_ds: dict[str, list[dict]] = {}
    for s in summary["summaries"]:
        rows_by_ds.setdefault(s["dataset"], []).append(s)
    out = {"source": str(summary_path), "baselines": baselines, "datasets": {}}
    if made_by is not None:
        out["made_by"] = made_by
    for ds, rows in rows_by_ds.items():
        base = [r for r in rows if r["method"] in baselines]
        if not base:
            raise ValueError(f"{summary_path}: dataset {ds} has none of the baselines {baselines}")
        best = max(base, key=lambda r: r["f1"])
        table = []
        for r in rows:
            row = {k: r.get(k) for k in ("method", "n", "K", "f1", "precision", "claims_per_response",
                                         "raw_claims_per_response", "repeated_sentences_per_response",
                                         "other_subject_credits", "seconds_per_prompt")}
            row.update({k: r[k] for k in DEFECT_KEYS if k in r})
            if r.get("coverage") is not None:
                row.update(coverage=r["coverage"], coverage_n=r.get("coverage_n"))
            row.update(wall_time(summary_path, r))
            if r["method"] != best["method"]:
                d = paired_difference(_details(summary_path, r), _details(summary_path, best), K=r["K"])
                row["vs"] = {"baseline": best["method"], "difference": d["difference"], "low": d["low"],
                             "high": d["high"], "n": d["n"]}
            table.append(row)
        out["datasets"][ds] = {"best_baseline": best["method"], "rows": table}
    return out


def provenance(summary: dict, summary_path, allow_mixed: bool = False) -> dict | None:
    """The command and the commits that made a run's figures (harness.run_eval records them), or
    None for a run made before they were recorded. One commit, clean, for generation and scoring,
    or a MixedCodeError: a table stitched from several versions of the code is refused unless
    `allow_mixed`, and then says so in its caption."""
    if "scored_at" not in summary:
        return None
    generated = sorted({c for s in summary["summaries"] for c in s.get("generated_at", ["unknown"])})
    commits = sorted(set(generated) | {summary["scored_at"]})
    mixed = len(commits) > 1 or any(c == "unknown" or c.endswith("+dirty") for c in commits)
    if mixed and not allow_mixed:
        raise MixedCodeError(
            f"{summary_path}: its figures come from more than one version of the code (generated at "
            f"{', '.join(generated)}; scored at {summary['scored_at']}); rerun it at one commit with no uncommitted "
            "changes into a new --out, or pass --allow-mixed to make the table anyway (its caption says so)")
    return {"command": summary.get("command"), "generated_at": generated, "scored_at": summary["scored_at"],
            "mixed": mixed}


def wall_time(summary_path: Path, row: dict) -> dict:
    """{"wall_seconds_per_prompt", "wall_prompts"} from the summary `ewe run` wrote beside the
    method's results file (the last generation of it: wall seconds over the prompts it wrote);
    {} when there is none."""
    results = _details(summary_path, row).with_name(f"{row['method']}.jsonl")
    side = results.with_name(results.name + ".summary.json")
    if not side.is_file():
        return {}
    run = json.loads(side.read_text(encoding="utf-8"))
    if not run.get("this_run") or run.get("wall_s") is None:
        return {}
    return {"wall_seconds_per_prompt": run["wall_s"] / run["this_run"], "wall_prompts": run["this_run"]}


def _wall(row: dict) -> str:
    wall = row.get("wall_seconds_per_prompt")
    if wall is None:
        return "–"
    part = row.get("wall_prompts")
    return f"{wall:.1f}" + (f" (last {part})" if part is not None and part != row["n"] else "")


def caption(made_by: dict) -> str:
    command = f"`{made_by['command']}`" if made_by.get("command") else "`ewe eval run`"
    if not made_by["mixed"]:
        return f"Made by {command} at commit `{made_by['scored_at']}`; the table by `ewe eval table` of its summary."
    return (f"Made by {command}, **from several versions of the code**: generated at "
            f"{', '.join(f'`{c}`' for c in made_by['generated_at'])}, scored at `{made_by['scored_at']}`.")


def _details(summary_path: Path, row: dict) -> Path:
    """A summary row's details file (relative paths resolved from the run's folder if needed)."""
    path = Path(row["details"])
    if path.is_file():
        return path
    folder = Path(summary_path).parent  # ewe eval run: OUT/<dataset>/; ewe eval score: OUT/
    for candidate in (folder / row["dataset"] / f"{row['method']}.details.jsonl", folder / f"{row['method']}.details.jsonl"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{row['method']} / {row['dataset']}: details file not found ({path})")


def markdown(table: dict) -> str:
    """The README's table: one block per dataset, percentages to one decimal."""
    lines = []
    for ds, block in table["datasets"].items():
        rows = block["rows"]
        defects = any("loop_sentences" in r for r in rows)
        coverage = any(r.get("coverage") is not None for r in rows)
        walls = any(r.get("wall_seconds_per_prompt") is not None for r in rows)
        columns = (COLUMNS[:1] + ((COVERAGE_COLUMN,) if coverage else ()) + COLUMNS[1:-1]
                   + (DEFECT_COLUMNS if defects else ()) + (TIME_COLUMNS if walls else COLUMNS[-1:]))
        lines += [f"**{ds}** (n = {rows[0]['n']}, K = {rows[0]['K']}; best baseline: {block['best_baseline']})", "",
                  "| method | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
        for r in rows:
            vs = r.get("vs")
            diff = (f"{100 * vs['difference']:+.1f} ({100 * vs['low']:+.1f} to {100 * vs['high']:+.1f})"
                    if vs else "–")
            raw = r.get("raw_claims_per_response")
            lines.append(" | ".join([
                f"| {r['method']}", f"{100 * r['f1']:.1f} ({100 * r['precision']:.1f})",
                *([_coverage(r)] if coverage else []), diff,
                f"{r['claims_per_response']:.1f} ({raw:.1f})" if raw is not None else f"{r['claims_per_response']:.1f}",
                f"{r['repeated_sentences_per_response']:.2f}" if r.get("repeated_sentences_per_response") is not None
                else "–",
                str(r["other_subject_credits"]) if r.get("other_subject_credits") is not None else "–",
                *(_defects(r) if defects else []),
                f"{r['seconds_per_prompt']:.1f}", *([_wall(r)] if walls else [])]) + " |")
        lines.append("")
    if table.get("made_by"):
        lines += [caption(table["made_by"]), ""]
    return "\n".join(lines).rstrip() + "\n"


def _coverage(row: dict) -> str:
    cov = row.get("coverage")
    return "–" if cov is None else f"{100 * cov:.1f} ({row.get('coverage_n', '–')})"


def _defects(row: dict) -> list[str]:
    off = row.get("off_subject_claims_per_response")
    return ["–" if off is None else f"{off:.2f}", str(row.get("loop_sentences", "–")),
            str(row.get("meta_sentences", "–"))]


def write(summary_path: Path, baselines: list[str], out: Path, allow_mixed: bool = False) -> dict:
    table = build(summary_path, baselines, allow_mixed)
    table["markdown"] = markdown(table)
    atomic_write(out, json.dumps(table, indent=1) + "\n")
    return table


def readme_block(readme: str, name: str) -> str | None:
    """The text between `<!-- table:NAME -->` and `<!-- /table:NAME -->` in the README, or None."""
    start, end = f"<!-- table:{name} -->\n", f"<!-- /table:{name} -->"
    if start not in readme or end not in readme:
        return None
    return readme.split(start, 1)[1].split(end, 1)[0]
