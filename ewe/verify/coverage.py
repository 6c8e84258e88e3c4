"""Coverage: the share of the subject's article that an answer states.

F1@K says how much of an answer is supported; coverage says how much of what the subject's
article says the answer states, measured without readers. The article is cut into sentences
(`text.sentence_spans`), each sentence into its claims by the project's rule splitter (atomic:
one claim per predicate noun of a list, as the scorer's claims; a he/she resolved from the
sentences before it), and every claim is checked by the alignment checker with the *answer*
as its evidence: the answer's sentences, and its own claims as the scorer extracted them (so
that a clause of a long answer sentence can state a short claim). So the direction is "the
answer supports this piece of the article": a claim is stated when some sentence or claim of
the answer is at least `support_sim` (0.60) close to it and carries its numbers (the same
amounts: "1869" does not state "1867"), its names and its negation (`alignment.AlignmentChecker`,
unchanged: the checks and threshold the scorer trusts).

    share(sentence) = stated claims of the sentence / its claims
    coverage        = mean share over the article's sentences

Only answer sentences and claims that write a content word of the claim besides the subject's
names are candidates (`shares_content`): MiniLM's cosine between short sentences on one person is carried
by the name, and would let any sentence on her state any short claim.
A long article sentence is credited in part when the answer states some of its claims, and its
claims may be stated by different answer sentences. A sentence the splitter finds no claim in
is its own one claim. `stated` lists the sentences whose every claim is stated, `partly` those
with some but not all.

The answer passage is titled with the subject's names (the article's title and the subject
phrase of its first sentence, the full name Wikipedia opens with), so "She was born in Warsaw"
can state "Marie Curie was born in Warsaw" as a retrieved passage's title serves the scorer, but
only when the answer names the subject at least once (a word of the title); an answer about
someone else gets no title, and the article's claims must then find their names in it.
What it is not: recall of everything true about the subject (the article is a Wikipedia
summary, a few sentences), nor an entailment judgement: the alignment checker's limits apply
(a reworded relation without a negation word passes; a name or number written differently fails).
"""
from __future__ import annotations

import functools
from dataclasses import replace
from typing import Optional, Sequence

from .alignment import AlignmentChecker
from .claims import RuleClaimExtractor, find_subject
from .text import content_keys, name_words, split_sentences, word_keys
from .types import Claim, Evidence

COVERAGE = "article-claims-alignment-1"  # the rule a details line's coverage was measured with (a rerun redoes others)


def _claims_by_sentence(text: str, prompt: Optional[str]) -> list[tuple[str, list[Claim]]]:
    """Each sentence of `text` with the rule splitter's atomic claims (the sentences before it as context)."""
    extractor = RuleClaimExtractor(atomic=True)
    out, context = [], ""
    for sentence in split_sentences(text):
        out.append((sentence, extractor.extract(sentence, context=context or None, prompt=prompt).claims))
        context = f"{context} {sentence}".strip()
    return out


def _subject_prompt(title: str) -> Optional[str]:
    return f"Tell me a bio of {title}." if title else None


@functools.lru_cache(maxsize=256)
def article_claims(article: str, title: str = "") -> tuple[tuple[str, tuple[Claim, ...]], ...]:
    """Each sentence of `article` with its claims (the title as the subject a bare pronoun may
    stand for); a sentence with none is its own one claim. Cached: every answer on one topic
    shares its article's claims."""
    return tuple((sentence, tuple(claims) or (Claim(text=sentence, source=sentence),))
                 for sentence, claims in _claims_by_sentence(article, _subject_prompt(title)))


def answer_claims(answer: str, title: str = "", prompt: Optional[str] = None) -> list[str]:
    """The answer's own atomic claims, as the scorer extracts them (`prompt`: the question it answers)."""
    return [c.text for _, claims in _claims_by_sentence(answer, prompt or _subject_prompt(title)) for c in claims]


def names_subject(answer: str, title: str) -> bool:
    """The answer writes at least one word of the subject's name."""
    keys = content_keys(title)
    return bool(keys) and bool(keys & word_keys(answer))


def subject_title(article: str, title: str) -> str:
    """The subject's names as the answer passage's title: the article's title, with the subject
    phrase of its first sentence when that names it otherwise (Wikipedia opens with the full
    name: "Maria Salomea Skłodowska Curie, better known as Marie Curie was ..." under "Marie
    Curie"), so an answer need not write the birth name to state what the article says of her."""
    first = split_sentences(article)[:1]
    span = find_subject(first[0]) if first else None
    alias = first[0][span[0]:span[1]].strip() if span else ""
    if not title or not alias or not name_words(alias) or content_keys(alias) <= content_keys(title):
        return title
    return f"{title} ({alias})"


def shares_content(claim: str, span: str, subject: set[str]) -> bool:
    """The span writes a content word of the claim that is not one of the subject's names (any
    span does when the claim has no other). MiniLM's cosine between two short sentences on one
    person is carried by the name: "Marie Curie was a chemist." is 0.6 close to "Marie Curie was
    born in Warsaw in 1867.", which states nothing of the kind."""
    own = content_keys(claim) - subject
    return not own or bool(own & content_keys(span))


class CoverageMeter:
    """Coverage of articles by answers with one alignment checker (its encoder loads on first use).
    `checker`: an AlignmentChecker to reuse; else one with `encoder` (default: the shared MiniLM)."""

    def __init__(self, checker: Optional[AlignmentChecker] = None, encoder=None):
        base = checker or AlignmentChecker(encoder=encoder)
        # the answer is one passage: every one of its sentences is a candidate span, however long it is
        self.checker = AlignmentChecker(replace(base.config, max_spans_per_passage=10 ** 6), encoder=base.encoder)

    def verdicts(self, claims: Sequence[Claim], evidence: Sequence[Evidence], subject: set[str]) -> list:
        """The alignment checker's verdict on each claim with `evidence` (the answer, its claims),
        from the spans that share a content word with the claim other than the subject's names
        (`shares_content`); the checker's own checks and threshold decide among those."""
        self.checker.encode_all(claims, [evidence] * len(claims))  # one batch; spans() reads the cache
        return [self.checker.decide(c, evidence, [s for s in self.checker.spans(c, evidence)
                                                  if shares_content(c.text, s.text, subject)])
                for c in claims]

    def measure(self, answer: str, article: str | Evidence, title: Optional[str] = None,
                claims_of_answer: Optional[Sequence[str]] = None, prompt: Optional[str] = None) -> Optional[dict]:
        """Coverage of `article` (its text, or an Evidence whose title names the subject) by
        `answer`; None when the article has no sentence. `claims_of_answer`: the answer's claims
        as the scorer extracted them (else extracted here, for `prompt`)."""
        if isinstance(article, Evidence):
            title = article.title if title is None else title
            article = article.text
        title = title or ""
        sentences = article_claims(article, title)
        if not sentences:
            return None
        claims = [c for _, cs in sentences for c in cs]
        stated_claims = [False] * len(claims)
        if answer.strip():
            names = subject_title(article, title)
            named = names if names_subject(answer, title) else ""
            if claims_of_answer is None:
                claims_of_answer = answer_claims(answer, title, prompt)
            evidence = [Evidence(text=answer, title=named, source_id="answer")] + [
                Evidence(text=c, title=named, source_id=f"answer-claim:{i}") for i, c in enumerate(claims_of_answer)]
            stated_claims = [v.supported for v in self.verdicts(claims, evidence, content_keys(names))]
        shares, counts, at = [], [], 0
        for _, cs in sentences:
            got = sum(stated_claims[at:at + len(cs)])
            shares.append(got / len(cs))
            counts.append([got, len(cs)])
            at += len(cs)
        return {
            "rule": COVERAGE, "title": title, "article_sentences": len(sentences),
            "coverage": sum(shares) / len(shares),
            "stated": [i for i, s in enumerate(shares) if s == 1.0],
            "partly": [i for i, s in enumerate(shares) if 0.0 < s < 1.0],
            "claims": counts,  # per article sentence: [stated claims, claims]
        }


@functools.lru_cache(maxsize=1)
def default_meter() -> CoverageMeter:
    return CoverageMeter()


def coverage(answer: str, article: str | Evidence, title: Optional[str] = None, encoder=None,
             checker: Optional[AlignmentChecker] = None, prompt: Optional[str] = None) -> Optional[dict]:
    """The share of `article`'s sentences that `answer` states (see the module docstring):
    {"coverage": mean share, "article_sentences": n, "stated": [fully stated sentence indices],
    "partly": [...], "claims": [[stated, claims] per sentence], "title", "rule"}; None when the
    article has no sentence. `title`: the subject's name (an Evidence article brings its own)."""
    meter = default_meter() if encoder is None and checker is None else CoverageMeter(checker, encoder)
    return meter.measure(answer, article, title, prompt=prompt)


def mean_coverage(values: Sequence[Optional[dict]]) -> tuple[Optional[float], int]:
    """(mean coverage, answers measured) over the answers that have an article (None entries skipped)."""
    known = [v["coverage"] for v in values if v]
    return (sum(known) / len(known) if known else None), len(known)
