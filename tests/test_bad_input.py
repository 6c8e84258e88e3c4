"""Issue 17's wrong cases, each with the behaviour that replaced it (every test here fails on
the code before the fix): nothing finished lost, nothing written into an input, no silent
reinterpretation of a bad value."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_runner import lines, setup  # noqa: F401 (the fixture)
from tiny import tiny_ewe

from ewe import cli
from ewe.errors import InputError
from ewe.ops import dispatch
from ewe.record_log import finished_ids
from ewe.runner import RunError


# --- 2. resume keeps every complete record, refuses what it cannot parse ----------------------


def test_a_complete_last_line_without_newline_is_kept(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}')
    assert finished_ids(out) == {"a", "b"}
    assert out.read_text().endswith('"y"}\n')  # repaired by adding the newline, not by cutting


def test_a_torn_last_line_is_cut_and_the_rest_kept(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    out.write_text('{"id": "a", "text": "x"}\n{"id": "b", "te')
    assert finished_ids(out) == {"a"}
    assert out.read_text() == '{"id": "a", "text": "x"}\n'
    assert "torn last line" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["# my notes\nsome text", "plain text, not JSONL", '{"id": "a"}\nnot json\n{"id": "b"}\n',
                                     '{"id": "a"}\n[1, 2]\n', b'{"id": "a"}\n\xff\xfe\n'])
def test_an_output_that_is_not_ewe_jsonl_is_refused_untouched(tmp_path, content):
    out = tmp_path / "r.jsonl"
    (out.write_bytes if isinstance(content, bytes) else out.write_text)(content)
    before = out.read_bytes()
    with pytest.raises(RunError, match=r"r\.jsonl:\d+"):
        finished_ids(out)
    assert out.read_bytes() == before


# --- 3. --input and --output the same file -------------------------------------------------


def test_output_naming_the_input_is_refused(setup, tmp_path):  # noqa: F811
    config, prompts, out, _ = setup
    before = prompts.read_text()
    link = tmp_path / "link.jsonl"
    link.symlink_to(prompts)
    for target in (prompts, link, tmp_path / "." / "prompts.jsonl"):
        for cmd in (["run", "--config", str(config)], ["generate"]):
            with pytest.raises(SystemExit, match="is the --input"):
                cli.main(cmd + ["--input", str(prompts), "--output", str(target)])
    assert prompts.read_text() == before


# --- 4. ewe generate --input: the runner, with its lock ---------------------------------------


def test_generate_input_holds_the_run_lock(setup):  # noqa: F811
    import fcntl

    config, prompts, out, _ = setup
    out.parent.mkdir(parents=True)
    with open(out.with_name(out.name + ".lock"), "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(SystemExit, match="another ewe run is writing"):
            cli.main(["generate", "--config", str(config), "--input", str(prompts), "--output", str(out)])
    assert cli.main(["generate", "--config", str(config), "--input", str(prompts), "--output", str(out)]) == 0
    assert [r["id"] for r in lines(out)] == ["p0", "p1", "p2"]
    assert cli.main(["generate", "--config", str(config), "--input", str(prompts), "--output", str(out)]) == 0  # resumes: no duplicates
    assert [r["id"] for r in lines(out)] == ["p0", "p1", "p2"]


# --- 5, 6. bounds: negative and zero are errors ------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "0", "1.5", "x"])
def test_limit_must_be_positive(setup, value, capsys):  # noqa: F811
    config, prompts, out, _ = setup
    with pytest.raises(SystemExit):
        cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out), "--limit", value])
    assert "--limit" in capsys.readouterr().err
    assert not out.exists()


def test_limit_one_runs_one(setup):  # noqa: F811
    config, prompts, out, _ = setup
    assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out), "--limit", "1"]) == 0
    assert [r["id"] for r in lines(out)] == ["p0"]


@pytest.mark.parametrize("value", ["0", "-5"])
def test_index_build_chunk_tokens_must_be_positive(tmp_path, value, capsys):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "1", "text": "A passage."}\n')
    with pytest.raises(SystemExit):
        cli.main(["index", "build", str(corpus), str(tmp_path / "ds"), "--chunk-tokens", value])
    assert "--chunk-tokens" in capsys.readouterr().err
    assert not (tmp_path / "ds").exists()


# --- 7. a string is not a list of passages --------------------------------------------------------


def test_a_string_of_passages_is_an_error_not_characters():
    ewe = tiny_ewe()
    with pytest.raises(InputError, match="passages must be a list"):
        ewe.generate("hi", passages="abc")
    with pytest.raises(InputError, match=r"passages\[1\] must be a list"):
        ewe.generate(["hi", "ho"], passages=[["a passage"], "abc"])
    assert isinstance(ewe.generate("hi", passages=["abc"], max_new_tokens=2).text, str)


# --- "passages": [] in a prompts file means no memory, as in the API ---------------------------------


def test_empty_passages_in_a_prompts_file_mean_no_memory(setup):  # noqa: F811
    config, prompts, out, state = setup
    seen = []
    real_load = cli._load_ewe

    def load(args):
        ewe = real_load(args)
        inner = ewe.generate

        def generate(prompt, passages=None, **kw):
            seen.append(passages)
            return inner(prompt, passages=passages, **kw)

        ewe.generate = generate
        return ewe

    cli._load_ewe = load
    prompts.write_text(json.dumps({"id": "a", "prompt": "Tell me a bio of person 0.", "passages": []}) + "\n"
                       + json.dumps({"id": "b", "prompt": "Tell me a bio of person 1."}) + "\n")
    assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out)]) == 0
    assert seen == [[], None]


# --- 8. ewe eval run with another --n ---------------------------------------------------------------


def test_eval_prompts_file_follows_n(tmp_path):
    from ewe.eval.harness import EvalError, settle_prompts

    path = tmp_path / "prompts" / "bio.jsonl"
    rows = [{"id": f"bio-{i}", "prompt": f"p{i}"} for i in range(4)]
    settle_prompts(path, rows[:2], "bio")
    settle_prompts(path, rows[:2], "bio")  # same: kept
    settle_prompts(path, rows, "bio")  # more of the same set: extended
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == [r["id"] for r in rows]
    with pytest.raises(EvalError, match="other prompts"):
        settle_prompts(path, rows[:3], "bio")  # fewer: refused
    with pytest.raises(EvalError, match="other prompts"):
        settle_prompts(path, [{"id": "bio-0", "prompt": "another"}] + rows[1:], "bio")


# --- 10. EWE_ATTENTION_IMPL takes effect through EWE, and a test sees which kernel ran ------------------


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_the_environment_picks_the_kernel_through_ewe(monkeypatch, impl):
    monkeypatch.setenv("EWE_ATTENTION_IMPL", impl)
    ewe = tiny_ewe()
    before = dict(dispatch.used)
    ewe.generate("hi", passages=["a passage in memory"], max_new_tokens=3)
    ran = {k: dispatch.used[k] - before.get(k, 0) for k in dispatch.used}
    assert ran.get(impl, 0) > 0 and all(v == 0 for k, v in ran.items() if k != impl), ran


def test_an_explicit_config_setting_beats_the_environment(monkeypatch):
    from ewe.config import EWEConfig

    monkeypatch.setenv("EWE_ATTENTION_IMPL", "fused")
    ewe = tiny_ewe(EWEConfig.build({"model": {"attention_impl": "reference"}}))
    before = dispatch.used["reference"]
    ewe.generate("hi", passages=["a passage in memory"], max_new_tokens=2)
    assert dispatch.used["reference"] > before


def test_the_fallback_notice_shows_at_the_default_level():
    """The CLI shows warnings, not INFO: the notice that the extension is absent must be a warning."""
    code = ("import logging, ewe.ops.dispatch as d, ewe.ops.extension as e\n"
            "e.available = lambda: False\nlogging.basicConfig(level=logging.WARNING)\nd.select('auto')\n")
    env = {k: v for k, v in os.environ.items() if k != "EWE_ATTENTION_IMPL"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "extension not built" in r.stderr, r.stderr


# --- a checker that errors on every check stops the run; errored checks are counted --------------------


class _BrokenChecker:
    """Every check fails with an error, as a judge that cannot load or a dead HTTP checker would."""

    def __init__(self, inner):
        self.inner = inner

    def check_sentence(self, sentence, **kw):
        self.inner.fail_with_error.add(sentence)
        return self.inner.check_sentence(sentence, **kw)


def test_a_run_whose_checks_all_error_stops_and_keeps_nothing_false(setup, capsys):  # noqa: F811
    config, prompts, out, state = setup
    state["checker"].fail_with_error = set()
    real_load = cli._load_ewe

    def load(args):
        ewe = real_load(args)
        ewe.runtime.use_fact_checker(_BrokenChecker(state["checker"]))
        return ewe

    cli._load_ewe = load
    with pytest.raises(SystemExit, match="every fact-check so far failed with an error.*TimeoutError"):
        cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out)])
    assert not out.exists() or lines(out) == []  # the prompt that showed it is not written


def test_errored_checks_are_counted_in_stats_and_summary(setup, capsys):  # noqa: F811
    from test_controller import B_RIGHT

    config, prompts, out, state = setup
    state["checker"].fail_with_error = {B_RIGHT}  # one sentence's check errors, the others work
    assert cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out)]) == 0
    rows = lines(out)
    assert all(r["stats"]["errored_checks"] >= 1 for r in rows)
    assert "could not be made" in capsys.readouterr().out


def test_a_given_passage_longer_than_a_unit_warns_through_the_controller():
    from ewe.config import EWEConfig

    cfg = EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None},
                           "controller": {"verify_trigger": "interval", "verify_interval": 4}})
    ewe = tiny_ewe(cfg)
    ewe.runtime.use_fact_checker(__import__("scripted").ScriptedChecker(false=set()))
    with pytest.warns(UserWarning, match="truncated to unit_tokens=24"):
        r = ewe.generate("hi", passages=["word " * 100], max_new_tokens=6)
    assert any(e["type"] == "memory" for e in r.trace)  # it went through the controller


# --- poor cases: one line naming the input, non-zero exit, no traceback -------------------------------


@pytest.mark.parametrize("content,expect", [
    ("model: [\n", r"bad\.yaml:2:1: not valid YAML"),
    ('model: !!python/object/apply:os.system ["echo hi"]\n', r"bad\.yaml:1:8: .*!!python are not allowed"),
    (b"model:\n  name: \xff\n", "not UTF-8"),
    (None, "not a file"),
])
def test_bad_config_files_get_one_clear_line(tmp_path, capsys, content, expect):
    path = tmp_path / "bad.yaml"
    if content is None:
        path.mkdir()
    else:
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    assert cli.main(["generate", "--config", str(path), "hi"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ewe: error:") and "Traceback" not in err
    import re

    assert re.search(expect, err), err


def test_a_missing_model_folder_is_named(capsys):
    assert cli.main(["generate", "--model", "/nonexistent/model", "hi"]) == 2
    assert "--model /nonexistent/model: no such model folder" in capsys.readouterr().err
    assert cli.main(["generate", "--model", "m" * 300, "hi"]) == 2  # longer than a file name may be
    err = capsys.readouterr().err
    assert "--model mmm" in err and "not a model folder or a hub id (file name too long, 300 characters)" in err
    assert "Traceback" not in err and len(err) < 250


def test_set_reaches_top_level_settings(capsys):
    args = cli.build_parser().parse_args(["generate", "--set", "method=cove", "hi"])
    assert cli.config_overrides(args) == {"method": "cove"}
    args = cli.build_parser().parse_args(["generate", "--set", "nosuchkey=1", "hi"])
    with pytest.raises(SystemExit, match="SECTION.KEY=VALUE"):
        cli.config_overrides(args)


def test_a_non_utf8_input_names_the_file_and_line(tmp_path):
    from ewe.runner import read_prompts

    bad = tmp_path / "p.jsonl"
    bad.write_bytes(b'{"prompt": "ok"}\n{"prompt": "caf\xe9"}\n')
    with pytest.raises(RunError, match=r"p\.jsonl:2: not UTF-8"):
        read_prompts(bad)
    with pytest.raises(RunError, match="not a file"):
        read_prompts(tmp_path)


def test_an_input_saved_with_a_byte_order_mark_is_read(tmp_path):
    """Windows editors start UTF-8 files with a BOM; it is not part of the first record."""
    from ewe.files import read_jsonl
    from ewe.runner import read_prompts

    path = tmp_path / "p.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "prompt": "one"}\n{"prompt": "two \xef\xbb\xbf"}\n')
    rows = read_prompts(path)
    assert [(r["id"], r["prompt"]) for r in rows] == [("a", "one"), ("2", "two \ufeff")]  # only the leading one goes
    assert [row for _, row in read_jsonl(path)][0] == {"id": "a", "prompt": "one"}


def test_a_killed_build_leaves_no_work_folder_behind_the_next_one(tmp_path):
    import subprocess as sp

    from ewe.retrieval.folders import work_dir

    dead = sp.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".ds.tmp-{dead.pid}-abc"  # what SIGKILL left behind
    stale.mkdir()
    live = tmp_path / f".ds.tmp-{os.getpid()}-xyz"  # another build still running here
    live.mkdir()
    work = work_dir(tmp_path / "ds")
    assert not stale.exists() and live.exists() and work.exists() and work.name.startswith(f".ds.tmp-{os.getpid()}-")


def test_a_built_folder_has_the_permissions_of_a_plain_mkdir(tmp_path):
    """A datastore or model cache shared by several users is readable by them (mkdtemp gives 0700)."""
    from ewe.files import build_dir
    from ewe.retrieval.folders import work_dir

    old = os.umask(0o022)
    try:
        assert work_dir(tmp_path / "ds").stat().st_mode & 0o777 == 0o755
        os.umask(0o027)
        assert build_dir(tmp_path, ".tmp-").stat().st_mode & 0o777 == 0o750
    finally:
        os.umask(old)


def test_an_empty_search_query_is_an_error(tmp_path, capsys):
    from ewe.retrieval.cli import main

    assert main(["index", "search", str(tmp_path / "no-ds"), "  "]) == 2
    assert "query 1 is empty" in capsys.readouterr().err  # said before the datastore is even opened


def test_the_audit_page_shows_generated_html_as_text():
    from ewe.eval.report import _audit_md

    a = {"audit_id": 1, "label": "supported", "score": 0.5, "method": "ewe", "dataset": "bio", "id": "x",
         "sentence": "<script>alert(1)</script> was born", "claim": "<img src=x onerror=alert(1)>", "error": None,
         "evidence": [{"title": "<b>T</b>", "score": 0.9, "text": "a <iframe> passage"}]}
    md = _audit_md([a], "t")
    assert "<script>" not in md and "<img" not in md and "<iframe>" not in md and "<b>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt; was born" in md


# --- a sweep of hostile and careless inputs (issue 17, second round): each fails before its fix ------


def _prompts_file(tmp_path, text: str):
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    return path


@pytest.mark.parametrize("rid,shown", [('["x", 1]', '["x", 1]'), ('{"k": 1}', '{"k": 1}'), ('""', "an empty string"),
                                       ('"  "', "an empty string"), ("null", "null"), ("true", "true"), ("1.5", "1.5")])
def test_an_id_that_is_not_a_string_or_integer_is_refused(tmp_path, rid, shown):
    """It used to be written as Python's spelling of it ("['x', 1]", "True", "None", "") and resumed by that."""
    from ewe.runner import read_prompts

    path = _prompts_file(tmp_path, '{"id": %s, "prompt": "hi"}\n' % rid)
    with pytest.raises(RunError, match=r"p\.jsonl:1: \"id\" must be a non-empty string or an integer, got "
                                       + re.escape(shown)):
        read_prompts(path)
    assert [r["id"] for r in read_prompts(_prompts_file(tmp_path, '{"id": 7, "prompt": "hi"}\n'))] == ["7"]


@pytest.mark.parametrize("text,what", [
    (json.dumps([{"id": "a", "prompt": "hi"}, {"id": "b", "prompt": "ho"}], indent=2), "one JSON array"),
    (json.dumps([{"id": "a", "prompt": "hi"}]), "one JSON array"),
    (json.dumps({"id": "a", "prompt": "hi"}, indent=2), "one JSON object written over several lines"),
])
def test_a_json_file_that_is_not_jsonl_is_named_as_such(tmp_path, text, what):
    from ewe.runner import read_prompts

    with pytest.raises(RunError, match=f"p\\.jsonl is {what}, not JSONL: write one JSON object per line"):
        read_prompts(_prompts_file(tmp_path, text))


@pytest.mark.parametrize("line,field", [('{"id": "a", "prompt": "Say \\ud800 hi."}', "prompt"),
                                        ('{"id": "a", "prompt": "hi", "topic": "x\\udc00"}', "topic"),
                                        ('{"id": "a", "prompt": "hi", "passages": ["p \\udfff"]}', "passages")])
def test_an_unpaired_surrogate_in_a_prompts_file_is_refused_before_generation(setup, line, field):  # noqa: F811
    """It used to stop the run with the tokenizer's "TextEncodeInput must be Union[...]", or after
    generating, when the result line could not be written."""
    config, prompts, out, state = setup
    prompts.write_text(json.dumps({"id": "ok", "prompt": "Tell me a bio of person 0."}) + "\n" + line + "\n")
    with pytest.raises(SystemExit, match=rf'prompts\.jsonl:2: "{field}" holds an unpaired surrogate'):
        cli.main(["run", "--config", str(config), "--input", str(prompts), "--output", str(out)])
    assert state["calls"] == [] and not out.exists()


@pytest.mark.parametrize("kwargs,message", [
    ({"prompt": "hi \ud800"}, r"prompt is not valid text: an unpaired surrogate \\ud800 at character 3"),
    ({"prompt": ["ok", "\udcff"]}, r"prompt\[1\] is not valid text"),
    ({"prompt": "hi", "passages": ["x \udc00"]}, r"passages\[0\]\[0\] is not valid text"),
    ({"prompt": "hi", "passages": [["nested"]]}, r"passages\[0\]\[0\] must be a string, got list"),
    ({"prompt": "hi", "passages": [None]}, r"passages\[0\]\[0\] must be a string, got NoneType"),
    ({"prompt": "hi", "passages": [{"title": "Marie Curie"}]}, r"passages\[0\]\[0\]\.text must be a non-empty"),
    ({"prompt": "hi", "passages": [{"text": "x", "source": "y"}]}, r"passages\[0\]\[0\] has unknown field"),
    ({"prompt": "hi", "max_new_tokens": True}, "max_new_tokens must be a number, got bool True"),
    ({"prompt": "hi", "max_new_tokens": "5"}, "max_new_tokens must be a number, got str '5'"),
    ({"prompt": "hi", "temperature": False}, "temperature must be a number, got bool"),
    ({"prompt": "hi", "seed": "7"}, "seed must be a number, got str"),
])
def test_api_refuses_non_text_and_non_numbers_before_model_work(tiny, model_work, kwargs, message):
    """A lone surrogate failed deep in the tokenizer (TypeError) or the unit encoder (UnicodeEncodeError);
    max_new_tokens=True quietly decoded one token, "5" five."""
    with pytest.raises(InputError, match=message):
        tiny.generate(**kwargs)
    assert model_work == []


@pytest.mark.parametrize("evidence,message", [("Marie Curie was a physicist.", "evidence must be a list .*got a single string"),
                                              ([""], r"evidence\[0\] must be a non-empty string"),
                                              ([3], r"evidence\[0\] must be a non-empty string or \{\"title\", \"text\"\}, got int"),
                                              ([{"title": "Marie Curie"}], r"evidence\[0\]\.text must be a non-empty"),
                                              ([{"text": "x", "title": 3}], r"evidence\[0\]\.title must be a string"),
                                              ([{"text": "x", "url": "y"}], r"evidence\[0\] has unknown field\(s\) url")])
def test_check_refuses_evidence_that_is_not_a_list_of_passages(tiny, evidence, message):
    """A string was checked as a list of one-character passages: a silent "not enough evidence"."""
    with pytest.raises(InputError, match=message):
        tiny.check("Marie Curie was a physicist.", evidence=evidence)


def test_from_config_takes_a_path_object_and_names_a_wrong_type(tmp_path):
    from ewe import EWE
    from ewe.config import ConfigError

    with pytest.raises(ConfigError, match="config file not found"):  # was AttributeError: no attribute 'items'
        EWE.from_config(Path(tmp_path / "missing.yaml"))
    with pytest.raises(InputError, match="config must be an EWEConfig, a dict, or the path of a YAML file, got int"):
        EWE.from_config(5)


@pytest.mark.parametrize("kind", ["folder", "device", "file in the way", "read-only"])
def test_an_output_that_cannot_be_a_results_file_is_refused_before_the_model_loads(setup, tmp_path, monkeypatch, kind):  # noqa: F811
    """A folder gave a traceback after the model had loaded; /dev/null swallowed every result while the run
    reported them done, and left its side files in /dev; a read-only folder gave a traceback."""
    config, prompts, out, state = setup
    loaded = []
    monkeypatch.setattr(cli, "_load_ewe", lambda args: loaded.append(1))
    target, expect = {
        "folder": (tmp_path, "is a folder"),
        "device": (Path("/dev/null"), "is not a regular file"),
        "file in the way": (prompts / "sub" / "r.jsonl", "prompts.jsonl is not a folder"),
        "read-only": (tmp_path / "new" / "r.jsonl", "cannot write in"),
    }[kind]
    if kind == "read-only":  # chmod does not stop root: the check itself is what is tested
        monkeypatch.setattr(os, "access", lambda *a, **k: False)
    for cmd in (["run", "--config", str(config)], ["generate"]):
        with pytest.raises(SystemExit, match=expect):
            cli.main(cmd + ["--input", str(prompts), "--output", str(target)])
    assert loaded == [] and not Path("/dev/null.lock").exists()


def test_a_file_written_whole_onto_a_folder_is_one_line_not_a_traceback(tmp_path, capsys):
    assert cli.main(["eval", "prompts", "bio", "--n", "2", "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"a folder is where the file would be written; give a file name: '{tmp_path}'" in err


def test_set_of_a_section_as_a_mapping_sets_keys_not_the_whole_section():
    """--set memory={unit_tokens: 64} replaced the memory section, so the --config file's other memory
    settings fell back to their defaults without a word."""
    args = cli.build_parser().parse_args(["generate", "--set", "memory={unit_tokens: 64}", "hi"])
    assert cli.config_overrides(args) == {"memory.unit_tokens": 64}


def test_set_value_yaml_cannot_read_is_named_and_shortened():
    args = cli.build_parser().parse_args(["generate", "--set", "decoding.seed=" + "9" * 100_000, "hi"])
    with pytest.raises(SystemExit, match=r"--set 'decoding\.seed=9+' \(\.\.\. 100014 characters\): the value is not valid YAML") as e:
        cli.config_overrides(args)
    assert len(str(e.value)) < 600


@pytest.mark.parametrize("flag,value,expect", [("--passage", " ", "--passage number 1 is empty"),
                                               ("--passage-file", "/dev/null", "--passage-file /dev/null is empty")])
def test_an_empty_passage_on_the_command_line_is_named_before_the_model_loads(monkeypatch, flag, value, expect):
    loaded = []
    monkeypatch.setattr(cli, "_load_ewe", lambda args: loaded.append(1))
    with pytest.raises(SystemExit, match=expect):
        cli.main(["generate", flag, value, "hi"])
    assert loaded == []


@pytest.mark.parametrize("manifest,expect", [
    ("[]", "is not an ewe datastore manifest"),
    ('{"format": "ewe-datastore", "format_version": "2"}', 'format_version must be an integer, got "2"'),
    ('{"format": "ewe-datastore"}', r"is damaged or not ewe's: corpus \(missing\), chunking \(missing\)"),
])
def test_a_hostile_manifest_is_one_line(tmp_path, capsys, manifest, expect):
    """A list gave an AttributeError traceback, a string version "'>' not supported between ...", missing
    keys "ewe: error: 'embedder'"."""
    (tmp_path / "manifest.json").write_text(manifest)
    for cmd in (["index", "info", str(tmp_path)], ["index", "search", str(tmp_path), "Alpha"]):
        assert cli.main(cmd) == 2
        err = capsys.readouterr().err
        assert re.search(expect, err), err
        assert "Traceback" not in err


def test_a_build_never_replaces_a_folder_holding_files_that_are_not_a_datastores(tmp_path):
    """A folder with some other manifest.json (a web app's) was replaced whole: its files were lost."""
    from ewe.retrieval.datastore import DatastoreError, _check_target

    web = tmp_path / "web"
    web.mkdir()
    (web / "manifest.json").write_text('{"name": "my web app"}')
    (web / "index.html").write_text("keep me")
    with pytest.raises(DatastoreError, match="not an ewe datastore; refusing to replace it"):
        _check_target(web)
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "manifest.json").write_text('{"format": "ewe-datastore", "format_version": 1}')
    (ds / "README").write_text("my notes")
    with pytest.raises(DatastoreError, match=r"holds files that are not the datastore's \(README\)"):
        _check_target(ds)
    (ds / "README").unlink()
    _check_target(ds)  # a datastore's own files alone: replaced


def test_scoring_a_file_that_is_not_ewe_results_is_refused_before_out_is_made(tmp_path):
    """A prompts file was scored as a method with F1 0, exit status 0."""
    from ewe.eval.harness import score_files

    prompts = _prompts_file(tmp_path, '{"id": "a", "prompt": "Tell me a bio of Marie Curie."}\n')
    with pytest.raises(ValueError, match=r'p\.jsonl:1: a result line needs the generated "text"'):
        score_files([prompts], tmp_path / "scored")
    assert not (tmp_path / "scored").exists()


def test_eval_run_names_a_dataset_that_does_not_exist_before_out_is_made(tmp_path):
    """It said "--input nosuch: no such file", naming a flag eval run does not have, and left OUT behind."""
    from ewe.eval.harness import EvalError, run_eval

    with pytest.raises(EvalError, match=r"--datasets 'nosuch': not a named prompt set \(bio, objects, summaries\)"):
        run_eval(["bare"], ["nosuch"], tmp_path / "ev")
    assert not (tmp_path / "ev").exists()


@pytest.mark.parametrize("text", ["", "# only a comment\n", "{}\n"])
def test_an_empty_config_file_is_refused(tmp_path, text):
    from ewe.config import ConfigError, EWEConfig

    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="empty.yaml: holds no settings; leave out --config for the defaults"):
        EWEConfig.from_yaml(path)


def test_a_passage_with_a_title_is_written_as_retrieved_passages_are(tiny):
    """{"title", "text"} (EWE.generate, the server's ewe.passages) reads as "Title: text"."""
    given = tiny.generate("Tell me a bio of Marie Curie.", passages=[{"title": "Marie Curie", "text": "She was a physicist."}],
                          max_new_tokens=4)
    written = tiny.generate("Tell me a bio of Marie Curie.", passages=["Marie Curie: She was a physicist."],
                            max_new_tokens=4)
    assert given.token_ids == written.token_ids

