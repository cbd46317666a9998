"""``eva export``, ``eva import`` and ``eva backup`` (SPEC §11: nothing the owner owns is locked
in): files in and out of the store, with no models. The parser and the dispatch are
:mod:`eva_tui.cli`'s."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from eva_runtime import config as cfg
from eva_runtime.cli_io import (
    EXIT_OUTPUT,
    OutputError,
    UsageError,
    err,
    err_note,
    open_store,
    say,
)


def cmd_export(
    config: cfg.EvaConfig,
    data_dir: Path,
    fmt: str,
    include_archive: bool,
    private: bool,
    output: str | None,
    *,
    force: bool = False,
) -> int:
    from core.memory import portability

    out = Path(output).expanduser() if output else None
    if out is not None:
        _check_output(out, force)  # before the store is read: a refusal costs nothing
    mem = open_store(config, data_dir, must_exist=True)
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
    err_note(what)
    if ex.private_left_out:
        err_note(
            f"{ex.private_left_out} private memor"
            f"{'y was' if ex.private_left_out == 1 else 'ies were'} left out "
            "(--private includes them)"
        )
    return 0


def _check_output(out: Path, force: bool) -> None:
    """Issue 25 item B: an -o FILE that is a symbolic link is refused (neither written through
    nor replaced: it may point at something the owner did not mean to overwrite with private
    memories); one that exists is refused unless --force."""
    if out.is_symlink():
        raise UsageError(
            f"{out} is a symbolic link; not writing through it or replacing it "
            "(give the path of a regular file)"
        )
    if out.is_dir():
        raise UsageError(f"{out} is a directory; give a file name")
    if out.exists() and not force:
        raise UsageError(
            f"{out} already exists; not overwriting it (pass --force to replace "
            "it, or give another -o FILE)"
        )


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
        raise OutputError(
            f"cannot write the export to stdout: {e.strerror or e}; it is incomplete", stdout=True
        ) from e


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


def cmd_import(config: cfg.EvaConfig, data_dir: Path, file: str) -> int:
    """The file is read and checked whole before the store is opened: a refused import leaves
    the store as it was, and makes none where there was none (issue 25 item C4)."""
    from core.memory import portability

    if not Path(file).expanduser().is_file():
        err(f"{file}: no such file")
        return 1
    lines = portability.read_lines(file)
    if _is_chat_file(lines):
        raise UsageError(f"{file} holds chats, not memories: `eva import --chats {file}` reads it")
    try:
        items = portability.parse(lines, config.memory.max_chars, time.time())
    except portability.ImportRefused as e:
        err("nothing was imported:")
        for n, why in e.problems:
            err_note(f"  line {n}: {why}")
        if e.total > len(e.problems):
            err_note(f"  … and {e.total - len(e.problems)} more bad lines")
        return 1
    mem = open_store(config, data_dir, must_exist=False)
    assert mem is not None, "a store that need not exist is created, never None"
    with mem:
        res = portability.import_items(mem, items)
    say(
        f"imported {len(res.created)} memor{'y' if len(res.created) == 1 else 'ies'}"
        + (
            f"; {len(res.duplicates)} already in the store (skipped: "
            + ", ".join(f"line {n} is #{rid}" for n, rid in res.duplicates[:10])
            + (", …" if len(res.duplicates) > 10 else "")
            + ")"
            if res.duplicates
            else ""
        )
    )
    return 0


def cmd_export_chats(
    config: cfg.EvaConfig,
    data_dir: Path,
    fmt: str,
    chat_id: int | None,
    private: bool,
    output: str | None,
    *,
    force: bool = False,
) -> int:
    """``eva export --chats`` (issue 28 item 7): the live chats, or one, under the memory
    export's private rule (messages written where private memory was visible only with
    --private)."""
    from core.chat import export as chat_export
    from core.chat.chats import Chats
    from core.chat.transcript import Transcript

    out = Path(output).expanduser() if output else None
    if out is not None:
        _check_output(out, force)
    mem = open_store(config, data_dir, must_exist=True)
    if mem is None:
        return 1
    with mem:
        ex = chat_export.export_chats(
            mem.attach(Chats),
            mem.attach(Transcript),
            fmt,
            chat_id=chat_id,
            private=private,
            now=time.time(),
        )
    _emit(ex.lines, out, force)
    err_note(
        f"exported {ex.chats} chat{'s' if ex.chats != 1 else ''} with {ex.messages} "
        f"message{'s' if ex.messages != 1 else ''}" + (f" to {output}" if output else "")
    )
    if ex.private_left_out:
        err_note(
            f"{ex.private_left_out} message{'s' if ex.private_left_out != 1 else ''} "
            "written where private memory was visible "
            f"{'was' if ex.private_left_out == 1 else 'were'} left out (--private "
            "includes them)"
        )
    return 0


def cmd_import_chats(
    config: cfg.EvaConfig, data_dir: Path, file: str, *, dry_run: bool = False
) -> int:
    """``eva import --chats FILE`` (issue 28 item 7): the format is detected and named, the
    whole file is checked before the store is opened, then one transaction writes it."""
    from core.chat import imports as chat_import
    from core.chat.chats import Chats

    try:
        plan = chat_import.parse_file(file, time.time())
    except chat_import.ChatImportRefused as e:
        err(
            "nothing was imported"
            + (f" ({chat_import.FORMAT_NAMES[e.format]})" if e.format else "")
            + ":"
        )
        for where, why in e.problems:
            err_note(f"  {where}: {why}" if where else f"  {why}")
        if e.total > len(e.problems):
            err_note(f"  … and {e.total - len(e.problems)} more bad lines")
        return 1
    for line in chat_import.import_summary(plan):
        say(line)
    for c in plan.chats[:20]:
        say(
            f"  {c.title or '(untitled)'} — {len(c.messages)} messages, "
            f"{chat_import.day_span(c.created_at, c.updated_at)}"
        )
    if len(plan.chats) > 20:
        say(f"  … and {len(plan.chats) - 20} more chats")
    if dry_run:
        say("dry run: nothing was written")
        return 0
    if not plan.chats:
        say("nothing to import")
        return 0
    mem = open_store(config, data_dir, must_exist=False)
    assert mem is not None, "a store that need not exist is created, never None"
    with mem:
        ids, moved = mem.attach(Chats).import_chats(plan.chats, plan.format, time.time())
    say(
        f"imported {len(ids)} chat{'s' if len(ids) != 1 else ''} with {plan.messages} "
        f"message{'s' if plan.messages != 1 else ''} (chats #{ids[0]}–#{ids[-1]})"
        if len(ids) > 1
        else f"imported 1 chat with {plan.messages} messages (chat #{ids[0]})"
    )
    if moved:
        say(
            f"{moved} chat{'s' if moved != 1 else ''} named a persona this store does not "
            "have and went to the default persona"
        )
    say(
        "Eva can draft memories from them for you to review, 20 messages at a time; nothing "
        "is saved unless you keep it. Start Eva and choose “Draft memories from imported "
        "chats…” in the command palette (Ctrl+P)."
    )
    return 0


def _is_chat_file(lines: list[str]) -> bool:
    """Whether an ``eva import`` file is one of the chat formats (issue 28 item 7)."""
    from core.chat import imports as chat_import

    head = "\n".join(ln for ln in lines[:50] if ln.strip())
    try:
        chat_import.detect(head)
    except chat_import.ChatImportRefused:
        return False
    return True


def cmd_backup(config: cfg.EvaConfig, data_dir: Path, directory: str) -> int:
    from core.memory import portability

    mem = open_store(config, data_dir, must_exist=True)
    if mem is None:
        return 1
    with mem:
        try:
            dest = portability.backup(mem, directory)
        except OSError as e:
            err(f"cannot write the backup to {directory}: {e.strerror or e}")
            return EXIT_OUTPUT
        n, a = mem.count(), mem.count(archived=True)
    say(f"backup written: {dest} ({n} memories, {a} archived; see README › Backup and restore)")
    return 0
