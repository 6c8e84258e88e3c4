"""ewe.verify: claim splitting, backends' plumbing, failure recording, the labelled set,
and the offline checker's accuracy on a fixed labelled subset."""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ewe.verify import (
    NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, AlignmentChecker, Claim, Evidence, FactChecker,
    LLMClaimExtractor, LLMJudgeChecker, OpenAIChatLLM, RuleClaimExtractor, StaticEvidenceSource, Verdict,
    http_judge,
)
from ewe.eval.checker_accuracy import balanced_accuracy, run_items, summarize
from ewe.data.labelled_set import DEFAULT_PATH, FALSE_KINDS, build_labelled_set, load_labelled_set, trim
from ewe.verify.openai_http import LLMCallError, LLMResponseError
from ewe.verify.prompts import parse_claim_list, parse_verdict
from ewe.verify.text import is_negated, numbers

@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """One intra-op thread: on this shared 2-core machine, torch's two OpenMP threads
    contending with other processes made MiniLM ~8x slower (measured 29 s vs 3.6 s on
    the accuracy subset)."""
    torch = pytest.importorskip("torch")
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


CURIE = ("Marie Curie (Polish-French physicist and chemist): Marie Curie was a Polish and naturalised-French "
         "physicist and chemist. She was born in Warsaw in 1867. She was the first woman to win a Nobel Prize "
         "and won two Nobel Prizes, in 1903 and 1911. She moved to Paris in 1891.")


def texts(extraction):
    return [c.text for c in extraction.claims]


# --- claim splitting -----------------------------------------------------------

@pytest.mark.parametrize("sentence,context,expected", [
    ("Curie was born in Warsaw in 1867 and won two Nobel Prizes.", None,
     ["Curie was born in Warsaw in 1867.", "Curie won two Nobel Prizes."]),
    ("She was born in Warsaw in 1867 and won two Nobel Prizes.", "Marie Curie was a physicist.",
     ["Marie Curie was born in Warsaw in 1867.", "Marie Curie won two Nobel Prizes."]),
    ("Marie Curie, who was born in Warsaw, won two Nobel Prizes.", None,
     ["Marie Curie won two Nobel Prizes.", "Marie Curie was born in Warsaw."]),
    ("He moved to Paris, which is the capital of France.", "Albert Einstein was a physicist.",
     ["Albert Einstein moved to Paris.", "Paris is the capital of France."]),
    ("In 1903, she won the Nobel Prize; she won it again in 1911.", "Marie Curie was a chemist.",
     ["In 1903, Marie Curie won the Nobel Prize.", "Marie Curie won it again in 1911."]),
    ("Einstein was born in Ulm and raised in Munich.", None,
     ["Einstein was born in Ulm.", "Einstein was raised in Munich."]),
    ("Paris is the capital of France, and it has a population of 2 million.", None,
     ["Paris is the capital of France.", "Paris has a population of 2 million."]),
    ("Einstein was born in 1879. He died in 1955.", None, ["Einstein was born in 1879.", "Einstein died in 1955."]),
    # not split: noun-phrase coordination and lists
    ("Cats and dogs are common pets.", None, ["Cats and dogs are common pets."]),
    ("The film stars Keir Dullea, Gary Lockwood, and Douglas Rain.", None,
     ["The film stars Keir Dullea, Gary Lockwood, and Douglas Rain."]),
    # a pronoun with no named antecedent stays a pronoun
    ("She won two Nobel Prizes.", None, ["She won two Nobel Prizes."]),
    # questions and fragments hold no claim
    ("Where was she born?", "Marie Curie was a physicist.", []),
    ("Thank you!", None, []),
])
def test_rule_splitter(sentence, context, expected):
    assert texts(RuleClaimExtractor().extract(sentence, context=context)) == expected


def test_rule_splitter_offsets_and_name():
    s = "Curie was born in Warsaw in 1867 and won two Nobel Prizes."
    ex = RuleClaimExtractor().extract(s)
    assert ex.extractor == "rules" and ex.fallback is None
    first, second = ex.claims
    assert s[first.start:first.end] == "Curie was born in Warsaw in 1867" and first.source == s
    assert second.start is None  # rewritten: subject carried over


def test_text_helpers():
    kinds = {n.raw: n.kind for n in numbers("In 1867, two of 1,200 people (45%) saw the 1950s and the 20th century.")}
    assert kinds == {"1867": "year", "two": "word", "1,200": "number", "45": "number", "1950s": "decade", "20th": "ordinal"}
    assert numbers("1,200")[0].key == "1200" and numbers("two")[0].key == "2"
    assert is_negated("It is not red.") and is_negated("He never won.") and not is_negated("Nothingness is a word.")


# --- LLM extractor and prompt parsing ---------------------------------------------

def test_llm_extractor_parses_lists_and_records_fallback():
    seen = []

    def llm(prompt):
        seen.append(prompt)
        return "Facts:\n1. Marie Curie was born in Warsaw.\n2) Marie Curie won two Nobel Prizes\n\nHope this helps!"

    ex = LLMClaimExtractor(llm).extract("She was born in Warsaw and won two Nobel Prizes.", context="Marie Curie was a physicist.",
                                        prompt="Tell me about Marie Curie.")
    assert texts(ex) == ["Marie Curie was born in Warsaw.", "Marie Curie won two Nobel Prizes."]
    assert ex.fallback is None and ex.extractor == "llm"
    assert "<SOS>She was born in Warsaw and won two Nobel Prizes.<EOS>" in seen[0]
    assert "Marie Curie was a physicist." in seen[0] and "Question: Tell me about Marie Curie." in seen[0]

    assert texts(LLMClaimExtractor(lambda p: "No verifiable claim.").extract("Hello there!")) == []
    bullets = LLMClaimExtractor(lambda p: "- Paris is in France.\n* Paris is a city.").extract("x")
    assert texts(bullets) == ["Paris is in France.", "Paris is a city."]

    bad = LLMClaimExtractor(lambda p: "I think the sentence is fine.").extract("Curie was born in Warsaw and won a prize.")
    assert bad.fallback and bad.fallback.startswith("malformed llm answer") and bad.extractor == "llm->rules"
    assert texts(bad) == ["Curie was born in Warsaw.", "Curie won a prize."]

    def broken(prompt):
        raise TimeoutError("slow")

    failed = LLMClaimExtractor(broken).extract("Curie was born in Warsaw.")
    assert "TimeoutError" in failed.fallback and texts(failed) == ["Curie was born in Warsaw."]


@pytest.mark.parametrize("answer,expected", [
    ("###Supported###", True), ("### unsupported ###", False), ("supported.", True), ("UNSUPPORTED", False),
    ("The claim is Not Supported by the passages.", False), ("Answer: Supported, because [1] says so.", True),
    ("Supported. It is not unsupported.", True), ("I cannot tell.", None), ("", None), (None, None),
])
def test_parse_verdict(answer, expected):
    assert parse_verdict(answer) is expected


def test_parse_claim_list_malformed():
    assert parse_claim_list("") is None and parse_claim_list("just prose") is None
    assert parse_claim_list("No verifiable claims here.") == []


# --- LLM judge ----------------------------------------------------------------------

def test_llm_judge_labels_and_errors():
    claims = [Claim("Curie was born in Warsaw."), Claim("Curie was born in Lyon."), Claim("x y"), Claim("no evidence")]
    ev = [Evidence(CURIE, "Marie Curie")]
    answers = iter(["Answer: ###Supported###", "unsupported", "maybe?"])
    prompts = []

    def llm(p):
        prompts.append(p)
        return next(answers)

    v = LLMJudgeChecker(llm).check_claims(claims, [ev, ev, ev, []])
    assert [x.label for x in v] == [SUPPORTED, UNSUPPORTED, NOT_ENOUGH_EVIDENCE, NOT_ENOUGH_EVIDENCE]
    assert v[0].error is None and v[1].error is None and "malformed" in v[2].error and v[3].error is None
    assert len(prompts) == 3 and "Claim: Curie was born in Warsaw." in prompts[0] and "[1] " in prompts[0]

    def boom(p):
        raise RuntimeError("down")

    (e,) = LLMJudgeChecker(boom).check_claims([claims[0]], [ev])
    assert e.label == NOT_ENOUGH_EVIDENCE and "RuntimeError: down" in e.error


# --- FactChecker: failures are recorded, never raised --------------------------------

class Raising:
    name = "raising"

    def check_claims(self, claims, evidence_per_claim):
        raise RuntimeError("backend exploded")


class Short:
    name = "short"

    def check_claims(self, claims, evidence_per_claim):
        return []


class Fixed:
    """Supports claims that mention Warsaw."""

    name = "fixed"

    def check_claims(self, claims, evidence_per_claim):
        return [Verdict(c, SUPPORTED if "Warsaw" in c.text else UNSUPPORTED, 1.0, list(e), self.name)
                for c, e in zip(claims, evidence_per_claim)]


class BrokenSource:
    def search(self, queries, k):
        raise ConnectionError("index offline")


SENT = "Curie was born in Warsaw in 1867 and won two Nobel Prizes."


@pytest.mark.parametrize("checker,source,needle", [
    (Raising(), StaticEvidenceSource([CURIE]), "backend exploded"),
    (Short(), StaticEvidenceSource([CURIE]), "returned 0 verdicts for 2 claims"),
    (Fixed(), BrokenSource(), "evidence search failed: ConnectionError"),
    (Fixed(), None, "no evidence source"),
])
def test_check_sentence_records_failures(checker, source, needle):
    res = FactChecker(checker, evidence=source).check_sentence(SENT)
    assert len(res.verdicts) == 2 and all(needle in v.error for v in res.verdicts)
    assert all(v.label == NOT_ENOUGH_EVIDENCE for v in res.verdicts)
    assert not res.factual and not res.needs_rewrite  # the caller keeps the sentence


def test_sentences_checked_together_get_what_each_gets_alone_from_one_search_and_one_backend_call():
    class Counting(Fixed):
        def __init__(self):
            self.batches = []

        def check_claims(self, claims, evidence_per_claim):
            self.batches.append(len(claims))
            return super().check_claims(claims, evidence_per_claim)

    class Searches(StaticEvidenceSource):
        queries: list = []

        def search(self, queries, k):
            self.queries.append(list(queries))
            return super().search(queries, k)

    items = [(SENT, None, "Tell me a bio of Marie Curie."), ("Hello there!", None, None),
             ("She was born in Warsaw.", "Marie Curie was a physicist.", "Tell me a bio of Marie Curie."),
             ("He won two Nobel Prizes.", None, "Tell me a bio of Albert Einstein.")]
    backend, source = Counting(), Searches([CURIE])
    fc = FactChecker(backend, evidence=source, query_with_prompt=True)
    together = fc.check_sentences(items)
    assert len(backend.batches) == 1
    assert len(source.queries) == 1  # every claim's query, each with its own prompt
    assert any(q.startswith("Tell me a bio of Albert Einstein.") for q in source.queries[0])
    alone = [fc.check_sentence(sentence, context=context, prompt=prompt) for sentence, context, prompt in items]
    for a, b in zip(alone, together):
        assert b.sentence == a.sentence and [c.text for c in b.claims] == [c.text for c in a.claims]
        assert [(v.label, v.score, v.details) for v in b.verdicts] == [(v.label, v.score, v.details)
                                                                       for v in a.verdicts]
        assert set(b.timings) <= {"extract", "search", "check", "total"}
    assert together[1].claims == [] and together[0].verdicts and together[3].verdicts
    # a claim about Einstein against Curie's page: bound to its own prompt's subject, never supported
    assert together[3].verdicts[0].label != SUPPORTED and together[3].verdicts[0].details["subject_binding"]


def test_check_sentence_outcome_and_feedback():
    fc = FactChecker(Fixed(), evidence=StaticEvidenceSource([CURIE]))
    res = fc.check_sentence(SENT)
    assert [v.label for v in res.verdicts] == [SUPPORTED, UNSUPPORTED]
    assert not res.factual and res.needs_rewrite and [c.text for c in res.nonfactual_claims] == ["Curie won two Nobel Prizes."]
    assert res.feedback_instruction() == ("Please refrain from including the following imprecise statements: "
                                          "(1) Curie won two Nobel Prizes.")
    assert res.evidence_for(True)[0].text == CURIE
    assert set(res.timings) == {"extract", "search", "check", "total"}
    json.dumps(res.to_dict())
    for chatter in ("Hello there!", "Do you want to know more?"):
        empty = fc.check_sentence(chatter)  # nothing to check: not checkable, never factual, kept
        assert empty.claims == [] and not empty.checkable and not empty.factual and not empty.needs_rewrite
    none = FactChecker(Fixed(), extractor=LLMClaimExtractor(lambda p: "No verifiable claim.")).check_sentence("Wow.")
    assert none.claims == [] and not none.checkable and not none.factual and not none.needs_rewrite


# --- OpenAI-compatible HTTP endpoint on 127.0.0.1 --------------------------------------

class Handler(BaseHTTPRequestHandler):
    calls: list = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model = body["model"]
        Handler.calls.append((model, self.path, self.headers.get("Authorization")))
        if model == "slow":
            time.sleep(1.0)
        if model == "flaky" and sum(1 for c in Handler.calls if c[0] == "flaky") == 1:
            return self._send(503, b"busy")
        if model == "bad-request":
            return self._send(400, b"no")
        if model == "garbage":
            return self._send(200, b"<html>not json</html>")
        if model == "no-choices":
            return self._send(200, json.dumps({"id": "x", "choices": []}).encode())
        text = "###Unsupported###" if "Lyon" in body["messages"][-1]["content"] else "###Supported###"
        self._send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode())

    def _send(self, code, payload):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_http_endpoint_answers_and_key(server, monkeypatch):
    monkeypatch.setenv("EWE_TEST_KEY", "sekret")
    judge = http_judge(server, "good", api_key_env="EWE_TEST_KEY", timeout=5)
    ev = [Evidence(CURIE, "Marie Curie")]
    v = judge.check_claims([Claim("Curie was born in Warsaw."), Claim("Curie was born in Lyon.")], [ev, ev])
    assert [x.label for x in v] == [SUPPORTED, UNSUPPORTED] and v[0].backend == "http:good"
    assert Handler.calls[-1] == ("good", "/v1/chat/completions", "Bearer sekret")
    monkeypatch.delenv("EWE_TEST_KEY")
    OpenAIChatLLM(server, "good", api_key_env="EWE_TEST_KEY")("hi")
    assert Handler.calls[-1][2] is None


def test_http_retries_then_succeeds(server):
    assert OpenAIChatLLM(server, "flaky", max_retries=2, backoff=0.01)("hi") == "###Supported###"
    assert sum(1 for c in Handler.calls if c[0] == "flaky") == 2


def test_http_timeout_malformed_and_client_error(server):
    t = time.perf_counter()
    with pytest.raises(LLMCallError, match="after 2 attempts"):
        OpenAIChatLLM(server, "slow", timeout=0.2, max_retries=1, backoff=0.01)("hi")
    assert time.perf_counter() - t < 2.0
    with pytest.raises(LLMResponseError):
        OpenAIChatLLM(server, "garbage")("hi")
    with pytest.raises(LLMResponseError):
        OpenAIChatLLM(server, "no-choices")("hi")
    n = len(Handler.calls)
    with pytest.raises(LLMCallError, match="HTTP 400"):
        OpenAIChatLLM(server, "bad-request", max_retries=3)("hi")
    assert len(Handler.calls) == n + 1  # a 4xx is not retried
    with pytest.raises(LLMCallError):
        OpenAIChatLLM("http://127.0.0.1:9/v1", "x", timeout=0.5, max_retries=0)("hi")  # nothing listens


def test_http_failures_through_fact_checker(server):
    for model, needle in [("slow", "LLMCallError"), ("garbage", "LLMResponseError")]:
        judge = http_judge(server, model, timeout=0.2, max_retries=0)
        res = FactChecker(judge, evidence=StaticEvidenceSource([CURIE])).check_sentence("Curie was born in Warsaw.")
        assert res.errors and needle in res.errors[0] and not res.needs_rewrite


# --- NLI backend with a tiny random BERT ------------------------------------------------

@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny-nli")
    words = sorted({w for w in re.findall(r"\w+", (CURIE + " lyon paris born won prizes").lower())})
    (path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    tok = BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=128, num_labels=3,
                     id2label={0: "ENTAILMENT", 1: "neutral", 2: "Contradiction"},
                     label2id={"ENTAILMENT": 0, "neutral": 1, "Contradiction": 2})
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg)

    def save(bias, sub, id2label=None):
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor(bias))
        if id2label:
            model.config.id2label = id2label
            model.config.label2id = {v: k for k, v in id2label.items()}
        model.save_pretrained(path / sub)
        tok.save_pretrained(path / sub)
        return str(path / sub)

    return {"entail": save([5.0, 0.0, 0.0], "entail"), "contra": save([0.0, 0.0, 5.0], "contra"),
            "generic": save([0.0, 5.0, 0.0], "generic", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})}


def test_nli_plumbing_and_label_mapping(tiny_nli):
    from ewe.verify import NLIChecker

    claims = [Claim("Curie was born in Warsaw."), Claim("Curie won two prizes.")]
    ev = [[Evidence(CURIE, "Marie Curie"), Evidence("Paris is in France.")], [Evidence(CURIE)]]
    v = NLIChecker(tiny_nli["entail"]).check_claims(claims, ev)
    assert [x.label for x in v] == [SUPPORTED, SUPPORTED] and v[0].score > 0.9 and v[0].backend == "nli"
    v = NLIChecker(tiny_nli["contra"]).check_claims(claims, ev)
    assert [x.label for x in v] == [UNSUPPORTED, UNSUPPORTED] and v[0].score < 0.1
    # a checkpoint whose labels are LABEL_i needs a map; with one, index 1 is read as supported
    with pytest.raises(ValueError, match="cannot map model label 0"):
        NLIChecker(tiny_nli["generic"])
    v = NLIChecker(tiny_nli["generic"], label_map={0: "unsupported", "label_1": "supported", 2: "not_enough_evidence"}
                   ).check_claims(claims[:1], ev[:1])
    assert v[0].label == SUPPORTED
    assert NLIChecker(tiny_nli["entail"]).check_claims([claims[0]], [[]])[0].label == NOT_ENOUGH_EVIDENCE


# --- labelled set -------------------------------------------------------------------------

def test_labelled_set_file_is_paired_minimal_and_split_by_title():
    items = load_labelled_set()
    assert 200 <= len(items) <= 320 and len(items) % 2 == 0
    by_pair = {}
    for it in items:
        by_pair.setdefault(it["pair"], []).append(it)
    for t, f in by_pair.values():
        assert t["label"] is True and f["label"] is False and t["title"] == f["title"] and t["split"] == f["split"]
        e = f["edit"]
        assert t["sentence"][e["start"]:e["end"]] == e["from"] and e["from"] != e["to"]
        assert f["sentence"] == t["sentence"][:e["start"]] + e["to"] + t["sentence"][e["end"]:]
        assert len(e["from"].split()) <= 4 and len(e["to"].split()) <= 5  # one small span changed
        assert t["sentence"] in t["evidence"] or t["kind"] == "trimmed"
        assert f["sentence"] not in f["evidence"]
        if f["kind"] == "negation":
            assert e["to"] == " not"
    tune = {it["title"] for it in items if it["split"] == "tune"}
    test = {it["title"] for it in items if it["split"] == "test"}
    assert tune and test and not tune & test
    kinds = {it["kind"] for it in items if not it["label"]}
    assert kinds == set(FALSE_KINDS)


def test_labelled_set_builder_is_deterministic():
    from ewe.data import wiki

    some = dict(sorted(wiki.summaries().items())[:1500])
    a = build_labelled_set(some, n_pairs=10, seed=3)
    assert 16 <= len(a) <= 20 and len({it["kind"] for it in a if not it["label"]}) >= 4
    assert a == build_labelled_set(some, n_pairs=10, seed=3) and a != build_labelled_set(some, n_pairs=10, seed=4)


@pytest.mark.slow
def test_labelled_set_file_is_reproducible():
    committed = load_labelled_set(DEFAULT_PATH)
    assert build_labelled_set(n_pairs=150, seed=0) == committed


def test_trim_keeps_a_true_prefix():
    assert trim("Marie Curie (1867–1934) was a physicist who won prizes.") == "Marie Curie was a physicist who won prizes."
    assert trim("Paris is the capital of France, and it is large in size.") == "Paris is the capital of France."
    assert trim("Apples, pears, and plums are fruits of many kinds.") is None


# --- the offline default (MiniLM) ------------------------------------------------------------

@pytest.fixture(scope="module")
def alignment():
    return AlignmentChecker()


@pytest.mark.parametrize("claim,label,why", [
    ("Marie Curie was born in Warsaw in 1867.", SUPPORTED, ""),
    ("Marie Curie was born in Warsaw in 1868.", UNSUPPORTED, "number 1868"),
    ("Marie Curie was born in Paris in 1867.", UNSUPPORTED, "name"),  # Paris is in the passage, not in that sentence
    ("Marie Curie was born in Krakow in 1867.", UNSUPPORTED, "name krakow"),
    ("Marie Curie was not born in Warsaw.", UNSUPPORTED, "negation"),
    ("Marie Curie won two Nobel Prizes.", SUPPORTED, ""),
    ("Marie Curie won three Nobel Prizes.", UNSUPPORTED, "number 3 not in evidence (evidence has 2)"),
    ("The Amazon river flows through Brazil.", NOT_ENOUGH_EVIDENCE, "no evidence span close enough"),
])
def test_alignment_checker_cases(alignment, claim, label, why):
    (v,) = alignment.check_claims([Claim(claim)], [[Evidence(CURIE, "Marie Curie")]])
    assert v.label == label, v.rationale
    assert why in v.rationale
    assert (v.score >= 0.5) == (label == SUPPORTED)


def test_embedding_evidence_source():
    from ewe.verify import EmbeddingEvidenceSource

    src = EmbeddingEvidenceSource([Evidence(CURIE, "Marie Curie"), "The Amazon is a river in South America.",
                                   Evidence("Paris is the capital of France.", "Paris")])
    hits = src.search(["Where was Marie Curie born?", "longest river in Brazil"], k=2)
    assert [h[0].title for h in hits] == ["Marie Curie", ""] and hits[1][0].text.startswith("The Amazon")
    assert all(len(h) == 2 and h[0].score >= h[1].score for h in hits)
    assert src.search([], 3) == [] and EmbeddingEvidenceSource([]).search(["x"], 3) == [[]]


def stratified_subset(per_kind: int = 3) -> list[dict]:
    """The first `per_kind` pairs of each false kind in the test split, in file order."""
    items = load_labelled_set(split="test")
    false_kind = {it["pair"]: it["kind"] for it in items if not it["label"]}
    taken: dict[str, int] = {}
    keep = set()
    for pair, kind in false_kind.items():
        if taken.get(kind, 0) < per_kind:
            taken[kind] = taken.get(kind, 0) + 1
            keep.add(pair)
    return [it for it in items if it["pair"] in keep]


# Measured on this subset (3 pairs per false kind of the test split, gold evidence):
# balanced accuracy SUBSET_MEASURED; the assertion leaves a margin of 0.1.
SUBSET_MEASURED = 0.933


def test_offline_checker_accuracy_on_fixed_subset(alignment):
    items = stratified_subset()
    rows = run_items(FactChecker(alignment), items, gold_evidence=True)
    s = summarize(rows)
    assert s["n"] == 30 and len(s["per_kind"]) >= 6
    assert s["balanced_accuracy"] >= SUBSET_MEASURED - 0.10, s
    assert balanced_accuracy([True, False], [True, True]) == 0.5


def test_he_and_she_refer_to_the_person_the_prompt_asks_about():
    from ewe.verify.claims import RuleClaimExtractor, prompt_person

    assert prompt_person("Tell me a bio of Albert Einstein.") == "Albert Einstein"
    assert prompt_person("Who was Ada Lovelace?") == "Ada Lovelace"
    # the name ends at punctuation: an instruction after the question is not part of it
    assert prompt_person("Tell me a bio of Walt Whitman. Provide as many specific details.") == "Walt Whitman"
    assert prompt_person("Tell me a bio of J. R. R. Tolkien.") == "J. R. R. Tolkien"
    assert prompt_person("Tell me a bio of Leonardo da Vinci, please.") == "Leonardo da Vinci"
    # a regnal number's period ends the name when a new sentence runs on; an initial's does not
    assert prompt_person("Tell me a bio of Pope Leo I. Provide as many details.") == "Pope Leo I"
    assert prompt_person("Tell me a bio of John F. Kennedy. Provide as many details.") == "John F. Kennedy"
    assert prompt_person("Tell me a bio of Pope John Paul II.") == "Pope John Paul II"
    # "and" after an "of" joins the lands of a style
    assert prompt_person("Tell me a bio of Nzinga of Ndongo and Matamba.") == "Nzinga of Ndongo and Matamba"
    claims = RuleClaimExtractor().extract("He was a Nobel laureate in Physics.", context="Born in Ulm, Germany, he was bright.",
                                          prompt="Tell me a bio of Albert Einstein.").claims
    assert [c.text for c in claims] == ["Albert Einstein was a Nobel laureate in Physics."]
    # "it" keeps following the context
    claims = RuleClaimExtractor().extract("It flows into the sea.", context="The Amazon is a river.",
                                          prompt="Tell me a bio of Albert Einstein.").claims
    assert [c.text for c in claims] == ["The Amazon flows into the sea."]


def test_it_refers_to_the_thing_the_prompt_asks_about():
    """An objects answer's "It is ..." is about the prompt's topic (an "about X" prompt does not say
    X is a person), unless another unnamed thing was the subject since; a bio's person never is
    an "it"."""
    from ewe.verify.claims import RuleClaimExtractor, asks_about_person, prompt_topic

    assert prompt_topic("What can you tell me about Fundamental group? Provide details.") == "Fundamental group"
    assert prompt_topic("What can you tell me about Phoenix (mythology)? Provide details.") == "Phoenix"
    assert prompt_topic("Tell me about the Eiffel Tower.") == "Eiffel Tower"
    assert prompt_topic("Tell me a bio of Marie Curie.") == "Marie Curie"
    assert prompt_topic("Tell me a bio of Philip II of Macedon. Provide details.") == "Philip II of Macedon"
    assert prompt_topic("Tell me a bio of Tigranes the Great. Provide details.") == "Tigranes the Great"
    assert prompt_topic("Tell me more about it.") is None
    assert asks_about_person("Who was Ada Lovelace?") and not asks_about_person("Tell me about Tonga.")

    def claims(sentence, context, prompt):
        return [c.text for c in RuleClaimExtractor().extract(sentence, context=context, prompt=prompt).claims]

    about = "What can you tell me about Nagoya? Provide as many specific details as possible."
    assert claims("It is the largest city in the Chubu region.", "Nagoya is the capital of Aichi.", about) == [
        "Nagoya is the largest city in the Chubu region."]
    assert claims("Its seaport is the largest in Japan.", "Nagoya is a city.", about) == [
        "Nagoya's seaport is the largest in Japan."]
    group = "What can you tell me about Fundamental group?"
    assert claims("It is a homotopy invariant.", None, group) == ["Fundamental group is a homotopy invariant."]
    assert claims("It is abelian.", "The fundamental group is a group.", group) == ["Fundamental group is abelian."]
    # another thing was the subject since: "it" may be that thing, so it stays
    assert claims("It is made of gold.", "A statue stands inside.", "What can you tell me about Parthenon?") == [
        "It is made of gold."]
    # a he/she that stood for the topic makes it a person: no "it" for them
    assert claims("It was awarded in 1903.", "She won the Nobel Prize.", "Tell me about Marie Curie.") == [
        "It was awarded in 1903."]
    assert claims("It was awarded in 1903.", "Marie Curie won the Nobel Prize.", "Tell me a bio of Marie Curie.") == [
        "It was awarded in 1903."]


def test_he_in_an_answer_about_a_thing_is_the_last_person_named():
    """An "about X" prompt does not say X is a he: a he/she is the last named subject, and the
    topic (whole, never its capitalized first word) only when nothing was named before it."""
    from ewe.verify.claims import RuleClaimExtractor

    def claims(sentence, context, prompt):
        return [c.text for c in RuleClaimExtractor(atomic=True).extract(sentence, context=context, prompt=prompt).claims]

    judo = "What can you tell me about Judo? Provide as many specific details as possible."
    assert claims("He was born in 1860.", "Kano Jigoro founded judo in 1882.", judo) == ["Kano Jigoro was born in 1860."]
    gauss = "What can you tell me about Gaussian elimination?"
    assert claims("He was the youngest of five children.", None, gauss) == [
        "Gaussian elimination was the youngest of five children."]
    assert claims("Founded: 1882", None, gauss) == ["Gaussian elimination was founded 1882."]
    assert claims("He is the god of war.", None, "What can you tell me about Odin?") == ["Odin is the god of war."]
    assert claims("He is the god of war.", "Thor is the son of Odin.", "What can you tell me about Odin?") == [
        "Thor is the god of war."]


# --- claims: whole propositions only, hedges stripped, nothing from text with no claim ---------


@pytest.mark.parametrize("sentence,claims", [
    ("Reportedly, Marie Curie was born in 1867.", ["Marie Curie was born in 1867."]),
    ("It is said that she won two Nobel Prizes.", ["Marie Curie won two Nobel Prizes."]),
    ("According to her biographers, Curie was born in Warsaw and died in 1934.",
     ["Curie was born in Warsaw.", "Curie died in 1934."]),
    ("Historians note that Curie was a physicist.", ["Curie was a physicist."]),
    ("Some say that by most accounts, Curie was a chemist.", ["Curie was a chemist."]),
    ("Marie Curie was a brilliant.", []),
    ("She was a famous.", []),
    ("She was a teacher.", ["Marie Curie was a teacher."]),
    ("She was a student and later a merchant.", ["Marie Curie was a student and later a merchant."]),
    ("Pierre Curie was the president.", ["Pierre Curie was the president."]),
    ("She was born in.", []),
    ("Was Marie Curie a chef?", []),
    ("玛丽·居里是一位著名的厨师。", []),
    ("Marie Curie était une physicienne française.", []),
    ("Marie Curie war eine polnische Physikerin und Chemikerin.", []),
    ("Paris hosts museums, galleries, theatres.", ["Paris hosts museums, galleries, theatres."]),
    ("", []),
    # the loop's unit is the clause its judge was trained on; the scorer's is atomic (further down)
    ("Marie Curie was a physicist and a chemist.", ["Marie Curie was a physicist and a chemist."]),
])
def test_rule_claims_are_whole_propositions(sentence, claims):
    got = RuleClaimExtractor().extract(sentence, prompt="Tell me a bio of Marie Curie.").claims
    assert [c.text for c in got] == claims


def test_a_sentence_without_claims_is_not_checkable_never_factual():
    from ewe.verify.types import NOT_CHECKABLE

    class Never:
        name = "never"

        def check_claims(self, claims, evidence):
            raise AssertionError("no claim should reach the backend")

    check = FactChecker(Never(), evidence=StaticEvidenceSource(["Paris is in France."])).check_sentence("Qui est-ce ?")
    assert not check.checkable and not check.factual and not check.needs_rewrite
    assert check.verdict == NOT_CHECKABLE and check.to_dict()["verdict"] == NOT_CHECKABLE


def test_coordinated_adjectives_stay_one_claim():
    """Seen in `make demo`: "a brilliant and talented scientist" was split at "and" (talented
    read as a verb) and the claim lost its verb; verbs after "and" still split."""
    from ewe.verify.claims import RuleClaimExtractor

    x = RuleClaimExtractor()

    def claims(s):
        return [c.text for c in x.extract(s, prompt="Tell me a bio of Marie Curie.").claims]

    assert claims("Marie Curie was a brilliant and talented scientist.") == [
        "Marie Curie was a brilliant and talented scientist."]
    assert claims("Marie Curie was a respected and celebrated author.") == [
        "Marie Curie was a respected and celebrated author."]
    assert claims("Marie Curie built a house and painted it.") == ["Marie Curie built a house.", "Marie Curie painted it."]
    assert claims("Marie Curie founded a company and moved to Paris.") == [
        "Marie Curie founded a company.", "Marie Curie moved to Paris."]


@pytest.mark.parametrize("line,claims", [
    ("Birthdate: 22 March 1614", ["Jean Racine's birthdate is 22 March 1614."]),
    ("**Born:** 22 December 1639, La Ferté-Milon", ["Jean Racine was born 22 December 1639, La Ferté-Milon."]),
    ("- He wrote Phèdre", ["Jean Racine wrote Phèdre."]),
    ("2) He died in 1699", ["Jean Racine died in 1699."]),
    ("Place of birth: La Ferté-Milon", ["Jean Racine's place of birth is La Ferté-Milon."]),
    ("In 1677: he left the theatre", ["In 1677: he left the theatre."]),  # a sentence with a colon, not a field
    ("* Tragedies: These are his best-known plays", ["Tragedies are his best-known plays."]),  # the value is about the label
    # a small model's fact sheets: lower-case labels, a bare "*" as the mark, the name said again
    ("* birthdate: 28 March 1896", ["Jean Racine's birthdate is 28 March 1896."]),
    ("*Died: 21 April 1699", ["Jean Racine died 21 April 1699."]),
    ("*Name: Jean Racine", []),
    ("* family name: Racine", []),
    # headings, introductions and the answer speaking to the reader state nothing
    ("Here is a detailed biography of Jean Racine:", []),
    ("**Early life:**", []),
    ("Jean Racine's bio:", []),
    ("Sure, I'd be happy to provide a more detailed biography of Jean Racine.", []),
    ("I'm glad I could provide a brief overview of Jean Racine.", []),
    # the answer describing itself, and a passage's source note copied from the prompt
    ("This bio provides a detailed and accurate account of Jean Racine's life and career.", []),
    ("The above summary covers his plays.", []),
    ("(from the article on Pierre Corneille)", []),
    ("He wrote Phèdre. (from the article on Phèdre)", ["Jean Racine wrote Phèdre."]),
    ("The biography of Racine by his son appeared in 1747.", ["The biography of Racine by his son appeared in 1747."]),
])
def test_list_items_and_field_lines_are_checked_like_sentences(line, claims):
    from ewe.verify.claims import RuleClaimExtractor

    got = RuleClaimExtractor().extract(line, context="Jean Racine was a French dramatist.",
                                       prompt="Tell me a bio of Jean Racine.")
    assert [c.text for c in got.claims] == claims


@pytest.mark.parametrize("sentence,claims", [
    # a list of predicate nouns is one claim per noun; a "who" clause after it is the subject's own claim
    ("Marie Curie was a physicist and a chemist.", ["Marie Curie was a physicist.", "Marie Curie was a chemist."]),
    ("Arnold Schoenberg is a renowned American actor, businessman, and former bodybuilder who defiantly "
     "reaffirmed his Judaism.", ["Arnold Schoenberg is a renowned American actor.", "Arnold Schoenberg is a businessman.",
                                 "Arnold Schoenberg is a former bodybuilder.",
                                 "Arnold Schoenberg defiantly reaffirmed his Judaism."]),
    ("Enver Pasha was a Turkish officer, revolutionary, and convicted war criminal.",
     ["Enver Pasha was a Turkish officer.", "Enver Pasha was a revolutionary.", "Enver Pasha was a convicted war criminal."]),
    # adjectives and bare pairs stay whole
    ("Marie Curie was a brilliant, talented, and dedicated scientist.",
     ["Marie Curie was a brilliant, talented, and dedicated scientist."]),
    ("Marie Curie was a poet and novelist.", ["Marie Curie was a poet and novelist."]),
    # a comma inside one noun phrase ("a long, curly beard") is no list of predicates
    ("Marie Curie was a woman with a long, raven-black hair and a long, curly beard.",
     ["Marie Curie was a woman with a long, raven-black hair and a long, curly beard."]),
    ("Marie Curie was a tall, quiet woman and a physicist.", ["Marie Curie was a tall, quiet woman and a physicist."]),
    # an adverb after the copula stays with the first claim
    ("Marie Curie was also a physicist, chemist, and teacher.",
     ["Marie Curie was also a physicist.", "Marie Curie was a chemist.", "Marie Curie was a teacher."]),
    # a list that is a preposition's object, or holds an adverbial item, is no list of predicates
    ("Marie Curie was the daughter of a teacher and a headmistress.",
     ["Marie Curie was the daughter of a teacher and a headmistress."]),
    ("Marie Curie was a goddess of wisdom, war, magic, and fate.",
     ["Marie Curie was a goddess of wisdom, war, magic, and fate."]),
    ("Marie Curie was a physicist, chemist, and above all, a teacher.",
     ["Marie Curie was a physicist, chemist, and above all, a teacher."]),
    # a "who" after a preposition's object or a verb speaks of that other person, not the subject
    ("Marie Curie was raised in Warsaw, with a father who was a teacher.",
     ["Marie Curie was raised in Warsaw, with a father who was a teacher."]),
    ("Marie Curie was the daughter of a teacher who ran a school.",
     ["Marie Curie was the daughter of a teacher who ran a school."]),
    ("Marie Curie was a Polish physicist who won two Nobel prizes.",
     ["Marie Curie was a Polish physicist.", "Marie Curie won two Nobel prizes."]),
    ("Marie Curie was a 19th-century Polish physicist, a renowned chemist and teacher, who won two Nobel prizes.",
     ["Marie Curie was a 19th-century Polish physicist, a renowned chemist and teacher.",
      "Marie Curie won two Nobel prizes."]),
])
def test_the_atomic_splitter_makes_one_claim_per_predicate_noun(sentence, claims):
    from ewe.verify.claims import RuleClaimExtractor

    ex = RuleClaimExtractor(atomic=True)
    assert ex.name == "atomic"
    assert [c.text for c in ex.extract(sentence, prompt="Tell me a bio of Marie Curie.").claims] == claims
