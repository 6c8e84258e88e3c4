"""The contradiction veto's rules (ewe/verify/veto.py, issue 57): a number paired with another
event of the passage, and a number with another scale word, unit or era. The pairing rule is
pure text; the unit rule runs through the alignment checker's spans (MiniLM embeddings)."""
import pytest

from ewe.verify.types import SUPPORTED, Claim, Evidence, Verdict
from ewe.verify.veto import ContradictionVeto, mispaired

CURIE = ("Maria Salomea Skłodowska Curie, better known as Marie Curie was a Polish and naturalised-French physicist "
         "and chemist. She shared the 1903 Nobel Prize in Physics with her husband, Pierre Curie. She won the 1911 "
         "Nobel Prize in Chemistry for the discovery of the elements radium and polonium.")


@pytest.mark.parametrize("claim", [
    "In 1903, she won the Nobel Prize in Chemistry.",
    "Marie Curie won the Nobel Prize in Physics in 1911.",
])
def test_a_year_given_to_another_event_of_the_passage_is_vetoed(claim):
    why = mispaired(claim, [CURIE])
    assert why is not None and why.startswith("mispaired")


@pytest.mark.parametrize("claim", [
    "In 1903, she shared the Nobel Prize in Physics.",  # paired as the passage pairs them
    "In 1911, she won the Nobel Prize in Chemistry.",
    "In 1903, she won the Nobel Prize.",  # no name of the event that the passage gives another year
    "She won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",  # two years: not read
    "In 1925, she visited Warsaw.",  # a year the passage never states: the aligned sentence's numbers decide
])
def test_a_year_paired_as_the_passage_pairs_it_is_not(claim):
    assert mispaired(claim, [CURIE]) is None


class AlwaysSupported:
    name = "always"

    def check_claims(self, claims, evidence_per_claim):
        return [Verdict(c, SUPPORTED, 0.99, list(ev), self.name) for c, ev in zip(claims, evidence_per_claim)]


@pytest.fixture(scope="module")
def veto():
    from ewe.verify.alignment import AlignmentChecker

    return ContradictionVeto(AlwaysSupported(), AlignmentChecker())


@pytest.mark.slow
@pytest.mark.parametrize("claim, evidence, vetoed", [
    ("Burmese is spoken by 42.9 billion people.", "Burmese is spoken by 42.9 million people worldwide.", True),
    ("Burmese is spoken by 42.9 million people.", "Burmese is spoken by 42.9 million people worldwide.", False),
    ("The river is 40 miles long.", "The river is 40 km long and flows into the sea.", True),
    ("The city was founded in 753 AD.", "The city was founded in 753 BC according to legend.", True),
    ("The city was founded in 753 BC.", "The city was founded in 753 BC according to legend.", False),
    # the same amount written another way is no contradiction
    ("Burmese is spoken by 42,900,000 people.", "Burmese is spoken by 42.9 million people worldwide.", False),
    ("The river is 40 kilometres long.", "The river is 40 km long and flows into the sea.", False),
    ("The tower weighs 10,100 tons.", "It is 330 metres tall and weighs 10,100 tonnes.", False),
    # a unit with another word before it, and a sentence aligned below support_sim by its digits
    ("The lake holds 23,600 cubic miles of water.", "The lake holds 23,600 cubic kilometres of water.", True),
    ("The Eiffel Tower is 330 feet tall.", "The Eiffel Tower is a lattice tower in Paris. It is 330 metres tall "
     "and weighs 10,100 tonnes.", True),
])
def test_a_number_with_another_scale_word_unit_or_era_is_vetoed(veto, claim, evidence, vetoed):
    [v] = veto.check_claims([Claim(claim, claim, 0, len(claim))], [[Evidence(evidence, "", 0.9)]])
    assert (v.label != SUPPORTED) == vetoed, v.rationale


@pytest.mark.slow
def test_another_number_beside_the_claims_own_is_no_contradiction(veto):
    """"330 metres" in the sentence that states the claim's "10,100 tonnes" does not veto it, even
    when the span is not clean for another reason (here the claim's names, absent from a plain
    passage's "It ...")."""
    claim = "The Eiffel Tower weighs 10,100 tonnes."
    ev = Evidence("The tower was built in Paris. It is 330 metres tall and weighs 10,100 tonnes.", "", 0.9)
    assert veto.contradiction(Claim(claim, claim, 0, len(claim)), [ev]) is None


GAY_LUSSAC = Evidence("Joseph Louis Gay-Lussac (1778–1850) was a French chemist and physicist. He is known for "
                      "two laws related to gases and for his work on alcohol-water mixtures.", "", 0.9)


@pytest.mark.slow
@pytest.mark.parametrize("claim, evidence, vetoed", [
    ("Joseph Louis Gay-Lussac was born in 1778 in Paris.", GAY_LUSSAC, True),  # Paris: named by no passage
    ("Joseph Louis Gay-Lussac was born in 1778 in Paris.",
     Evidence(GAY_LUSSAC.text + " He was born in 1778 and taught in Paris.", "", 0.9), False),
    ("Born in 1778, Joseph Louis Gay-Lussac was a French chemist.", GAY_LUSSAC, False),  # a first word is no name
    ("Joseph Louis Gay-Lussac was a French chemist in Paris.", GAY_LUSSAC, False),  # no number: names never veto
])
def test_a_fact_with_a_number_given_a_name_no_passage_gives_is_vetoed(veto, claim, evidence, vetoed):
    why = veto.contradiction(Claim(claim, claim, 0, len(claim)), [evidence])
    assert (why is not None and why.startswith("unattested")) == vetoed, why


def test_check_and_critique_veto_by_default_unless_a_config_or_an_option_says_otherwise(monkeypatch):
    """`ewe check` / `ewe critique` with no --config check as the default loop does (the veto on);
    an option or a configuration file decides where given; other commands are left alone."""
    from ewe import cli
    from ewe.api import EWE

    seen = []
    monkeypatch.setattr(EWE, "from_config", classmethod(lambda cls, config, **kw: seen.append((config, kw))))
    parser = cli.build_parser()
    for argv in (["check", "x"], ["critique", "--input", "a", "--output", "b"],
                 ["check", "x", "--set", "checker.veto=none"], ["check", "x", "--config", "configs/ra.yaml"],
                 ["generate", "x"]):
        cli._load_ewe(parser.parse_args(argv))
    vetoes = [kw.get("checker.veto") for _, kw in seen]
    assert vetoes == ["contradiction", "contradiction", "none", None, None]
    assert [kw["load_model"] for _, kw in seen] == [False, False, False, False, True]


def test_check_prints_a_vetoed_claim_with_its_reason_not_a_capped_score(monkeypatch, capsys):
    from types import SimpleNamespace

    from ewe import cli
    from ewe.verify.alignment import AlignmentChecker
    from ewe.verify.types import SentenceCheck

    class Accepts:
        name = "judge"

        def check_claims(self, claims, evidence):
            return [Verdict(c, SUPPORTED, 0.9, list(ev), "judge", rationale="entailed") for c, ev in zip(claims, evidence)]

    claim = Claim("Hans Krebs won the Nobel Prize in 1903.", "Hans Krebs won the Nobel Prize in 1903.")
    [vetoed] = ContradictionVeto(Accepts(), AlignmentChecker()).check_claims(
        [claim], [[Evidence("Hans Krebs won the Nobel Prize in 1953.", "Hans Krebs")]])
    check = SentenceCheck(claim.text, [claim], [vetoed])
    monkeypatch.setattr(cli, "_load_ewe", lambda args: SimpleNamespace(check=lambda *a, **kw: check))
    assert cli.main(["check", claim.text]) == 0
    out = capsys.readouterr().out
    assert "[unsupported: vetoed] Hans Krebs won" in out and "evidence has 1953 where the claim has 1903" in out
    assert "0.49" not in out


def test_the_judges_evaluation_counts_a_vetoed_claim_as_not_passing():
    """`ewe judge eval` / `operating-point` score a sentence by its claims' scores against a threshold
    (0.3): a vetoed claim keeps its score up to 0.49, yet the loop rewrites it by its label, so the
    evaluation counts it 0."""
    from ewe.judge.evaluate import sentence_score
    from ewe.verify.types import UNSUPPORTED, SentenceCheck

    claim = Claim("In 1903, she won the Nobel Prize in Chemistry.")
    vetoed = Verdict(claim, UNSUPPORTED, 0.49, [], "minilm-cross+veto", rationale="mispaired: ...")
    judged = Verdict(claim, UNSUPPORTED, 0.2, [], "minilm-cross")
    kept = Verdict(claim, SUPPORTED, 0.9, [], "minilm-cross")
    assert sentence_score(SentenceCheck(claim.text, [claim], [kept, vetoed])) == 0.0
    assert sentence_score(SentenceCheck(claim.text, [claim], [kept, judged])) == 0.2
    assert sentence_score(SentenceCheck(claim.text, [claim], [kept])) == 0.9
