"""CoVe's prompt templates (Dhuliawala et al., 2023, factor+revise) and parsers for
their answers, kept in one place so that the wording of every stage can be read and
changed together.

The wording is short and concrete, with one example where the output has a format,
because the generator may be a small model (SmolLM2-135M) that follows long
instructions poorly. Parsers are tolerant (numbering style, case, extra words) and say
when an answer cannot be read, so the pipeline can fall back deterministically.
"""
from __future__ import annotations

import re

from ..verify.text import block_pattern, label_pattern, list_items, split_sentences, until_block
from ..verify.text import strip_label as text_strip_label

PLAN_TEMPLATE = """\
Write verification questions for the draft answer below: one short question for each \
factual claim in it. Write each question on its own numbered line.

Example
Question: Tell me a bio of Ada Lovelace.
Draft answer: Ada Lovelace was an English mathematician. She was born in London in 1815.
Verification questions:
1. What was Ada Lovelace's profession?
2. Where was Ada Lovelace born?
3. When was Ada Lovelace born?

Question: {prompt}
Draft answer: {baseline}
Verification questions:"""
"""Plan: the question and the baseline in, a numbered list of questions out (CoVe step 2).
The baseline is needed here (the questions are about its claims) and nowhere in step 3.
The example's questions name no object a small model could copy into a wrong question
(an earlier example's "Analytical Engine" came back in questions about Marie Curie), and
without an example SmolLM2-135M listed the draft's sentences instead of questions."""

ANSWER_TEMPLATE = """\
Answer the question with a short factual answer (one sentence).

Question: {question}"""
"""Factored execution (CoVe step 3): one fresh prompt per question, with neither the
baseline nor the other questions in it, so the answer cannot copy the baseline's errors.
Retrieved passages, when used, are written into it (`EWE.prompt_with_passages`) or go in memory."""

CHECK_TEMPLATE = """\
Does the claim agree with the verified answer? Reply with one word: Yes or No.

Claim: {claim}
Question: {question}
Verified answer: {answer}"""
"""Cross-check (the "revise" in factor+revise): one baseline claim against one verified
answer, as a yes/no question, the simplest judgement a small model can give reliably."""

REVISE_TEMPLATE = """\
Rewrite the draft answer to the question so that it agrees with the verified facts. \
Correct or remove every claim listed under "Inconsistencies", keep the rest. Write only \
the revised answer.

Question: {prompt}
Draft answer: {baseline}

Verified facts:
{facts}

Inconsistencies:
{inconsistencies}"""
"""Final response (CoVe step 4): the prompt, the baseline, every verified question/answer
pair and the inconsistencies the cross-check found, so the rewrite knows what to change."""

FALLBACK_QUESTION = "Is it true that {claim}?"
"""When no list can be parsed from the plan: one question per baseline sentence."""


def plan_prompt(prompt: str, baseline: str) -> str:
    return PLAN_TEMPLATE.format(prompt=prompt.strip(), baseline=baseline.strip())


def answer_prompt(question: str) -> str:
    return ANSWER_TEMPLATE.format(question=question.strip())


def check_prompt(claim: str, question: str, answer: str) -> str:
    return CHECK_TEMPLATE.format(claim=claim.strip(), question=question.strip(), answer=answer.strip() or "(no answer)")


def revise_prompt(prompt: str, baseline: str, pairs: list[dict]) -> str:
    """`pairs`: dicts with question, answer, claim and judgement ("consistent", "inconsistent", "unclear")."""
    facts = "\n".join(f"Q: {p['question']}\nA: {p['answer'].strip() or '(no answer)'}" for p in pairs) or "(none)"
    bad = [p for p in pairs if p["judgement"] == "inconsistent"]
    inconsistencies = "\n".join(
        f'- "{p["claim"]}" disagrees with: {p["question"]} {p["answer"].strip()}' for p in bad
    ) or "(none found)"
    return REVISE_TEMPLATE.format(prompt=prompt.strip(), baseline=baseline.strip(), facts=facts,
                                  inconsistencies=inconsistencies)


# -- parsers --------------------------------------------------------------------------

def parse_questions(text: str) -> list[str]:
    """The items of the first numbered or bulleted list in `text` (`verify.text.list_items`);
    [] when there is none. An item written as a statement, not a question, becomes "Is it
    true that <statement>?" (small models list the draft's claims)."""
    return [item if item.endswith("?") else FALLBACK_QUESTION.format(claim=item.rstrip(".!;:").strip())
            for item in list_items(text)]


def fallback_questions(baseline: str) -> list[tuple[str, str]]:
    """(question, sentence) for every sentence of the baseline: "Is it true that <sentence>?"."""
    out = []
    for sentence in split_sentences(baseline):
        claim = sentence.strip().rstrip(".!?;:").strip()
        if claim:
            out.append((FALLBACK_QUESTION.format(claim=claim), sentence.strip()))
    return out


_LABEL = label_pattern("revised answer", "revised response", "draft answer", "final answer", "answer")
_NEXT_BLOCK = block_pattern("q", "a", "question", "draft answer", "verified facts", "verified answer", "inconsistencies",
                            "claim")


_PLACEHOLDER = re.compile(r"^[ \t]*\((?:none found|none|no answer)\)[ \t]*$\n?", re.IGNORECASE | re.MULTILINE)


def strip_label(text: str) -> str:
    """The response without a leading label the model echoed ("Revised answer:", "Draft answer:"),
    without what follows when it goes on with a block of the prompt's pattern ("Q: ... A:
    ...", "Inconsistencies:"): one in five of SmolLM2-135M's revisions of bios went on so, and
    without the prompt's placeholders ("(none found)"). A reply that opens with such a block
    holds no answer: ""."""
    kept = until_block("\n" + text_strip_label(text, _LABEL), _NEXT_BLOCK)[1:]
    return _PLACEHOLDER.sub("", kept).rstrip()


_JUDGEMENT_WORDS = {
    "yes": "consistent", "consistent": "consistent", "agrees": "consistent", "agree": "consistent",
    "true": "consistent", "correct": "consistent", "supported": "consistent",
    "no": "inconsistent", "inconsistent": "inconsistent", "disagrees": "inconsistent", "disagree": "inconsistent",
    "false": "inconsistent", "incorrect": "inconsistent", "contradicts": "inconsistent", "unsupported": "inconsistent",
}


def parse_judgement(text: str) -> str:
    """"consistent", "inconsistent", or "unclear" when no verdict word comes first.
    "not consistent" / "does not agree" read as inconsistent."""
    words = re.findall(r"[a-z]+", text.lower())
    for i, w in enumerate(words):
        if w in _JUDGEMENT_WORDS:
            label = _JUDGEMENT_WORDS[w]
            if label == "consistent" and w != "yes" and i > 0 and words[i - 1] in ("not", "doesn", "don", "t"):
                return "inconsistent"
            return label
    return "unclear"
