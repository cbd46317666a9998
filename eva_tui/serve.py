"""``eva serve``: the HTTP API for other surfaces (SPEC §10), secure by default.

    app = build_app(services, ServeSettings(port=8765), token)   # a Starlette ASGI app
    serve(services, settings)                                    # uvicorn, blocking

Who the caller is decides the turn context (SPEC §1), never the request alone:

======================  ==========  ====================================================
token                   audience    turn context
======================  ==========  ====================================================
the owner's             owner       owner / trusted / owner-only (sees private memory)
the owner's + trusted   owner       owner / untrusted / owner-only (withheld footnote)
  = false
the owner's             group       owner / untrusted / group (withheld footnote)
the owner's             public      someone else / untrusted / group (public cut)
none                    any         someone else / untrusted / that audience: no private
                                    memory, the public cut, no memory writes
======================  ==========  ====================================================

Every request goes through one ASGI guard (:class:`Guard`) before any endpoint: a request id,
the Host allowlist (421, against DNS rebinding), the Origin check (403; no CORS unless
origins are configured), a per-client rate limit (429) and the body limit (413). Errors are
JSON ``{detail, code, request_id}``. The access log holds method, path (never the query
string: it carries the caller's words), status, time and request id — never memory content
and never the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import logging.handlers
import os
import re
import secrets
import socket
import stat
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from core import __version__, ownership
from core.chat.conversation import Conversation
from core.chat.events import (
    MemoryUsed,
    Notice,
    Remembering,
    Sleeping,
    Token,
    ToolFinished,
    TurnDone,
    TurnError,
)
from core.errors import MemoryOpError, NotFound
from core.privacy import Audience, Speaker, Surface, TurnContext

log = logging.getLogger("eva.serve")

TOKEN_FILE = "serve.token"
DEFAULT_PORT = 8765
LOOPBACK = ("127.0.0.1", "::1", "localhost")
AUDIENCES = ("owner", "group", "public")
_CHANNEL = re.compile(r"[A-Za-z0-9_-]{1,64}")


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


# ---------------------------------------------------------------------------------- the log
LOG_FILE = "serve.log"
LOG_BYTES = 1024 * 1024  # rotated at 1 MB, three old files kept
LOG_BACKUPS = 3


class PrivateLogFile(logging.handlers.RotatingFileHandler):
    """A rotating log file created (and re-created at each rotation) with mode 0600: the data
    dir is the owner's."""

    def _open(self) -> Any:
        return ownership.open_private(self.baseFilename, "a",
                                      encoding=self.encoding or "utf-8")


class TypeOnlyFormatter(logging.Formatter):
    """Errors as their type name only, never a traceback: an exception's text or a frame's
    source may quote memory."""

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return f"({ei[0].__name__ if ei and ei[0] else 'error'}; traceback not logged)"

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
        return ""


def setup_logging(data_dir: Path, stderr: bool = True) -> list[logging.Handler]:
    """``eva serve``'s log: ``<data>/serve.log`` (0600, rotated at 1 MB, three kept) gets the
    access log — request id, method, path (never the query string), status, milliseconds — and
    errors, by type name only; uvicorn's own warnings too. Neither the token nor memory
    content nor a body is ever written. With ``stderr``, warnings and errors are also printed.
    Returns the handlers installed (again: they replace the earlier ones)."""
    ownership.private_dir(data_dir, claim=False)
    fmt = TypeOnlyFormatter("%(asctime)s %(levelname)s %(message)s")
    handler = PrivateLogFile(data_dir / LOG_FILE, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS,
                             encoding="utf-8")
    handlers: list[logging.Handler] = [handler]
    if stderr:
        handlers.append(logging.StreamHandler())
        handlers[-1].setLevel(logging.WARNING)
    for h in handlers:
        h.setFormatter(fmt)
        h.set_name("eva-serve-log")
    for name, level in (("eva.serve", logging.INFO), ("uvicorn.error", logging.WARNING)):
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == "eva-serve-log"]:
            logger.removeHandler(old)
            old.close()
        for h in handlers:
            logger.addHandler(h)
        if logger.level == logging.NOTSET or logger.level > level:
            logger.setLevel(level)
    return handlers


# ---------------------------------------------------------------------------------- the token
def ensure_token(data_dir: Path) -> tuple[str, Path]:
    """The owner token: created at first start (``serve.token``, mode 0600), read afterwards.
    A token file anyone else can read is narrowed to 0600.

    Servers starting at once agree on one token: the file only ever appears whole (written to
    a private temporary file, then linked into place, which fails if another got there
    first), and the check-and-create runs under a lock on the data dir where the system has
    one. A short (truncated, hand-edited) file is re-read for a moment before it is replaced."""
    ownership.private_dir(data_dir, claim=False)  # 0700 if new; opening the store narrows
    path = data_dir / TOKEN_FILE
    with _dir_lock(data_dir):
        for attempt in range(50):
            token = _read_token(path)
            if token is not None and len(token) >= 32:
                return token, path
            if token is None:  # no file: create it whole, unless another process just did
                token = secrets.token_urlsafe(32)
                tmp = _private_tmp(data_dir, token)
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    continue
                finally:
                    os.unlink(tmp)
                return token, path
            if attempt < 10:  # short: another writer mid-way? look again before replacing
                time.sleep(0.02)
                continue
            token = secrets.token_urlsafe(32)
            os.replace(_private_tmp(data_dir, token), path)
            return token, path
    raise OSError(f"cannot settle the token in {path}")


def _read_token(path: Path) -> str | None:
    """The token file's text (narrowed to 0600 first if it was wider), or None if missing."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd) as f:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, 0o600)
        return f.read().strip()


def _private_tmp(data_dir: Path, token: str) -> Path:
    tmp = data_dir / f".{TOKEN_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    with ownership.open_private(tmp, "x", encoding="utf-8") as f:
        f.write(token + "\n")
        f.flush()
        os.fsync(f.fileno())
    return tmp


@contextlib.contextmanager
def _dir_lock(data_dir: Path) -> Iterator[None]:
    """An exclusive lock on the data dir (flock) where the system has one; else nothing (the
    linked-into-place file is enough against a torn read)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        fd = os.open(data_dir, os.O_RDONLY)
    except OSError:  # pragma: no cover
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# ---------------------------------------------------------------------------------- errors
class ApiError(HTTPException):
    def __init__(self, status: int, detail: str, code: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(status, detail, headers)
        self.code = code


_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
          405: "method_not_allowed", 409: "conflict", 413: "too_large",
          408: "timeout", 415: "unsupported_media_type", 421: "misdirected",
          429: "rate_limited", 500: "internal", 503: "unavailable"}


def error_body(status: int, detail: str, code: str | None, request_id: str) -> dict:
    return {"detail": detail, "code": code or _CODES.get(status, "error"),
            "request_id": request_id}


def _rid(request: Request) -> str:
    return request.scope.get("state", {}).get("request_id", "-")


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = getattr(exc, "code", None)
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and code is None:
        detail = "no such endpoint"
    if exc.status_code == 405 and code is None:
        detail = "method not allowed for this endpoint"
    return JSONResponse(error_body(exc.status_code, detail, code, _rid(request)),
                        exc.status_code, headers=exc.headers)


async def _crash(request: Request, exc: Exception) -> JSONResponse:
    # the exception's text may quote memory: only its type reaches the log
    log.error("request %s failed: %s", _rid(request), type(exc).__name__)
    return JSONResponse(error_body(500, "internal error; see the server log with this request "
                                        "id", "internal", _rid(request)), 500)


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
        self.api: Any = None  # the endpoints behind this guard (set by build_app)
        # whether more connections are open than settings.max_connections (set by make_server,
        # which knows the server's connections)
        self.busy: Any = lambda: False

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
                await self._reject(send_with_id, 500, "internal error; see the server log "
                                   "with this request id", "internal", rid, {})
        finally:
            # method and path only: the query string carries the caller's words
            log.info("%s %s %s %d %.1fms", rid, scope.get("method"), _loggable(scope.get("path")),
                     status[0], 1000 * (time.monotonic() - started))

    def check(self, scope: dict) -> tuple[int, str, str, dict] | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        host = headers.get("host", "").strip().lower()
        if host not in self.hosts:
            return 421, "this server answers only to its own host name (Host header refused)", \
                "bad_host", {}
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self.origins:
            return 403, "cross-origin requests are refused", "bad_origin", {}
        if self.busy():
            return 503, "the server has too many connections open; try again soon", "busy", \
                {"retry-after": "1"}
        client = (scope.get("client") or ("?", 0))[0]
        wait = self.limiter.take(client_key(client))
        if wait:
            return 429, "too many requests; slow down", "rate_limited", \
                {"retry-after": str(max(1, int(wait + 0.999)))}
        length = headers.get("content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                return 400, "Content-Length is not a number", "bad_request", {}
            if n > self.settings.max_body:
                return 413, f"the body is larger than {self.settings.max_body} bytes", \
                    "too_large", {}
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
    async def _reject(send: Any, status: int, detail: str, code: str, rid: str,
                      extra: dict) -> None:
        body = json.dumps(error_body(status, detail, code, rid)).encode()
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode())]
        headers += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _loggable(path: object) -> str:
    """A path for a log line: control characters escaped (no forged lines), cut to 200."""
    text = str(path)[:200]
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text


# ---------------------------------------------------------------------------------- the API
@dataclass
class ChatHub:
    """The HTTP conversations (one per kind of turn context, so windows never mix) and the one
    model they share: turns run one at a time."""

    services: Any
    lock: threading.Lock = field(default_factory=threading.Lock)  # one turn at a time
    count_lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0

    last_turn: float = field(default_factory=time.monotonic)

    def queue(self, delta: int) -> None:
        with self.count_lock:
            self.waiting += delta

    def sleep_in_background(self, sleeper: Any, dry_run: bool | None, reason: str) -> None:
        """A night in a thread, once the running turn (if any) has ended: the planner is the
        chat model, which runs one thing at a time. Turns that come meanwhile get
        ``sleeping`` and wait."""

        def night() -> None:
            with self.lock:
                try:
                    sleeper.run(dry_run=dry_run, reason=reason)
                except Exception as e:  # noqa: BLE001 - already asleep, or a broken store
                    log.warning("sleep did not run: %s", type(e).__name__)

        threading.Thread(target=night, name="eva-http-sleep", daemon=True).start()

    def tick(self) -> bool:
        """The schedule (SPEC §7) when ``eva serve`` is the only process: a night when one is
        due and no turn has run for ``idle_for``. Returns whether it slept."""
        sleeper = self.services.sleeper
        if sleeper is None or not self.lock.acquire(blocking=False):
            return False
        try:
            return bool(sleeper.tick(time.monotonic() - self.last_turn, self.waiting > 0))
        finally:
            self.lock.release()
    conversations: dict[str, Conversation] = field(default_factory=dict)

    def conversation(self, ctx: TurnContext, channel: str = "api") -> Conversation | None:
        """The conversation of this kind of turn context and this caller's channel: windows
        never mix contexts, nor callers that name their own channels."""
        s = self.services
        if s.chat_model is None or s.memory is None:
            return None
        key = f"http-{ctx.speaker}-{ctx.surface}-{ctx.audience}-{channel}"
        conv = self.conversations.get(key)
        if conv is None:
            if len(self.conversations) >= 256:  # forget the oldest (its messages stay stored)
                self.conversations.pop(next(iter(self.conversations)))
            base = s.conversation
            conv = Conversation(
                s.memory, s.chat_model,
                base.persona if base is not None else _persona(s),
                base.config if base is not None else s._conversation_config(s.config.chat),
                clock=s.clock, sleep=s.sleeper, channel=key,
                extra_tools=s._sleep_tools() if ctx.can_mutate else None)
            self.conversations[key] = conv
        return conv


def _persona(services: Any) -> str:
    from core.persona import load_persona

    try:
        return load_persona(services.config.chat.persona_file)
    except ValueError:
        return load_persona(None)


class Api:
    def __init__(self, services: Any, settings: ServeSettings, token: str) -> None:
        self.services = services
        self.settings = settings
        self._token = token.encode()
        self.hub = ChatHub(services)

    # ------------------------------------------------------------------ who is calling
    def is_owner(self, request: Request) -> bool:
        """True with the owner's token, False with none; a wrong token is refused (401), never
        quietly taken for an anonymous call."""
        auth = request.headers.get("authorization")
        if auth is None:
            return False
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise ApiError(401, "Authorization must be 'Bearer <token>'", "unauthorized",
                           {"www-authenticate": "Bearer"})
        if not hmac.compare_digest(value.strip().encode(), self._token):
            raise ApiError(401, "wrong token", "unauthorized", {"www-authenticate": "Bearer"})
        return True

    def require_owner(self, request: Request) -> None:
        if not self.is_owner(request):
            raise ApiError(401, "this endpoint needs the owner's token (Authorization: Bearer "
                                "…, from serve.token in the data dir)", "unauthorized",
                           {"www-authenticate": "Bearer"})

    def context(self, request: Request, audience: str, trusted: bool = True) -> TurnContext:
        if audience not in AUDIENCES:
            raise ApiError(400, f"audience must be one of {', '.join(AUDIENCES)}", "bad_request")
        owner = self.is_owner(request)
        if not owner or audience == "public":
            return TurnContext(Speaker.OTHER, Surface.UNTRUSTED,
                               Audience.OWNER_ONLY if audience == "owner" else Audience.GROUP)
        if audience == "group":
            return TurnContext(Speaker.OWNER, Surface.UNTRUSTED, Audience.GROUP)
        return TurnContext(Speaker.OWNER, Surface.TRUSTED if trusted else Surface.UNTRUSTED,
                           Audience.OWNER_ONLY)

    @property
    def memory(self) -> Any:
        if self.services.memory is None:
            raise ApiError(503, "the memory is not open yet", "unavailable")
        return self.services.memory

    # ------------------------------------------------------------------ body
    async def body(self, request: Request, *, empty_ok: bool = False) -> dict:
        """The JSON object sent, however it was sent (with a Content-Length or chunked); with
        ``empty_ok`` no body at all is ``{}``. Bad JSON — nested past what the parser can
        follow too — is a 400 ``bad_json``, never a crash."""
        raw = await request.body()
        if empty_ok and not raw.strip():
            return {}
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise ApiError(415, "send JSON (Content-Type: application/json)",
                           "unsupported_media_type")
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "the body is not valid JSON", "bad_json") from None
        except RecursionError:
            raise ApiError(400, "the body is not valid JSON: nested too deeply",
                           "bad_json") from None
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object", "bad_json")
        return data

    # ------------------------------------------------------------------ endpoints
    async def health(self, request: Request) -> JSONResponse:
        s = self.services
        sleeper = s.sleeper
        return JSONResponse({
            "status": "ok", "version": __version__,
            "memory": s.memory is not None,
            "chat": s.chat_model is not None,
            "chat_loading": self.model_loading(),
            "sleeping": bool(sleeper is not None and sleeper.is_sleeping()),
        })

    async def prompt(self, request: Request) -> JSONResponse:
        """Run on the event loop itself: recall takes about a millisecond, less than the hop
        to a worker thread and back (measured by bench.api), and threads would only take turns
        at the GIL anyway."""
        q = request.query_params.get("q")
        if q is None or not q.strip():
            raise ApiError(400, "give the message as ?q=…", "bad_request")
        if len(q) > 4000:
            raise ApiError(400, "q is longer than 4000 characters", "bad_request")
        public = _flag(request.query_params.get("public", "false"), "public")
        audience = "public" if public else request.query_params.get("audience", "owner")
        ctx = self.context(request, audience)
        section = self.memory.prompt_section(q, ctx, reinforce=False)
        return JSONResponse({
            "text": section.text, "core_ids": list(section.core_ids),
            "recalled_ids": list(section.recalled_ids),
            "withheld_footnote": section.withheld_footnote,
            "context": _ctx_json(ctx),
        })

    def reminders(self, request: Request) -> JSONResponse:
        """SPEC §8.11: what is coming up. With the owner's token (audience "owner", the
        default) private items and notable nights too; without it, or for another audience,
        only what that audience may see, built from an allowlist of fields."""
        from core.upcoming import upcoming

        qp = request.query_params
        days = _int_param(qp.get("days", str(self.services.config.reminders.days)), "days",
                          0, 366)
        ctx = self.context(request, qp.get("audience", "owner"))
        items = upcoming(self.memory, ctx, days=days)
        fields = ("id", "content", "due", "every", "days", "when", "private", "kind")
        return JSONResponse({"items": [{k: i.to_json()[k] for k in fields} for i in items
                                       if ctx.sees_private or not i.private],
                             "days": days, "context": _ctx_json(ctx)})

    def memories(self, request: Request) -> JSONResponse:
        self.require_owner(request)
        qp = request.query_params
        limit = _int_param(qp.get("limit", "100"), "limit", 1, MAX_LIST)
        offset = _int_param(qp.get("offset", "0"), "offset", 0, MAX_ID)
        try:
            recs = self.memory.list(kind=qp.get("kind"), contains=qp.get("contains"),
                                    order=qp.get("order", "updated"), limit=limit,
                                    offset=offset)
        except MemoryOpError as e:
            raise ApiError(400, str(e), "bad_request") from None
        return JSONResponse({"memories": [_record(r) for r in recs]})

    def search(self, request: Request) -> JSONResponse:
        self.require_owner(request)
        q = request.query_params.get("q", "")
        try:
            hits = self.memory.search(q, reinforce=False)
        except MemoryOpError as e:
            raise ApiError(400, str(e), "bad_request") from None
        return JSONResponse({"hits": [{"score": h.score, **_record(h.record)} for h in hits]})

    def restore(self, request: Request) -> JSONResponse:
        self.require_owner(request)
        raw = request.path_params["id"]
        try:
            rid = int(raw)
        except ValueError:
            raise ApiError(400, "the id is an integer", "bad_request") from None
        if not 0 < rid <= MAX_ID:  # no memory has it (SQLite ids are positive 64-bit)
            raise ApiError(404, f"memory #{rid} is not in the archive", "not_found")
        try:
            r = self.memory.restore(rid)
        except NotFound:
            raise ApiError(404, f"memory #{rid} is not in the archive", "not_found") from None
        except MemoryOpError as e:
            raise ApiError(409, str(e), "conflict") from None
        return JSONResponse({"restored": _record(r)})

    def runs(self, request: Request) -> JSONResponse:
        owner = self.is_owner(request)
        sleeper = self._sleeper()
        limit = max(1, min(100, _int_param(request.query_params.get("limit", "30"), "limit")))
        runs = sleeper.runs(limit)
        return JSONResponse({"runs": [_run(r) if owner else _public_run(r) for r in runs],
                             "sleeping": sleeper.is_sleeping()})

    async def sleep(self, request: Request) -> JSONResponse:
        self.require_owner(request)
        data = await self.body(request, empty_ok=True)  # chunked or not; none: defaults
        dry_run = data.get("dry_run")
        if dry_run is not None and not isinstance(dry_run, bool):
            raise ApiError(400, "dry_run is true or false", "bad_request")
        sleeper = self._sleeper()
        holder = getattr(sleeper, "sleeping_elsewhere", lambda: None)()
        if sleeper.is_sleeping():
            raise ApiError(409, "Eva is already asleep"
                           + (f" ({holder.describe(time.time())})" if holder else ""),
                           "sleeping")
        self.hub.sleep_in_background(sleeper, dry_run, "api")
        return JSONResponse({"status": "started"}, 202)

    def wake(self, request: Request) -> JSONResponse:
        self.require_owner(request)
        sleeper = self._sleeper()
        holder = getattr(sleeper, "sleeping_elsewhere", lambda: None)()
        asleep = sleeper.is_sleeping()
        sleeper.wake()  # another process is asked to wake at its next heartbeat
        return JSONResponse({"woken": asleep,
                             "elsewhere": holder.describe(time.time()) if holder else None})

    # ------------------------------------------------------------------ messages (§8.12)
    def _chat_message(self, request: Request) -> tuple[Any, int, int]:
        """The transcript and the chat and message ids of ``/v1/chats/{chat}/messages/{id}``:
        the message must be a live one of that live chat (404 otherwise, 409 for a chat in
        the archive)."""
        from core.chats import ChatNotFound, Chats
        from core.transcript import Transcript

        chat_id = _int_param(request.path_params["chat"], "the chat id", 1, MAX_ID)
        message_id = _int_param(request.path_params["id"], "the message id", 1, MAX_ID)
        memory = self.memory
        try:
            chat = memory.attach(Chats).get(chat_id)
        except ChatNotFound:
            raise ApiError(404, f"there is no chat #{chat_id}", "not_found") from None
        if chat.archived:
            raise ApiError(409, f"chat #{chat_id} is in the archive: restore it first",
                           "conflict")
        transcript = memory.attach(Transcript)
        if transcript.message(message_id, chat_id) is None:
            raise ApiError(404, f"chat #{chat_id} has no message #{message_id}", "not_found")
        return transcript, chat_id, message_id

    async def edit_message(self, request: Request) -> JSONResponse:
        """The owner edits a message of a chat, hers or Eva's (issue 28 item 5); the summaries
        covering it are invalidated (:meth:`core.transcript.Transcript.edit`)."""
        self.require_owner(request)
        transcript, chat_id, message_id = self._chat_message(request)
        data = await self.body(request)
        unknown = sorted(set(data) - {"content"})
        if unknown:
            raise ApiError(400, f"unknown field {unknown[0][:40]!r} (send {{\"content\": …}})",
                           "bad_request")
        content = data.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ApiError(400, "give the new text as a non-empty 'content'", "bad_request")
        try:
            transcript.edit(message_id, content, self.services.clock.now())
        except ValueError as e:
            raise ApiError(400, str(e), "bad_request") from None
        return JSONResponse({"message": _message(transcript.message(message_id, chat_id))})

    def delete_message(self, request: Request) -> JSONResponse:
        """The owner deletes a message of a chat (to the archive, as the TUI does; issue 28
        item 5); the summaries covering it are invalidated."""
        self.require_owner(request)
        transcript, chat_id, message_id = self._chat_message(request)
        transcript.delete(message_id, self.services.clock.now())
        return JSONResponse({"deleted": message_id, "chat": chat_id})

    def model_loading(self) -> bool:
        """Whether the chat model is on its way (``eva serve`` loads it in the background):
        its component is pending or loading and no model is there yet."""
        s = self.services
        state = getattr(getattr(s, "model", None), "state", None)
        return s.chat_model is None and state in ("pending", "loading")

    def _sleeper(self) -> Any:
        if self.services.sleeper is None:
            raise ApiError(503, "sleep is not available", "unavailable")
        return self.services.sleeper

    async def chat(self, request: Request) -> Any:
        data = await self.body(request)
        message = data.get("message")
        if not isinstance(message, str) or not message.strip():
            raise ApiError(400, "give a non-empty 'message'", "bad_request")
        if len(message) > 8000:
            raise ApiError(400, "the message is longer than 8000 characters", "bad_request")
        audience = data.get("audience", "owner")
        trusted = data.get("trusted", True)
        if not isinstance(audience, str) or not isinstance(trusted, bool):
            raise ApiError(400, "audience is a string and trusted a boolean", "bad_request")
        channel = data.get("channel", "api")
        if not isinstance(channel, str) or not _CHANNEL.fullmatch(channel):
            raise ApiError(400, "channel is 1-64 letters, digits, '-' or '_'", "bad_request")
        ctx = self.context(request, audience, trusted)
        conv = self.hub.conversation(ctx, channel)
        if conv is None:
            if self.model_loading():
                raise ApiError(503, "the chat model is still loading; try again soon",
                               "loading", {"retry-after": "5"})
            raise ApiError(503, "chat is off: no chat model is loaded", "unavailable")
        if self.hub.waiting >= self.settings.max_waiting_chats:
            raise ApiError(503, "too many chat turns are waiting; try again soon", "busy",
                           {"retry-after": "5"})
        return EventSourceResponse(self._stream(conv, message, ctx), ping=15)

    async def _stream(self, conv: Conversation, message: str, ctx: TurnContext
                      ) -> AsyncIterator[dict]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        cancel = threading.Event()
        hub = self.hub
        end = object()
        hub.queue(+1)
        queued = [True]

        def put(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def dequeue() -> None:
            if queued[0]:
                queued[0] = False
                hub.queue(-1)

        def work() -> None:
            try:
                # a turn queued while Eva sleeps (here or in another process) says so at once
                sleeper = self.services.sleeper
                if sleeper is not None and sleeper.is_sleeping():
                    put(Sleeping())
                    if not sleeper.wait_awake(cancel):
                        return
                with hub.lock:
                    dequeue()
                    try:
                        for ev in conv.turn(message, ctx, cancel):
                            put(ev)
                            if cancel.is_set():
                                break
                    finally:
                        hub.last_turn = time.monotonic()
            except Exception as e:  # noqa: BLE001 - reported calmly; the log gets the type
                log.error("chat turn failed: %s", type(e).__name__)
                put(e)
            finally:
                dequeue()
                put(end)

        sent_sleeping = False
        threading.Thread(target=work, name="eva-http-turn", daemon=True).start()
        try:
            while True:
                ev = await queue.get()
                if ev is end:
                    break
                if isinstance(ev, Sleeping):
                    if sent_sleeping:
                        continue
                    sent_sleeping = True
                out = _event(ev)
                if out is not None:
                    yield out
        finally:
            cancel.set()  # the client went away (or the turn ended): stop at the next check

    # ------------------------------------------------------------------ openapi
    def openapi(self, request: Request) -> JSONResponse:
        return JSONResponse(OPENAPI)


def _event(ev: Any) -> dict | None:
    def j(d: dict) -> str:
        return json.dumps(d, ensure_ascii=False)

    if isinstance(ev, Sleeping):
        return {"event": "sleeping", "data": j({"message": "Eva is asleep; your message is "
                                                           "queued until she wakes."})}
    if isinstance(ev, MemoryUsed):
        s = ev.section
        return {"event": "memory", "data": j({"recalled_ids": list(s.recalled_ids),
                                              "core_ids": list(s.core_ids),
                                              "withheld_footnote": s.withheld_footnote})}
    if isinstance(ev, Token):
        return {"event": "token", "data": j({"text": ev.text})}
    if isinstance(ev, Remembering):
        return {"event": "remembering", "data": j({})}
    if isinstance(ev, ToolFinished):
        r = ev.result
        return {"event": "memory_note", "data": j({"tool": ev.name, "ok": r.ok,
                                                   "text": r.text})}
    if isinstance(ev, Notice):
        return {"event": "notice", "data": j({"text": ev.text})}
    if isinstance(ev, TurnError):
        return {"event": "error", "data": j({"message": ev.message, "turn_id": ev.turn_id})}
    if isinstance(ev, TurnDone):
        return {"event": "done", "data": j({
            "turn_id": ev.turn_id, "stopped": ev.stopped, "prompt_tokens": ev.prompt_tokens,
            "evaluated_tokens": ev.evaluated_tokens,
            "completion_tokens": ev.completion_tokens,
            "first_token_seconds": ev.first_token_seconds, "seconds": ev.seconds,
            "model_calls": ev.model_calls})}
    if isinstance(ev, BaseException):
        return {"event": "error", "data": j({"message": "Eva could not answer this message; "
                                                        "the server log has the details."})}
    return None  # ToolStarted: its ToolFinished follows


MAX_ID = 2**63 - 1  # SQLite's largest integer
MAX_LIST = 10_000  # memories one list call returns at most


def _int_param(value: str, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """A whole number from the query or path, within [lo, hi] when given: anything else is a
    400 that says so (never a 500 from an int too big for SQLite)."""
    v = value.strip()
    if not re.fullmatch(r"-?[0-9]{1,30}", v):
        raise ApiError(400, f"{name} is a whole number (digits only)", "bad_request")
    n = int(v)
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise ApiError(400, f"{name} must be between {lo} and {hi}", "bad_request")
    return n


def _flag(value: str, name: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes"):
        return True
    if v in ("0", "false", "no", ""):
        return False
    raise ApiError(400, f"{name} is true or false", "bad_request")


def _ctx_json(ctx: TurnContext) -> dict:
    return {"speaker": str(ctx.speaker), "surface": str(ctx.surface),
            "audience": str(ctx.audience), "sees_private": ctx.sees_private}


def _record(r: Any) -> dict:
    return {"id": r.id, "content": r.content, "kind": str(r.kind), "importance": r.importance,
            "private": r.private, "pinned": r.pinned, "scope": r.scope,
            "created_at": r.created_at, "updated_at": r.updated_at,
            "last_access_at": r.last_access_at, "access_count": r.access_count}


def _message(m: Any) -> dict:
    return {"id": m.id, "chat": m.chat_id, "role": m.role, "content": m.content,
            "status": m.status, "created_at": m.created_at}


def _run(r: Any) -> dict:
    """The owner's view of a night: everything the journal holds."""
    return {"id": r.id, "started_at": r.started_at, "finished_at": r.finished_at,
            "status": r.status, "dry_run": r.dry_run, "reason": r.reason, "model": r.model,
            "stages": r.stages, "notable": r.notable, "summary": r.summary,
            "phases": [{"stage": p.stage, "name": p.name, "status": p.status,
                        "seconds": p.seconds, "calls": p.calls,
                        "ops": [{"op": o.op, "ids": o.ids, "applied": o.applied, "why": o.why,
                                 "refused_reason": o.refused_reason} for o in p.ops]}
                       for p in r.phases]}


def _public_run(run: Any) -> dict:
    """A night as anyone without the owner's token sees it (SPEC §11): only allowlisted fields
    of the allowlist-built :meth:`SleepRun.redacted` — ids, counts, statuses, times, flags and
    the code's own names. No free text that memory could be quoted in reaches it: whys, plans,
    details, refusal reasons, notes and the model's name are blank, and the summary is counts."""
    r = run.redacted()
    return {"id": r.id, "started_at": r.started_at, "finished_at": r.finished_at,
            "status": r.status, "dry_run": r.dry_run, "reason": r.reason, "model": None,
            "stages": dict(r.stages), "notable": r.notable, "summary": r.summary,
            "phases": [{"stage": p.stage, "name": p.name, "status": p.status,
                        "seconds": p.seconds, "calls": p.calls,
                        "ops": [{"op": o.op, "ids": list(o.ids), "applied": o.applied,
                                 "why": "",
                                 "refused_reason": None if o.refused_reason is None
                                 else "refused"} for o in p.ops]}
                       for p in r.phases]}


def build_app(services: Any, settings: ServeSettings, token: str) -> Guard:
    """The ASGI app: the routes behind :class:`Guard` (and CORS only for configured origins)."""
    api = Api(services, settings, token)
    # sse-starlette logs every chunk it sends at DEBUG: those are Eva's words and memory notes
    logging.getLogger("sse_starlette").setLevel(logging.INFO)
    routes = [
        Route("/v1/health", api.health, methods=["GET"]),
        Route("/v1/memories/prompt", api.prompt, methods=["GET"]),
        Route("/v1/memories/search", api.search, methods=["GET"]),
        Route("/v1/memories", api.memories, methods=["GET"]),
        Route("/v1/memories/archive/{id}/restore", api.restore, methods=["POST"]),
        Route("/v1/reminders", api.reminders, methods=["GET"]),
        Route("/v1/sleep/runs", api.runs, methods=["GET"]),
        Route("/v1/sleep", api.sleep, methods=["POST"]),
        Route("/v1/sleep/wake", api.wake, methods=["POST"]),
        Route("/v1/chat", api.chat, methods=["POST"]),
        Route("/v1/chats/{chat}/messages/{id}", api.edit_message, methods=["PATCH"]),
        Route("/v1/chats/{chat}/messages/{id}", api.delete_message, methods=["DELETE"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error,
                                                       Exception: _crash})
    app.router.redirect_slashes = False  # /v1/health/ is a JSON 404, not a bare redirect
    app.state.api = api
    inner: Any = app
    if settings.allow_origins:
        from starlette.middleware.cors import CORSMiddleware

        inner = CORSMiddleware(app, allow_origins=list(settings.allow_origins),
                               allow_methods=["GET", "POST", "PATCH", "DELETE"],
                               allow_headers=["authorization", "content-type"])
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


def make_server(services: Any, settings: ServeSettings, token: str) -> Any:
    """A uvicorn server for the app: no access log of its own (ours leaves the query string
    out), no server header, no proxy headers; idle connections closed after ``keep_alive``,
    requests whose head is not in within ``head_timeout`` closed, more than
    ``max_connections`` at once answered 503 (:func:`protocol_class`)."""
    import uvicorn

    guard = build_app(services, settings, token)
    config = uvicorn.Config(guard, host=settings.host, port=settings.port, access_log=False,
                            log_config=None,  # uvicorn's would drop setup_logging's
                            log_level="warning", server_header=False, lifespan="off",
                            proxy_headers=False, http=protocol_class(settings),
                            timeout_keep_alive=settings.keep_alive)  # type: ignore[arg-type]
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
                self._write_error(408, "the request's headers did not arrive in time",
                                  "timeout")
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
                "connection: close\r\n\r\n".encode() + body)
            log.info("%s - - %d 0.0ms", rid, status)

    return EvaH11Protocol


def serve(services: Any, settings: ServeSettings, token: str, *,
          sockets: list | None = None, schedule: bool = True) -> None:
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


_ERR = {"$ref": "#/components/schemas/Error"}


def _op(summary: str, owner: bool = False, params: list | None = None, body: dict | None = None,
        ok: str = "200", sse: bool = False) -> dict:
    op: dict[str, Any] = {"summary": summary, "responses": {
        ok: {"description": "OK", "content": {
            ("text/event-stream" if sse else "application/json"): {"schema": {}}}},
        "4XX": {"description": "error", "content": {"application/json": {"schema": _ERR}}}}}
    if owner:
        op["security"] = [{"owner": []}]
    if params:
        op["parameters"] = params
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return op


def _q(name: str, required: bool = False, kind: str = "string") -> dict:
    return {"name": name, "in": "query", "required": required, "schema": {"type": kind}}


_MESSAGE_PATH = [{"name": n, "in": "path", "required": True, "schema": {"type": "integer"}}
                 for n in ("chat", "id")]

OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Eva", "version": __version__,
             "description": "Eva's memory and chat for other surfaces. Requests are untrusted "
                            "unless they carry the owner's token (serve.token in the data dir) "
                            "as 'Authorization: Bearer …'."},
    "components": {
        "securitySchemes": {"owner": {"type": "http", "scheme": "bearer"}},
        "schemas": {"Error": {"type": "object", "required": ["detail", "code", "request_id"],
                              "properties": {"detail": {"type": "string"},
                                             "code": {"type": "string"},
                                             "request_id": {"type": "string"}}}},
    },
    "paths": {
        "/v1/health": {"get": _op("Is the server up; is Eva asleep")},
        "/v1/memories/prompt": {"get": _op(
            "The memory section a turn would carry (reinforces nothing)",
            params=[_q("q", True), _q("public", kind="boolean"), _q("audience")])},
        "/v1/memories": {"get": _op("List memories (owner)", True,
                                    [_q("kind"), _q("contains"), _q("order"),
                                     _q("limit", kind="integer"), _q("offset", kind="integer")])},
        "/v1/memories/search": {"get": _op("Search memories (owner; reinforces nothing)", True,
                                           [_q("q", True)])},
        "/v1/memories/archive/{id}/restore": {"post": {
            **_op("Restore an archived memory (owner)", True),
            "parameters": [{"name": "id", "in": "path", "required": True,
                            "schema": {"type": "integer"}}]}},
        "/v1/reminders": {"get": _op("What is coming up: promises, dates, birthdays, notable "
                                     "nights (private items and nights only with the token)",
                                     params=[_q("days", kind="integer"), _q("audience")])},
        "/v1/sleep/runs": {"get": _op("The sleep journal (redacted without the token)",
                                      params=[_q("limit", kind="integer")])},
        "/v1/sleep": {"post": _op("Sleep now, in the background (owner)", True,
                                  body={"type": "object",
                                        "properties": {"dry_run": {"type": "boolean"}}},
                                  ok="202")},
        "/v1/sleep/wake": {"post": _op("Wake Eva (owner)", True)},
        "/v1/chats/{chat}/messages/{id}": {
            "patch": {**_op("Edit a message of a chat (owner); the summaries covering it are "
                            "invalidated", True,
                            body={"type": "object", "required": ["content"],
                                  "properties": {"content": {"type": "string"}}}),
                      "parameters": _MESSAGE_PATH},
            "delete": {**_op("Delete a message of a chat to the archive (owner); the summaries "
                             "covering it are invalidated", True),
                       "parameters": _MESSAGE_PATH}},
        "/v1/chat": {"post": _op(
            "One chat turn as Server-Sent Events: sleeping, memory, token, remembering, "
            "memory_note, notice, error, done", body={
                "type": "object", "required": ["message"],
                "properties": {"message": {"type": "string"},
                               "audience": {"enum": list(AUDIENCES)},
                               "trusted": {"type": "boolean"},
                               "channel": {"type": "string", "pattern": _CHANNEL.pattern}}},
            sse=True)},
    },
}
