"""The owner token: ``serve.token`` in the data dir, mode 0600, made whole at first start."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from core import ownership

TOKEN_FILE = "serve.token"


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
