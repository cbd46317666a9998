"""The probes of issue 25: one small function per attack on ``eva serve`` and the ``eva``
command, each returning an outcome

    {"name", "kind": "http"|"cli", "ok", "leak", "traceback", "status"|"exit", "note"}

``leak`` — private content or a private number reached an output the caller may not see, or a
private file is readable by others; ``traceback`` — "Traceback" (or "Exception ignored") on a
command's stderr, or a server log record with ``exc_info`` / "Traceback". ``ok`` is the probe's
whole verdict (a probe can fail without leaking, e.g. a 500).

HTTP probes run against a real uvicorn on loopback (tests/serve_kit.py) over a temporary store
whose private records carry ``zq…`` markers and unique 7-9 digit numbers, and whose journal holds
a night quoting them everywhere (plans, whys, op details, a refused op's reason, a phase note,
the run's summary). CLI probes run ``python -m eva_tui.cli`` in subprocesses on temporary data
dirs (``XDG_CONFIG_HOME`` in a temp dir, ``EVA_MEMORY__EMBEDDING_MODEL=none``, umask 022).

    run(kinds=("http", "cli"))  -> {"http_probes", "cli_probes", "leaks", "tracebacks",
                                    "failed", "probes": [outcome, …], "seconds"}

``bench.faults --only probes`` prints it; tests/test_probes.py asserts no leak, no traceback and
that every probe ran. This module holds the outcomes, the environments and the runner; the
probes are in tests/probekit_http.py and tests/probekit_cli.py.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.probekit_secrets import T0, Secrets, build_secret_store

REPO = Path(__file__).resolve().parent.parent
STDERR_LIMIT = 10_000  # bytes: a bad value is reported, not echoed whole


# ---------------------------------------------------------------------------- outcomes
def outcome(
    name: str,
    kind: str,
    ok: bool,
    *,
    leak: bool = False,
    traceback: bool = False,
    status: int | None = None,
    exit: int | None = None,
    note: str = "",
) -> dict:
    out = {
        "name": name,
        "kind": kind,
        "ok": bool(ok and not leak and not traceback),
        "leak": bool(leak),
        "traceback": bool(traceback),
    }
    if kind == "http":
        out["status"] = status
    else:
        out["exit"] = exit
    out["note"] = note[:600]
    return out


def has_traceback(text: str) -> bool:
    return "Traceback" in text or "Exception ignored" in text


# ---------------------------------------------------------------------------- HTTP
class Captured(logging.Handler):
    """The server side's log records (eva.serve, uvicorn*, asyncio, root) and uncaught thread
    exceptions."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.thread_errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not any(r is record for r in self.records[-8:]):  # seen by a parent logger too
            self.records.append(record)

    def bad_since(self, mark: tuple[int, int]) -> list[str]:
        out = []
        for r in self.records[mark[0] :]:
            msg = r.getMessage()
            if r.exc_info or "Traceback" in msg:
                out.append(f"{r.name}: {msg[:200]}")
        return out + self.thread_errors[mark[1] :]

    def mark(self) -> tuple[int, int]:
        return len(self.records), len(self.thread_errors)


class NullPlanner:
    """A scripted sleep planner: plans nothing."""

    name = "probe-planner"
    context_size = 32_768

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def force_tool_call(self, messages, tool, timeout=None, cancel=None):
        from core.llm import ToolCall

        return ToolCall("sleep_finish", {"reasoning": "probe", "ops": []})


@dataclass
class HttpEnv:
    dir: Path
    secrets: Secrets
    services: object
    server: object  # serve_kit.Running
    log: Captured


@contextlib.contextmanager
def http_env() -> Iterator[HttpEnv]:
    from core import ManualClock, Memory, MemoryConfig
    from eva_runtime import config as cfg
    from eva_runtime.services import Services
    from tests.fake_llm import ScriptedLLM
    from tests.serve_kit import running

    d = Path(tempfile.mkdtemp(prefix="eva-probe-http-"))
    cap = Captured()
    names = ("", "eva", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio", "starlette")
    old_hook = threading.excepthook

    def hook(args) -> None:
        cap.thread_errors.append(
            f"thread {args.thread.name if args.thread else '?'}: {args.exc_type.__name__}"
        )
        old_hook(args)

    try:
        secrets = build_secret_store(d / "memory.db")
        clock = ManualClock(T0 + 3600)
        mem = Memory.open(d / "memory.db", MemoryConfig(), clock)
        llm = ScriptedLLM([["Sure", "."]] * 200, plans=[{"ops": []}] * 200)
        s = Services(cfg.from_mapping({}, None), d, clock=clock, memory=mem, chat_model=llm)
        if s.sleeper is not None:
            s.sleeper.planner = NullPlanner()
        threading.excepthook = hook
        with running(s, d) as srv:
            for n in names:  # after uvicorn configured its loggers
                logging.getLogger(n).addHandler(cap)
            try:
                yield HttpEnv(d, secrets, s, srv, cap)
            finally:
                for n in names:
                    logging.getLogger(n).removeHandler(cap)
        s.close()
    finally:
        threading.excepthook = old_hook
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------- the eva command
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVA_")}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "XDG_CONFIG_HOME": str(tmp / "xdg-config"),
            "XDG_DATA_HOME": str(tmp / "xdg-data"),
            "EVA_MEMORY__EMBEDDING_MODEL": "none",
            "OPENBLAS_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    env.update(extra)
    return env


def under_umask_022(*cmd: str) -> list[str]:
    """``cmd`` run by a shell with umask 022, the common default: what a probe finds
    world-readable is then Eva's doing, not a permissive umask's."""
    return ["sh", "-c", 'umask 022; exec "$@"', "sh", *cmd]


def _eva_cmd(*args: str) -> list[str]:
    return under_umask_022(sys.executable, "-m", "eva_tui.cli", *args)


# ---------------------------------------------------------------------------- running
def _guarded(name: str, kind: str, fn: Callable[[], dict]) -> dict:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - a probe that could not finish is a failure
        return outcome(
            name, kind, False, note=f"the probe itself failed: {type(e).__name__}: {str(e)[:300]}"
        )


def _cli_one(probe: Callable[[Path], dict], base: Path) -> dict:
    name = probe.__name__.removeprefix("cli_")
    tmp = Path(tempfile.mkdtemp(prefix=name[:20] + "-", dir=base))
    try:
        return _guarded(name, "cli", lambda: probe(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(kinds: tuple[str, ...] = ("http", "cli"), workers: int = 2) -> dict:
    started = time.monotonic()
    results: list[dict] = []
    if "http" in kinds:
        from tests.probekit_http import HTTP_PROBES  # it imports this module's environment

        with http_env() as env:
            for probe in HTTP_PROBES:
                name = probe.__name__.removeprefix("http_")
                results.append(_guarded(name, "http", lambda p=probe: p(env)))
    if "cli" in kinds:
        from tests.probekit_cli import CLI_PROBES  # it imports this module's outcomes

        base = Path(tempfile.mkdtemp(prefix="eva-probe-cli-"))
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results += list(pool.map(lambda p: _cli_one(p, base), CLI_PROBES))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return {
        "http_probes": sum(r["kind"] == "http" for r in results),
        "cli_probes": sum(r["kind"] == "cli" for r in results),
        "leaks": sum(r["leak"] for r in results),
        "tracebacks": sum(r["traceback"] for r in results),
        "failed": sum(not r["ok"] for r in results),
        "probes": results,
        "seconds": round(time.monotonic() - started, 1),
    }


if __name__ == "__main__":
    print(json.dumps(run(tuple(sys.argv[1:]) or ("http", "cli")), indent=1, ensure_ascii=False))
