"""A claim's details one at a time: "Marie Curie was born in 1880 in Warsaw." -> "Marie Curie was
born in 1880.", "Marie Curie was born in Warsaw."

ITA's trees (ewe/verify/tree.py) need sub-claims simpler than their parent, so that a judge that
cannot say which of four details is wrong can say it of one. The clause splitter (claims.py)
separates coordinated clauses; this separates the prepositional phrases that follow a clause's
verb (when, where, with whom, of what, as what), each kept with the clause's head. A phrase
whose preposition sits inside a name ("University of Paris", "Prize in Literature" after a
capitalised word) stays with its noun.
"""
from __future__ import annotations

import re

from .claims import WORD, first_verb, is_verb

# prepositions that open a detail of the predicate; "of" binds to the noun before it and never does
PREPOSITIONS = ("in", "on", "at", "from", "to", "with", "by", "for", "during", "after", "before", "since", "until",
                "as", "near", "between", "among", "under", "over", "into", "through", "throughout", "against")
_PREP = re.compile(r"\s(?:" + "|".join(PREPOSITIONS) + r")\s", re.IGNORECASE)
_NAME_AFTER = re.compile(r"\s[A-Z][\w'’.-]*\s*$")


def _name_continues(text: str, at: int) -> bool:
    """A preposition inside a title case name: "Nobel Prize in Physics", "Bank of ..."."""
    before, after = text[:at], text[at:].split(None, 2)
    return bool(_NAME_AFTER.search(before)) and len(after) > 1 and after[1][:1].isupper() and not after[1][:1].isdigit()


def _verb_group_end(text: str, end: int) -> int:
    """Where the verb group that ends at `end` ends: "was born", "has been elected"."""
    for m in WORD.finditer(text, end):
        if text[end:m.start()].strip() or not is_verb(m.group(0)):
            break
        end = m.end()
    return end


def detail_sub_claims(claim: str, most: int = 4) -> list[str]:
    """Sub-claims that together say what the claim says, each simpler: the clause's head with each
    of its trailing prepositional details alone; with one detail, the head without it and the verb
    with it ("Curie won the Nobel Prize in 1903" -> "Curie won the Nobel Prize.", "Curie won in
    1903."). [] when the claim has no detail to set apart."""
    body = claim.strip().rstrip(".!?").strip()
    verb = first_verb(body)
    if verb is None:
        return []
    cuts = [m.start() for m in _PREP.finditer(body, verb.end()) if not _name_continues(body, m.start())]
    # "from 1891 to 1894", "between A and B": one detail
    cuts = [c for i, c in enumerate(cuts)
            if not (i and body[c:].split(None, 1)[0].lower() in ("to", "until")
                    and body[cuts[i - 1]:].split(None, 1)[0].lower() == "from")]
    if not cuts:
        return []
    head = body[:cuts[0]].rstrip(" ,")
    if len(head.split()) < 2:
        return []
    phrases = [body[a:b].strip(" ,") for a, b in zip(cuts, cuts[1:] + [len(body)])]
    if len(phrases) == 1:
        core = body[:_verb_group_end(body, verb.end())]
        if core == head or len(core.split()) < 2:
            return []
        return [f"{head}.", f"{core} {phrases[0]}."]
    return [f"{head} {p}." for p in phrases if p][:most]
