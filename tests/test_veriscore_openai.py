"""VeriScore's prompts on an OpenAI-compatible endpoint (ewe/eval/veriscore_openai.py), against a scripted local
server: what reaches the model, how its answers are read, and the per-sentence JSON the scorer reads."""
import ast
import contextlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ewe.eval import veriscore_openai as vo
from ewe.eval.veriscore_prompts import EXTRACTION_SYSTEM, VERIFICATION_SYSTEM
from ewe.verify.openai_http import LLMCallError
from ewe.verify.types import Evidence

ROOT = Path(__file__).resolve().parent.parent
MODEL = "scripted-model"
ANSWER = ("Sure, here is a short answer. Marie Curie was a Polish physicist. She was also a chemist. "
          "I hope this helps!")
PASSAGES = [Evidence("Maria Sklodowska was born in Warsaw in 1867.", title="Marie Curie", score=0.876543,
                     source_id="a"),
            Evidence("Curie studied physics in Paris.", title="Marie Curie", score=0.5, source_id="b"),
            Evidence("Warsaw is the capital of Poland.", title="Warsaw", score=0.25, source_id="c"),
            Evidence("A fourth passage, never shown.", title="Other", score=0.125, source_id="d")]


def _focused(prompt: str) -> str:
    return re.findall(r"Sentence to be focused on: (.*)\nFacts:", prompt)[-1]


def _answer(prompt: str) -> str:
    """What the scripted model says: the extraction prompt ends with the target sentence, the verification prompt
    with the claim to verify (after nine demonstrations)."""
    if prompt.rstrip().endswith("Facts:"):
        target = _focused(prompt)
        if "physicist" in target:
            return "- Marie Curie was a physicist.\n- Marie Curie was born in Warsaw."
        if "chemist" in target:
            return "1. Marie Curie was born in Warsaw.\nNote: the pronoun refers to Marie Curie."
        if "MALFORMED" in target:
            return "- Marie Curie liked MALFORMED things."
        return "No verifiable claim."
    assert prompt.rstrip().endswith("Your decision:"), prompt[-200:]
    claim = re.findall(r"\n\nClaim: (.*)\n\n", prompt)[-1]
    if "MALFORMED" in claim:
        return "I cannot tell from these results."
    if "Warsaw" in claim:
        return "The first result says so, not unsupported at all. ###Supported.###"
    return "###Unsupported.###"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state["requests"].append((self.path, body))
        if state["fail"]:
            self.send_response(500)
            self.end_headers()
            return
        content = _answer(body["messages"][-1]["content"])
        raw = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _server(fail: bool = False):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.state = {"requests": [], "fail": fail}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server.state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _Evidence:
    def __init__(self):
        self.queries = []

    def search(self, queries, k):
        self.queries.append((list(queries), k))
        return [list(PASSAGES[:k]) for _ in queries]


def _prompts(state, system: str) -> list[str]:
    return [body["messages"][-1]["content"] for _, body in state["requests"]
            if body["messages"][0]["content"] == system]


def test_an_answer_is_scored_sentence_by_sentence_in_the_scorers_shape():
    with _server() as (url, state):
        scorer = vo.build(url, MODEL, evidence_k=4, api_key_env=None, timeout=10)
        evidence = _Evidence()
        out = scorer.check(ANSWER, "Tell me about Marie Curie.", evidence, topic="Marie Curie")

    assert scorer.name == "openai" and scorer.signature == f"veriscore-openai:{MODEL}"
    assert [s["text"] for s in out] == ["Sure, here is a short answer.", "Marie Curie was a Polish physicist.",
                                        "She was also a chemist.", "I hope this helps!"]
    assert [s["verdict"] for s in out] == ["not_checkable", "unsupported", "supported", "not_checkable"]
    assert [[(c["text"], c["label"], c["score"]) for c in s["claims"]] for s in out] == [
        [],
        [("Marie Curie was a physicist.", "unsupported", 0.0), ("Marie Curie was born in Warsaw.", "supported", 1.0)],
        [("Marie Curie was born in Warsaw.", "supported", 1.0)], []]
    for s in out:
        assert set(s) == {"text", "verdict", "claims"}
        for c in s["claims"]:
            assert set(c) == {"text", "label", "score", "error", "rationale", "evidence", "other_subject"}
            assert c["error"] is None and c["other_subject"] is False
            assert c["evidence"] == [{"title": "Marie Curie", "text": PASSAGES[0].text, "score": 0.8765},
                                     {"title": "Marie Curie", "text": PASSAGES[1].text, "score": 0.5},
                                     {"title": "Warsaw", "text": PASSAGES[2].text, "score": 0.25}]
    assert out[1]["claims"][1]["rationale"] == "The first result says so, not unsupported at all. ###Supported.###"
    assert out[1]["claims"][0]["rationale"] == "###Unsupported.###"

    # every request: the chat-completions path, the model, temperature 0, room for a claim list
    assert {path for path, _ in state["requests"]} == {"/v1/chat/completions"}
    assert all(b["model"] == MODEL and b["temperature"] == 0.0 and b["max_tokens"] == vo.MAX_TOKENS
               for _, b in state["requests"])
    extractions, verifications = _prompts(state, EXTRACTION_SYSTEM), _prompts(state, VERIFICATION_SYSTEM)
    assert len(extractions) == 4 and len(state["requests"]) == 6
    # the identical claim of two sentences is searched and verified once
    assert [_focused(p) for p in extractions] == [s["text"] for s in out]
    assert sorted(re.findall(r"\n\nClaim: (.*)\n\n", p)[-1] for p in verifications) == [
        "Marie Curie was a physicist.", "Marie Curie was born in Warsaw."]
    assert evidence.queries == [(["Marie Curie was a physicist."], 4), (["Marie Curie was born in Warsaw."], 4)]


def test_the_extraction_prompt_marks_the_target_between_context():
    with _server() as (url, state):
        vo.build(url, MODEL, api_key_env=None, timeout=10).check(ANSWER, "", _Evidence())
    chemist = [p for p in _prompts(state, EXTRACTION_SYSTEM) if _focused(p) == "She was also a chemist."][0]
    text = re.findall(r"\nText: (.*)\nSentence to be focused on:", chemist)[-1]
    assert text == ("Sure, here is a short answer. Marie Curie was a Polish physicist. <SOS>She was also a chemist."
                    "<EOS> I hope this helps!")
    assert "Extract *verifiable atomic* facts." in chemist and 'please write "No verifiable claim."' in chemist


def test_the_verification_prompt_holds_the_demonstrations_the_claim_and_the_passages():
    with _server() as (url, state):
        vo.build(url, MODEL, evidence_k=2, api_key_env=None, timeout=10).check(ANSWER, "", _Evidence())
    prompt = [p for p in _prompts(state, VERIFICATION_SYSTEM) if "Warsaw." in p.rsplit("Your task:", 1)[1]][0]
    head, task = prompt.rsplit("Your task:", 1)
    assert head.startswith("You need to judge whether a claim is supported or not by Google search results.")
    assert head.count("###Supported.###") == 3 and head.count("###Unsupported.###") == 6 and "{}" not in head
    assert task == ("\n\nClaim: Marie Curie was born in Warsaw.\n\n"
                    f"Search result 1\nTitle: Marie Curie\nContent: {PASSAGES[0].text}\n\n"
                    f"Search result 2\nTitle: Marie Curie\nContent: {PASSAGES[1].text}\n\nYour decision:")


def test_an_answer_with_no_verdict_is_an_error_naming_the_claim():
    with _server() as (url, _):
        scorer = vo.build(url, MODEL, api_key_env=None, timeout=10)
        with pytest.raises(ValueError, match=r"Marie Curie liked MALFORMED things.*I cannot tell"):
            scorer.check("Marie Curie liked MALFORMED things.", "", _Evidence())


def test_a_failing_endpoint_surfaces_after_its_retries():
    with _server(fail=True) as (url, state):
        scorer = vo.build(url, MODEL, api_key_env=None, timeout=10, max_retries=1, backoff=0.01)
        with pytest.raises(LLMCallError, match="2 attempts"):
            scorer.check("Marie Curie was a Polish physicist.", "", _Evidence())
    assert len(state["requests"]) == 2


def test_an_empty_answer_asks_nothing():
    def never(prompt):
        raise AssertionError("the model was asked")

    assert vo.VeriScoreOpenAI(never).check("  ", "", _Evidence()) == []
    assert vo.VeriScoreOpenAI(never).signature == "veriscore-openai:function"


def test_reading_the_models_answers():
    assert vo.parse_claims("1. A fact.\n- Another fact.\n* A third.\n\nNote: why.\nFacts:") == [
        "A fact.", "Another fact.", "A third."]
    assert vo.parse_claims("1990 was a year.\n2) Two.") == ["1990 was a year.", "Two."]
    assert vo.parse_claims("No verifiable claim.") == [] == vo.parse_claims("")
    assert vo.parse_label("###Supported.###", "c") == "supported"
    assert vo.parse_label("Supported at first sight, but ###Unsupported.###", "c") == "unsupported"
    assert vo.parse_label("UNSUPPORTED", "c") == "unsupported"
    with pytest.raises(ValueError, match="'c'"):
        vo.parse_label("###Inconclusive.###", "c")


def test_a_long_answers_lead_sentence_is_context_once():
    sentences = [f"S{i}." for i in range(7)]
    assert vo.snippet(sentences, 0) == "<SOS>S0.<EOS> S1."
    assert vo.snippet(sentences, 2) == "S0. S1. <SOS>S2.<EOS> S3."
    assert vo.snippet(sentences, 5) == "S0. S2. S3. S4. <SOS>S5.<EOS> S6."
    assert vo.snippet(sentences[:5], 4) == "S1. S2. S3. <SOS>S4.<EOS>"


FORBIDDEN = ("ewe.verify.claims", "ewe.verify.factchecker", "ewe.verify.alignment", "ewe.verify.veto",
             "ewe.verify.llm_judge", "ewe.judge")


@pytest.mark.parametrize("name", ["veriscore_openai.py", "veriscore_prompts.py"])
def test_the_scorer_shares_no_code_with_the_loops_checker(name):
    imported = set()
    for node in ast.walk(ast.parse((ROOT / "ewe" / "eval" / name).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ["ewe", "eval"][: 3 - node.level] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            imported |= {module} | {f"{module}.{a.name}" for a in node.names}
    assert not {m for m in imported for f in FORBIDDEN if m == f or m.startswith(f + ".")}
    if name == "veriscore_openai.py":
        assert "ewe.verify.openai_http" in imported and "ewe.eval.atomic_facts" in imported  # the walk resolves
