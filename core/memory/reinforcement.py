"""Reinforcement without a commit per search (SPEC §4 reinforcement, §10, §11; issue 32).

A search reinforces what it returns: an access row per record, a "reinforce" line in the change
log (what a rollback of the turn takes back), and the record's last access and count
(:func:`core.store.accesses.log_accesses`). Written in a transaction of its own, that was a commit per
search: 0.15 ms of a 0.42 ms lexical search at 10k records. So the rows wait here, and are
written

* with the next transaction on the store, whoever opens it — the turn's own (its messages, a
  save), a phase of a night, a rollback — at its ``BEGIN``, so that its own reads (a rollback
  reading the turn's log) see them, and they commit or roll back with it;
* when :data:`FLUSH_SECONDS` have passed since the oldest waiting one (a timer), and at close;
* before anything reads the access history or the counts (:meth:`Reinforcements.flush`):
  a record with its history, the listing, the export, sleep's corpus, and the comparison of
  the index with another process's writes.

The in-memory scoring columns move at once (:meth:`core.recall.index.RecallIndex.reinforced`),
so the next recall already ranks by the reinforcement, and a search's records carry it
(:meth:`Reinforcements.overlay`). A crash loses at most the accesses of that window — never a
memory, never a committed row (the kill matrix's ``search`` scenario, tests/faultkit.py, says
so). Other processes see the accesses once they are written.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from core.store import accesses, records
from core.store.records import Actor, Record

log = logging.getLogger("eva.memory")

FLUSH_SECONDS = 5.0  # the longest a reinforcement waits to be written (wall clock)


@dataclass(frozen=True)
class _Accesses:
    at: float
    actor: Actor
    turn_id: str | None
    ids: tuple[int, ...]


def _accessed(r: Record, n: int, at: float) -> Record:
    """A copy of ``r`` with ``n`` more accesses, the last at ``at``. (Built by copying its
    fields: ``dataclasses.replace`` re-runs the constructor, ~20 µs a record — a search's
    eight hits would cost more than its whole lexical recall.)"""
    out = object.__new__(Record)
    out.__dict__.update(r.__dict__)
    out.__dict__["last_access_at"] = at
    out.__dict__["access_count"] = r.access_count + n
    return out


class Reinforcements:
    """The reinforcements of one store not yet written. Built by :class:`core.memory.facade.Memory`
    over its ``Storage``; every write transaction on that storage writes them first (its
    ``write_hooks``). ``interval``: seconds before a timer writes them (None: no timer —
    only a transaction, :meth:`flush` or :meth:`close` does)."""

    def __init__(self, storage: Any, interval: float | None = FLUSH_SECONDS) -> None:
        self._storage = storage
        self.interval = interval
        self._pending: list[_Accesses] = []
        self._writing = 0  # how many of _pending the open write transaction holds
        # per record, the accesses of _pending[_writing:]: (how many, the last one's moment)
        self._waiting: dict[int, tuple[int, float]] = {}
        self._active = False  # a write transaction of the storage is open (our hook ran)
        self._timer: threading.Timer | None = None
        self._closed = False
        storage.write_hooks.append(self._begin)

    def __len__(self) -> int:
        """Accesses waiting to be written."""
        with self._storage.lock:
            return sum(n for n, _at in self._waiting.values())

    def add(self, at: float, actor: Actor, turn_id: str | None, ids: Iterable[int]) -> None:
        """One access to each of these records at ``at`` (written later)."""
        ids = tuple(int(i) for i in ids)
        if not ids:
            return
        with self._storage.lock:
            self._pending.append(_Accesses(at, actor, turn_id, ids))
            waiting = self._waiting
            for rid in ids:
                waiting[rid] = (waiting.get(rid, (0, at))[0] + 1, at)
            self._schedule()

    def overlay(self, recs: dict[int, Record]) -> dict[int, Record]:
        """These records (as read from the rows) with the accesses still waiting here: their
        last access and count as they will be once written."""
        with self._storage.lock:
            waiting = self._waiting
            if not waiting:
                return recs
            out = dict(recs)
            for rid, r in recs.items():
                w = waiting.get(rid)
                if w is not None:
                    out[rid] = _accessed(r, w[0], w[1])
        return out

    def flush(self) -> None:
        """Write what waits now: inside the write transaction already open on this thread,
        else in one of its own. Inside a read transaction nothing can be written: nothing is."""
        with self._storage.lock:
            if len(self._pending) == self._writing:
                return
            if self._storage.conn.in_transaction:
                if self._active:
                    self._write_rest(self._storage.conn)
                return
            with self._storage.transaction():
                pass  # the transaction's BEGIN writes them (_begin)

    def close(self) -> None:
        """Write what waits and stop the timer."""
        with self._storage.lock:
            self._closed = True
            self._cancel()
            self.flush()

    # ------------------------------------------------------------------ the storage's hook
    def _begin(self, conn: sqlite3.Connection) -> Callable[[bool], None]:
        """Called by the storage right after a write transaction's BEGIN: the waiting accesses
        go into it. Returns what the storage calls when it ends (committed or not)."""
        self._active = True
        try:
            self._write_rest(conn)
        except BaseException:
            self._active, self._writing = False, 0
            raise
        return self._end

    def _write_rest(self, conn: sqlite3.Connection) -> None:
        rest = self._pending[self._writing :]
        if not rest:
            return
        wanted = sorted({i for a in rest for i in a.ids})
        # a record deleted meanwhile (an archive purged by another process) has no access
        # to take: its row would break the foreign key, and with it every later write
        live = records.existing(conn, wanted)
        for a in rest:
            accesses.log_accesses(conn, a.at, a.actor, a.turn_id, [i for i in a.ids if i in live])
        self._writing = len(self._pending)
        self._waiting = {}

    def _end(self, committed: bool) -> None:
        self._active = False
        if committed:
            del self._pending[: self._writing]
            if not self._pending:
                self._cancel()
        elif self._writing:  # rolled back: what it held waits again
            self._waiting = {}
            for a in self._pending:
                for rid in a.ids:
                    self._waiting[rid] = (self._waiting.get(rid, (0, a.at))[0] + 1, a.at)
        self._writing = 0

    # ------------------------------------------------------------------ the timer
    def _schedule(self) -> None:
        if self.interval is None or self._timer is not None or self._closed:
            return
        timer = threading.Timer(self.interval, self._due)
        timer.daemon = True
        timer.name = "eva-reinforcements"
        self._timer = timer
        timer.start()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _due(self) -> None:
        with self._storage.lock:
            self._timer = None
            if self._closed or not self._pending:
                return
            try:
                self.flush()
            except sqlite3.ProgrammingError:  # the store was closed under us: nothing to do
                self._closed = True
                return
            except sqlite3.Error as e:  # busy or failing: the next transaction or tick tries
                log.warning("reinforcements not written yet: %s", e)
            if self._pending:
                self._schedule()
