"""A2R's prompts (Lee & Lee, 2024, "Ask, Assess, and Refine"), its template feedback and
the citation parser, kept in one place so that every stage's wording can be read together.

The initial and feedback prompts follow the paper's Tables 1 and 2, shortened for a small
generator; the refine and final prompts, which the paper does not print, say what
equations 4 and 5 take: the question, the documents, the earlier answer(s) and feedback.
"""
from __future__ import annotations

import re

from ..verify.text import block_pattern, label_pattern, until_block
from ..verify.text import strip_label as text_strip_label

ASPECTS = ("correctness", "citation_recall", "citation_precision")

INIT_TEMPLATE = """\
Write an accurate answer to the question using only the documents below. Cite the documents \
with [index]: every sentence should cite at least one document that supports it.

{documents}

Question: {question}
Answer:"""
"""Equation 1, Y_0 = M([p_init; x; e]) (Table 1, shortened)."""

FEEDBACK_TEMPLATE = """\
Evaluate the answer to the question and give feedback to improve it, for each aspect \
according to its score (from 0 to 1):
1) Correctness: {correctness:.2f}. If below {correctness_threshold:.2f}, say which statements \
the documents do not support; otherwise say it is satisfactory.
2) Citation recall: {citation_recall:.2f}. If below {citation_recall_threshold:.2f}, ask for a \
citation of a supporting document for each factual statement; otherwise say it is satisfactory.
3) Citation precision: {citation_precision:.2f}. If below {citation_precision_threshold:.2f}, ask \
that every citation point to a document that supports its statement; otherwise say it is satisfactory.

{documents}

Question: {question}
Answer: {answer}
Feedback:"""
"""Equation 3, F_t = M([p_fb; S_t; x; e; Y_t]) (Table 2, shortened)."""

REFINE_TEMPLATE = """\
Improve the answer to the question by following the feedback. Use only the documents below \
and cite them with [index]. Write only the improved answer.

{documents}

Question: {question}
Answer: {answer}
Feedback: {feedback}
Improved answer:"""
"""Equation 4, Y_t+1 = M([p_refine; x; e; Y_t; F_t])."""

FINAL_TEMPLATE = """\
Below are drafts of an answer to the question, each with feedback on it. Write the best final \
answer: use only the documents below, cite them with [index], and follow all the feedback. \
Write only the final answer.

{documents}

Question: {question}

{history}
Final answer:"""
"""Equation 5, Y^ = M([p_refine; x; e; Y_0; F_0; ...; Y_t; F_t])."""


def documents_block(docs: list[str]) -> str:
    return "\n".join(f"Document [{i}]: {d.strip()}" for i, d in enumerate(docs, 1)) or "(no documents)"


def init_prompt(question: str, docs: list[str]) -> str:
    return INIT_TEMPLATE.format(question=question.strip(), documents=documents_block(docs))


def feedback_prompt(question: str, docs: list[str], answer: str, scores: dict, thresholds: dict) -> str:
    return FEEDBACK_TEMPLATE.format(question=question.strip(), documents=documents_block(docs),
                                    answer=answer.strip() or "(empty)", **scores,
                                    **{f"{a}_threshold": thresholds[a] for a in ASPECTS})


def refine_prompt(question: str, docs: list[str], answer: str, feedback: str) -> str:
    return REFINE_TEMPLATE.format(question=question.strip(), documents=documents_block(docs),
                                  answer=answer.strip() or "(empty)", feedback=feedback.strip() or "(none)")


def final_prompt(question: str, docs: list[str], drafts: list[tuple[str, str]]) -> str:
    history = "\n\n".join(f"Draft {i}: {a.strip() or '(empty)'}\nFeedback on draft {i}: {f.strip() or '(none)'}"
                          for i, (a, f) in enumerate(drafts, 1))
    return FINAL_TEMPLATE.format(question=question.strip(), documents=documents_block(docs), history=history)


def template_feedback(scores: dict, thresholds: dict, unsupported: list[str], uncited: list[str],
                      imprecise: list[str]) -> str:
    """Feedback written from the scores without a model call (`a2r.feedback: template`): the
    paper's per-aspect instructions, with the statements that caused each low score."""

    def listed(items: list[str]) -> str:
        return "; ".join(f'"{s}"' for s in items[:4])

    parts = []
    if scores["correctness"] < thresholds["correctness"]:
        parts.append("Correctness is low: the documents do not support " + (listed(unsupported) or "some statements")
                     + ". Remove or correct them.")
    else:
        parts.append("Correctness is satisfactory.")
    if scores["citation_recall"] < thresholds["citation_recall"]:
        parts.append("Cite a supporting document for each factual statement" +
                     (f", for example {listed(uncited)}." if uncited else "."))
    else:
        parts.append("Citation recall is satisfactory.")
    if scores["citation_precision"] < thresholds["citation_precision"]:
        parts.append("Some citations do not support their statements" +
                     (f" ({listed(imprecise)})" if imprecise else "") + ": cite only documents that do.")
    else:
        parts.append("Citation precision is satisfactory.")
    return " ".join(parts)


_CITATION_RE = re.compile(r"\[(\d{1,3})\]")
_LABEL = label_pattern("improved answer", "final answer", "answer", "feedback", r"draft \d+")
_NEXT_BLOCK = block_pattern(r"draft \d+", r"feedback on draft \d+", "feedback", "question")
_DOCUMENT_BLOCK = block_pattern(r"document \[\d+\]")
# a line of the assessment's format: "Correctness: 0.80", "2. Citation recall: 0.00"
_SCORE_LINE = re.compile(r"^\s*(?:\d+[.)]\s*)*(?:correctness|citation(?:\s+(?:recall|precision))?)\s*:\s*\d*\.?\d+",
                         re.IGNORECASE | re.MULTILINE)


def citations(sentence: str) -> list[int]:
    """The document indices a sentence cites ("[1]", "[2][3]"), in order, without repeats."""
    out = []
    for m in _CITATION_RE.finditer(sentence):
        i = int(m.group(1))
        if i not in out:
            out.append(i)
    return out


def without_citations(sentence: str) -> str:
    """The sentence as a claim to check: its citation marks removed."""
    return re.sub(r"\s+([.,;:!?])", r"\1", _CITATION_RE.sub("", sentence)).strip()


def strip_label(text: str) -> str:
    """The reply without a leading label the model echoed ("Improved answer:", "Draft 3:"), and
    without what follows when it goes on with another block of the prompt's pattern ("Draft 4:",
    "Feedback on draft 2:"): small models continue the history instead of ending."""
    return until_block(text_strip_label(text, _LABEL), _NEXT_BLOCK).strip()


def answer_text(text: str) -> str:
    """An answer's reply: `strip_label`, and cut where it goes on listing the prompt's documents
    ("Document [2]: ..."), which the answer only cites."""
    return until_block(strip_label(text), _DOCUMENT_BLOCK).strip()


def echoes_assessment(answer: str) -> bool:
    """Whether an answer writes the assessment's score lines ("1. Correctness: 0.80") instead of
    answering: a 135M refiner copies the feedback's format, and such a reply is no answer."""
    return bool(_SCORE_LINE.search(answer))
