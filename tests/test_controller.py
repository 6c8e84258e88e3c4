"""The controller loop, driven by a scripted model and a scripted fact-checker."""
from __future__ import annotations

import json

import pytest
from scripted import ScriptedChecker, scripted_model, text_script
from tiny import tiny_ewe, tiny_tokenizer

from ewe import EWE
from ewe.config import ConfigError, EWEConfig
from ewe.controller import SentenceTracker, render
from ewe.retrieval import Hit

PROMPT = "Tell me a bio of Marie Curie."
A, B_WRONG, B_RIGHT, C = (
    "Marie Curie was a physicist.",
    "She was born in Paris.",
    "She was born in Warsaw.",
    "She won two Nobel prizes.",
)


def fixed(text):
    return lambda units: text


def corrected_by_feedback(needs=1):
    """The bio with B_WRONG until `needs` memory units exist, then with B_RIGHT."""
    return lambda units: " ".join([A, B_RIGHT if units >= needs else B_WRONG, C])


def make(script, checker=None, datastore=None, max_new_tokens=120, checker_section=None, **controller):
    cfg = EWEConfig.build(
        {
            **({"checker": checker_section} if checker_section else {}),
            "memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
            "retrieval": {"source": "fake" if datastore is not None else None, "top_k": 2},
            "decoding": {"max_new_tokens": max_new_tokens},
            "controller": {"verify_trigger": "interval", "verify_interval": 4, **controller},
        }
    )
    return EWE(scripted_model(script), tiny_tokenizer(), cfg, datastore=datastore, fact_checker=checker)


def ids_of(text):
    return tiny_tokenizer()(text, add_special_tokens=False)["input_ids"]


def events(result, kind):
    return [e for e in result.trace if e["type"] == kind]


# -- sentence tracking ----------------------------------------------------------------------


def feed(tracker, text):
    done = []
    for t in ids_of(text):
        done += [s.text for s in tracker.append(t, -0.1, 0.5)]
    return done


def test_sentence_is_complete_only_once_the_next_begins():
    tr = SentenceTracker(tiny_tokenizer())
    assert feed(tr, "Dr. Smith was born in 1867.") == []
    assert feed(tr, " He") == ["Dr. Smith was born in 1867."]
    assert feed(tr, " was a doctor. She") == ["He was a doctor."]
    assert [s.text for s in tr.finish(complete=True)] == ["She"]


def test_sentence_token_spans_cover_the_text_and_truncate_back():
    tr = SentenceTracker(tiny_tokenizer())
    feed(tr, f"{A} {B_WRONG} {C}")
    tr.finish(complete=True)
    assert [s.text for s in tr.sentences] == [A, B_WRONG, C]
    assert tr.sentences[0].start == 0 and tr.sentences[-1].end == len(tr.tokens)
    assert all(a.end == b.start for a, b in zip(tr.sentences, tr.sentences[1:]))
    removed = tr.truncate(tr.sentences[1].start)
    assert removed.strip() == f"{B_WRONG} {C}" and [s.text for s in tr.sentences] == [A]
    assert tr.text.strip() == A  # the space may belong to either sentence, by tokenizer


def test_cut_off_sentence_is_not_treated_as_finished():
    tr = SentenceTracker(tiny_tokenizer())
    feed(tr, f"{A} She was born")
    out = tr.finish(complete=False)
    assert [s.text for s in tr.sentences] == [A] and out[-1].complete is False


def test_result_reports_a_cut_off_last_sentence_as_unfinished_and_unchecked():
    full = f"{A} {B_RIGHT} {C}"
    n = len(ids_of(full)) - 3  # the budget ends inside C
    checker = ScriptedChecker(false=set())
    r = make(text_script(fixed(full)), checker, max_new_tokens=n).generate(PROMPT)
    assert r.finish_reason == "length"
    *done, last = r.sentences
    assert [s["text"] for s in done] == [A, B_RIGHT] and all(s["complete"] and s["checked"] for s in done)
    assert not last["complete"] and not last["checked"] and C.startswith(last["text"]) and last["text"] != C
    assert last["end"] == len(r.token_ids) and checker.calls == [A, B_RIGHT]


# -- pauses --------------------------------------------------------------------------------


def test_no_failure_leaves_the_text_unchanged_and_checks_every_sentence_once():
    checker = ScriptedChecker(false=set())
    r = make(text_script(fixed(f"{A} {B_WRONG} {C}")), checker).generate(PROMPT)
    assert r.text == f"{A} {B_WRONG} {C}" and r.finish_reason == "eos"
    assert checker.calls == [A, B_WRONG, C]
    assert r.stats["backtracks"] == 0 and r.stats["decoded_tokens"] == r.stats["new_tokens"] + 1  # + EOS
    assert all(s["checked"] for s in r.sentences)


@pytest.mark.parametrize("interval", [1, 3, 7])
def test_verification_pauses_fall_on_interval_ticks_after_a_new_sentence(interval):
    checker = ScriptedChecker(false=set())
    r = make(text_script(fixed(f"{A} {B_WRONG} {C}")), checker, verify_interval=interval).generate(PROMPT)
    pauses = [e for e in events(r, "pause") if e["reason"] != "end of decoding"]
    assert pauses and all(e["step"] % interval == 0 for e in pauses)
    # a sentence is complete when the first token after it is written (step = its end + 1);
    # the pause comes at the first interval tick from then on
    completed = [s["end"] + 1 for s in r.sentences[:-1]]
    assert [e["sentence"] for e in pauses] == [A, B_WRONG]
    for e, at in zip(pauses, completed):
        assert at <= e["step"] < at + interval
    assert r.stats["skipped_ticks"]["verification"] > 0


def test_no_pause_without_a_new_sentence():
    checker = ScriptedChecker(false=set())
    text = "Marie Curie was a physicist who studied radioactivity in Paris with her husband Pierre"
    r = make(text_script(fixed(text)), checker, verify_interval=1).generate(PROMPT)
    pauses = events(r, "pause")
    assert len(pauses) == 1 and pauses[0]["reason"] == "end of decoding"
    assert r.stats["skipped_ticks"]["verification"] == r.stats["decoded_tokens"] - 1


def test_huge_interval_checks_everything_at_the_end():
    checker = ScriptedChecker(false=set())
    r = make(text_script(fixed(f"{A} {B_WRONG} {C}")), checker, verify_interval=10_000).generate(PROMPT)
    assert checker.calls == [A, B_WRONG, C]
    assert {e["reason"] for e in events(r, "pause")} == {"end of decoding"}


# -- backtracking ------------------------------------------------------------------------------


def test_failed_sentence_is_removed_rewritten_with_feedback_in_memory():
    checker = ScriptedChecker(false={B_WRONG})
    ewe = make(text_script(corrected_by_feedback()), checker)
    r = ewe.generate(PROMPT)
    assert r.text == f"{A} {B_RIGHT} {C}"
    assert r.token_ids == ids_of(r.text)  # the cache was cut exactly at the sentence start
    [bt] = events(r, "backtrack")
    assert bt["start_token"] == r.sentences[1]["start"] and bt["removed_text"].strip().startswith(B_WRONG)
    assert bt["removed_tokens"] == r.stats["decoded_tokens"] - r.stats["new_tokens"] - 1  # all discarded, + EOS
    feedback = r.memory["feedback"]
    assert [u["form"] for u in feedback] == ["refuting"] and "Evidence against" in feedback[0]["text"]
    assert checker.calls == [A, B_WRONG, B_RIGHT, C]
    assert [s["failed_attempts"] for s in r.sentences] == [0, 1, 0]


def test_after_a_backtrack_the_model_saw_exactly_the_kept_text():
    checker = ScriptedChecker(false={B_WRONG})
    ewe = make(text_script(corrected_by_feedback()), checker)
    r = ewe.generate(PROMPT)
    seen = ewe.model.seq  # position -> token of what is in the cache now (EOS is never fed)
    assert [seen[p] for p in sorted(seen) if p > ewe.model.prompt_end] == r.token_ids


@pytest.mark.parametrize("forms,expected", [
    (["instruction"], ["instruction"]),
    (["supporting", "refuting", "instruction"], ["supporting", "refuting"]),  # capacity 2: first forms kept
    ([], []),
])
def test_feedback_forms_follow_configuration(forms, expected):
    class TwoClaims(ScriptedChecker):
        def check_sentence(self, sentence, context=None, prompt=None, evidence=None):
            from ewe.verify.types import Claim, Evidence, SentenceCheck, Verdict

            self.calls.append(sentence)
            if "Paris" not in sentence:
                return super().check_sentence(sentence)
            good, bad = Claim("She was a physicist."), Claim("She was born in Paris.")
            return SentenceCheck(sentence, [good, bad], [
                Verdict(good, "supported", 1.0, [Evidence("Curie was a physicist.", "Physics")]),
                Verdict(bad, "unsupported", 0.0, [Evidence("Curie was born in Warsaw.", "Warsaw")]),
            ])

    checker = TwoClaims(false=set())
    needs = 1 if forms else 99
    r = make(text_script(corrected_by_feedback(needs)), checker, feedback=forms, max_retries=1).generate(PROMPT)
    assert [u["form"] for u in r.memory["feedback"]] == expected
    if "instruction" in expected:
        assert "Please refrain from including" in r.memory["feedback"][0]["text"]


WRONG = [B_WRONG, "She was born in Lyon.", "She was born in Nice."]


def new_wrong_birthplace_each_attempt():
    """Each time the model reaches the second sentence it writes the next wrong variant."""
    tok, visits = tiny_tokenizer(), [0]

    def script(generated, units):
        if tok.decode(generated) == f"{A} ":
            visits[0] += 1
        variant = WRONG[min(visits[0], len(WRONG)) - 1]
        return text_script(fixed(f"{A} {variant} {C}"))(generated, units)

    return script


@pytest.mark.parametrize("policy,kept", [("keep_last", WRONG[2]), ("keep_best", WRONG[2]), ("drop", None)])
def test_retries_are_bounded_then_the_policy_decides(policy, kept):
    checker = ScriptedChecker(false=set(WRONG))
    r = make(new_wrong_birthplace_each_attempt(), checker, max_retries=2, on_retries_exhausted=policy,
             max_backtracks=5).generate(PROMPT)
    ex = events(r, "retries_exhausted")[0]
    assert ex["policy"] == policy and ex["attempts"] == 3 and ex["why"] == "retries used up"
    assert [c for c in checker.calls if c in WRONG][:3] == WRONG
    if kept:  # keep_best: all attempts have one unsupported claim, so the latest wins
        assert r.text == f"{A} {kept} {C}" and r.stats["backtracks"] == 2
    else:  # dropped: the answer goes on from there with a first word none of the attempts had
        assert r.stats["backtracks"] == 3 and not any(w in r.text for w in WRONG) and r.text.startswith(A)
        assert r.token_ids[len(ids_of(A + " ")) - 1:][:1] != ids_of(WRONG[0])[:1]
    assert r.stats["decoded_tokens"] <= 4 * 120
    assert r.stats["rejected_sentences"] == 1 and r.stats["rewritten_supported"] == 0


def test_stop_ends_the_answer_before_a_sentence_no_attempt_could_fix():
    checker = ScriptedChecker(false=set(WRONG))
    r = make(new_wrong_birthplace_each_attempt(), checker, max_retries=2, on_retries_exhausted="stop").generate(PROMPT)
    assert r.text.strip() == A and r.finish_reason == "eos" and r.stats["backtracks"] == 3
    assert events(r, "backtrack")[-1]["why"] == "retries exhausted: the answer stops here"


def test_keep_best_never_keeps_a_garbled_attempt():
    garbled = "She was born on January 22, 189december 188ressing."
    tok, visits = tiny_tokenizer(), [0]

    def script(generated, units):
        if tok.decode(generated) == f"{A} ":
            visits[0] += 1
        variant = [garbled, "She was born in Lyon."][min(visits[0], 2) - 1]
        return text_script(fixed(f"{A} {variant} {C}"))(generated, units)

    checker = ScriptedChecker(false={"She was born in Lyon.", "She was born in Nice."})  # the garbled one "passes"
    checker.false.add(garbled)
    r = make(script, checker, max_retries=1, on_retries_exhausted="keep_best").generate(PROMPT)
    assert garbled not in r.text and "Lyon" in r.text  # both have one unsupported claim: the readable one stays


CHOICE = "She was born in"


def choose_birthplace(p_wrong=0.6, other=B_RIGHT):
    """Greedy writes the wrong birthplace; a sampled row often writes `other` (the right one)."""
    tok = tiny_tokenizer()
    wrong, right = (text_script(fixed(f"{A} {b} {C}")) for b in (B_WRONG, other))
    at = len(ids_of(f"{A} "))
    while ids_of(f"{A} {B_WRONG}")[at] == ids_of(f"{A} {other}")[at]:
        at += 1  # the first token where the two sentences part

    def script(generated, units):
        if len(generated) == at and generated == ids_of(f"{A} {B_WRONG}")[:at]:
            w, r = ids_of(f"{A} {B_WRONG}")[at], ids_of(f"{A} {other}")[at]
            return {w: p_wrong, r: 0.98 - p_wrong}
        for s in (wrong, right):
            token, p = s(generated, units)
            if token != tok.eos_token_id or len(generated) >= len(ids_of(f"{A} {other} {C}")):
                return token, p
        return tok.eos_token_id, 0.9

    return script


def test_a_candidate_that_repeats_the_answer_is_never_kept():
    checker = ScriptedChecker(false={B_WRONG})  # the repeat would pass its check
    r = make(choose_birthplace(other=A), checker, rewrite_candidates=6, max_retries=1).generate(PROMPT)
    cand = events(r, "candidates")[0]
    assert {c["verdict"] for c in cand["candidates"]} == {"repeats the answer"} and cand["chosen"] is None
    assert r.text.count(A) == 1 and A not in checker.calls[1:]  # the repeat is never judged


def first_rejected(r):
    return r.sentences[0]["rejected"]


def test_candidate_rewrites_are_judged_together_and_a_supported_one_is_kept():
    checker = ScriptedChecker(false={B_WRONG})
    r = make(choose_birthplace(), checker, rewrite_candidates=6, max_retries=1).generate(PROMPT)
    assert r.text == f"{A} {B_RIGHT} {C}"
    cand = events(r, "candidates")[0]
    texts = [c["text"] for c in cand["candidates"]]
    assert cand["chosen"] == B_RIGHT and B_RIGHT in texts and B_WRONG not in texts  # an earlier attempt is not judged again
    assert r.stats["rejected_sentences"] == 1 and r.stats["rewritten_supported"] == 1
    assert r.stats["candidates_decoded"] == 6 and r.stats["candidates_judged"] == len(texts)
    kept = [s for s in r.sentences if s["text"] == B_RIGHT][0]
    assert kept["checked"] and kept["needs_rewrite"] is False and kept["failed_attempts"] == 1
    assert kept["rejected"] == [B_WRONG] and first_rejected(r) == []
    assert kept["verdict"] == "supported" and kept["evidence"] == [
        {"title": "Marie Curie", "source_id": "", "start": None, "end": None, "score": 0.9, "claim": B_RIGHT}]
    first = r.sentences[0]  # checked by a pause, not a candidate: the same record
    assert first["text"] == A and first["verdict"] == "supported" and first["evidence"][0]["claim"] == A
    assert checker.calls.count(B_RIGHT) == 1  # judged once, as a candidate: not checked again when written


def test_evidence_from_a_datastore_cites_its_place_in_the_source():
    from ewe.retrieval.datastore import Hit
    from ewe.verify.datastore_evidence import hit_to_evidence

    e = hit_to_evidence(Hit(7, 0.5, "Paris: the capital.", "Paris", "wiki:Paris", 120, 133, body_start=7))
    assert e.cite() == {"title": "Paris", "source_id": "wiki:Paris#7", "start": 120, "end": 133, "score": 0.5}


def test_one_greedy_candidate_is_the_papers_rewrite():
    """rewrite_candidates=1 (the default) decodes no batch: the rewrite is the model's greedy one."""
    checker = ScriptedChecker(false={B_WRONG})
    r = make(choose_birthplace(), checker, max_retries=1).generate(PROMPT)
    assert r.stats["candidates_decoded"] == 0 and not events(r, "candidates")
    assert B_RIGHT not in r.text  # the greedy rewrite writes the wrong birthplace again


def test_feedback_in_the_prompt_reaches_the_candidates_as_text():
    tok = tiny_tokenizer()

    def script(generated, units, prompt):
        text = tok.decode(prompt)
        before = ids_of(text.rsplit("assistant\n", 1)[1])  # the candidates' prompt ends with the answer so far
        knows = "Evidence against" in text or B_RIGHT in tok.decode(before + generated)
        return text_script(fixed(f"{A} {B_RIGHT if knows else B_WRONG} {C}"))(before + generated, units)

    script.wants_prompt = True
    checker = ScriptedChecker(false={B_WRONG})
    r = make(script, checker, feedback_placement="prompt", max_retries=1).generate(PROMPT)
    assert r.text == f"{A} {B_RIGHT} {C}" and r.memory["feedback"] == []  # in the prompt, not in memory
    assert events(r, "candidates")[0]["placement"] == "prompt"


def test_a_rewrite_identical_to_an_earlier_attempt_ends_the_retries():
    checker = ScriptedChecker(false={B_WRONG})
    r = make(text_script(fixed(f"{A} {B_WRONG} {C}")), checker, max_retries=5).generate(PROMPT)
    ex = events(r, "retries_exhausted")[0]
    assert ex["attempts"] == 2 and ex["why"] == "attempt 2 repeats attempt 1"
    assert r.stats["backtracks"] == 1 and r.text == f"{A} {B_WRONG} {C}"


def test_keep_best_restores_an_earlier_attempt_with_fewer_unsupported_claims():
    worse = "She was born in Paris in 1999."

    class Counting(ScriptedChecker):
        def check_sentence(self, sentence, context=None, prompt=None, evidence=None):
            res = super().check_sentence(sentence, context, prompt, evidence)
            if sentence == worse:  # two unsupported claims
                res.verdicts = res.verdicts * 2
            return res

    checker = Counting(false={B_WRONG, worse})
    r = make(text_script(lambda u: " ".join([A, worse if u >= 1 else B_WRONG, C])), checker,
             max_retries=1, on_retries_exhausted="keep_best").generate(PROMPT)
    ex = events(r, "retries_exhausted")[0]
    assert ex["kept"] == B_WRONG and ex["unsupported"] == [1, 2]
    assert r.text.startswith(f"{A} {B_WRONG}")
    assert r.token_ids[: len(ids_of(f"{A} {B_WRONG}"))] == ids_of(f"{A} {B_WRONG}")
    assert checker.calls.count(B_WRONG) == 1  # the restored attempt is not checked again


def test_backtrack_budget_bounds_the_whole_prompt():
    checker = ScriptedChecker(false={A, B_WRONG, C})
    r = make(text_script(fixed(f"{A} {B_WRONG} {C}")), checker, max_retries=5, max_backtracks=3).generate(PROMPT)
    assert r.stats["backtracks"] == 3
    assert any("budget" in e["policy"] for e in events(r, "retries_exhausted"))
    assert r.text == f"{A} {B_WRONG} {C}"


def test_a_failing_backend_keeps_the_sentence_and_is_traced():
    checker = ScriptedChecker(false=set(), fail_with_error={B_WRONG})
    r = make(text_script(fixed(f"{A} {B_WRONG} {C}")), checker).generate(PROMPT)
    assert r.text == f"{A} {B_WRONG} {C}" and r.stats["backtracks"] == 0
    [check] = [e for e in events(r, "check") if e["sentence"] == B_WRONG]
    assert check["verdicts"][0]["error"].startswith("backend failed") and not check["needs_rewrite"]


@pytest.mark.parametrize("rule,rewritten", [("not_supported", True), ("contradicted", False)])
def test_not_enough_evidence_is_rewritten_only_under_the_papers_rule(rule, rewritten):
    checker = ScriptedChecker(false=set(), unknown={B_WRONG})
    r = make(text_script(corrected_by_feedback()), checker, rewrite_when=rule, feedback=["instruction"]).generate(PROMPT)
    assert (r.stats["backtracks"] == 1) is rewritten
    [check] = [e for e in events(r, "check") if e["sentence"] == B_WRONG]
    assert check["needs_rewrite"] is rewritten


# -- confidence triggers ------------------------------------------------------------------------


@pytest.mark.parametrize("trigger", ["min_prob", "entropy"])
def test_confidence_trigger_pauses_only_for_unsure_sentences(trigger):
    checker = ScriptedChecker(false=set())
    script = text_script(fixed(f"{A} {B_WRONG} {C}"), unsure=(B_WRONG,), unsure_prob=0.05)
    r = make(script, checker, verify_trigger=trigger, min_prob_threshold=0.2, entropy_threshold=2.0).generate(PROMPT)
    assert checker.calls == [B_WRONG]
    [pause] = events(r, "pause")
    assert ("probability" if trigger == "min_prob" else "entropy") in pause["reason"]


# -- retrieval pauses ----------------------------------------------------------------------------


class FakeDatastore:
    """Returns one passage per query, named after the query's last sentence."""

    def __init__(self):
        self.queries = []

    def search(self, queries, k, threshold=None, dedup_sources=True):
        self.queries += list(queries)
        out = []
        for q in queries:
            tail = q.split(".")[-2].strip() if q.count(".") > 1 else q
            out.append([Hit(id=len(self.queries), score=0.7, text=f"Passage about {tail}.", title=tail[:20].lower(),  # no name: about no one
                            source_id=tail, start=0, end=10)])
        return out

    def __len__(self):
        return 100


def test_retrieval_pause_queries_prompt_plus_sentence_and_refreshes_memory():
    store = FakeDatastore()
    seen_units = []

    def script(generated, units):
        seen_units.append(units)
        return text_script(fixed(f"{A} {B_WRONG} {C}"))(generated, units)

    ewe = make(script, ScriptedChecker(set()), datastore=store, verify_trigger="never", retrieval_trigger="interval",
               retrieval_interval=1)
    r = ewe.generate(PROMPT)
    assert store.queries[0] == PROMPT  # the initial memory
    assert store.queries[1:] == [f"{PROMPT} {A}", f"{PROMPT} {B_WRONG}"]  # one pause per new sentence
    assert [e["why"] for e in events(r, "retrieve")] == ["prompt", "pause", "pause"]
    assert len(r.memory["retrieval"]) == 2  # FIFO capacity 2
    assert seen_units[0] == 1 and max(seen_units) == 2  # tokens after a refresh saw the new unit
    assert r.text == f"{A} {B_WRONG} {C}"


def test_flare_style_rewrites_the_unsure_sentence_once_after_retrieval():
    store = FakeDatastore()
    script = text_script(fixed(f"{A} {B_WRONG} {C}"), unsure=(B_WRONG,))
    ewe = make(script, None, datastore=store, verify_trigger="never", retrieval_trigger="min_prob",
               min_prob_threshold=0.2, rewrite_on_retrieval=True)
    r = ewe.generate(PROMPT)
    [bt] = events(r, "backtrack")
    assert bt["why"] == "rewrite after retrieval" and bt["removed_text"].strip().startswith(B_WRONG)
    assert r.text == f"{A} {B_WRONG} {C}"  # the script writes the same sentence again; it is not retried twice
    assert r.stats["pauses_retrieval"] == 2


# -- trace and API ---------------------------------------------------------------------------------


def test_trace_is_json_and_renders():
    checker = ScriptedChecker(false={B_WRONG})
    r = make(text_script(corrected_by_feedback()), checker).generate(PROMPT)
    data = json.loads(json.dumps(r.to_dict()))
    assert {e["type"] for e in data["trace"]} >= {"pause", "check", "backtrack", "memory", "finish"}
    steps = [e["step"] for e in data["trace"]]
    assert steps == sorted(steps)
    text = render(r.trace)
    assert "backtrack #1" in text and B_WRONG in text


def test_the_trace_says_why_a_supported_candidate_was_not_kept():
    cand = {"unsupported": 0, "no_answer": None, "mean_logprob": -1.0}
    event = {"type": "candidates", "step": 40, "round": 1, "decoded": 3, "placement": "prompt", "chosen": None,
             "candidates": [{**cand, "text": "She was a chemist.", "verdict": "supported", "new_supported": 0},
                            {**cand, "text": "She was born in 1867.", "verdict": "supported", "new_supported": None},
                            {**cand, "text": "She was a chemist.", "verdict": "repeats the answer",
                             "new_supported": None}]}
    lines = render([event]).splitlines()
    assert "none passed" in lines[0]
    assert lines[1].strip() == "[supported, adds no claim the answer lacks] She was a chemist."
    assert lines[2].strip() == "[supported] She was born in 1867."
    assert lines[3].strip() == "[repeats the answer] She was a chemist."


def test_controller_with_an_all_supporting_checker_decodes_like_the_plain_loop():
    # a random model's text is no answer (verify/degenerate.py): only the checker's verdicts are under test
    cfg = EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None},
                           "decoding": {"max_new_tokens": 40}, "checker": {"reject_degenerate": False}})
    plain = tiny_ewe(cfg).generate(PROMPT, passages=["Marie Curie was a physicist."])
    ctl_cfg = EWEConfig.build(cfg.model_dump(), **{"controller.verify_trigger": "interval", "controller.verify_interval": 1})
    ewe = tiny_ewe(ctl_cfg)
    ewe.runtime.use_fact_checker(ScriptedChecker(false=set()))
    controlled = ewe.generate(PROMPT, passages=["Marie Curie was a physicist."])
    assert controlled.token_ids == plain.token_ids


def test_a_batch_of_prompts_runs_one_by_one():
    checker = ScriptedChecker(false={B_WRONG})
    rs = make(text_script(corrected_by_feedback()), checker).generate([PROMPT, PROMPT])
    assert [r.text for r in rs] == [f"{A} {B_RIGHT} {C}"] * 2  # memory is per prompt: both needed feedback
    assert all(r.stats["backtracks"] == 1 for r in rs)


# -- configuration -----------------------------------------------------------------------------------


@pytest.mark.parametrize("override,message", [
    ({"controller.verify_interval": 0}, "controller.verify_interval"),
    ({"controller.verify_trigger": "sometimes"}, "controller.verify_trigger"),
    ({"controller.feedback": ["gossip"]}, "controller.feedback"),
    ({"controller.tv": 8}, "controller.tv"),
    ({"controller.min_prob_threshold": 1.5}, "controller.min_prob_threshold"),
    ({"checker.backend": "nli"}, "nli_model"),
    ({"checker.backend": "http"}, "http_base_url"),
    ({"controller.retrieval_trigger": "interval", "retrieval.source": None}, "retrieval.source"),
    ({"controller.verify_trigger": "interval", "retrieval.placement": "prompt"}, "placement"),
])
def test_bad_controller_configuration_is_named(override, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        EWEConfig.build({}, **override)


def test_shipped_configs_are_valid(tmp_path):
    from pathlib import Path

    configs = sorted(Path(__file__).resolve().parents[1].joinpath("configs").glob("*.yaml"))
    assert {c.stem for c in configs} >= {"ewe", "rag", "flare", "bare"}
    for c in configs:
        EWEConfig.from_yaml(c)
    paper = EWEConfig.from_yaml(configs[0].with_name("ewe-paper.yaml"))
    assert (paper.controller.retrieval_interval, paper.controller.verify_interval) == (1, 8)
    assert paper.retrieval.placement == "memory" and paper.controller.feedback_placement == "memory"
    # the default is the paper's loop on memory units, read through the memory adapter, with the veto
    default = EWEConfig.from_yaml(configs[0].with_name("ewe.yaml"))
    assert default.retrieval.placement == "memory" and default.controller.feedback_placement == "memory"
    assert (default.controller.retrieval_interval, default.controller.verify_interval) == (1, 8)
    assert default.controller.rewrite_candidates == 4 and default.model.memory_adapter == "auto"
    assert default.checker.veto == "contradiction"
    # the default it replaced: the same checks with the passages as text
    text = EWEConfig.from_yaml(configs[0].with_name("ewe-text.yaml"))
    assert text.retrieval.placement == "prompt+memory" and text.controller.feedback_placement == "prompt"
    loop = EWEConfig.from_yaml(configs[0].with_name("ewe-memory-loop.yaml"))
    assert loop.model_dump(exclude={"checker"}) == default.model_dump(exclude={"checker"})
    assert loop.checker.veto == "none"
    flare = EWEConfig.from_yaml(configs[0].with_name("flare.yaml"))
    assert flare.memory.retrieval_units == 1 and flare.controller.retrieval_trigger == "min_prob"
    rag = EWEConfig.from_yaml(configs[0].with_name("rag.yaml"))
    assert rag.memory.retrieval_units == 1 and not rag.controller.active
    # the placement ablation: ra-4 retrieves exactly what ewe-memory holds, only placed in the prompt
    ra4, memory_only = (EWEConfig.from_yaml(configs[0].with_name(n)) for n in ("ra-4.yaml", "ewe-memory.yaml"))
    assert ra4.retrieval.model_dump(exclude={"placement"}) == memory_only.retrieval.model_dump(exclude={"placement"})
    assert (ra4.retrieval.placement, memory_only.retrieval.placement) == ("prompt", "memory")


def test_retry_temperature_samples_the_rewrite_only():
    checker = ScriptedChecker(false={B_WRONG})
    script = text_script(fixed(f"{A} {B_WRONG} {C}"), unsure=(A, B_WRONG, C), unsure_prob=0.5)
    greedy = make(script, checker, max_retries=1).generate(PROMPT, seed=0)
    assert events(greedy, "retries_exhausted")[0]["why"] == "attempt 2 repeats attempt 1"
    sampled = make(script, ScriptedChecker(false={B_WRONG}), max_retries=1, retry_temperature=5.0,
                   retry_top_p=1.0).generate(PROMPT, seed=0)
    assert sampled.text.startswith(A)  # before the first backtrack decoding is greedy, as configured
    bt = events(sampled, "backtrack")[0]  # (a sampled fragment such as "ff" fails as garbled after it)
    assert bt["removed_text"].strip().startswith(B_WRONG)
    assert not sampled.text[len(A):].strip().startswith(B_WRONG)  # the rewrite was sampled, not the greedy repeat



class SamePassageStore(FakeDatastore):
    """Every query also finds the prompt's own passage again."""

    def search(self, queries, k, threshold=None, dedup_sources=True):
        found = super().search(queries, k)
        first = Hit(id=0, score=0.9, text="Marie Curie was born in Warsaw.", title="Marie Curie", source_id="mc",
                    start=0, end=10)
        return [[first] + ([] if q == PROMPT else hits) for q, hits in zip(queries, found)]


def test_prompt_plus_memory_puts_the_first_passages_in_the_prompt_and_later_ones_in_memory():
    store, seen_units = SamePassageStore(), []

    def script(generated, units):
        seen_units.append(units)
        return text_script(fixed(f"{A} {B_WRONG} {C}"))(generated, units)

    def build(placement):
        cfg = EWEConfig.build({"memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
                               "retrieval": {"source": "fake", "top_k": 2, "placement": placement},
                               "decoding": {"max_new_tokens": 120},
                               "controller": {"verify_trigger": "never", "retrieval_trigger": "interval"}})
        return EWE(scripted_model(script), tiny_tokenizer(), cfg, datastore=store)

    r = build("prompt+memory").generate(PROMPT)
    prompt_event, *pauses = events(r, "retrieve")
    assert prompt_event["placement"] == "prompt" and [h["title"] for h in prompt_event["hits"]] == ["Marie Curie"]
    assert r.retrieved == prompt_event["hits"]
    assert r.stats["prompt_tokens"] > build("memory").generate(PROMPT).stats["prompt_tokens"]  # the passage is text
    assert seen_units[0] == 0  # nothing in memory at first
    # the pauses find the prompt's passage again: it never becomes a unit; the new ones do
    assert all(h["title"] == "Marie Curie" for e in pauses for h in e["hits"][:1])
    units = [u["text"] for u in r.memory["retrieval"]]
    assert len(units) == 2 and not any("Warsaw" in u for u in units)
    assert all(u.startswith("Passage about") for u in units)
    assert "into the prompt as text" in render(r.trace)


def test_prompt_plus_memory_is_allowed_with_pauses_and_prompt_is_not():
    with pytest.raises(ConfigError, match="'memory' or 'prompt\\+memory'"):
        EWEConfig.build({}, **{"controller.verify_trigger": "interval", "retrieval.placement": "prompt"})
    assert EWEConfig.build({}, **{"controller.verify_trigger": "interval", "retrieval.placement": "prompt+memory"})


def test_a_restored_candidate_keeps_the_verdict_it_got():
    """keep_best may restore a candidate rewrite that failed: its sentence record says so (checked,
    its verdict) instead of passing for an unchecked sentence."""
    checker = ScriptedChecker(false={B_WRONG, B_RIGHT})
    r = make(choose_birthplace(), checker, rewrite_candidates=6, max_retries=1,
             on_retries_exhausted="keep_best").generate(PROMPT)
    kept = [s for s in r.sentences if s["rejected"]]
    assert len(kept) == 1 and kept[0]["text"] in (B_WRONG, B_RIGHT)
    assert kept[0]["checked"] and kept[0]["needs_rewrite"] is True and kept[0]["verdict"] not in (None, "supported")
    assert r.stats["rewritten_supported"] == 0


def test_a_candidate_that_claims_nothing_is_never_kept_and_ranks_below_a_supported_one():
    from types import SimpleNamespace

    from ewe.controller.rewrites import candidate_rank
    from ewe.controller.rewrites import Attempt

    claimless = "She was a remarkable woman."
    checker = ScriptedChecker(false={B_WRONG}, claimless={claimless})
    r = make(choose_birthplace(other=claimless), checker, rewrite_candidates=6, max_retries=1,
             on_retries_exhausted="drop").generate(PROMPT)
    cand = events(r, "candidates")[0]
    assert claimless in [c["text"] for c in cand["candidates"]] and cand["chosen"] is None  # filler is no fix
    assert claimless not in r.text and B_WRONG not in r.text  # dropped, as no candidate was supported
    assert r.stats["rewritten_supported"] == 0 and r.stats["rewritten_claimless"] == 0
    likely, unlikely = (Attempt([1], [lp], [0.0], "x") for lp in (-0.1, -3.0))
    assert candidate_rank(unlikely, SimpleNamespace(verdict="supported")) > \
        candidate_rank(likely, SimpleNamespace(verdict="not_checkable"))
    assert candidate_rank(likely, SimpleNamespace(verdict="supported")) > \
        candidate_rank(unlikely, SimpleNamespace(verdict="supported"))


# -- repeats: a sentence that adds nothing fails its check ------------------------------------


def test_a_sentence_that_repeats_the_answer_fails_and_the_answer_ends_before_it():
    checker = ScriptedChecker(false=set())  # every sentence would pass its check
    r = make(text_script(fixed(f"{A} {C} {A} {B_RIGHT}")), checker).generate(PROMPT)
    assert r.text.strip() == f"{A} {C}"  # greedy retries write the repeat again: nothing new, so the answer ends
    [rep] = [e for e in events(r, "check") if e.get("reason") == "repeats"][:1]
    assert rep["needs_rewrite"] and rep["repeats"][0]["why"] == "the same sentence"
    assert r.stats["repeats_rejected"] >= 1
    assert events(r, "retries_exhausted")[-1]["policy"] == "stop"


def test_a_sentence_whose_claims_an_earlier_one_holds_is_a_repeat():
    wider = "Marie Curie was a physicist and a chemist."
    checker = ScriptedChecker(false=set())
    r = make(text_script(fixed(f"{wider} {C} {A}")), checker).generate(PROMPT)
    assert r.text.strip() == f"{wider} {C}"
    rep = [e for e in events(r, "check") if e.get("reason") == "repeats"][0]
    assert rep["repeats"] == [{"claim": A, "earlier": wider, "why": "an earlier claim holds its content words"}]


def test_a_failed_repeat_is_not_kept_when_the_backtrack_budget_is_spent():
    """With no backtrack left a failed sentence stays (keep), but not one that repeats the answer:
    seen as 'He was a member of the Committee of 25.' kept four times in one bio."""
    checker = ScriptedChecker(false={B_WRONG})
    r = make(text_script(fixed(f"{A} {B_WRONG} {C} {B_WRONG} {C}")), checker, max_backtracks=0).generate(PROMPT)
    assert r.text.strip() == f"{A} {B_WRONG} {C}"
    kept, stop = events(r, "retries_exhausted")
    assert kept["policy"] == "keep (backtrack budget spent)" and stop["policy"] == "stop"


@pytest.mark.parametrize("policy", ["keep_best", "keep_last"])
def test_the_attempt_kept_when_retries_run_out_may_not_repeat_the_answer(policy):
    checker = ScriptedChecker(false={B_WRONG})
    r = make(text_script(fixed(f"{B_WRONG} {A} {B_WRONG} {C}")), checker, max_retries=1,
             on_retries_exhausted=policy).generate(PROMPT)
    assert r.text.strip().count(B_WRONG) == 1
    assert events(r, "retries_exhausted")[-1]["policy"] == "stop"
    assert "the attempt to keep repeats the answer" in events(r, "retries_exhausted")[-1]["why"]


def test_with_nothing_fact_checked_a_repeat_still_ends_the_answer():
    """FLARE (verify_trigger never) checks no fact, but a sentence that adds nothing is padding all the same."""
    script = text_script(fixed(f"{A} {C} {A} {B_RIGHT}"), unsure=(B_RIGHT,))
    r = make(script, None, datastore=FakeDatastore(), verify_trigger="never", retrieval_trigger="min_prob",
             min_prob_threshold=0.2, rewrite_on_retrieval=True).generate(PROMPT)
    assert r.text.strip() == f"{A} {C}"
    [rep] = events(r, "repeats")
    assert rep["sentence"] == A and rep["repeats"][0]["why"] == "the same sentence"
    assert events(r, "backtrack")[-1]["why"] == "repeats: the answer ends before it"
    assert r.stats["repeats_rejected"] == 1 and not events(r, "check")


def test_repeats_are_kept_when_the_setting_is_off():
    checker = ScriptedChecker(false=set())
    r = make(text_script(fixed(f"{A} {C} {A}")), checker, checker_section={"reject_repeats": False}).generate(PROMPT)
    assert r.text.strip() == f"{A} {C} {A}" and r.stats["repeats_rejected"] == 0


class PeopleStore:
    """Every query finds the same three passages: the person's own, a relative's that names them,
    and a stranger's."""

    def search(self, queries, k, threshold=None, dedup_sources=True):
        def hit(i, title, text):
            return Hit(id=i, score=0.8 - i / 10, text=f"{title} (someone): {text}", title=title, source_id=title,
                       start=0, end=len(text))

        return [[hit(0, "Marie Curie", "She was born in Warsaw."),
                 hit(1, "Pierre Curie", "He married Marie Curie in 1895."),
                 hit(2, "Franz Kafka", "His best-known works include The Castle.")] for _ in queries]

    def __len__(self):
        return 3


def test_passages_about_someone_else_stay_out_of_memory_unless_they_name_the_subject():
    cfg = EWEConfig.build({"memory": {"unit_tokens": 24, "retrieval_units": 4, "feedback_units": 2},
                           "retrieval": {"source": "fake", "top_k": 3}, "decoding": {"max_new_tokens": 60},
                           "controller": {"verify_trigger": "never", "retrieval_trigger": "interval"}})
    r = EWE(scripted_model(text_script(fixed(f"{A} {C}"))), tiny_tokenizer(), cfg, datastore=PeopleStore()).generate(PROMPT)
    titles = {u["title"] for u in r.memory["retrieval"]}
    assert titles == {"Marie Curie", "Pierre Curie"}
    assert all(e["off_subject"] == ["Franz Kafka"] for e in events(r, "retrieve"))
    # a prompt about a thing holds its answer to the thing alike; one that names no subject keeps every passage
    thing = EWE(scripted_model(text_script(fixed(f"{A} {C}"))), tiny_tokenizer(), cfg, datastore=PeopleStore())
    assert not {u["title"] for u in thing.generate("Tell me about radioactivity.").memory["retrieval"]}
    plain = EWE(scripted_model(text_script(fixed(f"{A} {C}"))), tiny_tokenizer(), cfg, datastore=PeopleStore())
    assert "Franz Kafka" in {u["title"] for u in plain.generate("Write a short story.").memory["retrieval"]}


def test_a_last_sentence_the_budget_cut_right_after_its_end_is_checked():
    checker = ScriptedChecker(false=set())
    budget = len(ids_of(f"{A} {C} {A}"))
    r = make(text_script(fixed(f"{A} {C} {A} {B_RIGHT}")), checker, max_new_tokens=budget).generate(PROMPT)
    assert checker.calls[:3] == [A, C, A]  # the last one ended with the budget and is checked: a repeat
    assert r.text.strip() == f"{A} {C}" and r.stats["repeats_rejected"] >= 1


def test_a_last_sentence_the_budget_cut_off_is_dropped_when_it_repeats_and_kept_when_new():
    """Cut off mid-sentence, the tail is never fact-checked, but a tail the answer already says ends
    the answer before it (traced); a tail that adds something stays."""
    checker = ScriptedChecker(false=set())
    cut = f"{A} {C} {A[:-1]}"  # the budget ends just before the repeat's full stop
    r = make(text_script(fixed(f"{A} {C} {A} {B_RIGHT}")), checker, max_new_tokens=len(ids_of(cut))).generate(PROMPT)
    assert r.text.strip() == f"{A} {C}" and A[:-1] not in checker.calls
    [drop] = events(r, "repeats_dropped")
    assert drop["dropped"][0]["sentence"] == A[:-1] and drop["dropped"][0]["cut_off"]
    new = f"{A} {C} {B_RIGHT[:-1]}"
    r = make(text_script(fixed(f"{A} {C} {B_RIGHT}")), ScriptedChecker(false=set()),
             max_new_tokens=len(ids_of(new))).generate(PROMPT)
    assert r.text.strip() == new.strip() and events(r, "repeats_dropped") == []


@pytest.mark.parametrize("tail,dropped", [("She won two Nobel prizes, the", True), ("She won three Nobel prizes, the", False)])
def test_a_cut_off_tail_with_no_claim_to_read_is_dropped_when_an_earlier_sentence_holds_its_words(tail, dropped):
    """Cut after "the", the tail holds no claim the splitter can read, so no claim test can call it
    a repeat; its words are all C's: it adds nothing. With "three" it says something new, and stays."""
    cut = f"{A} {C} {tail}"
    r = make(text_script(fixed(f"{cut} first woman. {B_RIGHT}")), ScriptedChecker(false=set()),
             max_new_tokens=len(ids_of(cut))).generate(PROMPT)
    assert r.text.strip() == (f"{A} {C}" if dropped else cut)
    assert [d["sentence"] for e in events(r, "repeats_dropped") for d in e["dropped"]] == ([tail] if dropped else [])


@pytest.mark.parametrize("policy", ["keep_best", "drop"])
def test_a_greedy_retry_under_the_same_memory_is_not_decoded_again(policy, monkeypatch):
    """With no feedback to add (and nothing retrieved), a greedy retry would read exactly what the
    failed attempt read and write it again: the loop gives up at once instead of decoding and
    judging a copy. The answer is the one the loop writes when it decodes the copies (the
    reference, the shortcut turned off), with fewer tokens decoded and fewer checks."""
    from ewe.controller.controlled_run import ControlledRun

    def run():
        checker = ScriptedChecker(false={B_WRONG})
        return make(text_script(fixed(f"{A} {B_WRONG} {C}")), checker, feedback=[], max_retries=2,
                    on_retries_exhausted=policy).generate(PROMPT)

    fast = run()
    monkeypatch.setattr(ControlledRun, "_retry_would_repeat", lambda self, sentence: False)
    reference = run()
    assert fast.text == reference.text and fast.token_ids == reference.token_ids
    assert fast.stats["decoded_tokens"] < reference.stats["decoded_tokens"]
    assert fast.stats["checks"] < reference.stats["checks"]
    why = [e["why"] for e in events(fast, "retries_exhausted")]
    assert why == ["a retry would write attempt 1 again (greedy, the memory it was written under)"]
    assert [e["why"] for e in events(reference, "retries_exhausted")] == ["attempt 2 repeats attempt 1"]


def test_a_retry_after_the_memory_changed_is_decoded():
    """Feedback in memory changes what the retry reads: it is decoded (and here corrected)."""
    r = make(text_script(corrected_by_feedback()), ScriptedChecker(false={B_WRONG})).generate(PROMPT)
    assert B_RIGHT in r.text and not events(r, "retries_exhausted")


def test_every_event_a_method_traces_is_registered_and_rendered():
    """Trace.add refuses an unregistered type at run time (A2R's "repeats_dropped" once stopped a
    bench run on its first repeated sentence): every type the code adds is registered and rendered."""
    import re
    from pathlib import Path

    import ewe
    from ewe.controller import trace

    root = Path(ewe.__file__).parent
    added = {m for f in root.rglob("*.py") for m in re.findall(r"\btrace\.add\(\s*\"(\w+)\"", f.read_text())}
    assert {"check", "repeats", "repeats_dropped", "a2r_answer"} <= added  # the scan sees the methods' events
    assert added <= set(trace.EVENT_TYPES)
    source = Path(trace.__file__).read_text()
    assert [t for t in added if f'kind == "{t}"' not in source] == []


# -- sentences that are no answer (issue 56) ------------------------------------------------

META_SENTENCE = "I hope you enjoy this bio."


def test_a_sentence_that_talks_to_the_user_fails_its_check_whatever_its_claims():
    checker = ScriptedChecker(false=set())  # every claim supported
    r = make(text_script(fixed(f"{A} {META_SENTENCE} {C}")), checker, on_retries_exhausted="drop").generate(PROMPT)
    failed = [e for e in events(r, "check") if e.get("reason") == "meta"]
    assert failed and failed[0]["needs_rewrite"]
    assert META_SENTENCE not in r.text and A in r.text
    assert set(r.stats["rejected_by_rule"]) == {"meta"}


def test_degenerate_sentences_are_kept_when_the_setting_is_off():
    checker = ScriptedChecker(false=set())
    r = make(text_script(fixed(f"{A} {META_SENTENCE} {C}")), checker,
             checker_section={"reject_degenerate": False}).generate(PROMPT)
    assert META_SENTENCE in r.text and r.stats["rejected_by_rule"] == {}


def test_an_unfinished_last_sentence_that_loops_is_dropped():
    looping = "She was a poet, poet, poet, poet, poet, poet"
    r = make(text_script(fixed(f"{A} {looping}")), ScriptedChecker(false=set()), max_new_tokens=36).generate(PROMPT)
    assert r.text.strip() == A
    [drop] = events(r, "no_answer_dropped")
    assert drop["reason"] == "garbled" and drop["cut_off"]


def test_a_passage_head_copied_before_a_sentence_fails_it_but_not_an_unfinished_tail():
    """"Title (description): text" is the datastore's passage copied, not a sentence of the answer: a complete
    one fails its check (here dropped); a cut-off last one stays, the passage's text with it."""
    copied = "Marie Curie (Polish physicist (1867–1934)): She won two Nobel prizes."
    r = make(text_script(fixed(f"{A} {copied} {C}")), ScriptedChecker(false=set()),
             on_retries_exhausted="drop").generate(PROMPT)
    assert {e["sentence"] for e in events(r, "check") if e.get("reason") == "heading"} == {copied}
    assert copied not in r.text and r.text.strip().startswith(A)
    tail = "Marie Curie (Polish physicist (1867–1934)) She won two Nobel prizes, one in"
    cut = len(ids_of(f"{A} {tail}")) - 2
    r = make(text_script(fixed(f"{A} {tail} physics.")), ScriptedChecker(false=set()),
             max_new_tokens=cut).generate(PROMPT)
    assert r.text.startswith(f"{A} Marie Curie (Polish physicist (1867–1934)) She won") and not events(r, "no_answer_dropped")


class OnlyTrue(ScriptedChecker):
    """Judges every sentence but `true` unsupported: every candidate fails, so rounds go on."""

    def __init__(self, true: str):
        super().__init__(false=set())
        self.true = true

    def check_sentence(self, sentence, context=None, prompt=None, evidence=None):
        self.false = {sentence} if sentence != self.true else set()
        return super().check_sentence(sentence, context, prompt, evidence)


def test_candidate_rewrites_stop_when_their_budget_is_spent():
    kw = dict(rewrite_candidates=4, max_retries=3, on_retries_exhausted="drop", rewrite_max_tokens=16)
    script = text_script(fixed(f"{A} {B_WRONG} {C}"), unsure=(B_WRONG,), unsure_prob=0.3)  # candidates differ
    free = make(script, OnlyTrue(A), rewrite_budget=None, **kw).generate(PROMPT)
    assert not free.stats["rewrite_budget_hit"] and len({e["round"] for e in events(free, "candidates")}) > 1
    assert events(free, "candidates")[0]["decoded"] == 4 and free.stats["candidate_tokens"] > 40
    assert events(free, "retries_exhausted")[0]["policy"] == "drop"  # no candidate passed: B dropped, the answer goes on
    # 40 tokens (at 120 new tokens): room for 2 candidates of 16 tokens, then for fewer; never more than 40
    capped = make(script, OnlyTrue(A), rewrite_budget=40 / 120, **kw).generate(PROMPT)
    assert events(capped, "candidates")[0]["decoded"] == 2 and capped.stats["candidate_tokens"] <= 40
    # nothing fits: no round at all, the trace says so, and a failure that would be dropped ends the
    # answer instead (going on would decode more text to check)
    none = make(script, OnlyTrue(A), rewrite_budget=0.01, **kw).generate(PROMPT)
    assert none.stats["rewrite_budget_hit"] and none.stats["candidate_tokens"] == 0 and not events(none, "candidates")
    [spent] = events(none, "rewrite_budget")
    assert spent == {**spent, "budget": 1, "spent": 0}
    assert none.text.strip() == A and events(none, "retries_exhausted")[-1]["policy"] == "stop"
    # ... but an answer with nothing kept yet goes on: a spent budget never leaves it empty
    first = make(text_script(fixed(f"{B_WRONG} {A}")), OnlyTrue(A), rewrite_budget=0.01, **kw).generate(PROMPT)
    assert first.stats["rewrite_budget_hit"] and events(first, "retries_exhausted")[0]["policy"] == "drop"


def test_a_sentence_about_someone_else_fails_its_check():
    other = "Pierre Curie was a French physicist."
    r = make(text_script(fixed(f"{A} {other} {C}")), ScriptedChecker(false=set()),
             on_retries_exhausted="drop").generate(PROMPT)
    [failed] = [e for e in events(r, "check") if e.get("reason") == "off_subject"][:1]
    assert failed["about"] == "Pierre Curie" and other not in r.text
    assert r.stats["rejected_by_rule"]["off_subject"] >= 1
    kept = make(text_script(fixed(f"{A} {other} {C}")), ScriptedChecker(false=set()),
                checker_section={"reject_off_subject": False}).generate(PROMPT)
    assert other in kept.text
    # with no backtrack left a failed sentence is kept, but never one that is no answer: the answer ends before it
    r = make(text_script(fixed(f"{A} {other} {C}")), ScriptedChecker(false=set()), max_backtracks=0).generate(PROMPT)
    assert r.text.strip() == A and [e["policy"] for e in events(r, "retries_exhausted")] == ["stop"]
    about_a_thing = "What can you tell me about Radium Institute?"  # a person there is a founder, not a stray
    r = make(text_script(fixed(f"{A} {other} {C}")), ScriptedChecker(false=set())).generate(about_a_thing)
    assert other in r.text and not r.stats["rejected_by_rule"]


def test_a_sentence_that_loops_before_it_ends_is_dropped_at_once_and_the_answer_goes_on():
    """A loop inside a sentence that never ends would run to the budget and be dropped cut off,
    with the answer empty after it: it is dropped as soon as it shows, and its first token banned."""
    tok = tiny_tokenizer()
    looping = f"{A} " + "Kofi Annan, Ghanaian diplomat and statesman, " * 12
    good = f"{A} {C}"
    fork = len(ids_of(f"{A} "))

    def script(generated, units):
        if len(generated) == fork and generated == ids_of(looping)[:fork]:
            return {ids_of(looping)[fork]: 0.6, ids_of(good)[fork]: 0.4}  # greedy takes the loop unless banned
        target = looping if generated[fork:fork + 1] == ids_of(looping)[fork:fork + 1] else good
        return text_script(fixed(target))(generated, units)

    r = make(script, ScriptedChecker(false=set()), max_new_tokens=120).generate(PROMPT)
    assert r.text.strip() == good and r.finish_reason == "eos"
    [dropped] = events(r, "no_answer_dropped")
    assert dropped["reason"] == "loop" and not dropped["cut_off"] and dropped["sentence"].startswith("Kofi Annan")
    assert r.stats["rejected_by_rule"] == {"loop": 1} and r.stats["backtracks"] == 1
    from ewe.controller.unchecked import LOOP_CHECK_EVERY, LOOP_CHECK_FROM

    loop_tokens = r.stats["decoded_tokens"] - len(ids_of(good)) - 1  # (the answer's end token)
    assert LOOP_CHECK_FROM <= loop_tokens < 3 * LOOP_CHECK_FROM + LOOP_CHECK_EVERY  # once the loop shows, not at the budget
    assert tok.decode(ids_of(looping)[fork:fork + 1]) not in r.text[len(A):]
