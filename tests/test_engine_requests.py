"""The Engine clients drive (ewe/engine/engine.py): requests added, stepped and aborted answer as
each prompt does alone, under EWE's controller on the real patched attention (scripted model)."""
from __future__ import annotations

import pytest
from test_batch_rows import controlled

from ewe.engine import Engine, Request, RequestAborted, Status
from ewe.methods.registry import method_class

PROMPTS = ["Tell me a bio of Marie Curie.", "Tell me a bio of someone famous.", "Tell me a bio of Albert Einstein.",
           "Tell me a bio of Marie Curie.", "Tell me a bio of someone famous."]
CANDIDATES = {"rewrite_candidates": 3, "max_retries": 1}


def engine_of(ewe, capacity: int) -> Engine:
    return Engine(method_class(ewe.config.method)(ewe.runtime), capacity, ewe.runtime.decoding())


def requests(prompts, outcomes: dict) -> list[Request]:
    return [Request(p, on_done=lambda r, i=i: outcomes.__setitem__(i, r),
                    on_error=lambda e, i=i: outcomes.__setitem__(i, e)) for i, p in enumerate(prompts)]


def same(a, b) -> None:
    assert b.text == a.text and b.token_ids == a.token_ids and b.finish_reason == a.finish_reason
    assert [(e["type"], e["step"]) for e in b.trace] == [(e["type"], e["step"]) for e in a.trace]


@pytest.mark.parametrize("controller", [{}, CANDIDATES])
@pytest.mark.parametrize("capacity", [2, 5])
def test_requests_added_to_the_engine_answer_as_one_by_one(controller, capacity):
    alone = controlled(False, **controller).generate(PROMPTS)
    engine, outcomes = engine_of(controlled(True, **controller), capacity), {}
    for request in requests(PROMPTS, outcomes):
        engine.add_request(request)
    engine.run()
    assert sorted(outcomes) == list(range(len(PROMPTS)))
    for i, a in enumerate(alone):
        same(a, outcomes[i])
    assert not engine.has_unfinished() and engine.loop is None and engine.step() is False


def test_a_request_added_between_steps_joins_and_answers_as_alone():
    alone = controlled(False, **CANDIDATES).generate(PROMPTS[:3])
    engine, outcomes = engine_of(controlled(True, **CANDIDATES), 3), {}
    first, second, third = requests(PROMPTS[:3], outcomes)
    engine.add_request(first)
    engine.add_request(second)
    for _ in range(5):
        assert engine.step()
    assert first.status is Status.RUNNING and not outcomes
    engine.add_request(third)
    engine.run()
    for i, a in enumerate(alone):
        same(a, outcomes[i])
    assert [r.status for r in (first, second, third)] == [Status.FINISHED] * 3


def started(n: int, capacity: int, steps: int):
    """The first n prompts answered alone, and added to an engine of `capacity` rows stepped `steps` times."""
    alone = controlled(False).generate(PROMPTS[:n])
    engine, outcomes = engine_of(controlled(True), capacity), {}
    reqs = requests(PROMPTS[:n], outcomes)
    for request in reqs:
        engine.add_request(request)
    for _ in range(steps):
        engine.step()
    return alone, engine, outcomes, reqs


def test_a_waiting_request_aborted_never_starts_and_the_others_answer_as_alone():
    alone, engine, outcomes, reqs = started(3, capacity=1, steps=1)
    assert [r.status for r in reqs] == [Status.RUNNING, Status.WAITING, Status.WAITING]
    assert engine.abort(reqs[1]) and reqs[1].status is Status.ABORTED
    assert isinstance(outcomes[1], RequestAborted)
    engine.run()
    same(alone[0], outcomes[0])
    same(alone[2], outcomes[2])
    assert engine.abort(reqs[1]) is False and engine.abort(reqs[0]) is False  # already ended


def test_a_running_request_aborted_ends_with_what_it_wrote_and_the_others_go_on():
    alone, engine, outcomes, reqs = started(2, capacity=2, steps=6)
    assert engine.abort(reqs[0]) and reqs[0].status is Status.ABORTING
    engine.run()
    cut = outcomes[0]
    assert reqs[0].status is Status.ABORTED and cut.finish_reason == "abort"
    assert 0 < len(cut.token_ids) < len(alone[0].token_ids)
    assert cut.token_ids == alone[0].token_ids[:len(cut.token_ids)]
    same(alone[1], outcomes[1])


def test_a_request_is_added_once_and_an_engine_needs_a_row():
    engine = engine_of(controlled(True), 1)
    request = Request(PROMPTS[0], on_done=lambda r: None)
    engine.add_request(request)
    with pytest.raises(ValueError, match="already waiting"):
        engine.add_request(request)
    with pytest.raises(ValueError, match="capacity=0"):
        Engine(engine.method, 0, engine.dec)
    assert engine_of(controlled(True), 1).step() is False  # nothing added: nothing to do


def test_requests_sampling_with_their_own_temperature_and_seed_share_a_batch_and_draw_as_alone():
    """Each controlled row samples with its own request's settings (ControlledRun.sampler), so one
    batch holds a greedy request and two sampled ones with different seeds and temperatures, and
    each writes what it writes alone; the loop's own sampler (the first request's) decides nothing."""
    from scripted import ScriptedChecker
    from tiny import tiny_model, tiny_tokenizer

    from ewe import EWE
    from ewe.config import EWEConfig

    def ewe_of(batch_rows: bool) -> EWE:
        cfg = EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None},
                               "decoding": {"max_new_tokens": 24},  # random text: no rule drops it
                               "checker": {"reject_degenerate": False, "reject_off_subject": False,
                                           "reject_repeats": False},
                               "controller": {"verify_trigger": "interval", "verify_interval": 4,
                                              "batch_rows": batch_rows}})
        return EWE(tiny_model(0), tiny_tokenizer(), cfg, fact_checker=ScriptedChecker(false=set()))

    settings = [dict(temperature=1.0, seed=7), dict(temperature=0.0), dict(temperature=0.7, top_p=0.9, seed=11)]
    alone = [ewe_of(False).generate(PROMPTS[i], **s) for i, s in enumerate(settings)]
    assert len({tuple(a.token_ids) for a in alone}) == 3
    ewe = ewe_of(True)
    engine, outcomes = engine_of(ewe, 3), {}
    for i, s in enumerate(settings):
        engine.add_request(Request(PROMPTS[i], decoding=ewe._decoding(**s),
                                   on_done=lambda r, i=i: outcomes.__setitem__(i, r)))
    engine.run()
    for i, a in enumerate(alone):
        assert outcomes[i].token_ids == a.token_ids, settings[i]
        assert outcomes[i].logprobs == pytest.approx(a.logprobs, abs=1e-4)
