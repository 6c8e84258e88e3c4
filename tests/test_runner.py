"""`ewe run` (resume, configuration guard, errors, summary) and `ewe check`, on the scripted model."""
from __future__ import annotations

import json

import pytest
import yaml
from scripted import ScriptedChecker, scripted_model, text_script
from test_controller import A, B_RIGHT, B_WRONG, C, corrected_by_feedback
from tiny import tiny_tokenizer

from ewe import EWE, cli
from ewe.config import EWEConfig
from ewe.record_log import finished_ids
from ewe.runner import RunError, read_prompts, run

CONFIG = {
    "memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
    "retrieval": {"source": None},
    "decoding": {"max_new_tokens": 120},
    "controller": {"verify_trigger": "interval", "verify_interval": 4},
}


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A config file, a prompts file, and `ewe` CLI commands that load the scripted model."""
    config = tmp_path / "method.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    prompts = tmp_path / "prompts.jsonl"
    rows = [{"id": f"p{i}", "prompt": f"Tell me a bio of person {i}.", "topic": f"person {i}"} for i in range(3)]
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    state = {"checker": ScriptedChecker(false={B_WRONG}), "interrupt_at": None, "calls": []}
    model = scripted_model(text_script(corrected_by_feedback()))

    def load(args):
        cfg = EWEConfig.from_yaml(args.config, **cli.config_overrides(args))
        ewe = EWE(model, tiny_tokenizer(), cfg, fact_checker=state["checker"])
        real = ewe.generate

        def generate(prompt, **kw):
            state["calls"].append(prompt)
            if prompt == state["interrupt_at"]:
                raise KeyboardInterrupt
            return real(prompt, **kw)

        ewe.generate = generate
        return ewe

    monkeypatch.setattr(cli, "_load_ewe", load)
    return config, prompts, tmp_path / "out" / "results.jsonl", state


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_writes_answers_traces_and_a_summary(setup, capsys):
    config, prompts, out, state = setup
    assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out)]) == 0
    rows = lines(out)
    assert [r["id"] for r in rows] == ["p0", "p1", "p2"] and rows[0]["topic"] == "person 0"
    assert all(r["text"] == f"{A} {B_RIGHT} {C}" for r in rows)
    assert all(any(e["type"] == "backtrack" for e in r["trace"]) for r in rows)
    from ewe.version import code_version
    assert all(r["code"] == code_version() for r in rows)  # the commit each answer was written at
    summary = json.loads(out.with_name("results.jsonl.summary.json").read_text())
    assert summary["prompts"] == 3 and summary["backtracks"] == 3 and summary["failed_checks"] == 3
    assert "backtracks 3" in capsys.readouterr().out


def test_interrupted_run_keeps_finished_prompts_and_resumes(setup, capsys):
    config, prompts, out, state = setup
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(out)]
    state["interrupt_at"] = "Tell me a bio of person 1."
    assert cli.main(argv) == 130
    assert [r["id"] for r in lines(out)] == ["p0"]
    state["interrupt_at"], state["calls"] = None, []
    assert cli.main(argv) == 0
    assert state["calls"] == ["Tell me a bio of person 1.", "Tell me a bio of person 2."]
    assert [r["id"] for r in lines(out)] == ["p0", "p1", "p2"]
    assert "resuming: 1 of 3" in capsys.readouterr().err
    state["calls"] = []
    assert cli.main(argv) == 0 and state["calls"] == []  # all done: nothing generated again


def test_a_torn_last_line_is_cut_before_resuming(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text('{"id": "a", "text": "x"}\n{"id": "b", "te')
    assert finished_ids(out) == {"a"}
    assert out.read_text() == '{"id": "a", "text": "x"}\n'


def test_resuming_with_another_configuration_is_refused(setup, capsys):
    config, prompts, out, state = setup
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(out), "--limit", "1"]
    assert cli.main(argv) == 0
    with pytest.raises(SystemExit, match="another configuration.*controller.verify_interval"):
        cli.main(argv + ["--verify-interval", "2"])
    first = out.with_name(out.name + ".config.json").read_text()
    assert cli.main(argv + ["--verify-interval", "2", "--force", "--limit", "2"]) == 0
    assert [r["id"] for r in lines(out)] == ["p0", "p1"]
    # --force keeps the configuration the first lines were made with, and records the forced one
    assert out.with_name(out.name + ".config.json").read_text() == first
    [forced] = lines(out.with_name(out.name + ".config.history.jsonl"))
    assert forced["differs_in"] == ["controller.verify_interval"] and forced["config"]["controller"]["verify_interval"] == 2


def test_a_run_saved_before_a_setting_existed_resumes_with_its_default(setup, capsys):
    config, prompts, out, state = setup
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(out), "--limit", "1"]
    assert cli.main(argv) == 0
    saved = out.with_name(out.name + ".config.json")
    old = json.loads(saved.read_text())
    del old["checker"]["backend"]  # as an older ewe wrote it: no such key
    old["cove"] = {"top_k": 5}  # and, before each method had its own section, every method's section
    old["vr"], old["a2r"] = {}, {"max_iterations": 3}
    saved.write_text(json.dumps(old))
    assert cli.main(argv[:-1] + ["2"]) == 0
    assert [r["id"] for r in lines(out)] == ["p0", "p1"]
    old["controller"]["verify_interval"] += 1  # the method's own section still counts
    saved.write_text(json.dumps(old))
    with pytest.raises(SystemExit, match="another configuration.*controller.verify_interval"):
        cli.main(argv[:-1] + ["3"])


def test_set_overrides_any_key_and_bad_values_are_named(setup, capsys):
    config, prompts, out, state = setup
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(out), "--limit", "1"]
    assert cli.main(argv + ["--set", "controller.max_retries=0"]) == 0
    row = lines(out)[0]  # no retries allowed: the first attempt stays
    assert row["text"].startswith(f"{A} {B_WRONG}") and row["stats"]["backtracks"] == 0
    assert cli.main(argv + ["--set", "controller.max_retries=-1", "--force"]) == 2
    assert "controller.max_retries" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="SECTION.KEY=VALUE"):
        cli.main(argv + ["--set", "max_retries"])


def test_a_prompt_that_cannot_run_is_logged_and_the_rest_go_on(setup, capsys):
    config, prompts, out, state = setup
    long = "word " * 600
    prompts.write_text(json.dumps({"id": "long", "prompt": long}) + "\n" + prompts.read_text())
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(out)]
    assert cli.main(argv) == 1  # a failed prompt is a failed run (issue 17)
    assert [r["id"] for r in lines(out)] == ["p0", "p1", "p2"]
    [err] = lines(out.with_name("results.jsonl.errors.jsonl"))
    assert err["id"] == "long" and "context" in err["error"]
    assert "could not run" in capsys.readouterr().err
    assert cli.main(argv) == 1  # the rerun tries it again and lists it once, not twice
    [err] = lines(out.with_name("results.jsonl.errors.jsonl"))
    assert err["id"] == "long"


def test_bad_prompt_files_are_reported_line_by_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\nnot json\n{"prompt": ""}\n{"id": 1, "prompt": "dup"}\n')
    with pytest.raises(RunError) as e:
        read_prompts(bad)
    msg = str(e.value)
    assert "bad.jsonl:2: not JSON" in msg and "bad.jsonl:3" in msg and "duplicate id '1'" in msg


def test_run_needs_a_config(setup):
    _, prompts, out, _ = setup
    with pytest.raises(SystemExit, match="--config is required"):
        cli.main(["run", "--input", str(prompts), "--output", str(out)])


def test_library_run_returns_the_summary(setup):
    config, prompts, out, state = setup
    ewe = EWE(scripted_model(text_script(corrected_by_feedback())), tiny_tokenizer(),
              EWEConfig.from_yaml(config), fact_checker=ScriptedChecker(false={B_WRONG}))
    summary = run(ewe, prompts, out, progress=False)
    assert summary["prompts"] == 3 and summary["this_run"] == 3 and summary["pauses_verification"] > 0


def test_check_command_prints_claims_and_verdicts(setup, capsys):
    config, *_ = setup
    assert cli.main(["check", B_WRONG, "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("needs rewrite: She was born in Paris.") and "[unsupported" in out
    assert cli.main(["check", A, "--config", str(config), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["factual"] and data["verdicts"][0]["label"] == "supported"


def test_a_second_run_on_the_same_output_is_refused_while_the_first_runs(setup):
    from ewe.record_log import exclusive

    config, prompts, out, state = setup
    with exclusive(out):  # as if another process were writing it
        with pytest.raises(SystemExit, match="another ewe run is writing"):
            cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out)])
    assert state["calls"] == []
    assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out), "--limit", "1"]) == 0


def test_sigterm_stops_a_run_like_ctrl_c(setup, capsys):
    import os
    import signal

    config, prompts, out, state = setup
    real_calls = state["calls"]

    class Calls(list):
        def append(self, prompt):
            super().append(prompt)
            if len(self) == 2:
                os.kill(os.getpid(), signal.SIGTERM)  # arrives while the second prompt runs

    state["calls"] = Calls(real_calls)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out)]) == 130
    assert [r["id"] for r in lines(out)] in (["p0"], ["p0", "p1"])  # the first is kept; nothing is torn
    assert "interrupted" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_run_with_batch_rows_decodes_prompts_as_rows_joining_as_others_end(setup, capsys):
    """controller.batch_rows: `ewe run` decodes controller.max_rows prompts at once, the next joining
    as a row ends, each record written as its row ends; the file ends as a one-by-one run's, in input
    order; a prompt too long for the context is that prompt's error; a rerun has nothing to do."""
    config, prompts, out, state = setup
    long = "word " * 600
    rows = [{"id": f"p{i}", "prompt": f"Tell me a bio of person {i}."} for i in range(4)]
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows[:2] + [{"id": "long", "prompt": long}] + rows[2:]))
    alone = tmp = out.with_name("alone.jsonl")
    assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(tmp)]) == 1
    argv = ["run", "--config", str(config), "--input", str(prompts), "--output", str(out),
            "--set", "controller.batch_rows=true", "--set", "controller.max_rows=2"]
    state["calls"] = []
    assert cli.main(argv) == 1  # the long prompt failed, the others ran
    assert state["calls"] == []  # not one by one through generate
    got, want = lines(out), lines(alone)
    assert [r["id"] for r in got] == ["p0", "p1", "p2", "p3"]
    assert [(r["text"], r["token_ids"]) for r in got] == [(r["text"], r["token_ids"]) for r in want]
    [err] = lines(out.with_name("results.jsonl.errors.jsonl"))
    assert err["id"] == "long" and "context" in err["error"]
    capsys.readouterr()
    assert cli.main(argv) == 1 and "resuming: 4 of 5" in capsys.readouterr().err
    assert len(lines(out)) == 4
