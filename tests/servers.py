"""An ASGI app served by uvicorn on 127.0.0.1 in a thread, for the tests that need a real socket."""
from __future__ import annotations

import contextlib
import threading
import time

import uvicorn


@contextlib.contextmanager
def running(app, **uvicorn_options):
    """Serve `app` on a free loopback port until the block ends; yields the port."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", **uvicorn_options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
