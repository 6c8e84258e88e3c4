"""Training data for the judge: (evidence passage, claim, label) triples built from the
embedded Wikipedia summaries, split by article, plus prefixes of the claims with prefix
labels for prefix-entailment (PrefixNLI).

How the claims are made (docs/JUDGE.md has the rationale; MiniCheck, AlignScore and
FactCC are the models):

* supported: clauses of the passage's sentences with the subject carried over and
  pronouns resolved; trimmed clauses; the description turned into "X is a ..." and its
  life years into born/died claims; dates rewritten in another format; everything
  optionally hedged or attributed ("Reportedly, ...").
* unsupported: the same claims minimally altered: a year or number shifted or replaced by
  another number of the same passage (FactCC: so overlap cannot decide), a name swapped
  for one of the same passage or of an article of the same topic, the role swapped for
  another article's description, an antonym, a negation added or removed.
* not_enough_evidence: the passage with the one sentence that states the claim removed
  (MiniCheck's contrast), a detail added that the passage does not state, another
  article's claim moved onto this subject, and claims of another article.

Generated-style rewrites (`rewrites.py`: synonyms, frames, appositions; bounds and
centuries made both consistent and not), hedges, attributions and date rewrites go on every
label alike, so none of them gives the label away; a claim-only model trained on the same data (`ewe judge train --claim-only`)
measures what still does.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from ..data.splits import HELD_OUT_FRACTION, is_held_out
from ..verify.claims import RuleClaimExtractor, find_subject
from ..verify.text import numbers, split_sentences
from ..verify.types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED
from .rewrites import Rewriter

HEDGES = (
    "Reportedly, {}", "It is said that {}", "According to some sources, {}", "It is believed that {}",
    "Historians note that {}", "Some say that {}", "It has been reported that {}", "By most accounts, {}",
    "Notably, {}", "In fact, {}",
)
# how a summary points at its source ("The article explains that ..."): label-blind lead-ins for the
# prefix judge's hypotheses, which PrefixNLI reads inside summaries (ewe/judge/prefix_train.py)
SOURCE_FRAMES = (
    "The article says that {}", "According to the article, {}", "The article explains that {}",
    "The text notes that {}", "The article mentions that {}", "The passage states that {}",
    "In the article, the author notes that {}", "The article highlights that {}", "The article also notes that {}",
    "The summary of the article is that {}",
)
ANTONYMS = dict(
    pair.split(":") for pair in """first:last largest:smallest highest:lowest biggest:smallest longest:shortest
    oldest:youngest older:younger earliest:latest north:south east:west northern:southern eastern:western
    man:woman men:women male:female husband:wife father:mother son:daughter brother:sister king:queen
    before:after more:fewer increase:decrease increased:decreased won:lost ancient:modern early:late
    major:minor rich:poor large:small high:low above:below inside:outside upper:lower best:worst
    private:public positive:negative same:different common:rare""".split()
)
ANTONYMS.update({b: a for a, b in list(ANTONYMS.items())})
ADDED_QUALIFIERS = ("famous", "first", "youngest", "only", "last", "most successful", "leading", "wealthy",
                    "self-taught", "award-winning")
AUX_NOT = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|would|does|did)\b(?! not\b)")
_NOT = re.compile(r"\b(is|was|are|were|has|had|have|can|could|will|would|does|did) not\b")
NAME_RUN = re.compile(r"(?<![\w'])(?:[A-Z][\w'’.-]*)(?:\s+(?:of|de|da|von|van|the|and)?\s*[A-Z][\w'’.-]*)*")
_LIFE = re.compile(r"\((?:[^()]*?\b)?(\d{3,4})\s*[–-]\s*(\d{3,4})\)")
DEMONYM = re.compile(r"(?:ish|an|ese|ian|ch|i|ek)$")  # "Polish", "German", "French": kept capitalized
MONTHS = ("January February March April May June July August September October November December").split()
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2}) (" + "|".join(MONTHS) + r") (\d{3,4})\b")
_MONTH_DAY_YEAR = re.compile(r"\b(" + "|".join(MONTHS) + r") (\d{1,2}), (\d{3,4})\b")


@dataclass
class Example:
    """One (evidence, claim, label) triple. `edit_start` is the character offset in the claim
    from which it stops following the evidence (None: it never does), for prefix labels."""

    id: str
    title: str
    split: str
    evidence: str
    claim: str
    label: str
    kind: str
    edit_start: Optional[int] = None
    source: str = ""  # the passage sentence the claim was made from

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Article:
    title: str
    description: str
    topic: str
    sentences: list[str]
    claims: list[tuple[int, str]] = field(default_factory=list)  # (sentence index, claim)

    def passage(self, drop: Optional[int] = None) -> str:
        """"Title (description): extract", as the datastore and `wiki.passage` write it."""
        desc = f" ({self.description})" if self.description else ""
        text = " ".join(s for i, s in enumerate(self.sentences) if i != drop)
        return f"{self.title}{desc}: {text}"

    @property
    def subject(self) -> str:
        return self.title


def load_articles(summaries: dict, min_chars: int = 200) -> list[Article]:
    """Articles with enough text, their sentences and clause-level claims (pronouns resolved
    to the title)."""
    extractor = RuleClaimExtractor()
    out = []
    for e in sorted(summaries.values(), key=lambda e: e["title"]):
        text = " ".join((e.get("extract") or "").split())
        if len(text) < min_chars:
            continue
        art = Article(e["title"], (e.get("description") or "").strip(), e.get("topic") or "", split_sentences(text))
        person = f"Tell me a bio of {art.title}." if art.topic == "People" else None
        for i, s in enumerate(art.sentences):
            for c in extractor.extract(resolve_subject(s, art), context=" ".join(art.sentences[:i]), prompt=person).claims:
                if is_proposition(c.text):
                    art.claims.append((i, c.text))
        out.append(art)
    return out


def is_proposition(text: str) -> bool:
    """A whole statement: 4 to 40 words, a subject before a verb, no question."""
    words = text.split()
    return 4 <= len(words) <= 40 and not text.endswith("?") and find_subject(text) is not None


def resolve_subject(sentence: str, art: Article) -> str:
    """A leading He/She/It/They/This refers to the article's subject."""
    m = re.match(r"(He|She|It|They)\b", sentence)
    if m:
        return art.subject + sentence[m.end():]
    m = re.match(r"(His|Her|Its|Their)\b", sentence)
    if m:
        return f"{art.subject}'s" + sentence[m.end():]
    return sentence


class Builder:
    """Makes the examples of one article, drawing swaps from articles of the same topic."""

    def __init__(self, articles: list[Article], seed: int = 0):
        self.rng = random.Random(seed)
        self.rewriter = Rewriter(self.rng)
        self.by_topic: dict[str, list[Article]] = {}
        for a in articles:
            self.by_topic.setdefault(a.topic, []).append(a)
        self.names_by_topic = {t: sorted({n for a in arts for s in a.sentences for n in _names(s)})
                               for t, arts in self.by_topic.items()}

    # --- supported -----------------------------------------------------------------

    def supported(self, art: Article) -> list[tuple[str, str, int]]:
        """(claim, kind, sentence index; -1 for the description) the passage states."""
        out = [(c, "clause", i) for i, c in art.claims]
        for i, c in art.claims:
            t = _trim(c)
            if t and t != c:
                out.append((t, "trimmed", i))
        if art.description:
            tense = "was" if art.topic == "People" and _LIFE.search(art.passage()) else "is"
            desc = _lower_first(_LIFE.sub("", art.description).strip(" ,"))
            if desc and len(desc.split()) <= 12:
                out.append((f"{art.subject} {tense} {_article(desc)} {desc}.", "description", -1))
        m = _LIFE.search(f"({art.description})") or _LIFE.search(art.sentences[0] if art.sentences else "")
        if m and art.topic == "People":
            born, died = m.group(1), m.group(2)
            out += [(f"{art.subject} was born in {born}.", "life", -1), (f"{art.subject} died in {died}.", "life", -1),
                    (f"{art.subject} lived from {born} to {died}.", "life", -1)]
        return out

    def paired(self, art: Article, claim: str) -> list[tuple[str, str, str, int]]:
        """One generated-style form of `claim` (a bound, a decade or century) made both
        consistent with the passage and not: [(claim, label, kind, edit offset)]."""
        make = self.rng.choice([self.rewriter.bound, self.rewriter.era])
        good, bad = make(claim, True), make(claim, False)
        if good is None or bad is None or good[0] == bad[0]:
            return []
        kind = "bound" if make == self.rewriter.bound else "era"
        return [(good[0], SUPPORTED, kind, None), (bad[0], UNSUPPORTED, kind, bad[1])]

    def life_era(self, art: Article) -> list[tuple[str, str, str, int]]:
        m = _LIFE.search(f"({art.description})") or _LIFE.search(art.sentences[0] if art.sentences else "")
        if not m or art.topic != "People":
            return []
        desc = _lower_first(_LIFE.sub("", art.description).strip(" ,"))
        born, died = int(m.group(1)), int(m.group(2))
        good = self.rewriter.life_era(art.subject, desc, born, died, True)
        bad = self.rewriter.life_era(art.subject, desc, born, died, False)
        if good is None or bad is None:
            return []
        return [(good[0], SUPPORTED, "era", None), (bad[0], UNSUPPORTED, "era", bad[1])]

    # --- alterations -----------------------------------------------------------------

    def unsupported(self, art: Article, claim: str) -> Optional[tuple[str, str, int]]:
        """A minimal alteration of `claim` that the passage contradicts: (text, kind, edit offset)."""
        passage = art.passage()
        makers = [self._number, self._name, self._antonym, self._negation]
        self.rng.shuffle(makers)
        weights = {self._number: 3, self._name: 2, self._antonym: 1, self._negation: 0.3}
        makers.sort(key=lambda f: -weights[f] * self.rng.random())
        for make in makers:
            if make == self._negation and self.rng.random() < 0.7:
                continue  # rarely: Wikipedia states few negations, so "not" alone would give the label away
            r = make(art, claim, passage)
            if r is not None:
                return r
        return None

    def _number(self, art, claim, passage):
        nums = [n for n in numbers(claim) if n.kind in ("year", "number", "ordinal", "decade")]
        if not nums:
            return None
        n = self.rng.choice(nums)
        same_kind = sorted({m.raw for m in numbers(passage) if m.kind == n.kind and m.key != n.key})
        if same_kind and self.rng.random() < 0.5:
            new = self.rng.choice(same_kind)
        elif n.kind == "year":
            new = str(int(n.value) + self.rng.choice([-1, 1]) * self.rng.choice([1, 2, 3, 5, 10, 12, 20, 50]))
        elif n.kind == "ordinal":
            v = max(1, int(n.value) + self.rng.choice([-2, -1, 1, 2]))
            new = f"{v}{'th' if 10 <= v % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(v % 10, 'th')}"
        elif n.kind == "decade":
            new = f"{int(n.value) + self.rng.choice([-20, -10, 10, 20])}s"
        else:
            v = n.value * self.rng.choice([0.5, 2, 3, 0.1, 10, 1.5])
            new = f"{v:,.0f}" if v >= 1 else f"{v:g}"
        if new == n.raw or new in claim:
            return None
        return claim[:n.start] + new + claim[n.end:], "number", n.start

    def _name(self, art, claim, passage):
        spans = [m for m in NAME_RUN.finditer(claim) if m.start() > 0 and m.group(0) not in art.subject
                 and m.group(0) not in ("I",)]
        if not spans:
            return None
        m = self.rng.choice(spans)
        old = m.group(0)
        local = sorted(n for n in {n for s in art.sentences for n in _names(s)} if n not in claim and n not in art.subject)
        pool = local if local and self.rng.random() < 0.5 else self.names_by_topic.get(art.topic, [])
        pool = [n for n in pool if n != old and n not in claim and len(n.split()) <= len(old.split()) + 2]
        if not pool:
            return None
        new = self.rng.choice(pool)
        return claim[:m.start()] + new + claim[m.end():], "name", m.start()

    def _antonym(self, art, claim, passage):
        hits = [m for m in re.finditer(r"\b[a-z]+\b", claim) if m.group(0) in ANTONYMS]
        if not hits:
            return None
        m = self.rng.choice(hits)
        return claim[:m.start()] + ANTONYMS[m.group(0)] + claim[m.end():], "antonym", m.start()

    def _negation(self, art, claim, passage):
        m = _NOT.search(claim)
        if m:
            return claim[:m.start()] + m.group(1) + claim[m.end():], "negation-removed", m.start()
        m = AUX_NOT.search(claim)
        if not m:
            return None
        return claim[:m.end()] + " not" + claim[m.end():], "negation", m.end()

    def role_swap(self, art: Article) -> Optional[tuple[str, str, int]]:
        """The description claim with another same-topic article's description."""
        others = [a for a in self.by_topic.get(art.topic, []) if a.description and a.title != art.title]
        if not art.description or not others:
            return None
        other = _lower_first(_LIFE.sub("", self.rng.choice(others).description).strip(" ,"))
        if not other or other.lower() in art.description.lower() or len(other.split()) > 12:
            return None
        tense = "was" if art.topic == "People" and _LIFE.search(art.passage()) else "is"
        head = f"{art.subject} {tense} "
        return f"{head}{_article(other)} {other}.", "role", len(head)

    # --- not enough evidence -------------------------------------------------------------

    def added_detail(self, art: Article, claim: str) -> Optional[tuple[str, str, int]]:
        """The claim with a detail the passage does not state: a qualifier or a place/date."""
        m = re.search(r"\b(is|was|are|were) (a|an|the) ", claim)
        if m and self.rng.random() < 0.5:
            q = self.rng.choice(ADDED_QUALIFIERS)
            if q in art.passage():
                return None
            art_word = "an" if q[0] in "aeiou" and m.group(2) != "the" else m.group(2)
            head = claim[:m.start(2)]
            return f"{head}{art_word} {q} {claim[m.end():]}", "added-qualifier", len(head)
        body = claim.rstrip(".")
        if numbers(body) and self.rng.random() < 0.5:
            return None
        if self.rng.random() < 0.5:
            year = self.rng.randint(1500, 2015)
            if str(year) in art.passage():
                return None
            return f"{body} in {year}.", "added-date", len(body)
        names = [n for n in self.names_by_topic.get(art.topic, []) if n not in art.passage() and len(n.split()) <= 3]
        if not names:
            return None
        return f"{body} in {self.rng.choice(names)}.", "added-place", len(body)

    def moved_claim(self, art: Article) -> Optional[tuple[str, str, int]]:
        """Another same-topic article's claim with this article's subject in its place."""
        others = [a for a in self.by_topic.get(art.topic, []) if a.claims and a.title != art.title]
        if not others:
            return None
        other = self.rng.choice(others)
        _, c = self.rng.choice(other.claims)
        if not c.startswith(other.subject):
            return None
        return art.subject + c[len(other.subject):], "moved", 0

    def foreign_claim(self, art: Article) -> Optional[tuple[str, str, int]]:
        topic = self.rng.choice(sorted(self.by_topic))
        other = self.rng.choice(self.by_topic[topic])
        if other.title == art.title or not other.claims:
            return None
        return self.rng.choice(other.claims)[1], "foreign", 0

    # --- one article ---------------------------------------------------------------------

    def examples(self, art: Article, split: str, per_article: int = 8) -> list[Example]:
        out: list[Example] = []
        passage = art.passage()
        supported = self.supported(art)
        self.rng.shuffle(supported)
        n = 0

        def add(claim, label, kind, edit, evidence=passage, source=""):
            nonlocal n
            claim, edit = self._surface(claim, edit, art)
            out.append(Example(f"{_slug(art.title)}-{n}", art.title, split, evidence, claim, label, kind, edit, source))
            n += 1

        for claim, kind, si in supported[:per_article // 2]:
            src = art.sentences[si] if si >= 0 else art.description
            add(claim, SUPPORTED, kind, None, source=src)
            alt = self.unsupported(art, claim)
            if alt is not None:
                add(alt[0], UNSUPPORTED, alt[1], alt[2], source=src)
            r = self.rng.random()
            if si >= 0 and len(art.sentences) > 1 and r < 0.35 and _stated_only_in(claim, art, si):
                add(claim, NOT_ENOUGH_EVIDENCE, "removed-sentence", 0, evidence=art.passage(drop=si), source=src)
            elif r < 0.7:
                alt = self.added_detail(art, claim)
                if alt is not None:
                    add(alt[0], NOT_ENOUGH_EVIDENCE, alt[1], alt[2], source=src)
            if self.rng.random() < 0.3:
                for text, label, kind, edit in self.paired(art, claim):
                    add(text, label, kind, edit, source=src)
        if self.rng.random() < 0.3:
            for text, label, kind, edit in self.life_era(art):
                add(text, label, kind, edit, source=art.description)
        for make, label in ((self.role_swap, UNSUPPORTED), (self.moved_claim, NOT_ENOUGH_EVIDENCE),
                            (self.foreign_claim, NOT_ENOUGH_EVIDENCE)):
            if self.rng.random() < 0.5:
                alt = make(art)
                if alt is not None:
                    add(alt[0], label, alt[1], alt[2])
        return out

    def model_written(self, art: Article, text: str, si: int, key: str, label: str = SUPPORTED) -> list[Example]:
        """A restatement in the generator's words of sentence `si`, with its label; a supported one
        also gets contrasts made from the same words, so the style gives no label away: an
        alteration the passage contradicts, and the passage without the sentence that states it
        (or a detail added) for not enough evidence. Kinds are "model-..."."""
        split = "test" if is_held_out(art.title) else "train"
        passage = art.passage()
        src = art.sentences[si] if 0 <= si < len(art.sentences) else art.description
        slug = f"{_slug(art.title)}-m{hashlib.sha256(key.encode()).hexdigest()[:8]}"
        if label != SUPPORTED:  # the generator's own error, as a reader labelled it
            return [Example(f"{slug}-0", art.title, split, passage, text, label, "model-written", None, src)]
        out = [Example(f"{slug}-0", art.title, split, passage, text, SUPPORTED, "model-paraphrase", None, src)]
        alt = self.unsupported(art, text)
        if alt is not None:
            out.append(Example(f"{slug}-1", art.title, split, passage, alt[0], UNSUPPORTED, f"model-{alt[1]}", alt[2], src))
        if si >= 0 and len(art.sentences) > 1 and _stated_only_in(text, art, si):
            out.append(Example(f"{slug}-2", art.title, split, art.passage(drop=si), text, NOT_ENOUGH_EVIDENCE,
                               "model-removed-sentence", 0, src))
        else:
            alt = self.added_detail(art, text)
            if alt is not None:
                out.append(Example(f"{slug}-2", art.title, split, passage, alt[0], NOT_ENOUGH_EVIDENCE,
                                   f"model-{alt[1]}", alt[2], src))
        return out

    def _surface(self, claim: str, edit: Optional[int], art: Article) -> tuple[str, Optional[int]]:
        """Label-blind rewrites: other words for the same thing, a generated-style frame, the
        description as an apposition, a date in another format, a hedge or attribution in front."""
        if self.rng.random() < 0.35:
            claim, edit = self.rewriter.synonyms(claim, edit)
        r = self.rng.random()
        if r < 0.2:
            claim, edit = self.rewriter.frame(claim, edit)
        elif r < 0.35:
            desc = _lower_first(_LIFE.sub("", art.description).strip(" ,"))
            claim, edit = self.rewriter.apposition(claim, edit, art.subject, desc)
        if self.rng.random() < 0.3:
            claim2 = _reformat_dates(claim)
            if claim2 != claim and edit is not None:
                edit = min(edit, _first_diff(claim, claim2))
            claim = claim2
        if self.rng.random() < 0.2:
            claim, edit = lead_in(claim, edit, self.rng.choice(HEDGES))
        return claim, edit


def build(summaries: dict, seed: int = 0, per_article: int = 8, limit: Optional[int] = None,
          paraphrases: Optional[list[dict]] = None, auto_labels: bool = False) -> list[Example]:
    """Every article's examples, train and test (held-out articles) together, in title order;
    then the model-written restatements (`ewe judge paraphrase`) and claims from the generator's
    answers (`python -m ewe.data.generated_sentences --claims`) with their contrasts: those a
    reader labelled (a row's "label"), and with `auto_labels` also those the consistency filter
    kept (hand-read, 47 of 69 of those were supported: off by default)."""
    articles = load_articles(summaries)
    if limit:
        articles = articles[:limit]
    builder = Builder(articles, seed)
    out = []
    for art in articles:
        out += builder.examples(art, "test" if is_held_out(art.title) else "train", per_article)
    if paraphrases:
        by_title = {a.title: a for a in articles}
        for row in paraphrases:
            art = by_title.get(row.get("title") or row.get("topic"))
            label = row.get("label") or (SUPPORTED if auto_labels and row.get("kept") else None)
            if art is not None and label in (SUPPORTED, UNSUPPORTED, NOT_ENOUGH_EVIDENCE):
                # a restatement names its source sentence; a claim from an answer has none (-1)
                text = row.get("paraphrase") or row["claim"]
                out += builder.model_written(art, text, row.get("sentence_index", -1), row["id"], label)
        out = balance_model_written(out, seed)
    return out


def model_written_apart(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The rows in the generator's own words ("model-..." kinds: scarce, and the text the judges
    are asked about), and the rest; trainers keep all of the first and draw from the second."""
    written = [r for r in rows if str(r.get("kind", "")).startswith("model-")]
    return written, [r for r in rows if not str(r.get("kind", "")).startswith("model-")]


def lead_in(claim: str, edit: Optional[int], frame: str) -> tuple[str, Optional[int]]:
    """The claim inside a frame such as "Reportedly, {}" (its first letter lowered unless it starts a
    name), and where its edit now is."""
    body = claim if _starts_with_name(claim) else claim[:1].lower() + claim[1:]
    return frame.format(body), None if edit is None else edit + frame.index("{}")


def balance_model_written(examples: list[Example], seed: int = 0) -> list[Example]:
    """As many model-written negatives as supported, per split: the readers found most of the
    generator's restatements wrong, and with the contrasts the generator's style alone would
    say "reject". Negatives are drawn (seeded) from the readers' and the contrasts alike."""
    rng = random.Random(seed + 17)
    drop: set[str] = set()
    for split in ("train", "test"):
        written = [e for e in examples if e.split == split and e.kind.startswith("model-")]
        negatives = [e for e in written if e.label != SUPPORTED]
        n_supported = len(written) - len(negatives)
        rng.shuffle(negatives)
        drop |= {e.id for e in negatives[n_supported:]}
    return [e for e in examples if e.id not in drop]


# kinds wrong as a whole: their recorded edit offset (0, or the end of a hedge) is not where the
# text stops following the passage ("Marie Curie ..." of a claim whose sentence was removed is still
# entailed), so only the whole claim has a known prefix label
WHOLE_CLAIM_KINDS = frozenset({"removed-sentence", "foreign", "moved"})


def prefix_label(claim: str, label: str, edit_start: Optional[int], end: int, kind: str = "") -> Optional[bool]:
    """Whether the claim's first `end` characters are entailed (some completion of them is), None
    when the data cannot say: any prefix of a supported claim is; a prefix of an altered claim is
    until its edit; of a claim wrong as a whole only the whole claim is known."""
    if label == SUPPORTED:
        return True
    if edit_start is not None and kind not in WHOLE_CLAIM_KINDS:
        return end <= edit_start
    return False if end >= len(claim.rstrip(" .")) else None


def prefixes(examples: Iterable[Example], seed: int = 0, per_claim: int = 2) -> list[dict]:
    """Word-boundary prefixes of the claims with a known label (`prefix_label`); the whole claim
    stands for a claim wrong as a whole."""
    rng = random.Random(seed)
    out = []
    for ex in examples:
        cuts = [m.start() for m in re.finditer(r"\s", ex.claim)] + [len(ex.claim)]
        known = [c for c in cuts if prefix_label(ex.claim, ex.label, ex.edit_start, c, ex.kind) is not None]
        for cut in sorted(rng.sample(known, min(per_claim, len(known)))):
            entailed = prefix_label(ex.claim, ex.label, ex.edit_start, cut, ex.kind)
            out.append({"id": f"{ex.id}-p{cut}", "title": ex.title, "split": ex.split, "evidence": ex.evidence,
                        "prefix": ex.claim[:cut], "label": "entailed" if entailed else "not_entailed"})
    return out


def write(examples: list[Example], out_dir: Path, seed: int, prefix_rows: Optional[list[dict]] = None) -> dict:
    """train.jsonl, test.jsonl (and prefixes.jsonl) plus manifest.json with counts and a hash."""
    from ..files import atomic_write

    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"seed": seed, "held_out": f"sha256(title) % {HELD_OUT_FRACTION} == 0", "files": {}}
    for split in ("train", "test"):
        rows = [e.to_dict() for e in examples if e.split == split]
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        atomic_write(out_dir / f"{split}.jsonl", text)
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["label"]] = counts.get(r["label"], 0) + 1
        manifest["files"][f"{split}.jsonl"] = {"rows": len(rows), "labels": counts,
                                               "sha256": hashlib.sha256(text.encode()).hexdigest()}
    if prefix_rows is not None:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in prefix_rows)
        atomic_write(out_dir / "prefixes.jsonl", text)
        manifest["files"]["prefixes.jsonl"] = {"rows": len(prefix_rows), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    atomic_write(out_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest


def read(path: Path) -> list[dict]:
    with Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# --- helpers ---------------------------------------------------------------------------


def _names(sentence: str) -> list[str]:
    return [m.group(0) for m in NAME_RUN.finditer(sentence) if m.start() > 0 and len(m.group(0)) > 2]


def _trim(claim: str) -> Optional[str]:
    """The claim without its last comma-separated part or parenthetical, if a clause remains."""
    body = re.sub(r"\s*\([^()]*\)", "", claim.rstrip("."))
    if ", " in body:
        body = body.rsplit(", ", 1)[0]
    for cut in (" including ", " such as ", " which "):
        if cut in body:
            body = body.split(cut, 1)[0].rstrip(",")
    body += "."
    return body if is_proposition(body) else None


def _lower_first(phrase: str) -> str:
    """"Motion pictures ..." -> "motion pictures ...", but "Polish physicist" stays."""
    return phrase[:1].lower() + phrase[1:] if phrase[1:2].islower() and not DEMONYM.search(phrase.split(" ", 1)[0]) else phrase


def _article(phrase: str) -> str:
    return "an" if phrase[:1].lower() in "aeiou" else "a"


def _starts_with_name(text: str) -> bool:
    w = text.split(" ", 1)[0]
    return w[:1].isupper() and w.lower() not in ("the", "a", "an", "in", "on", "it", "he", "she", "they", "this")


def _reformat_dates(text: str) -> str:
    """"7 November 1867" <-> "November 7, 1867": the same date written the other way."""
    if _DAY_MONTH_YEAR.search(text):
        return _DAY_MONTH_YEAR.sub(lambda m: f"{m.group(2)} {m.group(1)}, {m.group(3)}", text)
    return _MONTH_DAY_YEAR.sub(lambda m: f"{m.group(2)} {m.group(1)} {m.group(3)}", text)


def _first_diff(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _stated_only_in(claim: str, art: Article, si: int) -> bool:
    """The claim's numbers and most of its rarer words appear nowhere but in sentence `si`."""
    rest = " ".join(s for i, s in enumerate(art.sentences) if i != si) + " " + art.description
    rest_l = rest.lower()
    if any(n.raw in rest for n in numbers(claim)):
        return False
    words = [w for w in re.findall(r"[A-Za-z]{5,}", claim) if w.lower() not in art.subject.lower()]
    if not words:
        return False
    return sum(w.lower() in rest_l for w in words) <= len(words) // 3


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]
