"""Sleep's write primitives (SPEC §7, §11): one phase is one transaction, one op one savepoint.

``with transaction(memory, turn_id) as tx:`` opens the phase's transaction
(:meth:`core.memory.facade.Memory.transaction`: the store's lock held, the touched records reindexed
after it ends); sleep wraps every op in ``with tx.op():``. An op that is refused (or fails)
rolls back to its savepoint and takes nothing of itself into the store, while the ops before
and after it stay in the phase; the phase commits as a whole or not at all, with its journal
rows written on the same connection.

The night's policy (max_ops, max_forget, keep_recent, core never deleted, ids of the cluster
under review …) is :mod:`core.sleep.apply`'s; these functions keep the record-level rules:
pinned records are untouchable, the private flag is never removed (a merge with any private
member is private), and an op whose target changed after the plan was made (``versions`` then,
compared inside the transaction) is refused — so a write by the owner or a tool during sleep is
never lost. Every change is logged with actor "sleep" and the night's turn id, so
``memory.rollback_turn("sleep:<run id>")`` undoes a whole night.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from core.errors import MemoryOpError, Refused
from core.memory import validation as valid
from core.memory.engine import Writes
from core.memory.facade import Memory
from core.store import consolidation, records, reminder_rows
from core.store.records import Actor, Kind, Record, Source

# What a plan is checked against: the fields of a record that an op's judgement rests on.
VERSION = (
    "content",
    "kind",
    "importance",
    "private",
    "pinned",
    "updated_at",
    "consolidated_at",
    "archived_at",
    "access_count",
)


@dataclass
class SleepTxn:
    writes: Writes  # the memory transaction: connection, moment, touched records
    turn_id: str  # recorded on every change the phase makes ("sleep:<run id>")
    max_chars: int  # one record's content (memory config)
    marked: set[int] = field(default_factory=set)  # marked settled (no index change)
    _depth: int = 0

    @property
    def conn(self) -> sqlite3.Connection:
        return self.writes.conn

    @property
    def now(self) -> float:
        return self.writes.now

    @property
    def touched(self) -> set[int]:
        """Records changed: their index entries are refreshed when the transaction ends."""
        return self.writes.touched

    @contextmanager
    def op(self) -> Iterator[SleepTxn]:
        """A savepoint around one op: an exception rolls back this op only, then propagates."""
        self._depth += 1
        try:
            with consolidation.savepoint(self.conn, f"sleep_op_{self._depth}"):
                yield self
        finally:
            self._depth -= 1


@contextmanager
def transaction(memory: Memory, turn_id: str) -> Iterator[SleepTxn]:
    """One phase of sleep: one transaction; the touched records' indexes are refreshed after
    it ends (committed or rolled back)."""
    with memory.transaction() as w:
        yield SleepTxn(w, turn_id, memory.config.max_chars)


# ---------------------------------------------------------------------------- versions


def version_of(r: Record) -> tuple:
    """The version tuple of a live record as read (same shape as ``versions``), so a plan is
    checked against exactly the records the model was shown."""
    return (
        r.content,
        r.kind.value,
        r.importance,
        int(r.private),
        int(r.pinned),
        r.updated_at,
        r.consolidated_at,
        None,
        r.access_count,
    )


def versions(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, tuple]:
    """What these records look like now. Unknown ids are absent."""
    return consolidation.versions(conn, ids, VERSION)


def check(
    tx: SleepTxn,
    ids: Sequence[int],
    planned: dict[int, tuple],
    *,
    touch: bool = True,
    strict: bool = False,
) -> dict[int, Record]:
    """The live records an op names, exactly as they were when the plan was made; otherwise
    ``Refused``. ``strict`` also compares reinforcements (a record recalled meanwhile is no
    longer a forgetting candidate); ``touch=False`` reads pinned records without refusing."""
    ids = [int(i) for i in ids]
    now_rows = versions(tx.conn, ids)
    out: dict[int, Record] = {}
    skip = () if strict else ("access_count",)
    keep = [i for i, c in enumerate(VERSION) if c not in skip]
    for rid in ids:
        cur = now_rows.get(rid)
        if cur is None or cur[VERSION.index("archived_at")] is not None:
            raise Refused(f"#{rid} no longer exists (forgotten or merged after the plan)")
        was = planned.get(rid)
        if was is None:
            raise Refused(f"#{rid} was not part of the plan")
        if [cur[i] for i in keep] != [was[i] for i in keep]:
            raise Refused(
                f"#{rid} changed after the plan was made (a write during sleep or an earlier "
                "op of this night); the plan for it is stale"
            )
        r = _read(tx, rid, with_history=True)
        if touch and r.pinned:
            raise Refused(f"#{rid} is pinned by the owner; sleep never touches it")
        out[rid] = r
    return out


# ---------------------------------------------------------------------------- helpers


def _read(tx: SleepTxn, rid: int, *, with_history: bool = False) -> Record:
    """A record this op has checked or written inside its own transaction: it is there."""
    r = records.fetch(tx.conn, rid, with_history=with_history)
    assert r is not None, f"#{rid} was checked or written in this transaction"
    return r


def _log(tx: SleepTxn, op: str, rid: int) -> None:
    records.log_change(
        tx.conn, tx.now, Actor.SLEEP, tx.turn_id, op, rid, records.snapshot(tx.conn, rid)
    )


def _archive(tx: SleepTxn, rid: int, why: str) -> None:
    records.archive(tx.conn, rid, tx.now, Actor.SLEEP, tx.turn_id, why.strip()[:500] or "sleep")
    tx.touched.add(rid)


def _reword(tx: SleepTxn, rid: int, content: str, vec: np.ndarray | None) -> None:
    _log(tx, "update", rid)
    said = reminder_rows.said_at(tx.conn, rid)
    assert said is not None, f"#{rid} was checked in this transaction"
    consolidation.reword(tx.conn, rid, content, tx.now)
    # SPEC §8.11: a reworded record keeps its day (read anew against when it was said)
    reminder_rows.redate(tx.conn, rid, content, said, keep_if_none=True)
    tx.writes.vector(rid, vec)
    tx.touched.add(rid)


def _insert(
    tx: SleepTxn,
    content: str,
    kind: Kind,
    importance: int,
    private: bool,
    scope: str,
    created_at: float,
    updated_at: float,
    vec: np.ndarray | None,
    history: Sequence[float] = (),
) -> int:
    rid = records.insert(
        tx.conn,
        content,
        kind,
        importance,
        private=private,
        pinned=False,
        scope=scope,
        created_at=created_at,
        updated_at=updated_at,
        source=Source.SLEEP,
        source_turn=tx.turn_id,
        consolidated_at=tx.now,
        history=history,
    )
    records.log_change(tx.conn, tx.now, Actor.SLEEP, tx.turn_id, "create", rid, None)
    tx.writes.vector(rid, vec)
    tx.touched.add(rid)
    return rid


def strongest_kind(kinds: Iterable[Kind]) -> Kind:
    kinds = set(kinds)
    for k in (Kind.CORE, Kind.FACT, Kind.EVENT):
        if k in kinds:
            return k
    return Kind.FACT


def _content(tx: SleepTxn, value: object) -> str:
    return valid.content(value, tx.max_chars)


# ---------------------------------------------------------------------------- ops


def merge(
    tx: SleepTxn,
    ids: Sequence[int],
    content: object,
    why: str,
    planned: dict[int, tuple],
    vec: np.ndarray | None = None,
) -> Record:
    """Merge duplicates into the most reinforced member (its id survives). The survivor gets
    ``content``, the strongest kind, the highest importance, the earliest creation, private if
    any member was, and the sum of all access histories (spaced repetition is not reset); the
    others go to the archive ("merged into #id: why"), restorable."""
    content = _content(tx, content)
    ids = list(dict.fromkeys(int(i) for i in ids))
    if len(ids) < 2:
        raise MemoryOpError("a merge needs at least two records")
    recs = check(tx, ids, planned)
    if len({r.scope for r in recs.values()}) > 1:
        raise Refused("records of different scopes are never merged")
    survivor = max(recs.values(), key=lambda r: (r.access_count, -r.created_at, -r.id))
    sid = survivor.id
    others = [rid for rid in ids if rid != sid]
    _log(tx, "merge", sid)
    members = list(recs.values())
    consolidation.merge(
        tx.conn,
        sid,
        others,
        content,
        kind=strongest_kind(r.kind for r in members).value,
        importance=max(r.importance for r in members),
        private=any(r.private for r in members),
        created_at=min(r.created_at for r in members),
        updated_at=max(r.updated_at for r in members),
        now=tx.now,
    )
    _merge_due(tx, sid, members, content)
    tx.writes.vector(sid, vec)
    for rid in others:
        _archive(tx, rid, f"merged into #{sid}: {why}")
    tx.touched.update(ids)
    return _read(tx, sid)


def _merge_due(tx: SleepTxn, sid: int, members: Sequence[Record], content: str) -> None:
    """SPEC §8.11: a merge keeps the day its members point to. The merged words are read
    against when the latest-said dated member was said; words without a day keep that
    member's day (with the owner's answer to it)."""
    dated = [r for r in members if r.due_on is not None]
    if not dated:
        reminder_rows.redate(tx.conn, sid, content, min(r.created_at for r in members))
        return
    last = max(dated, key=lambda r: (r.updated_at, r.id))
    consolidation.copy_due(tx.conn, last.id, sid)
    reminder_rows.redate(
        tx.conn,
        sid,
        content,
        reminder_rows.said_at(tx.conn, last.id) or last.created_at,
        keep_if_none=True,
    )


def rewrite(
    tx: SleepTxn,
    record_id: int,
    content: object,
    why: str,
    planned: dict[int, tuple],
    vec: np.ndarray | None = None,
) -> Record:
    """Replace a record's wording (e.g. "lived in Kazan until 2024"); kind, flags, history
    and the age of the knowledge (updated_at) stay."""
    content = _content(tx, content)
    rid = int(record_id)
    check(tx, [rid], planned)
    _reword(tx, rid, content, vec)
    return _read(tx, rid)


def split(
    tx: SleepTxn,
    record_id: int,
    parts: Sequence[object],
    why: str,
    planned: dict[int, tuple],
    vecs: Sequence[np.ndarray | None] | None = None,
) -> list[int]:
    """Split a glued record: it keeps its id with the first part; each further part is a new
    record with the same kind, importance, flags, scope, creation and history."""
    texts = [_content(tx, p) for p in parts]
    if len(texts) < 2:
        raise MemoryOpError("a split needs at least two parts")
    vecs = list(vecs) if vecs is not None else [None] * len(texts)
    rid = int(record_id)
    r = check(tx, [rid], planned)[rid]
    _reword(tx, rid, texts[0], vecs[0])
    out = [rid]
    for part, vec in zip(texts[1:], vecs[1:], strict=True):
        out.append(
            _insert(
                tx,
                part,
                r.kind,
                r.importance,
                r.private,
                r.scope,
                r.created_at,
                r.updated_at,
                vec,
                r.accesses,
            )
        )
    return out


def derive(
    tx: SleepTxn,
    ids: Sequence[int],
    content: object,
    why: str,
    planned: dict[int, tuple],
    *,
    kind: object = "fact",
    importance: object = None,
    vec: np.ndarray | None = None,
) -> Record:
    """A new record derived from a run of similar events ("goes swimming on Sundays"). The
    events stay as they are (they fade on their own); the new record is private if any source
    is. Sources may be pinned: they are only read."""
    content = _content(tx, content)
    kind = valid.kind(kind)
    ids = list(dict.fromkeys(int(i) for i in ids))
    if not ids:
        raise MemoryOpError("a derived record needs its sources")
    recs = check(tx, ids, planned, touch=False)
    scopes = {r.scope for r in recs.values()}
    if len(scopes) > 1:
        raise Refused("sources of different scopes are never combined")
    imp = (
        valid.importance(importance)
        if importance is not None
        else max(r.importance for r in recs.values())
    )
    rid = _insert(
        tx,
        content,
        kind,
        imp,
        any(r.private for r in recs.values()),
        scopes.pop(),
        tx.now,
        tx.now,
        vec,
    )
    return _read(tx, rid)


def set_fields(
    tx: SleepTxn,
    record_id: int,
    planned: dict[int, tuple],
    *,
    kind: object = None,
    importance: object = None,
) -> Record:
    """Re-kind or re-weigh a record (promote to core, demote dead core, recalibrate
    importance). The record's age and its review state are not touched."""
    rid = int(record_id)
    new_kind = valid.kind(kind) if kind is not None else None
    new_imp = valid.importance(importance) if importance is not None else None
    if new_kind is None and new_imp is None:
        raise MemoryOpError("nothing to change: give kind or importance")
    r = check(tx, [rid], planned)[rid]
    _log(tx, "update", rid)
    consolidation.set_kind_importance(
        tx.conn, rid, (new_kind or r.kind).value, new_imp or r.importance
    )
    tx.touched.add(rid)
    return _read(tx, rid)


def forget(tx: SleepTxn, record_id: int, why: str, planned: dict[int, tuple]) -> None:
    """Move a record to the archive (by sleep, with why); restorable for archive_ttl. A record
    recalled after the plan was made is refused (it is no longer forgettable)."""
    valid.why(why)
    rid = int(record_id)
    check(tx, [rid], planned, strict=True)
    _archive(tx, rid, why)


def mark_consolidated(tx: SleepTxn, ids: Iterable[int], planned: dict[int, tuple]) -> list[int]:
    """Mark reviewed records settled (consolidated_at = now) — only those still live and
    unchanged since the plan. Returns the ids marked."""
    ids = sorted({int(i) for i in ids})
    cur = versions(tx.conn, ids)
    marked = [rid for rid in ids if rid in cur and rid in planned and cur[rid] == planned[rid]]
    consolidation.mark_consolidated(tx.conn, marked, tx.now)
    tx.marked.update(marked)
    return marked
