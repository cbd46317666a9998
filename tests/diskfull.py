"""Disk full, for real (issue 15): a small tmpfs (``mount -t tmpfs -o size=…``) holds the store,
a filler file takes the rest of its room, and then a save loop, a night of sleep and an online
backup run into ENOSPC. Each must end in a clear error, leave a consistent store, and lose
nothing that was committed; once room is made, the same store works on.

``small_fs`` needs the right to mount (root or CAP_SYS_ADMIN); without it the tests skip and
``bench.faults`` says so (no other fault stands in for a full disk here)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.crashkit import HashEmbedder, open_ro

T0 = 1_780_000_000.0


class Unavailable(RuntimeError):
    """This machine does not let us mount a small filesystem."""


@contextlib.contextmanager
def small_fs(size_kb: int) -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="eva-full-"))
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(d)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        d.rmdir()
        raise Unavailable(r.stderr.strip() or "mount failed")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)
        with contextlib.suppress(OSError):
            d.rmdir()


def fill(d: Path, leave_kb: int) -> Path:
    """A filler file that leaves about ``leave_kb`` free."""
    free = shutil.disk_usage(d).free
    filler = d / "filler"
    with filler.open("wb") as f, contextlib.suppress(OSError):
        f.write(b"\0" * max(0, free - leave_kb * 1024))
    return filler


def is_full(e: BaseException) -> bool:
    return "full" in str(e).lower() or getattr(e, "errno", None) == 28


def _integrity(path: Path) -> None:
    conn = open_ro(path)
    try:
        assert [tuple(r) for r in conn.execute("PRAGMA integrity_check")] == [("ok",)]
        from tests.test_sleep_crash import record_problems

        assert record_problems(conn) == []
    finally:
        conn.close()


def save_until_full(size_kb: int = 2048) -> dict:
    """Saves with vectors until the disk is full: a clear error; every save that returned is
    in the store with its exact text; after room is made, the same Memory saves again."""
    from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig
    from eva_runtime.cli_io import store_problem

    with small_fs(size_kb) as d:
        path = d / "memory.db"
        clock = ManualClock(T0)
        mem = Memory.open(path, MemoryConfig(), clock, embedder=HashEmbedder())
        kept: dict[int, str] = {}
        for i in range(20):
            kept[mem.save(f"Seed note {i}: the owner likes item {i * 37}", OWNER_TRUSTED).id] = (
                f"Seed note {i}: the owner likes item {i * 37}"
            )
        filler = fill(d, 300)
        error = None
        for i in range(100_000):
            text = f"Note {i} zq{i:06d}: the owner mentioned thing {i} " + "detail " * 30
            clock.advance(1)
            try:
                kept[mem.save(text, OWNER_TRUSTED).id] = text.strip()
            except sqlite3.Error as e:
                error = e
                break
        assert error is not None and is_full(error), error
        message = store_problem(error, d)
        assert "is full" in message and "free some space" in message, message
        filler.unlink()
        after = mem.save("Owner freed some disk space", OWNER_TRUSTED)  # works on
        kept[after.id] = "Owner freed some disk space"
        hits = [h.id for h in mem.recall("freed disk space", OWNER_TRUSTED)]
        assert hits[:1] == [after.id], hits
        mem.close()
        _integrity(path)
        with Memory.open(path, MemoryConfig(), clock, embedder=HashEmbedder()) as again:
            got = {r.id: r.content for r in again.list(OWNER_TRUSTED, limit=10_000)}
        lost = sum(1 for rid, text in kept.items() if got.get(rid) != text)
        extra = sorted(set(got) - set(kept))
        assert lost == 0 and not extra, (lost, extra[:5])
        return {
            "saved_before_full": len(kept) - 21,
            "error": str(error),
            "lost": lost,
            "message": message,
            "faults": 1,
        }


def sleep_when_full(leave_kb: int, size_kb: int = 4096) -> dict:
    """A night on a disk with ``leave_kb`` free: an error or a failed night (where it stops
    depends on the room left), each phase wholly there or not at all, nothing lost; with room
    again, a new night completes on the same file."""
    from core import ManualClock, Memory, MemoryConfig
    from core.sleep import Sleeper
    from tests.fakes import HashEmbedder as SleepEmbedder  # the one phase_problems assumes
    from tests.test_sleep_crash import ScriptPlanner, config, corpus, phase_problems

    with small_fs(size_kb) as d:
        path = d / "memory.db"
        clock = ManualClock(T0)
        mem = Memory.open(path, MemoryConfig(), clock, embedder=SleepEmbedder())
        mem.import_records(corpus())
        mem._storage.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn = open_ro(path)
        template = {r["id"]: dict(r) for r in conn.execute("SELECT id, content FROM memories")}
        conn.close()
        filler = fill(d, leave_kb)
        try:
            run = Sleeper(mem, ScriptPlanner(), config(), clock).run()
            outcome = run.status
            stopped_in = next((p.name for p in run.phases if p.status == "failed"), None)
        except sqlite3.Error as e:
            assert is_full(e), e
            outcome, stopped_in = "error", f"{e}"
        mem.close()
        filler.unlink()
        _integrity(path)
        conn = open_ro(path)
        try:
            problems, phases = phase_problems(conn, template)
            assert problems == [], (problems, phases)
        finally:
            conn.close()
        clock.advance(86_400)
        with Memory.open(path, MemoryConfig(), clock, embedder=SleepEmbedder()) as again:
            assert Sleeper(again, ScriptPlanner(), config(), clock).run().status == "done"
        _integrity(path)
        conn = open_ro(path)
        try:  # every record is still there: live, or archived by sleep with its change logged
            rows = {r["id"]: dict(r) for r in conn.execute("SELECT id, archived_by FROM memories")}
            logged = {
                r[0] for r in conn.execute("SELECT memory_id FROM changes WHERE actor = 'sleep'")
            }
        finally:
            conn.close()
        lost = sum(
            1
            for rid in template
            if rid not in rows or (rows[rid]["archived_by"] is not None and rid not in logged)
        )
        assert lost == 0, lost
        return {
            "leave_kb": leave_kb,
            "outcome": outcome,
            "stopped_in": stopped_in,
            "faults": int(outcome != "done"),
            "lost": lost,
        }


def backup_when_full(size_kb: int = 512) -> dict:
    """SQLite's online backup (what ``eva backup`` is built on) of a store into a disk without
    room for it: a clear error, the store itself untouched and consistent."""
    from core import ManualClock, Memory, MemoryConfig
    from tests.faultkit import state

    with tempfile.TemporaryDirectory() as src_dir, small_fs(size_kb) as d:
        src = Path(src_dir) / "memory.db"
        with Memory.open(src, MemoryConfig(), ManualClock(T0), embedder=HashEmbedder()) as mem:
            mem.import_records(
                [{"content": f"Backup note {i}: " + "text " * 60} for i in range(600)]
            )
            assert mem.count() == 600
        before = state(src)
        fill(d, 16)
        target = d / "backup.db"
        error = None
        source = sqlite3.connect(str(src))
        dest = sqlite3.connect(str(target))
        try:
            source.backup(dest)
        except sqlite3.Error as e:
            error = e
        finally:
            dest.close()
            source.close()
        assert error is not None and is_full(error), error
        assert state(src) == before
        _integrity(src)
        os.sync()
        return {"error": str(error), "faults": 1, "lost": 0}
