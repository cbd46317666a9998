"""What every request passes before any endpoint, and who is calling.

:class:`Guard` (pure ASGI, so SSE streams are not buffered) gives each request an id and checks
the Host header (421), the Origin (403), the connection count (503), the rate (429) and the
body's size (413); it writes the access log. :class:`Caller` reads the owner's token and turns
it, with the audience asked for, into the turn context (the table in :mod:`eva_api`)."""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from core.privacy import Audience, Speaker, Surface, TurnContext
from eva_api.errors import ApiError, error_body

if TYPE_CHECKING:
    from eva_api.routes import Api

log = logging.getLogger("eva.serve")

DEFAULT_PORT = 8765
AUDIENCES = ("owner", "group", "public")
AUDIENCE_ERROR = f"audience must be one of {', '.join(AUDIENCES)}"


# ---------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    allow_hosts: tuple[str, ...] = ()  # extra Host header values (name or name:port)
    allow_origins: tuple[str, ...] = ()  # browser origins allowed to call (CORS for them only)
    max_body: int = 64 * 1024  # bytes
    rate: float = 20.0  # requests per second per client address (0: no limit)
    burst: int = 60
    max_waiting_chats: int = 8  # chat turns queued behind the running one; more get 503
    # connections: open at once (more get 503), how long one may sit idle between requests,
    # and how long a request's line and headers may take to arrive (then it is closed)
    max_connections: int = 32
    keep_alive: float = 5.0  # seconds
    head_timeout: float = 10.0  # seconds

    def hosts(self) -> frozenset[str]:
        """Host header values accepted: the loopback names and the bound host (each bare and
        with the port), and the configured extras."""
        names = {"127.0.0.1", "localhost", "[::1]", *self.allow_hosts}
        if self.host not in ("0.0.0.0", "::"):
            names.add(f"[{self.host}]" if ":" in self.host else self.host)
        return frozenset(x for n in names for x in (n.lower(), f"{n.lower()}:{self.port}"))


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` spells (``[::1]`` too; an IPv4-mapped IPv6 address as its IPv4
    one), or None for a name or anything else."""
    h = host.strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the API on this machine: ``localhost``, an address in
    127.0.0.0/8, ``::1`` or an IPv4-mapped loopback address. A name that merely starts with
    "127." (``127.evil.example``) is not."""
    if host.strip().lower() == "localhost":
        return True
    ip = _address(host)
    return ip is not None and ip.is_loopback


def client_key(host: str) -> str:
    """The rate limit's bucket for a client address: all loopback addresses share one (a local
    caller could otherwise use 127.0.0.2, 127.0.0.3… for fresh buckets), an IPv6 client is
    counted by its /64 (one host usually owns the whole /64)."""
    ip = _address(host)
    if ip is None:
        return host
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


# ---------------------------------------------------------------------------------- the guard
class RateLimiter:
    """A token bucket per key (:func:`client_key`: one for all of loopback)."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, max(1, burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when allowed, else the seconds until the next request would be."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens < 1:
                self._buckets[key] = (tokens, now)
                return (1 - tokens) / self.rate
            self._buckets[key] = (tokens - 1, now)
            if len(self._buckets) > 10_000:  # forget the idle ones
                self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60}
            return 0.0


class Guard:
    """The checks every request passes before any endpoint (pure ASGI, so SSE streams are not
    buffered): request id, Host allowlist, Origin, rate limit, body limit; and the access log."""

    def __init__(self, app: Any, settings: ServeSettings) -> None:
        self.app = app
        self.settings = settings
        self.hosts = settings.hosts()
        self.origins = frozenset(o.rstrip("/").lower() for o in settings.allow_origins)
        self.limiter = RateLimiter(settings.rate, settings.burst)
        self.api: Api | None = None  # the endpoints behind this guard (set by build_app)
        # whether more connections are open than settings.max_connections (set by make_server,
        # which knows the server's connections)
        self.busy: Callable[[], bool] = lambda: False

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = rid
        started = time.monotonic()
        status = [0]

        async def send_with_id(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            problem = self.check(scope)
            if problem is not None:
                code, detail, name, extra = problem
                await self._reject(send_with_id, code, detail, name, rid, extra)
                return
            await self.app(scope, self._limited(receive), send_with_id)
        except Exception as e:  # noqa: BLE001 - never to uvicorn, which logs a traceback
            # (its text may quote memory); the app's handler has logged the type already
            if not status[0]:
                log.error("request %s failed: %s", rid, type(e).__name__)
                await self._reject(
                    send_with_id,
                    500,
                    "internal error; see the server log with this request id",
                    "internal",
                    rid,
                    {},
                )
        finally:
            # method and path only: the query string carries the caller's words
            log.info(
                "%s %s %s %d %.1fms",
                rid,
                scope.get("method"),
                _loggable(scope.get("path")),
                status[0],
                1000 * (time.monotonic() - started),
            )

    def check(self, scope: dict) -> tuple[int, str, str, dict] | None:
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        host = headers.get("host", "").strip().lower()
        if host not in self.hosts:
            return (
                421,
                "this server answers only to its own host name (Host header refused)",
                "bad_host",
                {},
            )
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self.origins:
            return 403, "cross-origin requests are refused", "bad_origin", {}
        if self.busy():
            return (
                503,
                "the server has too many connections open; try again soon",
                "busy",
                {"retry-after": "1"},
            )
        client = (scope.get("client") or ("?", 0))[0]
        wait = self.limiter.take(client_key(client))
        if wait:
            return (
                429,
                "too many requests; slow down",
                "rate_limited",
                {"retry-after": str(max(1, int(wait + 0.999)))},
            )
        length = headers.get("content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                return 400, "Content-Length is not a number", "bad_request", {}
            if n > self.settings.max_body:
                return (
                    413,
                    f"the body is larger than {self.settings.max_body} bytes",
                    "too_large",
                    {},
                )
        return None

    def _limited(self, receive: Any) -> Any:
        """Count the body as it arrives (a chunked body has no Content-Length)."""
        seen = [0]
        limit = self.settings.max_body

        async def wrapped() -> dict:
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if seen[0] > limit:
                    raise ApiError(413, f"the body is larger than {limit} bytes", "too_large")
            return message

        return wrapped

    @staticmethod
    async def _reject(
        send: Any, status: int, detail: str, code: str, rid: str, extra: dict
    ) -> None:
        body = json.dumps(error_body(status, detail, code, rid)).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        headers += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _loggable(path: object) -> str:
    """A path for a log line: control characters escaped (no forged lines), cut to 200."""
    text = str(path)[:200]
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text


# ---------------------------------------------------------------------------------- the caller
class Caller:
    """Who is calling: the owner (with the token) or anyone, and the turn context that and the
    audience asked for make (SPEC §1; the table in :mod:`eva_api`)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    def is_owner(self, request: Request) -> bool:
        """True with the owner's token, False with none; a wrong token is refused (401), never
        quietly taken for an anonymous call."""
        auth = request.headers.get("authorization")
        if auth is None:
            return False
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise ApiError(
                401,
                "Authorization must be 'Bearer <token>'",
                "unauthorized",
                {"www-authenticate": "Bearer"},
            )
        if not hmac.compare_digest(value.strip().encode(), self._token):
            raise ApiError(401, "wrong token", "unauthorized", {"www-authenticate": "Bearer"})
        return True

    def require_owner(self, request: Request) -> None:
        if not self.is_owner(request):
            raise ApiError(
                401,
                "this endpoint needs the owner's token (Authorization: Bearer "
                "…, from serve.token in the data dir)",
                "unauthorized",
                {"www-authenticate": "Bearer"},
            )

    def context(self, request: Request, audience: str, trusted: bool = True) -> TurnContext:
        if audience not in AUDIENCES:
            raise ApiError(400, AUDIENCE_ERROR, "bad_request")
        owner = self.is_owner(request)
        if not owner or audience == "public":
            return TurnContext(
                Speaker.OTHER,
                Surface.UNTRUSTED,
                Audience.OWNER_ONLY if audience == "owner" else Audience.GROUP,
            )
        if audience == "group":
            return TurnContext(Speaker.OWNER, Surface.UNTRUSTED, Audience.GROUP)
        return TurnContext(
            Speaker.OWNER, Surface.TRUSTED if trusted else Surface.UNTRUSTED, Audience.OWNER_ONLY
        )
