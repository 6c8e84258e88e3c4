"""The CoVe baseline (factor+revise), driven by a tiny model that answers each stage's prompt
with canned text: the script reads the prompt the model was actually given (and how many
memory units it sees), so the tests check what every stage really receives."""
from __future__ import annotations

import json

import pytest
from scripted import scripted_model
from tiny import tiny_model, tiny_tokenizer

from ewe import EWE
from ewe.config import ConfigError, EWEConfig
from ewe.controller import render
from ewe.methods import cove_prompts as P
from ewe.methods.cove import claim_for
from ewe.retrieval.in_prompt import AFTER_LABEL as BACKGROUND
from ewe.retrieval import Hit

PROMPT = "Tell me a bio of Marie Curie."
S1, S2, S3 = "Marie Curie was born in Paris.", "She won two Nobel prizes.", "She died in 1934."
BASELINE = f"{S1} {S2} {S3}"
QUESTIONS = ["Where was Marie Curie born?", "How many Nobel prizes did Marie Curie win?", "When did Marie Curie die?"]
ANSWERS = {QUESTIONS[0]: "She was born in Warsaw.", QUESTIONS[1]: "She won two.", QUESTIONS[2]: "In 1934."}
REVISED = "Marie Curie was born in Warsaw. She won two Nobel prizes. She died in 1934."
PLAN = "1. " + "\n2. ".join(QUESTIONS)


def stage_of(prompt: str) -> str:
    if "Verification questions:" in prompt:
        return "plan"
    if "Answer the question with a short factual answer" in prompt:
        return "answer"
    if "Does the claim agree" in prompt:
        return "check"
    if "Rewrite the draft answer" in prompt:
        return "revise"
    return "baseline"


class Stages:
    """Canned replies per stage; records (stage, prompt text, memory units) of every call."""

    def __init__(self, baseline=BASELINE, plan=PLAN, revised=REVISED, disagree=(QUESTIONS[0],)):
        self.replies = {"baseline": baseline, "plan": plan, "revise": revised}
        self.disagree = set(disagree)
        self.calls: list[tuple[str, str, int]] = []

    def __call__(self, prompt: str, units: int) -> str:
        stage = stage_of(prompt)
        self.calls.append((stage, prompt, units))
        if stage == "answer":
            return next((a for q, a in ANSWERS.items() if f"Question: {q}" in prompt), "I do not know.")
        if stage == "check":
            return "No" if any(f"Question: {q}" in prompt for q in self.disagree) else "Yes"
        return self.replies[stage]

    def of(self, stage):
        return [(p, u) for s, p, u in self.calls if s == stage]

    @property
    def order(self):
        return [s for s, _, _ in self.calls]


def stage_model(respond):
    """A scripted tiny Llama that writes `respond(prompt_text, memory_units)` for each prompt."""
    tok = tiny_tokenizer()
    holder, cache = {}, {}

    def script(generated, units):
        m = holder["model"]
        key = (tuple(m.seq[p] for p in sorted(m.seq) if p <= m.prompt_end), units)
        if key not in cache:
            cache[key] = tok(respond(tok.decode(list(key[0])), units), add_special_tokens=False)["input_ids"]
        ids, n = cache[key], len(generated)
        if generated != ids[:n] or n >= len(ids):
            return tok.eos_token_id, 0.9
        return ids[n], 0.9

    model = scripted_model(script)
    model.config.max_position_embeddings = 4096  # the stage prompts are long in the tiny tokenizer
    holder["model"] = model
    return model


class FakeDatastore:
    """One passage per query, named after the query."""

    def __init__(self):
        self.queries, self.ks = [], []

    def search(self, queries, k, threshold=None, dedup_sources=True):
        self.queries += list(queries)
        self.ks.append(k)
        return [[Hit(id=100 * len(self.queries) + j, score=0.7 - 0.1 * j, text=f"Passage {j} on {q}", title=f"T{j}",
                     source_id=f"{q}-{j}", start=0, end=10) for j in range(k)] for q in queries]

    def __len__(self):
        return 100


def make(stages, datastore=None, **cove):
    cfg = EWEConfig.build({
        "method": "cove",
        "memory": {"unit_tokens": 64, "retrieval_units": 2, "feedback_units": 0},
        "retrieval": {"source": "fake" if datastore is not None else None, "top_k": 2},
        "decoding": {"max_new_tokens": 120},
        "cove": {"question_tokens": 200, "answer_tokens": 60, "check_tokens": 8, **cove},
    })
    return EWE(stage_model(stages), tiny_tokenizer(), cfg, datastore=datastore)


def events(r, kind):
    return [e for e in r.trace if e["type"] == kind]


# -- parsers ------------------------------------------------------------------------------


def test_parse_questions_reads_numbered_and_bulleted_lists():
    assert P.parse_questions("1. A b?\n2) C d?\n(3) E f?") == ["A b?", "C d?", "E f?"]
    assert P.parse_questions("Here they are:\n- A b?\n* C d?\n• E f?\n") == ["A b?", "C d?", "E f?"]
    assert P.parse_questions("Q1: A b?\nQ2. C d?") == ["A b?", "C d?"]
    assert P.parse_questions("1. A b?\n2. a  B?\n") == ["A b?"]  # duplicates, case and spaces folded


def test_listed_statements_become_questions():
    assert P.parse_questions("1. Marie Curie was born in Warsaw.\n2. When did she die?") == [
        "Is it true that Marie Curie was born in Warsaw?", "When did she die?"]


def test_parse_questions_keeps_only_the_first_list():
    assert P.parse_questions("1. A b?\n\n2. C d?\nQuestion: Tell me more.\n1. E f?") == ["A b?", "C d?"]


def test_parse_questions_finds_nothing_in_prose():
    assert P.parse_questions("Marie Curie was born in 1867. Where was she born?") == []
    assert P.parse_questions("1867 was the year.\n") == []


def test_fallback_asks_one_question_per_sentence():
    assert P.fallback_questions(BASELINE) == [
        ("Is it true that Marie Curie was born in Paris?", S1),
        ("Is it true that She won two Nobel prizes?", S2),
        ("Is it true that She died in 1934?", S3),
    ]
    assert P.fallback_questions("  ") == []


@pytest.mark.parametrize("reply, label", [
    ("Yes", "consistent"), ("yes, it agrees.", "consistent"), ("No.", "inconsistent"),
    ("It does not agree.", "inconsistent"), ("Inconsistent", "inconsistent"), ("Maybe", "unclear"), ("", "unclear"),
])
def test_parse_judgement(reply, label):
    assert P.parse_judgement(reply) == label


def test_echoed_labels_are_stripped():
    assert P.strip_label("Revised answer: Marie Curie was ...") == "Marie Curie was ..."
    assert P.strip_label("Answers vary.") == "Answers vary."


def test_a_revision_that_goes_on_with_the_prompts_pattern_is_cut():
    # as SmolLM2-135M wrote it for one bio: the revision, then the verified facts again
    reply = ("Jiang Qing was a Chinese actress.\nQ: What was Jiang Qing's profession? She was an actress."
             "\nA: Jiang Qing was born in Shanghai.")
    assert P.strip_label(reply) == "Jiang Qing was a Chinese actress."
    assert P.strip_label("She was born in 1867.\n\n**Inconsistencies:**\n- none") == "She was born in 1867."
    # a reply that opens with the prompt's pattern holds no answer; the prompt's placeholders go
    assert P.strip_label("Q: a question?") == ""
    assert P.strip_label('Inconsistencies:\n- "Algebraic variety is a concept.') == ""
    assert P.strip_label("Zelda is a video game.\n\n(none found)") == "Zelda is a video game."
    assert P.strip_label("A Polish physicist.\nAnd a chemist.") == "A Polish physicist.\nAnd a chemist."


def test_claim_is_the_baseline_sentence_the_question_is_about():
    sentences = [S1, S2, S3]
    assert [claim_for(q, sentences, BASELINE, PROMPT) for q in QUESTIONS] == [S1, S2, S3]  # "die" ~ "died"
    assert claim_for("Who was Marie Curie?", sentences, BASELINE, PROMPT) == S1  # only the topic's words: ties
    assert claim_for("Anything?", [], BASELINE, PROMPT) == BASELINE


# -- the pipeline -------------------------------------------------------------------------


def test_stages_run_in_order_with_the_right_inputs():
    stages = Stages()
    store = FakeDatastore()
    r = make(stages, datastore=store).generate(PROMPT)  # a datastore exists, but cove.retrieval is off
    assert stages.order == ["baseline", "plan", "answer", "answer", "answer", "check", "check", "check", "revise"]
    [(baseline_prompt, _)] = stages.of("baseline")
    assert PROMPT in baseline_prompt and BACKGROUND not in baseline_prompt
    [(plan_prompt, _)] = stages.of("plan")
    assert PROMPT in plan_prompt and BASELINE in plan_prompt
    answers = stages.of("answer")
    for (p, units), q in zip(answers, QUESTIONS):
        assert f"Question: {q}" in p
        assert PROMPT not in p and not any(s in p for s in (S1, S2, S3))  # factored: the baseline is not there
        assert sum(f"Question: {x}" in p for x in QUESTIONS) == 1  # nor the other questions
        assert BACKGROUND not in p and units == 0
    assert store.queries == []  # no retrieval without cove.retrieval
    for (p, _), q, claim in zip(stages.of("check"), QUESTIONS, (S1, S2, S3)):
        assert f"Claim: {claim}" in p and q in p and ANSWERS[q] in p
    [(revise_prompt, _)] = stages.of("revise")
    assert PROMPT in revise_prompt and BASELINE in revise_prompt
    assert all(f"Q: {q}\nA: {a}" in revise_prompt for q, a in ANSWERS.items())
    inconsistencies = revise_prompt.split("Inconsistencies:")[1]
    assert S1 in inconsistencies and S2 not in inconsistencies and S3 not in inconsistencies
    assert all(u == 0 for _, _, u in stages.calls)  # no working memory anywhere

    assert r.text == REVISED and r.finish_reason == "eos"
    assert r.token_ids == tiny_tokenizer()(REVISED, add_special_tokens=False)["input_ids"]
    assert r.retrieved == [] and r.memory == {}


def test_stats_and_trace_are_complete_and_json_ready():
    r = make(Stages()).generate(PROMPT)
    s = r.stats
    tok = tiny_tokenizer()
    assert s["new_tokens"] == len(tok(REVISED, add_special_tokens=False)["input_ids"])
    assert s["questions"] == 3 and s["inconsistent"] == 1 and s["unclear"] == 0 and not s["questions_fallback"]
    assert s["stage_tokens"]["revise"] == s["new_tokens"] + 1  # + the end token
    assert s["stage_tokens"]["baseline"] == len(tok(BASELINE, add_special_tokens=False)["input_ids"]) + 1
    assert s["decoded_tokens"] == sum(s["stage_tokens"].values()) > s["new_tokens"]
    for stage in ("baseline", "plan", "answer", "check", "revise", "retrieve"):
        assert s[f"{stage}_s"] >= 0
    assert s["total_s"] >= sum(s[f"{k}_s"] for k in ("baseline", "plan", "answer", "check", "revise"))
    assert [e["type"] for e in r.trace] == ["cove_baseline", "cove_questions"] + ["cove_answer"] * 3 + [
        "cove_check"] * 3 + ["cove_revise", "finish"]
    assert [e["judgement"] for e in events(r, "cove_check")] == ["inconsistent", "consistent", "consistent"]
    assert events(r, "cove_revise")[0]["inconsistent"] == [QUESTIONS[0]]
    assert events(r, "finish")[0]["decoded_tokens"] == s["decoded_tokens"] == r.trace[-1]["step"]
    assert json.loads(json.dumps(r.to_dict())) == r.to_dict()
    text = render(r.trace)
    assert "CoVe plan: 3 question(s), parsed from the plan" in text and "CoVe check #1 -> inconsistent" in text
    assert "CoVe revised (1 inconsistency(ies)" in text


def test_retrieval_puts_each_questions_passages_in_its_prompt_only():
    stages, store = Stages(), FakeDatastore()
    r = make(stages, datastore=store, retrieval=True, top_k=2).generate(PROMPT)
    assert store.queries == QUESTIONS and store.ks == [2, 2, 2]  # one search per question, cove.top_k each
    for (p, units), q in zip(stages.of("answer"), QUESTIONS):
        assert f"Passage 0 on {q}" in p and f"Passage 1 on {q}" in p and units == 0
        assert sum(f"Passage 0 on {x}" in p for x in QUESTIONS) == 1
        assert p.index("Question:") < p.index(f"Passage 0 on {q}")  # the request first (retrieval.prompt_format)
    for stage in ("baseline", "plan", "check", "revise"):
        assert all("Passage 0 on" not in p for p, _ in stages.of(stage))
    ans = events(r, "cove_answer")
    assert [[h["title"] for h in e["passages"]] for e in ans] == [["T0", "T1"]] * 3
    assert all(e["placement"] == "prompt" for e in ans)
    assert len(r.retrieved) == 6 and r.text == REVISED and r.stats["retrieve_s"] >= 0
    assert "[prompt: T0, T1]" in render(r.trace)


def test_retrieval_into_memory_gives_units_to_the_answers_only():
    stages, store = Stages(), FakeDatastore()
    r = make(stages, datastore=store, retrieval=True, top_k=2, passages_placement="memory").generate(PROMPT)
    assert [u for _, u in stages.of("answer")] == [2, 2, 2]
    assert all(u == 0 for s, _, u in stages.calls if s != "answer")
    assert all(BACKGROUND not in p for _, p, _ in stages.calls)
    assert r.text == REVISED and events(r, "cove_answer")[0]["placement"] == "memory"


def test_given_passages_are_the_evidence_in_place_of_retrieval():
    stages, store = Stages(), FakeDatastore()
    ewe = make(stages, datastore=store, retrieval=True)
    ewe.generate(PROMPT, passages=["Marie Curie was born in Warsaw in 1867."])
    assert store.queries == []
    assert all("Marie Curie was born in Warsaw in 1867." in p for p, _ in stages.of("answer"))
    assert all(BACKGROUND not in p for p, _ in stages.of("baseline") + stages.of("revise"))
    stages.calls.clear()
    ewe.generate(PROMPT, passages=[])  # [] = no evidence at all
    assert store.queries == [] and all(BACKGROUND not in p for _, p, _ in stages.calls)


def test_unparsable_plan_falls_back_to_one_question_per_sentence():
    stages = Stages(plan="I think the draft is fine and accurate overall.")
    r = make(stages).generate(PROMPT)
    [q] = events(r, "cove_questions")
    assert q["fallback"] is True and q["found"] == 3
    assert q["questions"] == [f"Is it true that {s[:-1]}?" for s in (S1, S2, S3)]
    assert [e["claim"] for e in events(r, "cove_check")] == [S1, S2, S3]  # each question's own sentence
    assert r.stats["questions_fallback"] is True and r.stats["questions"] == 3
    assert "fallback: one per baseline sentence" in render(r.trace)


def test_max_questions_keeps_the_first_ones():
    plan = PLAN + "\n4. Who was Pierre Curie?\n5. What did Marie Curie discover?"
    stages = Stages(plan=plan)
    r = make(stages, max_questions=2).generate(PROMPT)
    assert stages.order.count("answer") == 2 and stages.order.count("check") == 2
    [q] = events(r, "cove_questions")
    assert q["questions"] == QUESTIONS[:2] and q["found"] == 5 and q["dropped"] == 3
    assert QUESTIONS[2] not in stages.of("revise")[0][0]


def test_fallback_is_capped_too():
    r = make(Stages(plan="No list here."), max_questions=1).generate(PROMPT)
    assert events(r, "cove_questions")[0]["questions"] == [f"Is it true that {S1[:-1]}?"]


def test_a_revision_that_only_echoes_the_prompt_keeps_the_baseline():
    r = make(Stages(revised="Inconsistencies:\n(none found)")).generate(PROMPT)
    assert r.text == BASELINE and r.stats["revised"] is False
    assert events(r, "cove_revise")[0]["skipped"].startswith("the revision held only the prompt's pattern")


def test_empty_baseline_is_kept_without_revision():
    stages = Stages(baseline="")
    r = make(stages).generate(PROMPT)
    assert stages.order == ["baseline"] and r.text == ""
    assert events(r, "cove_revise")[0]["skipped"] and r.stats["revised"] is False and r.stats["questions"] == 0


def test_decoding_overrides_apply_to_baseline_and_revision():
    r = make(Stages()).generate(PROMPT, max_new_tokens=5)
    assert len(r.token_ids) == 5 and r.finish_reason == "length"
    assert events(r, "cove_baseline")[0]["tokens"] == 5
    assert events(r, "cove_answer")[0]["answer"] == ANSWERS[QUESTIONS[0]]  # answers keep cove.answer_tokens


def test_batch_runs_prompt_by_prompt():
    stages = Stages()
    rs = make(stages).generate([PROMPT, "Tell me a bio of Albert Einstein."])
    assert len(rs) == 2 and stages.order.count("baseline") == 2 and stages.order.count("revise") == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"prompt": ""}, "prompt is empty"),
    ({"prompt": "x " * 2100}, r"prompt is \d+ tokens; the context holds at most 4096"),
    ({"prompt": PROMPT, "passages": ["a", "b", "c"]}, "3 passages but memory.retrieval_units=2"),
])
def test_input_is_checked_before_any_model_work(kwargs, message):
    stages = Stages()
    with pytest.raises(ValueError, match=message):
        make(stages).generate(**kwargs)
    assert stages.calls == []


def test_runs_on_a_real_tiny_model():
    """No script: whatever a random model writes, every stage runs and the result is JSON-ready."""
    cfg = EWEConfig.build({"method": "cove", "retrieval": {"source": None}, "memory": {"unit_tokens": 24},
                           "decoding": {"max_new_tokens": 12},
                           "cove": {"question_tokens": 12, "answer_tokens": 6, "check_tokens": 2, "max_questions": 2}})
    model = tiny_model()
    model.config.max_position_embeddings = 4096
    r = EWE(model, tiny_tokenizer(), cfg).generate(PROMPT)
    assert r.stats["decoded_tokens"] == sum(r.stats["stage_tokens"].values())
    assert r.trace[-1]["type"] == "finish" and r.stats["questions"] <= 2
    json.dumps(r.to_dict())


# -- configuration ------------------------------------------------------------------------


def build(**data):
    return EWEConfig.build({"method": "cove", **data})


def test_cove_section_has_defaults_and_belongs_to_cove_only():
    cfg = build()
    assert cfg.cove.retrieval is False and cfg.cove.passages_placement == "prompt"
    assert "controller" not in cfg.model_dump()
    with pytest.raises(ConfigError, match="method 'ewe' reads only its own section 'controller': 'cove' is for method"):
        EWEConfig.build({"retrieval": {"source": None}, "cove": {"retrieval": True}})


@pytest.mark.parametrize("data, message", [
    ({"controller": {"verify_trigger": "interval"}},
     "method 'cove' reads only its own section 'cove': 'controller' is for method 'ewe'"),
    ({"retrieval": {"source": None}, "cove": {"retrieval": True}}, "cove.retrieval needs a retrieval.source"),
    ({"cove": {"retrieval": True, "top_k": 5, "passages_placement": "memory"}},
     "cove.top_k=5 passages do not fit memory.retrieval_units=4"),
    ({"retrieval": {"placement": "prompt"}, "cove": {"passages_placement": "memory"}},
     "cove.passages_placement 'memory' conflicts with retrieval.placement 'prompt'"),
    ({"cove": {"top_k": 0}}, r"cove.top_k: Input should be greater than or equal to 1 \(got 0\)"),
    ({"cove": {"max_questions": 0}}, "cove.max_questions"),
    ({"cove": {"answer_tokens": 0}}, "cove.answer_tokens"),
    ({"cove": {"passages_placement": "both"}}, "cove.passages_placement"),
    ({"cove": {"questions": 3}}, "cove.questions: Extra inputs are not permitted"),
])
def test_configuration_errors(data, message):
    with pytest.raises(ConfigError, match=message):
        build(**data)


def test_unknown_method_is_an_error():
    with pytest.raises(ConfigError, match="method: not a registered method \\(methods: a2r, cove, ewe, full-vr, prefixnli, streaming-vr"):
        EWEConfig.build({"method": "cot"})


@pytest.mark.parametrize("name", ["cove.yaml", "cove-retrieval.yaml"])
def test_shipped_configs_validate(name):
    from pathlib import Path

    cfg = EWEConfig.from_yaml(Path(__file__).parent.parent / "configs" / name)
    assert cfg.method == "cove" and "controller" not in cfg.model_dump() and not cfg.pauses
    assert cfg.cove.retrieval is (name == "cove-retrieval.yaml")
    assert (cfg.retrieval.source is not None) is cfg.cove.retrieval
