"""Every `ewe bench` subcommand, end to end through the CLI on the tiny model and tiny inputs.

Each runs in about a second (the judge's in a few: it loads the shipped judge and MiniLM); the
numbers are not checked for speed, only that every table has its rows, that every ratio is
positive and finite, and that the two sides of each ratio did the same work (the same token
counts, the same outputs)."""
from __future__ import annotations

import json
import math
import re

import pytest
import yaml
from scripted import ScriptedChecker, scripted_model, text_script
from test_controller import B_WRONG, FakeDatastore, corrected_by_feedback
from tiny import tiny_ewe, tiny_tokenizer

from ewe import EWE, cli
from ewe.bench.decode import UnequalCounts, check_equal_counts
from ewe.config import EWEConfig

TINY = ["--unit-tokens", "24"]  # the tiny model's memory units


def positive(x: str | float) -> float:
    v = float(x)
    assert v > 0 and math.isfinite(v), x
    return v


def rows(out: str, first: str) -> dict[str, list[str]]:
    """The table lines whose first column is one of `first`'s words, split on whitespace."""
    names = first.split()
    return {line.split()[0]: line.split() for line in out.splitlines() if line.split() and line.split()[0] in names}


@pytest.fixture(scope="module")
def base():
    return tiny_ewe()


@pytest.fixture
def tiny_cli(base, monkeypatch):
    """`ewe` commands load the tiny model, configured as their options say."""

    def load(args):
        return EWE(base.model, base.tokenizer, EWEConfig.build(base.config.model_dump(), **cli.config_overrides(args)))

    monkeypatch.setattr(cli, "_load_ewe", load)
    return load


# -- decode ---------------------------------------------------------------------------------------


def test_decode_every_run_decodes_the_same_count(tiny_cli, capsys):
    assert cli.main(["bench", "decode", "--tokens", "6", "--units", "2", "--repeats", "2", "--kv-caches", "dynamic",
                     "static", *TINY]) == 0
    out = capsys.readouterr().out
    table = rows(out, "hf_generate ewe_k0 ewe_k2 ewe_k0_static ewe_k2_static")
    assert set(table) == {"hf_generate", "ewe_k0", "ewe_k2", "ewe_k0_static", "ewe_k2_static"}
    for name, cols in table.items():
        assert cols[1] == "6"  # tokens: equal counts, end-of-sequence masked in every run
        positive(cols[2]), positive(cols[3]), positive(cols[4])  # median s, tok/s, vs hf
    assert table["hf_generate"][4] == "1.00"
    assert " ".join(table["ewe_k0"][5:]) == "hf_generate: yes"  # k=0 writes HF's tokens
    assert " ".join(table["ewe_k0_static"][5:]) == "ewe_k0: yes, hf_generate: yes"
    assert " ".join(table["ewe_k2_static"][5:]) == "ewe_k2: yes"  # the static cache writes the dynamic one's
    assert "equal work" in out


def test_decode_refuses_runs_of_unequal_counts(base, monkeypatch, capsys):
    """A run that stops early (here: ewe's, made to return one token short) fails the command."""

    def load(args):
        ewe = EWE(base.model, base.tokenizer, EWEConfig.build(base.config.model_dump(), **cli.config_overrides(args)))
        real = ewe.generate

        def short(prompt, **kw):
            r = real(prompt, **kw)
            r.token_ids = r.token_ids[:-1]
            return r

        ewe.generate = short
        return ewe

    monkeypatch.setattr(cli, "_load_ewe", load)
    assert cli.main(["bench", "decode", "--tokens", "4", "--units", "0", "--repeats", "1", *TINY]) == 1
    captured = capsys.readouterr()
    assert "unequal work" in captured.err and "ewe_k0 (repeat 1) produced 3" in captured.err
    assert rows(captured.out, "ewe_k0")["ewe_k0"][4] == "-"  # no ratio for different work
    with pytest.raises(UnequalCounts):
        check_equal_counts({"a": 4, "b": 3}, 4)


# -- attention ------------------------------------------------------------------------------------


def test_attention_compares_the_same_outputs(capsys):
    args = ["bench", "attention", "--case", "2,16,32", "--case", "1,8,16", "--repeats", "1", "--layers", "2",
            "--stream-mb", "4", "--prefill-len", "4", "--threads", "1"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    lines = [l.split() for l in out.splitlines() if l.split()[:1] in (["decode"], ["prefill"])]
    assert len(lines) == 2 * 2 * 2  # modes x dtypes x cases
    for cols in lines:
        # mode dtype k M ctx | ext fused ref | fused/ext ref/ext max|d| | ...
        positive(cols[7]), positive(cols[8])  # fused and reference ms
        assert float(cols[12]) < (1e-3 if cols[1] == "float32" else 6e-2)  # the same output as the reference
        if cols[6] != "-":  # the compiled extension is built
            positive(cols[6]), positive(cols[10]), positive(cols[11])
    assert "the same layer call" in out


def test_attention_case_is_validated(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "attention", "--case", "2,16"])
    assert "K,M,CTX" in capsys.readouterr().err


# -- retrieval ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def datastore(tmp_path_factory):
    from pathlib import Path

    from ewe.retrieval import Datastore

    path = tmp_path_factory.mktemp("bench-ds") / "ds"
    corpus = Path(__file__).parent / "data" / "corpus.jsonl"
    Datastore.build(corpus, path, tokenizer=tiny_tokenizer(), embedder="embedded", chunk_tokens=64)
    return path


def test_retrieval_pairs_every_index_with_exact_search(datastore, tmp_path, capsys):
    report = tmp_path / "r.json"
    assert cli.main(["bench", "retrieval", "--datastore", str(datastore), "--factory", "HNSW8", "--factory",
                     "IVF2,Flat", "--queries", "6", "-k", "3", "--batch-repeats", "2", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    table = rows(out, "Flat HNSW8 IVF2,Flat")
    assert list(table) == ["Flat", "HNSW8", "IVF2,Flat"]  # exact first, though not asked for
    assert table["Flat"][5] == "1.00" and table["Flat"][7] == "1.00" and table["Flat"][8] == "1.000"
    r = json.loads(report.read_text())
    assert r["queries"] == 6 and r["batch_repeats"] == 2
    for x in r["indexes"]:
        for key in ("search_single_ms_median", "search_batched_ms_per_query", "exact_over_index_single",
                    "exact_over_index_batched"):
            positive(x[key])
        assert 0 <= x["recall_at_k"] <= 1
    assert "timed interleaved in this run" in out


# -- refresh --------------------------------------------------------------------------------------


def test_refresh_headlines_equal_work(tiny_cli, tmp_path, capsys):
    report = tmp_path / "r.json"
    assert cli.main(["bench", "refresh", "--generated", "16", "32", "--units", "2", "--repeats", "2",
                     "--sentence-tokens", "5", "--json", str(report), *TINY]) == 0
    out = capsys.readouterr().out
    lines = [l.split() for l in out.splitlines() if re.match(r"\s*(16|32)\s+\d+\s+\d+\s+\|", l)]
    assert [int(l[0]) for l in lines] == [16, 32]
    for cols in lines:
        ratios = cols[cols.index("|", 4) + 1:]  # re-prompt/refresh, re-prefill/crop+step | re-prefill/crop alone
        positive(ratios[0]), positive(ratios[1]), positive(ratios[3])
    r = json.loads(report.read_text())
    for row in r["rows"]:
        assert row["forwards"]["reprompt"] == 1 and row["forwards"]["backtrack_reprefill"] == 1
        assert row["forwards"]["backtrack"] == 1 and row["forwards"]["refresh_step"] == 1
        positive(row["reprompt_over_refresh"]), positive(row["reprefill_over_backtrack"])
    assert "NOT equal work" in out  # the crop-alone figure is labelled as such


# -- judge ----------------------------------------------------------------------------------------


def test_judge_prices_a_check_in_decode_steps(tiny_cli, capsys):
    assert cli.main(["bench", "judge", "--repeats", "1", "--tokens", "4", "--sentences", "1", *TINY]) == 0
    out = capsys.readouterr().out
    found = {l.split("  ")[0].strip(): l.split() for l in out.splitlines()
             if re.match(r"(decode step |judge \(|alignment )", l)}
    assert set(found) == {"decode step", "judge (cached passages)", "judge (cold)", "alignment"}
    assert found["decode step"][-1] == "1.00"
    for cols in found.values():
        positive(cols[-1]), positive(cols[-2])
    assert "1 sentences" in out


# -- run ------------------------------------------------------------------------------------------


def test_run_compares_methods_on_the_same_prompts(tmp_path, monkeypatch, capsys):
    """The scripted model writes a bio whose wrong sentence the checker rejects (until the feedback is
    in memory, beside the retrieved passage), so EWE backtracks."""
    config = tmp_path / "ewe.yaml"
    config.write_text(yaml.safe_dump({
        "memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
        "retrieval": {"source": "fake", "top_k": 1},
        "controller": {"verify_trigger": "interval", "verify_interval": 4},
    }))
    model = scripted_model(text_script(corrected_by_feedback(needs=2)))
    store, checker = FakeDatastore(), ScriptedChecker(false={B_WRONG})

    def load(args):
        cfg = EWEConfig.from_yaml(args.config, **cli.config_overrides(args))
        return EWE(model, tiny_tokenizer(), cfg, datastore=store, fact_checker=checker)

    monkeypatch.setattr(cli, "_load_ewe", load)
    report = tmp_path / "r.json"
    assert cli.main(["bench", "run", "--config", str(config), "--limit", "2", "--with-memory-only",
                     "--json", str(report)]) == 0
    out = capsys.readouterr().out
    table = rows(out, "ra memory_only ewe")
    assert set(table) == {"ra", "memory_only", "ewe"}
    assert table["ra"][2] == "1.00" and table["ra"][-1] == "1.00"
    for cols in table.values():
        positive(cols[1]), positive(cols[2]), positive(cols[-1])  # median s, vs RA, /tok vs RA
    r = json.loads(report.read_text())
    assert r["prompts"] == 2 and all(len(v) == 2 for v in r["rows"].values())  # the same prompts for each method
    assert r["summary"]["ewe"]["backtracks"] >= 1
    assert "same prompts" in out


def _ra_and_checked(tmp_path, verify_interval: int = 4):
    """Two configuration files on the fake datastore: RA-1 and a checked EWE (ra-1.yaml, checked.yaml)."""
    common = {"memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
              "retrieval": {"source": "fake", "top_k": 1}}
    ra, ewe_cfg = tmp_path / "ra-1.yaml", tmp_path / "checked.yaml"
    ra.write_text(yaml.safe_dump({**common, "retrieval": {**common["retrieval"], "placement": "prompt"}}))
    ewe_cfg.write_text(yaml.safe_dump({**common, "controller": {"verify_trigger": "interval",
                                                                "verify_interval": verify_interval}}))
    return ra, ewe_cfg


def test_run_compares_several_configurations_with_the_first_as_baseline(tmp_path, monkeypatch, capsys):
    """`--config A --config B`: each file is a method named by it, the first the baseline; the second
    shares the first's model, datastore and checker; each method's time is broken down."""
    ra, ewe_cfg = _ra_and_checked(tmp_path)
    model = scripted_model(text_script(corrected_by_feedback(needs=2)))
    store, checker = FakeDatastore(), ScriptedChecker(false={B_WRONG})
    loads = []

    def load(args):
        loads.append(args.config)
        cfg = EWEConfig.from_yaml(args.config, **cli.config_overrides(args))
        return EWE(model, tiny_tokenizer(), cfg, datastore=store, fact_checker=checker)

    monkeypatch.setattr(cli, "_load_ewe", load)
    report = tmp_path / "r.json"
    assert cli.main(["bench", "run", "--config", str(ra), "--config", str(ewe_cfg), "--limit", "2",
                     "--json", str(report)]) == 0
    assert loads == [str(ra)]  # the second configuration reuses what the first loaded
    out = capsys.readouterr().out
    table = rows(out, "ra-1 checked")
    assert set(table) == {"ra-1", "checked"} and table["ra-1"][2] == "1.00"
    r = json.loads(report.read_text())
    assert r["baseline"] == "ra-1" and r["summary"]["checked"]["backtracks"] >= 1
    parts = r["summary"]["checked"]["time_parts"]
    assert {"decode", "checks", "candidate rounds", "backtracks"} <= set(parts["seconds"])
    assert parts["decode_steps"]["decode"] == pytest.approx(parts["seconds"]["decode"] / parts["decode_step_s"])
    # parts under 5 ms are not printed (the tiny model's prefill may be one), so any part will do
    assert "where the time goes" in out and re.search(r"checked: \w[\w +]* [\d.]+ s \(\d+\)", out)
    assert "target: checked wall time per prompt <= 1.5x ra-1" in out


def test_run_writes_the_timed_answers_and_resumes(tmp_path, monkeypatch, capsys):
    """--out: each method's answers go to DIR/NAME.jsonl as they finish, in ewe run's format (the
    scorer reads them); a rerun with more prompts times only the new ones and reports over all."""
    from ewe.eval.scorer import read_results

    ra, ewe_cfg = _ra_and_checked(tmp_path)
    model = scripted_model(text_script(corrected_by_feedback(needs=2)))
    store, checker = FakeDatastore(), ScriptedChecker(false={B_WRONG})
    generated = []
    plain = EWE.generate

    def generate(self, prompt, **kw):
        if not kw:  # not the warm-up
            generated.append(prompt)
        return plain(self, prompt, **kw)

    def load(args):
        cfg = EWEConfig.from_yaml(args.config, **cli.config_overrides(args))
        return EWE(model, tiny_tokenizer(), cfg, datastore=store, fact_checker=checker)

    monkeypatch.setattr(EWE, "generate", generate)
    monkeypatch.setattr(cli, "_load_ewe", load)
    out, report = tmp_path / "answers", tmp_path / "r.json"
    argv = ["bench", "run", "--config", str(ra), "--config", str(ewe_cfg), "--out", str(out), "--json", str(report)]
    assert cli.main(argv + ["--limit", "2"]) == 0
    assert len(generated) == 4  # 2 prompts x 2 methods
    first = {n: (out / f"{n}.jsonl").read_bytes() for n in ("ra-1", "checked")}
    for n in first:
        answers = read_results(out / f"{n}.jsonl")
        assert len(answers) == 2 and all(a["bench_seconds"] > 0 and a["text"] for a in answers)
    capsys.readouterr()
    generated.clear()
    assert cli.main(argv + ["--limit", "3"]) == 0
    assert len(generated) == 2  # only the third prompt, once per method
    assert "2 of the 3 prompts were timed by an earlier run" in capsys.readouterr().out
    r = json.loads(report.read_text())
    assert r["prompts"] == 3 and r["timed_now"] == 1 and all(len(v) == 3 for v in r["rows"].values())
    for n, before in first.items():
        now = (out / f"{n}.jsonl").read_bytes()
        assert now.startswith(before) and len(read_results(out / f"{n}.jsonl")) == 3
    # another configuration under the same name is refused, not mixed in
    _ra_and_checked(tmp_path, verify_interval=6)
    generated.clear()
    assert cli.main(argv + ["--limit", "3"]) == 2
    assert "made with another configuration" in capsys.readouterr().err and not generated


# -- batch ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_batch", [None, 2])  # 2: the third prompt joins as a row ends
def test_batch_compares_rows_of_one_batch_with_one_by_one(tmp_path, monkeypatch, capsys, max_batch):
    config = tmp_path / "ewe.yaml"
    config.write_text(yaml.safe_dump({
        "memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
        "retrieval": {"source": None},
        "controller": {"verify_trigger": "interval", "verify_interval": 4},
    }))
    model = scripted_model(text_script(corrected_by_feedback(needs=2)))
    checker = ScriptedChecker(false={B_WRONG})

    def load(args):
        cfg = EWEConfig.from_yaml(args.config, **cli.config_overrides(args))
        return EWE(model, tiny_tokenizer(), cfg, fact_checker=checker)

    monkeypatch.setattr(cli, "_load_ewe", load)
    out_json = tmp_path / "b.json"
    assert cli.main(["bench", "batch", "--config", str(config), "--prompts", "3", "--max-new-tokens", "40",
                     "--out", str(out_json)] + (["--max-batch", str(max_batch)] if max_batch else [])) == 0
    out = capsys.readouterr().out
    table = rows(out, "one batched")
    assert set(table) == {"one", "batched"}
    assert "rows that wrote what they write alone: 3/3" in out
    r = json.loads(out_json.read_text())
    assert r["tokens"]["one by one"] == r["tokens"]["batched"] > 0 and positive(r["throughput_ratio"])
    assert r["same_rows"] == 3 and r["max_batch"] == max_batch
