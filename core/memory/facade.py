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
the in-memory indexes (:class:`core.recall.index.RecallIndex`) only after its transaction
committed. Rows are read and written by :mod:`core.store.records`, arguments checked by
:mod:`core.memory.validation`. The store, its lock, its index and its transactions are
:class:`core.memory.engine.MemoryEngine`'s; the owner's pin, archive and scopes are
:class:`core.memory.owner_ops.OwnerOperations`' (Memory is one); the bulk paths (imports, export,
pinned saves, re-embedding), the reminders and the checks every op makes are modules of their own
(:mod:`core.memory.bulk`, :mod:`core.memory.reminders`, :mod:`core.memory.checks`), and
:class:`Memory` names each of them.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from core import text
from core.embedding import Progress
from core.errors import MemoryOpError, NotFound, Refused
from core.memory import bulk, checks
from core.memory import prompt_section as ps
from core.memory import reminders as memory_reminders
from core.memory import validation as valid
from core.memory.bulk import ImportResult
from core.memory.owner_ops import OwnerOperations
from core.privacy import OWNER_TRUSTED, PUBLIC, AccessDenied, TurnContext
from core.recall.index import IndexChanges, RecallStatus, Scored
from core.recall.score import Hit, with_record
from core.reminders.schedule import Reminder
from core.store import accesses, records, turn_rollback
from core.store.records import GLOBAL_SCOPE, Actor, ArchivedRecord, Kind, Record, Source

log = logging.getLogger("eva.memory")

__all__ = ["Memory", "RecallStatus", "SaveResult", "SearchHit", "Similar"]

SearchHit = Hit  # memory_search's hits carry their record (one hit type: core.recall.score.Hit)


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


class Memory(OwnerOperations):
    """The owner's and the model's operations (see the module's docstring), on the store, lock,
    index and transactions of :class:`core.memory.engine.MemoryEngine`."""

    def _reinforce(self, hit_ids: Sequence[int], now: float, ctx: TurnContext) -> dict[int, Record]:
        """Reinforce what a turn was given: the access rows wait to be written with the next
        transaction (core.memory.reinforcement), their columns move now. Returns the records as they
        are with it."""
        ids = list(hit_ids)
        recs = records.fetch_many(self._storage.conn, ids)  # a failed read reinforces nothing
        self._accesses.add(now, Actor.MODEL, ctx.turn_id, ids)
        self._index.reinforced(ids, now)
        return self._accesses.overlay(recs)

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
        checks.check_mutate(ctx, actor, "memory_save")
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
                    target = records.fetch_written(conn, dup)
                    checks.log(conn, now, actor, ctx, "dedup", dup)
                    accesses.reinforce(conn, dup, now)
                    status = "reinforced"
                    if self._index.more_detailed(new_stems, dup) and not target.pinned:
                        records.reword(
                            conn,
                            dup,
                            content,
                            now,
                            source_turn=ctx.turn_id,
                            said_at=now if said_at is None else said_at,
                        )
                        self._index.write_vector(conn, dup, vec, changes)
                        status = "updated"
                    if private and not target.private and not target.pinned:
                        records.set_flag(conn, dup, "private", True)
                    rid = dup
                else:
                    if pinned:
                        records.check_pin_room(conn, scope, self.config.max_pinned)
                    rid = records.insert(
                        conn,
                        content,
                        kind,
                        importance,
                        private=private,
                        pinned=pinned,
                        scope=scope,
                        created_at=now,
                        updated_at=now,
                        source=source,
                        source_turn=ctx.turn_id,
                        said_at=said_at,
                    )
                    records.log_change(conn, now, actor, ctx.turn_id, "create", rid, None)
                    memory_reminders.moved_from(conn, rid, content, new_stems, ctx, actor, now)
                    self._index.write_vector(conn, rid, vec, changes)
                    status = "created"
                record = records.fetch_written(conn, rid)
            changes.upserts.append(record)
            self._index.apply(changes)
            try:
                similar = self._similar(content, ctx, rid, now, vec, scored)
            except Exception as e:  # the save is committed: never report it as failed
                log.warning("similar records after save #%s unavailable: %s", rid, e)
                similar = ()
            return SaveResult(rid, status, record, similar)

    # ------------------------------------------------------------------ reminders (§8.11)
    def coming_up(
        self,
        ctx: TurnContext = OWNER_TRUSTED,
        *,
        days: int = 3,
        scopes: Iterable[str] | None = None,
        now: float | None = None,
    ) -> list[Reminder]:
        """What is due around now: :func:`core.memory.reminders.coming_up`."""
        with self._lock:
            return memory_reminders.coming_up(self, ctx, days=days, scopes=scopes, now=now)

    def remind(self, record_id: object, action: str, *, until: float | None = None) -> Record:
        """The owner's answer to a reminder (done, snooze or dismiss), one transaction:
        :func:`core.memory.reminders.remind`."""
        return memory_reminders.remind(self, record_id, action, until=until)

    def _similar(
        self,
        content: str,
        ctx: TurnContext,
        exclude: int,
        now: float,
        qvec: np.ndarray | None,
        scored: Scored | None = None,
    ) -> tuple[Similar, ...]:
        ids = self._index.similar(content, ctx, exclude, qvec, scored)
        recs = self._fetch_many(ids)
        return tuple(
            Similar(r.id, r.kind, ps.human_age(now - r.updated_at), r.content)
            for r in (recs[i] for i in ids)
        )

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
        checks.check_mutate(ctx, actor, "memory_update")
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
                r = checks.live_target(conn, rid, ctx, actor)
                if actor is not Actor.OWNER and r.private and new_priv is False:
                    raise Refused("the private flag is never removed by the model; the owner can")
                checks.log(conn, now, actor, ctx, "update", rid)
                records.update(
                    conn,
                    rid,
                    now,
                    content=new_content,
                    kind=new_kind,
                    importance=new_imp,
                    private=new_priv,
                )
                if new_content is not None:
                    self._index.write_vector(conn, rid, vec, changes)
                record = records.fetch_written(conn, rid)
            changes.upserts.append(record)
            self._index.apply(changes)
            return record

    def forget(
        self,
        record_id: object,
        why: object,
        ctx: TurnContext = OWNER_TRUSTED,
        *,
        actor: Actor = Actor.MODEL,
    ) -> ArchivedRecord:
        """memory_forget: move to the archive with who/why/when; restorable for archive_ttl."""
        checks.check_mutate(ctx, actor, "memory_forget")
        rid = valid.record_id(record_id)
        why = valid.why(why)
        with self._lock:
            now = self.clock.now()
            with self._storage.transaction() as conn:
                r = checks.live_target(conn, rid, ctx, actor)
                records.archive(conn, rid, now, actor, ctx.turn_id, why)
            self._index.apply(IndexChanges(removals=[rid]))
            return ArchivedRecord(r, now, actor.value, why, now + self.config.archive_ttl_seconds)

    def recall(
        self,
        query: str,
        ctx: TurnContext,
        top_k: int | None = None,
        now: float | None = None,
        use_vectors: bool = True,
    ) -> list[Hit]:
        """Scored selection for a query (§4), core excluded, privacy and public cut applied.
        Pure: reinforces nothing."""
        with self._lock:
            self.refresh()
            now = self.clock.now() if now is None else now
            k = top_k if top_k is not None else self.config.top_k
            if ctx.public_cut:
                k = min(k, self.config.public_top_k)
            return self._index.recall(query, ctx, k, now, use_vectors, contents=self.contents)

    def search(
        self,
        query: object,
        ctx: TurnContext = OWNER_TRUSTED,
        *,
        reinforce: bool = True,
        top_k: int | None = None,
    ) -> list[Hit]:
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

    def list(
        self,
        ctx: TurnContext = OWNER_TRUSTED,
        *,
        kind: object = None,
        private: bool | None = None,
        pinned: bool | None = None,
        scope: str | None = None,
        contains: str | None = None,
        order: str = "updated",
        limit: int = 100,
        offset: int = 0,
        scopes: Sequence[str] | None = None,
    ) -> list[Record]:
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
            return records.listing(
                self._storage.conn,
                kind=kind,
                private=private,
                pinned=pinned,
                scope=scope,
                scopes=scopes,
                contains=contains,
                order=order,
                limit=limit,
                offset=offset,
            )

    # ------------------------------------------------------------------ owner operations
    def get(self, record_id: object, ctx: TurnContext = OWNER_TRUSTED) -> Record:
        """One record with its access history (live or archived) if this turn may see it.
        The owner on a trusted surface (the memory browser) sees every scope."""
        rid = valid.record_id(record_id)
        with self._lock:
            self._accesses.flush()  # its access history, every access in it
            r = records.fetch(self._storage.conn, rid, with_history=True)
        if r is None or not (ctx.can_list or checks.visible(r, ctx)):
            raise NotFound(rid)
        return r

    def visible(self, ids: Iterable[int], ctx: TurnContext) -> builtins.list[Record]:
        """Live records by id, in the given order, that this turn may see. Reinforces nothing
        (the memory-writing step shows them to the model)."""
        ids = [int(i) for i in ids][:500]
        if not ids:
            return []
        with self._lock:
            recs = records.fetch_many(self._storage.conn, ids, live=True)
        return [recs[i] for i in ids if i in recs and checks.visible(recs[i], ctx)]

    def set_private(self, record_id: object, private: bool) -> Record:
        """The owner marks or unmarks a record private (never a migration's guess)."""
        return self.update(record_id, OWNER_TRUSTED, private=bool(private), actor=Actor.OWNER)

    # ------------------------------------------------------------------ the prompt section
    def prompt_section(
        self,
        query: str,
        ctx: TurnContext,
        *,
        reinforce: bool = False,
        exclude: Iterable[int] = (),
        repeat_best: int | None = None,
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
                hits = [h for i, h in enumerate(hits) if i < best or h.id not in skip][
                    : self.config.top_k
                ]
            recs = self._fetch_many(h.id for h in hits)
            recalled = [recs[h.id] for h in hits]
            recalled += self._named_by(
                recalled[: self.config.name_links_from], ctx, skip | {h.id for h in hits}
            )
            section = ps.build(core, recalled, self.config, now, ctx.gets_withheld_footnote)
            if reinforce and section.recalled_ids:
                self._reinforce(list(section.recalled_ids), now, ctx)
            return section

    def _named_by(
        self, recalled: builtins.list[Record], ctx: TurnContext, exclude: set[int]
    ) -> builtins.list[Record]:
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
    def backfill_vectors(self, batch: int = 64, progress: Progress | None = None) -> int:
        """Embed live records that have no vector of the active model (or a vector of another
        model), ``batch`` at a time (:func:`core.memory.bulk.reembed`). Best effort: stops at
        the first failure. Returns how many were done."""
        if self.embedder is None:
            return 0
        with self._lock:
            todo = self._index.missing_vectors(self._storage.conn)
        return bulk.reembed(self, todo, batch, progress)

    # ------------------------------------------------------------------ bulk paths and rollback
    def import_records(
        self,
        items: Iterable[dict],
        *,
        source: Source = Source.INIT,
        batch: int | None = None,
        progress: Progress | None = None,
    ) -> builtins.list[int]:
        """The owner's bulk import, all or nothing: :func:`core.memory.bulk.import_records`."""
        return bulk.import_records(self, items, source=source, batch=batch, progress=progress)

    def save_pinned(
        self, items: Sequence[dict], scope: object, source: Source
    ) -> builtins.list[int]:
        """Save from dialogue (§8.5), one transaction: :func:`core.memory.bulk.save_pinned`."""
        return bulk.save_pinned(self, items, scope, source)

    def exported(
        self, *, include_archive: bool = False, private: bool = False
    ) -> tuple[builtins.list[dict], int]:
        """The owner's export (SPEC §11): :func:`core.memory.bulk.exported`."""
        return bulk.exported(self, include_archive=include_archive, private=private)

    def import_exported(
        self, items: Sequence[dict], progress: Progress | None = None
    ) -> ImportResult:
        """An export's records back (``eva import``, SPEC §11), all or nothing:
        :func:`core.memory.bulk.import_exported`."""
        return bulk.import_exported(self, items, progress)

    def model_changes(self, turn_id: str | None) -> int:
        """How many updates and forgets the model made in this turn (the per-turn cap)."""
        if not turn_id:
            return 0
        with self._lock:
            return records.model_changes(self._storage.conn, turn_id)

    def rollback_turn(
        self, turn_id: str, also: Callable[[], None] | None = None
    ) -> turn_rollback.Rollback:
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
                done = turn_rollback.rollback(conn, turn_id, self.clock.now())
                for rid in done.reworded:  # the stored vector is of the undone wording
                    self._index.write_vector(conn, rid, None, IndexChanges())
                if done.touched:  # other processes compare their index with the rows: a
                    # rollback of reinforcements alone moves no content, so it says so itself
                    self._storage.note_moved()
            self._index.reindex(self._storage.conn, done.touched)
        if done.reworded and self.embedder is not None:
            bulk.reembed(self, list(done.reworded), len(done.reworded))
        return done

    # ------------------------------------------------------------------ the owner's hands
    # (issue 13: clear all, SPEC §8.8; the pin, the archive and scopes: core.memory.owner_ops)
    def clear_scope(
        self, scope: object, *, pinned: bool = False, why: str = "cleared by the owner"
    ) -> tuple[str, builtins.list[int]]:
        """Clear all (§8.8), one transaction: :func:`core.memory.bulk.clear_scope`."""
        return bulk.clear_scope(self, scope, pinned=pinned, why=why)
