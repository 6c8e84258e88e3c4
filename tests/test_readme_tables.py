"""Every results table the README (or docs/RESULTS.md) prints is the output file of `ewe eval table` (docs/results/),
figure for figure, and that command builds its table from a run's summary and details."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ewe import cli
from ewe.eval.table import markdown, readme_block

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("page", ["README.md", "docs/RESULTS.md"])
def test_every_readme_table_is_its_results_file(page):
    readme = (ROOT / page).read_text(encoding="utf-8")
    names = re.findall(r"^<!-- table:([\w-]+) -->$", readme, re.MULTILINE)
    assert names or page != "README.md"
    for name in names:
        table = json.loads((ROOT / "docs" / "results" / f"{name}.json").read_text(encoding="utf-8"))
        assert markdown(table) == table["markdown"], f"docs/results/{name}.json: its table is not its figures"
        assert readme_block(readme, name) == table["markdown"], f"{page} table {name} differs from its results file"


def _details(path, f1_claims):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": f"p{i}", "n_claims": c, "n_supported": s, "dedup": "core"}) + "\n"
                            for i, (c, s) in enumerate(f1_claims)), encoding="utf-8")
    return str(path)


def test_the_table_command_compares_each_method_with_the_best_baseline(tmp_path, capsys):
    rows = {"ra": [(4, 2)] * 10, "ra-4": [(4, 1)] * 10, "ewe": [(4, 3)] * 5 + [(4, 2)] * 5}
    summaries = []
    for m, counts in rows.items():
        d = _details(tmp_path / "bio" / f"{m}.details.jsonl", counts)
        summaries.append({"method": m, "dataset": "bio", "n": 10, "K": 4, "f1": 0.5, "precision": 0.5,
                          "claims_per_response": 4.0, "raw_claims_per_response": 5.0,
                          "repeated_sentences_per_response": 0.5 if m != "ewe" else 0.0,
                          "other_subject_credits": 0, "seconds_per_prompt": 2.0, "details": d})
    summaries[0]["f1"] = 0.6  # ra is the best baseline
    (tmp_path / "summary.json").write_text(json.dumps({"summaries": summaries}), encoding="utf-8")
    out = tmp_path / "t.json"
    assert cli.main(["eval", "table", str(tmp_path / "summary.json"), "--out", str(out)]) == 0
    table = json.loads(out.read_text(encoding="utf-8"))
    block = table["datasets"]["bio"]
    assert block["best_baseline"] == "ra"
    ewe = next(r for r in block["rows"] if r["method"] == "ewe")
    assert ewe["vs"]["baseline"] == "ra" and ewe["vs"]["n"] == 10 and ewe["vs"]["difference"] > 0
    assert "| ewe | 50.0 (50.0) | +" in table["markdown"] and "| 4.0 (5.0) | 0.00 | 0 | 2.0 |" in table["markdown"]
    assert "| ra | 60.0 (50.0) | – |" in table["markdown"]
    assert table["markdown"] in capsys.readouterr().out


def _run_summary(tmp_path, generated: dict[str, list[str]], scored_at: str):
    summaries = []
    for m, commits in generated.items():
        d = _details(tmp_path / "bio" / f"{m}.details.jsonl", [(4, 2)] * 4)
        summaries.append({"method": m, "dataset": "bio", "n": 4, "K": 4, "f1": 0.5, "precision": 0.5,
                          "claims_per_response": 4.0, "repeated_sentences_per_response": 0.0,
                          "other_subject_credits": 0, "seconds_per_prompt": 1.0, "details": d, "generated_at": commits})
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"command": "ewe eval run --methods ra,ewe --out R", "scored_at": scored_at,
                                "summaries": summaries}), encoding="utf-8")
    return path


def test_a_table_names_the_command_and_the_one_commit_that_made_it(tmp_path):
    path = _run_summary(tmp_path, {"ra": ["abc123"], "ewe": ["abc123"]}, "abc123")
    out = tmp_path / "t.json"
    assert cli.main(["eval", "table", str(path), "--baseline", "ra", "--out", str(out)]) == 0
    table = json.loads(out.read_text(encoding="utf-8"))
    assert "Made by `ewe eval run --methods ra,ewe --out R` at commit `abc123`" in table["markdown"]
    assert markdown(table) == table["markdown"]


@pytest.mark.parametrize("generated,scored", [
    ({"ra": ["abc123"], "ewe": ["abc123", "def456"]}, "def456"),  # resumed after a new commit
    ({"ra": ["abc123"], "ewe": ["abc123"]}, "def456"),  # scored by other code
    ({"ra": ["abc123+dirty"], "ewe": ["abc123+dirty"]}, "abc123+dirty"),  # uncommitted changes
    ({"ra": ["unknown"], "ewe": ["abc123"]}, "abc123"),  # rows from before rows carried their commit
])
def test_a_table_from_several_versions_of_the_code_is_refused_unless_asked(tmp_path, generated, scored):
    path = _run_summary(tmp_path, generated, scored)
    out = tmp_path / "t.json"
    with pytest.raises(SystemExit, match="more than one version of the code"):
        cli.main(["eval", "table", str(path), "--baseline", "ra", "--out", str(out)])
    assert not out.exists()
    assert cli.main(["eval", "table", str(path), "--baseline", "ra", "--out", str(out), "--allow-mixed"]) == 0
    assert "from several versions of the code" in json.loads(out.read_text(encoding="utf-8"))["markdown"]


def test_rows_carry_the_commit_they_were_generated_at(tmp_path):
    from ewe.eval.harness import code_of, generated_at
    from ewe.version import code_version

    here = code_version()
    assert here["commit"] is None or len(here["commit"]) == 40
    rows = [{"id": "a", "prompt": "p", "text": "t", "code": {"commit": "f" * 40, "dirty": False}},
            {"id": "b", "prompt": "p", "text": "t", "code": {"commit": "e" * 40, "dirty": True}},
            {"id": "c", "prompt": "p", "text": "t"}]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert generated_at(tmp_path / "r.jsonl") == ["eeeeeeeeeeee+dirty", "ffffffffffff", "unknown"]
    assert code_of({"code": here}) != ""


def test_a_batched_method_shows_its_answers_time_and_the_runs_wall_time(tmp_path):
    """A method that decodes 8 prompts at once writes each answer in ~8x its share of the machine:
    where `ewe run` left its summary beside the results, the table shows both times."""
    path = _run_summary(tmp_path, {"ra": ["abc123"], "ewe": ["abc123"]}, "abc123")
    (tmp_path / "bio" / "ewe.jsonl.summary.json").write_text(json.dumps({"wall_s": 10.0, "this_run": 4}))
    (tmp_path / "bio" / "ra.jsonl.summary.json").write_text(json.dumps({"wall_s": 6.0, "this_run": 3}))
    out = tmp_path / "t.json"
    assert cli.main(["eval", "table", str(path), "--baseline", "ra", "--out", str(out)]) == 0
    table = json.loads(out.read_text(encoding="utf-8"))
    assert "| s/answer | wall s/prompt |" in table["markdown"]
    assert "| 1.0 | 2.5 |" in table["markdown"]  # ewe: total_s 1.0 per answer, 10 s over 4 prompts
    assert "| 1.0 | 2.0 (last 3) |" in table["markdown"]  # ra resumed: its last generation wrote 3 of 4
    assert markdown(table) == table["markdown"]
    (tmp_path / "bio" / "ewe.jsonl.summary.json").unlink()
    (tmp_path / "bio" / "ra.jsonl.summary.json").unlink()
    assert cli.main(["eval", "table", str(path), "--baseline", "ra", "--out", str(out)]) == 0
    assert "| s/prompt |" in json.loads(out.read_text(encoding="utf-8"))["markdown"]
