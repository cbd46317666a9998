"""Several processes on one store (SPEC §10): the TUI, ``eva serve`` and a cron ``eva sleep``.

Two parts, both on the store's own tables (no schema of their own):

* **Noticing the others' writes.** Each process keeps in-memory recall indexes of the one
  SQLite file. :class:`StoreWatch` asks SQLite's ``PRAGMA data_version`` (it moves only when
  *another* connection committed) before every recall; when it moved, :func:`changed_ids` finds
  the records whose index entries no longer match the rows and the memory reindexes only those:

  - every change to a record is in the change log: the rows since the last look name them,
    and ids above the highest seen name the bulk-imported ones;
  - a turn's rollback deletes its log rows: then the whole index is compared with the rows
    (scoring columns, stems, vectors); a vector backfill (no log row) moves the index
    generation, and the set of vectors is compared.

* **One sleeper at a time.** :class:`SleepLease` keeps a lease row in ``meta`` (key
  ``sleep_lease``: pid, host, a per-process nonce, since, heartbeat). It is taken inside one
  ``BEGIN IMMEDIATE`` transaction, so two processes cannot both win. A lease whose holder is
  gone (its pid is dead on this host, or its heartbeat is older than ``stale_after``) is taken
  over; a live holder's lease is respected and reported (:class:`LeaseHeld`).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from core.recall import vectors as recall_vectors

__all__ = [
    "LEASE_KEY",
    "Lease",
    "LeaseHeld",
    "SleepLease",
    "StoreWatch",
    "changed_ids",
    "holder_at",
]

LEASE_KEY = "sleep_lease"
WAKE_KEY = "sleep_wake"  # the nonce of the holder another process asks to wake
HEARTBEAT_SECONDS = 5.0
STALE_AFTER_SECONDS = 60.0  # a holder that has not beaten for this long is presumed dead

_NONCE = uuid.uuid4().hex  # tells this process from an earlier one that had the same pid
_HOST = socket.gethostname()


# ---------------------------------------------------------------------------- noticing writes
class StoreWatch:
    """What this connection last saw of the store: SQLite's ``data_version`` (moves only when
    another connection commits), the index generation, the change log's sequence and row count
    up to it, and the highest record id."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.version = self._read(conn)
        self.generation = _generation(conn)
        self.change_seq = _change_seq(conn)
        self.change_count = _count_changes(conn, self.change_seq)
        self.last_change = _last_change(conn)
        self.max_id = _max_id(conn)

    @staticmethod
    def _read(conn: sqlite3.Connection) -> int:
        return int(conn.execute("PRAGMA data_version").fetchone()[0])

    def moved(self, conn: sqlite3.Connection) -> bool:
        """Cheap (one pragma): did another connection commit since the last look?"""
        return self._read(conn) != self.version


def _generation(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT generation FROM index_state WHERE id = 1").fetchone()[0])


def _change_seq(conn: sqlite3.Connection) -> int:
    """The change log's AUTOINCREMENT sequence: the highest id ever given (never reused)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").fetchone()
    return int(row[0]) if row else 0


def _last_change(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM changes").fetchone()[0])


def _count_changes(conn: sqlite3.Connection, upto: int, after: int = 0) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM changes WHERE id > ? AND id <= ?", (after, upto)
        ).fetchone()[0]
    )


def _max_id(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM memories").fetchone()[0])


def changed_ids(conn: sqlite3.Connection, watch: StoreWatch, index: Any) -> set[int]:
    """The ids whose entries in ``index`` (a :class:`core.recall.index.RecallIndex`) may differ
    from the rows ``conn`` reads now. Call it inside one read transaction; it moves ``watch``
    on to what it read.

    Every change to a record is logged in ``changes`` (save, update, forget, pin, restore,
    reinforcement, sleep's ops), so the log since the last look names them; records created
    without a log row (a bulk import) have ids above the highest one seen. A turn's rollback
    deletes its log rows: the log's row count then differs, and the whole index is compared
    with the rows. Commits that wrote no memory (the transcript, the journal, the sleep lease)
    cost four small reads. A rollback of the newest turn's reinforcements alone (a regenerate
    whose turn wrote nothing) moves neither the sequence nor the generation, only the newest
    log id: then everything is compared. A rollback of an *older* turn's reinforcements alone
    (a later owner edit wrote the newest log row) moves nothing of that either, so every
    rollback moves the generation itself (``Memory.rollback_turn``): the log is then found
    shorter than counted and everything is compared."""
    generation = _generation(conn)
    seq = _change_seq(conn)
    last = _last_change(conn)
    changed: set[int] = set()
    if last != watch.last_change and seq == watch.change_seq and generation == watch.generation:
        # the newest log rows went and nothing else moved: a regenerate rolled back the last
        # turn's reinforcements; compare the access columns (and all) with the rows
        changed |= _full_diff(conn, index)
        watch.change_count = _count_changes(conn, seq)
    elif generation != watch.generation or seq != watch.change_seq:
        cur = conn.cursor()
        cur.row_factory = None
        changed.update(
            r[0]
            for r in cur.execute(
                "SELECT DISTINCT memory_id FROM changes WHERE id > ?", (watch.change_seq,)
            )
        )
        changed.update(
            r[0] for r in cur.execute("SELECT id FROM memories WHERE id > ?", (watch.max_id,))
        )
        new_rows = _count_changes(conn, seq, watch.change_seq)
        if generation != watch.generation:
            # content, archive marks or vectors moved: was it (also) a rollback, which deletes
            # its log rows? (counted only here: a count reads the whole log)
            kept = _count_changes(conn, watch.change_seq)
            if kept != watch.change_count:
                changed |= _full_diff(conn, index)
            elif index.vectors is not None and index.embedder is not None:
                changed |= _vector_diff(conn, index)  # a backfill logs no change
            watch.change_count = kept + new_rows
        else:
            watch.change_count += new_rows
    watch.generation = generation
    watch.change_seq = seq
    watch.last_change = last
    watch.max_id = _max_id(conn)
    watch.version = watch._read(conn)
    return {int(i) for i in changed}


def _vector_diff(conn: sqlite3.Connection, index: Any) -> set[int]:
    stored = recall_vectors.stored_ids(conn, index.embedder)
    have = index.vectors.keys().astype(np.int64)
    return {int(i) for i in np.setxor1d(stored, have)}


def _full_diff(conn: sqlite3.Connection, index: Any) -> set[int]:
    """Every record whose index entry differs from its row: the scoring columns, liveness,
    stems and vectors."""
    from core.recall.score import half_life_of
    from core.store.records import Kind

    cols = index.columns
    config = index.config
    cur = conn.cursor()
    cur.row_factory = None
    rows = cur.execute(
        "SELECT id, kind, importance, private, pinned, scope, created_at, last_access_at, "
        "access_count, stems FROM memories WHERE archived_at IS NULL"
    ).fetchall()
    changed: set[int] = set()
    n = len(cols.alive)
    live = np.zeros(0, np.int64)
    if rows:
        ids, kinds, imp, priv, pin, scopes, created, last, count, stems = zip(*rows, strict=True)
        live = np.asarray(ids, np.int64)
        inside = live < n
        changed.update(int(i) for i in live[~inside])
        sel = np.flatnonzero(inside)
        at = live[sel]
        hl = {k.value: half_life_of(k, config) for k in Kind}
        kinds_a = np.asarray(kinds, object)[sel]
        core = np.fromiter((k == Kind.CORE.value for k in kinds_a), bool, len(sel))
        half = np.fromiter((hl[k] for k in kinds_a), np.float64, len(sel))
        recalled = np.fromiter(
            (
                c if a is None else a
                for a, c in zip(
                    np.asarray(last, object)[sel], np.asarray(created, object)[sel], strict=True
                )
            ),
            np.float64,
            len(sel),
        )
        codes = {s: cols._scope_codes.get(s, -1) for s in set(scopes)}
        scope = np.fromiter((codes[s] for s in np.asarray(scopes, object)[sel]), np.int32, len(sel))
        differ = (
            ~cols.alive[at]
            | (cols.core[at] != core)
            | (cols.private[at] != np.asarray(priv, bool)[sel])
            | (cols.pinned[at] != np.asarray(pin, bool)[sel])
            | (cols.importance[at] != np.asarray(imp, np.float64)[sel])
            | (cols.half_life[at] != half)
            | (cols.recalled_at[at] != recalled)
            | (cols.reinforcements[at] != np.asarray(count, np.float64)[sel])
            | (cols.scope[at] != scope)
        )
        changed.update(int(i) for i in at[differ])
        docs = index.lexical.docs
        changed.update(
            rid for rid, st in zip(ids, stems, strict=True) if docs.get(rid) != st.split()
        )
    alive = np.flatnonzero(cols.alive[:n])
    changed.update(int(i) for i in np.setdiff1d(alive, live, assume_unique=True))
    if index.vectors is not None and index.embedder is not None:
        changed |= _vector_diff(conn, index)
    return changed


# ---------------------------------------------------------------------------- the sleep lease
@dataclass(frozen=True)
class Lease:
    pid: int
    host: str
    nonce: str
    since: float
    heartbeat: float

    @property
    def mine(self) -> bool:
        return self.nonce == _NONCE

    def alive(self, now: float, stale_after: float = STALE_AFTER_SECONDS) -> bool:
        """Whether the holder is presumed to be running."""
        if self.mine:
            return True
        silent = now - self.heartbeat
        if self.host == _HOST:
            # on this host the pid decides (a long write can hold up a heartbeat); a much
            # older heartbeat means the pid was reused by another program
            if self.pid == os.getpid():
                return False  # an earlier process with our pid: it is gone
            return silent <= 10 * stale_after and _pid_alive(self.pid)
        return silent <= stale_after  # another host (a shared disk): trust the heartbeat

    def describe(self, now: float) -> str:
        where = "" if self.host == _HOST else f" on {self.host}"
        return (
            f"process {self.pid}{where}, asleep for {max(0, int(now - self.since))} s, "
            f"last heartbeat {max(0, int(now - self.heartbeat))} s ago"
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


class LeaseHeld(RuntimeError):
    """Another live process holds the sleep lease."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        super().__init__(
            f"Eva is already asleep in another process ({lease.describe(time.time())})"
        )


class SleepLease:
    """The cross-process sleep lease, on a store's ``meta`` table. Built with
    ``memory.attach(SleepLease)`` (it shares the store's connection and lock). Liveness is
    measured on the wall clock (``time.time``), never a test clock: it is about processes."""

    def __init__(
        self,
        storage: Any,
        stale_after: float = STALE_AFTER_SECONDS,
        heartbeat: float = HEARTBEAT_SECONDS,
    ) -> None:
        self._storage = storage
        self.stale_after = stale_after
        self.heartbeat_every = heartbeat
        self.wake_requested = False
        self._beat_stop: threading.Event | None = None
        self._beat_thread: threading.Thread | None = None

    @staticmethod
    def _parse(value: str | None) -> Lease | None:
        if not value:
            return None
        try:
            d = json.loads(value)
            return Lease(
                int(d["pid"]),
                str(d["host"]),
                str(d["nonce"]),
                float(d["since"]),
                float(d["heartbeat"]),
            )
        except (ValueError, KeyError, TypeError):
            return None  # unreadable: as good as free

    def _read(self, conn: sqlite3.Connection) -> Lease | None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (LEASE_KEY,)).fetchone()
        return self._parse(row[0] if row else None)

    def current(self) -> Lease | None:
        """The lease as stored (live or not)."""
        with self._storage.lock:
            return self._read(self._storage.conn)

    def holder(self) -> Lease | None:
        """Another live process that holds the lease (None: free, stale, or ours)."""
        lease = self.current()
        if lease is None or lease.mine or not lease.alive(time.time(), self.stale_after):
            return None
        return lease

    def acquire(self) -> Lease | None:
        """Take the lease (free, stale, or already ours). Raises :class:`LeaseHeld` when a live
        process holds it. Returns the stale lease taken over, if any."""
        now = time.time()
        with self._storage.transaction() as conn:
            old = self._read(conn)
            if old is not None and not old.mine and old.alive(now, self.stale_after):
                raise LeaseHeld(old)
            mine = Lease(os.getpid(), _HOST, _NONCE, now, now)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO "
                "UPDATE SET value = excluded.value",
                (LEASE_KEY, json.dumps(asdict(mine))),
            )
        return old if old is not None and not old.mine else None

    def beat(self) -> bool:
        """Move our heartbeat on; False if the lease is no longer ours. A wake asked for by
        another process (:meth:`request_wake`) is taken here: ``wake_requested`` is set."""
        with self._storage.transaction() as conn:
            lease = self._read(conn)
            if lease is None or not lease.mine:
                return False
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?",
                (json.dumps({**asdict(lease), "heartbeat": time.time()}), LEASE_KEY),
            )
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (WAKE_KEY,)).fetchone()
            if row is not None:
                conn.execute("DELETE FROM meta WHERE key = ?", (WAKE_KEY,))
                if row[0] == lease.nonce:
                    self.wake_requested = True
        return True

    def request_wake(self) -> Lease | None:
        """Ask the live holder in another process to wake (it sees it at its next heartbeat).
        Returns that holder, or None when nobody else sleeps."""
        lease = self.holder()
        if lease is not None:
            with self._storage.transaction() as conn:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO "
                    "UPDATE SET value = excluded.value",
                    (WAKE_KEY, lease.nonce),
                )
        return lease

    def release(self) -> None:
        """Give the lease back (only ours)."""
        self.stop_beating()
        with self._storage.transaction() as conn:
            lease = self._read(conn)
            if lease is not None and lease.mine:
                conn.execute("DELETE FROM meta WHERE key = ?", (LEASE_KEY,))

    def start_beating(self, on_wake: Any = None) -> None:
        """Beat every ``heartbeat`` seconds in a daemon thread until :meth:`stop_beating`;
        call ``on_wake()`` when another process asked the holder to wake."""
        self.stop_beating()
        self.wake_requested = False
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(self.heartbeat_every):
                try:
                    if not self.beat():
                        return
                except sqlite3.Error:
                    continue  # busy or closing: the next beat tries again
                if self.wake_requested and on_wake is not None:
                    self.wake_requested = False
                    on_wake()

        self._beat_stop = stop
        self._beat_thread = threading.Thread(target=run, name="eva-sleep-lease", daemon=True)
        self._beat_thread.start()

    def stop_beating(self) -> None:
        if self._beat_stop is not None:
            self._beat_stop.set()
        if self._beat_thread is not None and self._beat_thread is not threading.current_thread():
            self._beat_thread.join(timeout=2)
        self._beat_stop = self._beat_thread = None


def holder_at(db_path: str | os.PathLike) -> Lease | None:
    """The live holder of the sleep lease of the store at ``db_path``, read without opening
    the store (``eva sleep`` asks before it loads a model)."""
    if not os.path.exists(db_path):
        return None
    try:
        conn = sqlite3.connect(f"file:{os.fspath(db_path)}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (LEASE_KEY,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    lease = SleepLease._parse(row[0] if row else None)
    if lease is None or lease.mine or not lease.alive(time.time()):
        return None
    return lease
