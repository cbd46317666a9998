"""The engine room under :class:`core.memory.facade.Memory`: the store file and its lock, the
in-memory recall index (:class:`core.recall.index.RecallIndex`) kept in step with the rows —
ours, and what other processes wrote (SPEC §10) — and the transactions every write goes
through (:meth:`MemoryEngine.transaction`: the index follows only what committed).

:class:`core.memory.facade.Memory` builds the owner's and the model's operations on it; its facets
(:mod:`core.memory.bulk`, :mod:`core.memory.reminders`) use only its public methods.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Self, TypeVar

import numpy as np

from core.clock import Clock, SystemClock
from core.config import MemoryConfig
from core.embedding import Embedder, Progress
from core.errors import MemoryOpError
from core.memory import coordination
from core.memory.reinforcement import Reinforcements
from core.recall.file import snapshot_path
from core.recall.index import IndexChanges, RecallIndex, RecallStatus
from core.store import records
from core.store.records import Record
from core.store.storage import Storage, connect

log = logging.getLogger("eva.memory")

T = TypeVar("T")


@dataclass
class Writes:
    """One open transaction over the memory tables (:meth:`MemoryEngine.transaction`): its
    connection, its moment, the records it changed (reindexed when it ends) and the new live
    records it added (indexed at once when it commits: one rebuild of the lexical index for a
    large import)."""

    conn: sqlite3.Connection
    now: float
    vector: Callable[[int, np.ndarray | None], None]  # a record's new vector (None: drop it)
    touched: set[int] = field(default_factory=set)
    added: list[int] = field(default_factory=list)


class MemoryEngine:
    """The store, its lock and its recall index (see the module's docstring)."""

    def __init__(
        self,
        storage: Storage,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self._storage = storage
        self._lock: threading.RLock = storage.lock
        self.clock = clock or SystemClock()
        self.embedder = embedder
        self._index = RecallIndex(
            config or MemoryConfig(), embedder, storage.meta_get, snapshot_path(storage.path)
        )
        with self._lock, storage.reading() as conn:
            stamp = storage.index_stamp()
            self._index.load(conn, stamp)
            storage.index_generation = stamp[1]
            self._watch = coordination.StoreWatch(conn)
        # a search's access rows wait for the next transaction or a few seconds
        self._accesses = Reinforcements(storage)

    @property
    def config(self) -> MemoryConfig:
        return self._index.config

    @config.setter
    def config(self, value: MemoryConfig) -> None:
        self._index.config = value

    @classmethod
    def open(
        cls,
        path: str | Path,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        connection_factory: Callable = connect,
    ) -> Self:
        return cls(Storage(path, connection_factory), config, clock, embedder)

    def attach(self, owner: Callable[[Storage], T]) -> T:
        """A store that owns other tables of this database (:class:`core.chat.transcript.Transcript`,
        :class:`core.sleep.journal.Journal`), on the same connection and lock, so its rows
        commit in one transaction with memory's where they must."""
        return owner(self._storage)

    def close(self) -> None:
        """Persist the index (when it is in step with the file and the file does not already
        hold it: the next open reads it instead of rebuilding), then close the store."""
        with self._lock:
            try:
                self._accesses.close()
            except Exception as e:  # noqa: BLE001 - at most that window is lost, never a memory
                log.warning("reinforcements not written at close: %s", e)
            try:
                stamp = self._storage.index_stamp()
                if self._storage.index_generation == stamp[1]:
                    self._index.persist(stamp)
            except Exception as e:  # best effort: the next open rebuilds
                log.warning("recall index not persisted: %s", e)
            self._storage.close()

    def refresh(self) -> int:
        """Notice what other processes wrote to the store since the last look (SPEC §10) and
        bring the in-memory indexes in line — only the records that changed. One pragma when
        nothing did; every recall calls it first. Returns how many records were reindexed."""
        with self._lock:
            if self._storage.conn.in_transaction or not self._watch.moved(self._storage.conn):
                # inside a transaction of ours the rows hold our uncommitted writes: the index
                # must not take them before the commit (the next look outside catches up)
                return 0
            try:  # our waiting accesses first: the index is compared with the rows
                self._accesses.flush()
            except sqlite3.Error as e:  # the next look tries again; the index stays as it is
                log.warning("reinforcements not written yet: %s", e)
                return 0
            with self._storage.reading() as conn:
                ids = coordination.changed_ids(conn, self._watch, self._index)
                if ids:
                    self._index.reindex(conn, ids)
                if not self._index.broken:
                    # the index matches the rows at this generation again: it may be persisted
                    self._storage.index_generation = self._watch.generation
            if ids:
                log.debug("reindexed %d records written by another process", len(ids))
            return len(ids)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One consistent read of the store (holding its lock), for a reader of many rows."""
        with self._lock, self._storage.reading() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[Writes]:
        """One transaction over the memory tables (holding the store's lock) for a process that
        changes many records at once (sleep's phases: :mod:`core.sleep.ops`; the bulk paths:
        :mod:`core.memory.bulk`). The index entries of ``Writes.touched`` are refreshed after
        it ends, committed or rolled back; ``Writes.added`` are indexed at once if it
        committed."""
        with self._lock:
            w: Writes | None = None
            changes: IndexChanges | None = None
            written = IndexChanges()  # the vectors it wrote, for the records it added
            added: list[Record] = []
            committed = False
            try:
                with self._storage.transaction() as conn:
                    w = Writes(
                        conn, self.clock.now(), partial(self._write_vector, conn, written=written)
                    )
                    yield w
                    # read inside the transaction: nothing is read after COMMIT
                    if w.added:
                        fresh = records.fetch_many(conn, w.added, live=True)
                        added = [fresh[i] for i in w.added if i in fresh]
                    if w.touched - set(w.added):
                        changes = self._index.collect(conn, w.touched - set(w.added))
                committed = True
            finally:
                if committed:
                    if added:
                        self._index.add_imported(
                            added,
                            {r.id: written.vectors[r.id] for r in added if r.id in written.vectors},
                        )
                    if changes is not None:
                        self._index.apply(changes)
                elif w is not None and w.touched:  # rolled back: the rows are as they were
                    self._index.reindex(self._storage.conn, w.touched)

    def _write_vector(
        self,
        conn: sqlite3.Connection,
        record_id: int,
        vec: np.ndarray | None,
        *,
        written: IndexChanges,
    ) -> None:
        self._index.write_vector(conn, record_id, vec, written)  # indexed when it ends

    # ------------------------------------------------------------------ reads
    def contents(self, ids: Sequence[int]) -> dict[int, str]:
        """The contents of these records, by id (recall scores its best candidates' clauses;
        a re-embed reads what it embeds)."""
        with self._lock:
            return records.contents(self._storage.conn, ids)

    def _fetch_many(self, ids: Iterable[int]) -> dict[int, Record]:
        return records.fetch_many(self._storage.conn, ids)

    # Sleep is the owner's own process (SPEC §7): it reads the whole live corpus (private
    # records take part; nothing leaves the machine) and changes it through core.sleep.ops,
    # one phase per ``transaction()``.
    def corpus(self, ids: Iterable[int] | None = None) -> list[Record]:
        """Every live record of every scope, oldest id first (without access histories); or
        the live ones among ``ids``."""
        with self._lock:
            self._accesses.flush()  # sleep weighs records by their accesses
            if ids is None:
                return records.live(self._storage.conn)
            found = records.fetch_many(self._storage.conn, ids, live=True)
        return [found[i] for i in sorted(found)]

    def stem_sets(self) -> dict[int, frozenset[str]]:
        """The stem set of every live record (what the lexical index holds)."""
        with self._lock:
            self.refresh()
            return self._index.stem_sets()

    def vector_rows(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """(ids, unit-length rows, background cosine b) of the live records' vectors of the
        active model — a copy, for clustering; None without an embedder or vectors."""
        with self._lock:
            self.refresh()
            return self._index.vector_rows()

    # ------------------------------------------------------------------ embeddings and status
    def embed(self, contents: Sequence[str]) -> np.ndarray | None:
        """Vectors for texts about to be written (best effort: None when embedding fails; the
        records then have no vector until the next backfill)."""
        return self._index.embed(list(contents))

    def embed_many(
        self, contents: Sequence[str], *, batch: int | None = None, progress: Progress | None = None
    ) -> np.ndarray | None:
        """:meth:`embed` for a bulk path: ``batch`` texts at a time (None: the embedder's own
        batch), each batch one forward pass of every model, ``progress(done, total)`` after
        each (:func:`core.embedding.embed_many`)."""
        return self._index.embed(list(contents), many=True, batch=batch, progress=progress)

    def set_background(self, value: float) -> None:
        """Store the calibrated background cosine ``b`` of the active embedder."""
        if self.embedder is None:
            raise MemoryOpError("no embedder is active")
        if not -1 <= value < 1:
            raise MemoryOpError("background cosine must be in [-1, 1)")
        self._storage.meta_set(f"background_cosine:{self.embedder.name}", repr(float(value)))

    def status(self) -> RecallStatus:
        with self._lock:
            self.refresh()
            return self._index.status()

    def live_count(self) -> int:
        """How many live records the in-memory index holds: no SQL and no lock, so a status
        bar on an event loop never waits for a night of sleep (issue 15)."""
        return len(self._index.lexical)

    @property
    def recall_error(self) -> str | None:
        """The embedder's last failure (recall runs lexically meanwhile); no SQL, no lock."""
        return self._index.embed_error

    def backup(self, dest: str | Path) -> Path:
        """A consistent copy of the whole store at ``dest`` (SQLite's online backup API; Eva
        may keep running). See :meth:`core.store.storage.Storage.backup`."""
        self.flush_reinforcements()  # the copy holds every access
        return self._storage.backup(dest)

    def flush_reinforcements(self) -> None:
        """Write the reinforcements that wait (they are written with the next transaction or
        within seconds anyway): before the access history is read elsewhere."""
        with self._lock:
            self._accesses.flush()

    def count(self, archived: bool = False) -> int:
        with self._lock:
            return records.count(self._storage.conn, archived)

    # ------------------------------------------------------------------ notes in the store
    def first_time(self, key: str) -> bool:
        """True the first time ``key`` is noted in this store (e.g. the first-run offer to
        initialize memories), False ever after."""
        key = f"once:{key}"
        with self._lock:
            if self._storage.meta_get(key) is not None:
                return False
            self._storage.meta_set(key, repr(self.clock.now()))
            return True

    def noted(self, key: str) -> bool:
        """True once :meth:`first_time` noted ``key`` in this store (reads only: e.g. the
        chat's "Coming up" card the owner closed today, §8.11)."""
        with self._lock:
            return self._storage.meta_get(f"once:{key}") is not None
