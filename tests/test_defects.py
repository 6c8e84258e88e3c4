"""The scorer's own defect counts (ewe/eval/defects.py), pinned on fixed answers: they must not
move when the loop's rules (verify/degenerate.py, verify/subject.py, verify/redundancy.py) do."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ewe.eval.defects import (DEFECTS, defect_counts, loop_sentence, mark_defects, meta_sentence, name_words,
                              off_subject_claim, person_asked, repeated_sentences)

LOOPS = [
    'He is often referred to as "the father of modern drama" and is often referred to as "the father of modern '
    'theatre" and is often referred to as "the father of realism".',
    "She was named the American Film Institute's 2019 Best Female Actress, 2020 Best Female Actress, 2021 Best "
    "Female Actress and 2022 Best Female Actress.",
    "He was known as the Godfather of Soul, Mr. Dynamite, the Hardest-Working Man in Show Business, the Godfather "
    "of Soul, Mr. Dynamite and Soul Brother No. 1.",
    "Russian poet, poet, poet, poet, poet.",
    "He designed parks including Forest Park in Portland, Oregon, and Forest Park in Portland, Oregon.",
    "He became a scientist and mathematician, and he became a scientist and mathematician.",
]
NOT_LOOPS = [
    "She won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",
    "He studied at the University of Vienna and later taught at the University of Graz.",
    "Marie Curie was born in Warsaw in 1867 and died in Passy in 1934.",
    "She was Queen of France from 1137 to 1152 as the wife of King Louis VII, and Queen of England from 1154 to "
    "1189 as the wife of King Henry II.",
    "She was ranked world No. 1 in women's singles for 332 weeks and world No. 1 in women's doubles for 237 weeks.",
]
META = [
    "Sure, here is a short biography of Ada Lovelace.",
    "Here are some facts about his life.",
    "Your bio is filled with a wealth of information about William Blackstone.",
    "To add to the narrative, I'll just add a few more details.",
    "I hope this helps.",
    "Let me know if you want more.",
    "The article highlights the era of New Imperialism.",
    "A highly detailed and informative answer.",
    "A brilliant introduction to Dynamical Systems Theory.",
    "This article delves into the fascinating world of dynamical systems.",
    "The paragraph provides specific details about Dar es Salaam.",
    "The description is concise and easy to follow.",
    'The mention of "the Arab homeland" is a nice touch.',
    "In the context of the article, the family is referred to as Turdidae.",
    "This is a detailed description of the string instrument classification.",
    "(from the article on Syllable)",
    "You've already provided a comprehensive overview of fatigue.",
    "What topic would you like to discuss?",
]
NOT_META = [
    "Charles I would later be executed in 1649.",
    "He fought in World War I and was wounded in 1916.",
    'She starred in "I Love Lucy" from 1951 to 1957.',
    "Here, in 1905, he published four papers.",
    "Elizabeth I was Queen of England.",
    "The text of the treaty was signed in 1648.",
    "A brief description of the species was published by Linnaeus in 1758.",
    "A detailed account of the battle was written by Thucydides.",
    "The source texts mention the thunder-god Thor.",
    "This is an example of Gothic architecture.",
    "The story follows a young girl named Chihiro.",
]


@pytest.mark.parametrize("text, loop", [(t, True) for t in LOOPS] + [(t, False) for t in NOT_LOOPS])
def test_a_sentence_that_goes_round_is_a_loop_and_one_naming_two_like_things_is_not(text, loop):
    assert loop_sentence(text) is loop


@pytest.mark.parametrize("text, meta", [(t, True) for t in META] + [(t, False) for t in NOT_META])
def test_talk_to_the_user_is_meta_and_a_regnal_i_a_title_or_here_as_a_place_is_not(text, meta):
    assert meta_sentence(text) is meta


def test_a_sentence_repeats_an_earlier_one_by_its_words_not_by_its_topic():
    texts = ["Marie Curie was a Polish physicist and chemist.",
             "She discovered polonium and radium.",
             "Marie Curie was a Polish-born physicist and chemist.",  # the first again, one word changed
             "She discovered polonium and radium.",  # word for word
             "Marie Curie won the Nobel Prize in Physics in 1903.",  # same subject, new fact
             "She was a physicist."]  # too few content words to judge: not counted
    assert repeated_sentences(texts) == [False, False, True, True, False, False]


def test_only_prompts_about_a_person_have_a_person_and_titles_do_not_identify_them():
    assert person_asked("Tell me a bio of Gustav Klimt.") == "Gustav Klimt"
    assert person_asked("Who was Ada Lovelace?") == "Ada Lovelace"
    assert person_asked("Tell me a bio of Augustus II.", topic="Augustus II the Strong") == "Augustus II the Strong"
    assert person_asked("What can you tell me about The Legend of Zelda?") is None
    assert person_asked("Explain the theory of General Relativity.") is None
    assert name_words("Prince Eugene of Savoy") == {"eugene", "savoy"}
    assert name_words("H. G. Wells") == {"wells"}


@pytest.mark.parametrize("claim, person, off", [
    ("Landscape painting is the depiction in painting of natural scenery.", "Gustav Klimt", True),
    ("The Prince is a 16th-century political treatise written by Niccolò Machiavelli.", "Prince Eugene of Savoy", True),
    ("Klimt painted The Kiss in 1908.", "Gustav Klimt", False),
    ("She was born in Warsaw.", "Marie Curie", False),  # a pronoun may stand for the subject
    ("Pierre Curie was her husband.", "Marie Curie", False),
])
def test_a_claim_about_someone_else_names_none_of_the_persons_name(claim, person, off):
    assert off_subject_claim(claim, person) is off


def test_details_carry_the_counts_and_a_prompt_about_nothing_named_has_no_off_subject_count():
    bio = [{"text": "Gustav Klimt was an Austrian painter.", "claims": [
               {"text": "Gustav Klimt was an Austrian painter.", "label": "supported"}]},
           {"text": "Landscape painting is the depiction of natural scenery.", "claims": [
               {"text": "Landscape painting is the depiction of natural scenery.", "label": "supported"},
               {"text": "Landscape painting is an art.", "label": "supported", "duplicate_of": {}}]},
           {"text": "I'll add a few more details.", "claims": []},
           {"text": LOOPS[3], "claims": []}]
    mark_defects(bio, "Tell me a bio of Gustav Klimt.")
    assert defect_counts(bio, "Tell me a bio of Gustav Klimt.") == {
        "defects": DEFECTS, "repeated_sentences": 0, "loop_sentences": 1, "meta_sentences": 1,
        "off_subject_claims": 1}  # the duplicate claim counts once
    thing = [{"text": "Shigeru Miyamoto created the series.", "claims": [
        {"text": "Shigeru Miyamoto created The Legend of Zelda.", "label": "supported"}]}]
    prompt = "What can you tell me about The Legend of Zelda?"
    mark_defects(thing, prompt)  # the maker of the thing asked about is no other subject
    assert defect_counts(thing, prompt)["off_subject_claims"] == 0 and not thing[0]["claims"][0]["off_subject"]
    poem = [{"text": "Roses are red.", "claims": [{"text": "Roses are red.", "label": "supported"}]}]
    mark_defects(poem, "Write a poem.")
    assert defect_counts(poem, "Write a poem.")["off_subject_claims"] is None


def test_the_yardstick_imports_none_of_the_loops_rules():
    tree = ast.parse(Path(__file__).resolve().parents[1].joinpath("ewe/eval/defects.py").read_text(encoding="utf-8"))
    imported = {"." * n.level + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported and not any(m.startswith(("ewe", ".")) for m in imported), imported


def test_a_possessive_names_the_person_and_a_sentence_that_says_his_makes_the_claim_theirs():
    assert not off_subject_claim("Klimt's father was an engraver.", "Gustav Klimt")
    assert not off_subject_claim("Leaves of Grass was described as obscene.", "Walt Whitman",
                                 "His Leaves of Grass was described as obscene.")
    assert off_subject_claim("Ralph Waldo Emerson was a lecturer.", "Walt Whitman",
                             "Ralph Waldo Emerson was an American essayist and lecturer.")
    assert not off_subject_claim("The Communist Manifesto was commissioned by the Communist League.",
                                 "Friedrich Engels", "It was commissioned by the Communist League.",
                                 "In 1848 Engels and Marx wrote The Communist Manifesto.")
    assert off_subject_claim("Henri Rousseau was a French philosopher.", "Émile Durkheim",
                             "Henri Rousseau, also known as Le Douanier, was a French philosopher.",
                             "Durkheim founded the discipline of sociology.")


ZELDA_ANSWER = ["The Legend of Zelda is an action-adventure game series created by Shigeru Miyamoto.",
                "The series is set in the fantasy land of Hyrule.",
                "It has sold over 150 million copies.",
                "A legend is a genre of folklore that consists of a narrative.",
                "Legends are told as history.",
                "The NBA is a basketball league."]


def test_in_an_answer_about_a_thing_a_claim_tied_to_nothing_before_it_is_off_subject():
    from ewe.eval.defects import off_topic_claim, thing_asked

    assert thing_asked("What can you tell me about The Legend of Zelda? Provide details.") == "The Legend of Zelda"
    assert thing_asked("Tell me a bio of Ada Lovelace.") is None
    sentences = [{"text": t, "claims": [{"text": t}]} for t in ZELDA_ANSWER]
    mark_defects(sentences, "What can you tell me about The Legend of Zelda?")
    assert [s["claims"][0]["off_subject"] for s in sentences] == [False, False, False, True, True, True]
    assert defect_counts(sentences, "What can you tell me about The Legend of Zelda?")["off_subject_claims"] == 3
    # initials, derived words and a common name's words tie a claim to its thing
    assert not off_topic_claim("The NBA is a basketball league.", "National Basketball Association")
    assert not off_topic_claim("Pediatricians treat children.", "Pediatrics")
    assert not off_topic_claim("The thrushes are a family of birds.", "Thrush (bird)")
    assert not off_topic_claim("A group is a set with an operation.", "Fundamental group")
    assert off_topic_claim("The film stars Chishu Ryu as an aging father.", "Spirited Away")  # no sentence before it
