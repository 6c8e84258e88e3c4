"""The atomic claim extractor for scoring (ewe/eval/atomic_facts.py): one fact per claim, pronouns
that refer to the subject resolved, nothing from questions, talk to the user or opinion.

spaCy and its small English model (MODEL_PACKAGE) are dependencies (setup.py,
requirements-embedded.txt): a missing one fails here, it is not skipped."""
import re

import pytest

from ewe.eval.atomic_facts import MODEL_PACKAGE, AtomicClaim, atomic_claims, claim_texts, load_model


CURIE = "Marie Curie"

# (name, subject, answer text, the claims expected: all of them, in any order)
CASES = [
    ("copula-conjoined-attributes-and-relative", CURIE,
     "She was a Polish and naturalised-French physicist and chemist who conducted pioneering "
     "research on radioactivity.",
     ["Marie Curie was Polish.", "Marie Curie was naturalised-French.", "Marie Curie was a physicist.",
      "Marie Curie was a chemist.", "Marie Curie conducted pioneering research on radioactivity."]),
    ("copula-conjoined-noun-phrases", CURIE,
     "She was the first woman to win a Nobel Prize, and the only person to win a Nobel Prize in "
     "two scientific fields.",
     ["Marie Curie was the first woman to win a Nobel Prize.",
      "Marie Curie was the only person to win a Nobel Prize in two scientific fields."]),
    ("born-date-and-place", "Józef Piłsudski",
     "He was born on 7 November 1867 in Warsaw.",
     ["Józef Piłsudski was born on 7 November 1867.", "Józef Piłsudski was born in Warsaw."]),
    ("list-of-works", "William Shakespeare",
     "He wrote Hamlet, Macbeth and Othello.",
     ["William Shakespeare wrote Hamlet.", "William Shakespeare wrote Macbeth.",
      "William Shakespeare wrote Othello."]),
    ("apposition", CURIE,
     "Curie, a chemist, discovered polonium.",
     ["Curie was a chemist.", "Curie discovered polonium."]),
    ("apposition-with-nationality", CURIE,
     "She married Pierre Curie, a French physicist, in 1895.",
     ["Marie Curie married Pierre Curie in 1895.",
      "Pierre Curie was French.", "Pierre Curie was a physicist."]),
    ("conjoined-verbs", "Steve Jobs",
     "He founded Apple and led Pixar.",
     ["Steve Jobs founded Apple.", "Steve Jobs led Pixar."]),
    ("relative-which", "the Eiffel Tower",
     "The tower, which was built in 1889, is 330 metres tall.",
     ["The Eiffel Tower was built in 1889.", "The Eiffel Tower is 330 metres tall."]),  # "the tower": the subject
    ("relative-who-and-possessive", CURIE,
     "She married Pierre, who supported her work.",
     ["Marie Curie married Pierre.", "Pierre supported Marie Curie's work."]),
    ("possessive-pronoun", "Albert Einstein",
     "His parents were Hermann Einstein and Pauline Koch.",
     ["Albert Einstein's parents were Hermann Einstein.", "Albert Einstein's parents were Pauline Koch."]),
    ("negation-kept", CURIE,
     "She did not win the prize in 1905 and never returned to Poland.",
     ["Marie Curie did not win the prize in 1905.", "Marie Curie never returned to Poland."]),
    ("negation-keeps-its-qualifiers", CURIE,
     "She was not a French citizen until 1895.",
     ["Marie Curie was not a French citizen until 1895."]),
    ("numbers-kept", CURIE,
     "She won 2 Nobel Prizes and published more than 30 papers.",
     ["Marie Curie won 2 Nobel Prizes.", "Marie Curie published more than 30 papers."]),
    ("hedge-and-concession", "Albert Einstein",
     "Although he never won a second Nobel Prize, he was reportedly nominated more than 60 times.",
     ["Albert Einstein never won a second Nobel Prize.",
      "Albert Einstein was reportedly nominated more than 60 times."]),
    ("fronted-dates-and-semicolon", CURIE,
     "In 1903, she won the Nobel Prize in Physics; in 1911 she won the Nobel Prize in Chemistry.",
     ["Marie Curie won the Nobel Prize in Physics in 1903.",
      "Marie Curie won the Nobel Prize in Chemistry in 1911."]),
    ("object-conjoined-to-the-verb", CURIE,
     "She was awarded the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",
     ["Marie Curie was awarded the Nobel Prize in Physics in 1903.",
      "Marie Curie was awarded the Nobel Prize in Chemistry in 1911."]),
    ("known-for-a-list", CURIE,
     "She is known for her work on radioactivity and for discovering polonium and radium.",
     ["Marie Curie is known for Marie Curie's work on radioactivity.",
      "Marie Curie is known for discovering polonium.", "Marie Curie is known for discovering radium."]),
    ("participle-and-where-clause", CURIE,
     "Born in Warsaw, she moved to Paris in 1891, where she studied physics.",
     ["Marie Curie was born in Warsaw.", "Marie Curie studied physics.", "Marie Curie moved to Paris in 1891."]),
    ("conjoined-subject-kept-together", CURIE,
     "Pierre and Marie Curie were awarded the Davy Medal in 1903.",
     ["Pierre and Marie Curie were awarded the Davy Medal in 1903."]),
    ("parentheses-dropped", CURIE,
     "Marie Curie (7 November 1867 – 4 July 1934) was a physicist.",
     ["Marie Curie was a physicist."]),
    ("talk-to-the-user-and-questions-dropped", CURIE,
     "Here is a short bio of Marie Curie: she was a physicist. I hope this helps! Let me know if you "
     "have other questions. What else would you like to know?",
     ["Marie Curie was a physicist."]),
    ("only-talk", CURIE,
     "Sure! I hope this helps. Let me know if you have any other questions. Feel free to ask!",
     []),
    ("opinion-dropped", CURIE,
     "Marie Curie was an incredible woman. Her story is truly inspiring. I think she deserves more "
     "recognition.",
     []),
    ("non-person-subject", "the Eiffel Tower",
     "What can you tell me about the Eiffel Tower? It is located on the Champ de Mars in Paris. It is "
     "330 metres tall and was the tallest man-made structure in the world until 1930. Its design is "
     "attributed to Maurice Koechlin and Émile Nouguier.",
     ["The Eiffel Tower is located on the Champ de Mars in Paris.", "The Eiffel Tower is 330 metres tall.",
      "The Eiffel Tower was the tallest man-made structure in the world until 1930.",
      "The Eiffel Tower's design is attributed to Maurice Koechlin.",
      "The Eiffel Tower's design is attributed to Émile Nouguier."]),
    ("no-subject-pronouns-kept", None,
     "She was born in Warsaw in 1867. Her father was a teacher.",
     ["She was born in Warsaw.", "She was born in 1867.", "Her father was a teacher."]),
    ("whose-and-object-relatives", "Charles Dickens",
     "He was a novelist whose books sold widely. Oliver Twist is a novel that he wrote in 1838.",
     ["Charles Dickens was a novelist.", "Charles Dickens' books sold widely.",
      "Oliver Twist is a novel.", "Charles Dickens wrote Oliver Twist in 1838."]),
    ("not-only-but-also", CURIE,
     "She not only discovered polonium but also isolated radium.",
     ["Marie Curie discovered polonium.", "Marie Curie isolated radium."]),
    ("bullets-and-headings", CURIE,
     "Marie Curie: A Brief Biography\n\nEarly life: She was born in Warsaw.\n"
     "- Won the Nobel Prize in Physics (1903)\n- Died in 1934",
     ["Marie Curie was born in Warsaw.", "Marie Curie won the Nobel Prize in Physics (1903).",
      "Marie Curie died in 1934."]),
    # rules written reading the dev split's hand-split answers (tests/data/atomic_claims/dev.jsonl)
    ("birth-date-and-place-apart", "Dag Hammarskjöld",
     "Dag Hammarskjöld was born in 1982 in the small town of Höjforskog, Sweden.",
     ["Dag Hammarskjöld was born in 1982.", "Dag Hammarskjöld was born in the small town of Höjforskog, Sweden."]),
    ("until-his-death", "Dag Hammarskjöld",
     "He served as Secretary-General from April 1953 until his death in September 1961.",
     ["Dag Hammarskjöld died in September 1961.",
      "Dag Hammarskjöld served as Secretary-General from April 1953 until Dag Hammarskjöld's death in September "
      "1961."]),
    ("regnal-numeral-is-no-pronoun", "Ismail I",
     "Ismail I was the founder and first shah of Safavid Iran.",
     ["Ismail I was the founder of Safavid Iran.", "Ismail I was the first shah of Safavid Iran."]),
    ("longer-name-and-description", "Dag Hammarskjöld",
     "Dag Hjalmar Agne Carl Hammarskjöld was a diplomat.",
     ["Dag Hammarskjöld was a diplomat."]),
    ("the-war-is-the-subject", "Sino-Burmese War",
     "The Sino-Burmese War was a war between China and Burma. The war was fought in the 1760s.",
     ["The Sino-Burmese War was a war between China and Burma.", "Sino-Burmese War was fought in the 1760s."]),
    ("cut-off-by-the-token-limit", "Poinsettia",
     "It is a plant. It is a popular flower in the",
     ["Poinsettia is a plant.", "Poinsettia is a popular flower."]),
    ("cut-off-inside-a-predicate", "Nefertiti",
     "She was a queen. She was a",
     ["Nefertiti was a queen."]),
    ("graded-adjective-and-post-noun-adjective", "Poinsettia",
     "The poinsettia is a commercially important plant species, native to Mexico and Central America.",
     ["Poinsettia is commercially important.", "Poinsettia is a plant species.", "Poinsettia is native to Mexico.",
      "Poinsettia is native to Central America."]),
    ("empty", CURIE, "", []),
    ("whitespace", CURIE, "  \n ", []),
]


@pytest.fixture(scope="module", autouse=True)
def _model():
    load_model()


@pytest.mark.parametrize("subject, text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_claims(subject, text, expected):
    claims = atomic_claims(text, subject)
    texts = [c.text for c in claims]
    assert sorted(texts) == sorted(expected)
    assert len(claims) == len(expected)


def test_claims_know_their_sentence_and_what_split_them_off():
    text = "She was born in Warsaw. She founded the Radium Institute in 1920 and led a laboratory."
    assert atomic_claims(text, CURIE) == [
        AtomicClaim("Marie Curie was born in Warsaw.", 0, "place"),
        AtomicClaim("Marie Curie founded the Radium Institute in 1920.", 1, "main"),  # an event keeps its date
        AtomicClaim("Marie Curie led a laboratory.", 1, "conjunct"),
    ]
    kinds = [c.kind for c in atomic_claims("Curie, a chemist, wrote Hamlet and Macbeth.", CURIE)]
    assert kinds == ["apposition", "list-item", "list-item"]


def test_claim_texts_removes_repeats_in_order():
    text = "She was a physicist. She was a physicist. She was a chemist."
    assert len(atomic_claims(text, CURIE)) == 3
    assert claim_texts(text, CURIE) == ["Marie Curie was a physicist.", "Marie Curie was a chemist."]
    assert claim_texts("", CURIE) == []


def test_no_claim_invents_words():
    """Every word of a claim comes from its sentence, except the subject's name (for a pronoun),
    a copula, "a" / "an" (which follow the next word), and "died" for "until his death in ..."."""
    allowed = {"is", "was", "are", "were", "a", "an", "s"}
    nlp = load_model()
    for _, subject, text, _ in CASES:
        if not text.strip():
            continue
        sentences = [s.text for s in nlp(text).sents]
        name_words = set(_words(subject or ""))
        for claim in atomic_claims(text, subject):
            source = set(_words(sentences[claim.sentence]))
            invented = set(_words(claim.text)) - source - name_words - allowed - (
                {"died"} if "death" in source else set())
            assert not invented, (claim, invented)


def _words(text):
    return [w.lower() for w in re.findall(r"[^\W_]+", text)]
