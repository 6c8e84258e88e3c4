"""The OpenAI-compatible wire format of `ewe serve`: requests checked into what EWE.generate
takes, answers and stream chunks shaped as OpenAI's, and OpenAI-style error bodies.

ewe's extension rides in an `ewe` field that a plain OpenAI client ignores: in a request,
the passages to put in memory (else the configuration retrieves them) and whether to return
the trace; in a chunk, a retraction (from which character of the answer, why, the evidence);
in the final chunk and a whole answer, the sentences with their verdicts and evidence.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..settings import error_lines

# ewe's finish reasons as OpenAI's: "length" only when the answer reached max_tokens; an answer that
# ended because its rewrites spent the decode budget (controller.max_total_tokens) was not cut by the
# client's limit, and says "budget" in the `ewe` field
FINISH = {"eos": "stop", "length": "length", "budget": "stop"}
# OpenAI request fields that would change the answer in ways ewe does not do: refused (400,
# unsupported_parameter, naming the field) unless they hold their no-op value, never ignored
UNSUPPORTED = {
    "tools": ("tool calls", (None, [])), "functions": ("function calls", (None, [])),
    "tool_choice": ("tool calls", (None, "none")), "function_call": ("function calls", (None, "none")),
    "logprobs": ("log-probabilities in the response", (None, False)),
    "top_logprobs": ("log-probabilities in the response", (None, 0)),
    "response_format": ("structured output", (None, {"type": "text"})), "logit_bias": ("logit biases", (None, {})),
    "echo": ("echoing the prompt", (None, False)), "suffix": ("a suffix after the completion", (None, "")),
    "best_of": ("best-of sampling", (None, 1)),
    "presence_penalty": ("presence penalties", (None, 0, 0.0)),
    "frequency_penalty": ("frequency penalties", (None, 0, 0.0)),
    "modalities": ("output modalities other than text", (None, ["text"])), "audio": ("audio output", (None,)),
    "prediction": ("predicted outputs", (None,)), "web_search_options": ("web search", (None,)),
    "reasoning_effort": ("reasoning settings", (None,)), "verbosity": ("verbosity settings", (None,)),
}
# OpenAI request fields that change nothing in an answer (bookkeeping): accepted
HARMLESS = {"user", "metadata", "store", "service_tier", "parallel_tool_calls", "safety_identifier",
            "prompt_cache_key"}
MAX_JSON_DEPTH = 32  # nesting of arrays and objects in a request body, checked before it is parsed


def json_depth(body: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped), counted up to
    `limit` + 1, so that a body nested thousands deep is refused without being parsed."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def decode_json(body: bytes):
    """The request body as JSON, or a 400: nesting beyond MAX_JSON_DEPTH is refused before parsing."""
    if json_depth(body) > MAX_JSON_DEPTH:
        raise APIError(400, f"the request body nests arrays or objects more than {MAX_JSON_DEPTH} deep",
                       "invalid_json")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise APIError(400, f"the request body is not valid JSON: {e}", "invalid_json") from None


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


class Passage(BaseModel):
    """A passage with the title that says whom it is about (without one, ewe reads it from the
    passage's opening)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    title: str = Field("", max_length=300)
    text: str = Field(min_length=1)


class EWEOptions(BaseModel):
    """The request's `ewe` field (OpenAI clients: `extra_body={"ewe": {...}}`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    passages: list[str | Passage] | None = Field(
        None, description='passages for working memory, each text or {"title", "text"}; none: retrieve')
    trace: bool = Field(False, description="return the controller's trace of pauses, checks and rewrites")


class Message(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)  # a message's name, tool_call_id, ...: refused below
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
    model_config = ConfigDict(extra="forbid", strict=True)
    include_usage: bool = False


class _Request(BaseModel):
    # strict: "max_tokens": "10" or true, "stream": "yes" are refused, not coerced; the other fields are
    # checked by refuse_unsupported: harmless bookkeeping accepted, anything else refused by name
    model_config = ConfigDict(extra="allow", strict=True)
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    seed: int | None = Field(None, ge=0, le=2**63 - 1)
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
        for name, value in (self.model_extra or {}).items():
            if name in HARMLESS:
                continue
            if name not in UNSUPPORTED:
                raise APIError(400, f"{name}: not a field ewe reads; it is refused rather than ignored",
                               "unsupported_parameter", name)
            what, no_op = UNSUPPORTED[name]
            if not any(value == v and type(value) is type(v) for v in no_op):
                raise APIError(400, f"{name}: {what} are not supported by ewe (got {json.dumps(value)[:80]})",
                               "unsupported_parameter", name)

    def decoding(self) -> dict:
        return {"max_new_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "seed": self.seed}

    @property
    def passages(self) -> list[str | dict] | None:
        if not self.ewe or self.ewe.passages is None:
            return None
        return [p if isinstance(p, str) else p.model_dump() for p in self.ewe.passages]


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
    """OpenAI's usage (the answer's tokens as completion_tokens), and in completion_tokens_details
    what the answer cost: every token decoded for it, and those its rewrites discarded."""
    stats = result.stats or {}
    prompt = int(stats.get("prompt_tokens", 0))
    answer = len(result.token_ids)
    decoded = int(stats.get("decoded_tokens", answer) or answer)
    return {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer,
            "completion_tokens_details": {"decoded_tokens": decoded, "discarded_tokens": max(0, decoded - answer)}}


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
