"""What every ``eva`` subcommand shares: the exit codes, the one-sentence errors, output that
fails cleanly, and opening the store or the whole runtime for a command.

Every command ends through one guard in :func:`eva_tui.cli.main` (issue 25): a failure is one
sentence on stderr prefixed "eva: " (:func:`failure` picks it and the exit code), never a
traceback — unless ``EVA_DEBUG=1``, which prints the traceback as well."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from core import ownership
from core.errors import MemoryOpError, StoreError, clip_text
from eva_runtime import config as cfg

if TYPE_CHECKING:  # imported where used: `eva --help` loads neither
    from core.memory.facade import Memory
    from eva_runtime.services import Services

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

MAX_MESSAGE = 1000  # characters of one error line at most (values in it are clipped already)


class UsageError(Exception):
    """What was asked cannot be done as asked (exit 2): an -o FILE that exists, a link."""


class OutputError(Exception):
    """The output could not be written (exit 74): stdout (``stdout``) or the -o FILE."""

    def __init__(self, message: str, *, stdout: bool = False) -> None:
        super().__init__(message)
        self.stdout = stdout


def say(msg: str = "") -> None:
    """A line on stdout. A failed write is an :class:`OutputError` (exit 74), not a store
    problem; a closed pipe stays a BrokenPipeError (quiet, exit 74)."""
    try:
        print(msg, flush=True)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError(f"cannot write to stdout: {e.strerror or e}", stdout=True) from e


def err(msg: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr is gone: nothing left to tell
        print(f"eva: {clip_text(msg, MAX_MESSAGE)}", file=sys.stderr, flush=True)


def err_note(msg: str) -> None:
    """A note on stderr (stdout may carry the export itself)."""
    with contextlib.suppress(OSError, ValueError):
        print(clip_text(msg, MAX_MESSAGE), file=sys.stderr, flush=True)


def debug() -> bool:
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


def failure(e: BaseException, data_dir: Path) -> int:
    """The one sentence and the exit code of a command that raised ``e``."""
    if isinstance(e, KeyboardInterrupt):
        err("interrupted")
        return EXIT_INTERRUPTED
    if isinstance(e, BrokenPipeError):  # the reader left (eva export | head): quietly
        _quiet_stdout()
        return EXIT_OUTPUT
    if isinstance(e, OutputError):
        if e.stdout:
            _quiet_stdout()
        err(str(e))
        return EXIT_OUTPUT
    if isinstance(e, cfg.ConfigError):
        err(f"config error: {e}")
        return EXIT_USAGE
    if isinstance(e, UsageError):
        err(str(e))
        return EXIT_USAGE
    if isinstance(e, OSError | sqlite3.Error | StoreError):
        err(store_problem(e, data_dir))
        return EXIT_FAILED
    if isinstance(e, MemoryOpError):
        err(str(e))
        return EXIT_FAILED
    err(f"unexpected error ({type(e).__name__}); run with EVA_DEBUG=1 for details")
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
        return (
            f"the data directory {data_dir} cannot be made: a file is in the way ({msg}); "
            "pass another --data DIR"
        )
    if _is_dir(db):
        return (
            f"the memory store {db} is a directory, not a store file; move it aside or "
            "pass another --data DIR"
        )
    if isinstance(e, PermissionError) or "readonly" in low or "read-only" in low:
        return (
            f"the data directory {data_dir} is not writable ({msg}); fix its permissions "
            "or pass another --data DIR"
        )
    if "disk is full" in low or getattr(e, "errno", None) == errno.ENOSPC:
        return (
            f"the disk holding {data_dir} is full ({msg}); nothing was changed — free some "
            "space and run it again"
        )
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return (
            f"the memory store {db} is damaged ({msg}); it was left untouched — restore it "
            "from a backup, or run `eva doctor` to see more"
        )
    if isinstance(e, sqlite3.Error) and "unable to open" in low:
        return (
            f"the memory store {db} cannot be opened ({msg}); check that {data_dir} exists "
            "and is writable, or pass another --data DIR"
        )
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


# ---------------------------------------------------------------------------------- opening
def own_data_dir(data_dir: Path) -> None:
    """Make the data dir the owner's (core.ownership); tell once if it was open to others."""
    note = ownership.claim(data_dir)
    if note:
        err_note(f"note: {note}")


def open_store(config: cfg.EvaConfig, data_dir: Path, *, must_exist: bool) -> Memory | None:
    """The store alone (no models: export, import and backup need none; vectors of imported
    memories are made when Eva starts). None (and a message) when there is no store."""
    from core.memory.facade import Memory
    from eva_runtime.services import DB_NAME

    db = data_dir / DB_NAME
    if must_exist and not db.exists():
        err(f"there is no memory store at {db} (give --data DIR)")
        return None
    own_data_dir(data_dir)
    return Memory.open(db, replace(config.memory, embedding_model=None))


def open_services(config: cfg.EvaConfig, data_dir: Path, *, model: bool) -> Services:
    """The runtime brought up in the foreground: the store (and embedder), with ``model`` the
    chat model too; what went wrong on the way is printed as notes."""
    from eva_runtime.services import Services

    if model and config.planner_model and config.planner_model != config.llm.general:
        # `eva sleep` needs only the planner: load it in the chat model's place
        config = replace(config, llm=replace(config.llm, general=config.planner_model))
    s = Services(config, data_dir)
    s.open_memory()
    if model:
        s.load_model()
    s.finish()
    for p in s.take_problems():
        say(f"note: {p}")
    return s
