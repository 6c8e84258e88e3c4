"""A2R, Ask-Assess-Refine (ewe/methods/a2r.py), driven by a scripted tiny model and a
fact-checker whose verdicts follow the evidence it is given."""
from __future__ import annotations

import json

import pytest
from test_cove import FakeDatastore, stage_model
from tiny import tiny_tokenizer

from ewe import EWE
from ewe.config import ConfigError, EWEConfig
from ewe.controller import render
from ewe.methods import a2r_prompts as P
from ewe.verify.types import SUPPORTED, UNSUPPORTED, Claim, SentenceCheck, Verdict

PROMPT = "Tell me a bio of Marie Curie."
D1, D2 = "Marie Curie was born in Warsaw.", "Marie Curie won two Nobel prizes."
GOOD = "Marie Curie was born in Warsaw [1]. She won two Nobel prizes [2]."
MIXED = "Marie Curie was born in Warsaw [1]. She won two Nobel prizes [1][2]. She was born in Paris."
MIXED2 = "Marie Curie was born in Warsaw [1]. She won two Nobel prizes [2]. She was born in Paris."
FALSE_IN_DATASTORE = {"She was born in Paris."}


class EvidenceChecker:
    """Datastore checks (no evidence given): supported unless listed as false. Checks against
    given documents: supported when the sentence's key words all occur in them."""

    name = "evidence-scripted"
    evidence = object()  # has evidence of its own (the "datastore")

    def __init__(self):
        self.calls: list[tuple[str, tuple | None]] = []

    def check_sentence(self, sentence, context=None, prompt=None, evidence=None):
        self.calls.append((sentence, None if evidence is None else tuple(evidence)))
        claim = Claim(sentence, sentence, 0, len(sentence))
        if evidence is None:
            ok = sentence not in FALSE_IN_DATASTORE
        else:
            words = {w for w in sentence.lower().strip(".").split() if len(w) > 3 and w != "marie"}
            text = " ".join(evidence).lower()
            ok = bool(words) and all(w in text for w in words)
        v = Verdict(claim, SUPPORTED if ok else UNSUPPORTED, 1.0 if ok else 0.0, [], self.name)
        return SentenceCheck(sentence=sentence, claims=[claim], verdicts=[v], extractor="scripted")


def stage_of(prompt: str) -> str:
    for marker, stage in (("Write an accurate answer", "initial"), ("Evaluate the answer", "feedback"),
                          ("Improve the answer", "refine"), ("Below are drafts", "final")):
        if marker in prompt:
            return stage
    return "other"


class Replies:
    """Canned replies per stage (refine replies in turn); records (stage, prompt) of every call."""

    def __init__(self, initial=MIXED, feedback="Correct the birthplace.", refined=(MIXED,), final=GOOD):
        self.replies = {"initial": initial, "feedback": feedback, "final": final}
        self.refined = list(refined)
        self.calls: list[tuple[str, str]] = []

    def __call__(self, prompt: str, units: int) -> str:
        stage = stage_of(prompt)
        self.calls.append((stage, prompt))
        if stage == "refine":
            return self.refined[min(len(self.of("refine")) - 1, len(self.refined) - 1)]
        return self.replies[stage]

    def of(self, stage):
        return [p for s, p in self.calls if s == stage]


def make(replies, datastore=None, **a2r):
    cfg = EWEConfig.build({
        "method": "a2r",
        "retrieval": {"source": "fake", "top_k": 2, "placement": "prompt"},
        "decoding": {"max_new_tokens": 120},
        "a2r": a2r,
    })
    checker = EvidenceChecker()
    ewe = EWE(stage_model(replies), tiny_tokenizer(), cfg, datastore=datastore or FakeDatastore(),
              fact_checker=checker)
    return ewe, checker


def events(r, kind):
    return [e for e in r.trace if e["type"] == kind]


def test_assessment_scores_correctness_and_alce_citation_recall_and_precision():
    from ewe.methods.a2r import A2R, _Run

    ewe, _ = make(Replies())
    s = A2R(ewe).assess(_Run(PROMPT), MIXED, [D1, D2])
    assert (s.sentences, s.claims, s.citations) == (3, 3, 3)
    assert s.correctness == pytest.approx(2 / 3)  # "born in Paris" is false in the datastore
    assert s.citation_recall == pytest.approx(2 / 3)  # the third sentence cites nothing
    assert s.citation_precision == pytest.approx(2 / 3)  # [1] is not needed beside [2] in sentence 2
    assert s.unsupported == ["She was born in Paris."]
    assert s.uncited == ["She was born in Paris."]
    assert s.imprecise == ["[1] in: She won two Nobel prizes."]


def test_citations_to_missing_documents_and_cut_off_sentences():
    from ewe.methods.a2r import A2R, _Run

    ewe, _ = make(Replies())
    s = A2R(ewe).assess(_Run(PROMPT), "Marie Curie was born in Warsaw [3]. She won two", [D1, D2], cut_off=True)
    assert (s.sentences, s.citations, s.citation_recall, s.citation_precision) == (1, 1, 0.0, 0.0)


def test_the_loop_asks_assesses_feeds_back_refines_and_writes_the_answer_from_the_history():
    replies = Replies(refined=(MIXED2,))
    ewe, _ = make(replies, max_iterations=2)
    r = ewe.generate(PROMPT, passages=[D1, D2])
    assert [s for s, _ in replies.calls] == ["initial", "feedback", "refine", "feedback", "final"]
    assert r.text == GOOD and r.stats["iterations"] == 2 and r.stats["stop"] == "max_iterations"
    assert r.stats["final_scores"] == {"correctness": 1.0, "citation_recall": 1.0, "citation_precision": 1.0}
    assert len(r.stats["scores"]) == 2 and r.stats["scores"][0]["correctness"] == pytest.approx(2 / 3)
    [initial] = replies.of("initial")
    assert f"Document [1]: {D1}" in initial and f"Document [2]: {D2}" in initial and f"Question: {PROMPT}" in initial
    feedback = replies.of("feedback")[0]
    assert "Correctness: 0.67" in feedback and "below 0.80" in feedback and f"Answer: {MIXED}" in feedback
    refine = replies.of("refine")[0]
    assert f"Answer: {MIXED}\nFeedback: Correct the birthplace." in refine
    [final] = replies.of("final")
    assert f"Draft 1: {MIXED}\nFeedback on draft 1: Correct the birthplace." in final and f"Draft 2: {MIXED2}" in final
    assert r.token_ids and len(r.logprobs) == len(r.token_ids)


def test_a_good_answer_stops_the_loop_at_once():
    replies = Replies(initial=GOOD)
    ewe, _ = make(replies)
    r = ewe.generate(PROMPT, passages=[D1, D2])
    assert [s for s, _ in replies.calls] == ["initial"]
    assert r.text == GOOD and r.stats["iterations"] == 0 and r.stats["stop"] == "scores"


def test_template_feedback_needs_no_model_call_and_names_the_failing_statements():
    replies = Replies()
    ewe, _ = make(replies, feedback="template", max_iterations=1)
    r = ewe.generate(PROMPT, passages=[D1, D2])
    assert not replies.of("feedback")
    [fb] = events(r, "a2r_feedback")
    assert fb["source"] == "template" and '"She was born in Paris."' in fb["text"]
    assert "Citation precision" not in fb["text"] or "do not support" in fb["text"]
    assert fb["text"] in replies.of("final")[0]


def test_final_last_returns_the_last_refinement_without_a_history_call():
    replies = Replies(refined=(GOOD,))
    ewe, _ = make(replies, final="last", max_iterations=1)
    r = ewe.generate(PROMPT, passages=[D1, D2])
    assert [s for s, _ in replies.calls] == ["initial", "feedback", "refine"] and r.text == GOOD


ECHO = "1. Correctness: 0.67\n2. Citation recall: 0.00\n3. Citation precision: 0.00"


def test_a_refinement_that_writes_the_score_lines_is_no_answer_and_the_draft_before_it_stays():
    replies = Replies(refined=(ECHO,), final=ECHO)  # the refiner copies the feedback's format
    ewe, _ = make(replies, max_iterations=2)
    r = ewe.generate(PROMPT, passages=[D1, D2])
    # the echoed refinement ends the rounds (nothing new to assess); the history call still runs
    assert [s for s, _ in replies.calls] == ["initial", "feedback", "refine", "final"]
    assert r.text == MIXED and r.stats["stop"] == "echo" and r.stats["iterations"] == 1
    answers = events(r, "a2r_answer")
    assert [a["kind"] for a in answers] == ["initial", "refined", "final"]
    assert [bool(a.get("echo")) for a in answers] == [False, True, True]
    [final] = replies.of("final")
    assert ECHO not in final  # an echo is never a draft


def test_a_final_answer_that_is_an_answer_is_taken_after_an_echoed_refinement():
    replies = Replies(refined=(ECHO,), final=GOOD)
    ewe, _ = make(replies, max_iterations=2)
    r = ewe.generate(PROMPT, passages=[D1, D2])
    assert r.text == GOOD and r.stats["stop"] == "echo"


def test_an_answer_is_cut_where_it_goes_on_listing_the_documents():
    assert P.answer_text(f"Answer: {GOOD}\n\nDocument [2]: {D2}") == GOOD
    assert P.answer_text(GOOD) == GOOD
    assert P.echoes_assessment("Marie Curie was born in Warsaw.\n2) Citation precision: .5")
    assert not P.echoes_assessment("Her correctness: never questioned. She won two prizes [1].")
    assert not P.echoes_assessment(GOOD)


def test_documents_are_retrieved_when_none_are_given():
    store = FakeDatastore()
    replies = Replies(initial=GOOD)
    ewe, _ = make(replies, datastore=store)
    r = ewe.generate(PROMPT)
    assert store.queries == [PROMPT] and [h["title"] for h in r.retrieved] == ["T0", "T1"]
    assert f"Document [2]: Passage 1 on {PROMPT}" in replies.of("initial")[0]


def test_result_and_trace_are_json_ready_and_readable():
    ewe, _ = make(Replies(), max_iterations=1)
    r = ewe.generate(PROMPT, passages=[D1, D2])
    json.dumps(r.to_dict())
    assert [e["type"] for e in r.trace] == ["a2r_answer", "a2r_assess", "a2r_feedback", "a2r_answer",
                                            "a2r_assess", "finish"]
    text = render(r.trace)
    assert "A2R assess answer #0: correctness 0.67" in text and "A2R final answer #1" in text


def test_citation_helpers():
    assert P.citations("A [2] b [1][2] c [10].") == [2, 1, 10]
    assert P.without_citations("She won two prizes [1][2] .") == "She won two prizes."
    assert P.strip_label("Improved answer: Text.") == "Text."
    assert P.strip_label("Draft 3: She was a chemist.\n\nDraft 4: She was a chemist.") == "She was a chemist."
    assert P.strip_label("Text one.\nFeedback on draft 2: more") == "Text one."


@pytest.mark.parametrize("data, message", [
    ({"method": "a2r", "retrieval": {"source": None}}, "evidence from a datastore"),
    ({"method": "a2r", "retrieval": {"source": "embedded"}, "a2r": {"max_iterations": 0}}, "a2r.max_iterations"),
    ({"method": "a2r", "retrieval": {"source": "embedded"}, "a2r": {"feedback": "human"}}, "a2r.feedback"),
])
def test_configuration_errors(data, message):
    with pytest.raises(ConfigError, match=message):
        EWEConfig.build(data)


def test_shipped_config_validates():
    from pathlib import Path

    cfg = EWEConfig.from_yaml(Path(__file__).parent.parent / "configs" / "a2r.yaml")
    assert cfg.method == "a2r" and cfg.a2r.feedback == "llm" and cfg.a2r.final == "history"
