"""`ewe bench refresh` on the tiny model: the report's shape, and that unchanged units cost no forward."""
import pytest

from ewe.memory import WorkingMemory
from ewe.bench.refresh import add_bench_arguments, refresh_bench
from tiny import tiny_ewe


@pytest.fixture(scope="module")
def ewe():
    return tiny_ewe()


def test_report_structure_and_counts(ewe):
    report = refresh_bench(ewe, generated=(16, 32), units=2, repeats=2, sentence_tokens=5)
    assert [r["generated"] for r in report["rows"]] == [16, 32]
    assert report["M"] == 24 and report["units"] == 2
    for row in report["rows"]:
        prompt = report["prompt_tokens"]
        assert row["context_tokens"] == prompt + row["generated"]
        assert row["reprompt_tokens"] > row["context_tokens"] + 3 * 12  # the 3 passages are in its prompt
        assert set(row["ms"]) >= {"refresh", "refresh_encode", "refresh_state", "refresh_step", "unchanged",
                                  "reused", "reprompt", "backtrack_crop", "backtrack", "backtrack_reprefill"}
        assert all(v >= 0 for v in row["ms"].values())
        # the new unit is encoded in one forward; unchanged and reused units run no forward at all
        assert row["encoded"]["refresh_encode"] == 1 and row["forwards"]["refresh_encode"] == 1
        assert row["forwards"]["unchanged"] == 0 and row["encoded"]["unchanged"] == 0
        assert row["forwards"]["reused"] == 0 and row["encoded"]["reused"] == 0
        assert row["forwards"]["refresh_step"] == 1 and row["forwards"]["backtrack"] == 1
        assert row["forwards"]["backtrack_crop"] == 0  # the truncation alone runs no model (secondary figure)
        # equal work: each side of a headline ratio ends with the next token's logits in one forward each
        assert row["forwards"]["reprompt"] == 1 and row["forwards"]["backtrack_reprefill"] == 1
        assert row["reprompt_over_refresh"] > 0 and row["reprefill_over_backtrack"] > 0
        assert row["backtrack_tokens"] == row["context_tokens"] + 1 - 5  # one sentence off the refreshed context
    # both targets are equal-work ratios judged at 512 generated tokens (absent here)
    assert report["targets"] == {}


def test_readding_a_unit_runs_no_model_forward(ewe):
    """Counted directly on the model: a passage in memory, or in the reuse cache, is never encoded again."""
    calls = []
    hook = ewe.model.base_model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        memory = WorkingMemory(ewe.encoder, retrieval_units=2, feedback_units=0)
        memory.add(["The Eiffel Tower is in Paris.", "Marie Curie was a physicist."])
        assert len(calls) == 1
        memory.add(["The Eiffel Tower is in Paris."])  # present in memory
        other = WorkingMemory(ewe.encoder, retrieval_units=2, feedback_units=0)
        other.add(["Marie Curie was a physicist."])  # only in the encoder's reuse cache
        other.state()
        assert len(calls) == 1
    finally:
        hook.remove()


def test_cli_arguments():
    import argparse

    p = argparse.ArgumentParser()
    add_bench_arguments(p)
    args = p.parse_args(["--generated", "8", "16", "--json"])
    assert args.generated == [8, 16] and args.json == "-" and args.units == 4 and args.repeats == 5
