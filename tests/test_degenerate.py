"""Sentences that are no answer (ewe/verify/degenerate.py): what each rule catches and what it
must leave alone. The cases are the failures read in the default's answers (issue 56) and
sentences of the same shapes that are fine."""
import pytest

from ewe.verify.degenerate import GARBLED, HEADING, LOOP, META, addresses_reader, degenerate, language, repeated_clause

BIO = ("Tell me a bio of Henrik Ibsen. Provide as many specific details and examples as possible "
       "(such as names of people, numbers, events, locations, dates, times, etc.)")


@pytest.mark.parametrize("sentence, why", [
    ('He is often referred to as "the father of modern drama" and is often referred to as "the father of '
     'modern theatre" and is often referred to as "the father of realism".', LOOP),
    ("She received the 2019 Best Female Actress, 2020 Best Female Actress, 2021 Best Female Actress, "
     "2022 Best Female Actress and 2023 Best Female Actress awards.", LOOP),
    ("He was known as the Godfather of Soul, Mr. Dynamite, the Godfather of Soul, Soul Brother Number One "
     "and the Godfather of Soul.", LOOP),
    # a list that names an item again (read in the default's objects answers)
    ("This law is also known as the law of infinite probability, the law of convergence of random processes, "
     "the law of infinite probability, or the law of entropy.", LOOP),
    ("Your bio is filled with a wealth of information about William Blackstone.", META),
    ("To add to the narrative, I'll just add a few more details.", META),
    ("Here is a bio of Black Sabbath:", META),
    ("Here are some specific details and examples of Luís de Camões's life and work:", META),
    ("I hope this helps you understand his life.", META),
    ("Hi, welcome to our chat about Parkinson's disease.", META),  # read in the default's objects answers
    ("Hello! Ibsen was a Norwegian playwright.", META),
    ("The first mention of Maya Angelou in the article is in the introduction to the book.", META),
    # the text rated or described instead of the subject (read in the default's objects answers)
    ("A highly detailed and informative answer.", META),
    ("A brilliant introduction to Dynamical Systems Theory.", META),
    ("The description is concise and easy to follow.", META),
    ('The mention of "the Arab homeland" is a nice touch to the mention of the Arab nation.', META),
    ("This article delves into the fascinating world of dynamical systems.", META),
    ("The article touches on the concept of dynamical systems theory.", META),
    ("The paragraph provides specific details about Dar es Salaam, including its population.", META),
    ("In the context of the article, the family is referred to as Turdidae.", META),
    ("This is a detailed description of the string instrument classification.", META),
    ("(This is a summary of the French Wars of Religion.)", META),
    ("This is a bio of Black Sabbath, written by the band's founding members.", META),
    ("L'Étoile de la Réduction, avec Jean Nicolas Arthur Rimbaud, est un artiste de la réduction.", GARBLED),
    ("Lomonosov, Mikhail Mikhailovich, Russian poet, poet, poet, poet.", GARBLED),
    ("He was born on 189december 1828 in Skien.", GARBLED),
    ("2019-01-22", GARBLED),  # fragments left alone in answers (French Wars of Religion, Zelda)
    ("Legend:", GARBLED),
    ("3.", GARBLED),
    ("Henrik Ibsen (Norwegian playwright and theatre director, 1828–1906)", HEADING),  # a passage's head
    ("Peer Gynt (Play by Henrik Ibsen):", HEADING),
    ("Suzannah Ibsen (1836–1914)  Sigurd Ibsen (Norwegian politician)", HEADING),  # a list of heads
    ("Born: 20 March 1828", HEADING),
    ("Place of birth: Skien, Norway", HEADING),
    # a passage's head opening the sentence that copies the passage (read in the demo's EWE answer)
    ("Marie Curie (Polish-French physicist and chemist, 1867–1934): Maria Salomea Skłodowska Curie was a "
     "Polish-French physicist and chemist.", HEADING),
    ("Peer Gynt (play by Henrik Ibsen) : a verse drama in five acts.", HEADING),
    ("Pablo Escobar (Colombian drug lord (1949–1993))  His drug cartel monopolized the cocaine trade.", HEADING),
    ("Milton Friedman (American economist and statistician (1912–2006))", HEADING),
])
def test_what_is_no_answer(sentence, why):
    assert degenerate(sentence, BIO) == why


@pytest.mark.parametrize("sentence", [
    "Maya Angelou wrote I Know Why the Caged Bird Sings in 1969.",  # a title that says "I"
    'The Beatles released "I Want to Hold Your Hand" in 1963.',  # a quoted title that says "Your"
    'In 1789 he said: "You cannot do this" to the king.',  # a quotation
    "He fought at the Battle of Jena, the Battle of Wagram, the Battle of Leipzig and the Battle of Waterloo.",
    "He won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911, the first person "
    "to win the Nobel Prize twice.",
    "He was the son of the Duke of York and the grandson of the King of England and the nephew of the Duke of Kent.",
    "He studied at the École des Beaux-Arts in Paris with Jean-Léon Gérôme and Alexandre Cabanel.",
    "Sviatoslav Richter was a Soviet and Russian classical pianist.",
    "Ibsen was born in 1828 in Skien, a port town in Telemark, Norway.",
    "The article he published in 1905 introduced special relativity.",  # an article of the subject's
    "He was awarded the 1920s prize for the 3rd time.",  # decades and ordinals are not fused digits
    "Henrik Ibsen (1828–1906) was a Norwegian playwright.",  # a head that goes on as a sentence
    "Ibsen (then 36) left Norway for Italy: he stayed abroad for 27 years.",  # a colon later in prose
    'He wrote Peer Gynt (1867): "a poem of the Norwegian soul", as he called it.',
    "Henrik Ibsen (born in Skien (Telemark)) and Bjørnson wrote for the theatre in Bergen.",
    "Albert Einstein (1879–1955) and Mileva Marić married in 1903.",
    "In 1864 he left Norway (for Italy).",  # a sentence that ends in a parenthesis
    'He said: "I am a poet, not a philosopher."',  # a speaker, not a field
    'Ibsen wrote: "A community is like a ship."',
    "His plays include A Doll's House (1879) and Ghosts (1881).",
    # text nouns that are the subject's, not the answer's
    "The text of the treaty was signed in 1648.",
    "A description of the species appeared in 1758.",
    "A brief description of the species was published by Linnaeus.",
    "A detailed account of the battle was written by Thucydides.",
    "He was also known as Le Douanier, a humorous description of his occupation as a toll collector.",
    "His contributions include the introduction of Riemann surfaces.",
    "The narrative of the film follows a girl named Chihiro.",
    "The source texts mention the thunder-god Thor and the goddess Freyja.",
    "A major overhaul of the summary judgment rules followed in 1938.",
    "This is an example of Gothic architecture.",
    "He wrote the answer to his critics in 1911.",
    "Euler's formula states that e^(ix) = cos x + i sin x, where i is the imaginary unit.",  # i, not I
    # items that share words but are not the same item, and names said twice on purpose
    "He won the gold medal in 1990, the silver medal in 1992, and the gold medal in 1996.",
    "Her songs include New York, New York and Theme from New York.",
    "It was ruled by the House of Habsburg, then the House of Bourbon, and again by the House of Habsburg.",
    "Henry VIII was King of England and Lord of Ireland from 1509, and King of England and Ireland from 1542.",
    "He died in 1934.",  # short, but a sentence
    "Hieronymus Bosch painted The Garden of Earthly Delights.",  # "Hi" only as a word of its own
    "The Hello Kitty brand was created in 1974.",
    "Curie won.",
])
def test_what_is_an_answer(sentence):
    assert degenerate(sentence, BIO) is None


def test_each_rule_says_what_it_found():
    assert repeated_clause("is often referred to as X and is often referred to as Y and is often "
                           "referred to as Z and is often referred to as W") is not None
    assert repeated_clause("of the city of the state of the nation of the world") is None  # grammar words only
    assert addresses_reader("Let me tell you about him.") == "Let me"


def test_the_language_test_needs_a_clear_language_on_both_sides():
    assert language("Tell me a bio of Jiang Qing.", min_words=1) == "en"
    assert language("Jiang Qing.") is None
    # a French prompt: a French sentence is its language, an English one is not
    prompt = "Parle-moi de la vie de Victor Hugo, avec des dates et des lieux."
    assert degenerate("Victor Hugo est un écrivain qui est né à Besançon et il est mort à Paris.", prompt) is None
    assert degenerate("He was a French writer who was born in Besançon and died in Paris.", prompt) == GARBLED
    # no prompt: no language to hold the sentence to
    assert degenerate("L'Étoile de la Réduction, avec Rimbaud, est un artiste de la réduction.") is None


def test_the_heading_test_reads_a_long_line_in_one_pass():
    """Heads in a row are matched without backtracking over where one ends (a version that let
    spaces belong to either head took seconds at 24 heads and doubled with each one more)."""
    from ewe.verify.degenerate import is_heading

    assert not is_heading("Ibsen (playwright), " * 200 + "wrote plays.")
    assert is_heading("Ibsen (playwright), " * 200)
    assert is_heading("Ibsen (playwright) " * 200 + "wrote plays.")  # heads, then text: a copy


def test_drop_no_answers_keeps_the_answer_around_what_it_drops():
    from ewe.verify.degenerate import drop_no_answers

    text = ("Henrik Ibsen was a Norwegian playwright. I hope you enjoy this bio. "
            "Pierre Curie was a French physicist. He wrote A Doll's House in 1879.")
    kept, dropped = drop_no_answers(text, BIO)
    assert kept == "Henrik Ibsen was a Norwegian playwright. He wrote A Doll's House in 1879."
    assert [(d["reason"], d.get("about")) for d in dropped] == [("meta", None), ("off_subject", "Pierre Curie")]
    assert drop_no_answers(text, BIO, reject_degenerate=False, reject_off_subject=False) == (text, [])
    # a prompt about a thing has no person to leave: a maker's sentence stays
    thing = "What can you tell me about Radium Institute?"
    assert drop_no_answers("Pierre Curie was a French physicist.", thing) == ("Pierre Curie was a French physicist.", [])
    # a passage's head copied before the passage's text: the head goes, the text stays (it cannot be rewritten)
    text = ("Henrik Ibsen (Norwegian playwright (1828–1906)) He wrote A Doll's House in 1879. "
            "Peer Gynt (play by Henrik Ibsen): I hope you enjoy this bio. He died in 1906.")
    kept, dropped = drop_no_answers(text, BIO)
    assert kept == "He wrote A Doll's House in 1879. He died in 1906."
    assert [(d["reason"], d.get("kept")) for d in dropped] == [("heading", "He wrote A Doll's House in 1879."),
                                                            ("meta", None)]  # talk to the reader: dropped whole


def test_one_no_answer_rule_for_the_loop_and_the_baselines():
    from ewe.verify.degenerate import no_answer

    assert no_answer("I hope this helps.", BIO) == META
    assert no_answer("Pierre Curie was a French physicist.", BIO) == "off_subject"  # the person read from the prompt
    assert no_answer("Pierre Curie was a French physicist.", BIO, subject=None) is None  # resolved by the caller: none
    # a thing's answer that defines a common noun of its name instead (the golden Eiffel Tower answer)
    tower = "Tell me about the Eiffel Tower."
    assert no_answer("A tower is indeed a tall structure, taller than it is wide.", tower) == "off_subject"
    assert no_answer("The tower is 330 metres tall.", tower) is None
    assert no_answer("Pierre Curie was a French physicist.", BIO, reject_off_subject=False) is None

