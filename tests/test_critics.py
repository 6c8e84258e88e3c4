"""The Critics benchmark (ewe.eval.critics, ewe.eval.falsify): texts on held-out embedded-Wikipedia
articles with a recorded set of falsified sentences, and a critic's precision / recall / F1 at
finding them. Reads the embedded summaries; no model is loaded.
"""
import json
from collections import Counter

import pytest

from ewe import cli
from ewe.data import wiki
from ewe.eval import critics
from ewe.eval.falsify import CATEGORIES, Falsifier
from ewe.judge.data import Article, is_held_out


@pytest.fixture(scope="module")
def rows():
    return critics.build(60, seed=0)


@pytest.fixture(scope="module")
def articles():
    return {a.title: a for a in critics.held_out_articles(wiki.summaries())}


# --- the texts ---------------------------------------------------------------------------------


def test_offsets_are_exact(rows):
    for r in rows:
        assert " ".join(s["text"] for s in r["sentences"]) == r["text"]
        for s in r["sentences"]:
            assert r["text"][s["start"]:s["end"]] == s["text"]
        for f in r["falsified"]:
            assert r["text"][f["start"]:f["end"]] == f["altered"] == r["sentences"][f["sentence_index"]]["text"]


def test_each_text_is_its_article_with_the_falsified_sentences_changed(rows, articles):
    for r in rows:
        art = articles[r["title"]]
        written = critics.text_sentences(art)
        assert critics.MIN_SENTENCES <= len(r["sentences"]) <= critics.MAX_SENTENCES
        assert len(written) >= len(r["sentences"])
        falsified = {f["sentence_index"]: f for f in r["falsified"]}
        for i, s in enumerate(r["sentences"]):
            if i in falsified:
                f = falsified[i]
                assert f["original"] == written[i] and f["altered"] != f["original"]
                # the original is the article's sentence, at most with a leading pronoun made the subject
                assert any(f["original"] == a or f["original"].endswith(a.split(" ", 1)[1]) for a in art.sentences)
            else:
                assert s["text"] == written[i]  # the negatives are unaltered
        assert r["evidence"] == [art.passage()] and r["title"] in r["evidence"][0]


def test_every_category_appears_and_none_crowds_the_others_out(rows):
    counts = Counter(f["category"] for r in rows for f in r["falsified"])
    assert set(counts) == set(CATEGORIES), counts
    # the least used category the text allows goes first: those most texts allow stay level (cause-effect
    # needs a causal connective, which few summaries have)
    common = [counts[c] for c in CATEGORIES if c != "cause_effect"]
    assert max(common) - min(common) <= 3, counts


def test_error_free_share_and_errors_per_text(rows):
    assert sum(r["error_free"] for r in rows) == round(0.2 * len(rows))
    for r in rows:
        assert r["error_free"] == (not r["falsified"])
        if r["falsified"]:
            assert 1 <= len(r["falsified"]) <= max(1, min(3, len(r["sentences"]) // 3))
            assert len({f["sentence_index"] for f in r["falsified"]}) == len(r["falsified"])  # one edit a sentence
    assert all(not r["error_free"] for r in critics.build(5, seed=2, error_free_share=0.0))
    assert all(r["error_free"] for r in critics.build(5, seed=2, error_free_share=1.0))


def test_only_held_out_articles(rows):
    assert all(is_held_out(r["title"]) for r in rows)
    assert len({r["title"] for r in rows}) == len(rows) and len({r["id"] for r in rows}) == len(rows)


def test_the_same_seed_builds_the_same_benchmark(rows):
    assert critics.build(60, seed=0) == rows
    other = critics.build(60, seed=1)
    assert [r["title"] for r in other] != [r["title"] for r in rows]


def test_build_refuses_what_it_cannot_make():
    with pytest.raises(ValueError, match="between 0 and 1"):
        critics.build(5, error_free_share=1.5)
    with pytest.raises(ValueError, match="at least 1"):
        critics.build(0)
    with pytest.raises(ValueError, match="choose from"):
        critics.build(5, categories=("spelling",))
    with pytest.raises(ValueError, match="ask for at most that many"):
        critics.build(5000)


# --- the edits on sentences whose answer is known ------------------------------------------------


def _falsifier(seed=0):
    arts = [Article("Ada Lovelace", "English mathematician (1815–1852)", "People", [
                "Ada Lovelace was an English mathematician and writer.",
                "She was the daughter of Lord Byron and worked with Charles Babbage in London.",
                "In 1843, Lovelace translated 3 papers on the engine."]),
            Article("Grace Hopper", "American computer scientist (1906–1992)", "People", [
                "Grace Hopper was an American computer scientist.",
                "She worked with Howard Aiken in Cambridge and wrote a compiler."]),
            Article("Jane Austen", "English novelist (1775–1817)", "People", [
                "Jane Austen was an English novelist.", "She lived with Cassandra Austen in Bath."])]
    return Falsifier(arts, seed), arts[0]


def test_dates_and_numbers_are_told_apart_and_bounds_left_alone():
    for seed in range(10):
        f, ada = _falsifier(seed)
        s = "In 1843, Lovelace translated 3 papers on the engine."
        date, number = f.date(ada, s), f.number(ada, s)
        assert date and date.endswith("translated 3 papers on the engine.") and "1843" not in date
        assert number and number.startswith("In 1843, Lovelace translated ") and number != s
        for bounded in ("Lovelace translated over 30 papers.", "Lovelace wrote notes since 1843.",
                        "Apollo 11 landed on the Moon."):
            assert f.number(ada, bounded) is None and f.date(ada, bounded) is None


def test_names_kinship_negation_and_cause_effect():
    f, ada = _falsifier()
    s = "She worked with Charles Babbage in London."
    swapped = f.people_places(ada, s)
    # another article's name in the same slot, never one of this article (it could contain the old one)
    assert swapped in ("She worked with Howard Aiken in London.", "She worked with Cassandra Austen in London.",
                       "She worked with Charles Babbage in Cambridge.", "She worked with Charles Babbage in Bath.")
    assert f.role_relation(ada, "Lovelace was the daughter of Lord Byron.") in (
        "Lovelace was the sister of Lord Byron.", "Lovelace was the son of Lord Byron.")
    assert f.negation(ada, "Lovelace was a mathematician.") == "Lovelace was not a mathematician."
    assert f.negation(ada, "Lovelace was not a painter.") == "Lovelace was a painter."
    assert f.negation(ada, "Lovelace never married.") is None  # no double negation
    assert f.cause_effect(ada, "The flood led to the collapse of the bridge.") == \
        "The flood resulted from the collapse of the bridge."
    assert f.cause_effect(ada, "Because of the war, the games were cancelled.") == \
        "Despite the war, the games were cancelled."
    assert f.cause_effect(ada, "After the war, she moved to London.") == "Before the war, she moved to London."
    assert f.cause_effect(ada, "The unit is named after Ada Lovelace.") is None  # "after" is no event here
    assert f.cause_effect(ada, "Bath is the second-largest town, after its neighbour Bristol.") is None  # a rank
    assert f.edit("negation", ada, "Ada.") is None


# --- scoring -----------------------------------------------------------------------------------------


def _text(id_, sentences, falsified=()):
    """A benchmark row from sentences and {index: category} of the falsified ones."""
    spans, at = [], 0
    for s in sentences:
        spans.append({"text": s, "start": at, "end": at + len(s)})
        at += len(s) + 1
    falsified = dict(falsified)
    return {"id": id_, "title": id_, "text": " ".join(sentences), "sentences": spans, "evidence": [],
            "falsified": [{"sentence_index": i, "start": spans[i]["start"], "end": spans[i]["end"], "category": c,
                           "original": "", "altered": spans[i]["text"]} for i, c in sorted(falsified.items())],
            "error_free": not falsified}


BENCH = [_text("a", ["One is one.", "Two is three.", "Four is four."], {1: "date"}),
         _text("b", ["Five is five.", "Six is seven.", "Eight is nine."], {1: "number", 2: "negation"}),
         _text("c", ["Ten is ten.", "Eleven is eleven."])]


def _critique(id_, *spans, verdict="reject"):
    return {"id": id_, "claims": [{"start": a, "end": b, "verdict": verdict} for a, b in spans]}


def _flag_sentences(row, which):
    return _critique(row["id"], *[(s["start"], s["end"]) for i, s in enumerate(row["sentences"]) if which(i, row)])


def test_a_perfect_critic():
    falsified = lambda i, r: any(f["sentence_index"] == i for f in r["falsified"])  # noqa: E731
    result = critics.score(BENCH, [_flag_sentences(r, falsified) for r in BENCH])
    assert result["precision"] == result["recall"] == result["f1"] == 1.0
    assert result["false_alarm_rate"] == 0.0 and result["missing"] == []
    assert {c: v["recall"] for c, v in result["per_category"].items()} == {
        "date": 1.0, "number": 1.0, "people_places": None, "role_relation": None, "negation": 1.0, "cause_effect": None}


def test_a_critic_flagging_everything_and_one_flagging_nothing():
    result = critics.score(BENCH, [_flag_sentences(r, lambda i, r: True) for r in BENCH])
    assert result["recall"] == 1.0 and result["precision"] == 3 / 8  # 3 falsified of 8 sentences
    assert result["f1"] == pytest.approx(2 * 3 / 8 / (1 + 3 / 8))
    assert result["false_alarm_rate"] == 1.0 and result["counts"]["false_positives"] == 5
    quiet = [_critique(r["id"], *[(s["start"], s["end"]) for s in r["sentences"]], verdict="accept") for r in BENCH]
    result = critics.score(BENCH, quiet)
    assert result["precision"] is None and result["recall"] == 0.0 and result["f1"] == 0.0
    assert result["false_alarm_rate"] == 0.0 and result["counts"]["flagged_claims"] == 0


def test_overlap_rules():
    a = BENCH[0]  # "One is one. Two is three. Four is four.": sentence 1 (12..25) is falsified
    two_inside = _critique("a", (12, 15), (16, 25))  # two claims in one falsified sentence: one hit
    result = critics.score(BENCH, [two_inside])
    assert result["counts"]["found"] == 1 and result["counts"]["false_positives"] == 0
    assert result["precision"] == 1.0 and result["recall"] == 1 / 3
    touching = _critique("a", (0, 12), (25, 26))  # ends where it starts, starts where it ends: no overlap
    result = critics.score(BENCH, [touching])
    assert result["counts"]["found"] == 0 and result["counts"]["false_positives"] == 2
    straddling = _critique("a", (20, 30))  # into the next, unaltered sentence: still a hit
    assert critics.score(BENCH, [straddling])["counts"] == {
        "texts": 3, "error_free_texts": 1, "falsified": 3, "found": 1, "flagged_claims": 1, "false_positives": 0,
        "false_alarms": 0}
    assert a["text"][12:25] == "Two is three."
    b = BENCH[1]  # sentences 1 and 2 falsified: one flag over the whole text finds one of them, not both
    whole = critics.score(BENCH, [_critique("b", (0, len(b["text"])))])["counts"]
    assert whole["found"] == 1 and whole["false_positives"] == 0


def test_per_category_counting_and_missing_texts():
    b = BENCH[1]
    result = critics.score(BENCH, [_critique("b", (b["falsified"][0]["start"], b["falsified"][0]["end"])),
                                   _critique("c", (0, 3))])
    per = result["per_category"]
    assert per["number"] == {"falsified": 1, "found": 1, "recall": 1.0}
    assert per["negation"] == {"falsified": 1, "found": 0, "recall": 0.0}
    assert per["date"] == {"falsified": 1, "found": 0, "recall": 0.0}  # text "a" has no critique: no flags
    assert result["missing"] == ["a"]
    assert result["false_alarm_rate"] == 1.0  # the one error-free text was flagged
    assert result["precision"] == 0.5 and result["recall"] == 1 / 3


def test_bad_critiques_are_named():
    with pytest.raises(ValueError, match="'zzz' is not in the benchmark"):
        critics.score(BENCH, [_critique("zzz", (0, 3))])
    with pytest.raises(ValueError, match="'a': claim 0 spans 5..500"):
        critics.score(BENCH, [_critique("a", (5, 500))])
    with pytest.raises(ValueError, match="'a' has a second critique"):
        critics.score(BENCH, [_critique("a"), _critique("a")])


def test_table_and_chart(tmp_path):
    perfect = critics.score(BENCH, [_flag_sentences(r, lambda i, r: any(
        f["sentence_index"] == i for f in r["falsified"])) for r in BENCH])
    nothing = critics.score(BENCH, [])
    written = critics.write_table({"perfect": perfect, "silent": nothing}, tmp_path)
    table = (tmp_path / "critics.md").read_text()
    assert table.splitlines()[0].startswith("| Critic | Precision | Recall | F1 | False alarms | date | number |")
    assert "| perfect | 100.0 | 100.0 | 100.0 | 0.0 | 100.0 | 100.0 | – |" in table
    assert "| silent | – | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 | – |" in table
    assert written[critics.CHART].read_bytes().startswith(b"\x89PNG")


# --- the command line ----------------------------------------------------------------------------------


def test_cli_builds_and_scores(tmp_path, capsys):
    bench = tmp_path / "critics.jsonl"
    assert cli.main(["eval", "critics", "build", "--n", "8", "--seed", "3", "--out", str(bench)]) == 0
    rows = [json.loads(line) for line in bench.read_text().splitlines()]
    assert rows == critics.build(8, seed=3)
    critiques = tmp_path / "oracle.jsonl"
    critiques.write_text("".join(json.dumps(_critique(r["id"], *[(f["start"], f["end"]) for f in r["falsified"]]))
                                 + "\n" for r in rows))
    out = tmp_path / "scores"
    assert cli.main(["eval", "critics", "score", "--bench", str(bench), "--critiques", str(critiques),
                     "--out", str(out)]) == 0
    assert "| oracle | 100.0 | 100.0 | 100.0 | 0.0 |" in capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == {"critics.md", critics.CHART, "critics.json"}
    assert json.loads((out / "critics.json").read_text())["oracle"]["f1"] == 1.0

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_critique(rows[0]["id"])) + "\n" + json.dumps(_critique("nope")) + "\n")
    with pytest.raises(SystemExit, match=r"bad\.jsonl:2: id 'nope' is not in the benchmark"):
        cli.main(["eval", "critics", "score", "--bench", str(bench), "--critiques", str(bad), "--out", str(out)])
    with pytest.raises(SystemExit, match=r"oracle\.jsonl:1: not a benchmark row"):
        cli.main(["eval", "critics", "score", "--bench", str(critiques), "--critiques", str(bad), "--out", str(out)])


def test_critics_run_side_by_side_scores_and_resumes(tmp_path):
    """`ewe eval critics run` with evidence given (no datastore): one critiques file per critic,
    scored with its cost per text; a rerun critiques nothing again."""
    from ewe.eval.critics_run import run
    from ewe.files import write_jsonl

    bench = tmp_path / "bench.jsonl"
    write_jsonl(bench, critics.build(3, seed=2, error_free_share=0.34))
    out = tmp_path / "run"
    results = run(bench, out, critics=("ita", "alignment"), evidence=("given",), progress=False)
    assert list(results) == ["ita-given", "alignment-given"]
    for name, r in results.items():
        lines = (out / f"{name}.jsonl").read_text().splitlines()
        assert len(lines) == 3 and r["counts"]["texts"] == 3 and r["missing"] == []
        assert r["cost"]["judged_claims_per_text"] > 0 and r["cost"]["searches_per_text"] == 0
    assert json.loads((out / "ita-given.jsonl").read_text().splitlines()[0])["checker"].startswith("ita(")
    table = (out / "critics.md").read_text()
    assert "| ita-given |" in table and "claims judged/text" in table and (out / critics.CHART).is_file()
    again = run(bench, out, critics=("ita", "alignment"), evidence=("given",), progress=False)
    assert len((out / "ita-given.jsonl").read_text().splitlines()) == 3
    assert {k: v["f1"] for k, v in again.items()} == {k: v["f1"] for k, v in results.items()}
    with pytest.raises(ValueError, match="unknown critic or evidence mode"):
        run(bench, out, critics=("flat",), progress=False)
