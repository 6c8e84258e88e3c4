"""The prompt's subject article pinned in memory (issue 72): resolved by title, held whole and in
order through any number of refreshes, namesakes kept out, and a plain sentence when the datastore
has nothing about the subject. A scripted model and a fake datastore: seconds."""
from __future__ import annotations

from scripted import ScriptedChecker, scripted_model, text_script
from tiny import tiny_tokenizer

from ewe import EWE
from ewe.config import EWEConfig
from ewe.retrieval import Hit
from ewe.controller.subject_article import find_article

SENTENCES = ["Marie Curie was a physicist.", "She won two Nobel prizes.", "She was born in Warsaw.",
             "She discovered polonium.", "She married Pierre Curie.", "She died in 1934."]


class ArticleStore:
    """Articles of a few short chunks; every search returns every chunk, the query's words first."""

    def __init__(self, articles: dict[str, list[str]]):
        self.chunks = [(title, i, text) for title, texts in articles.items() for i, text in enumerate(texts)]
        self.queries: list[str] = []

    def _hit(self, pid: int, score: float) -> Hit:
        title, i, text = self.chunks[pid]
        head = f"{title}: "
        return Hit(id=pid, score=score, text=head + text, title=title, source_id=title, start=i * 100,
                   end=i * 100 + len(text), body_start=len(head))

    def search(self, queries, k, threshold=None, dedup_sources=True):
        out = []
        for q in queries:
            self.queries.append(q)
            words = set(q.lower().replace(".", " ").split())
            ranked = sorted(range(len(self.chunks)), key=lambda p: (-len(words & self._words(p)), p))
            out.append([self._hit(p, 0.9 - r / 100) for r, p in enumerate(ranked[:k])])
        return out

    def _words(self, pid):
        title, _, text = self.chunks[pid]
        return set(f"{title} {text}".lower().replace(".", " ").split())

    def article_titles(self):
        return {t: t for t, _, _ in self.chunks}

    def article(self, source_id):
        return [self._hit(p, float("nan")) for p, (t, _, _) in enumerate(self.chunks) if t == source_id]

    def __len__(self):
        return len(self.chunks)


CURIE = {"Marie Curie": ["Marie Curie was a physicist and chemist.", "She won two Nobel prizes."],
         "Pierre Curie": ["Pierre Curie married Marie Curie in 1895."],
         "Franz Kafka": ["His best-known works include The Castle."],
         "Nobel Prize": ["The Nobel Prizes are awarded yearly."],
         "Polonium": ["Polonium was discovered by Marie Curie in 1898."],
         "Warsaw": ["Warsaw is the city where Marie Curie was born."]}


def make(store, script_text, subject_units=4, retrieval_units=1, checker=None, **controller):
    cfg = EWEConfig.build({
        "memory": {"unit_tokens": 32, "retrieval_units": retrieval_units, "feedback_units": 1,
                   "subject_units": subject_units},
        "retrieval": {"source": "fake", "top_k": retrieval_units, "dedup_sources": False},
        "decoding": {"max_new_tokens": 200},
        "controller": {"verify_trigger": "never" if checker is None else "interval", "retrieval_trigger": "interval",
                       "retrieval_interval": 1, **controller}})
    seen = []

    def script(units):
        seen.append(units)
        return script_text

    return EWE(scripted_model(text_script(script)), tiny_tokenizer(), cfg, datastore=store,
               fact_checker=checker), seen


def events(result, kind):
    return [e for e in result.trace if e["type"] == kind]


def test_the_subject_article_is_pinned_whole_in_order_through_every_refresh():
    store = ArticleStore(CURIE)
    ewe, seen = make(store, " ".join(SENTENCES))
    r = ewe.generate("Tell me a bio of Marie Curie.")
    assert [(u["title"], u["chunk"]) for u in r.memory["subject"]] == [("Marie Curie", 0), ("Marie Curie", 1)]
    refreshes = events(r, "retrieve")
    assert len(refreshes) >= len(SENTENCES)  # the prompt's search and one per sentence
    assert sum(len(e["evicted"]) for e in refreshes) >= 2  # the one retrieval unit turned over
    pinned = {h.id for h in store.article("Marie Curie")}
    assert all(h["id"] not in pinned for e in refreshes for h in e["hits"])  # never retrieved a second time
    assert "Marie Curie" not in {u["title"] for u in r.memory["retrieval"]}
    assert min(seen) >= 2  # every token read both chunks
    assert r.subject == {"name": "Marie Curie", "person": True, "found": True, "title": "Marie Curie",
                         "how": "exact", "chunks": sorted(pinned)}
    assert r.subject_found is True


def test_pinning_caps_at_subject_units_and_is_off_without_them():
    ewe, seen = make(ArticleStore(CURIE), " ".join(SENTENCES[:2]), subject_units=1)
    r = ewe.generate("Tell me a bio of Marie Curie.")
    assert len(r.memory["subject"]) == 1 and events(r, "subject")[0]["left_out"] == 1
    second = [h.id for h in ArticleStore(CURIE).article("Marie Curie")][1]
    assert any(h["id"] == second for e in events(r, "retrieve") for h in e["hits"])  # the one left out may be retrieved
    ewe, _ = make(ArticleStore(CURIE), " ".join(SENTENCES[:2]), subject_units=0)
    r = ewe.generate("Tell me a bio of Marie Curie.")
    assert "subject" not in r.memory and not events(r, "subject") and r.subject["found"] is True


def test_namesakes_stay_out_once_the_subject_article_is_known():
    store = ArticleStore({"Martin Luther": ["Martin Luther was a German priest."],
                          "Martin Luther King Jr.": ["Martin Luther King Jr. was an American minister."],
                          "Philipp Melanchthon": ["Melanchthon was a collaborator of Martin Luther."]})
    ewe, _ = make(store, "Martin Luther was a priest. He wrote theses.", retrieval_units=2)
    r = ewe.generate("Tell me a bio of Martin Luther.")
    assert [u["title"] for u in r.memory["subject"]] == ["Martin Luther"]
    assert {u["title"] for u in r.memory["retrieval"]} == {"Philipp Melanchthon"}  # names him; King does not
    assert all("Martin Luther King Jr." in e.get("off_subject", []) for e in events(r, "retrieve"))


def test_resolution_exact_disambiguated_and_top_hit():
    store = ArticleStore({"Prince (musician)": ["Prince was an American singer."],
                          "The Prince": ["The Prince is a treatise by Machiavelli."],
                          "Isaac Newton": ["Isaac Newton was an English physicist."],
                          "Martin Luther King Jr.": ["Martin Luther King Jr. was an American minister."],
                          "Galileo Galilei": ["Galileo di Vincenzo Bonaiuti de' Galilei, commonly referred to as "
                                              "Galileo Galilei or mononymously as Galileo, was an astronomer."]})

    def found(name, person=True):
        hits = store.search([name], k=3)[0]
        article = find_article(store, name, person, hits)
        return article and (article.title, article.how)

    assert found("Prince") == ("Prince (musician)", "disambiguated")
    assert found("Isaac Newton") == ("Isaac Newton", "exact")
    assert found("Newton") == ("Isaac Newton", "top hit")
    assert found("Martin Luther") is None  # only a namesake: nothing pinned
    assert found("Aung San") is None
    assert found("Galileo") == ("Galileo Galilei", "top hit")  # "mononymously as Galileo"
    assert found("Vincenzo") is None  # a name its first sentence does not call it by
    # a longer title the prompt writes whole, its lower-case words past the name the prompt reader takes
    store = ArticleStore({"Trưng sisters": ["The Trưng sisters were Vietnamese military leaders."],
                          "Quang Trung": ["Quang Trung was an emperor."]})
    hits = store.search(["Trưng"], k=3)[0]
    article = find_article(store, "Trưng", True, hits, "Tell me a bio of Trưng sisters.")
    assert (article.title, article.how) == ("Trưng sisters", "exact")
    assert find_article(store, "Trưng", True, hits, "Tell me a bio of Trưng sisterhood.").title != "Trưng sisters"


def test_a_subject_the_datastore_lacks_gets_one_plain_sentence():
    store = ArticleStore({"Franz Kafka": ["His best-known works include The Castle."]})
    checker = ScriptedChecker(false=set())
    ewe, _ = make(store, "Ada Lovelace was a poet. She wrote poems.", checker=checker, when_subject_missing="say")
    r = ewe.generate("Tell me a bio of Ada Lovelace.")
    assert r.text.startswith("I found nothing about Ada Lovelace") and r.text.count(".") == 1
    assert r.subject_found is False and r.subject["name"] == "Ada Lovelace"
    assert not events(r, "check") and checker.calls == [] and len(events(r, "subject_missing")) == 1
    assert r.token_ids == tiny_tokenizer()(r.text, add_special_tokens=False)["input_ids"]
    # "answer" lets the model write; the result still says the subject was not found
    ewe, _ = make(store, "Ada Lovelace was a poet.", when_subject_missing="answer")
    r = ewe.generate("Tell me a bio of Ada Lovelace.")
    assert r.text.strip() == "Ada Lovelace was a poet." and r.subject_found is False


def test_a_prompt_without_a_subject_pins_nothing_and_reports_none():
    ewe, _ = make(ArticleStore(CURIE), "Once upon a time.")
    r = ewe.generate("Write a short story.")
    assert r.subject == {} and r.subject_found is None and r.memory["subject"] == []


def test_an_end_is_refused_while_the_pinned_article_has_unstated_sentences():
    first, second = "Marie Curie was a physicist and chemist.", "She won two Nobel prizes."
    # 2 pinned chunks + 1 retrieval unit; the model goes on only while it reads the focus unit alone
    # (and after, with the focus as a fourth unit)
    ewe, _ = make(ArticleStore(CURIE), "", refuse_end=2)
    seen = []
    ewe.model.script = text_script(lambda units: seen.append(units) or (first if units == 3 else f"{first} {second}"))
    r = ewe.generate("Tell me a bio of Marie Curie.")
    assert r.text.strip() == f"{first} {second}" and r.finish_reason == "eos"
    assert 1 in seen  # the sentence in focus written reading the focus unit alone
    assert [e["why"] for e in events(r, "memory")][-2:] == ["focus on the unstated article", "focus ended"]
    [refused] = events(r, "end_refused")  # the second end finds the article stated
    assert refused["unstated"] == [second] and refused["of_sentences"] == 2
    assert [u["form"] for u in r.memory["feedback"]] == ["focus"]
    assert r.stats.end_refusals == 1
    # off: the answer ends where the model ends it
    ewe, _ = make(ArticleStore(CURIE), "")
    ewe.model.script = text_script(lambda units: first if units == 3 else f"{first} {second}")
    r = ewe.generate("Tell me a bio of Marie Curie.")
    assert r.text.strip() == first and not events(r, "end_refused") and r.stats.end_refusals == 0


def test_refusals_are_bounded_and_need_room_for_a_sentence():
    first = "Marie Curie was a physicist and chemist."
    ewe, _ = make(ArticleStore(CURIE), f"{first} She was a scientist.", refuse_end=2)
    r = ewe.generate("Tell me a bio of Marie Curie.")
    assert len(events(r, "end_refused")) == r.stats.end_refusals <= 2 and r.finish_reason == "eos"
    assert r.text.startswith(f"{first} She was a scientist.")
    # too little room left in max_new_tokens: no refusal
    ewe, _ = make(ArticleStore(CURIE), first, refuse_end=2)
    n = len(tiny_tokenizer()(first, add_special_tokens=False)["input_ids"])
    r = ewe.generate("Tell me a bio of Marie Curie.", max_new_tokens=n + 10)
    assert r.text.strip() == first and not events(r, "end_refused")


def test_article_use_reads_the_checks_lead_evidence_and_the_answers_words():
    from ewe.controller.article_use import ArticleUse

    store = ArticleStore({"Marie Curie": ["Marie Curie was born in Warsaw. She studied in Paris.",
                                          "She won two Nobel prizes for physics and chemistry."],
                          "Pierre Curie": ["Pierre Curie studied in Paris."]})
    chunks = store.article("Marie Curie")
    use = ArticleUse("Marie Curie", chunks, "Marie Curie")
    assert [s.text for s in use.sentences] == ["Marie Curie was born in Warsaw.", "She studied in Paris.",
                                               "She won two Nobel prizes for physics and chemistry."]

    def check(claim, source_id, label="supported"):
        return {"verdicts": [{"claim": claim, "label": label, "evidence": [{"source_id": source_id}]}]}

    own = f"Marie Curie#{chunks[0].id}"
    # a supported claim led by the article's chunk states the sentence of that chunk it shares most words with
    assert use.stated([check("Curie was educated and studied at Paris.", own)], "") == [False, True, False]
    # not when the lead evidence is another article, nor when the claim was not supported
    other = f"Pierre Curie#{store.article('Pierre Curie')[0].id}"
    assert use.stated([check("She studied in Paris.", other), check("She studied in Paris.", own, "unsupported")],
                      "") == [False, False, False]
    # the answer's own words: most of a sentence's content words, the subject's names left out
    assert use.unstated([], "Curie was born in Warsaw and won Nobel prizes.") == [
        "She studied in Paris.", "She won two Nobel prizes for physics and chemistry."]
    assert use.unstated([], "She won Nobel prizes in physics and chemistry.") == [
        "Marie Curie was born in Warsaw.", "She studied in Paris."]


def test_an_answer_the_retry_policy_would_stop_goes_on_with_the_unstated_article():
    first, bad, second = "Marie Curie was a physicist and chemist.", "She was a poet.", "Marie Curie won two Nobel prizes."
    for refuse_end, expected in ((1, f"{first} {second}"), (0, first)):
        checker = ScriptedChecker(false={bad})
        ewe, _ = make(ArticleStore(CURIE), "", checker=checker, refuse_end=refuse_end, max_retries=0,
                      on_retries_exhausted="stop")
        ewe.model.script = text_script(lambda units: f"{first} {second}" if units in (1, 4) else f"{first} {bad}")
        r = ewe.generate("Tell me a bio of Marie Curie.")
        assert r.text.strip() == expected
        refused = events(r, "end_refused")
        assert [e["why"] for e in refused] == ["retries exhausted"] * refuse_end
        assert [e["policy"] for e in events(r, "retries_exhausted")] == ["drop" if refuse_end else "stop"]


def test_a_sentence_its_own_article_supports_is_never_off_the_subject():
    first, family = "Marie Curie was a physicist and chemist.", "Pierre Curie was a French physicist."
    kept = {}
    for subject_units in (4, 0):  # the checker's evidence is the subject's article; pinned only with subject units
        ewe, _ = make(ArticleStore(CURIE), f"{first} {family}", checker=ScriptedChecker(false=set()),
                      subject_units=subject_units, on_retries_exhausted="drop", max_retries=0)
        kept[subject_units] = ewe.generate("Tell me a bio of Marie Curie.").text
    assert family in kept[4]  # its claims supported by her own article, lead evidence first
    assert family not in kept[0]  # no article pinned: another person's sentence, dropped as off_subject
