"""What enters one answer's working memory, and when: the prompt's subject article (pinned, with
memory.subject_units), retrieved passages about the prompt's subject, given passages and the
checker's feedback, each change traced and, while the answer is written, set on its row's
`RowMemory` (engine/request.py), which the loop carries out before the row's next forward (the
paper's refresh, docs/DESIGN.md section 2).

`version` counts the changes: a greedy retry under the same memory as its attempt would write
that attempt again (ControlledRun._retry_would_repeat), and candidates reuse the prompt's cache
only while the memory it was read under is unchanged.
"""
from __future__ import annotations

import re
import time
import warnings

from ..retrieval.in_prompt import UNIT_TEXTS
from .subject_article import SubjectArticle, find_article
from ..verify.namesakes import namesake_kind
from ..verify.subject import names_subject, passage_subject, same_person, same_subject
from ..verify.types import Evidence


class MemoryRefresh:
    """One answer's memory (`units`, a WorkingMemory) and the searches that fill it; `timings` is the
    run's time breakdown (stats.Timings: "retrieve" and "encode" are added here); `row` the RowMemory of the
    row that writes the answer (None before decoding starts: its prefill reads the memory as it is then)."""

    def __init__(self, runtime, trace, timings, subject: str | None, person: bool = False):
        self.runtime, self.trace, self.timings, self.subject = runtime, trace, timings, subject
        self.same = same_person if person else same_subject  # a person's namesakes told apart (verify/subject.py)
        self.units = runtime.new_memory()
        self.version = 0
        self.row = None
        # passages the prompt already holds as text, in the prompt's order (never a unit as well); a dict,
        # not a set: the candidates re-read them in this order, and a set's order changes per process
        self.in_prompt: dict[str, None] = {}
        self.person = person
        self.article: SubjectArticle | None = None  # the subject's own article, once `pin` found it
        self.pinned: set[int] = set()  # its chunks' passage ids: in memory already, never retrieved again
        self.focused: tuple[str, str] | None = None  # the unit id and text of the focus on the unstated article
        self.focusing = False  # while True the answer reads the focus unit alone (`focus`, `unfocus`)

    def changed(self, why: str) -> None:
        self.version += 1
        if self.row is not None:
            self.row.set(self.reading(), reencode=self.runtime.config.memory.reencode_context)
        event = self.trace.add("memory", why=why, pools=self.units.describe(), units=len(self.units))
        if self.focusing:
            event["reading"] = "focus"

    def reading(self):
        """The memory the answer reads now: all its units, or, while focusing, the focus unit alone."""
        if self.focusing and self.focused is not None:
            return self.units.state_of([self.focused[0]])
        return self.units.state()

    def add(self, texts: list[str], pool: str, meta: list[dict], why: str) -> dict:
        """Encode `texts` as units of `pool`; what was added, evicted or already present."""
        change = self._put(texts, pool, meta)
        if change["added"] or change["evicted"]:
            self.changed(why)
        return change

    def _put(self, texts: list[str], pool: str, meta: list[dict]) -> dict:
        t0 = time.perf_counter()
        texts = [UNIT_TEXTS[self.runtime.config.memory.unit_text](t) for t in texts]
        with warnings.catch_warnings():
            if pool == "feedback":  # the checker's evidence is cut to the unit size on purpose
                warnings.simplefilter("ignore")  # passages (given or retrieved) keep their truncation warning
            change = self.units.add(texts, pool=pool, meta=meta)
        self.timings.add("encode", time.perf_counter() - t0)
        return change

    def add_feedback(self, feedback: list[dict]) -> None:
        """The checker's feedback messages as units of the feedback pool (the paper's retry reads them).
        A passage about another subject that does not name the prompt's stays out, as it does from
        retrieval (`about_subject`): the checker searched for the failed claim, and a rewrite read
        "Tokyo Story" from its passages into an answer about Spirited Away."""
        kept, off = [], []
        for f in feedback:
            (kept if f["form"] == "instruction" or self.speaks_about(f["title"], f["text"]) else off).append(f)
        if off:
            self.trace.add("feedback_off_subject", titles=[f["title"] for f in off])
        feedback = kept
        if feedback:
            self.add([f["text"] for f in feedback], "feedback",
                     [{"form": f["form"], "title": f["title"]} for f in feedback], "fact-check feedback")

    def pin(self, prompt: str) -> SubjectArticle | None:
        """Resolve the prompt's subject to its article (controller/subject_article.py) and put its
        first memory.subject_units chunks, in order, into the subject pool, where they stay for the
        whole answer; traced as a "subject" event either way."""
        cap = self.units.pools["subject"].capacity if "subject" in self.units.pools else 0
        ds = self.runtime.datastore
        if self.subject is None or not cap or ds is None:
            return None
        t0 = time.perf_counter()
        hits = ds.search([prompt], k=self.runtime.config.retrieval.top_k + cap)[0]
        article = find_article(ds, self.subject, self.person, hits, prompt)
        self.timings.add("retrieve", time.perf_counter() - t0)
        if article is None:
            self.trace.add("subject", name=self.subject, found=False)
            return None
        self.article = article
        chunks = article.chunks[:cap]
        self.pinned = {h.id for h in chunks}  # chunks past subject_units stay retrievable
        change = self.add([h.text for h in chunks], "subject", [{"title": h.title, "chunk": i} for i, h in
                                                                 enumerate(chunks)], "subject article")
        self.trace.add("subject", name=self.subject, found=True, **article.describe(), added=change["added"],
                       left_out=len(article.chunks) - len(chunks))
        return article

    def focus(self, title: str, sentences: list[str]) -> None:
        """Put the subject article's sentences the answer has not stated in focus for the next sentence:
        one unit of the feedback pool (form "focus", in place of an earlier focus), which the answer
        reads alone until `unfocus` (ControlledRun._refuse_end: the model, asked to go on, otherwise
        wrote again what the whole memory had already given it). The unit stays in the feedback pool
        after. Nothing without a feedback pool."""
        pool = self.units.pools["feedback"]
        if not pool.capacity or not sentences:
            return
        text = f"{title}: {' '.join(sentences)}"
        held = self.focused is not None and self.focused[0] in pool
        if not (held and self.focused[1] == text):
            if held:
                self.units.remove(self.focused[0], pool="feedback")
            change = self._put([text], "feedback", [{"form": "focus", "title": title}])
            self.focused = ((change["added"] or change["present"])[0], text)
        self.focusing = True
        self.changed("focus on the unstated article")

    def unfocus(self) -> None:
        """The answer reads its whole memory again (the sentence written in focus is complete, or was cut)."""
        if self.focusing:
            self.focusing = False
            self.changed("focus ended")

    def pinned_chunks(self) -> list:
        """The pinned chunks of the subject article, in order ([] when none is pinned)."""
        return [h for h in self.article.chunks if h.id in self.pinned] if self.article is not None else []

    def retrieve(self, query: str, why: str, into_prompt: bool = False) -> list:
        """Search; the hits become retrieval units, or (`into_prompt`) are only returned and traced.
        The subject article's chunks are never retrieved again: the pool's top_k are other passages."""
        t0 = time.perf_counter()
        if self.pinned:
            k = self.runtime.config.retrieval.top_k
            hits = [h for h in self.runtime.retrieve([query], k=k + len(self.pinned))[0] if h.id not in self.pinned][:k]
        else:
            hits = self.runtime.retrieve([query])[0]
        t1 = time.perf_counter()
        self.timings.add("retrieve", t1 - t0)
        found = [h.to_dict() for h in hits]
        hits, off = self.about_subject(hits)
        if into_prompt:
            event = self.trace.add("retrieve", why=why, query=query, hits=found, placement="prompt")
            if off:
                event["off_subject"] = off
            return hits
        event = self.trace.add("retrieve", why=why, query=query, hits=found, added=[], evicted=[], present=[])
        if off:
            event["off_subject"] = off
        hits = [h for h in hits if h.text not in self.in_prompt]
        if hits:
            meta = [{"title": h.title, "score": round(float(h.score), 4)} for h in hits]
            change = self.add([h.text for h in hits], "retrieval", meta, f"retrieval ({why})")
            event.update(added=change["added"], evicted=change["evicted"], present=change["present"])
        event["seconds"] = {"search": round(t1 - t0, 4), "encode": round(time.perf_counter() - t1, 4)}
        return hits

    def about_subject(self, hits: list) -> tuple[list, list[str]]:
        """The hits that can speak about the prompt's subject, a person or a thing
        (verify/prompt_subject.py, verify/subject.py): a passage about someone or something else
        enters memory only if it names the subject ("Pierre Curie ... his wife Marie Curie"; the
        article on towers does not name the Eiffel Tower); the titles of the others. Prompts that
        name no subject keep every hit."""
        kept, off = [], []
        for h in hits:
            (kept if self.speaks_about(h.title, h.text) else off).append(h)
        return kept, [h.title for h in off]

    def speaks_about(self, title: str | None, text: str) -> bool:
        """Whether a passage is about the prompt's subject or names it (always, for a prompt with none).
        Once the subject's article is known, any other article is another subject's; a namesake's
        article that extends the name or names a work or relative ("Martin Luther King Jr.", "The
        Prince", "Aung San Suu Kyi", verify/namesakes.py) never speaks about the subject."""
        if self.subject is None:
            return True
        about = passage_subject(Evidence(text=text, title=title))
        if about is None:
            return True
        if self.article is not None and title == self.article.title:
            return True
        kind = namesake_kind(self.subject, title or about)
        if self.article is None and kind is None and self.same(self.subject, about):
            return True  # no article known: the subject's own passage, under another form of its name
        if kind in ("extends", "work_or_relative"):
            return False
        return self.names(text, about)

    def names(self, text: str, about: str) -> bool:
        """Whether another subject's passage names the prompt's: a person by `names_subject` (never a
        one-word name as a work's, "The Prince"); a thing by its whole name, since a thing's name words
        are common words ("Battle" in "Battle of Ain Jalut" is no mention of the Battle of Agincourt)."""
        if not self.person:
            return re.search(rf"(?<!\w){re.escape(self.subject)}(?!\w)", text, re.IGNORECASE) is not None
        if len(self.subject.split()) == 1:
            text = re.sub(rf"\b[Tt]he\s+{re.escape(self.subject)}\b", "", text)
        return names_subject(text, self.subject, about)
