"""`ewe critique` (ewe/critique/): each claim of a given text with the span it came from, its verdict,
reason, references a reader can open and (ITA) its tree; on a stub judge whose verdicts are known,
on a small datastore, and through the CLI (resumable, bad input named)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tiny import tiny_tokenizer

from ewe.critique import Critic
from ewe.critique.report import segments, write_report
from ewe.verify.details import detail_sub_claims
from ewe.verify.factchecker import FactChecker
from ewe.verify.tree import TreeChecker
from ewe.verify.types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Verdict

CORPUS = Path(__file__).parent / "data" / "corpus.jsonl"
PASSAGE = {"title": "Marie Curie", "text": "Marie Curie (1867-1934) was a Polish physicist and chemist. She was born "
           "in Warsaw in 1867. She won the Nobel Prize in Physics in 1903."}


class StubJudge:
    """Known verdicts: a claim with a word the evidence lacks is not enough evidence; else one with a
    year the evidence lacks is unsupported; else supported."""

    name = "stub"

    def check_claims(self, claims, evidence):
        out = []
        for c, ev in zip(claims, evidence):
            seen = " ".join(e.text for e in ev).lower()
            words = [w for w in re.findall(r"[A-Za-z]{4,}", c.text) if w.lower() not in ("born", "was", "were")]
            if any(w.lower() not in seen for w in words):
                label = NOT_ENOUGH_EVIDENCE
            elif any(y not in seen for y in re.findall(r"\b1\d{3}\b", c.text)):
                label = UNSUPPORTED
            else:
                label = SUPPORTED
            out.append(Verdict(c, label, 0.9 if label == SUPPORTED else 0.1, list(ev)[:1], "stub",
                               rationale=f"stub says {label}"))
        return out


def critic(ita: bool, evidence=None) -> Critic:
    backend = TreeChecker(StubJudge(), evidence, None, max_depth=2) if ita else StubJudge()
    return Critic(FactChecker(backend, evidence=evidence, bind_subjects=False))


def test_each_claim_keeps_its_span_verdict_reason_and_the_passage_it_was_judged_on():
    text = "Marie Curie was a Polish physicist. She was born in 1880. She won the Nobel Prize in Physics in 1903."
    c = critic(ita=False).critique(text, evidence=[PASSAGE])
    assert c.sentences == 3 and [cl.sentence_index for cl in c.claims] == [0, 1, 2]
    by_verdict = {cl.claim: cl.verdict for cl in c.claims}
    assert by_verdict == {"Marie Curie was a Polish physicist.": "accept", "Marie Curie was born in 1880.": "reject",
                          "Marie Curie won the Nobel Prize in Physics in 1903.": "accept"}
    [wrong] = c.rejected
    assert text[wrong.start:wrong.end] == "She was born in 1880."  # a rewritten claim points at its sentence
    assert wrong.reason == "stub says unsupported"
    [ref] = wrong.references
    assert ref["title"] == "Marie Curie" and (ref["start"], ref["end"]) == (0, len(PASSAGE["text"]))
    assert PASSAGE["text"][ref["start"]:ref["end"]] == ref["quote"]
    assert c.cost["judged_claims"] == 3 and c.cost["searches"] == 0 and c.cost["llm_calls"] == 0
    line = c.to_dict()
    assert "text" not in line and json.loads(json.dumps(line))["claims"][1]["verdict"] == "reject"


def test_ita_rejects_a_claim_through_the_detail_its_evidence_contradicts():
    """The root is short of evidence (Paris is nowhere); its details are verified one at a time, the
    year is contradicted, so the claim is rejected with the child's reason and reference."""
    text = "Marie Curie was born in 1880 in Paris."
    c = critic(ita=True).critique(text, evidence=[PASSAGE])
    [claim] = c.claims
    assert claim.verdict == "reject" and claim.reason == "sub-claim rejected: Marie Curie was born in 1880."
    tree = claim.tree
    assert tree["state"] == "reject" and [k["claim"] for k in tree["children"]] == [
        "Marie Curie was born in 1880.", "Marie Curie was born in Paris."]
    assert [k["state"] for k in tree["children"]] == ["reject", "unsubstantiated"]
    assert tree["children"][0]["references"][0]["title"] == "Marie Curie"
    assert c.cost["judged_claims"] == 3 and c.cost["searches"] == 0  # given evidence: the children are not searched


def test_a_text_left_undecided_says_so():
    c = critic(ita=True).critique("Marie Curie was born in Paris.", evidence=[PASSAGE])
    assert [cl.verdict for cl in c.claims] == ["unsubstantiated"] and not c.rejected


@pytest.fixture(scope="module")
def datastore(tmp_path_factory):
    from ewe.retrieval import Datastore

    return Datastore.build(CORPUS, tmp_path_factory.mktemp("ds") / "small", tokenizer=tiny_tokenizer(), chunk_tokens=24)


def test_retrieved_references_name_the_passage_a_reader_can_open(datastore):
    from ewe.retrieval.corpus import read_corpus
    from ewe.verify.datastore_evidence import DatastoreEvidence

    docs = {d.id: d for d in read_corpus(CORPUS)}
    text = ("Alexander Fleming discovered the antibacterial effect of penicillin in 1928 at St. Mary's Hospital in "
            "London. Fleming, Florey and Chain shared the 1935 Nobel Prize in Physiology or Medicine.")
    c = critic(ita=True, evidence=DatastoreEvidence(datastore)).critique(text)
    refs = [r for cl in c.claims for r in cl.references]
    assert refs and c.cost["searches"] >= len(c.claims)
    for r in refs:
        doc = docs[r["source_id"].split("#")[0]]
        assert r["title"] == doc.title and r["quote"].endswith(doc.text[r["start"]:r["end"]])
    assert {cl.sentence_index for cl in c.claims} == {0, 1}


def test_details_are_set_apart_one_at_a_time():
    assert detail_sub_claims("Marie Curie was born in 1880 in Warsaw.") == [
        "Marie Curie was born in 1880.", "Marie Curie was born in Warsaw."]
    # a preposition inside a name stays with it; a range is one detail
    assert detail_sub_claims("He studied at the University of Paris from 1891 to 1894.") == [
        "He studied at the University of Paris.", "He studied from 1891 to 1894."]
    assert detail_sub_claims("She won the Nobel Prize in Physics in 1903 with her husband.") == [
        "She won the Nobel Prize in Physics in 1903.", "She won the Nobel Prize in Physics with her husband."]
    # one detail: the head without it and the verb with it, so the two still say all the claim says
    assert detail_sub_claims("The company was founded by Steve Jobs.") == []
    assert detail_sub_claims("The city is the capital of France.") == []
    assert detail_sub_claims("The war ended in 1945.") == []


def test_the_report_marks_claims_in_place_and_escapes_the_text(tmp_path):
    text = "Marie Curie was born in 1880 in Paris. <script>alert(1)</script> She was a physicist."
    c = critic(ita=True).critique(text, evidence=[PASSAGE])
    row = {"id": "t1", "evidence": "given", **c.to_dict()}
    segs = segments(text, row["claims"])
    assert "".join(s["text"] for s in segs) == text
    assert [s["verdict"] for s in segs if s["text"] == "Marie Curie was born in 1880 in Paris"] == ["reject"]
    html = write_report([{"id": "t1", "text": text}], [row], tmp_path).read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html

    def nodes(tree):
        return 1 + sum(nodes(k) for k in tree["children"])

    assert html.count('<details class="tree">') == sum(nodes(cl["tree"]) for cl in row["claims"]) == 4


def test_the_cli_critiques_resumes_and_names_bad_input(tmp_path, capsys):
    from ewe.cli import main

    inp, out = tmp_path / "texts.jsonl", tmp_path / "critiques.jsonl"
    rows = [{"id": "a", "text": "Marie Curie was born in 1880. She was a Polish physicist.", "evidence": [PASSAGE]},
            {"id": "b", "text": "Marie Curie won the Nobel Prize in Physics in 1903.", "evidence": [PASSAGE["text"]]}]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["critique", "--input", str(inp), "--output", str(out), "--config", "configs/ita.yaml",
            "--report", str(tmp_path / "report")]
    assert main(args) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["a", "b"] and all(x["evidence"] == "given" for x in lines)
    assert all(cl["tree"] is not None for x in lines for cl in x["claims"]) and lines[0]["checker"].startswith("ita(")
    assert (tmp_path / "report" / "index.html").is_file()
    capsys.readouterr()
    assert main(args) == 0  # a rerun: nothing left to do, nothing written twice
    assert "resuming: 2 of 2" in capsys.readouterr().err and len(out.read_text().splitlines()) == 2

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "text": "  "}) + "\n" + json.dumps({"id": "y", "text": "ok", "evidence": []}) + "\n")
    with pytest.raises(SystemExit, match=r"bad.jsonl:1: needs a non-empty string field \"text\"") as e:
        main(["critique", "--input", str(bad), "--output", str(tmp_path / "o.jsonl")])
    assert "bad.jsonl:2: \"evidence\" must be a non-empty list" in str(e.value)


def test_a_hard_contradiction_overrules_the_judge_and_nothing_else_does():
    """checker.veto contradiction (ewe/verify/veto.py): another year of the same kind, or the opposite
    by negation, in the sentence the claim aligns with turns any verdict into unsupported, and so
    does a dated fact naming someone no passage names (unattested); a missing name in a claim
    without a number or an unrelated passage does not."""
    from ewe.verify.alignment import AlignmentChecker
    from ewe.verify.types import Claim, Evidence
    from ewe.verify.veto import ContradictionVeto

    class Accepts:
        name = "yes"

        def check_claims(self, claims, evidence):
            return [Verdict(c, SUPPORTED, 0.9, list(ev), "yes", rationale="looks right") for c, ev in zip(claims, evidence)]

    veto = ContradictionVeto(Accepts(), AlignmentChecker())
    ev = [Evidence("Hans Krebs was awarded the Nobel Prize in Physiology or Medicine in 1953.", "Hans Krebs")]
    claims = ["Hans Krebs was awarded the Nobel Prize in Physiology or Medicine in 1903.",
              "Hans Krebs was awarded the Nobel Prize in Physiology or Medicine in 1953.",
              "Hans Krebs was not awarded the Nobel Prize in Physiology or Medicine in 1953.",
              "Hans Krebs was awarded the Nobel Prize in Physiology or Medicine with Fritz Lipmann in 1953.",
              "Hans Krebs was awarded the Nobel Prize in Physiology or Medicine with Fritz Lipmann.",
              "The Eiffel Tower is in Paris."]
    got = veto.check_claims([Claim(c, c) for c in claims], [ev] * len(claims))
    assert [v.label for v in got] == [UNSUPPORTED, SUPPORTED, UNSUPPORTED, UNSUPPORTED, SUPPORTED, SUPPORTED]
    assert got[3].rationale.startswith("unattested: the evidence states its numbers but never names Fritz, Lipmann")
    assert got[0].rationale.startswith("contradicted: evidence has 1953 where the claim has 1903")
    assert got[0].backend == veto.name == "yes+veto" and got[0].score <= 0.49 and "looks right" in got[0].rationale
