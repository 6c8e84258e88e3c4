"""Fact-checking feedback as memory units (EWE appendix D, table 4).

Forms: "refuting" (passages the checker used to judge a claim unsupported: they hold
the correct fact), "supporting" (passages that judged a claim supported), "instruction"
("Please refrain from including the following imprecise statements: (1) ...").
Each passage is its own unit, since a unit holds about one passage (M tokens); the
paper joins several with newlines into one message, which would truncate them here.
"""
from __future__ import annotations

from ..verify.types import SentenceCheck


def feedback_messages(check: SentenceCheck, forms: list[str], capacity: int) -> list[dict]:
    """At most `capacity` distinct messages, earlier forms first: [{"form", "text", "title"}]."""
    out, seen = [], set()
    for form in forms:
        if form == "instruction":
            items = [(check.feedback_instruction(), "")]
        else:
            items = [(e.text, e.title) for e in check.evidence_for(supported=(form == "supporting"))]
        for text, title in items:
            if text and text not in seen:
                seen.add(text)
                out.append({"form": form, "text": text, "title": title})
    return out[:capacity]
