"""Unique claims: CORE-style grouping of claims that restate each other, the scorer counting each
claim once, and the loop's one-way "adds nothing new" test."""
from __future__ import annotations

import json

import pytest

from ewe.config import EWEConfig
from ewe.eval.scorer import Scorer
from ewe.judge.checker import shipped_judge
from ewe.runtime import Runtime
from ewe.verify import FactChecker, StaticEvidenceSource
from ewe.verify.redundancy import CONTAINED, EXACT, MUTUAL, SAME_WORDS, Redundancy, select_unique
from ewe.verify.types import SUPPORTED, UNSUPPORTED, Evidence, Verdict


class NoJudge:
    """Fails if the judge is asked: the lexical rules must decide these cases alone."""

    def probabilities(self, claims, passages):
        raise AssertionError(f"judge asked about {list(zip(claims, passages))}")


# -- the grouping, by hand ----------------------------------------------------------------------


def test_unique_set_keeps_the_earliest_of_linked_claims():
    g = select_unique(4, {(0, 2): EXACT, (1, 3): MUTUAL})
    assert g.kept == [0, 1] and g.merged == {2: (0, EXACT), 3: (1, MUTUAL)}


def test_a_chain_keeps_a_maximum_set_not_one_per_component():
    # 0-1 and 1-2 linked, 0 and 2 not: CORE keeps {0, 2} (two claims), not one per connected group
    g = select_unique(3, {(0, 1): MUTUAL, (1, 2): MUTUAL})
    assert g.kept == [0, 2] and g.merged == {1: (0, MUTUAL)}


def test_large_groups_fall_back_to_a_greedy_set():
    n = 20
    links = {(i, j): EXACT for i in range(n) for j in range(i + 1, n)}
    g = select_unique(n, links)
    assert g.kept == [0] and set(g.merged) == set(range(1, n))


def test_lexical_rules_link_reordered_words_and_keep_numbers_and_negation_apart():
    r = Redundancy(NoJudge())
    links = r.links(["Marie Curie was a scientist, renowned for her work on radioactivity.",
                     "Marie Curie was a renowned scientist known for her work on radioactivity.",
                     "marie curie was a scientist renowned for her work on radioactivity"])
    assert links == {(0, 1): SAME_WORDS, (0, 2): EXACT, (1, 2): SAME_WORDS}
    said = r.novel(["Marie Curie was a physicist.", "Marie Curie was born in 1867."],
                   ["Marie Curie was a physicist and a chemist.", "Marie Curie was born in Warsaw in 1867."])
    assert said == [(0, CONTAINED), (1, CONTAINED)]


# -- with the shipped judge ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def redundancy():
    return Redundancy(shipped_judge)


def test_the_judge_links_a_paraphrase_and_not_different_facts(redundancy):
    texts = ["Marie Curie was born in Warsaw.", "Marie Curie won the Nobel Prize in Physics in 1903.",
             "Marie Curie's birthplace was Warsaw.", "Marie Curie won the Nobel Prize in Chemistry in 1911.",
             "Marie Curie was born in 1868."]
    g = redundancy.group(texts)
    assert g.kept == [0, 1, 3, 4] and g.merged == {2: (0, MUTUAL)}


def test_negated_and_changed_claims_are_new(redundancy):
    said = redundancy.novel(["Marie Curie was not a physicist.", "Marie Curie was born in 1868."],
                            ["Marie Curie was a physicist.", "Marie Curie was born in 1867."])
    assert said == [None, None]


class AlwaysEntails:
    """A judge that finds every premise entails every hypothesis, and records what it was asked."""

    def __init__(self):
        self.asked = []

    def probabilities(self, claims, passages):
        import torch

        self.asked += list(zip(claims, passages))
        return torch.tensor([[0.99, 0.01, 0.0]] * len(claims))


def test_the_subjects_name_alone_never_sends_two_claims_to_the_judge():
    """Every claim of a bio holds the subject's name: sharing it is no sign of a restatement. A
    claim that shares nothing else (no other word, no number) with the answer so far is new
    without asking the judge (which once found "her father loved mathematics" to entail "she was
    born into a family of mathematicians", and the answer ended there); one sharing a word is asked."""
    judge = AlwaysEntails()
    r = Redundancy(judge)
    earlier = ["Ada Lovelace's father was a wealthy merchant who loved mathematics."]
    new = ["Ada Lovelace was born into a family of mathematicians.", "Ada Lovelace studied mathematics in London."]
    said = r.novel(new, earlier, subject="Ada Lovelace")
    assert said[0] is None and said[1] is not None
    assert [c for c, _ in judge.asked] == [new[1]]
    assert r.novel(new[:1], earlier)[0] is not None  # without the subject the name is a shared word
    assert r.links(["Ada Lovelace was born in 1815.", "Ada Lovelace's birth year was 1815."], "Ada Lovelace") == {
        (0, 1): MUTUAL}  # a shared number still goes to the judge


def test_a_claim_naming_the_subject_repeats_one_that_said_it_with_a_pronoun():
    """The extractor leaves "It" unresolved where the answer named no subject before it; the same
    claim with the subject named adds nothing. Another subject's claim ("Her sister ...") is not
    one the subject's name restates."""
    r = Redundancy(NoJudge())
    earlier = ["It is a homotopy invariant, meaning that it is preserved under homotopy."]
    said = r.novel(["The fundamental group is a homotopy invariant, meaning that it is preserved under homotopy."],
                   earlier, subject="Fundamental group")
    assert said == [(0, CONTAINED)]
    strict = Redundancy(AlwaysRefuses())  # the pair shares words: the judge is asked, and says no
    assert strict.novel(["Marie Curie was born in Warsaw."], ["Her sister was born in Warsaw."],
                        subject="Marie Curie") == [None]
    assert strict.novel(["Marie Curie was born in Warsaw."], ["She was born in Warsaw."],
                        subject="Marie Curie") == [(0, CONTAINED)]


class AlwaysRefuses:
    def probabilities(self, claims, passages):
        import torch

        return torch.tensor([[0.01, 0.99, 0.0]] * len(claims))


CURIE = "Tell me a bio of Marie Curie."
SAID = ["Marie Curie was a physicist.", "She won two Nobel prizes."]


def test_a_sentence_joining_two_earlier_ones_repeats_them_though_its_clause_is_new():
    from ewe.verify.redundancy import ATOMIC_EXACT, sentence_repeats

    joined = "Marie Curie was a physicist who won two Nobel prizes."
    refuses = Redundancy(AlwaysRefuses())  # the clause test finds the joined clause new
    earlier_claims = ["Marie Curie was a physicist.", "Marie Curie won two Nobel prizes."]
    assert sentence_repeats(refuses, joined, [joined], SAID, earlier_claims, "Marie Curie") == []
    why = sentence_repeats(refuses, joined, [joined], SAID, earlier_claims, "Marie Curie", CURIE)
    assert [(w["claim"], w["why"]) for w in why] == [("Marie Curie was a physicist.", ATOMIC_EXACT),
                                                      ("Marie Curie won two Nobel prizes.", ATOMIC_EXACT)]


@pytest.mark.parametrize("sentence", [
    "Marie Curie was a physicist who was born in Warsaw.",  # one half new
    "Marie Curie was a scientist who won two Nobel prizes.",  # a paraphrase: lexical only, never the judge
    "She was a physicist who won two Nobel prizes in 1911.",  # a number more
])
def test_a_joined_sentence_with_anything_new_is_no_repeat(sentence):
    from ewe.verify.redundancy import atomic_repeats

    assert atomic_repeats(sentence, SAID, CURIE) == []


def test_a_cut_off_tail_with_no_claim_is_dropped_when_an_earlier_sentence_holds_its_words(redundancy):
    from ewe.verify.claims import RuleClaimExtractor
    from ewe.verify.redundancy import CUT_OFF, drop_repeats

    first = "Marie Curie was raised in Warsaw, with a father who was a teacher."
    tail = "Marie Curie was raised in Warsaw, with a father who was a"
    assert RuleClaimExtractor().extract(tail, prompt=CURIE).claims == []
    text = f"{first}\n\n{tail}"
    assert drop_repeats(redundancy, RuleClaimExtractor(), text, CURIE) == (text, [])  # not cut off: kept
    kept, dropped = drop_repeats(redundancy, RuleClaimExtractor(), text, CURIE, cut_off=True)
    assert kept == first and [(d["sentence"], d["repeats"][0]["why"]) for d in dropped] == [(tail, CUT_OFF)]


@pytest.mark.parametrize("tail,repeats", [
    ("In 186", True),  # the opening digits of an earlier number
    ("She was born in Warsaw in 186", True),
    ("She was born in Warsaw in 187", False),  # another number
    ("She was not born in", False),  # a negation the earlier sentence lacks
    ("She moved to Paris", False),  # a new word
    ("She was", False),  # no content word: nothing said, nothing repeated
])
def test_what_a_cut_off_tail_repeats(tail, repeats):
    from ewe.verify.redundancy import cut_off_repeats

    assert bool(cut_off_repeats(tail, ["Marie Curie was born in Warsaw in 1867.", "She won two Nobel prizes."])) is repeats


# -- the scorer counts each claim once -------------------------------------------------------------

TRUE = {"Marie Curie was a physicist.", "Marie Curie won two Nobel prizes.", "Marie Curie was born in Warsaw.",
        "Marie Curie's birthplace was Warsaw."}


class LookupBackend:
    name = "lookup"

    def check_claims(self, claims, evidence_per_claim):
        return [Verdict(c, SUPPORTED if c.text in TRUE else UNSUPPORTED, 1.0 if c.text in TRUE else 0.0, list(ev),
                        self.name) for c, ev in zip(claims, evidence_per_claim)]


def _score(tmp_path, texts, redundancy):
    results = tmp_path / "m.jsonl"
    results.write_text("".join(json.dumps({"id": i, "prompt": "Tell me a bio of Marie Curie.", "text": t}) + "\n"
                               for i, t in enumerate(texts)))
    checker = FactChecker(LookupBackend(), evidence=StaticEvidenceSource([Evidence("Curie passage", "Marie Curie")]))
    scorer = Scorer(Runtime(EWEConfig(), fact_checker=checker), use_articles=False, redundancy=redundancy)
    return scorer.check_file(results, tmp_path / "d.jsonl", "m", "toy", progress=False)


def test_a_repeated_answer_scores_what_its_unrepeated_form_scores(tmp_path, redundancy):
    once = "Marie Curie was a physicist. She was born in Paris. She won two Nobel prizes."
    sentences = once.split(". ")
    repeated = ". ".join(s.rstrip(".") + ". " + s.rstrip(".") for s in sentences) + "."
    a, b = _score(tmp_path, [once, repeated], redundancy)
    assert (a["n_claims"], a["n_supported"]) == (b["n_claims"], b["n_supported"]) == (3, 2)
    assert (b["n_claims_raw"], b["n_supported_raw"]) == (6, 4) and b["repeated_sentences"] == 3
    assert a["repeated_sentences"] == 0 and a["n_claims_raw"] == 3
    dup = [c for s in b["sentences"] for c in s["claims"] if "duplicate_of" in c]
    assert len(dup) == 3 and all(c["duplicate_of"]["why"] == EXACT for c in dup)


def test_a_paraphrase_of_an_earlier_sentence_counts_once(tmp_path, redundancy):
    [d] = _score(tmp_path, ["Marie Curie was born in Warsaw. Marie Curie's birthplace was Warsaw. "
                            "Marie Curie was a physicist."], redundancy)
    assert (d["n_claims"], d["n_supported"], d["n_claims_raw"]) == (2, 2, 3)
    [dup] = [c for s in d["sentences"] for c in s["claims"] if "duplicate_of" in c]
    assert dup["duplicate_of"]["sentence"] == 0 and dup["duplicate_of"]["why"] == MUTUAL


def test_details_counted_before_unique_scoring_are_redone_from_their_claims(tmp_path, redundancy):
    [d] = _score(tmp_path, ["Marie Curie was a physicist. Marie Curie was a physicist."], redundancy)
    old = {k: v for k, v in d.items() if k not in ("dedup", "n_claims_raw", "n_supported_raw", "repeated_sentences")}
    old.update(n_claims=2, n_supported=2)
    for s in old["sentences"]:
        for c in s["claims"]:
            c.pop("duplicate_of", None)
    (tmp_path / "d.jsonl").write_text(json.dumps(old) + "\n")
    [again] = _score(tmp_path, ["Marie Curie was a physicist. Marie Curie was a physicist."], redundancy)
    assert (again["n_claims"], again["n_supported"], again["n_claims_raw"]) == (1, 1, 2)


def test_compare_refuses_details_counted_with_repeats(tmp_path):
    from ewe.eval.compare import claim_counts

    path = tmp_path / "old.details.jsonl"
    path.write_text(json.dumps({"id": "a", "n_claims": 6, "n_supported": 6}) + "\n")
    with pytest.raises(ValueError, match="counted before unique-claim scoring"):
        claim_counts(path)


def test_a_whole_answer_loses_its_repeated_sentences_and_keeps_the_rest(redundancy):
    from ewe.verify.claims import RuleClaimExtractor
    from ewe.verify.redundancy import drop_repeats

    text = ("Marie Curie was a physicist and a chemist. She was a physicist. She won two Nobel prizes.\n"
            "She won two Nobel prizes.")
    kept, dropped = drop_repeats(redundancy, RuleClaimExtractor(), text, "Tell me a bio of Marie Curie.")
    assert kept == "Marie Curie was a physicist and a chemist. She won two Nobel prizes."
    assert [d["sentence"] for d in dropped] == ["She was a physicist.", "She won two Nobel prizes."]
    same = "Marie Curie was a physicist. She won two Nobel prizes. "
    assert drop_repeats(redundancy, RuleClaimExtractor(), same, "Tell me a bio of Marie Curie.") == (same, [])


def test_a_whole_answer_method_traces_the_sentences_it_dropped():
    """What A2R, Full-VR and CoVe return without their repeats is in the trace, and the trace renders."""
    from types import SimpleNamespace

    from ewe.config import CheckerConfig
    from ewe.controller.trace import Trace, render
    from ewe.methods.calls import without_repeats

    runtime = SimpleNamespace(config=SimpleNamespace(checker=CheckerConfig()))
    trace = Trace()
    kept = without_repeats(runtime, "Marie Curie won two Nobel prizes. Marie Curie won two Nobel prizes.",
                           "Tell me a bio of Marie Curie.", trace)
    assert kept == "Marie Curie won two Nobel prizes."
    [event] = trace.to_list()
    assert event["type"] == "repeats_dropped" and event["dropped"][0]["sentence"] == "Marie Curie won two Nobel prizes."
    assert "dropped 1 sentence(s)" in render(trace.to_list())
    trace = Trace()  # and the sentences that are no answer, one event each
    kept = without_repeats(runtime, "Marie Curie won two Nobel prizes. I hope this helps you.",
                           "Tell me a bio of Marie Curie.", trace)
    assert kept == "Marie Curie won two Nobel prizes."
    [event] = trace.to_list()
    assert (event["type"], event["reason"], event["cut_off"]) == ("no_answer_dropped", "meta", False)
    assert "dropped a sentence that is no answer (meta)" in render(trace.to_list())
