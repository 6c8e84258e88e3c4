"""Subject binding (issue 30, part 2): claims made self-contained, and evidence about another
person kept from counting as support. The tests marked slow load the shipped judge."""
import pytest

from ewe.verify import FactChecker
from ewe.verify.claims import RuleClaimExtractor
from ewe.verify.subject import (bind, claim_subject, is_about, name_runs, names_subject, off_subject, opening_names,
                                passage_subject, restrict, same_subject)
from ewe.verify.types import NOT_ENOUGH_EVIDENCE, SUPPORTED, Evidence, Verdict

KAFKA = ("Franz Kafka (Austrian and Czech writer (1883-1924)): His best-known works include the novella The "
         "Metamorphosis (1915) and the novels The Trial (1924) and The Castle (1926).")
PIERRE = ("Pierre Curie (French physicist and chemist (1859–1906)): Pierre Curie was a French physicist and chemist, "
          "and a pioneer in crystallography and magnetism. He shared one half of the 1903 Nobel Prize in Physics with "
          "his wife, Marie Curie, for their work on radioactivity.")
CURIE_BIO = "Tell me a bio of Marie Curie."
WU = ("Chien-Shiung Wu (Chinese-American physicist (1912–1997)): This discovery resulted in her colleagues Tsung-Dao Lee "
      "and Chen-Ning Yang winning the 1957 Nobel Prize in Physics, while Wu herself was awarded the inaugural Wolf Prize "
      "in Physics in 1978. Her expertise in experimental physics evoked comparisons to Marie Curie. Her nicknames "
      "include the \"First Lady of Physics\", the \"Chinese Marie Curie\" and the \"Queen of Nuclear Research\".")


def claims(sentence, context=None, prompt=None):
    return [c.text for c in RuleClaimExtractor().extract(sentence, context=context, prompt=prompt).claims]


# --- self-contained claims -------------------------------------------------------------------

@pytest.mark.parametrize("sentence,context,prompt,expected", [
    # possessives: clause-initial, like a he/she subject
    ("His best-known works include The Castle.", None, "Tell me a bio of Gustav Klimt.",
     ["Gustav Klimt's best-known works include The Castle."]),
    ("She was born in Warsaw; her father was a teacher.", None, CURIE_BIO,
     ["Marie Curie was born in Warsaw.", "Marie Curie's father was a teacher."]),
    ("Throughout her career, she won prizes.", None, CURIE_BIO, ["Throughout Marie Curie's career, Marie Curie won prizes."]),
    ("Its source lies in the Andes.", "The Amazon is a river.", None, ["The Amazon's source lies in the Andes."]),
    ("Their music was popular.", "The Beatles were a band.", None, ["The Beatles' music was popular."]),
    # "its" never a person; a possessive of someone the claim already names is left
    ("Its source lies in the Andes.", "He was born in Ulm.", "Tell me a bio of Albert Einstein.",
     ["Its source lies in the Andes."]),
    ("Marie Curie and her husband discovered radium.", None, CURIE_BIO, ["Marie Curie and her husband discovered radium."]),
    # objects: only where the gender is known and nobody else could be meant
    ("Pierre Curie married her in 1895.", "She was born in Warsaw.", CURIE_BIO, ["Pierre Curie married Marie Curie in 1895."]),
    ("Pierre Curie married her in 1895.", None, CURIE_BIO, ["Pierre Curie married her in 1895."]),
    ("He gave her a book.", None, "Tell me a bio of Albert Einstein.", ["Albert Einstein gave her a book."]),
    ("His parents sent him to a school in Prague.", None, "Tell me a bio of Franz Kafka.",
     ["Franz Kafka's parents sent Franz Kafka to a school in Prague."]),
    # a pronoun of the wrong gender is someone else
    ("She married Pierre Curie; his brother was a physicist.", None, CURIE_BIO,
     ["Marie Curie married Pierre Curie.", "His brother was a physicist."]),
    ("He won the Nobel Prize.", "She was born in Warsaw.", CURIE_BIO, ["He won the Nobel Prize."]),
    # a pronoun subject with an adverb or a coordinated noun after it
    ("He also served as mayor of Istanbul.", None, "Tell me a bio of Recep Tayyip Erdoğan.",
     ["Recep Tayyip Erdoğan also served as mayor of Istanbul."]),
    # definite descriptions: a role noun, the prompt's person while the answer is about them
    ("The physicist won two Nobel Prizes.", None, CURIE_BIO, ["Marie Curie won two Nobel Prizes."]),
    ("The young composer wrote nine symphonies.", None, "Tell me a bio of Ludwig van Beethoven.",
     ["Ludwig van Beethoven wrote nine symphonies."]),
    ("The physicist won two Nobel Prizes.", "Marie Curie was a physicist.", None, ["Marie Curie won two Nobel Prizes."]),
    ("The physicist won two Nobel Prizes.", "Pierre Curie was a physicist.", CURIE_BIO,
     ["The physicist won two Nobel Prizes."]),
    ("The city is the capital of France.", None, CURIE_BIO, ["The city is the capital of France."]),
    # an opening date with no comma: the pronoun after it is still the subject
    ("In 1912 she was awarded the Nobel Prize in Physics.", None, CURIE_BIO,
     ["In 1912 Marie Curie was awarded the Nobel Prize in Physics."]),
    ("On 4 July 1934 she died in Passy.", None, CURIE_BIO, ["On 4 July 1934 Marie Curie died in Passy."]),
    ("In 12 cases she won.", None, CURIE_BIO, ["In 12 cases she won."]),  # a count is no date
])
def test_claims_are_self_contained(sentence, context, prompt, expected):
    assert claims(sentence, context, prompt) == expected


# --- who a claim and a passage are about -----------------------------------------------------

def test_subjects_of_claims_and_passages():
    assert passage_subject(Evidence(KAFKA)) == "Franz Kafka"  # a description with parentheses of its own
    assert passage_subject(Evidence("some text", title="Mercury (planet)")) == "Mercury"
    assert passage_subject(Evidence("Note: this is a thing.")) is None  # no description, not named again
    # no title and no head: the name its first sentence is about (a passage pasted as plain text)
    assert passage_subject(Evidence("Marie Curie was born in Warsaw.")) == "Marie Curie"
    assert passage_subject(Evidence("She was born in Warsaw. Marie Curie was a physicist.")) is None
    assert name_runs("In 1915, J. M. W. Turner's works include The Castle and Leonardo da Vinci") == [
        "J. M. W. Turner", "Castle", "Leonardo da Vinci"]
    assert claim_subject("Gustav Klimt's best-known works include The Castle.") == "Gustav Klimt"
    assert claim_subject("Curie won two Nobel Prizes.", CURIE_BIO) == "Marie Curie"  # the bio's Curie
    assert claim_subject("Pierre Curie married her.", CURIE_BIO) == "Pierre Curie"
    assert same_subject("Curie", "Marie Curie") and not same_subject("Marie Curie", "Pierre Curie")


def test_a_passage_about_someone_else_keeps_only_what_names_the_subject():
    ev = Evidence(PIERRE)
    bound = restrict(ev, "Marie Curie")
    assert bound.text.startswith("Pierre Curie: He shared") and "1859" not in bound.text  # his name, not his dates
    assert "crystallography" not in bound.text  # the sentence about Pierre alone is gone
    assert restrict(Evidence(KAFKA), "Gustav Klimt") is None
    assert restrict(ev, "Curie") is ev and restrict(ev, "Pierre Curie") is ev  # the same subject: unchanged
    kept, notes = bind("Marie Curie was a pioneer in crystallography.", [ev])
    assert kept[0].text == bound.text and notes == [{"passage": "Pierre Curie", "subject": "Marie Curie", "dropped": False}]
    # the claim's grammatical subject is the passage's: left alone
    assert bind("Pierre Curie married her.", [ev], CURIE_BIO) == ([ev], [])
    # no identifiable subject on the claim's side: unchanged
    assert bind("It was written in 1926.", [Evidence(KAFKA)]) == ([Evidence(KAFKA)], [])
    # a plain passage is about the name its first sentence is about
    plain = Evidence("Franz Kafka wrote The Castle.")
    assert bind("Gustav Klimt wrote The Castle.", [plain]) == (
        [], [{"passage": "Franz Kafka", "subject": "Gustav Klimt", "dropped": True}])


BRANCUSI = ("Constantin Brâncuși was a Romanian sculptor, painter, and photographer. Considered one of the most "
            "influential sculptors of the 20th century, he is called a pioneer of modernism.")


def test_whom_a_plain_passage_is_about_is_read_from_its_opening():
    assert opening_names(BRANCUSI) == ("Constantin Brâncuși",)
    assert opening_names("In 1903, Marie Curie won the Nobel Prize in Physics.") == ("Marie Curie",)
    assert opening_names("Charles Lutwidge Dodgson, better known by his pen name Lewis Carroll, was an English "
                         "author.") == ("Charles Lutwidge Dodgson", "Lewis Carroll")
    # another person named before the verb is not an alias
    assert opening_names("Pierre Curie, husband of Marie Curie, was a French physicist.") == ("Pierre Curie",)
    assert opening_names("He was born in 1867.") == ()
    kept, notes = bind("Jonah Lomu was a Romanian sculptor, painter, and photographer.", [Evidence(BRANCUSI)])
    assert kept == [] and notes[0]["dropped"]


def test_a_plain_passage_knows_its_subject_by_a_short_form_or_an_initial():
    johnson = Evidence("Lyndon Baines Johnson was the 36th president of the United States from 1963 to 1969.")
    assert is_about(johnson, "Lyndon B. Johnson")  # an initial for the middle name
    assert is_about(Evidence("Thomas Edward Patrick Brady Jr. is an American football quarterback."), "Tom Brady")
    assert is_about(Evidence("Charles Lutwidge Dodgson, better known by his pen name Lewis Carroll, was an English "
                             "author."), "Lewis Carroll")
    assert not is_about(Evidence("Franklin Delano Roosevelt was the 32nd president."), "Theodore Roosevelt")
    # the judge reads it headed with the claim's subject, as titled passages read
    [headed], _ = bind("Lyndon B. Johnson was the 36th president.", [johnson])
    assert headed.text == f"Lyndon B. Johnson: {johnson.text}"


def test_a_pronoun_goes_on_with_the_person_it_cannot_be_the_passages_own():
    ev = Evidence("Pierre Curie was a French physicist. He married Marie Sklodowska in 1895. She was born in "
                  "Warsaw. She studied in Paris. He died in 1906.")
    bound = restrict(ev, "Marie Sklodowska")
    assert "She was born in Warsaw. She studied in Paris." in bound.text
    assert "He died" not in bound.text and "French physicist" not in bound.text


def test_a_regnal_namesake_is_someone_else():
    """In a bio of Philip II of Macedon, "He was also King of England ... 1554" is resolved to the
    prompt's whole name, so Philip II of Spain's passage cannot support it (it did, as "Philip II")."""
    prompt = "Tell me a bio of Philip II of Macedon. Provide as many specific details as possible."
    [claim] = RuleClaimExtractor().extract("He was also King of England from 1554 until 1558.", prompt=prompt).claims
    assert claim.text == "Philip II of Macedon was also King of England from 1554 until 1558."
    spain = Evidence("Philip II of Spain (King of Spain from 1556 to 1598): Philip II was also jure uxoris King of "
                     "England and Ireland from his marriage to Queen Mary I in 1554 until her death in 1558.")
    kept, notes = bind(claim.text, [spain], prompt)
    assert kept == [] and notes == [{"passage": "Philip II of Spain", "subject": "Philip II of Macedon", "dropped": True}]


@pytest.mark.parametrize("sentence", [
    "Her expertise in experimental physics evoked comparisons to Marie Curie.",
    'Her nicknames include the "First Lady of Physics" and the "Chinese Marie Curie".',
    "She was nicknamed the Chinese Madame Curie.",
    "Wu, the Chinese Madame Curie, won the Wolf Prize.",
    "She was often compared by critics with Marie Curie.",
    "She was likened to Marie Curie.",
    "Like Marie Curie, she won two prizes.",
    "She was more famous than Marie Curie.",
    "She was known as the Marie Curie of China.",
    "She was called the new Marie Curie.",
    "She was dubbed Marie Curie by the press.",
])
def test_a_comparison_or_an_epithet_does_not_name_the_subject(sentence):
    assert not names_subject(sentence, "Marie Curie", "Chien-Shiung Wu")


@pytest.mark.parametrize("sentence,other", [
    ("He shared the 1903 Nobel Prize with his wife, Marie Curie, for their work.", "Pierre Curie"),
    ("She studied under Marie Curie in Paris.", "Chien-Shiung Wu"),
    ("She was Marie Curie's student.", "Chien-Shiung Wu"),
    ("With Marie Curie she discovered polonium.", "Chien-Shiung Wu"),
    ("Like her mentor Marie Curie, she studied radioactivity.", "Chien-Shiung Wu"),
    ("She met the young Marie Curie in 1891.", "Chien-Shiung Wu"),
    ("Her sister Maria, the future Marie Curie, moved to Paris.", "Bronisława Dłuska"),
    ("She spent more than a decade with Marie Curie.", "Chien-Shiung Wu"),
    ("She was compared to Marie Curie, with whom Marie Curie worked.", "Chien-Shiung Wu"),  # one mention is enough
])
def test_a_relation_still_names_the_subject(sentence, other):
    assert names_subject(sentence, "Marie Curie", other)


def test_names_that_only_look_like_epithets_still_count():
    # a work's title in quotes, a place's own name after "known as" / "of", a noun modifier
    assert names_subject('He wrote "Maybellene" (1955) and "Johnny B. Goode" (1958).', "Johnny B. Goode", "Chuck Berry")
    assert names_subject("Auckland lies in the North Island of New Zealand.", "North Island", "Auckland")
    assert names_subject("A period that became known as the Prague Spring.", "Prague Spring", "Alexander Dubček")
    assert names_subject("It was annexed by the British East India Company.", "East India Company", "Sikh Empire")
    assert names_subject("It established what is now called the Standard Model of particle physics.", "Standard Model",
                         "W and Z bosons")


def test_a_passage_that_only_compares_its_subject_to_someone_is_dropped():
    assert restrict(Evidence(WU), "Marie Curie") is None
    kept, notes = bind("In 1912 Marie Curie was awarded the Nobel Prize in Physics.", [Evidence(WU)])
    assert kept == [] and notes == [{"passage": "Chien-Shiung Wu", "subject": "Marie Curie", "dropped": True}]
    # her own claims keep the whole passage, title line and all
    assert restrict(Evidence(WU), "Chien-Shiung Wu").text == WU
    check = FactChecker(Agreeable()).check_sentence("In 1912 she was awarded the Nobel Prize in Physics.",
                                                    prompt=CURIE_BIO, evidence=[WU])
    assert not check.factual and check.verdicts[0].rationale == "passage about Chien-Shiung Wu, not Marie Curie"


class Agreeable:
    """A backend that calls everything it is shown supported, and records what it was shown."""

    name = "agreeable"

    def __init__(self):
        self.seen = []

    def check_claims(self, claims, evidence):
        self.seen.append([[e.text for e in ev] for ev in evidence])
        return [Verdict(c, SUPPORTED if ev else NOT_ENOUGH_EVIDENCE, 1.0 if ev else 0.0, list(ev), self.name)
                for c, ev in zip(claims, evidence)]


def test_fact_checker_drops_another_persons_passage_before_judging():
    backend = Agreeable()
    check = FactChecker(backend).check_sentence(
        "His best-known works include The Castle.", prompt="Tell me a bio of Gustav Klimt.", evidence=[KAFKA])
    (v,) = check.verdicts
    assert v.label == NOT_ENOUGH_EVIDENCE and v.error is None and not check.factual and check.needs_rewrite
    assert v.rationale == "passage about Franz Kafka, not Gustav Klimt"
    assert v.details["subject_binding"][0]["dropped"] and backend.seen == []  # the backend never saw it
    # the setting off: the judge reads Kafka's passage for Klimt, as before
    off = FactChecker(Agreeable(), bind_subjects=False).check_sentence(
        "His best-known works include The Castle.", prompt="Tell me a bio of Gustav Klimt.", evidence=[KAFKA])
    assert off.factual
    # the claim's own passage, and a passage that names the subject, still reach the backend
    own = FactChecker(backend).check_sentence("His best-known works include The Castle.",
                                              prompt="Tell me a bio of Franz Kafka.", evidence=[KAFKA])
    assert own.factual and backend.seen[-1] == [[KAFKA]]


def test_the_setting_reaches_the_fact_checker():
    from ewe.config import CheckerConfig
    from ewe.checker_factory import build_fact_checker

    assert CheckerConfig().bind_subjects is True
    fc = build_fact_checker(CheckerConfig(backend="alignment", bind_subjects=False), evidence=None)
    assert fc.bind_subjects is False


# --- the labelled set ------------------------------------------------------------------------

def test_the_binding_set_file_matches_its_builder():
    from ewe.data.subject_set import DEFAULT_PATH, KINDS, build_subject_set, load_subject_set
    from ewe.judge.data import is_held_out

    items = load_subject_set(DEFAULT_PATH)
    assert items == build_subject_set(seed=0)
    assert len(items) >= 300 and {it["kind"] for it in items} == set(KINDS)
    labels = [it["label"] for it in items]
    assert labels.count(SUPPORTED) == len(items) // 2  # balanced, pair by pair
    assert all(is_held_out(it["passage_title"]) for it in items)  # no passage the judge trained on
    for it in items:
        assert it["evidence"].startswith(it["passage_title"])
        if it["kind"] in ("swap", "namesake"):
            assert it["attributed_to"] != it["passage_title"] and it["attributed_to"] in it["claim"]


# --- the shipped judge -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def shipped():
    from ewe.judge.checker import JudgeChecker, shipped_judge

    return FactChecker(JudgeChecker(shipped_judge()))


@pytest.mark.slow
def test_klimt_is_not_supported_by_kafkas_passage(shipped):
    from ewe.data.wiki import passage

    klimt = "Tell me a bio of Gustav Klimt."
    for sentence in ("His best-known works include The Metamorphosis (1915) and The Castle (1926).",
                     "Gustav Klimt's best-known works include The Metamorphosis (1915) and The Castle (1926)."):
        check = shipped.check_sentence(sentence, prompt=klimt, evidence=[KAFKA])
        assert not check.factual and "passage about Franz Kafka, not Gustav Klimt" in check.verdicts[0].rationale
    own = shipped.check_sentence("He is best known for The Kiss.", prompt=klimt, evidence=[passage("Gustav Klimt")])
    assert own.factual, own.to_dict()
    kafka = shipped.check_sentence("His best-known works include The Metamorphosis (1915) and The Castle (1926).",
                                   prompt="Tell me a bio of Franz Kafka.", evidence=[KAFKA])
    assert kafka.factual, kafka.to_dict()


@pytest.mark.slow
def test_marie_is_judged_only_on_what_pierres_passage_says_of_her(shipped):
    not_of_her = shipped.check_sentence("She was a pioneer in crystallography and magnetism.", prompt=CURIE_BIO,
                                        evidence=[PIERRE])
    assert not not_of_her.factual and not_of_her.verdicts[0].details["subject_binding"][0]["dropped"] is False
    of_her = shipped.check_sentence("She shared the 1903 Nobel Prize in Physics with Pierre Curie.", prompt=CURIE_BIO,
                                    evidence=[PIERRE])
    assert of_her.factual, of_her.to_dict()


@pytest.mark.slow
def test_marie_is_not_supported_by_a_passage_that_compares_wu_to_her(shipped):
    check = shipped.check_sentence("In 1912 she was awarded the Nobel Prize in Physics.", prompt=CURIE_BIO,
                                   evidence=[WU])
    assert not check.factual and "passage about Chien-Shiung Wu, not Marie Curie" in check.verdicts[0].rationale
    # Pierre's dates stay out of what his passage says of her
    born = shipped.check_sentence("She was born in 1859.", prompt=CURIE_BIO, evidence=[PIERRE])
    assert not born.factual, born.to_dict()
    own = shipped.check_sentence("In 1978 she was awarded the inaugural Wolf Prize in Physics.",
                                 prompt="Tell me a bio of Chien-Shiung Wu.", evidence=[WU])
    assert own.factual, own.to_dict()


@pytest.mark.slow
def test_binding_accuracy_on_the_labelled_set():
    """The whole pipeline over 446 items: three minutes on two idle CPU cores, more on busy ones."""
    from ewe.judge.binding import evaluate_binding

    report = evaluate_binding()
    assert report["balanced_accuracy"] >= 0.90, report


@pytest.mark.slow
def test_binding_accuracy_on_plain_passages():
    """The same set with each passage as users paste it (no "Title (description):" head): whom it
    is about is read from its text. 0.796 before issue 57."""
    from ewe.judge.binding import evaluate_binding

    report = evaluate_binding(plain=True)
    assert report["balanced_accuracy"] >= 0.95, report
    assert set(report["per_swap"]) == {"name", "pronoun", "possessive"}, report
    assert all(figure >= 0.95 for figure, _ in report["per_swap"].values()), report["per_swap"]


def test_per_swap_pairs_each_kind_of_swap_with_its_own_controls():
    from ewe.judge.binding import per_swap

    def row(kind, opening="Johnson"):
        return {"kind": kind, "source_sentence": f"{opening} was vice president."}

    rows = [row("control"), row("swap"), row("namesake"), row("pronoun-own", "His"), row("pronoun-other", "Her"),
            row("control", "His")]
    gold = [True, False, False, True, False, True]
    pred = [True, True, False, True, False, False]  # a swap let through, a possessive control rejected
    assert per_swap(rows, gold, pred) == {
        "name": [0.5, 4],  # controls right 1/2, swaps caught 1/2
        "pronoun": [1.0, 2],
        "possessive": [0.75, 3],  # its controls right 1/2 (the "His" one missed), its swap caught 1/1
    }
    assert "pronoun" not in per_swap(rows[:3], gold[:3], pred[:3])  # no pair of that kind: no figure


# --- sentences of an answer about another subject (issue 56) ----------------------------------

@pytest.mark.parametrize("sentence, subject, other", [
    ("Sviatoslav I or Svyatoslav I Igorevich was Prince of Kiev from 945 until his death in 972.",
     "Sviatoslav Richter", "Sviatoslav I"),
    ("Pierre Curie was a French physicist.", "Marie Curie", "Pierre Curie"),
    ("Mark Twain wrote The Adventures of Tom Sawyer.", "Arthur Conan Doyle", "Mark Twain"),
    ("The Acropolis of Athens is an ancient citadel.", "Parthenon", "Acropolis of Athens"),
    ("Henry VII founded the Tudor dynasty.", "Henry VIII", "Henry VII"),
    # the subject's surname as another person's middle name is no mention of the subject
    ("Alexander Graham Bell was a Scottish-born inventor.", "Martha Graham", "Alexander Graham Bell"),
    ("Ronald Reagan, also known as Ronald Wilson Reagan, served as the 40th president.", "Woodrow Wilson",
     "Ronald Reagan"),
])
def test_a_sentence_about_someone_else_is_off_subject(sentence, subject, other):
    assert off_subject(sentence, subject) == other


@pytest.mark.parametrize("sentence, subject", [
    ("Pierre Curie married her in 1895.", "Marie Curie"),  # says how he relates to her
    ("Pierre Curie, whom she married in 1895, was a physicist.", "Marie Curie"),
    ("Curie was born in Warsaw.", "Marie Curie"),
    ("Marie was born in Warsaw.", "Marie Curie"),
    ("Ictinus and Callicrates designed the Parthenon.", "Parthenon"),  # names the subject
    ("It was built in 447 BC.", "Parthenon"),
    ("Construction began in 447 BC.", "Parthenon"),  # a capitalized first word is no name
    ("Queen Victoria ruled from 1837.", "Victoria"),
    ("Henry VIII married six times.", "Henry VIII"),
    ("Alexander Graham Bell met Martha Graham in 1920.", "Martha Graham"),  # names her too
    ("Pierre Curie was a French physicist.", None),  # no subject asked about: nothing to hold to
])
def test_a_sentence_about_the_subject_is_not(sentence, subject):
    assert off_subject(sentence, subject) is None


def test_the_release_check_fails_a_judge_that_binds_worse_than_the_shipped_one(monkeypatch):
    from ewe.judge import binding

    figures = {"judges/new": 0.91, "minilm-cross": 0.96}
    seen = []

    def fake(judge, plain):
        seen.append((judge, plain))
        return {"balanced_accuracy": figures[judge]}

    monkeypatch.setattr(binding, "evaluate_binding", fake)
    assert binding.release_check("judges/new") == {"passed": False,
                                                   "binding_plain": {"judges/new": 0.91, "minilm-cross": 0.96}}
    assert seen == [("judges/new", True), ("minilm-cross", True)]  # both on plain passages, measured now
    figures["judges/new"] = 0.97
    assert binding.release_check("judges/new")["passed"]


def test_a_given_name_inside_another_persons_name_is_no_mention():
    # Sequoyah's article once let George Boole's answer open "George Boole, also known as George Gist ..."
    assert not names_subject("Sequoyah, also known as George Gist or George Guess, was a polymath.", "George Boole",
                             "Sequoyah")
    assert not names_subject("He married Marie Antoinette in 1770.", "Marie Curie", "Louis XVI")
    assert not names_subject("Louis XV was his grandfather.", "Louis XVI", "Louis XV")
    # the subject's last name is part of the longer name, or the given name stands alone
    assert names_subject("Pierre Curie married Marie Skłodowska-Curie in 1895.", "Marie Curie", "Pierre Curie")
    assert names_subject("His wife Marie won two prizes.", "Marie Curie", "Pierre Curie")
