"""The memory engine's public API (SPEC §1–§6, §11).

Every layer above the core (chat, sleep, TUI, HTTP) uses :class:`Memory` and nothing below it::

    mem = Memory.open("~/.local/share/eva/memory.db")          # or clock=ManualClock() in tests
    res = mem.save("Owner's sister Anna lives in Kazan", ctx=OWNER_TRUSTED, kind="fact",
                   importance=4, private=True)
    hits = mem.search("where does Anna live", ctx=OWNER_TRUSTED)   # reinforces what it returns
    section = mem.prompt_section("Anna", ctx=OWNER_TRUSTED)        # reinforces nothing
    mem.forget(res.id, why="moved", ctx=OWNER_TRUSTED)             # to the archive
    mem.restore(res.id)                                            # same id, flags, history

Each public method is one SQLite transaction (or none), holds the store's lock, and updates
the in-memory indexes (lexical, columns, vectors) only after its transaction committed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core import prompt_section as ps
from core import text
from core.clock import Clock, SystemClock
from core.config import MemoryConfig
from core.embedding import Embedder, VectorSpace, calibrated, from_blob, to_blob
from core.errors import MemoryOpError, NotFound, Refused
from core.lexical import LexicalIndex
from core.privacy import OWNER_TRUSTED, PUBLIC, AccessDenied, TurnContext
from core.recall import Columns, Hit, select
from core.recall import score as recall_score
from core.records import GLOBAL_SCOPE, Actor, ArchivedRecord, Kind, Record, Source
from core.sleep_txn import SleepTxn
from core.storage import Storage, connect

log = logging.getLogger("eva.memory")

_COLUMNS = (
    "m.id, m.content, m.kind, m.importance, m.private, m.pinned, m.scope, m.created_at, "
    "m.updated_at, m.last_access_at, m.access_count, m.consolidated_at, m.source, "
    "m.source_turn, m.stems, m.archived_at, m.archived_by, m.archived_why, v.model AS vector_model"
)
_FROM = "memories m LEFT JOIN vectors v ON v.memory_id = m.id"


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
class SearchHit:
    record: Record
    score: float
    relevance: float
    lexical: float
    semantic: float | None


@dataclass(frozen=True)
class RecallStatus:
    """What recall runs on — for the status bar ("lexical only" when no vectors)."""

    embedder: str | None
    background: float | None
    vectors: int
    missing_vectors: int
    error: str | None

    @property
    def lexical_only(self) -> bool:
        return self.embedder is None or self.error is not None


@dataclass
class _Pending:
    """In-memory index updates to apply once the transaction has committed."""

    upserts: list[Record] = field(default_factory=list)
    removals: list[int] = field(default_factory=list)
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    vector_drops: list[int] = field(default_factory=list)


class Memory:
    def __init__(
        self,
        storage: Storage,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.storage = storage
        self.config = config or MemoryConfig()
        self.clock = clock or SystemClock()
        self.embedder = embedder
        self._lock: threading.RLock = storage._lock
        self._lexical = LexicalIndex()
        self._columns = Columns()
        self._vectors: VectorSpace | None = None
        self._embed_error: str | None = None
        self._load()

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

    def close(self) -> None:
        self.storage.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ loading and indexes
    def _load(self) -> None:
        rows = self.storage.query(f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.archived_at IS NULL")
        items = []
        for row in rows:
            r = self._record(row)
            self._columns.put(r, self.config)
            items.append((r.id, row["stems"].split()))
        self._lexical.bulk_load(items)
        self._load_vectors()

    def _load_vectors(self) -> None:
        self._vectors = None
        if self.embedder is None:
            return
        self._vectors = VectorSpace(self.embedder.dim)
        rows = self.storage.query(
            "SELECT v.memory_id, v.dim, v.vec FROM vectors v JOIN memories m ON m.id = v.memory_id "
            "WHERE m.archived_at IS NULL AND v.model = ? AND v.dim = ?",
            (self.embedder.name, self.embedder.dim),
        )
        for row in rows:
            self._vectors.set(row["memory_id"], from_blob(row["vec"], row["dim"]))

    def _apply(self, pending: _Pending) -> None:
        for rid in pending.removals:
            self._lexical.remove(rid)
            self._columns.drop(rid)
            if self._vectors is not None:
                self._vectors.remove(rid)
        for r in pending.upserts:
            self._columns.put(r, self.config)
            stems = text.stems(r.content)
            if self._lexical.docs.get(r.id) != stems:  # new or changed wording only
                self._lexical.upsert(r.id, stems)
        if self._vectors is not None:
            for rid in pending.vector_drops:
                self._vectors.remove(rid)
            for rid, vec in pending.vectors.items():
                self._vectors.set(rid, vec)

    @staticmethod
    def _record(row, accesses: Sequence[float] = ()) -> Record:
        return Record(
            id=row["id"],
            content=row["content"],
            kind=Kind(row["kind"]),
            importance=row["importance"],
            private=bool(row["private"]),
            pinned=bool(row["pinned"]),
            scope=row["scope"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            last_access_at=row["last_access_at"],
            access_count=row["access_count"],
            consolidated_at=row["consolidated_at"],
            source=Source(row["source"]),
            source_turn=row["source_turn"],
            vector_model=row["vector_model"],
            accesses=tuple(accesses),
        )

    def _row(self, conn, record_id: int):
        return conn.execute(f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.id = ?", (record_id,)).fetchone()

    def _fetch(self, conn, record_id: int, with_history: bool = False) -> Record | None:
        row = self._row(conn, record_id)
        if row is None:
            return None
        return self._record(row, self._history(conn, record_id) if with_history else ())

    @staticmethod
    def _history(conn, record_id: int) -> list[float]:
        """The access history of one record, oldest first."""
        return [a[0] for a in conn.execute(
            "SELECT at FROM accesses WHERE memory_id = ? ORDER BY at", (record_id,))]

    def _fetch_many(self, ids: Iterable[int]) -> dict[int, Record]:
        ids = [int(i) for i in ids]
        if not ids:
            return {}
        out: dict[int, Record] = {}
        for chunk in range(0, len(ids), 500):
            part = ids[chunk: chunk + 500]
            q = ",".join("?" * len(part))
            for row in self.storage.conn.execute(
                f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.id IN ({q})", part
            ):
                out[row["id"]] = self._record(row)
        return out

    # ------------------------------------------------------------------ validation
    def _content(self, content: object) -> str:
        if not isinstance(content, str):
            raise MemoryOpError("content must be text")
        content = content.strip()
        if not content:
            raise MemoryOpError("content is empty")
        if len(content) > self.config.max_chars:
            raise MemoryOpError(
                f"content is {len(content)} characters; the limit is {self.config.max_chars} — "
                "keep one topic per record and split or shorten it"
            )
        return content

    @staticmethod
    def _kind(kind: object) -> Kind:
        try:
            return Kind(str(kind).strip().lower())
        except ValueError:
            raise MemoryOpError(f"kind must be one of core, fact, event (got {kind!r})") from None

    @staticmethod
    def _importance(value: object) -> int:
        if isinstance(value, bool):
            raise MemoryOpError("importance must be a whole number from 1 to 5")
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or not 1 <= value <= 5:
            raise MemoryOpError(f"importance must be a whole number from 1 to 5 (got {value!r})")
        return value

    @staticmethod
    def _flag(value: object, name: str) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise MemoryOpError(f"{name} must be true or false (got {value!r})")

    @staticmethod
    def _id(value: object) -> int:
        if isinstance(value, bool):
            raise MemoryOpError("id must be a memory number")
        if isinstance(value, str) and value.strip().lstrip("#").isdigit():
            value = int(value.strip().lstrip("#"))
        if not isinstance(value, int) or value < 1:
            raise MemoryOpError(f"id must be a memory number (got {value!r})")
        return value

    def _scope(self, scope: object) -> str:
        if not isinstance(scope, str) or not scope.strip() or len(scope) > 100:
            raise MemoryOpError("scope must be 'global' or a persona id")
        return scope.strip()

    def _check_mutate(self, ctx: TurnContext, actor: Actor, op: str) -> None:
        if actor is Actor.MODEL and not ctx.can_mutate:
            raise AccessDenied(f"{op} is available only in the owner's turns")

    def _visible(self, r: Record | None, ctx: TurnContext) -> bool:
        return (
            r is not None
            and (ctx.sees_private or not r.private)
            and r.scope in ctx.scopes()
        )

    def _live_target(self, conn, record_id: int, ctx: TurnContext, actor: Actor) -> Record:
        """The live record an op acts on. Records the turn may not see are reported as
        non-existent, so an error never confirms that a private memory exists."""
        row = self._row(conn, record_id)
        if row is None or row["archived_at"] is not None:
            raise NotFound(record_id)
        r = self._record(row, self._history(conn, record_id))
        if actor is not Actor.OWNER and not self._visible(r, ctx):
            raise NotFound(record_id)
        return r

    @staticmethod
    def _is_archived(conn, record_id: int) -> bool:
        row = conn.execute("SELECT archived_at FROM memories WHERE id = ?", (record_id,)).fetchone()
        return row is not None and row[0] is not None

    # ------------------------------------------------------------------ change log
    @staticmethod
    def _snapshot(conn, record_id: int) -> str | None:
        row = conn.execute("SELECT * FROM memories WHERE id = ?", (record_id,)).fetchone()
        if row is None:
            return None
        return json.dumps({"row": dict(row), "accesses": Memory._history(conn, record_id)})

    def _log(self, conn, now: float, actor: Actor, ctx: TurnContext, op: str, record_id: int,
             before: str | None) -> None:
        conn.execute(
            "INSERT INTO changes (at, actor, turn_id, op, memory_id, before) VALUES (?,?,?,?,?,?)",
            (now, actor.value, ctx.turn_id, op, record_id, before),
        )

    # ------------------------------------------------------------------ embedding
    def _embed(self, contents: list[str]) -> np.ndarray | None:
        if self.embedder is None or not contents:
            return None
        try:
            m = np.asarray(self.embedder.embed(contents), dtype=np.float32)
            if m.shape != (len(contents), self.embedder.dim):
                raise ValueError(f"embedder returned shape {m.shape}")
            self._embed_error = None
            return m
        except Exception as e:  # best effort (SPEC §6): recall goes on lexically
            self._embed_error = f"{type(e).__name__}: {e}"
            log.warning("embedding failed, recall runs lexically: %s", self._embed_error)
            return None

    def _write_vector(self, conn, record_id: int, vec: np.ndarray | None, pending: _Pending) -> None:
        if vec is None or self.embedder is None:
            # the content changed and no fresh vector could be made: a stale one would lie
            conn.execute("DELETE FROM vectors WHERE memory_id = ?", (record_id,))
            pending.vector_drops.append(record_id)
            return
        conn.execute(
            "INSERT INTO vectors (memory_id, model, dim, vec) VALUES (?,?,?,?) "
            "ON CONFLICT(memory_id) DO UPDATE SET model = excluded.model, dim = excluded.dim, "
            "vec = excluded.vec",
            (record_id, self.embedder.name, self.embedder.dim, to_blob(vec)),
        )
        pending.vectors[record_id] = vec

    # ------------------------------------------------------------------ relevance
    def _background(self) -> float:
        if self.embedder is None:
            return self.config.background_cosine
        stored = self.storage.meta_get(f"background_cosine:{self.embedder.name}")
        if stored is not None:  # measured on the owner's corpus (`eva calibrate`)
            return float(stored)
        declared = getattr(self.embedder, "background", None)  # the model's own measured b
        return float(declared) if declared is not None else self.config.background_cosine

    def _query_vector(self, query: str) -> np.ndarray | None:
        if self._vectors is None or len(self._vectors) == 0:
            return None
        m = self._embed([query])
        return None if m is None else m[0]

    def _relevance(self, query: str, qvec: np.ndarray | None = None, use_vectors: bool = True
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(ids, relevance, lexical, semantic|None) of every record related to the query."""
        lk, lv = self._lexical.relevance(text.stems(query))
        if not use_vectors:
            return lk, lv.astype(np.float64), lv.astype(np.float64), None
        if qvec is None:
            qvec = self._query_vector(query)
        if qvec is None or self._vectors is None:
            return lk, lv.astype(np.float64), lv.astype(np.float64), None
        vk, cos = self._vectors.cosines(qvec)
        sem = calibrated(cos, self._background())
        nz = sem > 0
        vk, sem = vk[nz], sem[nz]
        ids = np.union1d(lk, vk)
        lex = np.zeros(len(ids))
        lex[np.searchsorted(ids, lk)] = lv
        semantic = np.zeros(len(ids))
        semantic[np.searchsorted(ids, vk)] = sem
        return ids, 0.5 * lex + 0.5 * semantic, lex, semantic

    def _scored(self, query: str, ctx: TurnContext, include_core: bool, now: float,
                use_vectors: bool = True):
        ids, rel, lex, sem = self._relevance(query, use_vectors=use_vectors)
        if len(ids) == 0:
            return ids, rel, lex, sem, rel
        ok = self._columns.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core)
        ids, rel, lex = ids[ok], rel[ok], lex[ok]
        sem = sem[ok] if sem is not None else None
        c = self._columns
        s = recall_score(rel, now - c.recalled_at[ids], c.half_life[ids], c.importance[ids],
                         c.reinforcements[ids])
        return ids, rel, lex, sem, s

    def recall(self, query: str, ctx: TurnContext, top_k: int | None = None,
               now: float | None = None, use_vectors: bool = True) -> list[Hit]:
        """Scored selection for a query (§4), core excluded, privacy and public cut applied.
        Pure: reinforces nothing."""
        with self._lock:
            now = self.clock.now() if now is None else now
            k = top_k if top_k is not None else self.config.top_k
            if ctx.public_cut:
                k = min(k, self.config.public_top_k)
            ids, rel, lex, sem, s = self._scored(query, ctx, include_core=False, now=now,
                                                 use_vectors=use_vectors)
            keep = select(ids, s, k, self.config.recall_floor)
            return [
                Hit(int(ids[i]), float(s[i]), float(rel[i]), float(lex[i]),
                    None if sem is None else float(sem[i]))
                for i in keep
            ]

    def _similar(self, content: str, ctx: TurnContext, exclude: int, now: float,
                 qvec: np.ndarray | None) -> tuple[Similar, ...]:
        ids, rel, _lex, _sem = self._relevance(content, qvec=qvec)
        if len(ids) == 0:
            return ()
        ok = self._columns.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core=True)
        ok &= ids != exclude
        ids, rel = ids[ok], rel[ok]
        keep = select(ids, rel, self.config.similar_on_save, self.config.recall_floor)
        recs = self._fetch_many(ids[keep])
        return tuple(
            Similar(r.id, r.kind, ps.human_age(now - r.updated_at), r.content)
            for r in (recs[int(ids[i])] for i in keep)
        )

    # ------------------------------------------------------------------ reinforcement
    def _reinforce(self, conn, rid: int, now: float, actor: Actor, ctx: TurnContext,
                   log_change: bool = True) -> None:
        if log_change:
            self._log(conn, now, actor, ctx, "reinforce", rid, self._snapshot(conn, rid))
        conn.execute("INSERT INTO accesses (memory_id, at) VALUES (?, ?)", (rid, now))
        conn.execute(
            "UPDATE memories SET last_access_at = ?, access_count = access_count + 1 WHERE id = ?",
            (now, rid),
        )

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
    ) -> SaveResult:
        """memory_save with dedup (§3.2). A record whose stem set has Jaccard ≥ dedup_jaccard
        with the new text (and compatible numbers) is reinforced instead of duplicated; the more
        detailed wording wins. The answer lists the most similar records this audience may see."""
        self._check_mutate(ctx, actor, "memory_save")
        content = self._content(content)
        kind = self._kind(kind)
        importance = self._importance(importance)
        private = self._flag(private, "private")
        scope = self._scope(scope) if scope is not None else GLOBAL_SCOPE
        if actor is Actor.MODEL and pinned:
            raise Refused("only the owner pins memories")
        new_stems = text.stems(content)
        new_set = frozenset(new_stems)
        vec_m = self._embed([content])
        vec = None if vec_m is None else vec_m[0]

        with self._lock:
            now = self.clock.now()
            dup = None if pinned else self._find_duplicate(new_stems, new_set, ctx, scope)
            pending = _Pending()
            with self.storage.transaction() as conn:
                if dup is not None:
                    target = self._fetch(conn, dup)
                    before = self._snapshot(conn, dup)
                    self._log(conn, now, actor, ctx, "dedup", dup, before)
                    self._reinforce(conn, dup, now, actor, ctx, log_change=False)
                    more_detailed = len(new_set) > len(set(self._lexical.docs[dup]))
                    status = "reinforced"
                    if more_detailed and not target.pinned:
                        conn.execute(
                            "UPDATE memories SET content = ?, stems = ?, updated_at = ?, "
                            "source_turn = COALESCE(?, source_turn) WHERE id = ?",
                            (content, " ".join(new_stems), now, ctx.turn_id, dup),
                        )
                        self._write_vector(conn, dup, vec, pending)
                        status = "updated"
                    if private and not target.private and not target.pinned:
                        conn.execute("UPDATE memories SET private = 1 WHERE id = ?", (dup,))
                    rid = dup
                else:
                    if pinned:
                        self._check_pin_room(conn, scope)
                    cur = conn.execute(
                        "INSERT INTO memories (content, kind, importance, private, pinned, scope, "
                        "created_at, updated_at, source, source_turn, stems) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                        (content, kind.value, importance, int(private), int(pinned), scope, now,
                         now, source.value, ctx.turn_id, " ".join(new_stems)),
                    )
                    rid = cur.lastrowid
                    self._log(conn, now, actor, ctx, "create", rid, None)
                    self._write_vector(conn, rid, vec, pending)
                    status = "created"
                record = self._fetch(conn, rid)
            pending.upserts.append(record)
            self._apply(pending)
            try:
                similar = self._similar(content, ctx, rid, now, vec)
            except Exception as e:  # the save is committed: never report it as failed
                log.warning("similar records after save #%s unavailable: %s", rid, e)
                similar = ()
            return SaveResult(rid, status, record, similar)

    def _find_duplicate(self, new_stems: list[str], new_set: frozenset[str], ctx: TurnContext,
                        scope: str) -> int | None:
        ids, raw = self._lexical.scores(new_stems)
        if len(ids) == 0:
            return None
        ok = self._columns.visible_mask(ids, ctx.scopes() + (scope,), ctx.sees_private, True)
        ids, raw = ids[ok], raw[ok]
        order = np.argsort(-raw)[:50]
        new_nums = {s for s in new_set if any(ch.isdigit() for ch in s)}
        best, best_j = None, 0.0
        for i in order:
            rid = int(ids[i])
            old = frozenset(self._lexical.docs[rid])
            j = text.jaccard(new_set, old)
            if j < self.config.dedup_jaccard or j <= best_j:
                continue
            old_nums = {s for s in old if any(ch.isdigit() for ch in s)}
            if not (new_nums <= old_nums or old_nums <= new_nums):
                continue  # "3 pm" and "5 pm" are different memories
            best, best_j = rid, j
        return best

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
        rid = self._id(record_id)
        new_content = self._content(content) if content is not None else None
        new_kind = self._kind(kind) if kind is not None else None
        new_imp = self._importance(importance) if importance is not None else None
        new_priv = self._flag(private, "private") if private is not None else None
        if new_content is None and new_kind is None and new_imp is None and new_priv is None:
            raise MemoryOpError("nothing to change: give content, kind, importance or private")
        vec = None
        if new_content is not None:
            m = self._embed([new_content])
            vec = None if m is None else m[0]
        with self._lock:
            now = self.clock.now()
            pending = _Pending()
            with self.storage.transaction() as conn:
                r = self._live_target(conn, rid, ctx, actor)
                if actor is not Actor.OWNER and r.pinned:
                    raise Refused(f"memory #{rid} is pinned by the owner; only the owner changes it")
                if actor is not Actor.OWNER and r.private and new_priv is False:
                    raise Refused("the private flag is never removed by the model; the owner can")
                self._log(conn, now, actor, ctx, "update", rid, self._snapshot(conn, rid))
                sets, args = ["updated_at = ?"], [now]
                if new_content is not None:
                    sets += ["content = ?", "stems = ?"]
                    args += [new_content, " ".join(text.stems(new_content))]
                if new_kind is not None:
                    sets.append("kind = ?")
                    args.append(new_kind.value)
                if new_imp is not None:
                    sets.append("importance = ?")
                    args.append(new_imp)
                if new_priv is not None:
                    sets.append("private = ?")
                    args.append(int(new_priv))
                conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", (*args, rid))
                if new_content is not None:
                    self._write_vector(conn, rid, vec, pending)
                record = self._fetch(conn, rid)
            pending.upserts.append(record)
            self._apply(pending)
            return record

    def forget(self, record_id: object, why: object, ctx: TurnContext = OWNER_TRUSTED, *,
               actor: Actor = Actor.MODEL) -> ArchivedRecord:
        """memory_forget: move to the archive with who/why/when; restorable for archive_ttl."""
        self._check_mutate(ctx, actor, "memory_forget")
        rid = self._id(record_id)
        if not isinstance(why, str) or not why.strip():
            raise MemoryOpError("say why the memory is forgotten")
        why = why.strip()[:500]
        with self._lock:
            now = self.clock.now()
            with self.storage.transaction() as conn:
                r = self._live_target(conn, rid, ctx, actor)
                if actor is not Actor.OWNER and r.pinned:
                    raise Refused(f"memory #{rid} is pinned by the owner; only the owner changes it")
                self._log(conn, now, actor, ctx, "forget", rid, self._snapshot(conn, rid))
                conn.execute(
                    "UPDATE memories SET archived_at = ?, archived_by = ?, archived_why = ? "
                    "WHERE id = ?",
                    (now, actor.value, why, rid),
                )
            self._apply(_Pending(removals=[rid]))
            return ArchivedRecord(r, now, actor.value, why, now + self.config.archive_ttl_seconds)

    def search(self, query: object, ctx: TurnContext = OWNER_TRUSTED, *, reinforce: bool = True,
               top_k: int | None = None) -> list[SearchHit]:
        """memory_search: scored recall (§4) that reinforces what it returns; never core."""
        if not isinstance(query, str) or not query.strip():
            raise MemoryOpError("query is empty")
        query = query.strip()[:2000]
        with self._lock:
            now = self.clock.now()
            hits = self.recall(query, ctx, top_k=top_k, now=now)
            if reinforce and hits:
                with self.storage.transaction() as conn:
                    for h in hits:
                        self._reinforce(conn, h.id, now, Actor.MODEL, ctx)
                    # read back inside the transaction: a failed read after COMMIT would leave
                    # the in-memory index behind the file
                    recs = self._fetch_many(h.id for h in hits)
            else:
                recs = self._fetch_many(h.id for h in hits)
            if reinforce:
                self._apply(_Pending(upserts=list(recs.values())))
            return [SearchHit(recs[h.id], h.score, h.relevance, h.lexical, h.semantic) for h in hits]

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
        orders = {"updated": "m.updated_at DESC", "created": "m.created_at DESC",
                  "importance": "m.importance DESC, m.updated_at DESC", "id": "m.id"}
        if order not in orders:
            raise MemoryOpError(f"order must be one of {', '.join(orders)}")
        if not isinstance(limit, int) or not 1 <= limit <= 10_000 or offset < 0:
            raise MemoryOpError("limit must be 1..10000 and offset >= 0")
        where, args = ["m.archived_at IS NULL"], []
        if kind is not None:
            where.append("m.kind = ?")
            args.append(self._kind(kind).value)
        if private is not None:
            where.append("m.private = ?")
            args.append(int(private))
        if pinned is not None:
            where.append("m.pinned = ?")
            args.append(int(pinned))
        if scope is not None:
            where.append("m.scope = ?")
            args.append(scope)
        if scopes is not None:
            scopes = list(scopes)
            where.append(f"m.scope IN ({','.join('?' * len(scopes)) or 'NULL'})")
            args.extend(scopes)
        if contains:
            where.append("m.content LIKE ?")
            args.append(f"%{contains}%")
        rows = self.storage.query(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE {' AND '.join(where)} "
            f"ORDER BY {orders[order]} LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return [self._record(r) for r in rows]

    # ------------------------------------------------------------------ owner operations
    def get(self, record_id: object, ctx: TurnContext = OWNER_TRUSTED) -> Record:
        """One record with its access history (live or archived) if this turn may see it.
        The owner on a trusted surface (the memory browser) sees every scope."""
        rid = self._id(record_id)
        with self._lock:
            r = self._fetch(self.storage.conn, rid, with_history=True)
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
            rows = self.storage.conn.execute(
                f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.archived_at IS NULL AND m.id IN "
                f"({','.join('?' * len(ids))})", ids).fetchall()
        recs = {r.id: r for r in map(self._record, rows)}
        return [recs[i] for i in ids if i in recs and self._visible(recs[i], ctx)]

    def _check_pin_room(self, conn, scope: str) -> None:
        n = conn.execute(
            "SELECT COUNT(*) FROM memories WHERE pinned = 1 AND archived_at IS NULL AND scope = ?",
            (scope,),
        ).fetchone()[0]
        if n >= self.config.max_pinned:
            raise Refused(
                f"scope {scope!r} already has {n} pinned memories (the limit is "
                f"{self.config.max_pinned}); unpin one first"
            )

    def pin(self, record_id: object, pinned: bool = True) -> Record:
        """The owner's lock (§2). Only the owner pins or unpins."""
        rid = self._id(record_id)
        with self._lock:
            now = self.clock.now()
            with self.storage.transaction() as conn:
                r = self._live_target(conn, rid, OWNER_TRUSTED, Actor.OWNER)
                if r.pinned == bool(pinned):
                    return r
                if pinned:
                    self._check_pin_room(conn, r.scope)
                self._log(conn, now, Actor.OWNER, OWNER_TRUSTED, "pin" if pinned else "unpin",
                          rid, self._snapshot(conn, rid))
                conn.execute("UPDATE memories SET pinned = ? WHERE id = ?", (int(pinned), rid))
                record = self._fetch(conn, rid)
            self._apply(_Pending(upserts=[record]))
            return record

    def set_private(self, record_id: object, private: bool) -> Record:
        """The owner marks or unmarks a record private (never a migration's guess)."""
        return self.update(record_id, OWNER_TRUSTED, private=bool(private), actor=Actor.OWNER)

    def restore(self, record_id: object, ctx: TurnContext = OWNER_TRUSTED) -> Record:
        """Bring an archived record back with its id, kind, flags and history."""
        if not ctx.can_list:
            raise AccessDenied("restoring from the archive is the owner's, on a trusted surface")
        rid = self._id(record_id)
        with self._lock:
            now = self.clock.now()
            with self.storage.transaction() as conn:
                row = conn.execute(
                    "SELECT archived_at, pinned, scope FROM memories WHERE id = ?",
                    (rid,)).fetchone()
                if row is None or row[0] is None:
                    raise NotFound(f"{rid} in the archive")
                if row[1]:
                    self._check_pin_room(conn, row[2])  # at most max_pinned per scope (§2)
                self._log(conn, now, Actor.OWNER, ctx, "restore", rid, self._snapshot(conn, rid))
                conn.execute(
                    "UPDATE memories SET archived_at = NULL, archived_by = NULL, "
                    "archived_why = NULL WHERE id = ?", (rid,))
                record = self._fetch(conn, rid)
                vrow = conn.execute(
                    "SELECT model, dim, vec FROM vectors WHERE memory_id = ?", (rid,)).fetchone()
            pending = _Pending(upserts=[record])
            if (vrow is not None and self.embedder is not None
                    and vrow["model"] == self.embedder.name and vrow["dim"] == self.embedder.dim):
                pending.vectors[rid] = from_blob(vrow["vec"], vrow["dim"])
            self._apply(pending)
            return record

    def archive(self, ctx: TurnContext = OWNER_TRUSTED, limit: int = 1000) -> list[ArchivedRecord]:
        """Archived records, newest first, with who/why/when and the moment of purge."""
        if not ctx.can_list:
            raise AccessDenied("the archive is the owner's, on a trusted surface")
        rows = self.storage.query(
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.archived_at IS NOT NULL "
            "ORDER BY m.archived_at DESC LIMIT ?", (limit,))
        ttl = self.config.archive_ttl_seconds
        return [
            ArchivedRecord(self._record(r), r["archived_at"], r["archived_by"],
                           r["archived_why"] or "", r["archived_at"] + ttl)
            for r in rows
        ]

    def purge_archive(self) -> int:
        """Delete archive entries older than archive_ttl (sleep's hygiene). Returns the count."""
        with self._lock:
            cutoff = self.clock.now() - self.config.archive_ttl_seconds
            with self.storage.transaction() as conn:
                cur = conn.execute(
                    "DELETE FROM memories WHERE archived_at IS NOT NULL AND archived_at < ?",
                    (cutoff,))
                return cur.rowcount

    # ------------------------------------------------------------------ the prompt section
    def _core_records(self, ctx: TurnContext) -> list[Record]:
        """Core and pinned records this turn may see. Found through the in-memory columns (a
        SQL scan of every live row would cost ~25 ms at 100k records), then read by id."""
        c = self._columns
        ids = np.flatnonzero(c.alive & (c.core | c.pinned))
        ids = ids[c.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core=True)]
        recs = self._fetch_many(ids)
        return [recs[int(i)] for i in ids if int(i) in recs]

    def prompt_section(self, query: str, ctx: TurnContext, *, reinforce: bool = False,
                       exclude: Iterable[int] = ()) -> ps.PromptSection:
        """The memory section a turn carries (§5). Passive weaving reinforces nothing.
        ``exclude``: records the conversation already shows (recalled in earlier messages of
        the live window) are not repeated."""
        with self._lock:
            now = self.clock.now()
            core = self._core_records(ctx)
            skip = set(exclude)
            hits = []
            if query and query.strip():
                hits = self.recall(query, ctx, top_k=self.config.top_k + len(skip), now=now)
                hits = [h for h in hits if h.id not in skip][: self.config.top_k]
            recs = self._fetch_many(h.id for h in hits)
            recalled = [recs[h.id] for h in hits]
            section = ps.build(core, recalled, self.config, now, ctx.gets_withheld_footnote)
            if reinforce and section.recalled_ids:
                with self.storage.transaction() as conn:
                    for rid in section.recalled_ids:
                        self._reinforce(conn, rid, now, Actor.MODEL, ctx)
                    fresh = self._fetch_many(section.recalled_ids)  # inside: see search()
                self._apply(_Pending(upserts=list(fresh.values())))
            return section

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
            todo = [r[0] for r in self.storage.query(
                "SELECT m.id FROM memories m LEFT JOIN vectors v ON v.memory_id = m.id "
                "WHERE m.archived_at IS NULL AND (v.model IS NULL OR v.model != ? OR v.dim != ?) "
                "ORDER BY m.id", (self.embedder.name, self.embedder.dim))]
        done = 0
        for start in range(0, len(todo), batch):
            ids = todo[start: start + batch]
            with self._lock:
                recs = self._fetch_many(ids)
            ids = [i for i in ids if i in recs]
            m = self._embed([recs[i].content for i in ids])
            if m is None:
                break
            with self._lock:
                pending = _Pending()
                with self.storage.transaction() as conn:
                    for i, vec in zip(ids, m, strict=True):
                        if conn.execute("SELECT content FROM memories WHERE id = ?",
                                        (i,)).fetchone()[0] != recs[i].content:
                            continue  # changed meanwhile; the next backfill takes it
                        self._write_vector(conn, i, vec, pending)
                self._apply(pending)
            done += len(ids)
            if progress:
                progress(done, len(todo))
        return done

    def set_background(self, value: float) -> None:
        """Store the calibrated background cosine ``b`` of the active embedder."""
        if self.embedder is None:
            raise MemoryOpError("no embedder is active")
        if not -1 <= value < 1:
            raise MemoryOpError("background cosine must be in [-1, 1)")
        self.storage.meta_set(f"background_cosine:{self.embedder.name}", repr(float(value)))

    def status(self) -> RecallStatus:
        with self._lock:
            n_live = len(self._lexical)
            n_vec = len(self._vectors) if self._vectors is not None else 0
            return RecallStatus(
                embedder=self.embedder.name if self.embedder else None,
                background=self._background() if self.embedder else None,
                vectors=n_vec,
                missing_vectors=(n_live - n_vec) if self.embedder else n_live,
                error=self._embed_error,
            )

    def count(self, archived: bool = False) -> int:
        q = "IS NOT NULL" if archived else "IS NULL"
        return self.storage.query(f"SELECT COUNT(*) FROM memories WHERE archived_at {q}")[0][0]

    # ------------------------------------------------------------------ bulk import and rollback
    def import_records(self, items: Iterable[dict], *, source: Source = Source.INIT,
                       batch: int = 5000) -> list[int]:
        """The owner's bulk import (initial memories, migrations from another tool, benchmarks):
        no dedup, one transaction per batch, indexes updated once at the end. Each item has
        ``content`` and optionally kind, importance, private, pinned, scope, created_at."""
        ids: list[int] = []
        items = list(items)
        vectors = None
        if self.embedder is not None and items:
            vectors = self._embed([str(it.get("content", "")).strip() for it in items])
        with self._lock:
            pending = _Pending()
            for start in range(0, len(items), batch):
                chunk = items[start: start + batch]
                with self.storage.transaction() as conn:
                    for offset, it in enumerate(chunk):
                        content = self._content(it.get("content"))
                        kind = self._kind(it.get("kind", "fact"))
                        imp = self._importance(it.get("importance", 3))
                        priv = self._flag(it.get("private", False), "private")
                        pin = self._flag(it.get("pinned", False), "pinned")
                        scope = self._scope(it.get("scope", GLOBAL_SCOPE))
                        at = float(it.get("created_at", self.clock.now()))
                        if pin:
                            self._check_pin_room(conn, scope)
                        cur = conn.execute(
                            "INSERT INTO memories (content, kind, importance, private, pinned, "
                            "scope, created_at, updated_at, source, source_turn, stems) "
                            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                            (content, kind.value, imp, int(priv), int(pin), scope, at, at,
                             source.value, None, " ".join(text.stems(content))),
                        )
                        rid = cur.lastrowid
                        ids.append(rid)
                        if vectors is not None:
                            self._write_vector(conn, rid, vectors[start + offset], pending)
            recs = self._fetch_many(ids)
            for rid in ids:
                self._columns.put(recs[rid], self.config)
            if len(ids) > self._lexical.min_merge:
                self._lexical.bulk_load(
                    [(k, v) for k, v in self._lexical.docs.items()]
                    + [(rid, text.stems(recs[rid].content)) for rid in ids])
            else:
                for rid in ids:
                    self._lexical.upsert(rid, text.stems(recs[rid].content))
            if self._vectors is not None:
                for rid, vec in pending.vectors.items():
                    self._vectors.set(rid, vec)
            return ids

    def turn_changes(self, turn_id: str) -> list[dict]:
        """The memory writes a turn made, oldest first (op, memory id, actor, when)."""
        rows = self.storage.query(
            "SELECT id, at, actor, op, memory_id FROM changes WHERE turn_id = ? ORDER BY id",
            (turn_id,))
        return [dict(r) for r in rows]

    def rollback_turn(self, turn_id: str) -> list[int]:
        """Undo every memory write of one turn (regenerate, SPEC §8.4), newest first, in one
        transaction. Records pinned by the owner are left as they are. Returns touched ids."""
        if not turn_id:
            raise MemoryOpError("turn id is empty")
        with self._lock:
            touched: list[int] = []
            with self.storage.transaction() as conn:
                changes = conn.execute(
                    "SELECT id, op, memory_id, before FROM changes WHERE turn_id = ? "
                    "ORDER BY id DESC", (turn_id,)).fetchall()
                for ch in changes:
                    rid = ch["memory_id"]
                    cur = conn.execute("SELECT pinned FROM memories WHERE id = ?", (rid,)).fetchone()
                    if cur is not None and cur["pinned"]:
                        continue  # the owner's lock: regenerate never touches a pinned record
                    if ch["before"] is None:  # created by this turn
                        conn.execute("DELETE FROM memories WHERE id = ?", (rid,))
                    else:
                        snap = json.loads(ch["before"])
                        row = snap["row"]
                        cols = [c for c in row if c != "id"]
                        conn.execute(
                            f"UPDATE memories SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                            (*[row[c] for c in cols], rid))
                        conn.execute("DELETE FROM accesses WHERE memory_id = ?", (rid,))
                        conn.executemany("INSERT INTO accesses (memory_id, at) VALUES (?, ?)",
                                         [(rid, at) for at in snap["accesses"]])
                    conn.execute("DELETE FROM changes WHERE id = ?", (ch["id"],))
                    touched.append(rid)
            self._reindex(set(touched))
            return touched

    def _reindex(self, ids: set[int]) -> None:
        """Bring the in-memory indexes of these records in line with the store."""
        recs = self._fetch_many(ids)
        pending = _Pending()
        for rid in ids:
            r = recs.get(rid)
            archived = r is None or self._is_archived(self.storage.conn, rid)
            if archived:
                pending.removals.append(rid)
            else:
                pending.upserts.append(r)
        self._apply(pending)
        if self._vectors is not None:
            for r in pending.upserts:
                row = self.storage.query(
                    "SELECT model, dim, vec FROM vectors WHERE memory_id = ?", (r.id,))
                if row and row[0]["model"] == self.embedder.name and row[0]["dim"] == self.embedder.dim:
                    self._vectors.set(r.id, from_blob(row[0]["vec"], row[0]["dim"]))
                else:
                    self._vectors.remove(r.id)

    # ------------------------------------------------------------------ sleep (SPEC §7)
    # Sleep is the owner's own process: it reads the whole live corpus (private records take
    # part; nothing leaves the machine), plans outside any lock, and applies each phase in one
    # transaction — ``with mem.sleep_transaction(turn_id) as tx:`` and ``with tx.op():`` around
    # every op below. The night's policy (max_ops, max_forget, keep_recent, core never deleted,
    # ids of the cluster under review …) is sleep's own (core.sleep_apply); these methods keep
    # the record-level rules themselves: pinned records are untouchable, the private flag is
    # never removed (a merge with any private member is private), and an op whose target
    # changed after the plan was made (``sleep_versions`` then, compared inside the
    # transaction) is refused — so a write by the owner or a tool during sleep is never lost.
    # Every change is logged with actor "sleep" and the night's turn id, so
    # ``rollback_turn("sleep:<run id>")`` undoes a whole night.

    _SLEEP_VERSION = ("content", "kind", "importance", "private", "pinned", "updated_at",
                      "consolidated_at", "archived_at", "access_count")

    def sleep_corpus(self) -> list[Record]:
        """Every live record, of every scope, oldest id first (without access histories)."""
        with self._lock:
            rows = self.storage.query(
                f"SELECT {_COLUMNS} FROM {_FROM} WHERE m.archived_at IS NULL ORDER BY m.id")
        return [self._record(r) for r in rows]

    def sleep_stems(self) -> dict[int, frozenset[str]]:
        """The stem set of every live record (what the lexical index holds)."""
        with self._lock:
            return {rid: frozenset(s) for rid, s in self._lexical.docs.items()}

    def sleep_vectors(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """(ids, unit-length rows, background cosine b) of the active model's vectors of live
        records — a copy, for clustering; None without an embedder or vectors."""
        with self._lock:
            vs = self._vectors
            if vs is None or len(vs) == 0:
                return None
            n = vs._n
            alive = vs._alive[:n]
            return vs._keys[:n][alive].copy(), vs._mat[:n][alive].copy(), self._background()

    def sleep_embed(self, contents: list[str]) -> np.ndarray | None:
        """Vectors for texts sleep is about to write (best effort: None when embedding fails;
        the record then has no vector until the next night's hygiene)."""
        return self._embed(list(contents))

    def _sleep_version_rows(self, conn, ids: Iterable[int]) -> dict[int, tuple]:
        ids = sorted({int(i) for i in ids})
        out: dict[int, tuple] = {}
        cols = ", ".join(self._SLEEP_VERSION)
        for start in range(0, len(ids), 500):
            part = ids[start: start + 500]
            q = ",".join("?" * len(part))
            for row in conn.execute(f"SELECT id, {cols} FROM memories WHERE id IN ({q})", part):
                out[row["id"]] = tuple(row[c] for c in self._SLEEP_VERSION)
        return out

    def sleep_versions(self, ids: Iterable[int]) -> dict[int, tuple]:
        """What these records look like now — taken when a plan is made, compared when it is
        applied. Unknown ids are absent."""
        with self._lock:
            return self._sleep_version_rows(self.storage.conn, ids)

    @contextmanager
    def sleep_transaction(self, turn_id: str) -> Iterator[SleepTxn]:
        """One phase of sleep: one transaction (holding the store's lock), indexes of the
        touched records refreshed after it ends (committed or rolled back)."""
        with self._lock:
            tx: SleepTxn | None = None
            try:
                with self.storage.transaction() as conn:
                    tx = SleepTxn(conn, self.clock.now(), turn_id)
                    yield tx
            finally:
                if tx is not None and tx.touched:
                    self._reindex(set(tx.touched))

    def _sleep_targets(self, tx: SleepTxn, ids: Sequence[int], versions: dict[int, tuple], *,
                       touch: bool = True, strict: bool = False) -> dict[int, Record]:
        """The live records an op names, exactly as they were when the plan was made.
        ``strict`` also compares reinforcements (a record recalled meanwhile is no longer a
        forgetting candidate); ``touch=False`` reads pinned records without refusing."""
        now_rows = self._sleep_version_rows(tx.conn, ids)
        out: dict[int, Record] = {}
        skip = () if strict else ("access_count",)
        keep = [i for i, c in enumerate(self._SLEEP_VERSION) if c not in skip]
        for rid in ids:
            cur = now_rows.get(rid)
            if cur is None or cur[self._SLEEP_VERSION.index("archived_at")] is not None:
                raise Refused(f"#{rid} no longer exists (forgotten or merged after the plan)")
            planned = versions.get(rid)
            if planned is None:
                raise Refused(f"#{rid} was not part of the plan")
            if [cur[i] for i in keep] != [planned[i] for i in keep]:
                raise Refused(
                    f"#{rid} changed after the plan was made (a write during sleep or an earlier "
                    "op of this night); the plan for it is stale")
            r = self._fetch(tx.conn, rid, with_history=True)
            if touch and r.pinned:
                raise Refused(f"#{rid} is pinned by the owner; sleep never touches it")
            out[rid] = r
        return out

    def _sleep_log(self, tx: SleepTxn, op: str, rid: int, before: str | None) -> None:
        self._log(tx.conn, tx.now, Actor.SLEEP, OWNER_TRUSTED.with_turn(tx.turn_id), op, rid,
                  before)

    def _sleep_vector(self, tx: SleepTxn, rid: int, vec: np.ndarray | None) -> None:
        self._write_vector(tx.conn, rid, vec, _Pending())

    def _sleep_archive(self, tx: SleepTxn, rid: int, why: str) -> None:
        self._sleep_log(tx, "forget", rid, self._snapshot(tx.conn, rid))
        tx.conn.execute(
            "UPDATE memories SET archived_at = ?, archived_by = ?, archived_why = ? WHERE id = ?",
            (tx.now, Actor.SLEEP.value, why.strip()[:500] or "sleep", rid))
        tx.touched.add(rid)

    @staticmethod
    def _strongest_kind(kinds: Iterable[Kind]) -> Kind:
        kinds = set(kinds)
        for k in (Kind.CORE, Kind.FACT, Kind.EVENT):
            if k in kinds:
                return k
        return Kind.FACT

    def sleep_merge(self, tx: SleepTxn, ids: Sequence[int], content: object, why: str,
                    versions: dict[int, tuple], vec: np.ndarray | None = None) -> Record:
        """Merge duplicates into the most reinforced member (its id survives). The survivor
        gets ``content``, the strongest kind, the highest importance, the earliest creation,
        private if any member was, and the sum of all access histories (spaced repetition is
        not reset); the others go to the archive ("merged into #id: why"), restorable."""
        content = self._content(content)
        ids = list(dict.fromkeys(int(i) for i in ids))
        if len(ids) < 2:
            raise MemoryOpError("a merge needs at least two records")
        recs = self._sleep_targets(tx, ids, versions)
        if len({r.scope for r in recs.values()}) > 1:
            raise Refused("records of different scopes are never merged")
        survivor = max(recs.values(), key=lambda r: (r.access_count, -r.created_at, -r.id))
        sid = survivor.id
        others = [rid for rid in ids if rid != sid]
        self._sleep_log(tx, "merge", sid, self._snapshot(tx.conn, sid))
        for rid in others:
            tx.conn.execute("INSERT INTO accesses (memory_id, at) SELECT ?, at FROM accesses "
                            "WHERE memory_id = ?", (sid, rid))
        n, last = tx.conn.execute(
            "SELECT COUNT(*), MAX(at) FROM accesses WHERE memory_id = ?", (sid,)).fetchone()
        members = list(recs.values())
        tx.conn.execute(
            "UPDATE memories SET content = ?, stems = ?, kind = ?, importance = ?, private = ?, "
            "created_at = ?, updated_at = ?, consolidated_at = ?, last_access_at = ?, "
            "access_count = ? WHERE id = ?",
            (content, " ".join(text.stems(content)),
             self._strongest_kind(r.kind for r in members).value,
             max(r.importance for r in members), int(any(r.private for r in members)),
             min(r.created_at for r in members), max(r.updated_at for r in members), tx.now,
             last, n, sid))
        self._sleep_vector(tx, sid, vec)
        for rid in others:
            self._sleep_archive(tx, rid, f"merged into #{sid}: {why}")
        tx.touched.update(ids)
        return self._fetch(tx.conn, sid)

    def sleep_rewrite(self, tx: SleepTxn, record_id: int, content: object, why: str,
                      versions: dict[int, tuple], vec: np.ndarray | None = None) -> Record:
        """Replace a record's wording (e.g. "lived in Kazan until 2024"); kind, flags, history
        and the age of the knowledge (updated_at) stay."""
        content = self._content(content)
        rid = int(record_id)
        self._sleep_targets(tx, [rid], versions)
        self._sleep_log(tx, "update", rid, self._snapshot(tx.conn, rid))
        tx.conn.execute(
            "UPDATE memories SET content = ?, stems = ?, consolidated_at = ? WHERE id = ?",
            (content, " ".join(text.stems(content)), tx.now, rid))
        self._sleep_vector(tx, rid, vec)
        tx.touched.add(rid)
        return self._fetch(tx.conn, rid)

    def _sleep_insert(self, tx: SleepTxn, content: str, kind: Kind, importance: int,
                      private: bool, scope: str, created_at: float, updated_at: float,
                      vec: np.ndarray | None, history: Sequence[float] = ()) -> int:
        cur = tx.conn.execute(
            "INSERT INTO memories (content, kind, importance, private, pinned, scope, created_at, "
            "updated_at, consolidated_at, source, source_turn, stems) "
            "VALUES (?,?,?,?,0,?,?,?,?,?,?,?)",
            (content, kind.value, importance, int(private), scope, created_at, updated_at,
             tx.now, Source.SLEEP.value, tx.turn_id, " ".join(text.stems(content))))
        rid = cur.lastrowid
        if history:
            tx.conn.executemany("INSERT INTO accesses (memory_id, at) VALUES (?, ?)",
                                [(rid, at) for at in history])
            tx.conn.execute("UPDATE memories SET last_access_at = ?, access_count = ? WHERE id = ?",
                            (max(history), len(history), rid))
        self._sleep_log(tx, "create", rid, None)
        self._sleep_vector(tx, rid, vec)
        tx.touched.add(rid)
        return rid

    def sleep_split(self, tx: SleepTxn, record_id: int, parts: Sequence[object], why: str,
                    versions: dict[int, tuple],
                    vecs: Sequence[np.ndarray | None] | None = None) -> list[int]:
        """Split a glued record: it keeps its id with the first part; each further part is a
        new record with the same kind, importance, flags, scope, creation and history."""
        parts = [self._content(p) for p in parts]
        if len(parts) < 2:
            raise MemoryOpError("a split needs at least two parts")
        vecs = list(vecs) if vecs is not None else [None] * len(parts)
        rid = int(record_id)
        r = self._sleep_targets(tx, [rid], versions)[rid]
        self._sleep_log(tx, "update", rid, self._snapshot(tx.conn, rid))
        tx.conn.execute(
            "UPDATE memories SET content = ?, stems = ?, consolidated_at = ? WHERE id = ?",
            (parts[0], " ".join(text.stems(parts[0])), tx.now, rid))
        self._sleep_vector(tx, rid, vecs[0])
        tx.touched.add(rid)
        out = [rid]
        for part, vec in zip(parts[1:], vecs[1:], strict=True):
            out.append(self._sleep_insert(tx, part, r.kind, r.importance, r.private, r.scope,
                                          r.created_at, r.updated_at, vec, r.accesses))
        return out

    def sleep_derive(self, tx: SleepTxn, ids: Sequence[int], content: object, why: str,
                     versions: dict[int, tuple], *, kind: object = "fact",
                     importance: object = None, vec: np.ndarray | None = None) -> Record:
        """A new record derived from a run of similar events ("goes swimming on Sundays").
        The events stay as they are (they fade on their own); the new record is private if
        any source is. Sources may be pinned: they are only read."""
        content = self._content(content)
        kind = self._kind(kind)
        ids = list(dict.fromkeys(int(i) for i in ids))
        if not ids:
            raise MemoryOpError("a derived record needs its sources")
        recs = self._sleep_targets(tx, ids, versions, touch=False)
        scopes = {r.scope for r in recs.values()}
        if len(scopes) > 1:
            raise Refused("sources of different scopes are never combined")
        imp = (self._importance(importance) if importance is not None
               else max(r.importance for r in recs.values()))
        rid = self._sleep_insert(tx, content, kind, imp, any(r.private for r in recs.values()),
                                 scopes.pop(), tx.now, tx.now, vec)
        return self._fetch(tx.conn, rid)

    def sleep_set(self, tx: SleepTxn, record_id: int, versions: dict[int, tuple], *,
                  kind: object = None, importance: object = None) -> Record:
        """Re-kind or re-weigh a record (promote to core, demote dead core, recalibrate
        importance). The record's age and its review state are not touched."""
        rid = int(record_id)
        new_kind = self._kind(kind) if kind is not None else None
        new_imp = self._importance(importance) if importance is not None else None
        if new_kind is None and new_imp is None:
            raise MemoryOpError("nothing to change: give kind or importance")
        r = self._sleep_targets(tx, [rid], versions)[rid]
        self._sleep_log(tx, "update", rid, self._snapshot(tx.conn, rid))
        tx.conn.execute("UPDATE memories SET kind = ?, importance = ? WHERE id = ?",
                        ((new_kind or r.kind).value, new_imp or r.importance, rid))
        tx.touched.add(rid)
        return self._fetch(tx.conn, rid)

    def sleep_forget(self, tx: SleepTxn, record_id: int, why: str,
                     versions: dict[int, tuple]) -> None:
        """Move a record to the archive (by sleep, with why); restorable for archive_ttl. A
        record recalled after the plan was made is refused (it is no longer forgettable)."""
        if not isinstance(why, str) or not why.strip():
            raise MemoryOpError("say why the memory is forgotten")
        rid = int(record_id)
        self._sleep_targets(tx, [rid], versions, strict=True)
        self._sleep_archive(tx, rid, why)

    def sleep_mark_consolidated(self, tx: SleepTxn, ids: Iterable[int],
                                versions: dict[int, tuple]) -> list[int]:
        """Mark reviewed records settled (consolidated_at = now) — only those still live and
        unchanged since the plan. Returns the ids marked."""
        ids = sorted({int(i) for i in ids})
        cur = self._sleep_version_rows(tx.conn, ids)
        marked = [rid for rid in ids if rid in cur and rid in versions and cur[rid] == versions[rid]]
        tx.conn.executemany("UPDATE memories SET consolidated_at = ? WHERE id = ?",
                            [(tx.now, rid) for rid in marked])
        return marked

    def purge_archive_before(self, cutoff: float, *, dry_run: bool = False) -> int:
        """Delete archive entries archived before ``cutoff`` (sleep's hygiene with the sleep
        config's TTL). With ``dry_run`` only counts them."""
        with self._lock:
            if dry_run:
                return self.storage.query(
                    "SELECT COUNT(*) FROM memories WHERE archived_at IS NOT NULL "
                    "AND archived_at < ?", (cutoff,))[0][0]
            with self.storage.transaction() as conn:
                return conn.execute(
                    "DELETE FROM memories WHERE archived_at IS NOT NULL AND archived_at < ?",
                    (cutoff,)).rowcount

    @staticmethod
    def sleep_version_of(r: Record) -> tuple:
        """The version tuple of a live record as read (same shape as ``sleep_versions``), so a
        plan is checked against exactly the records the model was shown."""
        return (r.content, r.kind.value, r.importance, int(r.private), int(r.pinned),
                r.updated_at, r.consolidated_at, None, r.access_count)

    def sleep_check(self, tx: SleepTxn, ids: Sequence[int], versions: dict[int, tuple], *,
                    touch: bool = False) -> dict[int, Record]:
        """Refuse (``Refused``) unless these records are live and unchanged since the plan;
        returns them. ``touch`` also refuses pinned ones."""
        return self._sleep_targets(tx, [int(i) for i in ids], versions, touch=touch)

    def sleep_records(self, ids: Iterable[int]) -> dict[int, Record]:
        """The live records among these ids, as they are now (any scope)."""
        with self._lock:
            recs = self._fetch_many(ids)
            return {i: r for i, r in recs.items()
                    if not self._is_archived(self.storage.conn, i)}
