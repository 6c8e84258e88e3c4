"""Training examples for the memory reader, built from the embedded Wikipedia summaries.

An example is a prompt, the passages its memory holds (each becomes one unit) and an answer
drawn from one of them, so that reading the memory is what lowers the answer's loss. Kinds of
prompt: the evaluation sets' two (a bio, "What can you tell me about X?") and others (a
question, a summary request), with or without the sets' "Provide as many specific details ..."
suffix. Most examples hold distractors beside the answering passage (other summaries of the
same topic, so the model must read which passage is about the subject), and some hold only
distractors (the answer is not in memory: the student must not copy a distractor, it must do
what the teacher does with the same passages in its prompt).

Every title an example uses, its own and its distractors', is of the "train" split
(ewe/data/splits.py); the examples measured before and after training are of "dev", so no
example touches a "test" article, which the prompt sets the figures come from draw.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from ..data import wiki
from ..data.prompt_sets import SUFFIX
from ..data.splits import check_split, split_of
from ..verify.text import sentence_spans

EXAMPLE_SPLITS = ("train", "dev")  # trained on, measured on

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


def _usable(entry: dict) -> bool:
    return len(entry.get("extract", "")) >= 200 and entry.get("topic") != "Uncategorized"


def titles_of(which: str) -> list[str]:
    """The usable titles of split `which` ("train", "dev" or "test"), sorted."""
    check_split(which)
    return sorted(t for t, e in wiki.summaries().items() if _usable(e) and split_of(t) == which)


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
    if which not in EXAMPLE_SPLITS:
        raise ValueError(f"which={which!r} must be one of {EXAMPLE_SPLITS}: no example is built from the test split")
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
