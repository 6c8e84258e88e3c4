"""The trace of one controlled generation: every pause, retrieval, check, backtrack and
memory change as plain JSON-ready dicts, in the order they happened.

Each event has `type`, `step` (decoding steps so far, discarded tokens included) and
`t` (seconds since the prompt started). `render()` prints it for a person.
"""
from __future__ import annotations

import json
import textwrap
import time

EVENT_TYPES = ("retrieve", "pause", "check", "candidates", "backtrack", "retries_exhausted", "memory", "finish", "error",
               # the CoVe baseline's stages (ewe/methods/cove.py)
               "cove_baseline", "cove_questions", "cove_answer", "cove_check", "cove_revise",
               # Streaming-VR and Full-VR (ewe/methods/verify_refine.py)
               "vr_answer", "vr_refine",
               # A2R (ewe/methods/a2r.py)
               "a2r_answer", "a2r_assess", "a2r_feedback",
               # a sentence that added nothing: Streaming-VR's check (ewe/methods/verify_refine.py), and a
               # whole-answer method's dropped sentences (ewe/methods/calls.py without_repeats)
               "repeats", "repeats_dropped",
               # a sentence that is no answer (ewe/verify/degenerate.py): EWE's loop drops an unfinished last
               # one, a whole-answer method any (ewe/methods/calls.py)
               "no_answer_dropped",
               # EWE's loop: candidate rewrites spent controller.rewrite_budget; the checker's passages about
               # another subject kept out of the feedback pool (controller/memory_refresh.py)
               "rewrite_budget", "feedback_off_subject",
               # EWE's loop: the prompt's subject article pinned in memory (or not found), and the plain
               # sentence that answers a prompt whose subject the datastore lacks (controller/memory_refresh.py)
               "subject", "subject_missing",
               # EWE's loop: an end of text refused while the pinned article has unstated sentences
               # (controller/controlled_run.py _refuse_end, controller/article_use.py)
               "end_refused",
               # PrefixNLI (ewe/methods/prefixnli.py): a step where the judge changed the top token; no source
               "prefix_guide", "prefix_unguided")


class Trace:
    def __init__(self):
        self.events: list[dict] = []
        self._t0 = time.perf_counter()
        self._step = 0

    @property
    def step(self) -> int:
        """Decoding steps so far (discarded tokens included): the step the next event records."""
        return self._step

    def step_to(self, step: int) -> None:
        self._step = step

    def advance(self, steps: int) -> None:
        self._step += steps

    def add(self, type: str, **data) -> dict:
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown trace event type {type!r}")
        event = {"type": type, "step": self._step, "t": round(time.perf_counter() - self._t0, 4), **data}
        self.events.append(event)
        return event

    def count(self, type: str, **match) -> int:
        return sum(1 for e in self.events if e["type"] == type and all(e.get(k) == v for k, v in match.items()))

    def to_list(self) -> list[dict]:
        return json.loads(json.dumps(self.events))  # a deep, JSON-proof copy

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.events, ensure_ascii=False, **kwargs)


def check_event(check) -> dict:
    """A fact-check (verify.SentenceCheck) as the data of a "check" event."""
    return {
        "sentence": check.sentence,
        "verdict": check.verdict,
        "needs_rewrite": check.needs_rewrite,
        "extractor": check.extractor,
        "extraction_fallback": check.extraction_fallback,
        "verdicts": [
            {
                "claim": v.claim.text,
                "label": v.label,
                "score": round(v.score, 4),
                "error": v.error,
                "rationale": v.rationale,
                "evidence": [{**e.cite(), "text": e.text} for e in v.evidence[:2]],
                **({"details": v.details} if v.details else {}),  # the ITA backend's tree of sub-claims
            }
            for v in check.verdicts
        ],
        "seconds": {k: round(v, 4) for k, v in check.timings.items()},
    }


def _tree_lines(node: dict, width: int, lead: str, depth: int = 0) -> list[str]:
    """An ITA claim tree (verify.tree's `to_dict`), a node a line, children indented."""
    pad = lead if depth == 0 else " " * (len(lead) + 2 * depth)
    lines = textwrap.wrap(f"[{node['state']}] {node['claim']}", width, initial_indent=pad,
                          subsequent_indent=" " * (len(pad) + 2))
    for child in node.get("children", []):
        lines += _tree_lines(child, width, lead, depth + 1)
    return lines


def render(events: list[dict], width: int = 100) -> str:
    """A readable account of a trace (for examples and `ewe run --show-trace`)."""
    out = []

    def say(head: str, body: str = "", indent: str = "      "):
        out.append(head)
        if body:
            out.append(textwrap.fill(body, width, initial_indent=indent, subsequent_indent=indent))

    for e in events:
        at = f"[step {e['step']:>4}]"
        kind = e["type"]
        if kind == "retrieve":
            titles = ", ".join(f"{h['title']} ({h['score']:.2f})" for h in e["hits"]) or "nothing above the threshold"
            where = "into the prompt as text" if e.get("placement") == "prompt" else f"+{len(e['added'])} unit(s)"
            say(f"{at} retrieve ({e['why']}): {titles}; {where}", f"query: {e['query']}")
        elif kind == "pause":
            say(f"{at} pause for {e['kind']}: {e['reason']}", e["sentence"])
        elif kind == "check":
            verdicts = "; ".join(
                f"{v['label']}{' (error)' if v.get('error') else ''}: {v['claim']}" for v in e["verdicts"]
            ) or "no claims"
            mark = "REWRITE" if e["needs_rewrite"] else "ok"
            say(f"{at} check -> {mark}: {e['sentence']}", verdicts)
            for v in e["verdicts"]:
                if (v.get("details") or {}).get("tree"):
                    out.extend(_tree_lines(v["details"]["tree"], width, "      tree: "))
        elif kind == "candidates":
            say(f"{at} {e['decoded']} candidate rewrite(s), round {e['round']} (feedback in {e['placement']}): "
                + (f"kept: {e['chosen']}" if e["chosen"] else "none passed"))
            for c in e["candidates"]:
                mark = c.get("no_answer") or c["verdict"]
                if mark == "supported" and c.get("new_supported") == 0:
                    mark = "supported, adds no claim the answer lacks"  # why a supported candidate is not kept
                out.append(textwrap.fill(f"[{mark}] {c['text']}", width, initial_indent="        ",
                                         subsequent_indent="          "))
        elif kind == "backtrack":
            say(f"{at} backtrack #{e['attempt']} ({e['why']}): removed {e['removed_tokens']} tokens",
                f"removed: {e['removed_text'].strip()}")
            for f in e.get("feedback", []):
                out.append(textwrap.fill(f"feedback unit [{f['form']}]: {f['text']}", width,
                                         initial_indent="        ", subsequent_indent="          "))
        elif kind == "retries_exhausted":
            say(f"{at} retries exhausted, {e['policy']}: {e['kept'] or '(sentence dropped)'}")
        elif kind == "subject":
            say(f"{at} subject {e['name']}: " + (f"article {e['title']} ({e['how']}), {len(e['added'])} chunk(s) pinned"
                                                 if e["found"] else "no article in the datastore"))
        elif kind == "subject_missing":
            say(f"{at} nothing about {e['name']} in the datastore: answered", e["text"])
        elif kind == "end_refused":
            say(f"{at} end refused ({e['refusal']} of {e['of']}): {len(e['unstated'])} of the article's "
                f"{e['of_sentences']} sentences unstated, put in focus", " ".join(e["unstated"]))
        elif kind == "memory":
            pools = "; ".join(f"{p}: {len(units)}" for p, units in e["pools"].items())
            say(f"{at} memory ({e['why']}) -> {pools}")
        elif kind == "finish":
            say(f"{at} finish: {e['reason']}; {e['new_tokens']} tokens kept of {e['decoded_tokens']} decoded")
        elif kind == "error":
            say(f"{at} error in {e['where']}: {e['message']}")
        elif kind == "cove_baseline":
            say(f"{at} CoVe baseline ({e['tokens']} tokens, {e['finish_reason']})", e["text"].strip())
        elif kind == "cove_questions":
            how = "fallback: one per baseline sentence" if e["fallback"] else "parsed from the plan"
            dropped = f", {e['dropped']} over cove.max_questions dropped" if e["dropped"] else ""
            say(f"{at} CoVe plan: {len(e['questions'])} question(s), {how}{dropped}")
            for i, q in enumerate(e["questions"], 1):
                out.append(textwrap.fill(f"{i}. {q}", width, initial_indent="      ", subsequent_indent="         "))
        elif kind == "cove_answer":
            titles = ", ".join(p.get("title") or "given" for p in e["passages"])
            source = f" [{e['placement']}: {titles or 'no passage'}]" if e["placement"] else ""
            say(f"{at} CoVe answer #{e['index']}{source}: {e['question']}", f"A: {e['answer']}")
        elif kind == "cove_check":
            say(f"{at} CoVe check #{e['index']} -> {e['judgement']}: {e['claim']}",
                f"Q: {e['question']} A: {e['answer']}")
        elif kind == "cove_revise":
            head = (f"kept the baseline ({e['skipped']})" if e["skipped"]
                    else f"revised ({len(e['inconsistent'])} inconsistency(ies), {e['tokens']} tokens)")
            say(f"{at} CoVe {head}", e["text"].strip())
        elif kind == "vr_answer":
            say(f"{at} answer generated ({e['tokens']} tokens, {e['finish_reason']})", e["text"].strip())
        elif kind == "vr_refine":
            head = "refiner gave no sentence: original kept" if e["kept_original"] else f"refined ({e['tokens']} tokens)"
            say(f"{at} {e['scope']} {head}", e["refined"].strip())
        elif kind == "a2r_answer":
            say(f"{at} A2R {e['kind']} answer #{e['iteration']} ({e['tokens']} tokens)", e["text"].strip())
        elif kind == "a2r_assess":
            which = "returned answer" if e.get("final") else f"answer #{e['iteration']}"
            say(f"{at} A2R assess {which}: correctness {e['correctness']:.2f}, citation recall "
                f"{e['citation_recall']:.2f}, precision {e['citation_precision']:.2f} (mean {e['mean']:.2f})")
        elif kind == "a2r_feedback":
            say(f"{at} A2R feedback #{e['iteration']} ({e['source']})", e["text"].strip())
        elif kind == "repeats":
            why = "; ".join(r["why"] for r in e["repeats"])
            say(f"{at} repeats ({why}): {e['sentence']}")
        elif kind == "rewrite_budget":
            say(f"{at} rewrite budget spent: {e['spent']} candidate tokens of {e['budget']}; no more candidates")
        elif kind == "feedback_off_subject":
            say(f"{at} feedback kept out of memory (about another subject): {', '.join(e['titles'])}")
        elif kind == "no_answer_dropped":
            which = "the unfinished last sentence" if e.get("cut_off") else "a sentence that is no answer"
            if e.get("kept"):
                say(f"{at} dropped the passage's head that opened a sentence ({e['reason']}); kept", e["kept"])
            else:
                say(f"{at} dropped {which} ({e['reason']})", e["sentence"])
        elif kind == "repeats_dropped":
            say(f"{at} dropped {len(e['dropped'])} sentence(s) that add nothing to those before them")
            for d in e["dropped"]:
                why = "; ".join(r["why"] for r in d["repeats"])
                out.append(textwrap.fill(f"[{why}] {d['sentence']}", width, initial_indent="        ",
                                         subsequent_indent="          "))
    return "\n".join(out)
