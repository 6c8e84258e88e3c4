"""EWE.generate and the CLI on a tiny model: results, validation before model work, JSONL runs."""
import json

import pytest

from ewe import cli
from ewe.config import ConfigError, EWEConfig
from tiny import tiny_ewe

PASSAGE = "Marie Curie was a Polish physicist."


@pytest.fixture(scope="module")
def ewe():
    return tiny_ewe()


def test_generate_returns_text_ids_and_logprobs(ewe):
    r = ewe.generate("Tell me a bio of Marie Curie.", passages=[PASSAGE], max_new_tokens=8)
    assert len(r.token_ids) == len(r.logprobs) <= 8 and all(lp <= 0 for lp in r.logprobs)
    assert r.text == ewe.tokenizer.decode(r.token_ids, skip_special_tokens=True)
    assert r.stats["memory_units"] == 1 and r.memory["retrieval"][0]["tokens"] > 0
    assert r.finish_reason in ("eos", "length")
    json.dumps(r.to_dict())


def test_memory_changes_the_answer_distribution(ewe):
    a = ewe.generate("Tell me a bio of Marie Curie.", max_new_tokens=6)
    b = ewe.generate("Tell me a bio of Marie Curie.", passages=[PASSAGE], max_new_tokens=6)
    assert a.logprobs[0] != pytest.approx(b.logprobs[0], abs=1e-4) or a.token_ids != b.token_ids


def test_sampling_is_seeded(ewe):
    a = ewe.generate("Paris?", max_new_tokens=10, temperature=1.0, top_p=0.9, seed=11)
    b = ewe.generate("Paris?", max_new_tokens=10, temperature=1.0, top_p=0.9, seed=11)
    assert a.token_ids == b.token_ids


def test_batch_of_prompts_equals_single_calls(ewe):
    prompts = ["Tell me a bio of Marie Curie.", "Paris?"]
    passages = [[PASSAGE], []]
    batch = ewe.generate(prompts, passages=passages, max_new_tokens=6)
    for p, ps, r in zip(prompts, passages, batch):
        single = ewe.generate(p, passages=ps, max_new_tokens=6)
        assert r.token_ids == single.token_ids
        assert r.logprobs == pytest.approx(single.logprobs, abs=1e-4)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"prompt": ""}, "prompt is empty"),
        ({"prompt": "   "}, "prompt is empty"),
        ({"prompt": ["ok", ""]}, r"prompt\[1\] is empty"),
        ({"prompt": 5}, "prompt must be a string"),
        ({"prompt": []}, "empty list of prompts"),
        ({"prompt": "x " * 600}, r"prompt is \d+ tokens; the context holds at most 512"),
        ({"prompt": "hello", "max_new_tokens": 500}, r"max_new_tokens=500 = \d+ exceeds the context limit 512"),
        ({"prompt": "hello", "passages": [PASSAGE], "max_new_tokens": 480}, r"limit 488 \(max_position_embeddings=512 minus memory.unit_tokens=24\)"),
        ({"prompt": "hello", "max_new_tokens": 0}, r"decoding.max_new_tokens: Input should be greater than or equal to 1 \(got 0\)"),
        ({"prompt": "hello", "temperature": -1.0}, r"decoding.temperature: .*greater than or equal to 0"),
        ({"prompt": "hello", "top_p": 0.0}, r"decoding.top_p: Input should be greater than 0 \(got 0.0\)"),
        ({"prompt": "hello", "top_p": 1.5}, r"decoding.top_p: .*less than or equal to 1 \(got 1.5\)"),
        ({"prompt": "hello", "passages": ["a", "b", "c", "d", "e"]}, r"5 passages but memory.retrieval_units=4"),
        ({"prompt": "hello", "passages": [""]}, r"passages\[0\]\[0\] is empty"),
        ({"prompt": ["a", "b"], "passages": ["x", "y"]}, "one list of passages per prompt"),
        ({"prompt": ["a", "b"], "passages": [["x"]]}, "1 lists for 2 prompts"),
    ],
)
def test_bad_input_fails_before_model_work(ewe, monkeypatch, kwargs, message):
    calls = []
    monkeypatch.setattr(ewe.model, "forward", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(ewe.encoder, "_encode_batch", lambda *a, **k: calls.append(1))
    with pytest.raises((ValueError, TypeError), match=message):
        ewe.generate(**kwargs)
    assert calls == []


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"memory.unit_tokens": 5}, r"memory.unit_tokens: Input should be greater than or equal to 8 \(got 5\)"),
        ({"memory.unit_tokens": 10_000}, r"memory.unit_tokens: .*less than or equal to 4096 \(got 10000\)"),
        ({"memory.retrieval_units": -1}, r"memory.retrieval_units: .*greater than or equal to 0"),
        ({"memory.feedback_units": 65}, r"memory.feedback_units: .*less than or equal to 64"),
        ({"memory.colour": 1}, r"memory.colour: Extra inputs are not permitted"),
        ({"model.dtype": "int3"}, r"model.dtype: Input should be 'float32', 'bfloat16' or 'float16'"),
    ],
)
def test_config_errors_name_setting_value_and_limit(overrides, message):
    with pytest.raises(ConfigError, match=message):
        EWEConfig.build(**overrides)


def test_yaml_config_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("memory:\n  unit_tokens: 2\n")
    with pytest.raises(ConfigError, match="bad.yaml: invalid configuration: memory.unit_tokens"):
        EWEConfig.from_yaml(path)
    with pytest.raises(ConfigError, match="config file not found"):
        EWEConfig.from_yaml(tmp_path / "missing.yaml")


def test_shipped_configs_validate():
    from pathlib import Path

    configs = sorted(Path(__file__).parent.parent.joinpath("configs").glob("*.yaml"))
    assert configs
    for path in configs:
        EWEConfig.from_yaml(path)


# -- the CLI ---------------------------------------------------------------------------


@pytest.fixture
def cli_ewe(ewe, monkeypatch):
    from ewe import EWE

    def load(args):  # the tiny model, configured as the command line says
        loaded = EWE(ewe.model, ewe.tokenizer, EWEConfig.build(ewe.config.model_dump(), **cli.config_overrides(args)))
        loaded.generate = ewe.generate if "generate" in vars(ewe) else loaded.generate
        return loaded

    monkeypatch.setattr(cli, "_load_ewe", load)
    return ewe


def test_cli_single_prompt(cli_ewe, capsys):
    assert cli.main(["generate", "Paris?", "--passage", PASSAGE, "--max-new-tokens", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stats"]["memory_units"] == 1 and len(out["token_ids"]) <= 4


def test_cli_jsonl_writes_as_it_goes_and_resumes(cli_ewe, tmp_path, monkeypatch, capsys):
    inp, out = tmp_path / "prompts.jsonl", tmp_path / "out" / "results.jsonl"
    rows = [{"id": "a", "prompt": "Paris?"}, {"id": "b", "prompt": "Curie?", "passages": [PASSAGE]}, {"prompt": "Third?"}]
    inp.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    real = cli_ewe.generate
    calls, interrupt_at = [], {"prompt": "Curie?"}

    def generate(prompt, **kw):  # Ctrl-C arrives during the first run's second prompt
        calls.append(prompt)
        if prompt == interrupt_at["prompt"]:
            raise KeyboardInterrupt
        return real(prompt, max_new_tokens=3, **kw)

    monkeypatch.setattr(cli_ewe, "generate", generate)
    assert cli.main(["generate", "--input", str(inp), "--output", str(out)]) == 130
    assert [json.loads(l)["id"] for l in out.read_text().splitlines()] == ["a"]
    calls.clear()
    interrupt_at["prompt"] = None
    assert cli.main(["generate", "--input", str(inp), "--output", str(out)]) == 0
    assert calls == ["Curie?", "Third?"]  # "a" is not generated again
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    assert [l["id"] for l in lines] == ["a", "b", "3"] and lines[1]["stats"]["memory_units"] == 1
    assert "resuming: 1 of 3" in capsys.readouterr().err


def test_cli_reports_every_bad_input_line(cli_ewe, tmp_path, capsys):
    inp = tmp_path / "p.jsonl"
    inp.write_text('{"prompt": "ok"}\nnot json\n{"prompt": ""}\n{"prompt": "x", "passages": "nope"}\n')
    with pytest.raises(SystemExit, match=r"p.jsonl:2: not JSON.*\n.*p.jsonl:3: needs.*\n.*p.jsonl:4: \"passages\""):
        cli.main(["generate", "--input", str(inp), "--output", str(tmp_path / "o.jsonl")])
    assert not (tmp_path / "o.jsonl").exists()


def test_cli_config_error_is_clean(capsys):
    assert cli.main(["generate", "hi", "--unit-tokens", "3"]) == 2
    assert "memory.unit_tokens" in capsys.readouterr().err


def test_any_local_causal_lm_loads_by_path(tmp_path):
    """A Hugging Face checkpoint folder (safetensors) loads through the same API as the embedded default."""
    from ewe import EWE
    from tiny import tiny_model, tiny_tokenizer

    tiny_model(seed=1).save_pretrained(tmp_path / "tiny")
    tiny_tokenizer().save_pretrained(tmp_path / "tiny")
    assert (tmp_path / "tiny" / "model.safetensors").exists()
    ewe = EWE.from_config({"model": {"name": str(tmp_path / "tiny")}, "memory": {"unit_tokens": 24},
                           "retrieval": {"source": None}})
    assert ewe.load_report.from_cache and ewe.model.config._attn_implementation == "ewe"
    r = ewe.generate("Paris?", passages=[PASSAGE], max_new_tokens=3)
    assert r.stats["memory_units"] == 1 and len(r.token_ids) <= 3


def test_fact_checking_without_a_datastore_is_a_clear_error_not_silent(ewe):
    from ewe import EWE

    cfg = EWEConfig.build(ewe.config.model_dump(), **{"retrieval.source": None,
                                                       "controller.verify_trigger": "interval"})
    bare = EWE(ewe.model, ewe.tokenizer, cfg)
    with pytest.raises(ConfigError, match="retrieval.source is null"):
        bare.generate("Paris?", max_new_tokens=4)
    with pytest.raises(ConfigError, match="needs evidence"):
        bare.check("Paris is the capital of France.")
    check = bare.check("Paris is the capital of France.", evidence=["Paris is the capital and largest city of France."])
    assert check.claims and not check.errors
