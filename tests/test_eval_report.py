"""The evaluation report: tables, CSV, plots, HTML page and claim audit from tiny fake runs."""
import csv
import json
import re
from collections import Counter

import pytest

from ewe.eval.report import write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _claim(text, label, score=0.9):
    return {"text": text, "label": label, "score": score, "error": None,
            "evidence": [{"title": f"Page <{text}>", "text": f"evidence for {text}", "score": 0.5}]}


def _response(i, method, dataset, labels, response=None):
    claims = [_claim(f"{method} claim {i}.{j}", label) for j, label in enumerate(labels)]
    n_sup = sum(label == "supported" for label in labels)
    return {"id": f"{dataset}-{i}", "prompt": f"Tell me a bio of person {i}.", "method": method, "dataset": dataset,
            "response": response or f"Person {i} was born.", "K": 10,
            "sentences": [{"text": f"Person {i} was born.", "claims": claims[:2]},
                          {"text": f"Person {i} died.", "claims": claims[2:]}],
            "n_claims": len(labels), "n_supported": n_sup, "precision": n_sup / len(labels),
            "recall": min(1.0, n_sup / 10), "f1": 0.1}


def _run_sentences(i):
    """What EWE's controller records of response i (see ewe.eval.harness.run_sentences): the first
    sentence supported by a cited passage, the second kept unsupported after its retries."""
    return [{"text": f"Person {i} was born.", "checked": True, "verdict": "supported", "needs_rewrite": False,
             "evidence": [{"title": f"Person <{i}>", "source_id": f"wiki:Person_{i}#3", "start": 120 + i, "end": 480,
                           "score": 0.91, "claim": f"Person {i} was born.", "text": f"Person {i} (born 1900) was."}]},
            {"text": f"Person {i} died.", "checked": True, "verdict": "unsupported", "needs_rewrite": True,
             "evidence": []}]


def _write_details(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _summary(method, dataset, details, f1, **over):
    s = {"method": method, "dataset": dataset, "n": 3, "K": 10, "precision": 0.81234, "recall": 0.4567,
         "f1": f1, "claims_per_response": 12.345, "supported_per_response": 9.87, "tokens": 187.6,
         "seconds_per_prompt": 3.14159, "pauses": 4.26, "backtracks": 1.5, "checker": "nli", "details": details,
         "raw_claims_per_response": 14.5, "repeated_sentences_per_response": 0.333,
         "off_subject_claims_per_response": 0.5, "loop_sentences": 1, "meta_sentences": 0}
    s.update(over)
    return s


@pytest.fixture
def runs(tmp_path):
    """Two methods on one dataset: 19 claims: 12 supported, 6 unsupported, 1 not_enough_evidence."""
    ewe_recs = [_response(i, "ewe", "bios", ["supported", "supported", "unsupported"]) for i in range(3)]
    for i, rec in enumerate(ewe_recs):
        rec["run_sentences"] = _run_sentences(i)
    ewe_recs[0]["response"] = "He wrote <script>alert(1)</script> & more."
    base_recs = [_response(i, "base", "bios", ["supported", "unsupported", "supported"]) for i in range(3)]
    base_recs[2]["sentences"][1]["claims"].append(_claim("rare claim", "not_enough_evidence"))
    summaries = [
        _summary("ewe", "bios", _write_details(tmp_path / "ewe.jsonl", ewe_recs), 0.56789),
        _summary("base", "bios", _write_details(tmp_path / "base.jsonl", base_recs), 0.4321,
                 precision=0.7, recall=0.3),
    ]
    sweeps = [{"param": "memory.retrieval_units", "value": v, "method": m, "dataset": "bios",
               "precision": 0.6 + v / 100, "recall": 0.3 + v / 100, "f1": 0.4 + v / 100}
              for m in ("ewe", "base") for v in (1, 2, 4, 8)]
    return summaries, sweeps


def test_markdown_table_rounds_like_the_paper(runs, tmp_path):
    summaries, sweeps = runs
    paths = write_report(summaries, tmp_path / "out", sweeps=sweeps)
    md = paths["results.md"].read_text()
    rows = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and "---" not in line}
    assert {"ewe", "base"} <= set(rows)
    ewe = [c.strip() for c in rows["ewe"].split("|")[1:-1]]
    assert ewe[:5] == ["ewe", "3", "81.2", "45.7", "**56.8**"]  # best F1 bolded
    assert ewe[5:] == ["10", "12.3", "9.9", "14.5", "0.33", "0.50", "1", "0", "188", "3.14", "4.3", "1.5", "–", "nli",
                       "-"]  # no refinement: a dash
    base = [c.strip() for c in rows["base"].split("|")[1:-1]]
    assert base[2:5] == ["70.0", "30.0", "43.2"]
    assert "## bios" in md


def test_report_names_the_scorer_and_marks_self_graded_rows(runs, tmp_path):
    summaries, _ = runs
    summaries[0].update(in_loop_checker="nli+rules", self_graded=True)
    summaries[1].update(in_loop_checker="-", self_graded=False)
    md = write_report(summaries, tmp_path / "out", scorer_note="nli: 0.9 on 200 sentences")["results.md"].read_text()
    assert "Scoring judge: nli: 0.9 on 200 sentences." in md
    assert "Self-graded (marked *): ewe " in md
    rows = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and "---" not in line}
    assert "ewe *" in rows and "base" in rows and [c.strip() for c in rows["ewe *"].split("|")[1:-1]][-1] == "nli+rules"


def test_in_loop_checker_is_known_per_method():
    from ewe.config import EWEConfig
    from ewe.eval.scorer import checker_signature, in_loop_checker

    ewe = EWEConfig.from_yaml("configs/ewe.yaml")
    assert in_loop_checker(ewe) == checker_signature(ewe) == "judge:minilm-cross+rules"
    assert in_loop_checker(EWEConfig.from_yaml("configs/ra.yaml")) is None
    assert in_loop_checker(EWEConfig.from_yaml("configs/streaming-vr.yaml")) == "judge:minilm-cross+rules"
    # by default the scorer is not the controller's checker: no method grades its own homework
    scorer = EWEConfig.from_yaml("configs/eval.yaml")
    assert checker_signature(scorer) == "judge:scorer-cross+atomic" != in_loop_checker(ewe)
    judged = EWEConfig.build({"checker": {"backend": "ita", "ita_base": "judge"}})
    assert checker_signature(judged) == "ita(judge:minilm-cross)+rules"


def test_csv_reads_back_the_raw_numbers(runs, tmp_path):
    summaries, _ = runs
    paths = write_report(summaries, tmp_path / "out")
    with paths["results.csv"].open() as f:
        rows = list(csv.DictReader(f))
    assert [r["method"] for r in rows] == ["ewe", "base"]
    for row, s in zip(rows, summaries):
        for key in ("precision", "recall", "f1", "tokens", "seconds_per_prompt", "pauses", "backtracks"):
            assert float(row[key]) == s[key]
        assert int(row["n"]) == s["n"] and int(row["K"]) == s["K"]
        assert row["checker"] == "nli" and row["details"] == s["details"]


def test_plots_are_pngs(runs, tmp_path):
    summaries, sweeps = runs
    paths = write_report(summaries, tmp_path / "out", sweeps=sweeps)
    pngs = {name for name in paths if name.endswith(".png")}
    assert pngs == {"f1_by_method.png", "sweep_memory_retrieval_units.png"}
    for name in pngs:
        assert paths[name].read_bytes()[:8] == PNG_MAGIC
    assert not list((tmp_path / "out").glob(".*"))  # no temporary files left behind


def test_a_sweep_over_choices_is_charted(runs, tmp_path):
    """A swept option that is a choice (memory.unit_text=passage,body) gets categorical ticks."""
    summaries, sweeps = runs
    for p, value in zip(sweeps, ["passage", "body"] * len(sweeps)):
        p.update(param="memory.unit_text", value=value)
    paths = write_report(summaries, tmp_path / "out", sweeps=sweeps)
    assert paths["sweep_memory_unit_text.png"].read_bytes()[:8] == PNG_MAGIC


def test_html_escapes_model_output(runs, tmp_path):
    summaries, sweeps = runs
    html = write_report(summaries, tmp_path / "out", sweeps=sweeps)["index.html"].read_text()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more." in html
    assert "Page &lt;ewe claim 0.0&gt;" in html  # evidence titles escaped too
    assert html.count('src="data:image/png;base64,') == 2  # the plots embedded: the page alone is the report
    assert "(f1_by_method.png)" in html and "(sweep_memory_retrieval_units.png)" in html
    assert "<script" not in html and "http://" not in html and "https://" not in html  # nothing runs, nothing loads
    assert html.count("<details><summary><b>") == 6  # one collapsible block per response
    assert 'class="claim not_enough_evidence"' in html and 'class="claim unsupported"' in html
    assert html.index("bios · ewe") < html.index("bios · base")


def test_html_shows_each_sentence_with_the_checkers_and_the_scorers_verdicts(runs, tmp_path):
    summaries, _ = runs
    summaries[0].update(in_loop_checker="judge:minilm-cross+rules")
    summaries[1].update(in_loop_checker="-")
    html = write_report(summaries, tmp_path / "out")["index.html"].read_text()
    ewe, base = html.split("bios · base")
    assert "checker: judge:minilm-cross+rules" in ewe
    checker_tag = '<span class="tag">checker</span>'
    assert ewe.count(f'<div class="check supported">{checker_tag} <span class="verdict">supported') == 3
    assert ewe.count('<span class="verdict">unsupported</span> <span class="muted">no supporting passage') == 3
    assert "<b>Person &lt;1&gt;</b>" in ewe and "wiki:Person_1#3 · chars 121–480 · score 0.910" in ewe
    assert "<blockquote>Person 1 (born 1900) was.</blockquote>" in ewe and "for “Person 1 was born.”" in ewe
    assert ewe.count("scorer</span> 2/2 claims supported") == 3 and ewe.count("checker: 1/2 sentences supported") == 3
    # a method without a checker says so, plainly, for every sentence
    assert "checker: none, this method checks nothing while it writes" in base
    assert base.count('<div class="check none"><span class="tag">checker</span> none</div>') == 6
    assert "checker: " not in base.split("</h3>", 1)[1].replace("checker: none", "")


def test_checker_records_are_matched_to_the_scored_sentences_by_place():
    from ewe.eval.report import _sentence_views

    rec = {"response": "A b. C d. E f.",
           "sentences": [{"text": "A b.", "claims": []}, {"text": "C d. E f.", "claims": []}],
           "run_sentences": [{"text": " A b.", "checked": True, "verdict": "supported"},
                             {"text": " C d.", "checked": False}, {"text": " E f.", "checked": True},
                             {"text": "Gone.", "checked": True, "verdict": "unsupported"}]}
    views, rest = _sentence_views(rec, has_checker=True)
    assert [[k["label"] for k in v["checks"]] for v in views] == [["supported"], ["not checked", "checked"]]
    assert views[0]["checks"][0]["text"] == "" and views[1]["checks"][0]["text"] == "C d."  # split differently
    assert [k["label"] for k in rest] == ["unsupported"]
    for records in (None, [{"text": "A b.", "checked": False}]):  # a method without a checker: "none", plainly
        bare, rest = _sentence_views({**rec, "run_sentences": records}, has_checker=False)
        assert [(v["checks"], v["checker_note"]) for v in bare] == [([], "none"), ([], "none")] and rest == []


def test_run_sentences_carry_verdicts_offsets_and_the_passage_text_the_check_read():
    from ewe.eval.harness import run_sentences

    cite = {"title": "Paris", "source_id": "wiki:Paris#7", "start": 120, "end": 133, "score": 0.5}
    row = {"text": "Paris is a city. Rome.", "trace": [
        {"type": "check", "verdicts": [{"claim": "Paris is a city.",
                                        "evidence": [{**cite, "text": "Paris: the capital."}]}]}],
        "sentences": [{"start": 0, "end": 5, "text": "Paris is a city.", "complete": True, "checked": True,
                       "needs_rewrite": False, "verdict": "supported",
                       "evidence": [{**cite, "claim": "Paris is a city."}],
                       "failed_attempts": 0},
                      {"text": " Rome.", "checked": False, "needs_rewrite": None, "verdict": None, "evidence": []}]}
    first, second = run_sentences(row)
    assert first == {"text": "Paris is a city.", "checked": True, "verdict": "supported", "needs_rewrite": False,
                     "evidence": [{**cite, "claim": "Paris is a city.", "text": "Paris: the capital."}]}
    assert second["checked"] is False and second["evidence"] == []
    assert run_sentences({"text": "x", "sentences": []}) is None  # plain generation records none


def test_audit_sample_is_seeded_sized_and_stratified(runs, tmp_path):
    summaries, _ = runs
    first = write_report(summaries, tmp_path / "a", audit_size=5, seed=7)["audit.jsonl"].read_text()
    again = write_report(summaries, tmp_path / "b", audit_size=5, seed=7)["audit.jsonl"].read_text()
    other = write_report(summaries, tmp_path / "c", audit_size=5, seed=8)["audit.jsonl"].read_text()
    assert first == again and first != other
    sample = [json.loads(line) for line in first.splitlines()]
    assert len(sample) == 5
    for seed in range(20):  # the one not_enough_evidence claim in 19 is always drawn
        out = write_report(summaries, tmp_path / f"s{seed}", audit_size=3, seed=seed)["audit.jsonl"]
        labels = Counter(json.loads(line)["label"] for line in out.read_text().splitlines())
        assert set(labels) == {"supported", "unsupported", "not_enough_evidence"}
    a = sample[0]
    assert a["human_label"] == "" and a["sentence"] and a["claim"] and a["evidence"][0]["title"].startswith("Page")
    assert {"label", "score", "method", "dataset", "id"} <= set(a)
    md = (tmp_path / "a" / "audit.md").read_text()
    assert md.count("Human label: ____") == 5


def test_audit_takes_everything_when_small(runs, tmp_path):
    summaries, _ = runs
    out = write_report(summaries, tmp_path / "out", audit_size=50)["audit.jsonl"]
    assert len(out.read_text().splitlines()) == 19


def test_missing_details_file_is_named(runs, tmp_path):
    summaries, _ = runs
    summaries[1]["details"] = str(tmp_path / "nowhere.jsonl")
    with pytest.raises(FileNotFoundError, match=r"base / bios.*nowhere\.jsonl"):
        write_report(summaries, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written when the input is bad


def test_summary_missing_key_is_named(runs, tmp_path):
    summaries, _ = runs
    del summaries[0]["f1"], summaries[0]["tokens"]
    with pytest.raises(ValueError, match=r"summary 0 \(ewe / bios\): missing key\(s\) f1, tokens"):
        write_report(summaries, tmp_path / "out")


@pytest.mark.parametrize("mutate, message", [
    (lambda s, sw, p: s[0].update(precision="high"), r"summary 0 .*precision must be a number"),
    (lambda s, sw, p: s.append(dict(s[0])), r"method 'ewe' on dataset 'bios' appears twice"),
    (lambda s, sw, p: s.clear(), r"summaries is empty"),
    (lambda s, sw, p: sw[3].pop("value"), r"sweep point 3: missing key\(s\) value"),
    (lambda s, sw, p: sw[1].update(value=None), r"sweep point 1: value must be a number, a string or a boolean"),
    (lambda s, sw, p: p.write_text(p.read_text() + "{not json\n"), r"ewe\.jsonl:4: not JSON"),
    (lambda s, sw, p: p.write_text(p.read_text().replace('"unsupported"', '"maybe"', 1)),
     r"ewe\.jsonl:1, sentence 1, claim 0: label 'maybe' is not one of"),
    (lambda s, sw, p: p.write_text(p.read_text().replace('"method": "ewe"', '"method": "rag"', 1)),
     r"ewe\.jsonl:1: method 'rag' does not match its summary's 'ewe'"),
])
def test_bad_input_says_what_is_wrong(runs, tmp_path, mutate, message):
    summaries, sweeps = runs
    mutate(summaries, sweeps, tmp_path / "ewe.jsonl")
    with pytest.raises(ValueError, match=message):
        write_report(summaries, tmp_path / "out", sweeps=sweeps)


def test_bad_audit_size(runs, tmp_path):
    with pytest.raises(ValueError, match="audit_size"):
        write_report(runs[0], tmp_path / "out", audit_size=-1)


def test_eval_run_carries_the_checkers_sentence_records_into_jsonl_details_and_page(tmp_path, monkeypatch):
    """`ewe eval run` end to end on the scripted model: the checked method's results lines (ewe run's
    format) hold each kept sentence's verdict and cited passages (title, offsets); its details carry
    them, with the passage text the check read; the page shows them; the plain method shows none."""
    import test_eval
    from ewe.config import EWEConfig
    from ewe.runtime import Runtime
    from ewe.verify import FactChecker, StaticEvidenceSource
    from ewe.verify.types import Evidence

    def citing_runtime(backend):
        passage = Evidence("Marie Curie was a physicist and chemist.", "Marie Curie", 0.9,
                           source_id="wiki:Marie_Curie#4", start=310, end=350)
        return Runtime(EWEConfig(), fact_checker=FactChecker(backend, evidence=StaticEvidenceSource([passage]), k=2))

    monkeypatch.setattr(test_eval, "checking_runtime", citing_runtime)
    methods, eval_cfg, prompts = test_eval.eval_inputs(tmp_path, [{"id": "a",
                                                                   "prompt": "Tell me a bio of Marie Curie."}])
    out = tmp_path / "eval"
    test_eval.run_eval(methods, [str(prompts)], out, eval_config=eval_cfg,
                       loader=test_eval.ScriptedLoader(test_eval.LookupBackend()), progress=False)

    [result] = [json.loads(line) for line in (out / "toy" / "checked.jsonl").read_text().splitlines()]
    kept = {s["text"].strip(): s for s in result["sentences"]}
    first = kept["Marie Curie was a physicist."]
    assert first["checked"] and first["verdict"] == "supported"
    assert first["evidence"] == [{"title": "Marie Curie", "source_id": "wiki:Marie_Curie#4", "start": 310, "end": 350,
                                  "score": 0.9, "claim": "Marie Curie was a physicist."}]
    second = kept["She was born in Paris."]  # kept after its retries: unsupported, nothing cited
    assert second["checked"] and second["verdict"] == "unsupported" and second["evidence"] == []

    [details] = [json.loads(line) for line in (out / "toy" / "checked.details.jsonl").read_text().splitlines()]
    cited = [s for s in details["run_sentences"] if s["evidence"]]
    assert [e["text"] for s in cited for e in s["evidence"]] == ["Marie Curie was a physicist and chemist."]
    [plain] = [json.loads(line) for line in (out / "toy" / "plain.details.jsonl").read_text().splitlines()]
    assert "run_sentences" not in plain  # plain generation keeps no sentence records

    page = (out / "report" / "index.html").read_text()
    checked_part, plain_part = page.split("toy · checked")[1], page.split("toy · plain")[1].split("toy · checked")[0]
    assert "wiki:Marie_Curie#4 · chars 310–350" in checked_part
    assert "<blockquote>Marie Curie was a physicist and chemist.</blockquote>" in checked_part
    assert '<span class="verdict">unsupported</span>' in checked_part
    assert "checker: none, this method checks nothing while it writes" in plain_part
    assert plain_part.count('<span class="tag">checker</span> none</div>') == 2 and "not checked" not in plain_part
    # each response's wall time by part (issue 31): the checked method's in decode steps, checks among them
    assert details["stats"]["time_parts"]["seconds"]["checks"] >= 0
    assert re.search(r"<b>Time:</b> [\d.]+ s: \w[\w ]* [\d.]+ s \(\d+ decode steps\)", checked_part)
    assert re.search(r"<b>Time:</b> [\d.]+ s: ", plain_part)


def test_html_shows_where_a_prefix_judge_changed_the_answer(runs, tmp_path):
    """PrefixNLI's interventions (ewe.eval.harness.guidance) under each response: the step, the
    token the model preferred, the one written, and every candidate's scores."""
    from ewe.eval.harness import guidance

    event = {"type": "prefix_guide", "position": 4, "answer_position": 4, "top_before": 11, "top_after": 12,
             "chosen": 12, "top_before_text": " 1911", "chosen_text": " 1903",
             "candidates": [{"token": 11, "text": " 1911", "p_model": 0.6, "entailment": 0.02, "penalty": -19.46},
                            {"token": 12, "text": " 1903", "p_model": 0.3, "entailment": 0.97, "penalty": 0.0}]}
    row = {"text": "x", "trace": [{"type": "retrieve"}, event]}
    assert guidance(row) == [event] and guidance({"text": "x", "trace": []}) is None
    summaries, _ = runs
    recs = [json.loads(line) for line in open(summaries[1]["details"])]
    recs[0]["guidance"] = [event]
    _write_details(tmp_path / "base.jsonl", recs)
    html = write_report(summaries, tmp_path / "out")["index.html"].read_text()
    base = html.split("bios · base")[1]
    assert base.count("Guidance: 1 step where the prefix judge changed the top token") == 1
    assert "at answer token 4: “ 1911” &rarr; “ 1903”" in base
    assert "<td>“ 1911”</td><td>0.600</td><td>0.020</td><td>-19.460</td>" in base
    assert "Guidance:" not in html.split("bios · base")[0]
