"""`ewe serve` with real clients: the official openai package (plain and streaming) and httpx
against a server on 127.0.0.1, over tiny scripted models (a controller that rewrites a
sentence, and plain decoding)."""
from __future__ import annotations

import contextlib
import json
import threading
import time

import httpx
import openai
import pytest
from scripted import ScriptedChecker, scripted_model, text_script
from servers import running
from tiny import tiny_tokenizer

from ewe import EWE
from ewe.config import EWEConfig
from ewe.serving import Retraction, TextDelta, apply_events
from ewe.serving.server import create_app

PROMPT = "Tell me a bio of Marie Curie."
A, B_WRONG, B_RIGHT, C = ("Marie Curie was a physicist.", "She was born in Paris.", "She was born in Warsaw.",
                          "She won two Nobel prizes.")


def corrected_by_feedback(units):
    return " ".join([A, B_RIGHT if units >= 1 else B_WRONG, C])


def make(script, checker=None, verify="interval", max_new_tokens=120):
    cfg = EWEConfig.build({
        "memory": {"unit_tokens": 24, "retrieval_units": 2, "feedback_units": 2},
        "retrieval": {"source": None},
        "decoding": {"max_new_tokens": max_new_tokens},
        "controller": {"verify_trigger": verify, "verify_interval": 4},
    })
    return EWE(scripted_model(script), tiny_tokenizer(), cfg, fact_checker=checker)


@contextlib.contextmanager
def serving(models, **options):
    with running(create_app(models, **options)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def url():
    models = {"ewe": make(text_script(corrected_by_feedback), ScriptedChecker(false={B_WRONG})),
              "plain": make(text_script(lambda units: f"{A} {C}"), verify="never")}
    with serving(models) as base:
        yield base


def client(url, **kw):
    return openai.OpenAI(base_url=f"{url}/v1", api_key=kw.pop("api_key", "unused"), max_retries=0, **kw)


def test_the_openai_client_gets_the_controlled_answer_with_its_sentences(url):
    out = client(url).chat.completions.create(model="ewe", messages=[{"role": "user", "content": PROMPT}])
    assert out.choices[0].message.content == f"{A} {B_RIGHT} {C}"
    assert out.choices[0].finish_reason == "stop" and out.usage.completion_tokens > 0
    ext = out.model_extra["ewe"]
    assert [s["text"] for s in ext["sentences"]] == [A, B_RIGHT, C]
    assert [s["failed_attempts"] for s in ext["sentences"]] == [0, 1, 0]
    assert "trace" not in ext


def test_a_stream_carries_the_retraction_and_applied_gives_the_final_text(url):
    chunks = list(client(url).chat.completions.create(
        model="ewe", messages=[{"role": "user", "content": PROMPT}], stream=True,
        stream_options={"include_usage": True}, extra_body={"ewe": {"trace": True}}))
    events = []
    for ch in chunks:
        ext = (ch.model_extra or {}).get("ewe") or {}
        if "retraction" in ext:
            events.append(Retraction(**ext["retraction"]))
        elif ch.choices and ch.choices[0].delta.content:
            events.append(TextDelta(ch.choices[0].delta.content))
    [retraction] = [e for e in events if isinstance(e, Retraction)]
    assert retraction.removed.strip().startswith(B_WRONG) and retraction.evidence
    assert apply_events(events) == f"{A} {B_RIGHT} {C}"
    final = [ch for ch in chunks if ch.choices and ch.choices[0].finish_reason][-1]
    assert final.choices[0].finish_reason == "stop"
    assert [s["verdict"] for s in final.model_extra["ewe"]["sentences"]] == ["supported"] * 3
    assert any(e["type"] == "backtrack" for e in final.model_extra["ewe"]["trace"])
    assert chunks[-1].usage.completion_tokens > 0 and not chunks[-1].choices  # the usage chunk


def test_a_plain_stream_concatenates_to_the_answer_and_text_completions_work(url):
    c = client(url)
    chunks = list(c.chat.completions.create(model="plain", messages=[{"role": "user", "content": PROMPT}],
                                            stream=True))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == f"{A} {C}" and sum(1 for ch in chunks if ch.choices and ch.choices[0].delta.content) > 5
    out = c.completions.create(model="plain", prompt=PROMPT, max_tokens=4)
    assert out.choices[0].finish_reason == "length" and A.startswith(out.choices[0].text)
    streamed = "".join(ch.choices[0].text for ch in c.completions.create(model="plain", prompt=PROMPT, stream=True))
    assert streamed == f"{A} {C}"


def test_models_and_health(url):
    assert sorted(m.id for m in client(url).models.list()) == ["ewe", "plain"]
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok" and health["queue"]["max"] == 32


@pytest.mark.parametrize("body,status,code", [
    (b"{not json", 400, "invalid_json"),
    (b"[1, 2]", 400, "invalid_request"),
    (json.dumps({"messages": []}).encode(), 400, "invalid_request"),
    (json.dumps({"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}).encode(), 404, "model_not_found"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**6}).encode(), 400,
     "invalid_request"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2000}).encode(), 400,
     "invalid_request"),  # over the tiny model's context: found while preparing the request
    (json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
                              {"role": "user", "content": "more"}]}).encode(), 400, "unsupported_conversation"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "n": 2}).encode(), 400, "unsupported_parameter"),
    (json.dumps({"messages": [{"role": "user", "content": "  "}]}).encode(), 400, "invalid_request"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}], "ewe": {"passages": [""]}}).encode(), 400,
     "invalid_request"),
    (b"x" * (2 << 20), 413, "request_too_large"),
])
def test_bad_requests_get_openai_style_errors(url, body, status, code):
    r = httpx.post(f"{url}/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["code"] == code and error["message"] and error["type"]


def test_the_openai_client_raises_its_own_errors(url):
    with pytest.raises(openai.NotFoundError, match="not served"):
        client(url).chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="context"):
        client(url).chat.completions.create(model="plain", messages=[{"role": "user", "content": "hi"}],
                                            max_tokens=2000, stream=True)


def test_an_api_key_is_required_when_set():
    with serving({"plain": make(text_script(lambda units: A), verify="never")}, api_key="s3cret") as base:
        with pytest.raises(openai.AuthenticationError):
            client(base, api_key="wrong").models.list()
        assert [m.id for m in client(base, api_key="s3cret").models.list()] == ["plain"]
        assert httpx.get(f"{base}/health").status_code == 200  # health needs no key


def test_a_full_queue_is_refused_at_once_and_a_departed_client_frees_the_model():
    gate = threading.Event()

    def slow(units):  # the worker waits here until the test lets it go on
        gate.wait(timeout=120)
        return A

    with serving({"slow": make(text_script(slow), verify="never")}, max_queue=1) as base:
        body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 8}
        with httpx.Client(timeout=180) as http:
            pool = []
            first = threading.Thread(target=lambda: pool.append(http.post(f"{base}/v1/chat/completions", json=body)))
            first.start()
            wait_for(lambda: http.get(f"{base}/health").json()["queue"]["running"])
            second = threading.Thread(target=lambda: pool.append(http.post(f"{base}/v1/chat/completions", json=body)))
            second.start()
            wait_for(lambda: http.get(f"{base}/health").json()["queue"]["waiting"] == 1)
            refused = http.post(f"{base}/v1/chat/completions", json=body)
            assert refused.status_code == 429 and refused.json()["error"]["code"] == "queue_full"
            assert refused.headers["retry-after"]
            gate.set()
            first.join(180), second.join(180)
            assert [r.status_code for r in pool] == [200, 200]
            # a streaming client that leaves after its first chunk: the answer is cancelled, the model freed
            with http.stream("POST", f"{base}/v1/chat/completions", json={**body, "max_tokens": 64, "stream": True}
                             ) as r:
                next(r.iter_lines())
            wait_for(lambda: not http.get(f"{base}/health").json()["queue"]["running"])
            assert http.post(f"{base}/v1/chat/completions", json=body).status_code == 200


def wait_for(condition, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_served_configurations_are_named_by_file_or_given_name(tmp_path):
    from ewe.serving.cli import served_configs

    assert list(served_configs(None, {})) == ["ewe"]
    named = served_configs(["configs/ra-1.yaml", "mine=configs/ewe.yaml"], {"decoding.max_new_tokens": 32})
    assert list(named) == ["ra-1", "mine"] and named["mine"].decoding.max_new_tokens == 32
    assert named["ra-1"].retrieval.placement == "prompt"
    with pytest.raises(ValueError, match="two configurations named 'ra-1'"):
        served_configs(["configs/ra-1.yaml", "configs/ra-1.yaml"], {})
    with pytest.raises(ValueError, match="name before '=' is empty"):
        served_configs(["=configs/ra-1.yaml"], {})


def test_the_serve_command_refuses_a_port_out_of_range(capsys):
    from ewe import cli

    assert cli.main(["serve", "--port", "70000"]) == 2
    assert "at most 65535" in capsys.readouterr().err


@pytest.mark.parametrize("continuous", [True, False])
def test_queued_requests_are_answered_together_as_rows_of_one_batch(continuous):
    """Three requests queued behind a first one join its running batch (each row with its own
    controller, one of them streamed with its retraction), answering what each gets alone; with
    static batching they wait for it to end and then run as one batch."""
    from test_batch_rows import controlled

    alone = controlled(False)
    ewe = controlled(True)
    gate, paused, script = threading.Event(), threading.Event(), ewe.model.script

    def gated(*args):
        paused.set()
        gate.wait(timeout=120)
        return script(*args)

    gated.wants_prompt = True
    ewe.model.script = gated
    prompts = ["Tell me a bio of Marie Curie.", "Tell me a bio of Albert Einstein.",
               "Tell me a bio of someone famous.", "Tell me a bio of Marie Curie."]
    expected = [r.text for r in alone.generate(prompts)]
    with serving({"ewe": ewe}, max_batch=4, continuous=continuous) as base, httpx.Client(timeout=180) as http:
        answers = {}

        def ask(i, stream=False):
            body = {"messages": [{"role": "user", "content": prompts[i]}], "stream": stream}
            if not stream:
                answers[i] = http.post(f"{base}/v1/chat/completions", json=body).json()["choices"][0]["message"]["content"]
                return
            events = []
            with http.stream("POST", f"{base}/v1/chat/completions", json=body) as r:
                for line in r.iter_lines():
                    if line.startswith("data: {"):
                        chunk = json.loads(line[6:])
                        if "retraction" in chunk.get("ewe", {}):
                            events.append(Retraction(**chunk["ewe"]["retraction"]))
                        elif chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                            events.append(TextDelta(chunk["choices"][0]["delta"]["content"]))
            answers[i] = apply_events(events)
            answers["retractions"] = sum(isinstance(e, Retraction) for e in events)

        threads = [threading.Thread(target=ask, args=(0,))]
        threads[0].start()
        assert paused.wait(timeout=120), "the first request never reached the model"
        assert http.get(f"{base}/health").json()["queue"]["running"] == 1
        for i in (1, 2, 3):
            threads.append(threading.Thread(target=ask, args=(i, i == 3)))
            threads[-1].start()
        wait_for(lambda: http.get(f"{base}/health").json()["queue"]["waiting"] == 3)
        gate.set()
        for t in threads:
            t.join(180)
        queue = http.get(f"{base}/health").json()["queue"]
    assert [answers[i] for i in range(4)] == expected
    assert answers["retractions"] == 1  # the streamed Marie Curie row withdrew its wrong sentence
    assert queue["served"] == 4 and queue["batching"] == ("continuous" if continuous else "static")
    assert queue["batches"] == (1 if continuous else 2)  # joined the first one's running batch, or a second batch


def second_while_first_writes(bodies: list[dict]) -> tuple[list, dict]:
    """Serve the controlled scripted model; send bodies[0], and bodies[1] once the first answer is
    being written (it pauses after 5 tokens until the second request waits, then writes its tail
    slowly). The choices in the
    order they came back (as (i, choice)), and the queue's figures."""
    from test_batch_rows import controlled

    ewe = controlled(True)
    gate, paused, script = threading.Event(), threading.Event(), ewe.model.script

    def gated(generated, units, prompt):
        if "Marie Curie" in ewe.tokenizer.decode(prompt):
            if len(generated) == 5:
                paused.set()
                gate.wait(timeout=120)
            elif len(generated) > 5:  # the first's tail is slow, so the order answers come back in
                time.sleep(0.1)       # is the order rows end in, however late a client thread runs
        return script(generated, units, prompt)

    gated.wants_prompt = True
    ewe.model.script = gated
    with serving({"ewe": ewe}, max_batch=4) as base, httpx.Client(timeout=180) as http:
        answered = []

        def ask(i):
            answered.append((i, http.post(f"{base}/v1/chat/completions", json=bodies[i]).json()["choices"][0]))

        first = threading.Thread(target=ask, args=(0,))
        first.start()
        # the second is sent only once the first has written 5 tokens: sent earlier, it would join
        # the batch before the pause and never be seen waiting (a race a loaded machine lost)
        assert paused.wait(timeout=120), "the first answer never reached its fifth token"
        second = threading.Thread(target=ask, args=(1,))
        second.start()
        wait_for(lambda: http.get(f"{base}/health").json()["queue"]["waiting"] == 1)
        gate.set()
        first.join(180), second.join(180)
        return answered, http.get(f"{base}/health").json()["queue"]


def test_a_request_joins_the_running_batch_and_is_answered_when_its_own_row_ends():
    """Continuous batching: a request sent while another is being written joins its batch at the
    next step (no second batch) and is answered as soon as its own, shorter, answer ends."""
    from test_batch_rows import controlled

    prompts = ["Tell me a bio of Marie Curie.", "Tell me a bio of someone famous."]
    expected = [r.text for r in controlled(False).generate(prompts)]
    answered, queue = second_while_first_writes([{"messages": [{"role": "user", "content": p}]} for p in prompts])
    assert sorted((i, c["message"]["content"]) for i, c in answered) == list(enumerate(expected))
    assert [i for i, _ in answered] == [1, 0]  # the shorter answer, started later, came back first
    assert queue["served"] == 2 and queue["batches"] == 1


def test_requests_with_their_own_max_tokens_share_the_running_batch():
    """Continuous batching: a request asking for fewer tokens joins the running batch (no second
    batch) and writes what it writes alone at its own limit, finish_reason "length" included."""
    from test_batch_rows import controlled

    prompts, limits = ["Tell me a bio of Marie Curie.", "Tell me a bio of Albert Einstein."], [None, 12]
    alone = [controlled(False).generate(p, max_new_tokens=n) for p, n in zip(prompts, limits)]
    answered, queue = second_while_first_writes([{"messages": [{"role": "user", "content": p}],
                                                  **({"max_tokens": n} if n else {})} for p, n in zip(prompts, limits)])
    choices = dict(answered)
    assert [choices[i]["message"]["content"] for i in range(2)] == [a.text for a in alone]
    assert choices[1]["finish_reason"] == "length" == alone[1].finish_reason
    assert queue["served"] == 2 and queue["batches"] == 1


def test_requests_with_their_own_temperature_and_seed_share_the_running_batch():
    """Continuous batching: a request sampling with another temperature and seed joins the running
    batch (each row samples with its own request's settings) and writes what it writes alone."""
    from test_batch_rows import controlled

    prompts, settings = ["Tell me a bio of Marie Curie.", "Tell me a bio of Albert Einstein."], [{}, {"temperature": 0.9,
                                                                                                     "seed": 5}]
    alone = [controlled(False).generate(p, **s) for p, s in zip(prompts, settings)]
    answered, queue = second_while_first_writes([{"messages": [{"role": "user", "content": p}], **s}
                                                 for p, s in zip(prompts, settings)])
    choices = dict(answered)
    assert [choices[i]["message"]["content"] for i in range(2)] == [a.text for a in alone]
    assert queue["served"] == 2 and queue["batches"] == 1
