"""``eva serve``: the command that runs the HTTP API (its flags are checked, with one sentence
and exit 2, before a token, a log or a socket is made)."""

from __future__ import annotations

import argparse
import math
import threading
from pathlib import Path
from typing import Any

from eva_api import token
from eva_api.app import listen, serve
from eva_api.guard import DEFAULT_PORT, ServeSettings, is_loopback
from eva_api.log import setup_logging
from eva_runtime.cli_io import err, say
from eva_runtime.config import EvaConfig


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``eva serve`` and its flags, on the ``eva`` command's subparsers."""
    s = sub.add_parser("serve", parents=[common], help="serve the HTTP API on loopback (SPEC §10)")
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; others need --allow-remote)",
    )
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    s.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow binding a non-loopback address (the API is then reachable from the network)",
    )
    s.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host header value to accept (repeatable)",
    )
    s.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to call the API, with CORS (repeatable)",
    )
    s.add_argument(
        "--rate-limit",
        type=float,
        default=20.0,
        metavar="N",
        help="requests per second per client address (default 20; 0: no limit)",
    )
    s.add_argument(
        "--max-connections",
        type=int,
        default=32,
        metavar="N",
        help="connections open at once; more are answered 503 (default 32)",
    )
    s.add_argument(
        "--head-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds a request's headers may take to arrive (default 10)",
    )
    s.add_argument(
        "--keep-alive",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds an idle connection is kept open (default 5)",
    )
    s.add_argument(
        "--no-chat",
        action="store_true",
        help="do not load the chat model (memory and sleep journal only)",
    )


def cmd_serve(config: EvaConfig, data_dir: Path, args: argparse.Namespace) -> int:
    """Check the flags (exit 2 before anything starts), then the token, the log, the store;
    serve at once, the chat model loading in the background."""
    from eva_runtime.services import Component, Services

    if not is_loopback(args.host) and not args.allow_remote:
        err(
            f"refusing to bind {args.host}: that is not loopback. Pass --allow-remote to "
            "expose Eva's API beyond this machine (anyone who can reach it and has the token "
            "can read private memory)"
        )
        return 2
    if not 0 < args.port < 65536:
        err("--port must be 1..65535")
        return 2
    if not (math.isfinite(args.rate_limit) and 0 <= args.rate_limit <= 1_000_000):
        err("--rate-limit must be a number of requests per second from 0 (no limit) to 1000000")
        return 2
    if not 1 <= args.max_connections <= 10_000:
        err("--max-connections must be 1..10000")
        return 2
    for flag, value in (("--head-timeout", args.head_timeout), ("--keep-alive", args.keep_alive)):
        if not (math.isfinite(value) and 0 < value <= 3600):
            err(f"{flag} must be a number of seconds above 0, at most 3600")
            return 2
    if not is_loopback(args.host):
        err(f"warning: binding {args.host}; the API is reachable from the network")
        if not args.allow_host:
            err(
                "note: requests are accepted only with a loopback or the bound Host header; "
                "add --allow-host NAME for the name clients use"
            )
    settings = ServeSettings(
        host=args.host,
        port=args.port,
        allow_hosts=tuple(args.allow_host),
        allow_origins=tuple(args.allow_origin),
        rate=args.rate_limit,
        burst=max(1, int(3 * args.rate_limit)),
        max_connections=args.max_connections,
        head_timeout=args.head_timeout,
        keep_alive=args.keep_alive,
    )
    secret, token_path = token.ensure_token(data_dir)
    setup_logging(data_dir)
    s = Services(config, data_dir)
    if args.no_chat:  # not loading: /v1/chat says chat is off, not "loading"
        s.model = Component(s.model.name, "off", "--no-chat")
    s.open_memory()
    s.finish()
    try:
        sock = listen(args.host, args.port)
    except OSError as e:
        s.close()
        err(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}")
        return 1
    for p in s.take_problems():
        say(f"note: {p}")
    host = f"[{args.host}]" if ":" in args.host else args.host
    say(f"Eva serves on http://{host}:{args.port} (OpenAPI: /openapi.json)")
    say(f"owner token: {token_path} (mode 0600; send it as 'Authorization: Bearer …')")

    def load() -> None:
        s.load_model()
        s.finish()
        for p in s.take_problems():
            say(f"note: {p}")
        if s.chat_model is not None:
            say(f"chat ready: {s.model_label()}")

    if not args.no_chat:
        say("loading the chat model in the background; /v1/chat answers 503 until it is ready")
        threading.Thread(target=load, name="eva-load-model", daemon=True).start()
    try:
        serve(s, settings, secret, sockets=[sock])
    finally:
        s.close()
    say("Eva stopped serving")
    return 0
