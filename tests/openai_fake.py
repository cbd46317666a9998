"""A tiny OpenAI-compatible server on loopback (stdlib ``http.server``) for fast, deterministic
tests of the HTTP backend (issue 31). Each request to ``/v1/chat/completions`` is answered by
the next scripted :class:`Answer`; every request body is recorded."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    pieces: list[str] = field(default_factory=list)  # streamed text deltas
    usage: dict[str, Any] | None = None  # sent in a last chunk when given
    status: int = 200  # a non-200 answers with ``error`` as the message
    error: str = ""
    delay: float = 0.0  # seconds between pieces
    die_after: int | None = None  # close the connection after this many pieces (no [DONE])
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{name, arguments}]


class FakeOpenAI:
    def __init__(
        self,
        answers: list[Answer] | None = None,
        models: tuple[str, ...] = ("fake",),
        reject_formats: tuple[str, ...] = (),
    ) -> None:
        self.answers = list(answers or [])
        self.models = models
        self.reject_formats = reject_formats  # response_format types answered with 400
        self.requests: list[dict[str, Any]] = []
        self.disconnected = threading.Event()  # a client went away mid-stream
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _json(self, status: int, obj: Any) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": m, "object": "model"} for m in fake.models],
                        },
                    )
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(n) or b"{}")
                fake.requests.append(req)
                fmt = (req.get("response_format") or {}).get("type")
                if fmt in fake.reject_formats:
                    self._json(400, {"error": {"message": f"unknown response_format {fmt}"}})
                    return
                a = fake.answers.pop(0) if fake.answers else Answer(["ok"])
                if a.status != 200:
                    self._json(a.status, {"error": {"message": a.error or "failed"}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for i, p in enumerate(a.pieces):
                        if a.die_after is not None and i >= a.die_after:
                            self.wfile.flush()
                            self.connection.shutdown(2)
                            return
                        self._event(
                            {
                                "choices": [
                                    {"index": 0, "delta": {"content": p}, "finish_reason": None}
                                ]
                            }
                        )
                        if a.delay:
                            time.sleep(a.delay)
                    for i, c in enumerate(a.tool_calls):
                        self._event(
                            {
                                "choices": [
                                    {
                                        "index": 0,
                                        "delta": {
                                            "tool_calls": [
                                                {
                                                    "index": i,
                                                    "id": f"c{i}",
                                                    "type": "function",
                                                    "function": {
                                                        "name": c["name"],
                                                        "arguments": json.dumps(c["arguments"]),
                                                    },
                                                }
                                            ]
                                        },
                                        "finish_reason": None,
                                    }
                                ]
                            }
                        )
                    self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                    if a.usage:
                        self._event({"choices": [], "usage": a.usage})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    fake.disconnected.set()

            def _event(self, obj: dict[str, Any]) -> None:
                self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
