"""The memory engine's public API (SPEC §1–§6, §11): the owner's and the model's operations.

Every layer above the core (chat, sleep, TUI, HTTP) uses :class:`Memory` and nothing below it::

    mem = Memory.open("~/.local/share/eva/memory.db")          # or clock=ManualClock() in tests
    res = mem.save("Owner's sister Anna lives in Kazan", ctx=OWNER_TRUSTED, kind="fact",
                   importance=4, private=True)
    hits = mem.search("where does Anna live", ctx=OWNER_TRUSTED)   # reinforces what it returns
    section = mem.prompt_section("Anna", ctx=OWNER_TRUSTED)        # reinforces nothing
    mem.forget(res.id, why="moved", ctx=OWNER_TRUSTED)             # to the archive
    mem.restore(res.id)                                            # same id, flags, history

Each public method is one SQLite transaction (or none), holds the store's lock, and updates
the in-memory indexes (:class:`core.recall_index.RecallIndex`) only after its transaction
committed. Rows are read and written by :mod:`core.records`, arguments checked by
:mod:`core.validation`.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from core import coordination, records, reminders, text
from core import prompt_section as ps
from core import validation as valid
from core.clock import Clock, SystemClock
from core.config import MemoryConfig
from core.embedding import Embedder
from core.errors import MemoryOpError, NotFound, Refused
from core.privacy import OWNER_TRUSTED, PUBLIC, AccessDenied, TurnContext
from core.recall import Hit, with_record
from core.recall_file import snapshot_path
from core.recall_index import IndexChanges, RecallIndex, RecallStatus, Scored
from core.records import GLOBAL_SCOPE, Actor, ArchivedRecord, Kind, Record, Source
from core.reinforcement import Reinforcements
from core.storage import Storage, connect

log = logging.getLogger("eva.memory")

__all__ = ["ImportResult", "Memory", "RecallStatus", "SaveResult", "SearchHit", "Similar",
           "Writes"]

SearchHit = Hit  # memory_search's hits carry their record (one hit type: core.recall.Hit)
T = TypeVar("T")


@dataclass(frozen=True)
class Similar:
    id: int
    kind: Kind
    age: str
    content: str


@dataclass(frozen=True)
class SaveResult:
    id: int
    status: str  # "created" | "reinforced" | "updated" (dedup hit with a more detailed wording)
    record: Record
    similar: tuple[Similar, ...] = ()


@dataclass(frozen=True)
class ImportResult:
    """What :meth:`Memory.import_exported` did: the records it made (their changes are logged
    under ``turn_id``, so ``rollback_turn(turn_id)`` takes the whole import back) and the lines
    it skipped as duplicates of records already in the store (line number, that record's id)."""

    turn_id: str
    created: tuple[int, ...]
    duplicates: tuple[tuple[int, int], ...]


@dataclass
class Writes:
    """One open transaction over the memory tables (:meth:`Memory.transaction`): its
    connection, its moment, and the records it changed (reindexed when it ends)."""

    conn: sqlite3.Connection
    now: float
    vector: Callable[[int, np.ndarray | None], None]  # a record's new vector (None: drop it)
    touched: set[int] = field(default_factory=set)


class Memory:
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
        self._index = RecallIndex(config or MemoryConfig(), embedder, storage.meta_get,
                                  snapshot_path(storage.path))
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
    ) -> Memory:
        return cls(Storage(path, connection_factory), config, clock, embedder)

    def attach(self, owner: Callable[[Storage], T]) -> T:
        """A store that owns other tables of this database (:class:`core.transcript.Transcript`,
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

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ shared checks
    def _check_mutate(self, ctx: TurnContext, actor: Actor, op: str) -> None:
        if actor is Actor.MODEL and not ctx.can_mutate:
            raise AccessDenied(f"{op} is available only in the owner's turns")

    @staticmethod
    def _visible(r: Record | None, ctx: TurnContext) -> bool:
        return (
            r is not None
            and (ctx.sees_private or not r.private)
            and r.scope in ctx.scopes()
        )

    def _live_target(self, conn, record_id: int, ctx: TurnContext, actor: Actor) -> Record:
        """The live record an op acts on. Records the turn may not see are reported as
        non-existent, so an error never confirms that a private memory exists."""
        row = records.row(conn, record_id)
        if row is None or row["archived_at"] is not None:
            raise NotFound(record_id)
        r = records.from_row(row, records.history(conn, record_id))
        if actor is not Actor.OWNER and not self._visible(r, ctx):
            raise NotFound(record_id)
        if actor is not Actor.OWNER and r.pinned:
            raise Refused(f"memory #{record_id} is pinned by the owner; only the owner changes it")
        return r

    def _check_pin_room(self, conn, scope: str) -> None:
        n = records.pinned_count(conn, scope)
        if n >= self.config.max_pinned:
            raise Refused(
                f"scope {scope!r} already has {n} pinned memories (the limit is "
                f"{self.config.max_pinned}); unpin one first"
            )

    def _log(self, conn, now: float, actor: Actor, ctx: TurnContext, op: str,
             record_id: int) -> None:
        """Log a change with the record as it is before it (what rollback puts back)."""
        records.log_change(conn, now, actor, ctx.turn_id, op, record_id,
                           records.snapshot(conn, record_id))

    def _contents(self, ids: list[int]) -> dict[int, str]:
        """The contents of these records, by id (recall scores its best candidates' clauses)."""
        marks = ",".join("?" * len(ids))
        return dict(self._storage.conn.execute(
            f"SELECT id, content FROM memories WHERE id IN ({marks})", ids).fetchall())

    def _fetch_many(self, ids: Iterable[int]) -> dict[int, Record]:
        return records.fetch_many(self._storage.conn, ids)

    def _reinforce(self, hit_ids: Sequence[int], now: float, ctx: TurnContext
                   ) -> dict[int, Record]:
        """Reinforce what a turn was given: the access rows wait to be written with the next
        transaction (core.reinforcement), their columns move now. Returns the records as they
        are with it."""
        ids = list(hit_ids)
        recs = records.fetch_many(self._storage.conn, ids)  # a failed read reinforces nothing
        self._accesses.add(now, Actor.MODEL, ctx.turn_id, ids)
        self._index.reinforced(ids, now)
        return self._accesses.overlay(recs)

    def flush_reinforcements(self) -> None:
        """Write the reinforcements that wait (they are written with the next transaction or
        within seconds anyway): before the access history is read elsewhere."""
        with self._lock:
            self._accesses.flush()

    # ------------------------------------------------------------------ tool operations
    def save(
        self,
        content: object,
        ctx: TurnContext = OWNER_TRUSTED,
        kind: object = "fact",
        importance: object = 3,
        private: object = False,
        *,
        pinned: bool = False,
        scope: str | None = None,
        source: Source = Source.TOOL,
        actor: Actor = Actor.MODEL,
        said_at: float | None = None,
    ) -> SaveResult:
        """memory_save with dedup (§3.2). The day the words point to is read against
        ``said_at`` (when the owner said them; default now) and stored with them (§8.11). A record whose stem set has Jaccard ≥ dedup_jaccard
        with the new text (and compatible numbers) is reinforced instead of duplicated; the more
        detailed wording wins. The answer lists the most similar records this audience may see."""
        self._check_mutate(ctx, actor, "memory_save")
        content = valid.content(content, self.config.max_chars)
        kind = valid.kind(kind)
        importance = valid.importance(importance)
        private = valid.flag(private, "private")
        scope = valid.scope(scope) if scope is not None else GLOBAL_SCOPE
        if actor is Actor.MODEL and pinned:
            raise Refused("only the owner pins memories")
        new_stems = text.stems(content)
        vec = self._index.embed_one(content)

        with self._lock:
            self.refresh()
            now = self.clock.now()
            scored = self._index.scored(new_stems)  # once: for the dedup and the similar
            dup = None if pinned else self._index.duplicate(new_stems, ctx, scope, scored)
            changes = IndexChanges()
            with self._storage.transaction() as conn:
                if dup is not None:
                    target = records.fetch(conn, dup)
                    self._log(conn, now, actor, ctx, "dedup", dup)
                    records.reinforce(conn, dup, now)
                    status = "reinforced"
                    if self._index.more_detailed(new_stems, dup) and not target.pinned:
                        conn.execute(
                            "UPDATE memories SET content = ?, stems = ?, updated_at = ?, "
                            "source_turn = COALESCE(?, source_turn) WHERE id = ?",
                            (content, " ".join(new_stems), now, ctx.turn_id, dup),
                        )
                        records.redate(conn, dup, content, now if said_at is None else said_at)
                        self._index.write_vector(conn, dup, vec, changes)
                        status = "updated"
                    if private and not target.private and not target.pinned:
                        conn.execute("UPDATE memories SET private = 1 WHERE id = ?", (dup,))
                    rid = dup
                else:
                    if pinned:
                        self._check_pin_room(conn, scope)
                    rid = records.insert(conn, content, kind, importance, private=private,
                                         pinned=pinned, scope=scope, created_at=now,
                                         updated_at=now, source=source, source_turn=ctx.turn_id,
                                         said_at=said_at)
                    records.log_change(conn, now, actor, ctx.turn_id, "create", rid, None)
                    self._moved_from(conn, rid, content, new_stems, ctx, actor, now)
                    self._index.write_vector(conn, rid, vec, changes)
                    status = "created"
                record = records.fetch(conn, rid)
            changes.upserts.append(record)
            self._index.apply(changes)
            try:
                similar = self._similar(content, ctx, rid, now, vec, scored)
            except Exception as e:  # the save is committed: never report it as failed
                log.warning("similar records after save #%s unavailable: %s", rid, e)
                similar = ()
            return SaveResult(rid, status, record, similar)

    def _moved_from(self, conn, rid: int, content: str, new_stems, ctx: TurnContext,
                    actor: Actor, now: float) -> None:
        """A new record that says a dated thing moved ("встречу перенесли на 2 июня") ends the
        reminder of the record it moves (§8.11: the old day is no longer due), in the save's
        transaction: a one-off, open reminder of a live record this audience sees, in the same
        scope, sharing the thing's words (stems beyond the days). Logged, so a regenerate puts
        it back."""
        new = conn.execute("SELECT due_on, scope FROM memories WHERE id = ?", (rid,)).fetchone()
        if new["due_on"] is None or not reminders.says_moved(content):
            return
        mine = reminders.topic_stems(new_stems)
        if not mine:
            return
        rows = conn.execute(
            "SELECT id, stems, private FROM memories WHERE archived_at IS NULL AND id != ? "
            "AND due_on IS NOT NULL AND due_every IS NULL AND remind_state IS NULL "
            "AND scope = ? AND pinned = 0", (rid, new["scope"])).fetchall()
        for r in rows:
            if r["private"] and not ctx.sees_private:
                continue
            theirs = reminders.topic_stems(r["stems"].split())
            shared = mine & theirs
            if len(shared) >= 1 and len(shared) / len(mine | theirs) >= 0.25:
                self._log(conn, now, actor, ctx, "update", r["id"])
                conn.execute("UPDATE memories SET remind_state = ? WHERE id = ?",
                             (reminders.DISMISSED, r["id"]))

    # ------------------------------------------------------------------ reminders (§8.11)
    def coming_up(self, ctx: TurnContext = OWNER_TRUSTED, *, days: int = 3,
                  scopes: Iterable[str] | None = None, now: float | None = None
                  ) -> list[reminders.Reminder]:
        """What is due around now (:func:`core.reminders.coming_up`) among the live records
        this audience may see (a private one only where private memory is visible)."""
        with self._lock:
            self.refresh()
            now = self.clock.now() if now is None else now
            sql = ("SELECT id, content, importance, private, updated_at, due_on, due_every, "
                   "remind_state, remind_after, scope FROM memories "
                   "WHERE archived_at IS NULL AND due_on IS NOT NULL")
            if not ctx.sees_private:
                sql += " AND private = 0"
            rows = self._storage.query(sql)
        if scopes is not None:
            allowed = set(scopes)
            rows = [r for r in rows if r["scope"] in allowed]
        return reminders.coming_up(rows, now, days=days)

    def remind(self, record_id: object, action: str, *, until: float | None = None
               ) -> Record:
        """The owner's answer to a reminder, one transaction: ``done`` (a one-off's words say
        so: "(done 23.05.2026)"; a recurrence's current occurrence is over), ``snooze`` (not
        before ``until``, default the next morning) or ``dismiss`` (a one-off never again; a
        recurrence's current occurrence)."""
        if action not in ("done", "snooze", "dismiss"):
            raise MemoryOpError("action must be done, snooze or dismiss")
        rid = valid.record_id(record_id)
        with self._lock:
            now = self.clock.now()
            changes = IndexChanges()
            vec = None
            with self._storage.transaction() as conn:
                r = self._live_target(conn, rid, OWNER_TRUSTED, Actor.OWNER)
                if r.due_on is None:
                    raise MemoryOpError(f"#{rid} has no day to be reminded of")
                self._log(conn, now, Actor.OWNER, OWNER_TRUSTED, "update", rid)
                on = date.fromisoformat(r.due_on)
                if action == "snooze":
                    after = until if until is not None else reminders.next_morning(now)
                    conn.execute("UPDATE memories SET remind_after = ? WHERE id = ?", (after, rid))
                elif r.due_every is not None:
                    conn.execute("UPDATE memories SET remind_after = ? WHERE id = ?",
                                 (reminders.after_occurrence(on, r.due_every, now), rid))
                elif action == "dismiss":
                    conn.execute("UPDATE memories SET remind_state = ? WHERE id = ?",
                                 (reminders.DISMISSED, rid))
                else:
                    content = reminders.done_text(r.content, now, self.config.max_chars)
                    vec = self._index.embed_one(content)
                    conn.execute("UPDATE memories SET content = ?, stems = ?, updated_at = ?, "
                                 "remind_state = ? WHERE id = ?",
                                 (content, " ".join(text.stems(content)), now, reminders.DONE,
                                  rid))
                    self._index.write_vector(conn, rid, vec, changes)
                record = records.fetch(conn, rid)
            changes.upserts.append(record)
            self._index.apply(changes)
            return record

    def _similar(self, content: str, ctx: TurnContext, exclude: int, now: float,
                 qvec: np.ndarray | None, scored: Scored | None = None) -> tuple[Similar, ...]:
        ids = self._index.similar(content, ctx, exclude, qvec, scored)
        recs = self._fetch_many(ids)
        return tuple(Similar(r.id, r.kind, ps.human_age(now - r.updated_at), r.content)
                     for r in (recs[i] for i in ids))

    def update(
        self,
        record_id: object,
        ctx: TurnContext = OWNER_TRUSTED,
        *,
        content: object = None,
        kind: object = None,
        importance: object = None,
        private: object = None,
        actor: Actor = Actor.MODEL,
    ) -> Record:
        """memory_update: edit in place. The model may not touch pinned records, and may set
        the private flag but never remove it (only the owner does)."""
        self._check_mutate(ctx, actor, "memory_update")
        rid = valid.record_id(record_id)
        new_content = valid.content(content, self.config.max_chars) if content is not None else None
        new_kind = valid.kind(kind) if kind is not None else None
        new_imp = valid.importance(importance) if importance is not None else None
        new_priv = valid.flag(private, "private") if private is not None else None
        if new_content is None and new_kind is None and new_imp is None and new_priv is None:
            raise MemoryOpError("nothing to change: give content, kind, importance or private")
        vec = self._index.embed_one(new_content) if new_content is not None else None
        with self._lock:
            now = self.clock.now()
            changes = IndexChanges()
            with self._storage.transaction() as conn:
                r = self._live_target(conn, rid, ctx, actor)
                if actor is not Actor.OWNER and r.private and new_priv is False:
                    raise Refused("the private flag is never removed by the model; the owner can")
                self._log(conn, now, actor, ctx, "update", rid)
                records.update(conn, rid, now, content=new_content, kind=new_kind,
                               importance=new_imp, private=new_priv)
                if new_content is not None:
                    self._index.write_vector(conn, rid, vec, changes)
                record = records.fetch(conn, rid)
            changes.upserts.append(record)
            self._index.apply(changes)
            return record

    def forget(self, record_id: object, why: object, ctx: TurnContext = OWNER_TRUSTED, *,
               actor: Actor = Actor.MODEL) -> ArchivedRecord:
        """memory_forget: move to the archive with who/why/when; restorable for archive_ttl."""
        self._check_mutate(ctx, actor, "memory_forget")
        rid = valid.record_id(record_id)
        why = valid.why(why)
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                r = self._live_target(conn, rid, ctx, actor)
                records.archive(conn, rid, now, actor, ctx.turn_id, why)
            self._index.apply(IndexChanges(removals=[rid]))
            return ArchivedRecord(r, now, actor.value, why, now + self.config.archive_ttl_seconds)

    def recall(self, query: str, ctx: TurnContext, top_k: int | None = None,
               now: float | None = None, use_vectors: bool = True) -> list[Hit]:
        """Scored selection for a query (§4), core excluded, privacy and public cut applied.
        Pure: reinforces nothing."""
        with self._lock:
            self.refresh()
            now = self.clock.now() if now is None else now
            k = top_k if top_k is not None else self.config.top_k
            if ctx.public_cut:
                k = min(k, self.config.public_top_k)
            return self._index.recall(query, ctx, k, now, use_vectors, contents=self._contents)

    def search(self, query: object, ctx: TurnContext = OWNER_TRUSTED, *, reinforce: bool = True,
               top_k: int | None = None) -> list[Hit]:
        """memory_search: scored recall (§4) that reinforces what it returns; never core.
        Each hit carries its record (as it is after the reinforcement)."""
        if not isinstance(query, str) or not query.strip():
            raise MemoryOpError("query is empty")
        query = query.strip()[:2000]
        with self._lock:
            now = self.clock.now()
            hits = self.recall(query, ctx, top_k=top_k, now=now)
            if reinforce and hits:
                recs = self._reinforce([h.id for h in hits], now, ctx)
            else:
                recs = self._fetch_many(h.id for h in hits)
            return [with_record(h, recs[h.id]) for h in hits]

    def list(self, ctx: TurnContext = OWNER_TRUSTED, *, kind: object = None,
             private: bool | None = None, pinned: bool | None = None, scope: str | None = None,
             contains: str | None = None, order: str = "updated", limit: int = 100,
             offset: int = 0, scopes: Sequence[str] | None = None) -> list[Record]:
        """memory_list — only where private memory may be seen (a dump would carry it).
        ``scopes`` restricts the listing to these scopes (a turn's ``ctx.scopes()``: the model
        lists only what its persona may see, SPEC §8.6); None lists every scope (the owner's
        browser)."""
        if not ctx.can_list:
            raise AccessDenied("memory_list is available only to the owner on a trusted surface")
        if order not in records.ORDERS:
            raise MemoryOpError(f"order must be one of {', '.join(records.ORDERS)}")
        if not isinstance(limit, int) or not 1 <= limit <= 10_000 or offset < 0:
            raise MemoryOpError("limit must be 1..10000 and offset >= 0")
        kind = None if kind is None else valid.kind(kind)
        with self._lock:
            self._accesses.flush()  # the counts and last accesses as the owner left them
            return records.listing(self._storage.conn, kind=kind, private=private,
                                   pinned=pinned, scope=scope, scopes=scopes, contains=contains,
                                   order=order, limit=limit, offset=offset)

    # ------------------------------------------------------------------ owner operations
    def get(self, record_id: object, ctx: TurnContext = OWNER_TRUSTED) -> Record:
        """One record with its access history (live or archived) if this turn may see it.
        The owner on a trusted surface (the memory browser) sees every scope."""
        rid = valid.record_id(record_id)
        with self._lock:
            self._accesses.flush()  # its access history, every access in it
            r = records.fetch(self._storage.conn, rid, with_history=True)
        if r is None or not (ctx.can_list or self._visible(r, ctx)):
            raise NotFound(rid)
        return r

    def visible(self, ids: Iterable[int], ctx: TurnContext) -> list[Record]:
        """Live records by id, in the given order, that this turn may see. Reinforces nothing
        (the memory-writing step shows them to the model)."""
        ids = [int(i) for i in ids][:500]
        if not ids:
            return []
        with self._lock:
            recs = records.fetch_many(self._storage.conn, ids, live=True)
        return [recs[i] for i in ids if i in recs and self._visible(recs[i], ctx)]

    def pin(self, record_id: object, pinned: bool = True) -> Record:
        """The owner's lock (§2). Only the owner pins or unpins."""
        rid = valid.record_id(record_id)
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                r = self._live_target(conn, rid, OWNER_TRUSTED, Actor.OWNER)
                if r.pinned == bool(pinned):
                    return r
                if pinned:
                    self._check_pin_room(conn, r.scope)
                self._log(conn, now, Actor.OWNER, OWNER_TRUSTED, "pin" if pinned else "unpin", rid)
                conn.execute("UPDATE memories SET pinned = ? WHERE id = ?", (int(pinned), rid))
                record = records.fetch(conn, rid)
            self._index.apply(IndexChanges(upserts=[record]))
            return record

    def set_private(self, record_id: object, private: bool) -> Record:
        """The owner marks or unmarks a record private (never a migration's guess)."""
        return self.update(record_id, OWNER_TRUSTED, private=bool(private), actor=Actor.OWNER)

    def restore(self, record_id: object, ctx: TurnContext = OWNER_TRUSTED) -> Record:
        """Bring an archived record back with its id, kind, flags and history."""
        if not ctx.can_list:
            raise AccessDenied("restoring from the archive is the owner's, on a trusted surface")
        rid = valid.record_id(record_id)
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                row = conn.execute(
                    "SELECT archived_at, pinned, scope FROM memories WHERE id = ?",
                    (rid,)).fetchone()
                if row is None or row[0] is None:
                    raise NotFound(f"{rid} in the archive")
                if row[1]:
                    self._check_pin_room(conn, row[2])  # at most max_pinned per scope (§2)
                self._log(conn, now, Actor.OWNER, ctx, "restore", rid)
                records.unarchive(conn, rid)
                record = records.fetch(conn, rid)
                vec = self._index.stored_vector(conn, rid)
            changes = IndexChanges(upserts=[record])
            if vec is not None:
                changes.vectors[rid] = vec
            self._index.apply(changes)
            return record

    def archive(self, ctx: TurnContext = OWNER_TRUSTED, limit: int = 1000) -> list[ArchivedRecord]:
        """Archived records, newest first, with who/why/when and the moment of purge."""
        if not ctx.can_list:
            raise AccessDenied("the archive is the owner's, on a trusted surface")
        with self._lock:
            return records.archived(self._storage.conn, self.config.archive_ttl_seconds, limit)

    def purge_archive(self, *, dry_run: bool = False) -> int:
        """Delete archive entries older than archive_ttl (sleep's hygiene); with ``dry_run``
        only count them. Returns the count."""
        with self._lock:
            cutoff = self.clock.now() - self.config.archive_ttl_seconds
            if dry_run:
                return records.purge(self._storage.conn, cutoff, dry_run=True)
            with self._storage.transaction() as conn:
                return records.purge(conn, cutoff)

    # ------------------------------------------------------------------ the prompt section
    def prompt_section(self, query: str, ctx: TurnContext, *, reinforce: bool = False,
                       exclude: Iterable[int] = (), repeat_best: int | None = None
                       ) -> ps.PromptSection:
        """The memory section a turn carries (§5). Passive weaving reinforces nothing.
        ``exclude``: records the conversation already shows (recalled in earlier messages of
        the live window) are not repeated — unless they are among the query's best
        ``repeat_best`` (``memory.repeat_best`` when None; the conversation asks for it for a
        question only)."""
        with self._lock:
            self.refresh()
            now = self.clock.now()
            # core and pinned records through the in-memory columns (a SQL scan of every live
            # row would cost ~25 ms at 100k records), then read by id
            core_ids = self._index.core_ids(ctx)
            found = self._fetch_many(core_ids)
            core = [found[int(i)] for i in core_ids if int(i) in found]
            skip = set(exclude)
            hits = []
            if query and query.strip():
                hits = self.recall(query, ctx, top_k=self.config.top_k + len(skip), now=now)
                best = self.config.repeat_best if repeat_best is None else repeat_best
                hits = [h for i, h in enumerate(hits)
                        if i < best or h.id not in skip][: self.config.top_k]
            recs = self._fetch_many(h.id for h in hits)
            recalled = [recs[h.id] for h in hits]
            recalled += self._named_by(recalled[: self.config.name_links_from], ctx,
                                       skip | {h.id for h in hits})
            section = ps.build(core, recalled, self.config, now, ctx.gets_withheld_footnote)
            if reinforce and section.recalled_ids:
                self._reinforce(list(section.recalled_ids), now, ctx)
            return section

    def _named_by(self, recalled: list[Record], ctx: TurnContext, exclude: set[int]
                  ) -> list[Record]:
        """Records naming whom the best recalled ones name (§5, "what else I know about Lena"):
        "Where does my sister live now?" finds "My sister Lena lives in Kazan", and the newer
        "Лена переехала в Санкт-Петербург" shares no word with the question, only the name."""
        if ctx.public_cut:  # other people's turns see public_top_k records and no more
            return []
        groups = [g for r in recalled for g in text.name_stems(r.content)]
        ids = self._index.named(groups, ctx, exclude, self.config.name_links)
        found = self._fetch_many(ids)
        return [found[i] for i in ids if i in found]

    def preview(self, query: str, public: bool = False) -> ps.PromptSection:
        """The exact section a turn would carry, as the trusted owner or as a public turn.
        Reinforces nothing (SPEC §5)."""
        return self.prompt_section(query, PUBLIC if public else OWNER_TRUSTED, reinforce=False)

    # ------------------------------------------------------------------ embeddings and status
    def backfill_vectors(self, batch: int = 64, progress: Callable[[int, int], None] | None = None
                         ) -> int:
        """Embed live records that have no vector of the active model (or a vector of another
        model), in batches. Best effort: stops at the first failure. Returns how many were done."""
        if self.embedder is None:
            return 0
        with self._lock:
            todo = self._index.missing_vectors(self._storage.conn)
        done = 0
        for start in range(0, len(todo), batch):
            ids = todo[start: start + batch]
            with self._lock:
                recs = self._fetch_many(ids)
            ids = [i for i in ids if i in recs]
            m = self._index.embed([recs[i].content for i in ids])
            if m is None:
                break
            with self._lock:
                changes = IndexChanges()
                with self._storage.transaction() as conn:
                    for i, vec in zip(ids, m, strict=True):
                        if conn.execute("SELECT content FROM memories WHERE id = ?",
                                        (i,)).fetchone()[0] != recs[i].content:
                            continue  # changed meanwhile; the next backfill takes it
                        self._index.write_vector(conn, i, vec, changes)
                self._index.apply(changes)
            done += len(ids)
            if progress:
                progress(done, len(todo))
        return done

    def embed(self, contents: list[str]) -> np.ndarray | None:
        """Vectors for texts about to be written (best effort: None when embedding fails; the
        records then have no vector until the next backfill)."""
        return self._index.embed(list(contents))

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
        may keep running). See :meth:`core.storage.Storage.backup`."""
        self.flush_reinforcements()  # the copy holds every access
        return self._storage.backup(dest)

    def count(self, archived: bool = False) -> int:
        q = "IS NOT NULL" if archived else "IS NULL"
        return self._storage.query(f"SELECT COUNT(*) FROM memories WHERE archived_at {q}")[0][0]

    # ------------------------------------------------------------------ bulk import and rollback
    def import_records(self, items: Iterable[dict], *, source: Source = Source.INIT,
                       batch: int = 5000) -> list[int]:
        """The owner's bulk import (initial memories, migrations from another tool, benchmarks):
        no dedup, all or nothing — every item is checked first (a bad one is named by its
        position), then all are written in one transaction, and the indexes are updated once,
        after it committed. Each item has ``content`` and optionally kind, importance, private,
        pinned, scope, created_at. ``batch`` is how many are embedded at a time."""
        checked: list[dict] = []
        for n, it in enumerate(items, 1):
            if not isinstance(it, dict):
                raise MemoryOpError(f"import item {n}: expected an object with 'content'")
            try:
                checked.append(valid.item(it, self.config.max_chars, self.clock.now))
            except MemoryOpError as e:
                raise MemoryOpError(f"import item {n}: {e}") from None
        vectors = None
        if self.embedder is not None and checked:
            parts = [self._index.embed([c["content"] for c in checked[i: i + batch]])
                     for i in range(0, len(checked), max(1, batch))]
            vectors = None if any(p is None for p in parts) else np.concatenate(parts)
        with self._lock:
            changes = IndexChanges()
            ids: list[int] = []
            with self._storage.transaction() as conn:
                pins: dict[str, int] = {}
                for n, item in enumerate(checked):
                    if item["pinned"]:
                        scope = item["scope"]
                        pins[scope] = pins.get(scope, records.pinned_count(conn, scope)) + 1
                        if pins[scope] > self.config.max_pinned:
                            raise Refused(
                                f"import item {n + 1}: scope {scope!r} would have more than "
                                f"{self.config.max_pinned} pinned memories; nothing was imported")
                    rid = records.insert(conn, **item, updated_at=item["created_at"],
                                         source=source, source_turn=None)
                    ids.append(rid)
                    if vectors is not None:
                        self._index.write_vector(conn, rid, vectors[n], changes)
                recs = records.fetch_many(conn, ids)  # read inside: the index follows the file
            self._index.add_imported([recs[rid] for rid in ids], changes.vectors)
            return ids

    def model_changes(self, turn_id: str | None) -> int:
        """How many updates and forgets the model made in this turn (the per-turn cap)."""
        if not turn_id:
            return 0
        return self._storage.query(
            "SELECT COUNT(*) FROM changes WHERE turn_id = ? AND actor = ? "
            "AND op IN ('update', 'forget')", (turn_id, Actor.MODEL.value))[0][0]

    def turn_changes(self, turn_id: str) -> list[dict]:
        """The memory writes a turn made, oldest first (op, memory id, actor, when)."""
        with self._lock:
            return records.turn_changes(self._storage.conn, turn_id)

    def rollback_turn(self, turn_id: str, also: Callable[[], None] | None = None
                      ) -> records.Rollback:
        """Undo the memory writes of one turn (regenerate, SPEC §8.4; a whole night of sleep,
        ``sleep:<run id>``), newest first, in one transaction — only on records unchanged
        since the turn (``kept`` lists the others, left as they are now). Nothing is deleted:
        what the turn created goes to the archive, reason "regenerated". Records pinned by the
        owner are left as they are. A record whose wording went back gets the vector of that
        wording (best effort: without it, the next backfill embeds it). ``also`` runs inside the
        same transaction (regenerate discards the turn's answers with it: both or neither)."""
        if not turn_id:
            raise MemoryOpError("turn id is empty")
        with self._lock:
            with self._storage.transaction() as conn:
                if also is not None:
                    also()
                done = records.rollback(conn, turn_id, self.clock.now())
                for rid in done.reworded:  # the stored vector is of the undone wording
                    self._index.write_vector(conn, rid, None, IndexChanges())
                if done.touched:  # other processes compare their index with the rows: a
                    # rollback of reinforcements alone moves no content, so it says so itself
                    conn.execute("UPDATE index_state SET generation = generation + 1 "
                                 "WHERE id = 1")
            self._index.reindex(self._storage.conn, done.touched)
        if done.reworded and self.embedder is not None:
            ids = list(done.reworded)
            m = self._index.embed([done.reworded[i] for i in ids])
            if m is not None:
                with self._lock:
                    changes = IndexChanges()
                    with self._storage.transaction() as conn:
                        for rid, vec in zip(ids, m, strict=True):
                            row = conn.execute("SELECT content FROM memories WHERE id = ?",
                                               (rid,)).fetchone()
                            if row is not None and row[0] == done.reworded[rid]:
                                self._index.write_vector(conn, rid, vec, changes)
                    self._index.reindex(self._storage.conn, list(changes.vectors))
        return done

    # ------------------------------------------------------------------ for sleep (SPEC §7)
    # Sleep is the owner's own process: it reads the whole live corpus (private records take
    # part; nothing leaves the machine) and changes it through core.sleep.ops, one phase per
    # ``transaction()``. These are its reads and its transaction; the rules are sleep's own.

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

    def _write_vector(self, conn: sqlite3.Connection, record_id: int,
                      vec: np.ndarray | None) -> None:
        self._index.write_vector(conn, record_id, vec, IndexChanges())  # reindexed at the end

    @contextmanager
    def transaction(self) -> Iterator[Writes]:
        """One transaction over the memory tables (holding the store's lock) for a process that
        changes many records at once (sleep's phases: :mod:`core.sleep.ops`). The index entries
        of ``Writes.touched`` are refreshed after it ends, committed or rolled back."""
        with self._lock:
            w: Writes | None = None
            changes: IndexChanges | None = None
            committed = False
            try:
                with self._storage.transaction() as conn:
                    w = Writes(conn, self.clock.now(), partial(self._write_vector, conn))
                    yield w
                    if w.touched:  # read inside the transaction: nothing is read after COMMIT
                        changes = self._index.collect(conn, w.touched)
                committed = True
            finally:
                if committed and changes is not None:
                    self._index.apply(changes)
                elif w is not None and w.touched:  # rolled back: the rows are as they were
                    self._index.reindex(self._storage.conn, w.touched)

    # ------------------------------------------------------------------ the owner's hands
    # (issue 13: scopes, clear all, save from dialogue, import; SPEC §8.5, §8.6, §8.8, §11)

    @staticmethod
    def owner_in(scope: str) -> TurnContext:
        """The owner on the trusted surface, reading ``scope`` besides global."""
        return OWNER_TRUSTED if scope == GLOBAL_SCOPE else TurnContext(persona=scope)

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

    def scope_stats(self) -> dict[str, tuple[int, int]]:
        """Per scope: (live records, of which pinned)."""
        with self._lock:
            return records.scope_stats(self._storage.conn)

    def pin_room(self, scope: str) -> int:
        """How many more records may be pinned in ``scope`` (§2: at most max_pinned)."""
        scope = valid.scope(scope)
        with self._lock:
            return max(0, self.config.max_pinned - records.pinned_count(self._storage.conn, scope))

    def duplicate_of(self, content: object, scope: str = GLOBAL_SCOPE) -> Record | None:
        """The live record a save of ``content`` into ``scope`` would reinforce instead of
        adding (§3.2 dedup, as the owner sees it: private ones included). Reads only."""
        content = valid.content(content, self.config.max_chars)
        scope = valid.scope(scope)
        with self._lock:
            rid = self._index.duplicate(text.stems(content), self.owner_in(scope), scope)
            return None if rid is None else records.fetch(self._storage.conn, rid)

    def move_to_scope(self, record_id: object, scope: object) -> Record:
        """The owner moves a memory to another scope (global or a persona, §8.6). A pinned
        record needs room among the new scope's pinned ones."""
        rid = valid.record_id(record_id)
        scope = valid.scope(scope)
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                r = self._live_target(conn, rid, OWNER_TRUSTED, Actor.OWNER)
                if r.scope == scope:
                    return r
                if r.pinned:
                    self._check_pin_room(conn, scope)
                self._log(conn, now, Actor.OWNER, OWNER_TRUSTED, "scope", rid)
                records.set_scope(conn, [rid], scope)
                record = records.fetch(conn, rid)
            self._index.apply(IndexChanges(upserts=[record]))
            return record

    def clear_scope(self, scope: object, *, pinned: bool = False,
                    why: str = "cleared by the owner") -> tuple[str, list[int]]:
        """Clear all (§8.8): every unpinned live record of ``scope`` moves to the archive, one
        transaction; with ``pinned`` (the owner's second, explicit confirmation) the pinned ones
        go too. Nothing is deleted: each is restorable with its id, flags and history, and
        ``rollback_turn`` of the returned turn id takes the whole clearing back.
        Returns (turn id, archived ids)."""
        scope = valid.scope(scope)
        why = valid.why(why)
        turn_id = f"clear:{uuid.uuid4().hex}"
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                ids = records.live_ids(conn, scope, pinned=None if pinned else False)
                for rid in ids:
                    records.archive(conn, rid, now, Actor.OWNER, turn_id, why)
            self._index.apply(IndexChanges(removals=list(ids)))
            return turn_id, ids

    def save_pinned(self, items: Sequence[dict], scope: object, source: Source) -> list[int]:
        """Save from dialogue (§8.5): the owner's confirmed drafts, pinned, into ``scope``, in
        one transaction. Refused as a whole, naming the room left, when they do not fit among
        the scope's pinned records (at most max_pinned, §2)."""
        scope = valid.scope(scope)
        clean = [(valid.content(it.get("content"), self.config.max_chars),
                  valid.kind(it.get("kind", "fact")), valid.importance(it.get("importance", 4)),
                  valid.flag(it.get("private", False), "private")) for it in items]
        if not clean:
            raise MemoryOpError("nothing to save")
        vecs = self._index.embed([c[0] for c in clean])
        with self._lock:
            now = self.clock.now()
            changes = IndexChanges()
            ids: list[int] = []
            with self._storage.transaction() as conn:
                have = records.pinned_count(conn, scope)
                if have + len(clean) > self.config.max_pinned:
                    room = max(0, self.config.max_pinned - have)
                    raise Refused(
                        f"scope {scope!r} has {have} pinned memories and the limit is "
                        f"{self.config.max_pinned}: {room} more fit, {len(clean)} were asked; "
                        "drop some or unpin older ones first")
                for k, (content, kind, imp, private) in enumerate(clean):
                    rid = records.insert(conn, content, kind, imp, private=private, pinned=True,
                                         scope=scope, created_at=now, updated_at=now,
                                         source=source, source_turn=None)
                    records.log_change(conn, now, Actor.OWNER, None, "create", rid, None)
                    if vecs is not None:
                        self._index.write_vector(conn, rid, vecs[k], changes)
                    ids.append(rid)
                changes.upserts.extend(records.fetch_many(conn, ids).values())
            self._index.apply(changes)
            return ids

    def exported(self, *, include_archive: bool = False, private: bool = False
                 ) -> tuple[list[dict], int]:
        """The owner's export (SPEC §11): every live record (and archived ones with
        ``include_archive``) as a plain dict of its stored fields with its access history
        (``accesses``), oldest id first; private ones only with ``private``. Returns the rows
        and how many private records were left out. One consistent read."""
        self.flush_reinforcements()  # the export carries every access
        with self._lock, self._storage.reading() as conn:
            rows = [{**dict(r), "accesses": acc} for r, acc in records.exported(
                conn, include_archive=include_archive, private=private)]
            left_out = 0 if private else records.count_private(
                conn, include_archive=include_archive)
        return rows, left_out

    def import_exported(self, items: Sequence[dict]) -> ImportResult:
        """Write an export's records back (``eva import``, SPEC §11), all or nothing: one
        transaction. Items are checked by :mod:`core.portability` (every field clean, ``line``
        their line number). A line that is already in the store — the same content and
        creation time, or a live record a save of it would reinforce (§3.2 dedup) — is skipped
        and reported. A pinned record beyond its scope's room refuses the whole import, naming
        its line. Records keep kind, importance, flags, scope, dates, source and access
        history; archived ones land in the archive as they were."""
        turn_id = f"import:{uuid.uuid4().hex}"
        live = [it for it in items if it.get("archived") is None]
        vecs = self._index.embed([it["content"] for it in live]) if live else None
        vec_of = {id(it): vecs[k] for k, it in enumerate(live)} if vecs is not None else {}
        with self._lock:
            now = self.clock.now()
            changes = IndexChanges()
            created: list[int] = []
            dups: list[tuple[int, int]] = []
            pins: dict[str, int] = {}
            with self._storage.transaction() as conn:
                for it in items:
                    same = records.same_record(conn, it["content"], it["created_at"])
                    if same is None and it.get("archived") is None:
                        same = self._index.duplicate(text.stems(it["content"]),
                                                     self.owner_in(it["scope"]), it["scope"])
                    if same is not None:
                        dups.append((it["line"], same))
                        continue
                    if it["pinned"] and it.get("archived") is None:
                        scope = it["scope"]
                        if scope not in pins:
                            pins[scope] = records.pinned_count(conn, scope)
                        pins[scope] += 1
                        if pins[scope] > self.config.max_pinned:
                            raise Refused(
                                f"line {it['line']}: scope {scope!r} would have more than "
                                f"{self.config.max_pinned} pinned memories; nothing was "
                                "imported (unpin some first, or set pinned to false there)")
                    rid = records.insert(
                        conn, it["content"], it["kind"], it["importance"],
                        private=it["private"], pinned=it["pinned"], scope=it["scope"],
                        created_at=it["created_at"], updated_at=it["updated_at"],
                        consolidated_at=it.get("consolidated_at"), source=it["source"],
                        source_turn=None, history=it.get("accesses", ()))
                    records.log_change(conn, now, Actor.OWNER, turn_id, "create", rid, None)
                    records.log_imported_history(conn, rid, it.get("accesses", ()), turn_id)
                    arch = it.get("archived")
                    if arch is not None:
                        records.mark_archived(conn, rid, *arch, turn_id=turn_id)
                    elif id(it) in vec_of:
                        self._index.write_vector(conn, rid, vec_of[id(it)], changes)
                    created.append(rid)
                fresh = records.fetch_many(conn, created, live=True)
            self._index.add_imported([fresh[i] for i in created if i in fresh], changes.vectors)
            return ImportResult(turn_id, tuple(created), tuple(dups))
