"""The assembly: the declared routes (:data:`eva_api.schemas.ENDPOINTS`) answered by
:class:`eva_api.routes.Api`, behind :class:`eva_api.guard.Guard`; uvicorn with the limits it
lacks (idle and half-sent connections closed, too many answered 503); and :func:`serve`, which
also keeps the sleep schedule."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
import uuid
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route

from eva_api.errors import crash, error_body, http_error
from eva_api.guard import Guard, ServeSettings
from eva_api.protocol import ApiServices
from eva_api.routes import Api
from eva_api.schemas import ENDPOINTS

log = logging.getLogger("eva.serve")


def build_app(services: ApiServices, settings: ServeSettings, token: str) -> Guard:
    """The ASGI app: the routes behind :class:`Guard` (and CORS only for configured origins)."""
    api = Api(services, settings, token)
    # sse-starlette logs every chunk it sends at DEBUG: those are Eva's words and memory notes
    logging.getLogger("sse_starlette").setLevel(logging.INFO)
    routes = [Route(ep.path, getattr(api, ep.handler), methods=[ep.method]) for ep in ENDPOINTS]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: crash})
    app.router.redirect_slashes = False  # /v1/health/ is a JSON 404, not a bare redirect
    app.state.api = api
    inner: Any = app
    if settings.allow_origins:
        from starlette.middleware.cors import CORSMiddleware

        inner = CORSMiddleware(
            app,
            allow_origins=list(settings.allow_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["authorization", "content-type"],
        )
    guard = Guard(inner, settings)
    guard.api = api
    return guard


def listen(host: str, port: int) -> socket.socket:
    """The listening socket. TCP_NODELAY on it (accepted connections inherit it): without it a
    reply written as headers then body waits ~40 ms for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def make_server(services: ApiServices, settings: ServeSettings, token: str) -> Any:
    """A uvicorn server for the app: no access log of its own (ours leaves the query string
    out), no server header, no proxy headers; idle connections closed after ``keep_alive``,
    requests whose head is not in within ``head_timeout`` closed, more than
    ``max_connections`` at once answered 503 (:func:`protocol_class`)."""
    import uvicorn

    guard = build_app(services, settings, token)
    config = uvicorn.Config(
        guard,
        host=settings.host,
        port=settings.port,
        access_log=False,
        log_config=None,  # uvicorn's would drop setup_logging's
        log_level="warning",
        server_header=False,
        lifespan="off",
        proxy_headers=False,
        http=protocol_class(settings),
        timeout_keep_alive=settings.keep_alive,  # type: ignore[arg-type]
    )
    server = uvicorn.Server(config)
    state = server.server_state
    limit = settings.max_connections
    # this request's own connection and task are counted: more than the limit is over it
    guard.busy = lambda: len(state.connections) > limit or len(state.tasks) > limit
    return server


def protocol_class(settings: ServeSettings) -> type:
    """uvicorn's h11 protocol with what it lacks: a request whose line and headers have not all
    arrived ``head_timeout`` seconds after they began (or after the connection opened) is
    answered 408 and closed — held half-sent requests would otherwise keep their sockets
    forever — and a request uvicorn cannot parse gets a JSON 400 like every other error."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    head_timeout = settings.head_timeout

    class EvaH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        _head_bytes = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_head()

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:  # a request's head is coming
                self._head_bytes = True
                self._arm_head()
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # it is in
                self._disarm_head()
                self._head_bytes = False

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head()
            super().connection_lost(exc)

        def shutdown(self) -> None:
            self._disarm_head()
            super().shutdown()

        def _arm_head(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(head_timeout, self._head_expired)

        def _disarm_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_expired(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            if self._head_bytes:  # half a request: say why before closing
                self._write_error(408, "the request's headers did not arrive in time", "timeout")
            self.transport.close()

        def send_400_response(self, msg: str) -> None:
            self._write_error(400, "this is not a valid HTTP request", "bad_request")
            self.transport.close()

        def _write_error(self, status: int, detail: str, code: str) -> None:
            rid = uuid.uuid4().hex[:16]
            body = json.dumps(error_body(status, detail, code, rid)).encode()
            reason = {400: "Bad Request", 408: "Request Timeout"}[status]
            self.transport.write(
                f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nx-request-id: {rid}\r\n"
                "connection: close\r\n\r\n".encode()
                + body
            )
            log.info("%s - - %d 0.0ms", rid, status)

    return EvaH11Protocol


def serve(
    services: ApiServices,
    settings: ServeSettings,
    token: str,
    *,
    sockets: list | None = None,
    schedule: bool = True,
) -> None:
    """Run uvicorn (blocking) until interrupted; with ``schedule``, Eva sleeps when due and
    quiet (checked every 30 s), as the TUI does."""
    server = make_server(services, settings, token)
    hub = server.config.app.api.hub
    if schedule:

        def scheduler() -> None:
            while not server.should_exit:
                time.sleep(30)
                try:
                    hub.tick()
                except Exception as e:  # noqa: BLE001 - the next tick tries again
                    log.warning("sleep schedule: %s", type(e).__name__)

        threading.Thread(target=scheduler, name="eva-sleep-schedule", daemon=True).start()
    if sockets is None:
        sockets = [listen(settings.host, settings.port)]
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=sockets)
