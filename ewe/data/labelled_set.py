"""A labelled set for the checker: true sentences from the embedded Wikipedia
summaries, each paired with a minimally altered false twin.

True items are a sentence of a summary, either verbatim or trimmed (a parenthetical or
a trailing clause dropped, which keeps it true). The false twin changes one span of
that same text: a year, a number, a person or a place swapped for one of the same kind
named by another summary (typed from the summaries' topic and description), or a
"not" inserted after an auxiliary. The gold evidence is the summary itself
("Title (description): extract", as ewe.data.wiki.passage writes it).

Deterministic by seed; split into tune and test by title, so no article is in both.
The committed file (tests/data/factcheck/labelled.jsonl) is what tests and the
benchmark read; rebuild with `python -m ewe.data.labelled_set`.

Caveat, stated in the benchmark too: true items are copies of the gold passage, so
accuracy with gold evidence measures sensitivity to minimal factual edits, not
robustness to paraphrase.
"""
from __future__ import annotations

import argparse
import random
import re
from pathlib import Path
from typing import Optional

from .. import files
from ..verify.text import NEGATION_RE, fold, name_words, numbers, number_keys, split_sentences, word_keys

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "tests" / "data" / "factcheck" / "labelled.jsonl"
TRUE_KINDS = ("verbatim", "trimmed")
FALSE_KINDS = ("year", "number", "person", "place", "negation")

PLACE_TYPES = (  # first keyword found in the description decides
    ("country", ("country",)),
    ("city", ("capital", "city", "town", "metropolis", "municipality", "port")),
    ("river", ("river", "tributary")),
    ("mountain", ("mountain", "volcano", "peak")),
    ("water", ("sea", "ocean", "gulf", "bay", "lake", "lakes", "strait")),
    ("island", ("island", "archipelago")),
    ("region", ("state", "province", "region", "territory", "peninsula", "desert")),
)
NEGATABLE = ("is", "was", "are", "were", "can", "could", "will", "would")
PERFECT = ("has", "have", "had")


def format_passage(entry: dict) -> str:
    """Same text as ewe.data.wiki.passage: "Title (description): extract"."""
    desc = f" ({entry['description']})" if entry.get("description") else ""
    return f"{entry['title']}{desc}: {entry['extract']}"


def _name(title: str) -> str:
    return re.sub(r"\s*\(.*?\)\s*", " ", title).split(",")[0].strip()


def entity_kinds(summaries: dict[str, dict]) -> dict[str, dict[str, str]]:
    """kind -> {surface name: title}: people (two words or more) from topic People, places typed from
    the description of Geography entries (country, city, river, ...)."""
    kinds: dict[str, dict[str, str]] = {}
    for title, e in summaries.items():
        name = _name(title)
        if not name or not name[0].isupper() or len(name) < 3:
            continue
        if e.get("topic") == "People":
            if len(name.split()) >= 2:  # single names ("John", "Queen") are too often other things
                kinds.setdefault("person", {})[name] = title
        elif e.get("topic") == "Geography":
            desc = set(re.findall(r"[a-z]+", (e.get("description") or "").lower()))
            for kind, keys in PLACE_TYPES:
                if desc & set(keys):
                    kinds.setdefault("place:" + kind, {})[name] = title
                    break
    return kinds


class _Match:
    def __init__(self, start: int, text: str):
        self._start, self._text = start, text

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._start + len(self._text)

    def group(self, i: int = 0) -> str:
        return self._text


_WORD_START = re.compile(r"(?<![\w-])[^\W\d_][\w'’.-]*")


class _Mentions:
    """Finds the names of `kinds` in text, leftmost-longest and non-overlapping, in one
    scan per text (memoized); indexed by first word, since a regex alternation of
    thousands of names is slow."""

    def __init__(self, kinds: dict[str, dict[str, str]]):
        self.kinds = list(kinds)
        self.by_first: dict[str, list[tuple[str, str]]] = {}
        pairs = {(n, g) for g, names in kinds.items() for n in names}
        for n, g in sorted(pairs, key=lambda x: (-len(x[0]), x)):
            self.by_first.setdefault(n.split()[0], []).append((n, g))
        self._memo: dict[str, list[tuple[_Match, str]]] = {}

    def groups(self, kind: str) -> list[str]:
        return [g for g in self.kinds if g == kind or g.startswith(kind + ":")]

    def find(self, text: str, group: str) -> list[_Match]:
        if text not in self._memo:
            if len(self._memo) > 50000:
                self._memo.clear()
            self._memo[text] = self._scan(text)
        return [m for m, g in self._memo[text] if g == group]

    def _scan(self, text: str) -> list[tuple[_Match, str]]:
        out, pos = [], 0
        for m in _WORD_START.finditer(text):
            if m.start() < pos:
                continue
            word = m.group(0)
            for name, group in self.by_first.get(word, []) + self.by_first.get(word.rstrip(".'’"), []):
                end = m.start() + len(name)
                if text.startswith(name, m.start()) and not re.match(r"[\w-]", text[end:end + 1]):
                    out.append((_Match(m.start(), name), group))
                    pos = end
                    break
        return out


def trim(sentence: str) -> Optional[str]:
    """A shorter sentence that is still true: parentheticals dropped, else cut at the
    first ", and/but/which/while" or ";". None when nothing can be dropped."""
    out = re.sub(r"\s*\([^()]*\)", "", sentence)
    if out == sentence:
        m = re.search(r"(?:,\s+(?:and|but|which|while|whereas)\s|;\s)", sentence)
        if not m or (m.group(0).startswith(", and") and "," in sentence[: m.start()]):
            return None  # ", and" closing a list ("A, B, and C") is not a clause boundary
        out = sentence[: m.start()].rstrip(" ,") + "."
    out = re.sub(r"\s+([,.])", r"\1", out).strip()
    if out == sentence or len(out.split()) < 6:
        return None
    return out


def _in_list(s: str, a: int, b: int) -> bool:
    """The span is an item of a list ("A, B and C"): swapping it for another item the
    passage names could leave the sentence true."""
    return bool(re.search(r"(?:,|\band|\bor)\s*$", s[:a]) or re.match(r"\s*(?:,|and\b|or\b)", s[b:]))


def _passage_numbers(s: str, passage: str, kind_ok) -> list:
    """Numbers of an accepted kind that the passage has and the sentence lacks."""
    here = number_keys(s)
    seen, out = set(), []
    for n in numbers(passage):
        if kind_ok(n) and n.key not in here and n.key not in seen:
            seen.add(n.key)
            out.append(n)
    return out


def _alter_year(s: str, passage: str, rng: random.Random, from_passage: bool):
    taken = number_keys(passage)
    for n in rng.sample(numbers(s), len(numbers(s))):
        if n.kind not in ("year", "decade") or n.value < 1000 or _in_list(s, n.start, n.end):
            continue
        if from_passage:
            other = _passage_numbers(s, passage, lambda m: m.kind == n.kind and m.value >= 1000)
            if other:
                return n.start, n.end, rng.choice(other).raw
            continue
        for _ in range(20):
            step = 10 * rng.randint(1, 3) if n.kind == "decade" else rng.randint(1, 12)
            new = int(n.value) + rng.choice([-1, 1]) * step
            if 1000 <= new <= 2024 and str(new) not in taken:
                return n.start, n.end, f"{new}s" if n.kind == "decade" else str(new)
    return None


_COUNT = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _alter_number(s: str, passage: str, rng: random.Random, from_passage: bool):
    taken = number_keys(passage)
    for n in rng.sample(numbers(s), len(numbers(s))):
        if n.kind in ("year", "decade") or _in_list(s, n.start, n.end):
            continue
        if from_passage:
            other = _passage_numbers(s, passage, lambda m: m.kind == n.kind)
            if other:
                new = rng.choice(other).raw
                return n.start, n.end, new.capitalize() if n.raw[0].isupper() else new.lower() if n.kind == "word" else new
            continue
        for _ in range(20):
            if n.kind == "word":
                new_raw = rng.choice(_COUNT)
                new_key = str(_COUNT.index(new_raw) + 2)
                if n.raw[0].isupper():
                    new_raw = new_raw.capitalize()
            elif n.kind == "ordinal":
                v = int(n.value) + rng.choice([-1, 1]) * rng.randint(1, 3)
                if v < 1:
                    continue
                new_raw, new_key = _ordinal(v), str(v)
            else:
                v = n.value
                delta = max(1.0, abs(v) * rng.uniform(0.15, 0.6))
                decimals = len(n.raw.split(".")[1]) if "." in n.raw else 0
                new = round(v + rng.choice([-1, 1]) * delta, decimals) if decimals else v + rng.choice([-1, 1]) * round(delta)
                if new <= 0:
                    continue
                new_raw = (f"{new:,.{decimals}f}" if "," in n.raw else f"{new:.{decimals}f}")
                new_key = str(int(new)) if float(new).is_integer() else repr(float(new))
            if new_key != n.key and new_key not in taken:
                return n.start, n.end, new_raw
    return None


def _alter_entity(s: str, passage: str, title: str, kind: str, kinds: dict, mentions: "_Mentions", rng: random.Random,
                  from_passage: bool):
    own = word_keys(title)
    passage_keys = word_keys(passage)
    groups = mentions.groups(kind)
    found = [(g, m) for g in groups for m in mentions.find(s, g)
             if not (word_keys(m.group(0)) & own) and not _inside_longer_name(s, m.start(), m.end())]
    if not found:
        return None
    group, m = rng.choice(found)
    if from_passage:
        if _in_list(s, m.start(), m.end()):
            return None
        here = word_keys(s)
        other = sorted({x.group(0) for x in mentions.find(passage, group)
                        if not (word_keys(x.group(0)) & (here | own))
                        and not _inside_longer_name(passage, x.start(), x.end())})
        return (m.start(), m.end(), rng.choice(other)) if other else None
    pool = sorted(kinds[group])
    for _ in range(50):
        new = rng.choice(pool)
        if new != m.group(0) and not ({fold(w) for w in name_words(new)} & passage_keys):
            return m.start(), m.end(), new
    return None


def _inside_longer_name(s: str, a: int, b: int) -> bool:
    """True for "Wales" in "New South Wales" (a capitalized word touches the mention)
    and for "Luxembourg" in "Sigismund of Luxembourg" (an epithet)."""
    before = re.search(r"([A-Z][\w'’-]*)\s+(?:of\s+)?$", s[:a])
    after = re.match(r"\s+(?:of\s+)?([A-Z][\w'’-]*)", s[b:])
    return bool(before and before.start(1) > 0) or bool(after)


def _alter_negation(s: str, passage: str, rng: random.Random):
    if NEGATION_RE.search(s):
        return None
    for m in re.finditer(r"\b(" + "|".join(NEGATABLE + PERFECT) + r")\b(?=\s+(\w+))", s):
        nxt = m.group(2)
        if m.group(1) in PERFECT and not (nxt == "been" or nxt.endswith("ed")):
            continue  # "has a population" cannot take a plain "not"
        return m.end(), m.end(), " not"
    return None


def alter(sentence: str, kind: str, passage: str, title: str, kinds: dict, mentions: _Mentions, rng: random.Random,
          from_passage: bool = False):
    """(start, end, replacement) for one minimal false edit of `kind`, or None.

    With `from_passage`, the replacement is a year / number / name of the same kind that
    the gold passage states elsewhere (a confusion of facts, the error a generator with
    the passage in memory makes); otherwise it is new to the passage."""
    if kind == "year":
        return _alter_year(sentence, passage, rng, from_passage)
    if kind == "number":
        return _alter_number(sentence, passage, rng, from_passage)
    if kind in ("person", "place"):
        return _alter_entity(sentence, passage, title, kind, kinds, mentions, rng, from_passage)
    if kind == "negation":
        return _alter_negation(sentence, passage, rng)
    raise ValueError(f"unknown alteration kind {kind!r}")


def _may_alter(extract: str, kind: str, from_passage: bool, mentions: _Mentions) -> bool:
    """Cheap necessary condition for `alter` to succeed on some sentence of `extract`:
    something of the kind is mentioned (twice, distinct, for an in-passage swap)."""
    if kind == "negation":
        return True
    if kind in ("year", "number"):
        ok = (lambda n: n.kind in ("year", "decade")) if kind == "year" else (lambda n: n.kind not in ("year", "decade"))
        found = {n.key for n in numbers(extract) if ok(n)}
    else:
        found = {m.group(0) for g in mentions.groups(kind) for m in mentions.find(extract, g)}
    return len(found) >= (2 if from_passage else 1)


def _candidate(sentence: str) -> bool:
    n = len(sentence.split())
    return (
        8 <= n <= 45 and sentence[0].isupper() and sentence.endswith(".") and '"' not in sentence and "“" not in sentence
        and (numbers(sentence) or len(name_words(sentence)) >= 2)
    )


def build_labelled_set(summaries: Optional[dict[str, dict]] = None, n_pairs: int = 150, seed: int = 0,
                       tune_fraction: float = 0.4) -> list[dict]:
    """`n_pairs` (true, false) pairs, at most one per title.

    Each false kind gets an equal quota: titles are visited in a seeded order and a
    title is used for the kind furthest below its quota that one of its sentences
    admits (person swaps are rare, negation almost always possible). About half of the
    year / number / person / place edits take their replacement from elsewhere in the
    same passage (`edit.from_passage`). Every other pair tries a trimmed true
    sentence. Titles are then split tune/test at random.
    """
    if summaries is None:
        from ewe.data import wiki

        summaries = wiki.summaries()
    rng = random.Random(seed)
    kinds = entity_kinds(summaries)
    mentions = _Mentions(kinds)
    quota = {k: n_pairs // len(FALSE_KINDS) + (i < n_pairs % len(FALSE_KINDS)) for i, k in enumerate(FALSE_KINDS)}
    counts = {k: 0 for k in FALSE_KINDS}
    confusions = {k: 0 for k in FALSE_KINDS}  # edits whose replacement the passage states elsewhere
    titles = sorted(summaries)
    rng.shuffle(titles)
    pairs: list[tuple[str, str, str, str, str, tuple]] = []
    for title in titles:
        if len(pairs) >= n_pairs:
            break
        entry = summaries[title]
        passage = format_passage(entry)
        open_kinds = [k for k in FALSE_KINDS if counts[k] < quota[k]
                      and _may_alter(entry["extract"], k, k != "negation" and confusions[k] < counts[k] / 2 + 0.5, mentions)]
        if not open_kinds:
            continue  # pysbd is slow (~40 ms an extract): split only extracts that can serve
        sentences = [s for s in split_sentences(entry["extract"]) if _candidate(s)]
        rng.shuffle(sentences)
        want_trim = len(pairs) % 2 == 1
        found = None
        for kind in sorted(open_kinds, key=lambda k: (counts[k], FALSE_KINDS.index(k))):
            options = [(("trimmed", trim(b)) if trim(b) else ("verbatim", b), b) for b in sentences]
            options.sort(key=lambda o: o[0][0] != ("trimmed" if want_trim else "verbatim"))
            confuse = kind != "negation" and confusions[kind] < counts[kind] / 2 + 0.5
            for (true_kind, true_text), base in options:
                edit = alter(true_text, kind, passage, title, kinds, mentions, rng, from_passage=confuse)
                if edit:
                    found = (title, base, true_kind, true_text, kind, edit + (confuse,))
                    break
            if found:
                break
        if found:
            counts[found[4]] += 1
            confusions[found[4]] += found[5][3]
            pairs.append(found)
    order = list(range(len(pairs)))
    random.Random(seed + 1).shuffle(order)
    tune = set(order[: round(len(pairs) * tune_fraction)])
    items: list[dict] = []
    for i, (title, base, true_kind, true_text, kind, (a, b, new, confused)) in enumerate(pairs):
        pair = f"p{i:03d}"
        extract = summaries[title]["extract"]
        common = dict(title=title, evidence=format_passage(summaries[title]), split="tune" if i in tune else "test",
                      pair=pair, source_sentence=base, context=extract[: extract.find(base)].strip())
        items.append(dict(id=pair + "t", sentence=true_text, label=True, kind=true_kind, edit=None, **common))
        items.append(dict(id=pair + "f", sentence=true_text[:a] + new + true_text[b:], label=False, kind=kind,
                          edit={"start": a, "end": b, "from": true_text[a:b], "to": new, "from_passage": confused},
                          **common))
    return items


def load_labelled_set(path: Path | str = DEFAULT_PATH, split: Optional[str] = None) -> list[dict]:
    items = [item for _, item in files.read_jsonl(path)]
    return [it for it in items if split is None or it["split"] == split]


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description="Build the fact-checker's labelled set from the embedded Wikipedia.")
    ap.add_argument("--out", default=str(DEFAULT_PATH))
    ap.add_argument("--pairs", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tune-fraction", type=float, default=0.4)
    args = ap.parse_args(argv)
    items = build_labelled_set(n_pairs=args.pairs, seed=args.seed, tune_fraction=args.tune_fraction)
    path = files.write_jsonl(args.out, items)
    by = {}
    for it in items:
        by[(it["split"], it["kind"])] = by.get((it["split"], it["kind"]), 0) + 1
    print(f"wrote {len(items)} items to {path}")
    for k in sorted(by):
        print(f"  {k[0]:5s} {k[1]:9s} {by[k]}")


if __name__ == "__main__":
    main()
