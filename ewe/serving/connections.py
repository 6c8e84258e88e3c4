"""Limits on HTTP connections that uvicorn does not set: how long a request's head may take to
arrive, and how many connections one client address may hold open.

uvicorn arms its keep-alive timer only between requests, and every byte received cancels it, so a
client that sends a request's head a byte at a time ("slowloris") holds its socket for as long as
it likes; and `limit_concurrency` counts requests, not idle sockets, nor whose they are. Servers in
this field bound both (nginx's client_header_timeout, gunicorn's per-worker connections).
`guarded_h11(header_timeout, per_client)` returns uvicorn's h11 protocol with both bounds; pass it
as uvicorn's `http`.
"""
from __future__ import annotations

import asyncio
from collections import Counter

from uvicorn.protocols.http.h11_impl import H11Protocol


def guarded_h11(header_timeout: float, per_client: int) -> type[H11Protocol]:
    """An H11Protocol class that closes a connection whose request head is not complete within
    `header_timeout` seconds of its first byte or of the connection opening (the next request's
    too, on a kept-alive connection), and refuses (closes at once) a client address's connection
    beyond `per_client` open ones. Each server gets its own class, with its own count."""
    if header_timeout <= 0 or per_client < 1:
        raise ValueError(f"header_timeout={header_timeout} must be > 0 and per_client={per_client} >= 1")
    open_by_client: Counter = Counter()

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.ewe_host = self.client[0] if self.client else None
            self.ewe_head_timer: asyncio.TimerHandle | None = None
            self.ewe_cycle_before = None
            open_by_client[self.ewe_host] += 1
            if open_by_client[self.ewe_host] > per_client:
                transport.close()
                return
            self.ewe_arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self.ewe_disarm()
            open_by_client[self.ewe_host] -= 1
            if open_by_client[self.ewe_host] <= 0:
                del open_by_client[self.ewe_host]
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and self.cycle is not self.ewe_cycle_before:  # a new request's head arrived
                self.ewe_disarm()  # (its body, and the answer, take what they take)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self.ewe_arm()  # the next request's head on a kept-alive connection

        def ewe_arm(self) -> None:
            self.ewe_disarm()
            self.ewe_cycle_before = self.cycle
            self.ewe_head_timer = self.loop.call_later(header_timeout, self.ewe_head_too_slow)

        def ewe_disarm(self) -> None:
            if self.ewe_head_timer is not None:
                self.ewe_head_timer.cancel()
                self.ewe_head_timer = None

        def ewe_head_too_slow(self) -> None:
            self.ewe_head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
