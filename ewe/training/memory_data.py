"""Training examples for the memory reader, built from the embedded Wikipedia summaries.

An example is a prompt, the passages its memory holds (each becomes one unit) and an answer
drawn from one of them, so that reading the memory is what lowers the answer's loss. Kinds of
prompt: the evaluation sets' two (a bio, "What can you tell me about X?") and others (a
question, a summary request), with or without the sets' "Provide as many specific details ..."
suffix. Most examples hold distractors beside the answering passage (other summaries of the
same topic, so the model must read which passage is about the subject), and some hold only
distractors (the answer is not in memory: the student must not copy a distractor, it must do
what the teacher does with the same passages in its prompt).

No title of an evaluation prompt set is ever used, nor one of the held-out split that
`benchmarks/memory_vs_prompt.py` reports on (`split(title)`), so the loss gap it measures is
on passages the adapter never saw.
"""
from __future__ import annotations

import functools
import hashlib
import random
from dataclasses import asdict, dataclass

from ..data import wiki
from ..data.prompt_sets import SUFFIX, prompt_set
from ..verify.text import sentence_spans

HELD_OUT_FRACTION = 10  # one title in ten is held out (by hash: the same on every machine)
EVAL_SETS = ("bio", "objects", "summaries")
EVAL_SEEDS = (0, 1, 2)
EVAL_SET_SIZE = 400  # titles drawn by each evaluation set and seed, all excluded

PROMPTS = {
    "bio": "Tell me a bio of {}.",
    "objects": "What can you tell me about {}?",
    "question": "Who or what is {}?",
    "summary": "Write a short paragraph about {}.",
}


@dataclass
class MemoryExample:
    """One training (or held-out) case: `passages` go into memory, one unit each; `answer` is the
    text whose tokens the loss reads; `source` indexes the passage it was drawn from (None: the
    answer is in no passage, all are distractors)."""

    id: str
    title: str
    kind: str
    prompt: str
    passages: list[str]
    answer: str
    source: int | None

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def evaluation_titles() -> frozenset[str]:
    """Every title the evaluation prompt sets draw (three seeds, 400 each): never trained on."""
    titles = set()
    for name in EVAL_SETS:
        for seed in EVAL_SEEDS:
            titles.update(r["topic"] for r in prompt_set(name, EVAL_SET_SIZE, seed, suffix=None))
    return frozenset(titles)


def split(title: str) -> str:
    """"eval" (an evaluation set's title), "held_out" (the benchmark's), else "train"."""
    if title in evaluation_titles():
        return "eval"
    digest = int(hashlib.sha256(f"memory-reader:{title}".encode("utf-8")).hexdigest(), 16)
    return "held_out" if digest % HELD_OUT_FRACTION == 0 else "train"


def _usable(entry: dict) -> bool:
    return len(entry.get("extract", "")) >= 200 and entry.get("topic") != "Uncategorized"


def titles_of(which: str) -> list[str]:
    """The usable titles of one split ("train" or "held_out"), sorted."""
    return sorted(t for t, e in wiki.summaries().items() if _usable(e) and split(t) == which)


def _answer(title: str, rng: random.Random, covered_chars: int, max_chars: int) -> str | None:
    """Sentences of `title`'s extract that lie in the part a unit holds (`covered_chars` of the
    passage's text, its "Title (description): " head included), from a random first sentence."""
    entry = wiki.summaries()[title]
    text = entry["extract"]
    head = len(wiki.passage(title)) - len(text)
    spans = [(s, e) for s, e in sentence_spans(text) if head + e <= covered_chars]
    if not spans:  # a unit cut inside the first sentence: the words of it that the unit holds
        cut = text.rfind(" ", 0, max(0, covered_chars - head))
        part = text[:cut].strip() if cut > 0 else ""
        return part if len(part.split()) >= 5 else None
    first = rng.choice([0, 0, 1, 2]) if len(spans) > 2 else 0
    first = min(first, len(spans) - 1)
    start, end = spans[first]
    for s, e in spans[first + 1:]:
        if e - start > max_chars:
            break
        end = e
    return text[start:end].strip()


def build_examples(n: int, seed: int, which: str, covered_chars, units=(1, 1, 2, 3, 4),
                   no_answer: float = 0.15, max_answer_chars: int = 240) -> list[MemoryExample]:
    """`n` examples from the titles of split `which`, seeded.

    covered_chars(passage) -> how many characters of the passage one unit holds (the tokenizer
    and M decide it); units: the unit counts drawn from; no_answer: the share of examples whose
    memory holds only distractors.
    """
    if which not in ("train", "held_out"):
        raise ValueError(f"which={which!r} must be 'train' or 'held_out'")
    titles = titles_of(which)
    if len(titles) < 8:
        raise ValueError(f"only {len(titles)} titles in the {which!r} split: too few to build examples from")
    by_topic: dict[str, list[str]] = {}
    for t in titles:
        by_topic.setdefault(wiki.summaries()[t]["topic"], []).append(t)
    rng = random.Random(seed)
    out: list[MemoryExample] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 20 * n + 100:
            raise RuntimeError(f"could not build {n} examples from {len(titles)} titles")
        title = rng.choice(titles)
        topic = wiki.summaries()[title]["topic"]
        kind = rng.choice(["bio", "bio", "question", "summary"] if topic == "People"
                          else ["objects", "objects", "question", "summary"])
        prompt = PROMPTS[kind].format(title)
        if kind in ("bio", "objects") and rng.random() < 0.5:
            prompt = f"{prompt} {SUFFIX}"
        k = rng.choice(units)
        same = [t for t in by_topic[topic] if t != title]
        pool = same if len(same) >= k and rng.random() < 0.7 else [t for t in titles if t != title]
        distractors = rng.sample(pool, k)
        answerless = rng.random() < no_answer
        source_passage = wiki.passage(title)
        answer = _answer(title, rng, covered_chars(source_passage), max_answer_chars)
        if answer is None:
            continue
        passages = [wiki.passage(t) for t in distractors[: k if answerless else k - 1]]
        source = None
        if not answerless:
            source = rng.randrange(len(passages) + 1)
            passages.insert(source, source_passage)
        out.append(MemoryExample(id=f"{which}-{seed}-{len(out):05d}", title=title, kind=kind, prompt=prompt,
                                 passages=passages, answer=answer, source=source))
    return out
