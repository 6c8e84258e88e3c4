"""Which claims of one answer say the same thing, and which say nothing new.

Why: a score that counts every claim rewards an answer for repeating a supported sentence,
and a controller that keeps whatever passes its check learns to repeat what already passed.
CORE (Jiang et al. 2024) is the anchor: claims that entail each other are linked (NLI,
threshold 0.5), and a maximum set of claims with no two linked is kept. Here two claims are
linked when their normalized texts are identical, when they hold the same content words,
numbers and negations in another order ("a scientist, renowned for X" and "a renowned
scientist known for X"), or when the judge finds each supported by the other (P(supported)
above `threshold` both ways; a 22M judge reads one-sentence premises less surely than
passages, hence the lexical rules before it). Within each group of linked claims the kept
set is a maximum independent set (exact for groups of up to 16 claims, greedy beyond), ties
going to the earliest claims: a later repeat never replaces what the answer said first.

`novel` is the loop's one-way test: a new claim adds nothing when the answer so far already
entails it: an earlier claim holds all its content words and numbers (with the same
negation), or the judge finds an earlier claim supports it.
"""
from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .claims import RuleClaimExtractor, prompt_person
from .subject import name_keys
from .text import content_keys, negation_count, number_keys

EXACT = "identical"
SAME_WORDS = "same content words"
MUTUAL = "entail each other"
CONTAINED = "an earlier claim holds its content words"
ENTAILED = "an earlier claim entails it"
ATOMIC_EXACT = "an identical earlier atomic claim"
ATOMIC_CONTAINED = "an earlier atomic claim holds its content words"
CUT_OFF = "cut off: an earlier sentence holds all its words"
_EXACT_GROUP_LIMIT = 16
_DIGITS = re.compile(r"\d+")
_BARE_PRONOUN = re.compile(r"(?:It|He|She|They)\s+(?:is|was|are|were|has|had|have|also|later|became|remains)\b")


def _may_restate(a: "_Words", b: "_Words", name_words: frozenset) -> bool:
    """Whether two claims share a content word beyond the subject's name, or a number. Every claim
    of a bio holds the subject's name, so sharing it is no sign that two claims say the same
    thing; pairs with nothing else in common never reach the judge, whose false "entails"
    ("her father loved mathematics" -> "she was born into a family of mathematicians") would
    otherwise count a new claim as said, and cut an answer short."""
    return bool(((a.keys & b.keys) - name_words) or (a.numbers & b.numbers))


def _name_words(subject: Optional[str]) -> frozenset:
    return frozenset(name_keys(subject)) if subject else frozenset()


def normalize(text: str) -> str:
    """Lowercase, accents and punctuation dropped, whitespace collapsed: "She won, in 1903." and
    "she won in 1903" are the same claim."""
    t = unicodedata.normalize("NFKD", text)
    t = "".join(ch for ch in t if not unicodedata.combining(ch)).lower()
    return " ".join(re.sub(r"[^\w\s]", " ", t).split())


@dataclass(frozen=True)
class _Words:
    """What the lexical rules compare: content words, numbers, negations."""

    keys: frozenset
    numbers: frozenset
    negations: int

    @classmethod
    def of(cls, text: str) -> "_Words":
        return cls(frozenset(content_keys(text)), frozenset(number_keys(text)), negation_count(text))

    def within(self, other: "_Words") -> bool:
        return (bool(self.keys) and self.keys <= other.keys and self.numbers <= other.numbers
                and self.negations == other.negations)


@dataclass
class Grouping:
    """The claims kept (indices into the input, in order) and, for each dropped claim, the kept
    claim it duplicates and why."""

    kept: list[int]
    merged: dict[int, tuple[int, str]] = field(default_factory=dict)

    @property
    def n_unique(self) -> int:
        return len(self.kept)


class Redundancy:
    """Claim-to-claim entailment by a judge: anything with `probabilities(claims, passages)`
    (ewe.judge.checker.Judge), or a function of no argument that returns one, called on first
    use (ewe.judge.checker.shipped_judge: a run that never asks loads no judge)."""

    def __init__(self, judge, threshold: float = 0.5):
        if judge is None or isinstance(judge, str):
            raise TypeError("Redundancy needs a judge or a function that loads one, e.g. ewe.judge.checker.shipped_judge")
        self._judge = judge
        self.threshold = threshold

    @property
    def judge(self):
        if not hasattr(self._judge, "probabilities"):
            self._judge = self._judge()
        return self._judge

    def _support(self, hypotheses: Sequence[str], premises: Sequence[str]) -> list[float]:
        """P(supported) of each hypothesis given its premise (pairs)."""
        if not hypotheses:
            return []
        probs = self.judge.probabilities(list(hypotheses), list(premises))
        return [float(p) for p in probs[:, 0]]

    def links(self, texts: Sequence[str], subject: Optional[str] = None) -> dict[tuple[int, int], str]:
        """(i, j) with i < j -> why the two claims are one: identical, or entailing each other.
        Only pairs sharing a content word other than the subject's name, or a number, go to the
        judge (two claims with nothing else in common cannot restate each other)."""
        name_words = _name_words(subject)
        norm = [normalize(t) for t in texts]
        words = [_Words.of(t) for t in texts]
        out: dict[tuple[int, int], str] = {}
        pairs = []
        for i, j in itertools.combinations(range(len(texts)), 2):
            if norm[i] and norm[i] == norm[j]:
                out[(i, j)] = EXACT
            elif words[i].within(words[j]) and words[j].within(words[i]):
                out[(i, j)] = SAME_WORDS
            elif _may_restate(words[i], words[j], name_words):
                pairs.append((i, j))
        if pairs:
            fwd = self._support([texts[j] for i, j in pairs], [texts[i] for i, j in pairs])
            back = self._support([texts[i] for i, j in pairs], [texts[j] for i, j in pairs])
            for (i, j), a, b in zip(pairs, fwd, back):
                if a > self.threshold and b > self.threshold:
                    out[(i, j)] = MUTUAL
        return out

    def group(self, texts: Sequence[str], subject: Optional[str] = None) -> Grouping:
        """CORE's unique claims: a maximum set of claims no two of which are linked. `subject`:
        whom the answer is about (its name words alone link no claims)."""
        links = self.links(texts, subject)
        return select_unique(len(texts), links)

    def novel(self, claims: Sequence[str], earlier: Sequence[str],
              subject: Optional[str] = None) -> list[Optional[tuple[int, str]]]:
        """For each claim, (the index of an earlier claim that already says it, why), or None
        when the claim adds something to the answer (about `subject`, see `links`)."""
        name_words = _name_words(subject)
        subject_words = frozenset(content_keys(subject)) if subject else frozenset()
        out: list[Optional[tuple[int, str]]] = [None] * len(claims)
        norm_earlier = {normalize(e): k for k, e in reversed(list(enumerate(earlier)))}
        earlier_words = [_Words.of(e) for e in earlier]
        # an earlier claim whose subject is a pronoun the extractor left unresolved ("It is a homotopy
        # invariant") stands for the answer's subject: the same claim with the subject named ("The
        # fundamental group is a homotopy invariant") holds no other content word
        pronoun_led = [bool(_BARE_PRONOUN.match(e)) for e in earlier]
        pairs = []
        for i, c in enumerate(claims):
            k = norm_earlier.get(normalize(c))
            w = _Words.of(c)
            unnamed = _Words(w.keys - subject_words, w.numbers, w.negations)
            if k is None:
                k = next((k for k, e in enumerate(earlier_words)
                          if w.within(e) or (pronoun_led[k] and unnamed.within(e))), None)
                if k is not None:
                    out[i] = (k, CONTAINED)
                    continue
                pairs += [(i, k) for k, e in enumerate(earlier_words) if _may_restate(w, e, name_words)]
            else:
                out[i] = (k, EXACT)
        if pairs:
            probs = self._support([claims[i] for i, _ in pairs], [earlier[k] for _, k in pairs])
            for (i, k), p in zip(pairs, probs):
                if out[i] is None and p > self.threshold:
                    out[i] = (k, ENTAILED)
        return out


def select_unique(n: int, links: dict[tuple[int, int], str]) -> Grouping:
    """Keep a maximum independent set of the link graph over n claims, earliest claims first on
    ties; every dropped claim points to a kept claim it is linked to."""
    adj: dict[int, set[int]] = {i: set() for i in range(n)}
    for i, j in links:
        adj[i].add(j)
        adj[j].add(i)
    kept: set[int] = set()
    seen: set[int] = set()
    for start in range(n):
        if start in seen:
            continue
        comp, stack = [], [start]
        seen.add(start)
        while stack:
            v = stack.pop()
            comp.append(v)
            for w in adj[v] - seen:
                seen.add(w)
                stack.append(w)
        kept |= _independent(sorted(comp), adj)
    merged = {}
    for i in range(n):
        if i not in kept:
            j = min(k for k in adj[i] if k in kept)
            merged[i] = (j, links[(min(i, j), max(i, j))])
    return Grouping(sorted(kept), merged)


def _independent(comp: list[int], adj: dict[int, set[int]]) -> set[int]:
    """A maximum independent set of one component; among the largest, the lexicographically
    earliest (by claim order). Greedy in claim order above the exact limit."""
    if len(comp) == 1:
        return set(comp)
    if len(comp) <= _EXACT_GROUP_LIMIT:
        best: tuple[int, ...] = ()
        for size in range(len(comp), 0, -1):
            for subset in itertools.combinations(comp, size):  # lexicographic: earliest first
                if all(b not in adj[a] for a, b in itertools.combinations(subset, 2)):
                    best = subset
                    break
            if best:
                break
        return set(best)
    chosen: set[int] = set()
    for v in comp:
        if not adj[v] & chosen:
            chosen.add(v)
    return chosen


def sentence_repeats(redundancy: Redundancy, text: str, claims: Sequence[str], earlier_texts: Sequence[str],
                     earlier_claims: Sequence[str], subject: Optional[str] = None,
                     prompt: Optional[str] = None) -> list[dict]:
    """Why a sentence adds nothing to the answer before it (its text is an earlier sentence's, or
    every claim of it is already said), one entry per claim; [] when it adds something. A sentence
    with no claim adds nothing checkable, but is a repeat only when its text is. With `prompt`,
    also `atomic_repeats`: a sentence that joins two earlier ones adds nothing either, nor does one
    cut off where the clause splitter finds no claim ("..., with a father who was a")."""
    if normalize(text) in {normalize(x) for x in earlier_texts}:
        return [{"claim": text, "earlier": text, "why": "the same sentence"}]
    said = redundancy.novel(list(claims), list(earlier_claims), subject) if claims and earlier_claims else []
    if said and all(s is not None for s in said):
        return [{"claim": c, "earlier": earlier_claims[k], "why": why} for c, (k, why) in zip(claims, said)]
    return atomic_repeats(text, earlier_texts, prompt) if prompt is not None and earlier_texts else []


def atomic_repeats(text: str, earlier_texts: Sequence[str], prompt: str) -> list[dict]:
    """Why a sentence adds nothing when cut into atomic claims (one per predicate noun and relative
    clause, the scorer's unit), one entry per claim; [] when one of them is new. Each must be an
    earlier sentence's atomic claim, or hold only its content words and numbers: "X was a Muslim
    theologian and jurist who was also a poet" after "X was a Muslim theologian and jurist who
    lived ..." and "He was also a poet" is two earlier claims joined, which the clause test reads
    as one new claim. Lexical only: no judge, so no paraphrase is taken for a repeat here."""
    extractor, earlier, context = RuleClaimExtractor(atomic=True), [], ""
    for t in earlier_texts:
        earlier += [c.text for c in extractor.extract(t, context=context or None, prompt=prompt).claims]
        context = f"{context} {t}".strip()
    new = [c.text for c in extractor.extract(text, context=context or None, prompt=prompt).claims]
    if not new or not earlier:
        return []
    norm = {normalize(e): k for k, e in reversed(list(enumerate(earlier)))}
    words = [_Words.of(e) for e in earlier]
    out = []
    for c in new:
        k, why = norm.get(normalize(c)), ATOMIC_EXACT
        if k is None:
            w = _Words.of(c)
            k, why = next((k for k, e in enumerate(words) if w.within(e)), None), ATOMIC_CONTAINED
        if k is None:
            return []
        out.append({"claim": c, "earlier": earlier[k], "why": why})
    return out


def text_repeats(redundancy: Redundancy, extractor, text: str, context: str, prompt: str,
                 earlier_texts: Sequence[str], earlier_claims: Sequence[str],
                 cut_off: bool = False) -> tuple[list[dict], list[str]]:
    """sentence_repeats for a text whose claims are not yet extracted (by `extractor`, the rule
    splitter when None, with `context` before it): why it adds nothing ([] when it adds
    something), and its claims. `cut_off`: the text is a last sentence the token budget cut
    off, which also adds nothing when `cut_off_repeats` says so."""
    extractor = extractor or RuleClaimExtractor()
    found = [c.text for c in extractor.extract(text, context=context or None, prompt=prompt).claims]
    why = sentence_repeats(redundancy, text, found, earlier_texts, earlier_claims, prompt_person(prompt), prompt)
    return (why or (cut_off_repeats(text, earlier_texts) if cut_off else [])), found


def cut_off_repeats(tail: str, earlier_texts: Sequence[str]) -> list[dict]:
    """Why a sentence the token budget cut off adds nothing ([] when it adds something). Unfinished,
    it says only what its words say, and often no claim can be read from it ("..., with a father
    who was a"): it adds nothing when one earlier sentence holds all its content words and
    negations, and each of its numbers opens one of that sentence's numbers (the "195" of a cut
    "1950"). Lexical only: what the tail would have gone on to say is unknown."""
    keys, digits = content_keys(tail), _DIGITS.findall(tail)
    if not keys and not digits:
        return []
    for e in earlier_texts:
        e_digits = _DIGITS.findall(e)
        if (keys <= content_keys(e) and negation_count(tail) <= negation_count(e)
                and all(any(x.startswith(d) for x in e_digits) for d in digits)):
            return [{"claim": tail, "earlier": e, "why": CUT_OFF}]
    return []


def drop_repeats(redundancy: Redundancy, extractor, text: str, prompt: str,
                 cut_off: bool = False) -> tuple[str, list[dict]]:
    """`text` without its sentences that add nothing to the ones before them (claims by `extractor`,
    the rule splitter when None, with the kept text as context), and what was dropped: for methods that write a whole answer
    at once (Full-VR, A2R, CoVe), where no sentence can be written again. `cut_off`: the token
    budget ended the text, so a last sentence with no end mark is unfinished (`cut_off_repeats`)."""
    from .text import ends_sentence, sentence_spans

    kept, dropped, texts, claims, last = "", [], [], [], 0
    spans = list(sentence_spans(text))
    for i, (a, b) in enumerate(spans):
        sentence = text[a:b]
        unfinished = cut_off and i == len(spans) - 1 and not ends_sentence(sentence)
        why, found = text_repeats(redundancy, extractor, sentence, kept, prompt, texts, claims, unfinished)
        if why:
            dropped.append({"sentence": sentence, "repeats": why})
        else:
            kept += text[last:a] + sentence
            texts.append(sentence)
            claims += found or [sentence]
        last = b
    return (kept + text[last:] if not dropped else kept), dropped
