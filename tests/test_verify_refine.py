"""Streaming-VR and Full-VR (ewe/methods/verify_refine.py), driven by a scripted tiny model
(generator and refiner) and a scripted fact-checker."""
from __future__ import annotations

import json

import pytest
from scripted import ScriptedChecker, scripted_model
from test_cove import FakeDatastore
from tiny import tiny_tokenizer

from ewe import EWE
from ewe.config import ConfigError, EWEConfig
from ewe.controller import render
from ewe.methods import vr_prompts as P
from ewe.eval.metric import vr_efficiency as efficiency
from ewe.retrieval.in_prompt import AFTER_LABEL

PROMPT = "Tell me a bio of Marie Curie."
S1, R1 = "Marie Curie was born in Paris.", "Marie Curie was born in Warsaw."
S2, S2_AFTER_ERROR, S3 = "She won two Nobel prizes.", "She was a French painter.", "She died in 1934."
FULL_REFINED = "Marie Curie was born in Warsaw. She was a physicist."


def ids_of(text):
    return tiny_tokenizer()(text, add_special_tokens=False)["input_ids"]


class RecordingChecker(ScriptedChecker):
    """ScriptedChecker that also records the context each sentence was checked against."""

    def __init__(self, false):
        super().__init__(set(false))
        self.contexts: list[tuple[str, str]] = []

    def check_sentence(self, sentence, context=None, prompt=None, evidence=None):
        self.contexts.append((sentence, context))
        return super().check_sentence(sentence, context, prompt, evidence)


class Script:
    """The generator writes the first of `answers` whose tokens extend what it has written (so
    after a refined sentence it goes on with the answer that starts with it); the refiner
    answers from `refinements` (sentence -> reply) and `full_reply`. Records every prompt."""

    def __init__(self, answers, refinements=None, full_reply=FULL_REFINED):
        self.answers, self.refinements, self.full_reply = answers, refinements or {}, full_reply
        self.prompts: list[tuple[str, str]] = []  # (kind, prompt text)

    def reply(self, prompt: str, generated: list[int]) -> str | None:
        if "Rewrite the last sentence" in prompt:
            at = prompt.rfind("Last sentence: ") + len("Last sentence: ")
            return self.refinements.get(prompt[at:prompt.index("\n", at)].strip(), "")
        if "Rewrite the answer" in prompt:
            return self.full_reply
        return next((a for a in self.answers if ids_of(a)[: len(generated)] == generated), None)

    def model(self):
        tok = tiny_tokenizer()
        holder = {}

        def script(generated, units):
            m = holder["model"]
            prompt = tok.decode([m.seq[p] for p in sorted(m.seq) if p <= m.prompt_end])
            if not generated:
                kind = "sentence" if "Rewrite the last sentence" in prompt else (
                    "answer" if "Rewrite the answer" in prompt else "generate")
                self.prompts.append((kind, prompt))
            text = self.reply(prompt, generated)
            ids = ids_of(text) if text is not None else []
            n = len(generated)
            if text is None or generated != ids[:n] or n >= len(ids):
                return tok.eos_token_id, 0.9
            return ids[n], 0.9

        model = scripted_model(script)
        model.config.max_position_embeddings = 4096  # refine prompts are long in the tiny tokenizer
        holder["model"] = model
        return model

    def of(self, kind):
        return [p for k, p in self.prompts if k == kind]


def make(script, false=(S1,), method="streaming-vr", datastore=None, max_new_tokens=120, **vr):
    cfg = EWEConfig.build({
        "method": method,
        "retrieval": {"source": "fake", "top_k": 2, "placement": "prompt"},
        "decoding": {"max_new_tokens": max_new_tokens},
        "vr": vr,
    })
    checker = RecordingChecker(false)
    ewe = EWE(script.model(), tiny_tokenizer(), cfg, datastore=datastore or FakeDatastore(), fact_checker=checker)
    return ewe, checker


def events(r, kind):
    return [e for e in r.trace if e["type"] == kind]


# -- Streaming-VR, live ------------------------------------------------------------------------


def test_live_refines_the_failed_sentence_and_generates_on_from_the_corrected_prefix():
    # after the wrong S1 the generator would go on with S2_AFTER_ERROR; after R1, with S2
    script = Script([f"{S1} {S2_AFTER_ERROR} {S3}", f"{R1} {S2} {S3}"], {S1: R1})
    ewe, checker = make(script)
    r = ewe.generate(PROMPT)
    assert r.text == f"{R1} {S2} {S3}"
    assert [s for s, _ in checker.contexts] == [S1, S2, S3]  # the refined sentence is not checked again
    assert S2_AFTER_ERROR not in checker.calls  # S1's cascade was never written past its first token
    assert checker.contexts[1][1].strip() == R1  # each sentence is checked against the kept answer
    assert r.stats["refine_tokens"] == len(ids_of(R1))
    assert (r.stats["checks"], r.stats["failed_checks"], r.stats["refined"]) == (3, 1, 1)
    assert r.finish_reason == "eos" and r.token_ids == ids_of(r.text)
    assert len(r.logprobs) == len(r.token_ids) and all(lp <= 0 for lp in r.logprobs)
    [refine] = events(r, "vr_refine")
    assert (refine["scope"], refine["sentence"], refine["refined"], refine["kept_original"]) == ("sentence", S1, R1, False)
    [backtrack] = events(r, "backtrack")
    assert backtrack["start_token"] == 0 and backtrack["removed_text"].startswith(S1)
    assert [(s["text"], s["needs_rewrite"], s["refined"]) for s in r.sentences] == [
        (R1, True, True), (S2, False, False), (S3, False, False)]


def test_refiner_sees_the_generation_prompt_the_kept_prefix_and_the_sentence():
    script = Script([f"{S2} {S1} {S3}", f"{S2} {R1} {S3}"], {S1: R1})
    ewe, _ = make(script)
    r = ewe.generate(PROMPT)
    assert r.text == f"{S2} {R1} {S3}"
    [prompt] = script.of("sentence")
    assert f"Question: {PROMPT}" in prompt and f"Answer so far: {S2}\n" in prompt and f"Last sentence: {S1}\n" in prompt
    assert "Facts you may use" not in prompt  # as in the paper: no knowledge beyond the prompt


def test_refiner_evidence_puts_the_checkers_evidence_in_the_refine_prompt():
    script = Script([f"{S1} {S2}", f"{R1} {S2}"], {S1: R1})
    ewe, _ = make(script, refiner_evidence=True)
    ewe.generate(PROMPT)
    [prompt] = script.of("sentence")
    assert f"Facts you may use:\n- Evidence against: {S1}" in prompt


def test_a_refiner_reply_without_a_sentence_keeps_the_original_and_does_not_loop():
    script = Script([f"{S1} {S2}"], {S1: "Corrected sentence:"})
    ewe, checker = make(script)
    r = ewe.generate(PROMPT)
    assert r.text == f"{S1} {S2}"
    assert checker.calls == [S1, S2]
    [refine] = events(r, "vr_refine")
    assert refine["kept_original"] and r.stats["refined"] == 0
    assert "original kept" in render(r.trace)


def test_a_failed_last_sentence_is_refined_and_the_answer_ends_there():
    script = Script([f"{S2} {S1}", f"{S2} {R1}"], {S1: R1})
    ewe, _ = make(script)
    r = ewe.generate(PROMPT)
    assert r.text == f"{S2} {R1}" and r.finish_reason == "eos"
    assert [(s["text"], s["complete"]) for s in r.sentences] == [(S2, True), (R1, True)]


def test_a_sentence_cut_off_by_the_token_budget_is_not_checked():
    script = Script([f"{S2} {S3}"])
    ewe, checker = make(script, max_new_tokens=len(ids_of(S2)) + 3)
    r = ewe.generate(PROMPT)
    assert r.finish_reason == "length" and checker.calls == [S2]
    assert r.sentences[-1]["complete"] is False and r.sentences[-1]["checked"] is False


@pytest.mark.parametrize("mode", ["live", "offline"])
def test_a_cut_off_last_sentence_that_repeats_the_answer_is_dropped(mode):
    """Unchecked, but a tail whose claims the answer already holds is cut from it (traced)."""
    script = Script([f"{S2} {S3} {S2} {S1}"])
    ewe, checker = make(script, false=(), mode=mode, max_new_tokens=len(ids_of(f"{S2} {S3} {S2[:-1]}")))
    r = ewe.generate(PROMPT)
    assert r.finish_reason == "length" and r.text.strip() == f"{S2} {S3}" and checker.calls == [S2, S3]
    [drop] = events(r, "repeats_dropped")
    assert drop["dropped"][0]["sentence"] == S2[:-1] and drop["dropped"][0]["cut_off"]


@pytest.mark.parametrize("mode", ["live", "offline"])
def test_a_refinement_that_repeats_the_answer_ends_it_there(mode):
    """The refiner restating an earlier sentence is padding: not checked again, but the answer
    ends before it (traced "repeats", refined)."""
    script = Script([f"{S2} {S1} {S3}"], {S1: S2})
    ewe, checker = make(script, mode=mode)
    r = ewe.generate(PROMPT)
    assert r.text.strip() == S2 and checker.calls == [S2, S1]
    [rep] = events(r, "repeats")
    assert rep["refined"] and rep["sentence"] == S2 and rep["repeats"][0]["why"] == "the same sentence"
    assert "repeats (the same sentence)" in render(r.trace)


def test_a_later_sentence_that_repeats_a_refined_one_ends_the_answer():
    """A refined sentence is part of what the answer has said: a passing sentence that repeats it adds nothing."""
    script = Script([f"{S1} {S2} {S3}", f"{R1} {S2} {R1} {S3}"], {S1: R1})
    ewe, checker = make(script)
    r = ewe.generate(PROMPT)
    assert r.text.strip() == f"{R1} {S2}" and checker.calls == [S1, S2, R1]
    [rep] = events(r, "repeats")
    assert rep["sentence"] == R1 and not rep.get("refined")


# -- Streaming-VR, offline (the paper's protocol) ----------------------------------------------


def test_offline_refines_the_finished_answers_sentences_in_order_without_regenerating():
    script = Script([f"{S1} {S2_AFTER_ERROR} {S3}", f"{R1} {S2} {S3}"], {S1: R1})
    ewe, checker = make(script, mode="offline")
    r = ewe.generate(PROMPT)
    assert r.text == f"{R1} {S2_AFTER_ERROR} {S3}"  # later sentences stay as first written
    assert checker.calls == [S1, S2_AFTER_ERROR, S3]
    assert checker.contexts[1][1].strip() == R1  # checked against the refined prefix
    assert r.stats["mode"] == "offline" and r.stats["refine_tokens"] == len(ids_of(R1))
    assert r.token_ids == ids_of(r.text) and r.logprobs == []  # assembled after the fact
    assert [s["original"] for s in r.sentences] == [S1, S2_AFTER_ERROR, S3]


def test_offline_answer_without_failures_is_the_generation_itself():
    script = Script([f"{S2} {S3}"])
    ewe, _ = make(script, false=(), mode="offline")
    r = ewe.generate(PROMPT)
    assert r.text == f"{S2} {S3}" and len(r.logprobs) == len(r.token_ids) > 0
    assert r.stats["refine_tokens"] == 0 and not events(r, "vr_refine")


# -- Full-VR ------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["streaming-vr", "full-vr"])
def test_a_refinement_that_copies_the_prompts_example_keeps_the_original(method):
    """SmolLM2-135M's Full-VR refinement of a Curie bio began with the refine prompt's worked
    example ("Isaac Newton was a French painter."): no refinement, so the original stays."""
    copied = "Isaac Newton was a French painter. He was born in 1703."
    script = Script([f"{S1} {S2}"], {S1: "He was born in 1643 in England."}, full_reply=copied)
    ewe, _ = make(script, method=method)
    r = ewe.generate(PROMPT)
    assert r.text == f"{S1} {S2}"
    [refine] = events(r, "vr_refine")
    assert refine["kept_original"] and r.stats["refined"] == 0
    assert P.copies_example("He was born in 1643 in England.", PROMPT)
    assert not P.copies_example("He was born in 1643 in England.", "Tell me a bio of Isaac Newton.")


def test_full_vr_keeping_its_original_still_drops_the_repeats():
    """A Full-VR objects answer said the same sentence three times; its refinement came back as
    the prompt's example, and the original was returned whole, repeats and all."""
    copied = "Isaac Newton was a French painter. He was born in 1703."
    script = Script([f"{S1} {S2} {S2}"], full_reply=copied)
    ewe, _ = make(script, method="full-vr")
    r = ewe.generate(PROMPT)
    assert r.text.strip() == f"{S1} {S2}" and r.token_ids == ids_of(r.text)
    [refine] = events(r, "vr_refine")
    assert refine["kept_original"]
    [drop] = events(r, "repeats_dropped")
    assert drop["dropped"][0]["sentence"] == S2


def test_full_vr_refines_the_whole_answer_when_any_sentence_fails():
    script = Script([f"{S2} {S1} {S3}"])
    ewe, checker = make(script, method="full-vr")
    r = ewe.generate(PROMPT)
    assert checker.calls == [S2, S1, S3]  # every sentence, each against the original before it
    assert checker.contexts[2][1].strip() == f"{S2} {S1}"
    assert r.text == FULL_REFINED
    assert r.stats["refine_tokens"] == len(ids_of(FULL_REFINED)) and r.stats["mode"] == "full"
    [prompt] = script.of("answer")
    assert f"Answer: {S2} {S1} {S3}\n" in prompt and f"Question: {PROMPT}" in prompt
    [refine] = events(r, "vr_refine")
    assert refine["scope"] == "answer" and "answer refined" in render(r.trace)


def test_full_vr_keeps_an_answer_that_passes():
    script = Script([f"{S2} {S3}"])
    ewe, _ = make(script, false=(), method="full-vr")
    r = ewe.generate(PROMPT)
    assert r.text == f"{S2} {S3}" and r.stats["refine_tokens"] == 0 and not script.of("answer")


def test_efficiency_is_one_minus_the_ratio_of_mean_refinement_tokens():
    assert efficiency([10, 30], [40, 40]) == pytest.approx(0.5)
    assert efficiency([0, 0], [0, 0]) is None  # Full-VR refined nothing: no ratio
    with pytest.raises(ValueError, match="one value per answer"):
        efficiency([], [1])


# -- passages, trace, configuration -------------------------------------------------------------


def test_open_book_gives_retrieved_passages_with_the_prompt_to_generator_and_refiner():
    script = Script([f"{S1} {S2}", f"{R1} {S2}"], {S1: R1})
    store = FakeDatastore()
    ewe, _ = make(script, datastore=store, open_book=True)
    r = ewe.generate(PROMPT)
    assert store.queries == [PROMPT] and [h["title"] for h in r.retrieved] == ["T0", "T1"]
    [gen] = script.of("generate")[:1]
    assert ewe.prompt_with_passages(PROMPT, [f"Passage 0 on {PROMPT}", f"Passage 1 on {PROMPT}"]) in gen
    assert gen.index(PROMPT) < gen.index(f"Passage 0 on {PROMPT}")  # the request first (retrieval.prompt_format)
    [refine] = script.of("sentence")
    assert f"Passage 1 on {PROMPT}" in refine


def test_given_passages_replace_retrieval_and_empty_ones_mean_closed_book():
    script = Script([f"{S2}"])
    store = FakeDatastore()
    ewe, _ = make(script, false=(), datastore=store, open_book=True)
    ewe.generate(PROMPT, passages=["Given passage."])
    ewe.generate(PROMPT, passages=[])
    assert store.queries == []
    gens = script.of("generate")
    assert "Given passage." in gens[0] and AFTER_LABEL in gens[0] and AFTER_LABEL not in gens[1]


def test_result_and_trace_are_json_ready():
    script = Script([f"{S1} {S2}", f"{R1} {S2}"], {S1: R1})
    ewe, _ = make(script)
    r = ewe.generate(PROMPT)
    json.dumps(r.to_dict())
    assert [e["type"] for e in r.trace] == ["check", "vr_refine", "backtrack", "check", "finish"]


def test_prompt_parsers():
    assert P.first_sentence("Corrected sentence: She was born in Warsaw. She was a chemist.") == "She was born in Warsaw."
    assert P.first_sentence("  **Answer:** ") == ""
    assert P.strip_label("Corrected answer: Text.") == "Text."


@pytest.mark.parametrize("data, message", [
    ({"method": "streaming-vr", "controller": {"verify_trigger": "interval"}, "retrieval": {"source": "embedded"}},
     "method 'streaming-vr' reads only its own section 'vr': 'controller' is for method 'ewe'"),
    ({"method": "full-vr", "retrieval": {"source": None}}, "checks against evidence from a datastore"),
    ({"method": "streaming-vr", "vr": {"mode": "later"}, "retrieval": {"source": "embedded"}}, "vr.mode"),
])
def test_configuration_errors(data, message):
    with pytest.raises(ConfigError, match=message):
        EWEConfig.build(data)


@pytest.mark.parametrize("name, method", [("streaming-vr.yaml", "streaming-vr"), ("full-vr.yaml", "full-vr")])
def test_shipped_configs_validate(name, method):
    from pathlib import Path

    cfg = EWEConfig.from_yaml(Path(__file__).parent.parent / "configs" / name)
    assert cfg.method == method and "controller" not in cfg.model_dump() and cfg.retrieval.source == "embedded"
    assert not cfg.vr.refiner_evidence and not cfg.vr.open_book  # the paper's closed-book setting


def test_report_gives_refinement_tokens_and_the_efficiency_of_streaming_over_full(tmp_path):
    from ewe.eval.report import vr_efficiency, write_report

    details = tmp_path / "d.jsonl"
    details.write_text("")
    base = {"dataset": "bio", "n": 2, "K": 5, "precision": 0.5, "recall": 0.5, "f1": 0.5, "claims_per_response": 5,
            "supported_per_response": 2.5, "tokens": 100, "seconds_per_prompt": 1.0, "pauses": 0, "backtracks": 0,
            "checker": "c", "details": str(details)}
    rows = [{**base, "method": "svr", "refine_tokens": 20.0, "vr_method": "streaming-vr"},
            {**base, "method": "fvr", "refine_tokens": 80.0, "vr_method": "full-vr"},
            {**base, "method": "bare", "refine_tokens": None, "vr_method": None}]
    assert vr_efficiency(rows) == pytest.approx(0.75)
    assert vr_efficiency(rows[::2]) is None  # no Full-VR run: no efficiency
    write_report(rows, tmp_path / "report")
    md = (tmp_path / "report" / "results.md").read_text()
    assert "Refine tokens" in md and "Full-VR" in md and "75.0%" in md
    assert "| bare |" in md and md.count("–") >= 1  # no refinement count for other methods


# -- streamed ----------------------------------------------------------------------------------


def test_streaming_vr_streams_its_refinement_as_a_retraction_and_full_vr_its_answer_at_the_end():
    from ewe.serving import Finished, Retraction, TextDelta, apply_events

    ewe, _ = make(Script([f"{S1} {S2_AFTER_ERROR} {S3}", f"{R1} {S2} {S3}"], {S1: R1}))
    events = list(ewe.stream(PROMPT))
    [retraction] = [e for e in events if isinstance(e, Retraction)]
    assert retraction.at == 0 and retraction.removed.startswith(S1)
    assert retraction.reason == "refined sentence replaces the failed one"
    assert apply_events(events) == events[-1].result.text == f"{R1} {S2} {S3}"
    ewe, _ = make(Script([f"{S2} {S1} {S3}"]), method="full-vr")
    events = list(ewe.stream(PROMPT))  # composed after its stages: the whole answer, once
    assert [type(e) for e in events] == [TextDelta, Finished] and events[0].text == FULL_REFINED


@pytest.mark.parametrize("mode", ["live", "offline"])
def test_a_sentence_about_someone_else_fails_and_is_refined(mode):
    """Issue 56: Streaming-VR fails what EWE's loop fails: a sentence about another person that
    passed its check is refined (its check event says why)."""
    other = "Pierre Curie was a French physicist."
    ewe, _ = make(Script([f"{S2} {other} {S3}", f"{S2} {R1} {S3}"], {other: R1}), false=(), mode=mode)
    r = ewe.generate(PROMPT)
    assert other not in r.text and R1 in r.text
    [failed] = [e for e in events(r, "check") if e.get("reason") == "off_subject"]
    assert failed["sentence"] == other and failed["needs_rewrite"]


def test_a_whole_answer_method_drops_a_sentence_about_someone_else():
    """Full-VR (like CoVe and A2R) composes its answer after the fact: a sentence about another
    person is dropped from what it returns (traced "no_answer_dropped")."""
    other = "Pierre Curie was a French physicist."
    ewe, _ = make(Script([f"{S2} {other} {S3}"]), false=(), method="full-vr")
    r = ewe.generate(PROMPT)
    assert r.text.strip() == f"{S2} {S3}"
    [drop] = events(r, "no_answer_dropped")
    assert drop["sentence"] == other and drop["reason"] == "off_subject" and drop["about"] == "Pierre Curie"
