"""Coverage (ewe.verify.coverage): the share of the subject's article an answer states, by the
alignment checker (real MiniLM), and how `ewe eval`'s scorer, report and table carry it."""
from __future__ import annotations

import json

import pytest

from ewe.config import EWEConfig
from ewe.data import wiki
from ewe.eval.report import write_report
from ewe.eval.scorer import Scorer, apply_scores, summarize
from ewe.eval.table import markdown
from ewe.runtime import Runtime
from ewe.verify import FactChecker, StaticEvidenceSource
from ewe.verify.coverage import COVERAGE, CoverageMeter, coverage, mean_coverage
from ewe.verify.text import split_sentences
from ewe.verify.types import SUPPORTED, UNSUPPORTED, Evidence, Verdict

ADA = ("Ada Lovelace was an English mathematician. She was born in London in 1815. "
       "She worked on Charles Babbage's Analytical Engine. She died of uterine cancer in 1852.")
CURIE = wiki.summaries()["Marie Curie"]["extract"]  # the demo's subject: three sentences


@pytest.fixture(scope="module")
def meter():
    return CoverageMeter()


def test_an_answer_restating_two_of_four_sentences_covers_half(meter):
    answer = ("Ada Lovelace was an English mathematician and writer. "
              "She worked with Charles Babbage on his Analytical Engine.")
    c = meter.measure(answer, ADA, "Ada Lovelace")
    assert c["article_sentences"] == 4 and c["stated"] == [0, 2] and c["partly"] == []
    assert c["coverage"] == pytest.approx(0.5)
    assert c["claims"] == [[1, 1], [0, 1], [1, 1], [0, 1]] and c["rule"] == COVERAGE


def test_an_empty_answer_covers_nothing_without_loading_a_model():
    class Refuses:
        def encode(self, texts):
            raise AssertionError("an empty answer needs no embedding")

    for empty in ("", "   \n"):
        c = CoverageMeter(encoder=Refuses()).measure(empty, ADA, "Ada Lovelace")
        assert c["coverage"] == 0.0 and c["stated"] == [] and c["article_sentences"] == 4
    assert CoverageMeter(encoder=Refuses()).measure("Anything.", "", "Nobody") is None  # no article, no coverage


def test_an_answer_about_another_subject_covers_nothing(meter):
    newton = ("Isaac Newton was an English mathematician and physicist. He won no Nobel Prize. "
              "He shared credit for calculus with Leibniz. He was born in 1643 and died in 1727.")
    assert meter.measure(newton, CURIE, "Marie Curie")["coverage"] == 0.0
    assert meter.measure(newton, ADA, "Ada Lovelace")["coverage"] == 0.0


def test_a_changed_number_does_not_state_the_sentence(meter):
    article = "Marie Curie was a physicist and a chemist. She was born in Warsaw in 1867."
    wrong = meter.measure("Marie Curie was born in Warsaw in 1869.", article, "Marie Curie")
    right = meter.measure("Marie Curie was born in Warsaw in 1867.", article, "Marie Curie")
    assert wrong["claims"][1] == [0, 1] and wrong["coverage"] == 0.0
    assert right["claims"][1] == [1, 1] and right["stated"] == [1]
    # nor does a sentence on her that says something else: the name alone aligns short sentences
    assert right["claims"][0] == [0, 2]


def test_a_sentence_is_credited_with_the_share_of_its_claims_stated(meter):
    article = "Marie Curie was a physicist and a chemist. She was born in Warsaw in 1867."
    c = meter.measure("Marie Curie was a famous physicist.", article, "Marie Curie")
    assert c["claims"] == [[1, 2], [0, 1]] and c["partly"] == [0] and c["stated"] == []
    assert c["coverage"] == pytest.approx(0.25)


def test_a_pronoun_states_the_subjects_claim_and_the_birth_name_need_not_be_written(meter):
    """The answer passage is titled with the subject's names: "She won ..." states "Marie Curie
    won ...", and the article's "Maria Salomea Skłodowska Curie ... was" is stated by "Marie Curie was"."""
    first, _, third = split_sentences(CURIE)
    c = meter.measure("Marie Curie was a Polish and naturalised-French physicist and chemist. " + third, CURIE,
                      "Marie Curie")
    assert c["stated"] == [0, 2]


def test_the_demo_article_covers_itself(meter):
    assert meter.measure(CURIE, CURIE, "Marie Curie")["coverage"] == 1.0
    assert coverage(CURIE, Evidence(CURIE, "Marie Curie"))["coverage"] == 1.0  # the module function, an Evidence
    for title in sorted(wiki.summaries())[:12]:
        text = wiki.summaries()[title]["extract"]
        assert meter.measure(text, text, title)["coverage"] == 1.0, title


def test_every_sentence_of_a_long_answer_can_state(meter):
    """The checker reads at most 24 spans of a passage; the answer is read whole (here without
    its claims, which are passages of their own)."""
    filler = " ".join(f"Ada Lovelace wrote letter number {i} to a friend." for i in range(30))
    answer = filler + " She died of uterine cancer in 1852."
    assert meter.measure(answer, ADA, "Ada Lovelace", claims_of_answer=[])["stated"] == [3]
    assert meter.measure(answer, ADA, "Ada Lovelace")["stated"] == [3]


def test_mean_coverage_skips_answers_without_an_article():
    assert mean_coverage([{"coverage": 0.5}, None, {"coverage": 1.0}]) == (0.75, 2)
    assert mean_coverage([None, None]) == (None, 0)


# -- in `ewe eval` ---------------------------------------------------------------------------------


class Lookup:
    """Supported exactly when the claim text is in `true`; counts the claims it checks."""

    name = "lookup"

    def __init__(self, true=()):
        self.true, self.claims = set(true), []

    def check_claims(self, claims, evidence_per_claim):
        self.claims += [c.text for c in claims]
        return [Verdict(c, SUPPORTED if c.text in self.true else UNSUPPORTED, 1.0, list(ev), self.name)
                for c, ev in zip(claims, evidence_per_claim)]


def _scorer(backend, **kw):
    checker = FactChecker(backend, evidence=StaticEvidenceSource([Evidence("Curie passage", "Marie Curie")]), k=2)
    return Scorer(Runtime(EWEConfig(), fact_checker=checker), use_articles=False, **kw)


def test_scored_details_and_summary_carry_coverage_and_a_rerun_measures_older_lines(tmp_path, meter):
    s = split_sentences(CURIE)
    results = tmp_path / "m.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "a", "prompt": "Tell me a bio of Marie Curie.", "topic": "Marie Curie", "text": f"{s[0]} {s[2]}"},
        {"id": "b", "prompt": "Tell me a bio of Marie Curie.", "text": s[1]},  # no topic: no article
        {"id": "c", "prompt": "Tell me a bio of Marie Curie.", "topic": "Marie Curie", "text": ""},
    ]))
    details = tmp_path / "m.details.jsonl"
    backend = Lookup()
    rows = _scorer(backend, coverage_meter=meter).check_file(results, details, "m", "bio", progress=False)
    a, b, c = rows
    assert a["coverage"]["stated"] == [0, 2] and a["coverage"]["coverage"] == pytest.approx(2 / 3)
    assert a["coverage"]["article_sentences"] == 3 and a["coverage_rule"] == COVERAGE
    assert b["coverage"] is None and c["coverage"]["coverage"] == 0.0
    summary = summarize(apply_scores(rows, 1), "m", "bio", 1, "lookup", details)
    assert summary["coverage"] == pytest.approx(1 / 3) and summary["coverage_n"] == 2  # (2/3 + 0) / 2; b has none
    assert summary["f1"] == 0.0  # beside F1, not instead of it

    # details written before coverage (or by another rule) get it on the next run; no claim is checked again
    lines = [json.loads(x) for x in details.read_text().splitlines()]
    assert lines[0]["coverage"]["stated"] == [0, 2]  # appended as checked: resumable
    for line in lines:
        line.pop("coverage"), line.pop("coverage_rule")
    lines[2]["coverage_rule"] = "older-rule"
    details.write_text("".join(json.dumps(x) + "\n" for x in lines))
    checked = len(backend.claims)
    again = _scorer(backend, coverage_meter=meter).check_file(results, details, "m", "bio", progress=False)
    assert len(backend.claims) == checked
    assert [r["coverage"] and r["coverage"]["coverage"] for r in again] == [pytest.approx(2 / 3), None, 0.0]
    assert all(r["coverage_rule"] == COVERAGE for r in again)

    off = _scorer(Lookup(), coverage=False).check_file(results, tmp_path / "off.jsonl", "m", "bio", progress=False)
    assert all("coverage" not in r for r in off)
    assert summarize(apply_scores(off, 1), "m", "bio", 1, "lookup", details)["coverage"] is None


def _detail(i, cov):
    return {"id": f"p{i}", "prompt": "Tell me a bio of Marie Curie.", "response": "Marie Curie was a physicist.",
            "sentences": [{"text": "Marie Curie was a physicist.", "claims": [
                {"text": "Marie Curie was a physicist.", "label": "supported", "score": 0.9, "evidence": []}]}],
            "n_claims": 1, "n_supported": 1, "precision": 1.0, "recall": 1.0, "f1": 1.0, "coverage": cov}


def _summary(tmp_path, method, cov, coverage_mean):
    path = tmp_path / f"{method}.details.jsonl"
    path.write_text(json.dumps(_detail(0, cov)) + "\n")
    return {"method": method, "dataset": "bio", "n": 1, "K": 1, "precision": 1.0, "recall": 1.0, "f1": 1.0,
            "claims_per_response": 1.0, "supported_per_response": 1.0, "tokens": 10.0, "seconds_per_prompt": 1.0,
            "pauses": 0.0, "backtracks": 0.0, "checker": "alignment+atomic", "details": str(path),
            "coverage": coverage_mean, "coverage_n": 1 if coverage_mean is not None else 0}


def test_the_report_shows_coverage_beside_f1_where_it_was_measured(tmp_path):
    cov = {"coverage": 2 / 3, "article_sentences": 3, "stated": [0, 2], "partly": [], "title": "Marie Curie"}
    paths = write_report([_summary(tmp_path, "ewe", cov, 2 / 3), _summary(tmp_path, "ra", None, None)],
                         tmp_path / "out")
    md = paths["results.md"].read_text()
    header = next(line for line in md.splitlines() if line.startswith("| Method"))
    cells = [c.strip() for c in header.split("|")[1:-1]]
    assert cells[cells.index("F1@K") + 1] == "Coverage"
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]] for line in md.splitlines()
            if line.startswith("| ") and "---" not in line and not line.startswith("| Method")}
    assert rows["ewe"][cells.index("Coverage")] == "66.7" and rows["ra"][cells.index("Coverage")] == "–"
    page = paths["index.html"].read_text()
    assert "coverage 66.7" in page and "66.7% of the 3 sentences of the article on Marie Curie: stated 1, 3" in page
    assert "coverage" in paths["results.csv"].read_text().splitlines()[0].split(",")

    plain = write_report([_summary(tmp_path, "ra", None, None)], tmp_path / "plain")["results.md"].read_text()
    assert "Coverage" not in plain  # a run that measured none keeps the table it had


def test_the_results_table_has_a_coverage_column_only_when_its_rows_carry_one():
    row = {"method": "ewe", "n": 8, "K": 6, "f1": 0.5, "precision": 0.6, "claims_per_response": 6.0,
           "raw_claims_per_response": 7.0, "repeated_sentences_per_response": 0.0, "other_subject_credits": 0,
           "seconds_per_prompt": 2.0}
    plain = markdown({"datasets": {"bio": {"best_baseline": "ra", "rows": [row]}}})
    assert "coverage" not in plain and "| ewe | 50.0 (60.0) | – | 6.0 (7.0) |" in plain
    covered = markdown({"datasets": {"bio": {"best_baseline": "ra", "rows": [{**row, "coverage": 0.25,
                                                                              "coverage_n": 8}]}}})
    assert "| coverage of the article (answers) |" in covered and "| ewe | 50.0 (60.0) | 25.0 (8) | – |" in covered
