"""`ewe serve` with a framework client: langchain-openai's ChatOpenAI against a server on
127.0.0.1 over tiny scripted models (issue 59: the clients users build on keep working).

Skipped where langchain-openai did not install (it is in the dev extra, so CI has it)."""
from __future__ import annotations

import pytest
from test_serve import A, B_RIGHT, C, PROMPT, corrected_by_feedback, make, serving

from scripted import ScriptedChecker, text_script

langchain_openai = pytest.importorskip("langchain_openai")
openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def url():
    models = {"ewe": make(text_script(corrected_by_feedback), ScriptedChecker(false={"She was born in Paris."})),
              "plain": make(text_script(lambda units: f"{A} {C}"), verify="never")}
    with serving(models, api_key="sk-test") as base:
        yield base


def chat(url, model="ewe", **kw):
    return langchain_openai.ChatOpenAI(base_url=f"{url}/v1", api_key=kw.pop("api_key", "sk-test"), model=model,
                                       max_retries=0, **kw)


def test_invoke_gets_the_controlled_answer_and_its_finish_reason(url):
    msg = chat(url).invoke(PROMPT)
    assert msg.content == f"{A} {B_RIGHT} {C}"
    assert msg.response_metadata["finish_reason"] == "stop"
    assert msg.usage_metadata["output_tokens"] > 0 and msg.usage_metadata["input_tokens"] > 0


def test_a_system_message_and_settings_pass_through(url):
    msg = chat(url, model="plain", temperature=0.0, max_tokens=4).invoke(
        [("system", "Answer in full sentences."), ("user", PROMPT)])
    assert msg.response_metadata["finish_reason"] == "length" and A.startswith(msg.content) and msg.content


def test_stream_concatenates_to_the_answer(url):
    chunks = list(chat(url, model="plain").stream(PROMPT))
    assert "".join(c.content for c in chunks) == f"{A} {C}"
    assert sum(1 for c in chunks if c.content) > 5


def test_refusals_reach_the_framework_as_the_openai_errors(url):
    with pytest.raises(openai.NotFoundError, match="not served"):
        chat(url, model="gpt-9").invoke(PROMPT)
    with pytest.raises(openai.AuthenticationError):
        chat(url, api_key="sk-wrong").invoke(PROMPT)
    with pytest.raises(openai.BadRequestError, match="logit_bias"):  # never silently ignored
        chat(url, logit_bias={"42": 5}).invoke(PROMPT)
