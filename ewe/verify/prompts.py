"""VeriScore-style prompts (claim extraction, binary verification) and tolerant
parsers for their answers.

The wording follows VeriScore's (Song et al., 2024) instructions in short form, so
that a small generator can follow it; parsers accept the usual deviations (numbering
style, case, extra words) and return None when an answer cannot be read.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from .types import Evidence

EXTRACTION_TEMPLATE = """\
You are trying to verify how factual a piece of text is. Break the sentence marked \
between <SOS> and <EOS> into fine-grained facts that can each be checked against \
reliable world knowledge (for example Wikipedia). Leave out opinions, advice, stories, \
hypotheticals and other unverifiable content. Each fact describes one event or one \
state, with the time and place it needs. Refer to every entity by name, never by a \
pronoun; the other text is only context for resolving pronouns. Keep each fact to one \
sentence. Write each fact on its own line starting with "- ". If there is no \
verifiable fact, write "No verifiable claim."

Example
Text: Marie Curie was a physicist. <SOS>She was born in Warsaw in 1867 and won two Nobel Prizes.<EOS>
Facts:
- Marie Curie was born in Warsaw.
- Marie Curie was born in 1867.
- Marie Curie won two Nobel Prizes.

{question_line}Text: {context}<SOS>{sentence}<EOS>
Facts:
"""

VERIFICATION_TEMPLATE = """\
You need to judge whether a claim is supported or not by the knowledge below.

Supported: one or more passages directly support the claim, and no passage directly \
contradicts it. Every part of the claim must be supported.
Unsupported: the claim is not supported by the passages, or a passage contradicts it.

Knowledge:
{knowledge}

Claim: {claim}
Answer with one word, Supported or Unsupported, marked with ### signs, e.g. ###Supported###.
Answer:"""


def extraction_prompt(sentence: str, context: Optional[str] = None, question: Optional[str] = None) -> str:
    ctx = (context.strip() + " ") if context and context.strip() else ""
    q = f"Question: {question.strip()}\n" if question and question.strip() else ""
    return EXTRACTION_TEMPLATE.format(question_line=q, context=ctx, sentence=sentence.strip())


def format_knowledge(evidence: Sequence[Evidence], max_chars: int = 4000) -> str:
    lines, used = [], 0
    for i, e in enumerate(evidence, 1):
        line = f"[{i}] " + (f"{e.title}: " if e.title and not e.text.startswith(e.title) else "") + e.text.strip()
        if used + len(line) > max_chars and lines:
            break
        lines.append(line[:max_chars])
        used += len(line)
    return "\n".join(lines) if lines else "(no passages found)"


def verification_prompt(claim: str, evidence: Sequence[Evidence], max_chars: int = 4000) -> str:
    return VERIFICATION_TEMPLATE.format(knowledge=format_knowledge(evidence, max_chars), claim=claim.strip())


_ITEM = re.compile(r"^\s*(?:[-*•·]|\(?\d{1,2}[.):]|\(?[a-z][.)])\s+(.*\S)\s*$")
_NO_CLAIM = re.compile(r"\bno\s+verifiable\s+(?:claim|fact)s?\b", re.IGNORECASE)


def parse_claim_list(answer: str) -> Optional[list[str]]:
    """Claims from a bulleted/numbered answer; [] for "No verifiable claim"; None when
    the answer holds neither (malformed)."""
    if not answer or not answer.strip():
        return None
    items = []
    for line in answer.splitlines():
        m = _ITEM.match(line)
        if m:
            text = m.group(1).strip().strip('"').strip()
            if len(text.split()) >= 2 and not _NO_CLAIM.search(text):
                items.append(text)
        elif items and not line.strip():
            break  # the list ended; anything after is chatter
    if items:
        return items
    if _NO_CLAIM.search(answer):
        return []
    return None


_MARKED = re.compile(r"#+\s*(supported|unsupported|not\s+supported)\s*#+", re.IGNORECASE)
_WORDS = re.compile(r"\b(unsupported|not\s+supported|supported)\b", re.IGNORECASE)


def parse_verdict(answer: str) -> Optional[bool]:
    """True for Supported, False for Unsupported, None when neither can be read.

    A ###marked### answer wins; otherwise the first of the two words in the text
    (so "Supported. The claim is not unsupported..." reads as the model's first word).
    """
    if not isinstance(answer, str):
        return None
    m = _MARKED.search(answer) or _WORDS.search(answer)
    if not m:
        return None
    word = re.sub(r"\s+", " ", m.group(1).lower())
    return word == "supported"
