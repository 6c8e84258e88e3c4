"""ITA, Iterative Tree Analysis (Huang et al., 2024), as a checker backend (`checker.backend:
ita`): each claim becomes the root of a verification tree.

- Verify: the node's claim is judged by a base backend (`checker.ita_base`) against evidence
  retrieved for it: supported -> accept, unsupported -> reject, not enough evidence ->
  unsubstantiated (section 3.2's delta).
- Span: an unsubstantiated node above `checker.ita_max_depth` is decomposed into at most
  `checker.ita_max_children` simpler, self-contained sub-claims (the LLM with
  `checker.ita_span: llm`, eq. 2-3, falling back to the rules when its reply holds no list;
  the rules alone with `rules`: the clause splitter, and for a single clause its details one at
  a time, ewe/verify/details.py), each retrieved for and verified in turn (top-down).
- An accepted node is split too with `checker.ita_span_accepted`, or when its base score is below
  `checker.ita_unsure_below` (an unsure accept); a rejected sub-claim then rejects it.
- Consolidate (bottom-up, eq. 4): a node its own evidence left unsubstantiated is rejected
  when a sub-claim is rejected, accepted when every sub-claim is accepted, and otherwise
  stays unsubstantiated. The paper asks an LLM to consolidate; here the rule above does,
  so that a small generator cannot overturn its children's verdicts (an LLM consolidator is
  not implemented).

Each claim's Verdict carries the root's state as its label, the reason and the references
of the nodes that decided it, and the whole tree in `details["tree"]` (claim, state,
reason, references, children). Without an evidence source (evidence given by the caller),
sub-claims are judged against their parent's evidence.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from .protocols import LLM, Checker, EvidenceSource
from .text import list_items
from .types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Claim, Evidence, Verdict

ACCEPT, REJECT, UNSUBSTANTIATED = "accept", "reject", "unsubstantiated"
_STATE_OF_LABEL = {SUPPORTED: ACCEPT, UNSUPPORTED: REJECT, NOT_ENOUGH_EVIDENCE: UNSUBSTANTIATED}
_LABEL_OF_STATE = {v: k for k, v in _STATE_OF_LABEL.items()}

SPAN_TEMPLATE = """\
Break the claim into simpler facts that must all be true for the claim to be true. Write \
each fact as a full sentence that names its subject, on its own numbered line.

Example
Claim: Marie Curie won the Nobel Prize in Physics in 1903 with her husband.
Facts:
1. Marie Curie won the Nobel Prize in Physics.
2. Marie Curie won the Nobel Prize in 1903.
3. Marie Curie shared the Nobel Prize with her husband.

Claim: {claim}
Facts:"""
"""M_span (eq. 2-3): one claim in, its sub-claims out, self-contained as FActScore asks."""

def parse_sub_claims(text: str) -> list[str]:
    """The items of the first numbered or bulleted list in `text` as sentences; [] when none."""
    return [item if item.endswith((".", "!", "?")) else item + "." for item in list_items(text, min_chars=8)]


@dataclass
class TreeNode:
    """One verified claim of the tree: v* = {Claim, State, Reason, Ref} plus its children."""

    claim: str
    depth: int
    state: str
    reason: str
    references: list[Evidence]
    verdict: Verdict
    children: list["TreeNode"] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"claim": self.claim, "depth": self.depth, "state": self.state, "reason": self.reason,
                "references": [{**e.cite(), "text": e.text} for e in self.references],
                "children": [c.to_dict() for c in self.children]}

    def render(self) -> str:
        """One line: the node's state and claim, then its children's in brackets."""
        inner = "; ".join(c.render() for c in self.children)
        return f"[{self.state}] {self.claim}" + (f" <- ({inner})" if inner else "")


class TreeChecker:
    """The ITA backend: verifies each claim through a tree of sub-claims (module docstring)."""

    def __init__(self, base: Checker, evidence: Optional[EvidenceSource] = None, llm: Optional[LLM] = None,
                 max_depth: int = 2, max_children: int = 3, k: int = 3, span_accepted: bool = False,
                 unsure_below: float = 0.0):
        if max_depth < 0 or max_children < 1 or k < 1:
            raise ValueError(f"max_depth >= 0, max_children >= 1 and k >= 1 needed (got {max_depth}, {max_children}, {k})")
        self.base, self.evidence, self.llm = base, evidence, llm
        self.max_depth, self.max_children, self.k = max_depth, max_children, k
        self.span_accepted = span_accepted
        self.unsure_below = unsure_below  # an accept scored below this is split like an unsubstantiated node
        self.name = f"ita({getattr(base, 'name', type(base).__name__)})"

    # -- spanning ---------------------------------------------------------------------------

    def sub_claims(self, claim: str) -> tuple[list[str], str]:
        """The claim's sub-claims (without the claim itself), and how they were found: by the
        LLM, or by the rule-based clause splitter when there is no LLM or its reply holds no list
        (SmolLM2-135M mostly repeats the claim)."""
        found, how = [], "rules"
        if self.llm is not None:
            found = parse_sub_claims(self.llm(SPAN_TEMPLATE.format(claim=claim.strip())))
            how = "llm" if found else "rules, the llm wrote no list"
        own = " ".join(claim.lower().split())
        if not found:
            from .claims import RuleClaimExtractor
            from .details import detail_sub_claims

            found = [c.text for c in RuleClaimExtractor().extract(claim).claims]
            if all(" ".join(s.lower().split()) == own for s in found):
                found = detail_sub_claims(claim, self.max_children)  # one clause: its details one at a time
        return [s for s in found if " ".join(s.lower().split()) != own][: self.max_children], how

    def _search(self, claim: str, fallback: list[Evidence]) -> list[Evidence]:
        if self.evidence is None:
            return list(fallback)
        return list(self.evidence.search([claim], self.k)[0])

    # -- verify, span, consolidate -------------------------------------------------------------

    def _verify(self, claim: Claim, evidence: list[Evidence], depth: int) -> TreeNode:
        [verdict] = self.base.check_claims([claim], [evidence])
        state = UNSUBSTANTIATED if verdict.error else _STATE_OF_LABEL[verdict.label]
        reason = (f"base backend failed: {verdict.error}" if verdict.error else
                  verdict.rationale or f"{verdict.label} by {getattr(self.base, 'name', 'the base backend')}")
        node = TreeNode(claim.text, depth, state, reason, verdict.evidence[:1] if state != UNSUBSTANTIATED else [],
                        verdict)
        spans = state == UNSUBSTANTIATED or (state == ACCEPT and (self.span_accepted or verdict.score < self.unsure_below))
        if not spans or depth >= self.max_depth:
            return node
        subs, how = self.sub_claims(claim.text)
        for text in subs:
            node.children.append(self._verify(Claim(text, claim.source), self._search(text, evidence), depth + 1))
        if state == ACCEPT:
            self._veto(node)
        else:
            self._consolidate(node, how)
        return node

    @staticmethod
    def _veto(node: TreeNode) -> None:
        """An accepted claim whose details were verified too: a rejected detail rejects it (a claim
        matching its passage on most words can still hold one wrong date), else it stays accepted."""
        rejected = [c for c in node.children if c.state == REJECT]
        if rejected:
            node.state = REJECT
            node.reason = "sub-claim rejected: " + "; ".join(c.claim for c in rejected)
            node.references = [e for c in rejected for e in c.references][:3]

    @staticmethod
    def _consolidate(node: TreeNode, how: str) -> None:
        kids = node.children
        if not kids:
            node.reason = f"{node.reason}; no sub-claims found ({how})"
            return
        rejected = [c for c in kids if c.state == REJECT]
        if rejected:
            node.state = REJECT
            node.reason = "sub-claim rejected: " + "; ".join(c.claim for c in rejected)
            node.references = [e for c in rejected for e in c.references][:3]
        elif all(c.state == ACCEPT for c in kids):
            node.state = ACCEPT
            node.reason = f"all {len(kids)} sub-claims accepted"
            node.references = [e for c in kids for e in c.references][:3]
        else:
            open_ = sum(c.state == UNSUBSTANTIATED for c in kids)
            node.reason = f"{node.reason}; {open_} of {len(kids)} sub-claims unsubstantiated"

    def check_claims(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> list[Verdict]:
        out = []
        for claim, evidence in zip(claims, evidence_per_claim):
            root = self._verify(claim, list(evidence), 0)
            base = root.verdict
            score = base.score if not root.children else (
                sum(c.state == ACCEPT for c in root.children) / len(root.children))
            undecided_error = base.error if root.state == UNSUBSTANTIATED else None  # nothing judged it: say why
            out.append(Verdict(claim, _LABEL_OF_STATE[root.state], score, root.references or list(evidence)[:1],
                               self.name, error=undecided_error, rationale=f"{root.reason} | tree: {root.render()}",
                               details={"tree": root.to_dict()}))
        return out
