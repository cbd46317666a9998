"""The owner's hands on single records and scopes, under :class:`core.memory.facade.Memory`
(SPEC §2, §8.6; issue 13): the pin (the owner's lock, at most ``max_pinned`` per scope), the
archive (restore, list, and sleep's purge of what outlived ``archive_ttl``), and scopes (their
counts, the room left for pins, the record a save would reinforce, the move to another scope).
Each is one transaction (or none) under the store's lock, like every :class:`Memory` operation,
on :class:`core.memory.engine.MemoryEngine`'s store and index. Marking a record private is an
update and clearing a scope a bulk path: :class:`Memory` keeps those."""

from __future__ import annotations

import builtins

from core import text
from core.errors import NotFound
from core.memory import checks
from core.memory import validation as valid
from core.memory.engine import MemoryEngine
from core.privacy import OWNER_TRUSTED, AccessDenied, TurnContext
from core.recall.index import IndexChanges
from core.store import records, scopes
from core.store.records import GLOBAL_SCOPE, Actor, ArchivedRecord, Record


class OwnerOperations(MemoryEngine):
    """The owner's pin, archive and scopes (see the module's docstring); :class:`Memory` is one."""

    # ------------------------------------------------------------------ the pin, the archive (§2)
    def pin(self, record_id: object, pinned: bool = True) -> Record:
        """The owner's lock (§2). Only the owner pins or unpins."""
        rid = valid.record_id(record_id)
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                r = checks.live_target(conn, rid, OWNER_TRUSTED, Actor.OWNER)
                if r.pinned == bool(pinned):
                    return r
                if pinned:
                    records.check_pin_room(conn, r.scope, self.config.max_pinned)
                checks.log(conn, now, Actor.OWNER, OWNER_TRUSTED, "pin" if pinned else "unpin", rid)
                records.set_flag(conn, rid, "pinned", bool(pinned))
                record = records.fetch_written(conn, rid)
            self._index.apply(IndexChanges(upserts=[record]))
            return record

    def restore(self, record_id: object, ctx: TurnContext = OWNER_TRUSTED) -> Record:
        """Bring an archived record back with its id, kind, flags and history."""
        if not ctx.can_list:
            raise AccessDenied("restoring from the archive is the owner's, on a trusted surface")
        rid = valid.record_id(record_id)
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                row = records.row(conn, rid)
                if row is None or row["archived_at"] is None:
                    raise NotFound(f"{rid} in the archive")
                if row["pinned"]:  # at most max_pinned per scope (§2)
                    records.check_pin_room(conn, row["scope"], self.config.max_pinned)
                checks.log(conn, now, Actor.OWNER, ctx, "restore", rid)
                records.unarchive(conn, rid)
                record = records.fetch_written(conn, rid)
                vec = self._index.stored_vector(conn, rid)
            changes = IndexChanges(upserts=[record])
            if vec is not None:
                changes.vectors[rid] = vec
            self._index.apply(changes)
            return record

    def archived(
        self, ctx: TurnContext = OWNER_TRUSTED, limit: int = 1000
    ) -> builtins.list[ArchivedRecord]:
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

    # ------------------------------------------------------------------ the owner's hands
    # (issue 13: scopes; SPEC §2, §8.6)

    @staticmethod
    def owner_in(scope: str) -> TurnContext:
        """The owner on the trusted surface, reading ``scope`` besides global."""
        return OWNER_TRUSTED if scope == GLOBAL_SCOPE else TurnContext(persona=scope)

    def scope_stats(self) -> dict[str, tuple[int, int]]:
        """Per scope: (live records, of which pinned)."""
        with self._lock:
            return scopes.scope_stats(self._storage.conn)

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
                r = checks.live_target(conn, rid, OWNER_TRUSTED, Actor.OWNER)
                if r.scope == scope:
                    return r
                if r.pinned:
                    records.check_pin_room(conn, scope, self.config.max_pinned)
                checks.log(conn, now, Actor.OWNER, OWNER_TRUSTED, "scope", rid)
                scopes.set_scope(conn, [rid], scope)
                record = records.fetch_written(conn, rid)
            self._index.apply(IndexChanges(upserts=[record]))
            return record
