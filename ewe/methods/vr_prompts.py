"""The refiner's prompts for Streaming-VR and Full-VR (Ko et al., 2025), and the parser of
its answers, kept in one place so that their wording can be read and changed together.

The paper's refiner receives the whole prompt the answer was generated from (its passages
included) and the verified prefix, and no other knowledge; these templates give it exactly
that, plus the checker's evidence only when `vr.refiner_evidence` is on (not in the paper).
The wording is short, as for CoVe's prompts, because the refiner may be a 135M model.
"""
from __future__ import annotations

from ..verify.claims import prompt_topic
from ..verify.redundancy import normalize
from ..verify.text import label_pattern, split_sentences
from ..verify.text import strip_label as text_strip_label

SENTENCE_TEMPLATE = """\
Rewrite the last sentence of the answer so that it is factually correct. Write only the \
corrected sentence.
{evidence}
Example
Question: Tell me a bio of Isaac Newton.
Answer so far: Isaac Newton was an English physicist.
Last sentence: He was born in 1700 in France.
Corrected sentence: He was born in 1643 in England.

Question: {prompt}
Answer so far: {prefix}
Last sentence: {sentence}
Corrected sentence:"""
"""Streaming-VR's refiner: s~_t = Refiner(s_t), given the prompt and a~_<=t-1 (section 3.2).
Without the example SmolLM2-135M copied the sentence unchanged every time (3 of 3 test
sentences); with it, it changed the wrong year or place in each (not always to the truth)."""

ANSWER_TEMPLATE = """\
Rewrite the answer so that every claim in it is factually correct. Write only the \
corrected answer.
{evidence}
Example
Question: Tell me a bio of Isaac Newton.
Answer: Isaac Newton was a French painter. He was born in 1700.
Corrected answer: Isaac Newton was an English physicist and mathematician. He was born in 1643.

Question: {prompt}
Answer: {answer}
Corrected answer:"""
"""Full-VR's refiner: a~ = Refiner(a), the whole answer at once (section 3.1)."""


def _evidence_block(evidence: list[str]) -> str:
    if not evidence:
        return ""
    listed = "\n".join(f"- {e.strip()}" for e in evidence)
    return f"\nFacts you may use:\n{listed}\n"


def sentence_prompt(prompt: str, prefix: str, sentence: str, evidence: list[str] | None = None) -> str:
    return SENTENCE_TEMPLATE.format(prompt=prompt.strip(), prefix=prefix.strip() or "(nothing yet)",
                                    sentence=sentence.strip(), evidence=_evidence_block(evidence or []))


def answer_prompt(prompt: str, answer: str, evidence: list[str] | None = None) -> str:
    return ANSWER_TEMPLATE.format(prompt=prompt.strip(), answer=answer.strip(), evidence=_evidence_block(evidence or []))


_LABEL = label_pattern("corrected sentence", "corrected answer", "last sentence", "sentence", "answer")
# the sentences of the templates' worked example: a reply that copies one refined nothing
_EXAMPLE_LINES = [line.split(":", 1)[1] for t in (SENTENCE_TEMPLATE, ANSWER_TEMPLATE)
                  for line in t.split("Example\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]]
EXAMPLE_SENTENCES = frozenset(normalize(x) for line in _EXAMPLE_LINES for x in split_sentences(line) if x.strip())


EXAMPLE_TOPIC = prompt_topic(SENTENCE_TEMPLATE.split("Example\nQuestion: ", 1)[1].split("\n", 1)[0])


def copies_example(text: str, prompt: str) -> bool:
    """Whether a reply repeats a sentence of the prompt's worked example (SmolLM2-135M's Full-VR
    refinement of a Curie bio opened "Isaac Newton was a French painter."): the refiner failed.
    Never for a prompt about the example's own subject, where such a sentence may be meant."""
    if prompt_topic(prompt) == EXAMPLE_TOPIC:
        return False
    return any(normalize(x) in EXAMPLE_SENTENCES for x in split_sentences(text) if x.strip())


def strip_label(text: str) -> str:
    """The reply without a leading label the model echoed ("Corrected sentence:", "Answer:")."""
    return text_strip_label(text, _LABEL).strip()


def first_sentence(text: str) -> str:
    """The refined sentence: the first sentence of the reply, its label stripped ("" if none)."""
    reply = strip_label(text)
    sentences = [s.strip() for s in split_sentences(reply) if s.strip()]
    return sentences[0] if sentences else ""
