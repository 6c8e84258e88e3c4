"""ITA as a checker backend (ewe/verify/tree.py): verify, span into sub-claims, consolidate."""
from __future__ import annotations

import json

import pytest

from ewe.config import ConfigError, EWEConfig
from ewe.controller.trace import check_event, render
from ewe.verify import FactChecker, StaticEvidenceSource
from ewe.checker_factory import build_fact_checker
from ewe.verify.tree import TreeChecker, parse_sub_claims
from ewe.verify.types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Claim, Evidence, Verdict

ROOT = "Marie Curie won the Nobel Prize in Physics in 1903 with her husband."
SUBS = ["Marie Curie won the Nobel Prize in Physics.", "Marie Curie won the Nobel Prize in 1903.",
        "Marie Curie shared the prize with her husband."]


class LabelBackend:
    """Judges each claim by a fixed table (default: not enough evidence); records what it saw."""

    name = "table"

    def __init__(self, labels: dict[str, str], errors: dict[str, str] | None = None):
        self.labels, self.errors = labels, errors or {}
        self.seen: list[tuple[str, list[str]]] = []

    def check_claims(self, claims, evidence_per_claim):
        out = []
        for c, ev in zip(claims, evidence_per_claim):
            self.seen.append((c.text, [e.text for e in ev]))
            label = self.labels.get(c.text, NOT_ENOUGH_EVIDENCE)
            out.append(Verdict(c, label, 0.9 if label == SUPPORTED else 0.1, list(ev)[:1], self.name,
                               error=self.errors.get(c.text), rationale=f"table says {label}"))
        return out


class Search:
    """One passage per query, named after it."""

    def __init__(self):
        self.queries: list[str] = []

    def search(self, queries, k):
        self.queries += queries
        return [[Evidence(f"about: {q}", title=f"T:{q[:12]}")] for q in queries]


def span_llm(replies: dict[str, str]):
    calls = []

    def llm(prompt: str) -> str:
        claim = prompt.rsplit("Claim: ", 1)[1].split("\n", 1)[0]
        calls.append(claim)
        return replies.get(claim, "I cannot split it.")

    llm.calls = calls
    return llm


def listed(items):
    return "\n".join(f"{i}. {s}" for i, s in enumerate(items, 1))


def run(tree: TreeChecker, claim=ROOT):
    [v] = tree.check_claims([Claim(claim, claim)], [[Evidence("root passage", "Root")]])
    return v


def test_a_claim_its_evidence_decides_is_not_spanned():
    base = LabelBackend({ROOT: SUPPORTED})
    llm = span_llm({ROOT: listed(SUBS)})
    v = run(TreeChecker(base, Search(), llm))
    assert v.label == SUPPORTED and llm.calls == [] and v.details["tree"]["children"] == []
    assert v.details["tree"]["state"] == "accept"


def test_a_rejected_sub_claim_rejects_an_unsubstantiated_parent():
    base = LabelBackend({SUBS[0]: SUPPORTED, SUBS[1]: UNSUPPORTED, SUBS[2]: SUPPORTED})
    search = Search()
    v = run(TreeChecker(base, search, span_llm({ROOT: listed(SUBS)})))
    assert v.label == UNSUPPORTED and v.backend == "ita(table)"
    assert "sub-claim rejected: Marie Curie won the Nobel Prize in 1903." in v.rationale
    tree = v.details["tree"]
    assert [(c["claim"], c["state"]) for c in tree["children"]] == [
        (SUBS[0], "accept"), (SUBS[1], "reject"), (SUBS[2], "accept")]
    assert search.queries == SUBS  # each sub-claim gets its own retrieval
    assert dict(base.seen)[SUBS[1]] == [f"about: {SUBS[1]}"]
    assert v.evidence[0].text == f"about: {SUBS[1]}"  # the reference that decided it
    json.dumps(v.to_dict())


def test_all_sub_claims_accepted_accept_the_parent_and_open_ones_leave_it_unsubstantiated():
    accepted = run(TreeChecker(LabelBackend(dict.fromkeys(SUBS, SUPPORTED)), Search(), span_llm({ROOT: listed(SUBS)})))
    assert accepted.label == SUPPORTED and "all 3 sub-claims accepted" in accepted.rationale
    assert accepted.score == 1.0
    partly = run(TreeChecker(LabelBackend({SUBS[0]: SUPPORTED}), Search(), span_llm({ROOT: listed(SUBS)}),
                             max_depth=1))
    assert partly.label == NOT_ENOUGH_EVIDENCE and "2 of 3 sub-claims unsubstantiated" in partly.rationale
    assert partly.score == pytest.approx(1 / 3)


def test_the_tree_grows_down_to_max_depth_with_at_most_max_children():
    deep = "Marie Curie won the Nobel Prize in Physics in 1903."
    grandchildren = ["Marie Curie won a Nobel Prize.", "The Nobel Prize in Physics of 1903 went to Marie Curie."]
    llm = span_llm({ROOT: listed([deep] + SUBS), deep: listed(grandchildren)})
    base = LabelBackend({grandchildren[0]: SUPPORTED, grandchildren[1]: UNSUPPORTED})
    v = run(TreeChecker(base, Search(), llm, max_depth=2, max_children=2))
    tree = v.details["tree"]
    assert [c["claim"] for c in tree["children"]] == [deep, SUBS[0]]  # max_children = 2
    assert [g["state"] for g in tree["children"][0]["children"]] == ["accept", "reject"]
    assert tree["children"][0]["state"] == "reject" and v.label == UNSUPPORTED
    assert tree["children"][1]["children"] == []  # spanned, but the LLM could not split it
    assert deep in llm.calls and SUBS[0] in llm.calls and grandchildren[0] not in llm.calls  # depth 2: leaves
    flat = run(TreeChecker(LabelBackend({}), Search(), span_llm({ROOT: listed(SUBS)}), max_depth=0))
    assert flat.details["tree"]["children"] == []


def test_an_unsplittable_claim_stays_unsubstantiated_and_says_why():
    v = run(TreeChecker(LabelBackend({}), Search(), span_llm({}), max_depth=1), claim="Marie Curie was a chemist.")
    assert v.details["tree"]["children"] == []  # one clause, no detail: nothing to split into
    assert v.label == NOT_ENOUGH_EVIDENCE and "no sub-claims found (rules, the llm wrote no list)" in v.rationale
    split = run(TreeChecker(LabelBackend({}), Search(), span_llm({}), max_depth=1),
                claim="Marie Curie was a physicist and she won two Nobel prizes.")
    assert len(split.details["tree"]["children"]) == 2
    # one clause with details: each detail on its own (ewe/verify/details.py)
    details = run(TreeChecker(LabelBackend({}), Search(), span_llm({}), max_depth=1))
    assert [c["claim"] for c in details.details["tree"]["children"]] == [
        "Marie Curie won the Nobel Prize in Physics in 1903.", "Marie Curie won the Nobel Prize in Physics with her husband."]


def test_an_accepted_claim_is_rejected_by_a_wrong_detail_only_when_asked():
    wrong = "Marie Curie won the Nobel Prize in Physics with her husband."
    base = LabelBackend({ROOT: SUPPORTED, wrong: UNSUPPORTED})
    paper = run(TreeChecker(base, Search(), None, max_depth=1))
    assert paper.label == SUPPORTED and paper.details["tree"]["children"] == []  # the paper: accept ends the branch
    details = run(TreeChecker(base, Search(), None, max_depth=1, span_accepted=True))
    assert details.label == UNSUPPORTED and details.rationale.startswith(f"sub-claim rejected: {wrong}")
    fine = run(TreeChecker(LabelBackend({ROOT: SUPPORTED}), Search(), None, max_depth=1, span_accepted=True))
    assert fine.label == SUPPORTED and len(fine.details["tree"]["children"]) == 2  # verified, kept


def test_an_unsure_accept_is_split_and_a_sure_one_is_not():
    """`unsure_below`: only an accept scored below it has its details verified (the table scores an
    accept 0.9)."""
    wrong = "Marie Curie won the Nobel Prize in Physics with her husband."
    base = LabelBackend({ROOT: SUPPORTED, wrong: UNSUPPORTED})
    unsure = run(TreeChecker(base, Search(), None, max_depth=1, unsure_below=0.95))
    assert unsure.label == UNSUPPORTED and unsure.rationale.startswith(f"sub-claim rejected: {wrong}")
    sure = run(TreeChecker(base, Search(), None, max_depth=1, unsure_below=0.9))
    assert sure.label == SUPPORTED and sure.details["tree"]["children"] == []
    cfg = EWEConfig.build({"checker": {"backend": "ita", "ita_unsure_below": 0.9, "ita_span": "rules"}}).checker
    assert build_fact_checker(cfg, StaticEvidenceSource(["x"])).checker.unsure_below == 0.9
    with pytest.raises(ConfigError, match="ita_unsure_below"):
        EWEConfig.build({"checker": {"ita_unsure_below": 1.5}})


def test_sub_claims_repeating_the_claim_are_dropped_and_rules_split_without_an_llm():
    tree = TreeChecker(LabelBackend({}), Search(), span_llm({ROOT: listed([ROOT, SUBS[0]])}))
    assert tree.sub_claims(ROOT) == ([SUBS[0]], "llm")
    rules = TreeChecker(LabelBackend({}), Search(), None)
    subs, how = rules.sub_claims("Marie Curie was a physicist and she won two Nobel prizes.")
    assert how == "rules" and len(subs) == 2


def test_without_an_evidence_source_sub_claims_are_judged_on_the_parents_evidence():
    base = LabelBackend(dict.fromkeys(SUBS, SUPPORTED))
    run(TreeChecker(base, None, span_llm({ROOT: listed(SUBS)})))
    assert all(ev == ["root passage"] for _, ev in base.seen)


def test_a_failing_base_backend_is_reported_when_nothing_decides():
    base = LabelBackend({}, errors={ROOT: "backend failed: TimeoutError"})
    v = run(TreeChecker(base, Search(), span_llm({})))
    assert v.label == NOT_ENOUGH_EVIDENCE and v.error == "backend failed: TimeoutError"
    assert "base backend failed" in v.rationale


def test_parse_sub_claims():
    text = "Facts:\n1. Marie Curie was Polish\n2) Marie Curie was a chemist.\n- marie curie was a chemist.\nDone.\n3. Late"
    assert parse_sub_claims(text) == ["Marie Curie was Polish.", "Marie Curie was a chemist."]
    assert parse_sub_claims("no list here") == []


def test_fact_checker_with_the_tree_backend_checks_sentences():
    base = LabelBackend({SUBS[1]: UNSUPPORTED})
    checker = FactChecker(TreeChecker(base, None, span_llm({"Marie Curie won the Nobel Prize in Physics in 1903 "
                                                            "with her husband.": listed(SUBS)})),
                          evidence=StaticEvidenceSource(["Marie Curie shared the 1903 prize."]))
    check = checker.check_sentence(ROOT)
    assert check.needs_rewrite and check.verdicts[0].details["tree"]["state"] == "reject"


def test_the_trace_carries_and_renders_the_tree():
    base = LabelBackend({SUBS[1]: UNSUPPORTED})
    checker = FactChecker(TreeChecker(base, None, span_llm({ROOT: listed(SUBS)}), max_depth=1),
                          evidence=StaticEvidenceSource(["Marie Curie shared the 1903 prize."]))
    event = check_event(checker.check_sentence(ROOT))
    tree = event["verdicts"][0]["details"]["tree"]
    assert json.loads(json.dumps(event)) == event  # JSON-ready, as trace events must be
    lines = render([{"type": "check", "step": 3, **event}]).splitlines()
    assert lines[2] == f"      tree: [reject] {ROOT}"
    assert [line.strip() for line in lines[3:]] == [f"[{c['state']}] {c['claim']}" for c in tree["children"]]
    assert lines[3].startswith(" " * 14 + "[")  # children indented under their parent


def test_configuration_builds_the_tree_backend():
    cfg = EWEConfig.build({"checker": {"backend": "ita", "ita_span": "rules", "ita_max_depth": 1,
                                       "ita_max_children": 2}}).checker
    fc = build_fact_checker(cfg, StaticEvidenceSource(["x"]))
    assert isinstance(fc.checker, TreeChecker) and fc.checker.name == "ita(judge:minilm-cross)"
    assert (fc.checker.max_depth, fc.checker.max_children, fc.checker.llm) == (1, 2, None)
    with pytest.raises(ConfigError, match="checker.nli_model"):
        EWEConfig.build({"checker": {"backend": "ita", "ita_base": "nli"}})
    with pytest.raises(ConfigError, match="http_base_url"):
        EWEConfig.build({"checker": {"backend": "ita", "llm": "http"}})  # sub-claims written over http


def test_the_contradiction_veto_wraps_the_judge_flat_and_at_each_node():
    from ewe.verify.alignment import AlignmentChecker
    from ewe.verify.veto import ContradictionVeto

    def built(**checker):
        return build_fact_checker(EWEConfig.build({"checker": checker}).checker, StaticEvidenceSource(["x"])).checker

    tree = built(backend="ita", ita_span="rules", veto="contradiction")
    assert isinstance(tree, TreeChecker) and isinstance(tree.base, ContradictionVeto)
    assert tree.name == "ita(judge:minilm-cross+veto)"
    assert isinstance(built(backend="judge", veto="contradiction"), ContradictionVeto)
    assert isinstance(built(backend="alignment", veto="contradiction"), AlignmentChecker)  # its own rules already
    assert not isinstance(built(backend="judge"), ContradictionVeto)
