"""Load test for `ewe serve` (OpenAI-compatible HTTP, loopback only).

The serving issue's load target: 16 concurrent clients for 5 minutes with 0 failed requests,
reporting latency p50/p95, time to first token and tokens/s; and a server whose queue is full
answers 429/503 at once, never a hang (--burst). Exit status 0 only when both hold.

    python benchmarks/serve_load.py --url http://127.0.0.1:8000 --clients 16 --duration 300 \
        [--model NAME] [--max-tokens 64] [--no-stream] [--prompts FILE.jsonl] [--burst 64] \
        [--out results.json]
"""
import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import httpx

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
PROMPTS = [f"Tell me a bio of {p}." for p in (
    "Marie Curie", "Albert Einstein", "Ada Lovelace", "Nelson Mandela", "Frida Kahlo",
    "Alan Turing", "Rosalind Franklin", "Leonardo da Vinci", "Srinivasa Ramanujan", "Hypatia")] + [
    "Write a paragraph about the Eiffel Tower.", "Write a paragraph about the Great Barrier Reef.",
    "Explain how a steam engine works.", "Describe the history of the printing press.",
    "Write a short essay on the causes of the French Revolution.", "Describe the water cycle in detail.",
    "Explain how vaccines train the immune system.", "Write a paragraph about the city of Kyoto.",
    "Describe the life cycle of a star.", "Summarize the history of the Roman Empire."]


class Failure(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind, self.message = kind, message


def percentile(xs, q):
    """Nearest-rank percentile (q in 0..100); None for no data."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[max(1, -(-len(xs) * q // 100)) - 1]


async def _stream(client, body, rec, t0):
    async with client.stream("POST", "/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            raise Failure(str(r.status_code), (await r.aread()).decode(errors="replace")[:500])
        content_chunks, usage, done = 0, None, False
        async for line in r.aiter_lines():
            if not line or line.startswith(":") or line.split(":", 1)[0] in ("event", "id", "retry"):
                continue
            if not line.startswith("data:"):
                raise Failure("bad_sse", f"not an SSE data line: {line[:200]!r}")
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            chunk = json.loads(data)
            if not isinstance(chunk, dict) or "error" in chunk:
                raise Failure("stream_error", data[:500])
            choice = (chunk.get("choices") or [{}])[0]
            if (choice.get("delta") or {}).get("content"):
                content_chunks += 1
                if rec["ttft"] is None:
                    rec["ttft"] = time.perf_counter() - t0
            ext = chunk.get("ewe") or choice.get("ewe")
            if isinstance(ext, dict) and "retraction" in ext:
                rec["retractions"] += 1
            if isinstance(chunk.get("usage"), dict) and "completion_tokens" in chunk["usage"]:
                usage = chunk["usage"]["completion_tokens"]
        if not done:
            raise Failure("no_done", f"stream ended without [DONE] after {content_chunks} content chunks")
        rec["tokens"], rec["usage"] = (usage, True) if usage is not None else (content_chunks, False)


async def _plain(client, body, rec, t0):
    r = await client.post("/v1/chat/completions", json=body)
    if r.status_code != 200:
        raise Failure(str(r.status_code), r.text[:500])
    resp = r.json()
    content = resp["choices"][0]["message"]["content"]
    if not isinstance(content, str):
        raise Failure("malformed", f"message content is {type(content).__name__}")
    usage = (resp.get("usage") or {}).get("completion_tokens")
    # Without usage, whitespace-separated words stand in for tokens (flagged in usage_missing).
    rec["tokens"], rec["usage"] = (usage, True) if usage is not None else (len(content.split()), False)


async def one_request(client, body, limit):
    """One chat completion, bounded by `limit` seconds in all; a record with `error` (kind, message)
    set when it failed."""
    rec = {"ttft": None, "tokens": 0, "usage": False, "retractions": 0, "error": None}
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(limit):
            await (_stream if body["stream"] else _plain)(client, body, rec, t0)
    except Failure as e:
        rec["error"] = (e.kind, e.message)
    except (TimeoutError, httpx.TimeoutException):
        rec["error"] = ("timeout", f"no complete answer within {limit:g} s")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:  # bad JSON / shape
        rec["error"] = ("malformed", f"{type(e).__name__}: {e}")
    except Exception as e:  # transport errors (httpx.ConnectError, RemoteProtocolError, ...)
        rec["error"] = (type(e).__name__, str(e) or repr(e))
    rec["latency"] = time.perf_counter() - t0
    return rec


def make_client(args, limit, connections):
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    return httpx.AsyncClient(base_url=args.url, headers=headers, timeout=limit + 5,
                             limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections))


def request_body(args, prompt):
    body = {"model": args.model, "messages": [{"role": "user", "content": prompt}],
            "max_tokens": args.max_tokens, "stream": args.stream}
    if args.stream:
        body["stream_options"] = {"include_usage": True}  # the answer's token count in a last chunk
    return body


async def main_phase(args, prompts):
    counter, records = itertools.count(), []
    t0 = time.perf_counter()
    deadline = t0 + args.duration

    async def client_loop(client):
        while time.perf_counter() < deadline:
            n = next(counter)
            if args.max_requests is not None and n >= args.max_requests:
                return
            rec = await one_request(client, request_body(args, prompts[n % len(prompts)]), args.timeout)
            records.append(rec)
            if rec["error"] is not None:  # a failing server is not hammered in a hot loop
                await asyncio.sleep(min(0.2, max(0.0, deadline - time.perf_counter())))

    async def progress():
        while True:
            await asyncio.sleep(15)
            bad = sum(r["error"] is not None for r in records)
            print(f"  {time.perf_counter() - t0:6.0f} s  {len(records)} requests, {bad} failed", file=sys.stderr)

    async with make_client(args, args.timeout, args.clients) as client:
        reporter = asyncio.create_task(progress())
        await asyncio.gather(*(client_loop(client) for _ in range(args.clients)))
        reporter.cancel()
    return records, time.perf_counter() - t0


async def burst_phase(args, prompts):
    body = request_body(args, prompts[0])
    async with make_client(args, args.burst_timeout, args.burst) as client:
        recs = await asyncio.gather(*(one_request(client, body, args.burst_timeout) for _ in range(args.burst)))
    by_status, first = Counter(), {}
    for r in recs:
        kind = "200" if r["error"] is None else r["error"][0]
        by_status[kind] += 1
        if r["error"] is not None:
            first.setdefault(kind, r["error"][1])
    hangs = by_status.pop("timeout", 0)
    return {"sent": args.burst, "by_status": dict(by_status), "hangs": hangs, "timeout_s": args.burst_timeout,
            "first_errors": first}


async def preflight(args):
    """GET /health (must answer 200); the model from /v1/models when --model is not given."""
    async with make_client(args, 10, 2) as client:
        try:
            async with asyncio.timeout(15):
                r = await client.get("/health")
        except (httpx.HTTPError, TimeoutError) as e:
            sys.exit(f"serve_load: {args.url}/health unreachable: {type(e).__name__}: {e}")
        if r.status_code != 200:
            sys.exit(f"serve_load: {args.url}/health answered {r.status_code}: {r.text[:200]}")
        if args.model is None:
            try:
                async with asyncio.timeout(15):
                    args.model = (await client.get("/v1/models")).json()["data"][0]["id"]
            except (httpx.HTTPError, TimeoutError, ValueError, KeyError, IndexError, TypeError):
                args.model = "ewe"


def summarize(args, records, wall, burst):
    ok = [r for r in records if r["error"] is None]
    failed = {}
    for r in records:
        if r["error"] is not None:
            f = failed.setdefault(r["error"][0], {"count": 0, "first": r["error"][1]})
            f["count"] += 1
    lat, ttft = [r["latency"] for r in ok], [r["ttft"] for r in ok if r["ttft"] is not None]
    tokens = sum(r["tokens"] for r in ok)
    r4 = lambda x: None if x is None else round(x, 4)
    return {
        "url": args.url, "model": args.model, "stream": args.stream, "clients": args.clients,
        "max_tokens": args.max_tokens, "duration_s": round(wall, 3), "requests": len(records), "ok": len(ok),
        "failed": failed,
        "latency_s": {"p50": r4(statistics.median(lat) if lat else None), "p95": r4(percentile(lat, 95)),
                      "max": r4(max(lat, default=None))},
        "ttft_s": {"p50": r4(statistics.median(ttft) if ttft else None), "p95": r4(percentile(ttft, 95))},
        "completion_tokens": tokens, "usage_missing": sum(not r["usage"] for r in ok),
        "tokens_per_s": round(tokens / wall, 3) if wall > 0 else None,
        "requests_per_s": round(len(ok) / wall, 3) if wall > 0 else None,
        "retractions": sum(r["retractions"] for r in records),
        "burst": burst or {"sent": 0, "by_status": {}, "hangs": 0},
    }


def summary_text(s):
    fmt = lambda d: "  ".join(f"{k} {'-' if v is None else f'{v:.3f}'}" for k, v in d.items())
    lines = [f"{s['url']}  model={s['model']}  stream={s['stream']}  clients={s['clients']}  {s['duration_s']:.1f} s",
             f"requests {s['requests']}: ok {s['ok']}, failed {sum(f['count'] for f in s['failed'].values())}"]
    lines += [f"  {kind}: {f['count']}  first: {f['first'][:200]}" for kind, f in s["failed"].items()]
    lines.append(f"latency s:  {fmt(s['latency_s'])}")
    if s["stream"]:
        lines.append(f"ttft s:     {fmt(s['ttft_s'])}")
    lines.append(f"completion tokens {s['completion_tokens']} ({s['usage_missing']} ok answers without usage): "
                 f"{s['tokens_per_s']} tokens/s, {s['requests_per_s']} requests/s, {s['retractions']} retractions")
    b = s["burst"]
    if b["sent"]:
        lines.append(f"burst {b['sent']}: {b['by_status']}, hangs {b['hangs']} (timeout {b['timeout_s']:g} s)")
    return "\n".join(lines)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, default=300, help="seconds in which clients start requests")
    ap.add_argument("--model", help="default: the first of GET /v1/models, else 'ewe'")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--prompts", type=Path, help='jsonl, a "prompt" field per line (default: built-in list)')
    ap.add_argument("--api-key")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per request, all in")
    ap.add_argument("--max-requests", type=int, help="cap on requests started in the main phase")
    ap.add_argument("--burst", type=int, default=0, help="after the main phase, N requests at once")
    ap.add_argument("--burst-timeout", type=float, default=30, help="a burst request not done by then is a hang")
    ap.add_argument("--out", type=Path, help="write the JSON summary here (atomically)")
    args = ap.parse_args(argv)
    u = urlsplit(args.url)
    if u.scheme not in ("http", "https") or (u.hostname or "").lower() not in LOOPBACK:
        ap.error(f"--url {args.url!r}: only http(s) on 127.0.0.1, localhost or ::1 may be load-tested")
    if args.clients < 1 or args.duration < 0 or args.timeout <= 0 or args.burst < 0 or args.burst_timeout <= 0:
        ap.error("--clients must be >= 1; --duration, --burst >= 0; --timeout, --burst-timeout > 0")
    args.url = args.url.rstrip("/")
    return args


def main(argv=None):
    args = parse_args(argv)
    prompts = PROMPTS
    if args.prompts:
        lines = args.prompts.read_text().splitlines()
        prompts = [json.loads(line)["prompt"] for line in lines if line.strip()]
        if not prompts:
            sys.exit(f"serve_load: no prompts in {args.prompts}")
    asyncio.run(preflight(args))
    print(f"serve_load: {args.clients} clients for {args.duration:g} s against {args.url} ({args.model})",
          file=sys.stderr)
    records, wall = asyncio.run(main_phase(args, prompts))
    burst = asyncio.run(burst_phase(args, prompts)) if args.burst else None
    summary = summarize(args, records, wall, burst)
    print("\n" + summary_text(summary), file=sys.stderr)  # the human summary; stdout holds only the JSON
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=args.out.parent, suffix=".tmp", delete=False) as f:
            json.dump(summary, f, indent=2)
        os.replace(f.name, args.out)
    return 0 if not summary["failed"] and summary["burst"]["hangs"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
