"""A real uvicorn on a loopback port for the HTTP tests (no mocked server)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import httpx

from eva_api.app import listen, make_server
from eva_api.guard import ServeSettings
from eva_api.token import ensure_token


@dataclass
class Running:
    url: str
    token: str
    port: int
    services: object
    settings: ServeSettings
    api: object = None  # the endpoints (their ChatHub) behind the guard

    def client(self, owner: bool = False, **kw) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if owner else {}
        headers.update(kw.pop("headers", {}))
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kw)


@contextlib.contextmanager
def running(services, data_dir, settings: ServeSettings | None = None) -> Iterator[Running]:
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    settings = replace(settings or ServeSettings(rate=0), host="127.0.0.1", port=port)
    token, _ = ensure_token(data_dir)
    server = make_server(services, settings, token)
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not t.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield Running(
            f"http://127.0.0.1:{port}", token, port, services, settings, server.config.app.api
        )
    finally:
        server.should_exit = True
        t.join(timeout=10)
        sock.close()


def sse_events(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of a Server-Sent Events body."""
    out, event, data = [], "message", []
    for line in text.splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line.strip() and data:
            out.append((event, "\n".join(data)))
            event, data = "message", []
    if data:
        out.append((event, "\n".join(data)))
    return out
