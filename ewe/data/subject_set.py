"""A labelled set for subject binding: claims checked against a passage about someone else.

From the embedded Wikipedia summaries (topic People), pairs of items that differ only in
whom a sentence of person B's article is attributed to, each judged against B's article:

* swap: a sentence of B's article with B's name (and an opening he/she/his/her) replaced by
  another person A's name -> unsupported; control: the same sentence attributed to B (an
  opening pronoun replaced by B's name) -> supported.
* namesake: the same, with A a near-namesake or relative of B (a shared surname: the
  Roosevelts, the Franklins) -> unsupported; its control -> supported.
* pronoun-other: a sentence of B's article opening with he/she (or his/her) as written, with
  the prompt "Tell me a bio of A." -> unsupported (the Kafka/Klimt shape); pronoun-own: the
  same sentence with the prompt naming B -> supported.

Half the swap and namesake pairs carry a prompt naming the person the claim is attributed to.
A is of the same gender as B (by the pronouns of their articles), so a pronoun never gives
the answer away. Only B's article is ever shown, so a claim is never true of A by chance:
pairs where B's article names A are left out.

Kept out of the judge's training: B (the only passage a judge reads) is always an article
`ewe.data.splits.is_held_out` holds out of the shipped judge's training data. The committed file
(tests/data/subject/binding.jsonl) is what tests read; rebuild with
`python -m ewe.data.subject_set`. Deterministic by seed.
"""
from __future__ import annotations

import argparse
import random
import re
from collections import defaultdict
from pathlib import Path
from typing import Optional

from .. import files
from .splits import is_held_out
from ..verify.subject import HONORIFICS, name_keys, name_runs
from ..verify.text import fold, split_sentences
from ..verify.types import SUPPORTED, UNSUPPORTED

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "tests" / "data" / "subject" / "binding.jsonl"
KINDS = ("control", "swap", "namesake", "pronoun-own", "pronoun-other")
_OPENING = re.compile(r"(He|She|His|Her)\b")
_PRONOUN_SUBJECT = re.compile(r"^(?:(?:In|By|After|From|During|On|At) [^,]{1,40}, )?(he|she|He|She)\b")
_GENDER = {"he": "m", "his": "m", "him": "m", "she": "f", "her": "f", "hers": "f"}


def _passage(entry: dict) -> str:
    """As ewe.data.wiki.passage writes it: "Title (description): extract"."""
    desc = f" ({entry['description']})" if entry.get("description") else ""
    return f"{entry['title']}{desc}: {entry['extract']}"


def _name(title: str) -> str:
    return re.sub(r"\s*\(.*?\)", "", title).strip()


def gender(extract: str) -> Optional[str]:
    """"m" or "f" when the article's he/his/him outnumber its she/her/hers three to one (or back)."""
    counts = {"m": 0, "f": 0}
    for w in re.findall(r"\b[a-z]+\b", extract.lower()):
        if w in _GENDER:
            counts[_GENDER[w]] += 1
    m, f = counts["m"], counts["f"]
    return "m" if m >= 2 and m >= 3 * f else "f" if f >= 2 and f >= 3 * m else None


def surname(title: str) -> Optional[str]:
    """The family name of a plain personal name ("Rosalind Franklin" -> "Franklin"); None for
    regnal names, epithets, titles and groups ("Edward III", "Peter the Great", "Hulegu Khan")."""
    if re.search(r"\b(?:of|the|and|family|brothers)\b|[,(]|\b[IVX]+\b", title):
        return None
    words = title.split()
    last = words[-1]
    if not 2 <= len(words) <= 4 or not last.isalpha() or len(last) < 3 or last.lower() in HONORIFICS:
        return None
    return last


def _b_pattern(title: str) -> re.Pattern:
    """Every way B's sentence names B: the name, or a run of its words ("Kafka", "Franz Kafka")."""
    words = _name(title).split()
    parts = {" ".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    parts = [p for p in parts if any(len(w) >= 3 and w[:1].isupper() and w.lower() not in HONORIFICS
                                     for w in p.split())] or [" ".join(words)]  # "Li Si": the whole name
    alts = "|".join(re.escape(p) for p in sorted(parts, key=len, reverse=True))
    return re.compile(rf"(?<![\w.'’-])(?:{alts})(?![\w-])")


def attribute(sentence: str, b_title: str, to: str) -> Optional[str]:
    """`sentence` of B's article said of `to`: its subject (B's name, or an opening He/She/His/Her)
    replaced by `to`. None when B's name appears anywhere else ("the Pahlavi dynasty",
    "Noether's theorem") or the sentence names another bearer of B's name words (a relative)."""
    keys = name_keys(_name(b_title))
    if any(name_keys(r) & keys and not name_keys(r) <= keys for r in name_runs(sentence)):
        return None
    found = list(_b_pattern(b_title).finditer(sentence))
    if len(found) > 1 or (found and found[0].start() != _lead(sentence)):
        return None
    if found:
        return sentence[:found[0].start()] + to + sentence[found[0].end():]
    m = _OPENING.match(sentence)
    return to + ("'s" if m.group(1) in ("His", "Her") else "") + sentence[m.end():] if m else None


def _lead(sentence: str) -> int:
    """Where the subject starts, after an opening phrase ("In 1935, ")."""
    return re.match(r"(?:(?:In|By|After|From|During|On|At|Later|Since) [^,]{1,40}, )?", sentence).end()


def _candidates(entry: dict) -> list[str]:
    """B's sentences that a claim can be made of: 6 to 30 words, whose subject is B's name or a
    pronoun for B (after at most an opening phrase: "In 1935, Schrödinger ...")."""
    pattern = _b_pattern(entry["title"])
    out = []
    for s in split_sentences(" ".join(entry["extract"].split())):
        if 6 <= len(s.split()) <= 30 and (_OPENING.match(s) or pattern.match(s, _lead(s))) and not s.endswith("?"):
            out.append(s)
    return out


def _pronoun_sentences(entry: dict) -> list[str]:
    return [s for s in split_sentences(" ".join(entry["extract"].split()))
            if 6 <= len(s.split()) <= 30 and (_PRONOUN_SUBJECT.match(s) or re.match(r"(His|Her) ", s))]


def _bios(*titles: str) -> tuple[str, ...]:
    return tuple(f"Tell me a bio of {_name(t)}." for t in titles)


def _names_a(passage: str, a_title: str, b_title: str) -> bool:
    own = name_keys(_name(a_title)) - name_keys(_name(b_title)) - HONORIFICS
    return bool(own & {fold(w) for w in re.findall(r"\w+", passage)})


def build_subject_set(summaries: Optional[dict] = None, n_swap: int = 100, n_namesake: int = 60,
                      n_pronoun: int = 100, seed: int = 0) -> list[dict]:
    """Items in pairs (a supported one and an unsupported one on the same passage), pair by pair."""
    if summaries is None:
        from . import wiki

        summaries = wiki.summaries()
    rng = random.Random(seed)
    people = sorted(t for t, e in summaries.items()
                    if e.get("topic") == "People" and len(e.get("extract") or "") >= 200)
    sex = {t: gender(summaries[t]["extract"]) for t in people}
    held = [t for t in people if is_held_out(t) and sex[t]]
    used: set[tuple[str, str]] = set()
    items: list[dict] = []

    def pair(kind_pos, kind_neg, b, a, sentence, pos, neg, prompts):
        n = len(items) // 2
        for kind, label, claim, prompt, who in ((kind_pos, SUPPORTED, pos, prompts[0], b),
                                                (kind_neg, UNSUPPORTED, neg, prompts[1], a)):
            items.append(dict(id=f"s{n:03d}{'t' if label == SUPPORTED else 'f'}", pair=f"s{n:03d}", kind=kind,
                              label=label, claim=claim, prompt=prompt, attributed_to=who, passage_title=b,
                              source_sentence=sentence, evidence=_passage(summaries[b])))
        used.add((b, sentence))

    def attributed(kind, b, a, with_prompt):
        passage = _passage(summaries[b])
        if _names_a(passage, a, b):
            return False
        options = [s for s in _candidates(summaries[b]) if (b, s) not in used]
        rng.shuffle(options)
        for s in options:
            pos, neg = attribute(s, b, _name(b)), attribute(s, b, _name(a))
            if pos and neg and pos != neg:
                pair("control", kind, b, a, s, pos, neg, _bios(b, a) if with_prompt else (None, None))
                return True
        return False

    # namesakes first: they are few; a sentence of B serves one pair only
    families = defaultdict(list)
    for t in people:
        if surname(t):
            families[surname(t)].append(t)
    # the claim names A, so A's gender is not asked to match; every pair, as the data has few
    namesakes = [(a, b) for members in families.values() for b in members for a in members
                 if a != b and is_held_out(b)]
    rng.shuffle(namesakes)
    for a, b in namesakes:
        if sum(it["kind"] == "namesake" for it in items) >= n_namesake:
            break
        attributed("namesake", b, a, with_prompt=len(items) % 4 == 0)

    order = held[:]
    rng.shuffle(order)
    for b in order:
        if sum(it["kind"] == "swap" for it in items) >= n_swap:
            break
        others = [t for t in people if t != b and sex[t] == sex[b] and not name_keys(_name(t)) & name_keys(_name(b))]
        attributed("swap", b, rng.choice(others), with_prompt=len(items) % 4 == 0)

    rng.shuffle(order)
    for b in order:
        if sum(it["kind"] == "pronoun-other" for it in items) >= n_pronoun:
            break
        options = [s for s in _pronoun_sentences(summaries[b]) if (b, s) not in used]
        others = [t for t in people if t != b and sex[t] == sex[b] and not name_keys(_name(t)) & name_keys(_name(b))]
        a = rng.choice(others)
        if not options or _names_a(_passage(summaries[b]), a, b):
            continue
        s = rng.choice(options)
        pair("pronoun-own", "pronoun-other", b, a, s, s, s, _bios(b, a))
    return items


def load_subject_set(path: Path | str = DEFAULT_PATH) -> list[dict]:
    return [item for _, item in files.read_jsonl(path)]


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="Build the subject-binding labelled set from the embedded Wikipedia.")
    ap.add_argument("--out", default=str(DEFAULT_PATH))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    items = build_subject_set(seed=args.seed)
    path = files.write_jsonl(args.out, items)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for it in items:
        counts[(it["kind"], it["label"])] += 1
    print(f"wrote {len(items)} items to {path}")
    for (kind, label), n in sorted(counts.items()):
        print(f"  {kind:14s} {label:12s} {n}")


if __name__ == "__main__":
    main()
