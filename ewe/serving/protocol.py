"""The OpenAI-compatible wire format of `ewe serve`: requests checked into what EWE.generate
takes, answers and stream chunks shaped as OpenAI's, and OpenAI-style error bodies.

ewe's extension rides in an `ewe` field that a plain OpenAI client ignores: in a request,
the passages to put in memory (else the configuration retrieves them) and whether to return
the trace; in a chunk, a retraction (from which character of the answer, why, the evidence);
in the final chunk and a whole answer, the sentences with their verdicts and evidence.
"""
from __future__ import annotations

import time
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..settings import error_lines

FINISH = {"eos": "stop", "length": "length", "budget": "length"}  # ewe's finish reasons as OpenAI's
UNSUPPORTED = {  # request fields that would change the answer in ways ewe does not do: refused, never ignored
    "tools": "tool calls", "functions": "function calls", "logprobs": "log-probabilities in the response",
    "response_format": "structured output", "logit_bias": "logit biases",
}


class APIError(Exception):
    """An answer in OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""

    TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
             413: "invalid_request_error", 429: "rate_limit_error", 500: "server_error", 503: "server_error"}

    def __init__(self, status: int, message: str, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.TYPES.get(self.status, "invalid_request_error"),
                          "param": self.param, "code": self.code}}


class EWEOptions(BaseModel):
    """The request's `ewe` field (OpenAI clients: `extra_body={"ewe": {...}}`)."""

    model_config = ConfigDict(extra="forbid")
    passages: list[str] | None = Field(None, description="passages for working memory; none: retrieve")
    trace: bool = Field(False, description="return the controller's trace of pauses, checks and rewrites")


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict] | None = None

    def text(self, where: str) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        if any(p.get("type") != "text" or not isinstance(p.get("text"), str) for p in parts):
            raise APIError(400, f"{where}.content: ewe reads text parts only", "unsupported_content", where)
        return "".join(p["text"] for p in parts)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")  # OpenAI's other fields (user, metadata, ...) change nothing here
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    seed: int | None = Field(None, ge=0)
    n: int = Field(1, ge=1)
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    ewe: EWEOptions | None = None

    def refuse_unsupported(self) -> None:
        if self.n != 1:
            raise APIError(400, "n: ewe writes one answer per request (n=1)", "unsupported_parameter", "n")
        if self.stop:
            raise APIError(400, "stop: stop sequences are not supported (ewe's answers end at the model's own end "
                           "or max_tokens)", "unsupported_parameter", "stop")
        for name, what in UNSUPPORTED.items():
            if (self.model_extra or {}).get(name) not in (None, False, {"type": "text"}):
                raise APIError(400, f"{name}: {what} are not supported by ewe", "unsupported_parameter", name)

    def decoding(self) -> dict:
        return {"max_new_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "seed": self.seed}

    @property
    def passages(self) -> list[str] | None:
        return self.ewe.passages if self.ewe else None


class ChatRequest(_Request):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)

    def prompt(self) -> tuple[str, str | None]:
        """The user's request and the system prompt. ewe answers one request: a conversation's
        earlier turns are refused, not silently dropped."""
        system = [(i, m) for i, m in enumerate(self.messages) if m.role in ("system", "developer")]
        rest = [(i, m) for i, m in enumerate(self.messages) if m.role not in ("system", "developer")]
        if len(rest) != 1 or rest[0][1].role != "user":
            raise APIError(400, "messages: ewe answers one request: give one user message (and at most one system "
                           f"message); got roles {[m.role for m in self.messages]}", "unsupported_conversation",
                           "messages")
        if len(system) > 1:
            raise APIError(400, "messages: at most one system message", "unsupported_conversation", "messages")
        i, user = rest[0]
        return (user.text(f"messages[{i}]"),
                system[0][1].text(f"messages[{system[0][0]}]") if system else None)

    def decoding(self) -> dict:
        out = super().decoding()
        out["max_new_tokens"] = self.max_completion_tokens or self.max_tokens
        return out


class CompletionRequest(_Request):
    prompt: str | list[str]

    def prompt_text(self) -> str:
        if isinstance(self.prompt, list):
            if len(self.prompt) != 1:
                raise APIError(400, f"prompt: ewe answers one prompt per request; got {len(self.prompt)}",
                               "unsupported_parameter", "prompt")
            return self.prompt[0]
        return self.prompt


def parse(model: type[_Request], data) -> _Request:
    """`data` (decoded JSON) as a request, or a 400 naming each wrong field."""
    if not isinstance(data, dict):
        raise APIError(400, f"the request body must be a JSON object, got {type(data).__name__}", "invalid_request")
    try:
        request = model.model_validate(data)
    except ValidationError as e:
        lines = error_lines(e)
        raise APIError(400, "; ".join(lines), "invalid_request", lines[0].split(":")[0] if lines else None) from None
    request.refuse_unsupported()
    return request


class Shape:
    """Answers and chunks of one request in OpenAI's shape (`chat`: chat.completion, else text_completion)."""

    def __init__(self, chat: bool, model: str):
        self.chat, self.model = chat, model
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        self.created = int(time.time())

    def _choice(self, text: str | None, finish: str | None, role: bool = False) -> dict:
        if not self.chat:
            return {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
        delta = {"role": "assistant"} if role else {}
        if text is not None:
            delta["content"] = text
        return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}

    def chunk(self, text: str | None = None, finish: str | None = None, ewe: dict | None = None,
              role: bool = False, usage: dict | None = None, no_choice: bool = False) -> dict:
        out = {"id": self.id, "object": "chat.completion.chunk" if self.chat else "text_completion",
               "created": self.created, "model": self.model,
               "choices": [] if no_choice else [self._choice(text, finish, role)]}
        if usage is not None:
            out["usage"] = usage
        if ewe is not None:
            out["ewe"] = ewe
        return out

    def answer(self, result, trace: bool) -> dict:
        finish = FINISH.get(result.finish_reason, "stop")
        choice = ({"index": 0, "message": {"role": "assistant", "content": result.text}, "logprobs": None,
                   "finish_reason": finish} if self.chat else
                  {"index": 0, "text": result.text, "logprobs": None, "finish_reason": finish})
        return {"id": self.id, "object": "chat.completion" if self.chat else "text_completion",
                "created": self.created, "model": self.model, "choices": [choice], "usage": usage(result),
                "ewe": final_extension(result, trace)}


def usage(result) -> dict:
    prompt = int(result.stats.get("prompt_tokens", 0)) if result.stats else 0
    return {"prompt_tokens": prompt, "completion_tokens": len(result.token_ids),
            "total_tokens": prompt + len(result.token_ids)}


def final_extension(result, trace: bool) -> dict:
    """The answer's sentences with their verdicts and evidence (and the trace when asked)."""
    out = {"finish_reason": result.finish_reason, "sentences": result.sentences, "stats": dict(result.stats or {}),
           "retrieved": result.retrieved}
    if trace:
        out["trace"] = result.trace
    return out


def retraction(event) -> dict:
    return {"retraction": {"at": event.at, "removed": event.removed, "reason": event.reason,
                           "evidence": event.evidence}}
