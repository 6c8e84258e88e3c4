"""Typed stats (ewe/stats.py): each method's fields in one place, read as a mapping, flat in JSON."""
import json
from dataclasses import fields

import pytest
from scripted import ScriptedChecker, text_script
from test_controller import B_WRONG, PROMPT, corrected_by_feedback, make

from ewe.result import GenerationResult
from ewe.stats import A2RStats, CoVeStats, ControlledStats, PlainStats, VerifyRefineStats

PLAIN = dict(prompt_tokens=5, new_tokens=3, memory_units=1, memory_bytes=64, retrieve_encode_s=0.1,
             prefill_s=0.2, decode_s=0.3, total_s=0.6)


def test_stats_read_as_a_mapping_in_field_order():
    s = PlainStats(**PLAIN)
    assert list(s) == list(PLAIN) and len(s) == len(PLAIN)
    assert s["new_tokens"] == 3 and s.get("backtracks", 0) == 0 and "total_s" in s and "checks" not in s
    assert s == PLAIN and dict(s) == PLAIN  # equal to the dict it replaces
    with pytest.raises(KeyError):
        s["backtracks"]


def test_a_result_writes_its_stats_as_one_flat_object():
    r = GenerationResult(prompt="p", text="t", token_ids=[1], logprobs=[-0.1], finish_reason="eos",
                         stats=PlainStats(**PLAIN))
    line = json.dumps(r.to_dict())
    assert json.loads(line)["stats"] == PLAIN and list(json.loads(line)["stats"]) == list(PLAIN)


def test_a_missing_or_unknown_field_is_an_error():
    with pytest.raises(TypeError):
        PlainStats(**{k: v for k, v in PLAIN.items() if k != "total_s"})
    with pytest.raises(TypeError):
        PlainStats(**PLAIN, backtracks=1)


@pytest.mark.parametrize("cls, stages", [(VerifyRefineStats, "ewe.methods.verify_refine"),
                                         (CoVeStats, "ewe.methods.cove"), (A2RStats, "ewe.methods.a2r")])
def test_every_stage_of_a_method_has_its_seconds_field(cls, stages):
    import importlib

    names = {f.name for f in fields(cls)}
    assert {f"{s}_s" for s in importlib.import_module(stages).STAGES} <= names


def test_the_controller_reports_controlled_stats():
    r = make(text_script(corrected_by_feedback()), ScriptedChecker(false={B_WRONG})).generate(PROMPT)
    assert isinstance(r.stats, ControlledStats)
    assert r.stats["backtracks"] == 1 and r.stats["checks"] == r.stats.checks >= 3
    assert r.to_dict()["stats"]["failed_checks"] == 1
