"""`ewe serve` refuses what it cannot honour (issue 59): strict types, no silently ignored field,
OpenAI's error shape on every route and method, a body nested too deep refused before parsing,
the docs behind the key, and a fuzzer: whatever a client sends, the answer is a 2xx with a valid
body or a 4xx in OpenAI's shape, never a 5xx, and the server stays healthy.

In process, against the ASGI app (starlette's TestClient) over a tiny scripted model."""
from __future__ import annotations

import json
import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scripted import scripted_model, text_script
from servers import running
from starlette.testclient import TestClient
from tiny import tiny_tokenizer

from ewe import EWE
from ewe.config import EWEConfig
from ewe.serving.protocol import MAX_JSON_DEPTH, json_depth
from ewe.serving.server import create_app

ANSWER = "Marie Curie was a physicist."
USER = [{"role": "user", "content": "Tell me a bio of Marie Curie."}]


def plain_model():
    cfg = EWEConfig.build({"memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 0},
                           "retrieval": {"source": None}, "decoding": {"max_new_tokens": 16}})
    return EWE(scripted_model(text_script(lambda units: ANSWER)), tiny_tokenizer(), cfg)


@pytest.fixture(scope="module")
def http():
    with TestClient(create_app({"plain": plain_model()}), raise_server_exceptions=False) as client:
        yield client


def openai_error(r, status: int, code: str | None = None, param: str | None = None) -> dict:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"] and error["type"]
    if code is not None:
        assert error["code"] == code, error
    if param is not None:
        assert error["param"] == param, error
    return error


def chat(http, **fields):
    return http.post("/v1/chat/completions", json={"messages": USER, "max_tokens": 4, **fields})


def test_passages_may_carry_their_title(http):
    r = chat(http, ewe={"passages": ["plain text", {"title": "Marie Curie", "text": "She was a physicist."}]})
    assert r.status_code == 200, r.text
    openai_error(chat(http, ewe={"passages": [{"title": "Marie Curie", "text": "x", "url": "y"}]}), 400)
    openai_error(chat(http, ewe={"passages": [{"title": "Marie Curie"}]}), 400)


def test_a_body_nested_thousands_deep_is_refused_before_it_is_parsed(http):
    body = b'{"messages": [], "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    openai_error(http.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"}),
                 400, "invalid_json")
    assert json_depth(b'{"a": "[[[[[[", "b": [[1]]}') == 3  # brackets inside strings do not count
    assert json_depth(b"[" * 100) == MAX_JSON_DEPTH + 1  # counting stops past the limit


@pytest.mark.parametrize("field,value", [("echo", True), ("suffix", " the end"), ("best_of", 3), ("top_logprobs", 5),
                                         ("logprobs", True), ("presence_penalty", 0.5), ("tools", [{"type": "function"}]),
                                         ("frequency_penalty", 1), ("response_format", {"type": "json_object"})])
def test_fields_that_would_change_the_answer_are_refused_by_name(http, field, value):
    error = openai_error(chat(http, **{field: value}), 400, "unsupported_parameter", field)
    assert field in error["message"]
    if field in ("echo", "suffix", "best_of"):  # the completions route too
        r = http.post("/v1/completions", json={"prompt": "Marie Curie", "max_tokens": 4, field: value})
        openai_error(r, 400, "unsupported_parameter", field)


@pytest.mark.parametrize("field,value", [("echo", False), ("best_of", 1), ("top_logprobs", None), ("user", "u-1"),
                                         ("metadata", {"run": "a"}), ("presence_penalty", 0), ("logprobs", False)])
def test_no_op_values_and_bookkeeping_fields_are_accepted(http, field, value):
    r = chat(http, **{field: value})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"]


def test_a_field_ewe_does_not_read_is_refused_not_ignored(http):
    openai_error(chat(http, temprature=0.5), 400, "unsupported_parameter", "temprature")


@pytest.mark.parametrize("field,value", [("max_tokens", True), ("max_tokens", "10"), ("max_tokens", 4.0),
                                         ("temperature", True), ("top_p", "0.5"), ("n", "1"), ("stream", "yes"),
                                         ("seed", "7"), ("stream_options", {"include_usage": "yes"})])
def test_wrong_types_are_refused_not_coerced(http, field, value):
    error = openai_error(chat(http, **{field: value}), 400, "invalid_request")
    assert field in error["message"]


def test_every_route_and_method_answers_in_openais_error_shape(http):
    openai_error(http.get("/v1/chat/completions"), 405, "method_not_allowed")
    openai_error(http.put("/v1/completions", json={}), 405, "method_not_allowed")
    openai_error(http.get("/v1/nothing-here"), 404, "not_found")
    openai_error(http.post("/health"), 405)


def test_with_a_key_the_api_description_needs_it_too():
    with TestClient(create_app({"plain": plain_model()}, api_key="s3cret")) as client:
        openai_error(client.get("/openapi.json"), 401, "invalid_api_key")
        openai_error(client.get("/docs"), 401, "invalid_api_key")
        assert client.get("/openapi.json", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert client.get("/health").status_code == 200


# -- the fuzzer -------------------------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**7), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                    max_leaves=8)
FIELDS = {
    "model": st.one_of(st.just("plain"), JSON), "max_tokens": st.one_of(st.integers(-2, 6), JSON),
    "max_completion_tokens": st.one_of(st.integers(0, 6), JSON), "temperature": st.one_of(st.floats(-1, 3), JSON),
    "top_p": st.one_of(st.floats(-0.5, 1.5), JSON), "seed": st.one_of(st.integers(-5, 2**70), JSON),
    "n": st.one_of(st.integers(0, 3), JSON), "stream": st.one_of(st.booleans(), JSON),
    "stop": JSON, "echo": JSON, "best_of": JSON, "user": JSON, "logprobs": JSON,
    "stream_options": st.one_of(st.fixed_dictionaries({"include_usage": st.booleans()}), JSON),
    "ewe": st.one_of(st.fixed_dictionaries({}, optional={"passages": st.lists(st.one_of(
        st.text(max_size=30), st.fixed_dictionaries({"text": st.text(max_size=30)}, optional={"title": JSON})), max_size=2),
                                                         "trace": st.booleans()}), JSON),
}
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "system", "assistant", "tool", "other"]),
                                 "content": st.one_of(st.text(max_size=40), JSON)})
REQUESTS = st.fixed_dictionaries({}, optional={**FIELDS, "messages": st.one_of(st.lists(MESSAGE, max_size=3), JSON),
                                               "prompt": st.one_of(st.text(max_size=40), JSON)})
FUZZ = settings(max_examples=1000, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


def assert_answer_or_refusal(r, chat_route: bool, stream: bool) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:300])
    if r.status_code >= 400:
        openai_error(r, r.status_code)
        return
    if stream:
        events = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
        assert events and events[-1] == "[DONE]"
        for e in events[:-1]:
            assert "error" not in json.loads(e), e
        return
    body = r.json()
    choice = body["choices"][0]
    assert isinstance(choice["message"]["content"] if chat_route else choice["text"], str)
    assert body["usage"]["completion_tokens"] >= 0


@FUZZ
@given(data=REQUESTS, chat_route=st.booleans())
def test_fuzzed_requests_get_an_answer_or_an_openai_refusal_never_a_server_error(http, data, chat_route):
    r = http.post("/v1/chat/completions" if chat_route else "/v1/completions", json=data)
    assert_answer_or_refusal(r, chat_route, stream=data.get("stream") is True)


@FUZZ
@given(body=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                      REQUESTS.map(lambda d: json.dumps(d).encode()[: len(json.dumps(d)) // 2])),
       route=st.sampled_from(["/v1/chat/completions", "/v1/completions", "/v1/models", "/health"]),
       method=st.sampled_from(["POST", "GET", "PUT", "DELETE"]))
def test_fuzzed_bytes_on_any_route_never_make_a_server_error(http, body, route, method):
    r = http.request(method, route, content=body, headers={"content-type": "application/json"})
    assert r.status_code < 500, (r.status_code, r.text[:300])
    if r.status_code >= 400:
        openai_error(r, r.status_code)


def test_the_server_is_healthy_after_the_fuzzing(http):
    health = http.get("/health").json()
    assert health["status"] == "ok" and health["queue"]["running"] == 0 and health["queue"]["waiting"] == 0
    assert chat(http).status_code == 200


# -- connections: a slow request head, and how many one client may hold ------------------------------

def guarded_server(header_timeout: float, per_client: int):
    from ewe.serving.connections import guarded_h11

    return running(create_app({"plain": plain_model()}), http=guarded_h11(header_timeout, per_client))


def closed_within(sock, seconds: float) -> bool:
    """Whether the server closes `sock` within `seconds` (recv sees the end of the stream)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:  # reset by the server: closed too
        return True


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off():
    import httpx

    with guarded_server(header_timeout=0.5, per_client=64) as port:
        sock = socket.create_connection(("127.0.0.1", port))
        t0 = time.monotonic()
        try:
            for byte in b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n":
                sock.send(bytes([byte]))
                time.sleep(0.05)
                if time.monotonic() - t0 > 10:
                    break
        except OSError:
            pass  # the server closed it while we were still sending
        assert closed_within(sock, 5)
        assert time.monotonic() - t0 < 8
        sock.close()
        # a client that sends its request at once is served, on a kept-alive connection twice
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.get("/health").status_code == 200
            assert client.post("/v1/chat/completions", json={"messages": USER, "max_tokens": 4}).status_code == 200


def test_one_client_address_holds_at_most_its_share_of_connections():
    import httpx

    with guarded_server(header_timeout=30, per_client=2) as port:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        extra = socket.create_connection(("127.0.0.1", port))
        assert closed_within(extra, 5)
        assert not closed_within(held[0], 0.3)
        for s in held + [extra]:
            s.close()
        time.sleep(0.2)  # the server sees them go
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200


def test_an_answer_ended_by_the_rewrite_budget_is_not_reported_as_cut_by_max_tokens():
    from types import SimpleNamespace

    from ewe.serving.protocol import Shape, usage

    short = SimpleNamespace(text="Marie Curie was a physicist.", token_ids=list(range(14)), finish_reason="budget",
                            stats={"prompt_tokens": 20, "decoded_tokens": 128}, sentences=[], retrieved=[], trace=[])
    body = Shape(chat=True, model="plain").answer(short, trace=False)
    assert body["choices"][0]["finish_reason"] == "stop" and body["ewe"]["finish_reason"] == "budget"
    assert body["usage"]["completion_tokens"] == 14
    assert body["usage"]["completion_tokens_details"] == {"decoded_tokens": 128, "discarded_tokens": 114}
    cut = SimpleNamespace(**{**vars(short), "finish_reason": "length", "stats": {"prompt_tokens": 20}})
    assert Shape(chat=False, model="plain").answer(cut, trace=False)["choices"][0]["finish_reason"] == "length"
    assert usage(cut)["completion_tokens_details"] == {"decoded_tokens": 14, "discarded_tokens": 0}
