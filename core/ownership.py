"""The data directory is the owner's (issue 25): nobody else on the machine reads a memory.

The data directory is 0700 and every file Eva writes in it is 0600 — by construction, where
each one is created: the store before SQLite opens it (SQLite gives its -wal, -shm and -journal
the store's own permission bits), the persisted index, backups, exports, the serve token.
A data directory an older Eva left open to others is narrowed when the store is opened
(:func:`tighten`), and the owner is told once (:func:`tightened_note`): after it nothing is
left to narrow, so the next start says nothing.

Narrowing only takes bits away (group's and others'): it never makes writable what the owner
made read-only, never follows a symlink out of the directory, and leaves alone files of
another user and files that are not Eva's.
"""

from __future__ import annotations

import errno
import fnmatch
import logging
import os
import stat
from pathlib import Path
from typing import IO, Any

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "claim",
    "create_private",
    "open_private",
    "private_dir",
    "tighten",
    "tightened_note",
]

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_OTHERS = 0o077  # the group's and others' bits

# What Eva writes in the data dir (the store, its WAL/SHM/journal, the persisted index and its
# temporary files, the serve token and log, backups and exports), and its own folders there.
_OWN_FILES = (
    "memory.db",
    "memory.db-*",
    "memory.db.*",
    "*.index",
    "serve.token",
    "serve.log*",
    "eva-backup-*",
    "eva-export-*",
)
_OWN_DIRS = ("backups", "exports")


def private_dir(path: str | Path, *, claim: bool = True) -> Path:
    """``path`` as a directory only its owner can enter: made 0700 when missing (its missing
    parents are made as ``mkdir -p`` makes them: they are not Eva's), and, with ``claim``,
    narrowed to 0700 when it exists — for the data dir and Eva's own folders in it. A directory
    the owner named for something else (``eva backup DIR``) is passed with ``claim=False``:
    Eva does not change what it did not create."""
    p = Path(path).expanduser()
    if not os.path.lexists(p):
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(p, PRIVATE_DIR)
            return p
        except FileExistsError:  # made meanwhile by another process
            pass
    if not p.is_dir():
        raise FileExistsError(errno.EEXIST, "exists and is not a directory", str(p))
    if claim:
        _narrow(p, os.stat(p))
    return p


def create_private(path: str | Path) -> bool:
    """Create ``path`` empty with mode 0600 unless something is already there (the store before
    SQLite opens it, a backup before SQLite writes it). True when it was created."""
    if os.path.lexists(path):
        return False
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, PRIVATE_FILE
        )
    except FileExistsError:
        return False
    os.close(fd)
    return True


def open_private(path: str | Path, mode: str = "wb", encoding: str | None = None) -> IO[Any]:
    """``open(path, mode)`` for writing a file only its owner can read: created 0600 (``x``:
    must not exist; ``w``: truncated; ``a``: appended to), never through a symlink; a file
    that was already there with wider bits is narrowed to 0600 first."""
    if mode.rstrip("b") not in ("w", "a", "x"):
        raise ValueError(f"open_private writes (w, a or x, optionally b), not {mode!r}")
    flags = os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC
    flags |= {"w": os.O_TRUNC, "a": os.O_APPEND, "x": os.O_EXCL}[mode[0]]
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        st = os.fstat(fd)
        if st.st_mode & _OTHERS:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~_OTHERS)
        return os.fdopen(fd, mode.replace("x", "w"), encoding=encoding)
    except BaseException:
        os.close(fd)
        raise


def tighten(directory: str | Path) -> list[str]:
    """Narrow a data directory others could read: the directory itself to 0700, and every
    regular file Eva writes in it (the store and its -wal/-shm, the persisted index, the serve
    token and log, backups and exports, in the directory or in its ``backups``/``exports``
    folders) to 0600. Returns the paths that were open to others (empty: nothing to tell).
    A missing directory is left missing. Best effort: what cannot be narrowed is logged."""
    d = Path(directory).expanduser()
    try:
        st = os.stat(d)
    except OSError:
        return []
    if not stat.S_ISDIR(st.st_mode):
        return []
    loosened = [str(d)] if _narrow(d, st) else []
    loosened += _narrow_files(d, _OWN_FILES)
    for name in _OWN_DIRS:
        sub = d / name
        try:
            sst = os.lstat(sub)
        except OSError:
            continue
        if stat.S_ISDIR(sst.st_mode):  # a symlink is not followed
            if _narrow(sub, sst):
                loosened.append(str(sub))
            loosened += _narrow_files(sub, ("*",))
    return loosened


def tightened_note(directory: str | Path, loosened: list[str]) -> str | None:
    """The one line the owner is told after :func:`tighten` changed something (None if not)."""
    if not loosened:
        return None
    files = sum(1 for p in loosened if p != str(directory) and not Path(p).is_dir())
    what = f" ({files} file{'s' if files != 1 else ''} among them)" if files else ""
    return (
        f"The data dir {directory} was open to other users{what}; it is now yours only "
        "(0700, files 0600)"
    )


def claim(directory: str | Path) -> str | None:
    """Make the data dir the owner's before its store is opened: narrowed if others could read
    it (:func:`tighten`), made 0700 if missing. The one line to tell the owner (None: nothing
    was open)."""
    note = tightened_note(directory, tighten(directory))
    private_dir(directory)
    return note


# ---------------------------------------------------------------------------------- internals
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _narrow(path: Path, st: os.stat_result) -> bool:
    """Take the group's and others' bits off ``path`` (of this user). True when it had any."""
    if not st.st_mode & _OTHERS or st.st_uid != os.geteuid():
        return False
    try:
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~_OTHERS)
    except OSError as e:
        log.warning("could not make %s private: %s", path, e)
        return False
    return True


def _narrow_files(d: Path, patterns: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    try:
        entries = list(os.scandir(d))
    except OSError:
        return out
    for e in entries:
        if not any(fnmatch.fnmatchcase(e.name, p) for p in patterns):
            continue
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and _narrow(Path(e.path), st):
            out.append(e.path)
    return out
