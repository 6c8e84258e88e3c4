"""An OpenAI-compatible chat-completions endpoint as `llm(prompt) -> str`, with urllib
only (no new dependency): per-request timeout, bounded retries with backoff on
connection errors, timeouts, 429 and 5xx. Malformed answers are not retried.

`http_judge(...)` wraps it as an LLMJudgeChecker; the same callable can drive
LLMClaimExtractor.
"""
from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from typing import Optional

from .llm_judge import LLMJudgeChecker


class LLMCallError(RuntimeError):
    """The endpoint could not be reached or kept failing."""


class LLMResponseError(RuntimeError):
    """The endpoint answered with something that is not a chat completion."""


class OpenAIChatLLM:
    """POST {base_url}/chat/completions. The API key is read from the environment
    variable named `api_key_env` at each call (never stored); unset means no header."""

    def __init__(self, base_url: str, model: str, api_key_env: Optional[str] = "OPENAI_API_KEY",
                 timeout: float = 30.0, max_retries: int = 2, backoff: float = 0.5,
                 temperature: float = 0.0, max_tokens: int = 256, system: Optional[str] = None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key_env = model, api_key_env
        self.timeout, self.max_retries, self.backoff = timeout, max_retries, backoff
        self.temperature, self.max_tokens, self.system = temperature, max_tokens, system

    def _request(self, prompt: str) -> urllib.request.Request:
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [{"role": "user", "content": prompt}]
        body = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature,
                           "max_tokens": self.max_tokens}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def __call__(self, prompt: str) -> str:
        last: Optional[Exception] = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                with urllib.request.urlopen(self._request(prompt), timeout=self.timeout) as resp:
                    raw = resp.read()
            except urllib.error.HTTPError as e:
                last = e
                if e.code == 429 or e.code >= 500:
                    continue
                raise LLMCallError(f"HTTP {e.code} from {self.url}: {e.reason}") from e
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as e:
                last = e
                continue
            return _content(raw)
        raise LLMCallError(f"{self.url} failed after {self.max_retries + 1} attempts: {type(last).__name__}: {last}")


def _content(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise LLMResponseError(f"not a chat completion: {raw[:200]!r}") from e
    if not isinstance(content, str):
        raise LLMResponseError(f"message content is not text: {content!r}"[:200])
    return content


def http_judge(base_url: str, model: str, api_key_env: Optional[str] = "OPENAI_API_KEY", timeout: float = 30.0,
               max_retries: int = 2, **kwargs) -> LLMJudgeChecker:
    """An LLMJudgeChecker over an OpenAI-compatible endpoint."""
    llm = OpenAIChatLLM(base_url, model, api_key_env=api_key_env, timeout=timeout, max_retries=max_retries, **kwargs)
    return LLMJudgeChecker(llm, name=f"http:{model}")
