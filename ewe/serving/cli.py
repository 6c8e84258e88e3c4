"""`ewe serve`: load the configurations to serve (sharing one model where they agree) and run
the OpenAI-compatible server with uvicorn."""
from __future__ import annotations

import os
from pathlib import Path

from ..argtypes import non_negative_int, positive_float, positive_int


def add_serve_command(sub, add_model_options) -> None:
    s = sub.add_parser(
        "serve", help="an OpenAI-compatible HTTP server (chat and text completions, streamed with retractions)",
        description="Serve configurations over HTTP: POST /v1/chat/completions and /v1/completions (OpenAI's "
        "format; \"stream\": true streams server-sent events, with EWE's retractions in an `ewe` field), "
        "GET /v1/models, GET /health. A request's `model` names the configuration that answers it: "
        "--config [NAME=]CONFIG, repeatable, named by the file's stem unless NAME is given (configs/ra-1.yaml "
        "is 'ra-1'); the first answers requests that name no model. Without --config: the default "
        "configuration, as 'ewe'.")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=non_negative_int, default=8000, help="TCP port (0: any free one)")
    s.add_argument("--api-key", default=os.environ.get("EWE_API_KEY"),
                   help="require `Authorization: Bearer KEY` on /v1/ (default: $EWE_API_KEY; unset: no key)")
    s.add_argument("--max-queue", type=positive_int, default=32,
                   help="requests that may wait for the model; more are answered 429 at once")
    s.add_argument("--max-batch", type=positive_int, default=8,
                   help="requests decoded together as the rows of one batch, where the method batches (plain "
                   "decoding, PrefixNLI; EWE's controller with controller.batch_rows, which this turns on); 1: one "
                   "at a time")
    s.add_argument("--batching", choices=["continuous", "static"], default="continuous",
                   help="continuous: with EWE's controller a request joins the running batch as a row frees up "
                   "and is answered when its own row ends; static: a batch runs until all its rows end (the "
                   "comparison `benchmarks/serve_load.py` was first measured against)")
    s.add_argument("--max-body-bytes", type=positive_int, default=1 << 20, help="larger request bodies get 413")
    s.add_argument("--header-timeout", type=positive_float, default=10.0,
                   help="seconds a request's head (request line and headers) may take to arrive; a slower "
                   "connection is closed (a byte-at-a-time client holds no socket)")
    s.add_argument("--max-connections-per-client", type=positive_int, default=64,
                   help="connections one client address may hold open; more are closed at once")
    s.add_argument("--idle-timeout", type=positive_float, default=5.0,
                   help="seconds a kept-alive connection may stay idle between requests (uvicorn's keep-alive)")
    add_model_options(s, several_configs=True)
    s.set_defaults(func=cmd_serve)


def served_configs(specs: list[str] | None, overrides: dict) -> dict:
    """name -> EWEConfig for each --config [NAME=]CONFIG (the default configuration as 'ewe' when none is given)."""
    from ..config import EWEConfig

    if not specs:
        return {"ewe": EWEConfig.build(None, **overrides)}
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            name, path = Path(spec).stem, spec
        if not name:
            raise ValueError(f"--config {spec!r}: the name before '=' is empty")
        if name in out:
            raise ValueError(f"--config: two configurations named {name!r}; name one: --config OTHER={path}")
        out[name] = EWEConfig.from_yaml(path, **overrides)
    return out


def batch_rows(config) -> None:
    """EWE's controller decodes a server's batch as rows where it can (controller.batch_rows needs the
    dynamic KV cache and no context re-encoding); elsewhere its requests are answered one at a time."""
    if (config.method == "ewe" and config.pauses and config.decoding.kv_cache == "dynamic"
            and not config.memory.reencode_context):
        config.controller.batch_rows = True


def cmd_serve(args) -> int:
    import uvicorn

    from ..eval.harness import Loader
    from ..overrides import config_overrides
    from .connections import guarded_h11
    from .server import create_app

    if args.port > 65535:
        raise ValueError(f"--port {args.port}: a TCP port is at most 65535")
    configs = served_configs(args.config, config_overrides(args))
    if args.max_batch > 1:
        for cfg in configs.values():
            batch_rows(cfg)
    loader = Loader()
    models = {name: loader.load(cfg) for name, cfg in configs.items()}  # one model for configurations that agree
    app = create_app(models, api_key=args.api_key, max_queue=args.max_queue, max_batch=args.max_batch,
                     max_body_bytes=args.max_body_bytes, continuous=args.batching == "continuous")
    print(f"ewe serve: {', '.join(models)} on http://{args.host}:{args.port}/v1 "
          f"({'API key required' if args.api_key else 'no API key'}; queue {args.max_queue}, {args.batching} "
          f"batches of up to {args.max_batch})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                http=guarded_h11(args.header_timeout, args.max_connections_per_client),
                timeout_keep_alive=args.idle_timeout)
    return 0
