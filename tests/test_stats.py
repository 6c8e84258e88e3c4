"""Typed stats (ewe/stats.py): each method's fields in one place, read as a mapping, flat in JSON."""
import json
from dataclasses import fields

import pytest
from scripted import ScriptedChecker, text_script
from test_controller import B_WRONG, PROMPT, corrected_by_feedback, make

from ewe.result import GenerationResult
from ewe.stats import (A2RStats, CoVeStats, ControlledStats, PlainStats, Timings, VerifyRefineStats, decode_step_s,
                       in_decode_steps, time_parts)

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


def test_the_time_parts_add_up_to_the_answers_wall_time():
    """The breakdown's parts (prefill, decode, backtracks, encoding, retrieval, checks, repeats,
    candidate rounds, the controller's own bookkeeping) cover total_s, and the checks' split
    (claim extraction, evidence search, judge; the candidates' share) stays inside check_s."""
    r = make(text_script(corrected_by_feedback()), ScriptedChecker(false={B_WRONG})).generate(PROMPT)
    parts = time_parts(r.stats)
    assert list(parts) == ["prefill", "decode", "backtracks", "memory encoding", "retrieval", "checks", "repeats",
                           "candidate rounds", "other"]
    assert all(v >= 0 for k, v in parts.items() if k != "other")
    assert sum(parts.values()) == pytest.approx(r.stats["total_s"], abs=2e-3)
    assert r.stats["decode_s"] > 0 and r.stats["backtrack_s"] > 0  # it backtracked once
    s = r.stats
    assert s["check_extract_s"] + s["check_search_s"] + s["check_judge_s"] <= s["check_s"] + 1e-3
    assert s["check_candidates_s"] <= s["check_s"]
    step = decode_step_s(s)
    assert step == pytest.approx(s["decode_s"] / s["decoded_tokens"])
    assert in_decode_steps({"x": 2 * step}, step) == {"x": pytest.approx(2.0)}


def test_plain_decoding_breaks_its_time_down_and_other_methods_say_they_do_not():
    parts = time_parts(PlainStats(**PLAIN))
    assert parts == {"retrieval + encoding": 0.1, "prefill": 0.2, "decode": 0.3}
    assert sum(parts.values()) == pytest.approx(PLAIN["total_s"])
    assert time_parts({"method": "cove", "total_s": 1.0}) is None


def test_timings_add_to_named_parts_and_refuse_a_misspelt_one():
    t = Timings(("retrieve", "check"))
    t.add("retrieve", 0.25)
    with t.timed("check"):
        pass
    t.add("check", 0.5)
    assert t["retrieve"] == 0.25 and 0.5 <= t["check"] < 1.0
    assert list(t.as_fields()) == ["retrieve_s", "check_s"] and t.as_fields()["retrieve_s"] == 0.25
    with pytest.raises(KeyError, match="'retreive'.*retrieve, check"):
        t.add("retreive", 0.1)
    with pytest.raises(RuntimeError):
        with t.timed("retrieve"):
            raise RuntimeError("a failed part adds nothing")
    assert t["retrieve"] == 0.25
