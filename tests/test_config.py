"""The configuration as a union per method: the shared sections, and only the chosen method's own."""
from pathlib import Path

import pytest

from ewe.config import ConfigError, EWEConfig
from ewe.methods.registry import BUILT_IN, method_class

CONFIGS = sorted((Path(__file__).parent.parent / "configs").glob("*.yaml"))
METHOD_SECTIONS = {m: method_class(m).section for m in BUILT_IN}  # each method's module names its section
SECTIONS = sorted(set(METHOD_SECTIONS.values()))


def needs(method: str) -> dict:
    return {"retrieval": {"source": "embedded"}} if method != "ewe" else {}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_holds_its_method_section_and_no_other(path):
    cfg = EWEConfig.from_yaml(path)
    dumped = cfg.model_dump(mode="json")
    own = METHOD_SECTIONS[cfg.method]
    assert [s for s in SECTIONS if s in dumped] == [own]
    assert cfg.method_section is getattr(cfg, own) is not None
    assert EWEConfig.model_validate(dumped) == cfg  # what a run saves reads back the same


@pytest.mark.parametrize("method", list(METHOD_SECTIONS))
def test_the_chosen_section_takes_its_defaults_and_overrides(method):
    own = METHOD_SECTIONS[method]
    cfg = EWEConfig.build({"method": method, **needs(method)})
    assert getattr(cfg, own) == type(getattr(cfg, own))()
    assert all(getattr(cfg, s, None) is None and s not in cfg.model_dump() for s in SECTIONS if s != own)
    key = {"controller": "max_retries", "cove": "max_questions", "vr": "sentence_tokens", "a2r": "max_iterations",
           "prefixnli": "max_candidates"}[own]
    cfg = EWEConfig.build({"method": method, **needs(method)}, **{f"{own}.{key}": 3})
    assert getattr(cfg.method_section, key) == 3


@pytest.mark.parametrize("method, stray", [(m, s) for m in METHOD_SECTIONS for s in SECTIONS if s != METHOD_SECTIONS[m]])
def test_another_methods_section_is_refused_by_name(method, stray):
    with pytest.raises(ConfigError, match=f"method '{method}' reads only its own section "
                                          f"'{METHOD_SECTIONS[method]}': '{stray}' is for method"):
        EWEConfig.build({"method": method, **needs(method), stray: {}})


def test_an_empty_other_section_given_as_null_is_absent():
    cfg = EWEConfig.build({"method": "cove", "controller": None})
    assert getattr(cfg, "controller", None) is None and "controller" not in cfg.model_dump()


def test_switching_the_method_of_a_built_config_is_refused():
    cfg = EWEConfig()
    with pytest.raises(ValueError, match="reads only its own section 'cove'"):
        cfg.method = "cove"  # its controller section stays; build a new configuration instead


def test_pauses_and_self_checks_follow_the_method():
    assert not EWEConfig().pauses and not EWEConfig().self_checks
    checked = EWEConfig.build({}, **{"controller.verify_trigger": "interval"})
    assert checked.pauses and checked.self_checks
    assert EWEConfig.build({}, **{"controller.retrieval_trigger": "interval"}).pauses
    assert not EWEConfig.build({}, **{"controller.retrieval_trigger": "interval"}).self_checks
    for method in ("streaming-vr", "full-vr", "a2r"):
        cfg = EWEConfig.build({"method": method, **needs(method)})
        assert cfg.self_checks and not cfg.pauses
    assert not EWEConfig.build({"method": "cove"}).self_checks


def test_a_saved_config_from_before_the_union_is_read_without_the_unused_sections():
    old = EWEConfig().model_dump(mode="json")
    old.update(cove={"top_k": 5}, vr={}, a2r={"max_iterations": 3})  # as every run before saved it
    with pytest.raises(Exception, match="reads only its own section"):
        EWEConfig.model_validate(old)
    assert EWEConfig.model_validate(EWEConfig.upgrade_saved(old)) == EWEConfig()


def test_cli_choices_are_read_from_the_types():
    from typing import get_args

    from ewe.cli import _choices
    from ewe.methods.ewe import Trigger

    assert _choices("controller", "verify_trigger") == list(get_args(Trigger))
    assert _choices("model", "dtype") == ["float32", "bfloat16", "float16"]
    assert _choices("model", "attention_impl") == ["auto", "reference", "fused", "extension", "flash"]


def test_eval_overrides_reach_only_the_methods_that_read_them():
    from ewe.eval.harness import method_configs

    configs = method_configs(["ewe", "cove", "ra"], {"controller.max_retries": 0, "cove.max_questions": 2,
                                                     "decoding.max_new_tokens": 12})
    assert configs["ewe"].controller.max_retries == 0 and configs["ra"].controller.max_retries == 0
    assert configs["cove"].cove.max_questions == 2
    assert {c.decoding.max_new_tokens for c in configs.values()} == {12}
    with pytest.raises(ConfigError, match="a2r.max_iterations: no method of this evaluation .* has that section"):
        method_configs(["ewe", "cove"], {"a2r.max_iterations": 1})


def test_a_method_refuses_another_methods_configuration():
    from ewe.methods.registry import method_class
    from ewe.runtime import Runtime

    with pytest.raises(ValueError, match="method 'cove' was given the configuration of method 'ewe'"):
        method_class("cove")(Runtime(EWEConfig()))


# -- a method registered outside ewe, chosen by its configuration ---------------------------------


def _register_shouting_method():
    """A method of a user's own: plain decoding, its answer repeated `options.times` times."""
    import dataclasses

    from pydantic import BaseModel, ConfigDict, Field

    from ewe.methods.registry import Method, register

    class ShoutingOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        times: int = Field(1, ge=1)

    @register
    class Shouting(Method):
        name = "test-shouting"
        Options = ShoutingOptions

        def run(self, prompt, dec, passages=None):
            [result] = self.runtime.generate_plain([prompt], [passages or []], dec)
            return dataclasses.replace(result, text=" ".join([result.text] * self.options.times))

    return Shouting


def test_a_registered_method_is_chosen_by_the_configuration_and_reads_its_options():
    from tiny import tiny_ewe

    _register_shouting_method()
    base = {"memory": {"unit_tokens": 24}, "retrieval": {"source": None}}
    cfg = EWEConfig.build({**base, "method": "test-shouting", "options": {"times": 3}})
    assert cfg.method_section.times == 3 and cfg.options is cfg.method_section
    assert "controller" not in cfg.model_dump() and cfg.model_dump()["options"] == {"times": 3}
    once = tiny_ewe(EWEConfig.build({**base, "method": "test-shouting"})).generate("hi", max_new_tokens=4)
    thrice = tiny_ewe(cfg).generate("hi", max_new_tokens=4)
    assert once.text and thrice.text == " ".join([once.text] * 3)
    assert EWEConfig.build(cfg.model_dump()) == cfg  # saved and read back (a run's .config.json)

    with pytest.raises(ConfigError, match=r"options\.times: Input should be greater than or equal to 1 \(got 0\)"):
        EWEConfig.build({**base, "method": "test-shouting", "options": {"times": 0}})
    with pytest.raises(ConfigError, match=r"options\.loud: Extra inputs are not permitted"):
        EWEConfig.build({**base, "method": "test-shouting", "options": {"loud": True}})
    with pytest.raises(ConfigError, match="method 'test-shouting' reads only its own section 'options': "
                                          "'controller' is for method 'ewe'"):
        EWEConfig.build({**base, "method": "test-shouting", "controller": {}})
    with pytest.raises(ConfigError, match="method 'ewe' reads only its own section 'controller': 'options' is for "
                                          "methods registered outside ewe"):
        EWEConfig.build({**base, "options": {"times": 2}})
    with pytest.raises(ConfigError, match=r"method: not a registered method \(methods: .*test-shouting"):
        EWEConfig.build({"method": "test-whispering"})
    with pytest.raises(ConfigError, match=r"^invalid configuration: method: not a registered method"):
        EWEConfig.build({"method": "cov", "cove": {}})  # the misspelt name is the error, not cove's section


def test_a_method_an_installed_package_declares_is_found_by_its_entry_point(monkeypatch, tmp_path):
    """`ewe run --config` can name a method from a pip-installed package: no import by hand."""
    import importlib.metadata
    import sys

    (tmp_path / "ewe_test_plugin.py").write_text(
        "from ewe.methods.registry import Method\n"
        "class Plugged(Method):\n"
        "    name = 'test-plugged'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    declared = [importlib.metadata.EntryPoint("test-plugged", "ewe_test_plugin:Plugged", "ewe.methods"),
                importlib.metadata.EntryPoint("test-misnamed", "ewe_test_plugin:Plugged", "ewe.methods")]
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [ep for ep in declared if ep.group == group])
    assert "ewe_test_plugin" not in sys.modules
    assert EWEConfig.build({"method": "test-plugged"}).method == "test-plugged"
    assert sys.modules["ewe_test_plugin"].Plugged.read_options({}) is None
    with pytest.raises(ConfigError, match=r"options: method 'test-plugged' takes none \(got x\)"):
        EWEConfig.build({"method": "test-plugged", "options": {"x": 1}})
    with pytest.raises(ConfigError, match="entry point 'test-misnamed' = 'ewe_test_plugin:Plugged' names a class "
                                          "whose name is 'test-plugged'"):
        EWEConfig.build({"method": "test-misnamed"})


def test_an_evaluation_sets_a_registered_methods_options_and_no_others(tmp_path):
    from ewe.eval.harness import method_configs

    _register_shouting_method()
    shouting = tmp_path / "shouting.yaml"
    shouting.write_text("method: test-shouting\noptions:\n  times: 2\n", encoding="utf-8")
    configs = method_configs([str(shouting), "ewe"], {"options.times": 5, "controller.max_retries": 0})
    assert configs["shouting"].options.times == 5 and configs["ewe"].controller.max_retries == 0
    assert "options" not in configs["ewe"].model_dump()
    with pytest.raises(ConfigError, match="options.times: no method of this evaluation .* has that section"):
        method_configs(["ewe"], {"options.times": 5})
