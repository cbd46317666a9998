"""The ``eva`` command.

    eva [--data DIR] [--config FILE]      start the TUI (default data dir: $XDG_DATA_HOME/eva)
    eva sleep [--dry-run]                 one night now, in the terminal, with progress
    eva calibrate                         measure the embedder's background cosine on your corpus
    eva doctor                            check models, store and vectors; say what to fix
    eva serve [--host H] [--port N]       the HTTP API for other surfaces (loopback, token)
    eva export [--format jsonl|md] [--include-archive] [--private] [-o FILE [--force]]
                                          write the memory out (stdout unless -o)
    eva export --chats [--chat ID] [--format jsonl|md] [--private] [-o FILE [--force]]
                                          write the chats out (stdout unless -o)
    eva import FILE                       read an export back: all or nothing, through dedup
    eva import --chats FILE [--dry-run]   bring chats in: Eva's JSONL, ChatGPT's
                                          conversations.json, a SillyTavern .jsonl
    eva backup DIR                        a consistent copy of the store (SQLite online backup)

Every command ends through one guard in :func:`main` (issue 25): a failure is one sentence on
stderr prefixed "eva: " and one of the exit codes below, never a traceback — unless
``EVA_DEBUG=1``, which prints the traceback as well. A bad config is reported with the key and
the reason (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib.util
import json
import os
import sqlite3
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path

from core import __version__
from core.errors import MemoryOpError, StoreError, clip_text
from eva_tui import config as cfg

# Exit codes (README › The `eva` command › Exit codes; `eva --help` lists them too)
EXIT_OK = 0
EXIT_FAILED = 1  # the store, a file or a model could not be used; nothing was lost
EXIT_USAGE = 2  # a bad flag, config file, EVA_ variable or value (argparse uses 2 as well)
EXIT_OUTPUT = 74  # EX_IOERR: the output could not be written (stdout closed or full, -o FILE)
EXIT_ASLEEP_ELSEWHERE = 75  # EX_TEMPFAIL: another process is sleeping; try again later
EXIT_INTERRUPTED = 130  # Ctrl+C (128 + SIGINT)

EXIT_CODES = f"""\
exit codes:
  {EXIT_OK:<4} done
  {EXIT_FAILED:<4} failed: the store, a file or a model could not be used (nothing was lost)
  {EXIT_USAGE:<4} usage or config error: a bad flag, config file, EVA_ variable or value,
       or an export -o FILE that exists (--force) or is a symbolic link
  {EXIT_OUTPUT:<4} the output could not be written: stdout closed (eva export | head) or
       full, the -o FILE or the backup DIR
  {EXIT_ASLEEP_ELSEWHERE:<4} Eva is asleep in another process (eva sleep); try again later
  {EXIT_INTERRUPTED:<4} interrupted (Ctrl+C)

An error is one line on stderr starting with "eva: "; EVA_DEBUG=1 adds its traceback.
"""


class UsageError(Exception):
    """What was asked cannot be done as asked (exit 2): an -o FILE that exists, a link."""


class OutputError(Exception):
    """The output could not be written (exit 74): stdout (``stdout``) or the -o FILE."""

    def __init__(self, message: str, *, stdout: bool = False) -> None:
        super().__init__(message)
        self.stdout = stdout


def _common(suppress: bool) -> argparse.ArgumentParser:
    """--data and --config, accepted before or after the subcommand. The subcommands' copies
    default to SUPPRESS, so they never reset a value given before the subcommand."""
    p = argparse.ArgumentParser(add_help=False)
    default = argparse.SUPPRESS if suppress else None
    p.add_argument(
        "--data",
        metavar="DIR",
        default=default,
        help="data directory (default: $XDG_DATA_HOME/eva, i.e. ~/.local/share/eva)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        default=default,
        help="config file (default: $XDG_CONFIG_HOME/eva/config.toml)",
    )
    return p


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="eva",
        parents=[_common(False)],
        description="Eva, an offline companion with a careful memory",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"eva {__version__}")
    sub = p.add_subparsers(dest="cmd")
    common = _common(True)
    s = sub.add_parser("sleep", parents=[common], help="sleep now (consolidate the memory)")
    s.add_argument("--dry-run", action="store_true", help="plan and journal, apply nothing")
    sub.add_parser(
        "calibrate",
        parents=[common],
        help="measure the embedder's background cosine on your own memories",
    )
    sub.add_parser("doctor", parents=[common], help="check models, store and vectors")
    r = sub.add_parser("remind", parents=[common],
                       help="print what is coming up (promises, dates, birthdays; for cron, "
                            "a shell prompt or notify-send)")
    r.add_argument("--days", type=int, default=None, metavar="N",
                   help="look N days ahead (default: [reminders] days, 3)")
    r.add_argument("--format", choices=("text", "json"), default="text")
    r.add_argument("--no-private", action="store_true",
                   help="leave private memories out (a notification others may see)")
    _serve_parser(sub, common)
    _portability_parsers(sub, common)
    return p


def _serve_parser(sub, common) -> None:
    from eva_tui.serve import DEFAULT_PORT

    s = sub.add_parser("serve", parents=[common],
                       help="serve the HTTP API on loopback (SPEC §10)")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; others need --allow-remote)")
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    s.add_argument("--allow-remote", action="store_true",
                   help="allow binding a non-loopback address (the API is then reachable "
                        "from the network)")
    s.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another Host header value to accept (repeatable)")
    s.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a browser origin allowed to call the API, with CORS (repeatable)")
    s.add_argument("--rate-limit", type=float, default=20.0, metavar="N",
                   help="requests per second per client address (default 20; 0: no limit)")
    s.add_argument("--max-connections", type=int, default=32, metavar="N",
                   help="connections open at once; more are answered 503 (default 32)")
    s.add_argument("--head-timeout", type=float, default=10.0, metavar="S",
                   help="seconds a request's headers may take to arrive (default 10)")
    s.add_argument("--keep-alive", type=float, default=5.0, metavar="S",
                   help="seconds an idle connection is kept open (default 5)")
    s.add_argument("--no-chat", action="store_true",
                   help="do not load the chat model (memory and sleep journal only)")


def _portability_parsers(sub, common: argparse.ArgumentParser) -> None:
    """eva export / import / backup (SPEC §11: nothing the owner owns is locked in)."""
    e = sub.add_parser("export", parents=[common], help="write the memory out (JSON Lines or "
                       "Markdown); private memories only with --private")
    e.add_argument("--format", choices=("jsonl", "md"), default="jsonl",
                   help="jsonl for round trips (default), md for reading")
    e.add_argument("--include-archive", action="store_true",
                   help="also the archived (forgotten, restorable) memories")
    e.add_argument("--private", action="store_true",
                   help="include private memories (with --chats: the messages written where "
                        "private memory was visible)")
    e.add_argument("--chats", action="store_true",
                   help="export the chats (messages) instead of the memory")
    e.add_argument("--chat", type=int, metavar="ID",
                   help="with --chats: only this chat (its id, as `eva export --chats` shows)")
    e.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (default: stdout), mode 0600; an existing FILE is "
                        "refused unless --force, a symbolic link always")
    e.add_argument("--force", action="store_true", help="replace an existing -o FILE")
    i = sub.add_parser("import", parents=[common],
                       help="read an export back: all or nothing, through dedup")
    i.add_argument("file", metavar="FILE", help="a JSON Lines export (one memory per line); "
                   "with --chats a chat file")
    i.add_argument("--chats", action="store_true",
                   help="import chats: Eva's chat export, ChatGPT's conversations.json or a "
                        "SillyTavern chat .jsonl (detected); all or nothing")
    i.add_argument("--dry-run", action="store_true",
                   help="with --chats: check the file and show what it holds; write nothing")
    b = sub.add_parser("backup", parents=[common],
                       help="a consistent copy of the whole store (SQLite online backup)")
    b.add_argument("dir", metavar="DIR", help="directory the backup file is written to")


def _say(msg: str = "") -> None:
    """A line on stdout. A failed write is an :class:`OutputError` (exit 74), not a store
    problem; a closed pipe stays a BrokenPipeError (quiet, exit 74)."""
    try:
        print(msg, flush=True)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError(f"cannot write to stdout: {e.strerror or e}", stdout=True) from e


MAX_MESSAGE = 1000  # characters of one error line at most (values in it are clipped already)


def _err(msg: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr is gone: nothing left to tell
        print(f"eva: {clip_text(msg, MAX_MESSAGE)}", file=sys.stderr, flush=True)


def _debug() -> bool:
    return os.environ.get("EVA_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off")


def _quiet_stdout() -> None:
    """After stdout broke (a closed pipe, a full disk), point it at /dev/null: the interpreter's
    last flush at exit then has nowhere to fail, so no "Exception ignored" message follows
    (the Python docs' note on SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (tests capture it): nothing will be flushed to a broken pipe


def main(argv: list[str] | None = None) -> int:
    """The ``eva`` command. Every subcommand runs inside one guard: whatever fails ends as one
    sentence on stderr and a documented exit code (:data:`EXIT_CODES`)."""
    args = _parser().parse_args(argv)  # a bad flag: argparse prints usage and exits 2
    data_dir = Path(args.data).expanduser() if args.data else None
    try:
        data_dir = data_dir or cfg.default_data_dir()
        return _run(args, data_dir)
    except SystemExit:
        raise
    except BaseException as e:
        if not isinstance(e, Exception | KeyboardInterrupt):
            raise  # GeneratorExit and the like are not errors of a command
        if _debug() and not isinstance(e, BrokenPipeError):
            traceback.print_exc()
        return _failure(e, data_dir or Path("."))


def _run(args: argparse.Namespace, data_dir: Path) -> int:
    config = cfg.load(args.config)
    if args.cmd == "sleep":
        return cmd_sleep(config, data_dir, args.dry_run)
    if args.cmd == "calibrate":
        return cmd_calibrate(config, data_dir)
    if args.cmd == "doctor":
        return cmd_doctor(config, data_dir)
    if args.cmd == "serve":
        return cmd_serve(config, data_dir, args)
    if args.cmd == "remind":
        return cmd_remind(config, data_dir, args.days, args.format, private=not args.no_private)
    if args.cmd == "export":
        if args.chats or args.chat is not None:
            if args.include_archive:
                raise UsageError("--include-archive is for the memory; chats are exported "
                                 "without the archive")
            return cmd_export_chats(config, data_dir, args.format, args.chat, args.private,
                                    args.output, force=args.force)
        return cmd_export(config, data_dir, args.format, args.include_archive, args.private,
                          args.output, force=args.force)
    if args.cmd == "import":
        if args.chats:
            return cmd_import_chats(config, data_dir, args.file, dry_run=args.dry_run)
        if args.dry_run:
            raise UsageError("--dry-run goes with --chats")
        return cmd_import(config, data_dir, args.file)
    if args.cmd == "backup":
        return cmd_backup(config, data_dir, args.dir)
    return cmd_tui(config, data_dir)


def _failure(e: BaseException, data_dir: Path) -> int:
    """The one sentence and the exit code of a command that raised ``e``."""
    if isinstance(e, KeyboardInterrupt):
        _err("interrupted")
        return EXIT_INTERRUPTED
    if isinstance(e, BrokenPipeError):  # the reader left (eva export | head): quietly
        _quiet_stdout()
        return EXIT_OUTPUT
    if isinstance(e, OutputError):
        if e.stdout:
            _quiet_stdout()
        _err(str(e))
        return EXIT_OUTPUT
    if isinstance(e, cfg.ConfigError):
        _err(f"config error: {e}")
        return EXIT_USAGE
    if isinstance(e, UsageError):
        _err(str(e))
        return EXIT_USAGE
    if isinstance(e, OSError | sqlite3.Error | StoreError):
        _err(store_problem(e, data_dir))
        return EXIT_FAILED
    if isinstance(e, MemoryOpError):
        _err(str(e))
        return EXIT_FAILED
    _err(f"unexpected error ({type(e).__name__}); run with EVA_DEBUG=1 for details")
    return EXIT_FAILED


def store_problem(e: BaseException, data_dir: Path) -> str:
    """One clear sentence for a store that cannot be opened or written (issue 15): what failed,
    where, and what to do — never a traceback."""
    db = data_dir / "memory.db"
    msg = clip_text(str(e) or type(e).__name__)
    low = msg.lower()
    if isinstance(e, StoreError):
        return f"the memory store {db} cannot be used: {msg}"
    if isinstance(e, NotADirectoryError | FileExistsError) or _is_file(data_dir):
        return (f"the data directory {data_dir} cannot be made: a file is in the way ({msg}); "
                "pass another --data DIR")
    if _is_dir(db):
        return (f"the memory store {db} is a directory, not a store file; move it aside or "
                "pass another --data DIR")
    if isinstance(e, PermissionError) or "readonly" in low or "read-only" in low:
        return (f"the data directory {data_dir} is not writable ({msg}); fix its permissions "
                "or pass another --data DIR")
    if "disk is full" in low or getattr(e, "errno", None) == errno.ENOSPC:
        return (f"the disk holding {data_dir} is full ({msg}); nothing was changed — free some "
                "space and run it again")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return (f"the memory store {db} is damaged ({msg}); it was left untouched — restore it "
                "from a backup, or run `eva doctor` to see more")
    if isinstance(e, sqlite3.Error) and "unable to open" in low:
        return (f"the memory store {db} cannot be opened ({msg}); check that {data_dir} exists "
                "and is writable, or pass another --data DIR")
    return f"the memory store {db} cannot be used: {msg}"


def _is_file(p: Path) -> bool:
    try:
        return any(q.is_file() for q in (p, *p.parents))
    except OSError:
        return False


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:
        return False


def cmd_tui(config: cfg.EvaConfig, data_dir: Path) -> int:
    from eva_tui.app import create_app
    from eva_tui.services import Services

    services = Services(config, data_dir)
    services.first_run_offer = True  # an empty store: offer to initialize memories (issue 13)
    app = create_app(services)
    try:
        app.run()
    finally:
        services.close()
    return app.return_code or 0


def _services(config: cfg.EvaConfig, data_dir: Path, *, model: bool):
    from eva_tui.services import Services

    if model and config.planner_model and config.planner_model != config.llm.general:
        # `eva sleep` needs only the planner: load it in the chat model's place
        config = replace(config, llm=replace(config.llm, general=config.planner_model))
    s = Services(config, data_dir)
    s.open_memory()
    if model:
        s.load_model()
    s.finish()
    for p in s.take_problems():
        _say(f"note: {p}")
    return s


# ---------------------------------------------------------------------------------- sleep


def cmd_sleep(config: cfg.EvaConfig, data_dir: Path, dry_run: bool) -> int:
    import time

    from core.coordination import holder_at
    from core.sleep import AlreadySleeping

    held = holder_at(data_dir / "memory.db")  # asked before a model is loaded for nothing
    if held is not None:
        _err(f"Eva is already asleep in another process ({held.describe(time.time())}); "
             "not starting a second night")
        return EXIT_ASLEEP_ELSEWHERE
    s = _services(config, data_dir, model=True)
    try:
        if s.sleeper is None:
            _err("sleep is not available in this build")
            return 1
        last = [""]

        def progress(p) -> None:
            line = f"{p.stage}/{p.phase} {p.done}/{p.total} {p.message}".rstrip()
            if line != last[0]:
                last[0] = line
                _say(f"  {line}")

        _say(f"Eva sleeps{' (dry run)' if dry_run else ''}…")
        try:
            run = s.sleeper.run(dry_run=True if dry_run else None, reason="manual",
                                progress=progress)
        except AlreadySleeping as e:
            _err(f"{e}; not starting a second night")
            return EXIT_ASLEEP_ELSEWHERE
        from screens.journal import run_text

        _say(run_text(run, s.clock.now()).plain)
        return 0 if run.status in ("done", "skipped") else 1
    finally:
        s.close()


# ---------------------------------------------------------------------------------- serve
def cmd_serve(config: cfg.EvaConfig, data_dir: Path, args) -> int:
    import math
    import threading

    from eva_tui import serve as srv
    from eva_tui.services import Component, Services

    if not srv.is_loopback(args.host) and not args.allow_remote:
        _err(f"refusing to bind {args.host}: that is not loopback. Pass --allow-remote to "
             "expose Eva's API beyond this machine (anyone who can reach it and has the token "
             "can read private memory)")
        return 2
    if not 0 < args.port < 65536:
        _err("--port must be 1..65535")
        return 2
    if not (math.isfinite(args.rate_limit) and 0 <= args.rate_limit <= 1_000_000):
        _err("--rate-limit must be a number of requests per second from 0 (no limit) to "
             "1000000")
        return 2
    if not 1 <= args.max_connections <= 10_000:
        _err("--max-connections must be 1..10000")
        return 2
    for flag, value in (("--head-timeout", args.head_timeout),
                        ("--keep-alive", args.keep_alive)):
        if not (math.isfinite(value) and 0 < value <= 3600):
            _err(f"{flag} must be a number of seconds above 0, at most 3600")
            return 2
    if not srv.is_loopback(args.host):
        _err(f"warning: binding {args.host}; the API is reachable from the network")
        if not args.allow_host:
            _err("note: requests are accepted only with a loopback or the bound Host header; "
                 "add --allow-host NAME for the name clients use")
    settings = srv.ServeSettings(host=args.host, port=args.port,
                                 allow_hosts=tuple(args.allow_host),
                                 allow_origins=tuple(args.allow_origin),
                                 rate=args.rate_limit,
                                 burst=max(1, int(3 * args.rate_limit)),
                                 max_connections=args.max_connections,
                                 head_timeout=args.head_timeout, keep_alive=args.keep_alive)
    token, token_path = srv.ensure_token(data_dir)
    srv.setup_logging(data_dir)
    s = Services(config, data_dir)
    if args.no_chat:  # not loading: /v1/chat says chat is off, not "loading"
        s.model = Component(s.model.name, "off", "--no-chat")
    s.open_memory()
    s.finish()
    try:
        sock = srv.listen(args.host, args.port)
    except OSError as e:
        s.close()
        _err(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}")
        return 1
    for p in s.take_problems():
        _say(f"note: {p}")
    host = f"[{args.host}]" if ":" in args.host else args.host
    _say(f"Eva serves on http://{host}:{args.port} (OpenAPI: /openapi.json)")
    _say(f"owner token: {token_path} (mode 0600; send it as 'Authorization: Bearer …')")

    def load() -> None:
        s.load_model()
        s.finish()
        for p in s.take_problems():
            _say(f"note: {p}")
        if s.chat_model is not None:
            _say(f"chat ready: {s.model_label()}")

    if not args.no_chat:
        _say("loading the chat model in the background; /v1/chat answers 503 until it is ready")
        threading.Thread(target=load, name="eva-load-model", daemon=True).start()
    try:
        srv.serve(s, settings, token, sockets=[sock])
    finally:
        s.close()
    _say("Eva stopped serving")
    return 0


# ---------------------------------------------------------------------------------- calibrate
def cmd_calibrate(config: cfg.EvaConfig, data_dir: Path) -> int:
    from core import calibration
    from core.errors import MemoryOpError

    s = _services(config, data_dir, model=False)
    try:
        if s.memory is None or not s.embedder.ready:
            _err(
                f"no embedder is active ({s.embedder.detail or 'lexical only'}); "
                "set [memory] embedding_model and install it"
            )
            return 1
        try:
            c = calibration.calibrate(s.memory)
        except MemoryOpError as e:
            _err(str(e))
            return 1
        _say(
            f"{c.model}: background cosine b = {c.background:.3f} "
            f"(median of {c.pairs} random pairs over {c.records} memories; "
            f"p10 {c.p10:.3f}, p90 {c.p90:.3f})"
        )
        _say("stored: recall uses it from now on" if c.applied else "not stored")
        return 0
    finally:
        s.close()


# ---------------------------------------------------------------------------------- doctor
def cmd_doctor(config: cfg.EvaConfig, data_dir: Path) -> int:
    from core.memory import Memory
    from eva_tui.loader import ModelLoader, ModelUnavailable

    loader = ModelLoader()
    bad = 0

    def ok(what: str, detail: str) -> None:
        _say(f"  ✓ {what:<14} {detail}")

    def fail(what: str, detail: str, essential: bool = True) -> None:
        nonlocal bad
        bad += essential
        _say(f"  {'✗' if essential else '!'} {what:<14} {detail}")

    _say(f"eva {__version__} — doctor")
    path = config.path or cfg.default_config_path()
    ok(
        "config",
        f"{path}"
        + ("" if path.exists() else " (not there: defaults in force)")
        + (f"; env: {', '.join(config.overrides)}" if config.overrides else ""),
    )
    # store
    try:
        _own_data_dir(data_dir)
        if not os.access(data_dir, os.W_OK):
            raise OSError(f"{data_dir} is not writable")
        db = data_dir / "memory.db"
        existed = db.exists()
        with Memory.open(db, config.memory) as mem:
            n, a = mem.count(), mem.count(archived=True)
        ok("store", f"{db} — {n} memories, {a} archived" + ("" if existed else " (new)"))
    except Exception as e:
        fail("store", f"{e} — check that {data_dir} is writable and not used by a broken copy")
        n = 0
    # models (issue 31: packaged names and GGUF paths run in-process; the server's by HTTP)
    from core.locality import host_of
    from eva_tui.loader import gpu_offload, route

    llm = config.llm
    if llm.base_url and llm.remote:
        fail("remote model", f"memory leaves this machine: the model server {llm.base_url} is "
             f"on {host_of(llm.base_url)} ([llm] allow_remote = true)", essential=False)
    served: list[str] | None = None
    for what, spec in (
        ("chat model", config.llm.general),
        ("smartest", config.llm.smartest),
        ("sleep model", config.sleep.memory_model),
    ):
        if spec is None and what != "chat model":
            continue
        backend, name = route(spec or "", llm.backend) if spec else (llm.backend, None)
        if backend == "openai" and name:
            if served is None:
                try:
                    served = loader.server_models(llm.base_url, llm.allow_remote,
                                                  llm.api_key_env)
                except ModelUnavailable as e:
                    served = []
                    fail(what, f"{e} — start the server or fix [llm] base_url",
                         essential=what == "chat model")
                    continue
            if served and name not in served:
                fail(what, f"{name!r} is not among the server's models "
                     f"({', '.join(served[:8])})", essential=what == "chat model")
            elif served:
                ok(what, f"{name} on {llm.base_url}")
            continue
        problem = loader.check_chat(name)
        if problem:
            fail(what, problem, essential=what == "chat model")
        else:
            ok(what, f"{spec} (installed)")
    if importlib.util.find_spec("llama_cpp") is None:
        fail("llama.cpp", "llama-cpp-python is not installed — run `make setup`",
             essential=llm.backend == "llama.cpp")
    else:
        gpu = gpu_offload()
        where = ("GPU offload: yes" if gpu else
                 "GPU offload: no (a CPU build; see the README for CUDA, Metal, Vulkan)")
        ok("llama.cpp", f"llama-cpp-python importable; {where}; gpu_layers = {llm.gpu_layers}")
        if llm.gpu_layers and not gpu:
            fail("gpu", f"[llm] gpu_layers = {llm.gpu_layers}, but this llama.cpp has no GPU "
                 "backend: the layers run on the CPU", essential=False)
    # embedder and vectors
    spec = config.memory.embedding_model
    if not spec:
        fail(
            "embedder",
            'none configured: recall is lexical only (set [memory] embedding_model = "usem3+minilm")',
            essential=False,
        )
    else:
        try:
            emb = loader.embedder(spec)
            ok("embedder", f"{spec} → {emb.name}, {emb.dim} dims")
            try:
                with Memory.open(data_dir / "memory.db", config.memory, embedder=emb) as mem:
                    st = mem.status()
                if st.missing_vectors:
                    fail(
                        "vectors",
                        f"{st.missing_vectors} of {n} memories have no {emb.name} "
                        "vector: they are embedded when Eva starts",
                        essential=False,
                    )
                else:
                    ok("vectors", f"{st.vectors} vectors, background b = {st.background}")
            except Exception as e:
                fail("vectors", str(e), essential=False)
        except ModelUnavailable as e:
            fail("embedder", f"{e} — recall runs lexically until it is fixed", essential=False)
    ok(
        "sleep",
        f"every {cfg.format_duration(config.sleep.every)} after "
        f"{cfg.format_duration(config.sleep.idle_for)} quiet"
        + (" (dry run)" if config.sleep.dry_run else ""),
    )
    _say("all good" if not bad else f"{bad} problem{'s' if bad > 1 else ''} to fix")
    return 0 if not bad else 1


# ---------------------------------------------------------------------------------- reminders
def cmd_remind(config: cfg.EvaConfig, data_dir: Path, days: int | None, fmt: str, *,
               private: bool = True) -> int:
    """SPEC §8.11: what is coming up, one line each (or JSON); nothing printed when nothing
    is. Exit 0 either way (a cron line or a shell prompt must not fail for an empty day)."""
    from core.clock import from_env
    from core.memory import Memory
    from core.privacy import OWNER_TRUSTED, OWNER_UNTRUSTED
    from core.upcoming import upcoming
    from eva_tui.services import DB_NAME

    days = config.reminders.days if days is None else days
    if not 0 <= days <= 366:
        _err("--days must be 0..366")
        return EXIT_USAGE
    db = data_dir / DB_NAME
    clock = from_env()
    items = []
    if db.exists():
        _own_data_dir(data_dir)
        with Memory.open(db, replace(config.memory, embedding_model=None), clock) as mem:
            items = upcoming(mem, OWNER_TRUSTED if private else OWNER_UNTRUSTED, days=days)
    if fmt == "json":
        from datetime import datetime

        print(json.dumps({"now": datetime.fromtimestamp(clock.now()).isoformat(timespec="seconds"),
                          "days": days, "items": [i.to_json() for i in items]},
                         ensure_ascii=False))
    else:
        for i in items:
            print(f"{i.when}: {i.content}")
    return 0


# ---------------------------------------------------------------------------------- portability
def _open_store(config: cfg.EvaConfig, data_dir: Path, *, must_exist: bool):
    """The store alone (no models: export, import and backup need none; vectors of imported
    memories are made when Eva starts). None (and a message) when there is no store."""
    from core.memory import Memory
    from eva_tui.services import DB_NAME

    db = data_dir / DB_NAME
    if must_exist and not db.exists():
        _err(f"there is no memory store at {db} (give --data DIR)")
        return None
    _own_data_dir(data_dir)
    return Memory.open(db, replace(config.memory, embedding_model=None))


def _own_data_dir(data_dir: Path) -> None:
    """Make the data dir the owner's (core.ownership); tell once if it was open to others."""
    from core import ownership

    note = ownership.claim(data_dir)
    if note:
        _err_note(f"note: {note}")


def cmd_export(config: cfg.EvaConfig, data_dir: Path, fmt: str, include_archive: bool,
               private: bool, output: str | None, *, force: bool = False) -> int:
    from core import portability

    out = Path(output).expanduser() if output else None
    if out is not None:
        _check_output(out, force)  # before the store is read: a refusal costs nothing
    mem = _open_store(config, data_dir, must_exist=True)
    if mem is None:
        return 1
    with mem:
        ex = portability.export(mem, fmt, include_archive=include_archive, private=private)
    _emit(ex.lines, out, force)
    what = f"exported {ex.records - ex.archived} memories"
    if include_archive:
        what += f" and {ex.archived} archived"
    if output:
        what += f" to {output}"
    _err_note(what)
    if ex.private_left_out:
        _err_note(f"{ex.private_left_out} private memor"
                  f"{'y was' if ex.private_left_out == 1 else 'ies were'} left out "
                  "(--private includes them)")
    return 0


def _check_output(out: Path, force: bool) -> None:
    """Issue 25 item B: an -o FILE that is a symbolic link is refused (neither written through
    nor replaced: it may point at something the owner did not mean to overwrite with private
    memories); one that exists is refused unless --force."""
    if out.is_symlink():
        raise UsageError(f"{out} is a symbolic link; not writing through it or replacing it "
                         "(give the path of a regular file)")
    if out.is_dir():
        raise UsageError(f"{out} is a directory; give a file name")
    if out.exists() and not force:
        raise UsageError(f"{out} already exists; not overwriting it (pass --force to replace "
                         "it, or give another -o FILE)")


def _emit(lines: list[str], out: Path | None, force: bool) -> None:
    """An export's lines to ``out`` (see :func:`_write_file`), or to stdout."""
    if out is not None:
        _write_file(out, lines, force)
        return
    try:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:  # /dev/full, a full disk under a redirect
        raise OutputError(f"cannot write the export to stdout: {e.strerror or e}; it is "
                          "incomplete", stdout=True) from e


def _write_file(out: Path, lines: list[str], force: bool) -> None:
    """Write ``lines`` to ``out`` atomically with mode 0600: a temp file of a name of its own
    (``.FILE.xxxx.part``, made by mkstemp with 0600) in the same directory, renamed into place.
    On any failure the temp file is removed: an export holds private memories and must not be
    left behind half-written."""
    try:
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".part")
    except OSError as e:
        raise OutputError(f"cannot write {out}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.writelines(lines)
            f.flush()
            os.fsync(f.fileno())
        _check_output(out, force)  # again: it may have appeared meanwhile
        os.replace(tmp, out)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise OutputError(f"cannot write {out}: {e.strerror or e}; nothing was written") from e
        raise


def _err_note(msg: str) -> None:
    """A note on stderr (stdout may carry the export itself)."""
    with contextlib.suppress(OSError, ValueError):
        print(clip_text(msg, MAX_MESSAGE), file=sys.stderr, flush=True)


def cmd_import(config: cfg.EvaConfig, data_dir: Path, file: str) -> int:
    """The file is read and checked whole before the store is opened: a refused import leaves
    the store as it was, and makes none where there was none (issue 25 item C4)."""
    from core import portability

    if not Path(file).expanduser().is_file():
        _err(f"{file}: no such file")
        return 1
    lines = portability.read_lines(file)
    if _is_chat_file(lines):
        raise UsageError(f"{file} holds chats, not memories: `eva import --chats {file}` "
                         "reads it")
    try:
        items = portability.parse(lines, config.memory.max_chars,
                                  time.time())
    except portability.ImportRefused as e:
        _err("nothing was imported:")
        for n, why in e.problems:
            _err_note(f"  line {n}: {why}")
        if e.total > len(e.problems):
            _err_note(f"  … and {e.total - len(e.problems)} more bad lines")
        return 1
    mem = _open_store(config, data_dir, must_exist=False)
    with mem:
        res = portability.import_items(mem, items)
    _say(f"imported {len(res.created)} memor{'y' if len(res.created) == 1 else 'ies'}"
         + (f"; {len(res.duplicates)} already in the store (skipped: "
            + ", ".join(f"line {n} is #{rid}" for n, rid in res.duplicates[:10])
            + (", …" if len(res.duplicates) > 10 else "") + ")" if res.duplicates else ""))
    return 0


def cmd_export_chats(config: cfg.EvaConfig, data_dir: Path, fmt: str, chat_id: int | None,
                     private: bool, output: str | None, *, force: bool = False) -> int:
    """``eva export --chats`` (issue 28 item 7): the live chats, or one, under the memory
    export's private rule (messages written where private memory was visible only with
    --private)."""
    from core import chat_export
    from core.chats import Chats
    from core.transcript import Transcript

    out = Path(output).expanduser() if output else None
    if out is not None:
        _check_output(out, force)
    mem = _open_store(config, data_dir, must_exist=True)
    if mem is None:
        return 1
    with mem:
        ex = chat_export.export_chats(mem.attach(Chats), mem.attach(Transcript), fmt,
                                      chat_id=chat_id, private=private, now=time.time())
    _emit(ex.lines, out, force)
    _err_note(f"exported {ex.chats} chat{'s' if ex.chats != 1 else ''} with {ex.messages} "
              f"message{'s' if ex.messages != 1 else ''}" + (f" to {output}" if output else ""))
    if ex.private_left_out:
        _err_note(f"{ex.private_left_out} message{'s' if ex.private_left_out != 1 else ''} "
                  "written where private memory was visible "
                  f"{'was' if ex.private_left_out == 1 else 'were'} left out (--private "
                  "includes them)")
    return 0


def cmd_import_chats(config: cfg.EvaConfig, data_dir: Path, file: str, *,
                     dry_run: bool = False) -> int:
    """``eva import --chats FILE`` (issue 28 item 7): the format is detected and named, the
    whole file is checked before the store is opened, then one transaction writes it."""
    from core import chat_import
    from core.chats import Chats

    try:
        plan = chat_import.parse_file(file, time.time())
    except chat_import.ChatImportRefused as e:
        _err("nothing was imported" + (f" ({chat_import.FORMAT_NAMES[e.format]})"
                                       if e.format else "") + ":")
        for where, why in e.problems:
            _err_note(f"  {where}: {why}" if where else f"  {why}")
        if e.total > len(e.problems):
            _err_note(f"  … and {e.total - len(e.problems)} more bad lines")
        return 1
    for line in chat_import.import_summary(plan):
        _say(line)
    for c in plan.chats[:20]:
        _say(f"  {c.title or '(untitled)'} — {len(c.messages)} messages, "
             f"{chat_import.day_span(c.created_at, c.updated_at)}")
    if len(plan.chats) > 20:
        _say(f"  … and {len(plan.chats) - 20} more chats")
    if dry_run:
        _say("dry run: nothing was written")
        return 0
    if not plan.chats:
        _say("nothing to import")
        return 0
    mem = _open_store(config, data_dir, must_exist=False)
    with mem:
        ids, moved = mem.attach(Chats).import_chats(plan.chats, plan.format, time.time())
    _say(f"imported {len(ids)} chat{'s' if len(ids) != 1 else ''} with {plan.messages} "
         f"message{'s' if plan.messages != 1 else ''} (chats #{ids[0]}–#{ids[-1]})"
         if len(ids) > 1 else f"imported 1 chat with {plan.messages} messages (chat #{ids[0]})")
    if moved:
        _say(f"{moved} chat{'s' if moved != 1 else ''} named a persona this store does not "
             "have and went to the default persona")
    _say("Eva can draft memories from them for you to review, 20 messages at a time; nothing "
         "is saved unless you keep it. Start Eva and choose “Draft memories from imported "
         "chats…” in the command palette (Ctrl+P).")
    return 0


def _is_chat_file(lines: list[str]) -> bool:
    """Whether an ``eva import`` file is one of the chat formats (issue 28 item 7)."""
    from core import chat_import

    head = "\n".join(ln for ln in lines[:50] if ln.strip())
    try:
        chat_import.detect(head)
    except chat_import.ChatImportRefused:
        return False
    return True


def cmd_backup(config: cfg.EvaConfig, data_dir: Path, directory: str) -> int:
    from core import portability

    mem = _open_store(config, data_dir, must_exist=True)
    if mem is None:
        return 1
    with mem:
        try:
            dest = portability.backup(mem, directory)
        except OSError as e:
            _err(f"cannot write the backup to {directory}: {e.strerror or e}")
            return EXIT_OUTPUT
        n, a = mem.count(), mem.count(archived=True)
    _say(f"backup written: {dest} ({n} memories, {a} archived; "
         "see README › Backup and restore)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
