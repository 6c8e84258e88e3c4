"""RecordLog: the one appender of every command that writes records (run, generate, check, eval)."""
import json

import pytest

from ewe.errors import RunError
from ewe.record_log import RecordLog, exclusive


def test_appends_flushed_records_and_resumes_by_id(tmp_path):
    path = tmp_path / "out.jsonl"
    with RecordLog(path) as log:
        assert log.done == set()
        log.append({"id": 1, "x": "a"})
        assert json.loads(path.read_text().splitlines()[0]) == {"id": 1, "x": "a"}  # on disk before the end
        assert log.done == {"1"}
    with RecordLog(path) as log:
        assert log.done == {"1"}
        log.append({"id": "2"})
        assert [r["id"] for r in log.records()] == [1, "2"]


def test_a_record_needs_an_id(tmp_path):
    with RecordLog(tmp_path / "out.jsonl") as log, pytest.raises(ValueError, match='needs an "id"'):
        log.append({"text": "no key"})


def test_a_second_writer_is_refused_and_the_first_keeps_its_lock(tmp_path):
    path = tmp_path / "out.jsonl"
    with RecordLog(path) as log:
        with pytest.raises(RunError, match="another ewe run is writing"):
            RecordLog(path).__enter__()
        log.append({"id": "a"})
    with RecordLog(path) as again:  # released at the end
        assert again.done == {"a"}


def test_a_damaged_file_is_refused_and_the_lock_released(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text('{"id": "a"}\nnot json\n{"id": "b"}\n')
    with pytest.raises(RunError, match="out.jsonl:2: not a result line"):
        RecordLog(path).__enter__()
    with exclusive(path):  # nobody holds it
        pass
    assert path.read_text() == '{"id": "a"}\nnot json\n{"id": "b"}\n'  # nothing already written is lost


def test_a_torn_last_line_is_cut_and_a_complete_one_kept(tmp_path):
    torn, complete = tmp_path / "torn.jsonl", tmp_path / "complete.jsonl"
    torn.write_text('{"id": "a"}\n{"id": "b", "te')
    complete.write_text('{"id": "a"}\n{"id": "b"}')
    with RecordLog(torn) as log:
        assert log.done == {"a"}
        log.append({"id": "b"})
    with RecordLog(complete) as log:
        assert log.done == {"a", "b"}
    assert torn.read_text() == complete.read_text() == '{"id": "a"}\n{"id": "b"}\n'


def test_the_eval_scorer_writes_its_details_through_the_lock(tmp_path):
    from test_eval import LookupBackend, checking_runtime

    from ewe.eval.scorer import Scorer

    results, details = tmp_path / "m.jsonl", tmp_path / "d.jsonl"
    results.write_text(json.dumps({"id": "a", "prompt": "Tell me a bio of Marie Curie.", "text": "Hi."}) + "\n")
    scorer = Scorer(checking_runtime(LookupBackend()), use_articles=False)
    with exclusive(details), pytest.raises(RunError, match="another ewe run is writing"):
        scorer.check_file(results, details, "m", "toy", progress=False)
    assert [r["id"] for r in scorer.check_file(results, details, "m", "toy", progress=False)] == ["a"]
