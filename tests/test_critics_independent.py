"""Critics texts falsified by edits the judge never trained on (ewe.eval.falsify_independent) and
reworded (ewe.eval.paraphrase): each edit on sentences whose answer is known, the guards that keep an
edit a contradiction, the independence from the judge data's edit tables, and the built benchmark.
Reads the embedded summaries; no model is loaded.
"""
import json
import re
from collections import Counter

import pytest

from ewe import cli
from ewe.eval import critics
from ewe.eval.falsify import CATEGORIES
from ewe.eval.falsify_independent import FIELDS, LANGUAGES, NATIONALITIES, IndependentFalsifier, _NEGATED, _TURNED
from ewe.eval.paraphrase import PHRASES, reword
from ewe.judge.data import ANTONYMS, Article
from ewe.judge.rewrites import SYNONYMS
from ewe.verify.text import is_negated, numbers

ADA = Article("Ada Lovelace", "English mathematician (1815–1852)", "People", [
    "Ada Lovelace was an English mathematician and writer.",
    "She was the daughter of Lord Byron and worked with Charles Babbage in London.",
    "In 1843, she translated three papers on the engine, about 25,000 words in all.",
    "Her notes were published in September 1843 and she was able to describe an algorithm."])


def _every(make, s, seeds=range(12)):
    """What an edit makes of `s` over several seeds (the edits draw at random)."""
    return {make(IndependentFalsifier([ADA], seed), s) for seed in seeds}


def test_dates():
    f = IndependentFalsifier([ADA])
    assert f._year_transposed(ADA, "Lovelace was born in 1815.") == "Lovelace was born in 1851."
    assert f._year_transposed(ADA, "Lovelace was born in 1822.") is None  # 22 reads the same turned round
    assert f._year_transposed(ADA, "Lovelace worked on it until 1843.") is None  # a bound moved still holds
    assert f._year_transposed(ADA, "Lovelace was born in 1815 or 1816.") is None
    assert f._year_transposed(ADA, "The engine was rebuilt in 2019.") is None  # 2091 has not happened
    month = f._month(ADA, "Her notes were published in September 1843.")
    assert re.fullmatch(r"Her notes were published in (\w+) 1843\.", month) and "September" not in month
    assert f._month(ADA, "The notes appeared between May and September 1843.") is None


def test_numbers():
    f = IndependentFalsifier([ADA])
    counts = _every(lambda g, s: g._count_word(ADA, s), "She translated three papers on the engine.")
    assert None not in counts and all(re.fullmatch(r"She translated (\w+) papers on the engine\.", c) for c in counts)
    assert len(counts) > 2 and not any("three" in c for c in counts)
    assert f._count_word(ADA, "It was a mixture of the two.") is None  # "the two" refers; no count to change
    assert f._scale(ADA, "The notes ran to 2.5 million words.") == "The notes ran to 2.5 billion words."
    assert f._scale(ADA, "The notes ran to over 2 million words.") is None
    assert f._digits_transposed(ADA, "The notes ran to 25,300 words.") == "The notes ran to 25,030 words."
    assert f._digits_transposed(ADA, "The notes ran to 25,000 words.") == "The notes ran to 20,500 words."
    assert f._digits_transposed(ADA, "About 45% of it was notes.") is None  # an estimate moved may still hold


def test_people_places_stay_in_their_kind_and_off_lists():
    swapped = _every(lambda g, s: g.people_places(ADA, s), "Her notes were read in Italian.")
    assert all(re.fullmatch(r"Her notes were read in (\w+)\.", s).group(1) in LANGUAGES for s in swapped)
    assert "Her notes were read in Italian." not in swapped
    assert all("English" not in s for s in _every(lambda g, s: g.people_places(ADA, s),
                                                    "Babbage was a Belgian engineer."))  # the article says English
    nationality = _every(lambda g, s: g.people_places(ADA, s), "Babbage was a Belgian engineer.")
    assert all(re.fullmatch(r"Babbage was an? (\w+) engineer\.", s).group(1) in NATIONALITIES for s in nationality)
    assert IndependentFalsifier([ADA]).people_places(ADA, "It was translated into Spanish and Dutch.") is None
    assert IndependentFalsifier([ADA]).people_places(ADA, "Her letters, including Spanish ones, survive.") is None


def test_roles_relations_and_article_agreement():
    f = IndependentFalsifier([ADA])
    made = _every(lambda g, s: g._occupation(ADA, s), "Babbage was an astronomer.")
    field = next(fl for fl in FIELDS if "astronomer" in fl)
    for s in made:
        m = re.fullmatch(r"Babbage was (an?) (\w+)\.", s)
        assert m.group(2) in field and m.group(2) not in ("astronomer", "mathematician")  # the article's own word
        assert m.group(1) == ("an" if m.group(2)[0] in "aeiou" else "a")
    assert f._turned(ADA, "Babbage succeeded Lovelace as editor.") == "Babbage preceded Lovelace as editor."
    assert f._turned(ADA, "Babbage was her teacher.") == "Babbage was her student."
    assert f.role_relation(ADA, "Lovelace was the daughter of Lord Byron.") == "Lovelace was the sister of Lord Byron."


def test_negation_by_prefix_and_adverb():
    f = IndependentFalsifier([ADA])
    assert f._prefix_negated(ADA, "She was able to describe an algorithm.") == "She was unable to describe an algorithm."
    assert f._prefix_negated(ADA, "It was an unstable design.") == "It was a stable design."
    assert f._prefix_negated(ADA, "It was not possible then.") is None  # no double negation
    assert f._adverb(ADA, "She always signed with initials.") == "She never signed with initials."
    assert f._adverb(ADA, "The engine is still exhibited.") == "The engine is no longer exhibited."
    assert f.negation(ADA, "She was a writer.") is None


def test_cause_effect_leaves_out_the_judge_datas_before_after():
    f = IndependentFalsifier([ADA])
    assert f.cause_effect(ADA, "The flood led to the collapse.") == "The flood resulted from the collapse."
    assert f.cause_effect(ADA, "After the war, she moved to London.") is None
    assert f.cause_effect(ADA, "Most failures are due to wear.") is None  # "are despite wear" is no sentence
    with pytest.raises(ValueError, match="choose from"):
        f.edit("spelling", ADA, "Ada.")


def test_the_edit_tables_share_nothing_with_the_judge_datas():
    """Independent by construction: no swapped word pair is an ANTONYMS pair, no paraphrase is one of the
    judge data's synonyms."""
    pairs = set(_NEGATED.items()) | set(_TURNED.items()) | {(a, b) for fl in FIELDS for a in fl for b in fl if a != b}
    assert not {(a, b) for a, b in pairs if ANTONYMS.get(a) == b}
    assert not set(_NEGATED) & set(ANTONYMS) and not {w for fl in FIELDS for w in fl} & set(ANTONYMS)
    synonym_words = set(SYNONYMS) | {v for vs in SYNONYMS.values() for v in vs}
    assert not (set(PHRASES) | set(PHRASES.values())) & synonym_words


# --- the reworded text ---------------------------------------------------------------------------------


def test_reword_names_pronouns_and_fronted_dates():
    sentences = ["Ada Lovelace was an English mathematician.", "Ada Lovelace was the daughter of Lord Byron.",
                 "Ada Lovelace translated the notes in 1843.", "The notes were primarily her own work.",
                 "Ada Lovelace met Babbage when she was young in 1833."]
    assert reword(ADA, sentences) == [
        "Ada Lovelace was an English mathematician.",
        "She was the daughter of Lord Byron.",          # opens with the subject after a sentence that did
        "In 1843, Lovelace translated the notes.",      # a simple clause: the date goes to the front
        "The notes were chiefly her own work.",
        "Lovelace met Babbage when she was young in 1833."]  # the date may belong to the "when" clause: kept
    louis = Article("Louis XVI", "King of France", "People", ["Louis XVI was king.", "Louis XVI was executed."])
    assert reword(louis, louis.sentences)[1] == "Louis XVI was executed."  # no surname "XVI"; no pronoun known


# --- the benchmark built with them -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def rows():
    return critics.build(60, seed=0, rules="independent", paraphrase=True)


@pytest.fixture(scope="module")
def plain():
    return critics.build(60, seed=0, rules="independent")


def test_offsets_categories_and_provenance(rows):
    for r in rows:
        assert r["rules"] == "independent" and r["paraphrased"] is True
        assert " ".join(s["text"] for s in r["sentences"]) == r["text"]
        for s in r["sentences"]:
            assert r["text"][s["start"]:s["end"]] == s["text"]
        for f in r["falsified"]:
            assert r["text"][f["start"]:f["end"]] == f["altered"] != f["original"]
    counts = Counter(f["category"] for r in rows for f in r["falsified"])
    assert set(counts) == set(CATEGORIES), counts


def test_no_edit_is_one_the_judge_data_makes(plain):
    """The word an edit replaced and the word it put there: never an ANTONYMS pair, never a "not" put in
    or taken out (the judge data's negation)."""
    for r in plain:
        for f in r["falsified"]:
            old, new = f["original"].split(), f["altered"].split()
            gone, came = Counter(old) - Counter(new), Counter(new) - Counter(old)
            assert "not" not in gone and "not" not in came, f
            assert not any(ANTONYMS.get(a.strip(".,;").lower()) == b.strip(".,;").lower() for a in gone for b in came), f


def test_rewording_keeps_what_each_sentence_states(rows, plain):
    """The same texts with and without rewording: the same numbers, the same negation, the same falsified
    sentences; some sentences read differently."""
    changed = 0
    for r, p in zip(rows, plain):
        assert r["title"] == p["title"] and [f["sentence_index"] for f in r["falsified"]] == [
            f["sentence_index"] for f in p["falsified"]]
        for s, q in zip(r["sentences"], p["sentences"]):
            assert sorted(n.key for n in numbers(s["text"])) == sorted(n.key for n in numbers(q["text"]))
            assert is_negated(s["text"]) == is_negated(q["text"])
            changed += s["text"] != q["text"]
    assert changed >= 0.05 * sum(len(r["sentences"]) for r in rows)


def test_cli_builds_the_independent_benchmark(tmp_path):
    bench = tmp_path / "critics.jsonl"
    assert cli.main(["eval", "critics", "build", "--n", "6", "--seed", "3", "--rules", "independent", "--paraphrase",
                     "--out", str(bench)]) == 0
    assert [json.loads(line) for line in bench.read_text().splitlines()] == critics.build(
        6, seed=3, rules="independent", paraphrase=True)
    with pytest.raises(ValueError, match="rules 'mine'"):
        critics.build(5, rules="mine")
