"""What a prompt asks about (ewe/verify/prompt_subject.py) and which sentences leave it for a
common noun (verify/subject.py generic_subject, issue 56). The cases are the drifts read in
answers (Klimt -> landscape painting, Tiger Woods -> the tiger, the Eiffel Tower -> towers, The
Legend of Zelda -> legends) and sentences of the same shapes that stay on their subject."""
import pytest

from ewe.verify.prompt_subject import Subject, subject_of
from ewe.verify.subject import generic_subject, off_subject_of


def test_a_name_that_opens_with_a_capital_outside_ascii_is_a_subject():
    """"Émile Durkheim", "Ānanda": an [A-Z] test had left these bios with no subject, so nothing
    kept the Buddha's passages out of Ānanda's answer."""
    assert subject_of("Tell me a bio of Ānanda.") == Subject("Ānanda", True)
    assert subject_of("Tell me a bio of Émile Durkheim. Provide details.") == Subject("Émile Durkheim", True)
    assert subject_of("Who was Øystein Ore?") == Subject("Øystein Ore", True)
    assert subject_of("What can you tell me about Ōsaka Castle?") == Subject("Ōsaka Castle", False)


@pytest.mark.parametrize("prompt, subject", [
    ("Tell me a bio of Marie Curie.", Subject("Marie Curie", person=True)),
    ("Who was Ada Lovelace?", Subject("Ada Lovelace", person=True)),
    ("Tell me about the Eiffel Tower.", Subject("Eiffel Tower", person=False)),
    ("What can you tell me about The Legend of Zelda? Provide details.", Subject("The Legend of Zelda", person=False)),
    ("What can you tell me about Fundamental group?", Subject("Fundamental group", person=False)),
    # once read as a person by the bare name reader
    ("Explain the theory of General Relativity.", Subject("General Relativity", person=False)),
    ("Write a poem.", None),
])
def test_the_subject_and_whether_the_prompt_asks_about_a_person(prompt, subject):
    assert subject_of(prompt) == subject


def test_only_a_name_of_several_capitalized_words_is_told_from_its_words():
    assert Subject("Eiffel Tower", False).proper and Subject("The Legend of Zelda", False).proper
    assert not Subject("Fundamental group", False).proper  # a title's capital only
    assert not Subject("Parthenon", False).proper  # one word: its common noun would be itself
    assert Subject("Tiger Woods", True).words() == {"tiger", "wood"}


TOWER = Subject("Eiffel Tower", person=False)
ZELDA = Subject("The Legend of Zelda", person=False)
GROUP = Subject("Fundamental group", person=False)
KLIMT = Subject("Gustav Klimt", person=True)
WOODS = Subject("Tiger Woods", person=True)
WELLS = Subject("H. G. Wells", person=True)


@pytest.mark.parametrize("subject, sentence, about", [
    (TOWER, "A tower is indeed a tall structure, taller than it is wide, often by a significant factor.", "A tower"),
    (TOWER, "Towers are the tallest structures in many cities.", "Towers"),
    (ZELDA, "A legend is a genre of folklore.", "A legend"),
    (KLIMT, "Landscape painting, also known as landscape art, is the depiction in painting of natural scenery.",
     "Landscape painting"),
    (WOODS, "The tiger is the largest living cat species.", "The tiger"),
    (WOODS, "The tiger (Panthera tigris) lives in Asia.", "The tiger"),
    (WELLS, "A well is an excavation in the ground.", "A well"),
    (WELLS, "Science fiction is a genre of speculative fiction.", "Science fiction"),
    # a polity or place that shares a word of the name (Jiang Qing's answer was the Qing dynasty's)
    (Subject("Jiang Qing", True), "The Qing dynasty was preceded by the Ming dynasty.", "The Qing dynasty"),
    (Subject("Jiang Qing", True), "The Qing dynasty, officially the Great Qing, was a Manchu-led dynasty.",
     "The Qing dynasty"),
    (Subject("Jiang Qing", True), "Qing dynasty, officially the Great Qing, was a Manchu-led dynasty.",
     "Qing dynasty"),
])
def test_a_common_noun_spoken_of_in_general_is_another_subject(subject, sentence, about):
    assert generic_subject(sentence, subject) == about
    assert off_subject_of(sentence, subject) == about


@pytest.mark.parametrize("subject, sentence", [
    (TOWER, "The tower is 330 metres tall."),  # about a thing, "the tower" is the one asked about
    (TOWER, "The Eiffel Tower is a wrought-iron lattice tower."),
    (TOWER, "It was the tallest structure in the world until 1930."),
    (TOWER, "Construction began in 1887."),
    (TOWER, "A tower of this height, the Eiffel Tower is a landmark."),  # names the subject too
    (ZELDA, "The game is set in the fantasy land of Hyrule."),
    (GROUP, "A group is a set with an operation."),  # the words of a common name are what it explains
    (GROUP, "The fundamental group is a homotopy invariant."),
    (KLIMT, "He was an Austrian symbolist painter."),
    (KLIMT, "His father was a gold engraver."),
    (KLIMT, "The painting is now in the Belvedere."),  # no definition: may go on from its sentence before
    (WOODS, "Woods turned professional in 1996."),  # the capitalized word a sentence opens with is the name
    (Subject("Kazimir Malevich", True), "Malevich was a Russian avant-garde artist."),
    (Subject("Christiaan Huygens", True), "Huygens was a prolific writer and inventor."),
    (KLIMT, "Klimt's father was a gold engraver."),
    (WOODS, "Tiger Woods is an American professional golfer."),
    (None, "A tower is a tall structure."),  # no subject, nothing to leave
    (Subject("Jiang Qing", True), "Jiang Qing was born in the last years of the Qing dynasty."),
    (Subject("John F. Kennedy", True), "The Kennedy administration faced the Cuban Missile Crisis."),  # his own
    (Subject("Marie Curie", True), "The Curie laboratory was in Paris."),
])
def test_what_stays_on_its_subject(subject, sentence):
    assert off_subject_of(sentence, subject) is None
