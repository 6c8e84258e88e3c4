"""The scorers `ewe eval score --scorer` names, and the measure that holds the atomic extractor to
hand-split answers (claim_agreement.py), on toy answers checked by hand."""
from __future__ import annotations

import json

import pytest

from ewe import cli
from ewe.config import EWEConfig
from ewe.eval.claim_agreement import AnswerAgreement, agreement, content_words, match, read_labels, summary
from ewe.eval.claim_checkers import AtomicClaims, answer_subject
from ewe.eval.scorer import Scorer, checker_signature
from ewe.runtime import Runtime
from ewe.verify import FactChecker, StaticEvidenceSource
from ewe.verify.types import SUPPORTED, UNSUPPORTED, Evidence, Verdict

PROMPT = "Tell me a bio of Marie Curie."
PASSAGE = Evidence("Marie Curie was a Polish physicist and chemist.", "Marie Curie", 0.9)


class Recording:
    """Supported when the claim's words are all in the passage; records what it was asked."""

    name = "recording"

    def __init__(self):
        self.claims = []

    def check_claims(self, claims, evidence_per_claim):
        self.claims += [c.text for c in claims]
        out = []
        for c, ev in zip(claims, evidence_per_claim):
            words = set(c.text.lower().strip(".").split())
            ok = any(words <= set(e.text.lower().strip(".").split()) | {"was", "a"} for e in ev)
            out.append(Verdict(c, SUPPORTED if ok else UNSUPPORTED, float(ok), list(ev), self.name))
        return out


class RecordingEvidence:
    def __init__(self):
        self.queries = []

    def search(self, queries, k):
        self.queries += list(queries)
        return [[PASSAGE] for _ in queries]


def runtime(backend):
    return Runtime(EWEConfig(), fact_checker=FactChecker(backend, evidence=StaticEvidenceSource([PASSAGE]), k=2))


def results_file(tmp_path, text):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"id": "a", "prompt": PROMPT, "text": text}) + "\n")
    return path


def test_the_subject_is_the_topic_without_its_parenthesis_else_the_prompts():
    assert answer_subject("Michael Jordan (footballer)", "Tell me a bio of Michael Jordan.") == "Michael Jordan"
    assert answer_subject(None, PROMPT) == "Marie Curie"
    assert answer_subject("", "What is the weather?") is None


def test_atomic_claims_are_checked_one_by_one_each_on_its_own_passages():
    backend, evidence = Recording(), RecordingEvidence()
    text = "Marie Curie was a Polish physicist and chemist. She was born in Paris. I hope this helps!"
    sentences = AtomicClaims(backend, k=3).check(text, PROMPT, evidence, "Marie Curie")
    assert [s["text"] for s in sentences] == ["Marie Curie was a Polish physicist and chemist.",
                                             "She was born in Paris.", "I hope this helps!"]
    claims = [[c["text"] for c in s["claims"]] for s in sentences]
    assert claims == [["Marie Curie was Polish.", "Marie Curie was a physicist.", "Marie Curie was a chemist."],
                      ["Marie Curie was born in Paris."], []]
    assert evidence.queries == backend.claims == [c for cs in claims for c in cs]  # each claim its own query
    assert [s["verdict"] for s in sentences] == ["supported", "unsupported", "not_checkable"]
    first = sentences[0]["claims"][0]
    assert first["kind"] == "attribute" and first["evidence"][0]["text"] == PASSAGE.text
    assert first["other_subject"] is False


def test_the_scorer_names_its_scorer_and_the_rules_one_keeps_the_loop_style_claims(tmp_path):
    text = "Marie Curie was a Polish physicist and chemist."
    atomic = Scorer(runtime(Recording()), use_articles=False)
    rules = Scorer(runtime(Recording()), use_articles=False, scorer="rules")
    [a] = atomic.check_file(results_file(tmp_path, text), tmp_path / "a.jsonl", "m", "toy", progress=False)
    [r] = rules.check_file(results_file(tmp_path, text), tmp_path / "r.jsonl", "m", "toy", progress=False)
    assert (a["scorer"], r["scorer"]) == ("atomic", "rules")
    assert a["n_claims"] == 3 and r["n_claims"] == 1  # the rule splitter keeps the sentence whole
    assert atomic.signature == "atomic+recording"  # the verdict actually used
    assert rules.signature == checker_signature(EWEConfig())  # the loop-style signature, as before scorers
    assert atomic.signature != rules.signature  # a method checking with the rules checker is not self-graded here


def test_details_of_another_scorer_are_moved_aside_never_mixed(tmp_path, capsys):
    results = results_file(tmp_path, "Marie Curie was a physicist.")
    details = tmp_path / "m.details.jsonl"
    Scorer(runtime(Recording()), use_articles=False, scorer="rules").check_file(results, details, "m", "t",
                                                                                 progress=False)
    rules_line = details.read_text()
    [row] = Scorer(runtime(Recording()), use_articles=False).check_file(results, details, "m", "t", progress=False)
    assert row["scorer"] == "atomic" and "kept as" in capsys.readouterr().err
    assert (tmp_path / "m.details.rules.jsonl").read_text() == rules_line
    assert {json.loads(line)["scorer"] for line in details.read_text().splitlines()} == {"atomic"}
    # lines from before scorers were named are the rules scorer's; moving them onto an existing file refuses
    details.write_text(json.dumps({k: v for k, v in json.loads(rules_line).items() if k != "scorer"}) + "\n")
    with pytest.raises(FileExistsError, match="rules scorer"):
        Scorer(runtime(Recording()), use_articles=False).check_file(results, details, "m", "t", progress=False)


def test_bad_scorer_choices_say_what_is_wrong(tmp_path, capsys):
    with pytest.raises(ValueError, match="expected one of atomic, rules, openai"):
        Scorer(runtime(Recording()), scorer="nli")
    with pytest.raises(ValueError, match="endpoint"):
        Scorer(runtime(Recording()), scorer="openai")
    results = str(results_file(tmp_path, "x"))
    with pytest.raises(SystemExit, match="--scorer openai needs --endpoint"):
        cli.main(["eval", "score", results, "--out", str(tmp_path / "o"), "--scorer", "openai"])
    with pytest.raises(SystemExit, match="--endpoint and --model are for --scorer openai"):
        cli.main(["eval", "score", results, "--out", str(tmp_path / "o"), "--endpoint", "http://x"])


# -- the extractor against hand-split answers -----------------------------------------------------------


def test_claims_match_when_they_state_the_same_content_one_to_one():
    subject = "Marie Curie"
    assert content_words("Marie Curie was born in Warsaw.", subject) == {"born", "warsaw"}
    labelled = ["Marie Curie was born in Warsaw.", "Marie Curie was born in 1867.", "Marie Curie was a physicist."]
    extracted = ["Curie was born in 1867.", "She was born in 1868 in Warsaw, a physicist and chemist.", "Curie was born in 1867."]
    # the bundle states too much to match any one claim; numbers must agree; a repeat matches once
    assert match(labelled, extracted, subject) == [(1, 0)]
    assert match(["Marie Curie won the Nobel Prize in Physics."], ["Marie Curie won a Nobel Prize in physics."],
                 subject) == [(0, 0)]


def test_count_error_and_recall_by_hand():
    rows = [AnswerAgreement("a", ["x1", "x2", "x3", "x4"], ["x1", "y"], [(0, 0)]),
            AnswerAgreement("b", ["z1"], ["z1"], [(0, 0)]),
            AnswerAgreement("c", [], ["q"], [])]
    s = summary(rows)
    assert s["count_error"] == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert s["recall"] == pytest.approx(2 / 5) and s["precision"] == pytest.approx(2 / 4)
    assert rows[0].missed == ["x2", "x3", "x4"] and rows[0].unmatched == ["y"]


def test_labelled_answers_are_read_with_their_subject_and_checked(tmp_path):
    row = {"id": "bare/bio/1", "method": "bare", "dataset": "bio", "prompt": "Tell me a bio of Michael Jordan.",
           "topic": "Michael Jordan (footballer)", "answer": "He was a footballer.",
           "claims": ["Michael Jordan was a footballer."]}
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps(row) + "\n")
    seen = []
    [result] = agreement(read_labels(path), lambda answer, subject: seen.append(subject) or [f"{subject} was a footballer."])
    assert seen == ["Michael Jordan"] and result.pairs == [(0, 0)]
    path.write_text(json.dumps({**row, "claims": ["ok", ""]}) + "\n")
    with pytest.raises(ValueError, match="non-empty strings"):
        read_labels(path)
    path.write_text(json.dumps({k: v for k, v in row.items() if k != "answer"}) + "\n")
    with pytest.raises(ValueError, match=r"l.jsonl:1: a labelled answer needs answer"):
        read_labels(path)


def test_the_default_scorer_judges_with_its_own_judge_not_the_loops():
    """Issue 73: the support decision shares no weights, threshold, veto or span rule with the
    default loop's checker (configs/ewe.yaml)."""
    from ewe.judge.checker import JudgeChecker, resolve

    loop, scoring = EWEConfig.from_yaml("configs/ewe.yaml").checker, EWEConfig.from_yaml("configs/eval.yaml").checker
    assert loop.veto == "contradiction" and scoring.veto == "none"
    assert (loop.backend, scoring.backend) == ("judge", "judge") and loop.judge != scoring.judge == "scorer-cross"
    manifest = json.loads((resolve("scorer-cross") / "manifest.json").read_text())
    assert manifest["settings"]["init"] is None  # trained from the bare MiniLM, not from the loop's weights
    assert manifest["weights_sha256"] != json.loads((resolve("minilm-cross") / "manifest.json").read_text())[
        "weights_sha256"]
    scorer = Scorer(Runtime(EWEConfig.from_yaml("configs/eval.yaml")))
    checker = scorer.claim_checker
    assert isinstance(checker, AtomicClaims) and isinstance(checker.verdicts, JudgeChecker)
    assert checker.verdicts.name == "judge:scorer-cross" and scorer.signature == "atomic+judge:scorer-cross"
    assert checker.verdicts.threshold == manifest["operating_point"]["threshold"]


def test_the_scorer_judges_training_claims_come_from_train_split_sentences_only():
    from ewe.data.splits import split_of
    from ewe.eval.scorer_judge import atomic_training_claims

    extract = "She was a Polish physicist. She was born in Warsaw in 1867. " * 4
    titles = ["Marie Curie", "Ada Lovelace", "Alan Turing", "Niels Bohr", "Lise Meitner", "Emmy Noether"]
    summaries = {t: {"title": t, "extract": extract} for t in titles}
    rows = atomic_training_claims(summaries, n_articles=10, sentences_per_article=2)
    train = {t for t in titles if split_of(t) == "train"}
    assert rows and {r["title"] for r in rows} == train  # no dev or test article
    assert all(r["label"] == "supported" and r["sentence_index"] in (0, 1) for r in rows)
    first = [r["claim"] for r in rows if r["title"] == sorted(train)[0] and r["sentence_index"] == 1]
    assert sorted(first) == sorted([f"{sorted(train)[0]} was born in Warsaw.", f"{sorted(train)[0]} was born in 1867."])
