"""`ewe serve`: an OpenAI-compatible HTTP server (FastAPI) over one or more configurations.

Endpoints: POST /v1/chat/completions and /v1/completions (streamed as server-sent events
with "stream": true), GET /v1/models (the configurations served, by name), GET /health.
The request's `model` names the configuration, and so the method, that answers it. Wire
format and ewe's `ewe` extension field: protocol.py; the queue: scheduler.py.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import time

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import InputError
from .protocol import (FINISH, APIError, ChatRequest, CompletionRequest, Shape, decode_json, final_extension, parse,
                       retraction, usage)
from .scheduler import END, Failed, Job, QueueFull, Scheduler, Stopped
from .stream import Finished, Retraction, TextDelta

MAX_BODY_BYTES = 1 << 20


class BodyLimit:
    """An ASGI middleware: a request body over `limit` bytes is answered 413 before it is read whole."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await _send_error(send, self._too_large(int(declared)))
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge()
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _send_error(send, self._too_large(seen))

    def _too_large(self, size: int) -> APIError:
        return APIError(413, f"the request body is {size} bytes or more; this server takes at most {self.limit}",
                        "request_too_large")


class _TooLarge(Exception):
    pass


async def _send_error(send, error: APIError) -> None:
    body = json.dumps(error.body()).encode()
    await send({"type": "http.response.start", "status": error.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def create_app(models: dict, *, api_key: str | None = None, max_queue: int = 32, max_batch: int = 1,
               max_body_bytes: int = MAX_BODY_BYTES, continuous: bool = True) -> FastAPI:
    """The app over `models` (name -> EWE; the first is the default when a request names none);
    up to `max_batch` requests are decoded together where the method batches, continuously where
    it can (scheduler.py)."""
    if not models:
        raise ValueError("ewe serve needs at least one configuration to serve")
    scheduler = Scheduler(max_queue, max_batch, continuous)
    default = next(iter(models))

    async def lifespan(app):
        scheduler.start()
        yield
        await asyncio.to_thread(scheduler.stop)

    app = FastAPI(title="ewe", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.scheduler = scheduler
    app.add_middleware(BodyLimit, limit=max_body_bytes)

    @app.exception_handler(APIError)
    async def api_error(request: Request, e: APIError):
        headers = {"Retry-After": "1"} if e.status in (429, 503) else None
        return JSONResponse(e.body(), status_code=e.status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException):
        # FastAPI's own answers (no such route, a wrong method) in OpenAI's shape too
        codes = {404: "not_found", 405: "method_not_allowed"}
        error = APIError(e.status_code, str(e.detail), codes.get(e.status_code, "invalid_request"))
        return JSONResponse(error.body(), status_code=e.status_code, headers=getattr(e, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, e: RequestValidationError):
        return JSONResponse(APIError(400, str(e.errors())[:500], "invalid_request").body(), status_code=400)

    @app.exception_handler(Exception)
    async def server_error(request: Request, e: Exception):
        error = APIError(500, f"internal error ({type(e).__name__}); the request was not answered", "server_error")
        return JSONResponse(error.body(), status_code=500)

    @app.middleware("http")
    async def authorize(request: Request, call_next):
        if api_key and request.url.path != "/health":  # every route but the health check, /openapi.json too
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
                e = APIError(401, "a valid API key is needed: Authorization: Bearer <key>", "invalid_api_key")
                return JSONResponse(e.body(), status_code=401)
        return await call_next(request)

    @app.get("/health")
    async def health():
        return {"status": "stopping" if scheduler.stopping else "ok", "models": list(models),
                "queue": {"waiting": scheduler.waiting, "max": scheduler.max_queue,
                          "running": len(scheduler.running), "max_batch": scheduler.max_batch,
                          "batching": "continuous" if scheduler.continuous else "static",
                          "served": scheduler.served, "batches": scheduler.batches}}

    @app.get("/v1/models")
    async def list_models():
        return {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "ewe",
             "ewe": {"method": ewe.config.method, "model": ewe.config.model.name}} for name, ewe in models.items()]}

    async def answer(request: Request, chat: bool):
        data = decode_json(await request.body())
        req = parse(ChatRequest if chat else CompletionRequest, data)
        name = req.model or default
        if name not in models:
            raise APIError(404, f"model {name!r} is not served here; served: {', '.join(models)}", "model_not_found",
                           "model")
        ewe = models[name]
        prompt, system = req.prompt() if chat else (req.prompt_text(), None)
        try:  # the same checks as EWE.generate, before the request is queued
            prompt, passages, dec = ewe.check_request(prompt, req.passages, system_prompt=system, **req.decoding())
        except (InputError, ValueError) as e:
            raise APIError(400, str(e), "invalid_request") from None
        job = Job(ewe, prompt, passages, dec, asyncio.get_running_loop())
        try:
            scheduler.submit(job)
        except QueueFull as e:
            raise APIError(429, f"the server is busy: {e}; retry later", "queue_full") from None
        except Stopped as e:
            raise APIError(503, str(e), "unavailable") from None
        shape = Shape(chat, name)
        trace = bool(req.ewe and req.ewe.trace)
        first = await _next(job)  # an error found while preparing the request is still a proper error answer
        if isinstance(first, Failed):
            raise _as_api_error(first.error)
        if not req.stream:
            result = await _collect(job, first)
            return shape.answer(result, trace)
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return StreamingResponse(_sse(job, first, shape, trace, include_usage), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await answer(request, chat=True)

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await answer(request, chat=False)

    return app


async def _next(job: Job):
    try:
        return await job.events.get()
    except asyncio.CancelledError:
        job.cancel()
        raise


async def _collect(job: Job, item):
    result = None
    while item is not END:
        if isinstance(item, Failed):
            raise _as_api_error(item.error)
        if isinstance(item, Finished):
            result = item.result
        item = await _next(job)
    if result is None:
        raise APIError(500, "the answer ended without a result", "server_error")
    return result


def _as_api_error(error: BaseException) -> APIError:
    if isinstance(error, APIError):
        return error
    if isinstance(error, Stopped):
        return APIError(503, str(error), "unavailable")
    if isinstance(error, (InputError, ValueError)):
        return APIError(400, str(error), "invalid_request")
    return APIError(500, f"{type(error).__name__}: {error}", "server_error")


def _event(data: dict) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _sse(job: Job, item, shape: Shape, trace: bool, include_usage: bool):
    """The answer's events as OpenAI stream chunks; a retraction is a chunk with empty content and
    the `ewe.retraction` field; the final chunk carries the finish reason and the sentences."""
    try:
        if shape.chat:
            yield _event(shape.chunk("", role=True))
        t0 = time.perf_counter()
        while item is not END:
            if isinstance(item, Failed):
                yield _event(_as_api_error(item.error).body())
                break
            if isinstance(item, TextDelta):
                yield _event(shape.chunk(item.text))
            elif isinstance(item, Retraction):
                yield _event(shape.chunk("", ewe=retraction(item)))
            elif isinstance(item, Finished):
                r = item.result
                ext = final_extension(r, trace)
                ext["stream_s"] = round(time.perf_counter() - t0, 4)
                yield _event(shape.chunk(finish=FINISH.get(r.finish_reason, "stop"), ewe=ext))
                if include_usage:
                    yield _event(shape.chunk(usage=usage(r), no_choice=True))
            item = await _next(job)
        yield "data: [DONE]\n\n"
    finally:
        job.cancel()  # the client went away (or the answer ended): a running answer stops at its next step
