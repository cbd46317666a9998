"""A real uvicorn on a loopback port for the HTTP tests (no mocked server): in this process
(:func:`running`) or as the `eva serve` command itself (:func:`eva_serve`)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

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


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


def eva_serve(data: Path, env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    """`eva serve --no-chat` on the data folder ``data``, started as the owner starts it (its
    own process, ``env`` its environment) on a free loopback port: the process (stdout and
    stderr piped, text) and the port. The caller terminates it."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "eva_tui.cli",
            "--data",
            str(data),
            "serve",
            "--port",
            str(port),
            "--no-chat",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, port


def first_answer(proc: subprocess.Popen, url: str, seconds: float = 30) -> httpx.Response:
    """GET ``url`` of the server ``proc`` is starting, again until it answers (bounded; the
    process must not die meanwhile)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return httpx.get(url)
        except httpx.ConnectError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "eva serve did not answer"
            time.sleep(0.1)


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
