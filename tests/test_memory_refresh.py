"""What enters one answer's memory (ewe/controller/memory_refresh.py): retrieved passages and the
checker's feedback passages alike stay out when they are about another subject and do not name
the prompt's (issue 56), without a model."""
from types import SimpleNamespace

from ewe.controller.memory_refresh import MemoryRefresh
from ewe.controller.trace import Trace
from ewe.stats import Timings


class Units:
    def __init__(self):
        self.texts = []

    def add(self, texts, pool, meta):
        self.texts += texts
        return {"added": list(texts), "evicted": [], "present": []}

    def describe(self):
        return {}

    def __len__(self):
        return len(self.texts)


def refresh(subject, person=False):
    runtime = SimpleNamespace(new_memory=Units, config=SimpleNamespace(memory=SimpleNamespace(unit_text="passage")))
    return MemoryRefresh(runtime, Trace(), Timings(("encode", "retrieve")), subject, person=person)


OWN = {"form": "refuting", "title": "Spirited Away", "text": "Spirited Away is a 2001 film by Hayao Miyazaki."}
NAMES_IT = {"form": "refuting", "title": "Hayao Miyazaki", "text": "Hayao Miyazaki directed Spirited Away (2001)."}
OTHER = {"form": "refuting", "title": "Tokyo Story", "text": "Tokyo Story is a 1953 film starring Chishu Ryu."}
NOTE = {"form": "instruction", "title": "", "text": "The claim is not supported; write it again."}


def test_feedback_about_another_subject_stays_out_of_memory_and_is_traced():
    r = refresh("Spirited Away")
    r.add_feedback([OWN, NAMES_IT, OTHER, NOTE])
    assert r.units.texts == [OWN["text"], NAMES_IT["text"], NOTE["text"]]
    assert [e["titles"] for e in r.trace.events if e["type"] == "feedback_off_subject"] == [["Tokyo Story"]]


def test_a_prompt_without_a_subject_keeps_every_passage():
    r = refresh(None)
    r.add_feedback([OWN, OTHER])
    assert r.units.texts == [OWN["text"], OTHER["text"]]
    hits = [SimpleNamespace(title=f["title"], text=f["text"]) for f in (OWN, OTHER)]
    assert refresh("Spirited Away").about_subject(hits) == (hits[:1], ["Tokyo Story"])


def hit(title, text):
    return SimpleNamespace(title=title, text=f"{title}: {text}")


def test_a_persons_namesakes_stay_out_but_passages_about_them_come_in():
    """Read in the default's bio answers: Maya Angelou's answer from the Maya civilization's
    passage, Sviatoslav Richter's from Sviatoslav I's, Jiang Qing's from the Qing dynasty's."""
    cases = [("Maya Angelou", hit("Maya civilization", "The Maya civilization was a Mesoamerican civilization."),
              False),
             ("Sviatoslav Richter", hit("Sviatoslav I", "Sviatoslav I Igorevich was Grand Prince of Kiev."), False),
             ("Jiang Qing", hit("Qing dynasty", "The Qing dynasty was a Manchu-led imperial dynasty."), False),
             ("Horace Greeley", hit("Horace", "Horace was the leading Roman lyric poet."), False),
             ("Augustus II the Strong", hit("Augustus", "Augustus was the first Roman emperor."), False),
             ("Maya Angelou", hit("Maya Angelou", "Maya Angelou was an American memoirist and poet."), True),
             ("Marie Curie", hit("Curie", "Curie was a Polish and naturalised-French physicist."), True),
             ("Henry V of England", hit("Henry V", "Henry V was King of England from 1413."), True),
             ("Napoleon Bonaparte", hit("Napoleon", "Napoleon Bonaparte was a French military leader."), True),
             ("Gracchi brothers", hit("Gracchi brothers", "The Gracchi brothers were two Roman tribunes."), True),
             ("Izumo no Okuni", hit("Izumo no Okuni", "Izumo no Okuni was a Japanese entertainer."), True)]
    for person, passage, kept in cases:
        assert refresh(person, person=True).speaks_about(passage.title, passage.text) == kept, (person, passage.title)
    # a thing's passages must name it whole: a namesake's article never speaks about it (issue 72),
    # nor one that shares a common word of its name
    assert not refresh("Maya Angelou").speaks_about("Maya civilization", "Maya civilization: The Maya ...")
    assert not refresh("Battle of Agincourt").speaks_about(
        "Baybars", "Baybars: He defeated the Mongols at the Battle of Ain Jalut.")
    assert refresh("Battle of Agincourt").speaks_about("Henry V", "Henry V: He won the battle of Agincourt in 1415.")


def test_once_the_article_is_known_other_articles_must_name_the_subject():
    """Read in the default's answers (issue 72): Prince (musician)'s memory held Machiavelli's The
    Prince, Martin Luther's Martin Luther King Jr.'s, Aung San's Aung San Suu Kyi's."""
    def known(name, title):
        r = refresh(name, person=True)
        r.article = SimpleNamespace(title=title)
        return r

    prince = known("Prince", "Prince (musician)")
    assert prince.speaks_about("Prince (musician)", "Prince (musician): Prince was an American singer.")
    assert not prince.speaks_about("The Prince", "The Prince: The Prince is a treatise by Machiavelli.")
    assert not prince.speaks_about("Niccolò Machiavelli", "Niccolò Machiavelli: He wrote The Prince.")
    luther = known("Martin Luther", "Martin Luther")
    assert not luther.speaks_about("Martin Luther King Jr.", "Martin Luther King Jr.: Martin Luther King Jr. was a minister.")
    assert luther.speaks_about("Philipp Melanchthon", "Philipp Melanchthon: He worked with Martin Luther.")
    assert not known("Aung San", "Aung San").speaks_about(
        "Aung San Suu Kyi", "Aung San Suu Kyi: She is the daughter of Aung San and won the Nobel Peace Prize.")
