"""Every shipped method's greedy output and trace on a fixed prompt set equals the recorded
one (tests/data/golden.jsonl, written by `python tests/golden.py --record`): a refactor of the
decoding loop, the runtime or the config must not change what a user gets."""
import json

import pytest

import golden


@pytest.mark.slow
def test_every_method_reproduces_its_recorded_output_and_trace():
    expected = [json.loads(line) for line in golden.GOLDEN.read_text(encoding="utf-8").splitlines()]
    assert {r["method"] for r in expected} == set(golden.METHODS)
    got = golden.run_all()
    assert golden.differences(expected, got) == []


def test_the_comparison_sees_a_changed_token_and_ignores_timings():
    record = {"method": "ewe", "prompt": "p", "text": "a", "token_ids": [1, 2], "trace": [{"type": "x", "t": 1.0}],
              "stats": {"decode_s": 0.5, "checks": 1}}
    timed_again = golden._untimed({**record, "trace": [{"type": "x", "t": 9.0}], "stats": {"decode_s": 7, "checks": 1}})
    assert golden.differences([golden._untimed(record)], [timed_again]) == []
    changed = golden._untimed({**record, "token_ids": [1, 3]})
    assert golden.differences([golden._untimed(record)], [changed]) == ["ewe / 'p': token_ids differs"]
    moved = golden._untimed({**record, "trace": [{"type": "x", "entropy": 0.572}]})
    base = golden._untimed({**record, "trace": [{"type": "x", "entropy": 0.574}]})
    assert golden.differences([base], [moved]) == []  # another CPU's kernels
    assert golden.same("P(contradicted) 0.41; about Burj Khalifa", "P(contradicted) 0.42; about Burj Khalifa")
    assert not golden.same("P(contradicted) 0.41; about Burj Khalifa", "P(contradicted) 0.44; about Burj Khalifa")
    assert not golden.same("P 0.41; about Burj Khalifa", "P 0.41; about Eiffel Tower")
    assert golden.same(0.567, 0.574)  # a judge's bfloat16 probability, on two CPUs (golden.py's FLOAT_TOLERANCE)
    far = golden._untimed({**record, "trace": [{"type": "x", "entropy": 0.59}]})
    assert golden.differences([base], [far]) == ["ewe / 'p': trace differs"]
    nan = golden._untimed({**record, "trace": [{"type": "x", "entropy": float("nan")}]})
    assert "ewe / 'p': NaN in trace" in golden.differences([golden._untimed(record)], [nan])
