"""Memory records (SPEC §2): the plain, immutable values the core hands out, and the rows they
are stored in (row ↔ :class:`Record`, fetch, access history, change log, the one insert, the one
archive move, the one purge) as plain functions over a connection."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from core import text
from core.errors import NotFound, Refused, StoreError
from core.reminders import due_day


class Kind(StrEnum):
    CORE = "core"  # always in the prompt, never scored
    FACT = "fact"  # durable
    EVENT = "event"  # an episode; fades 4x faster than a fact


class Source(StrEnum):
    TOOL = "tool"
    OWNER = "owner"
    SLEEP = "sleep"
    DIALOGUE = "dialogue"
    INIT = "init"


class Actor(StrEnum):
    """Who makes a change: the model through a tool, the owner by hand, or sleep."""

    MODEL = "model"
    OWNER = "owner"
    SLEEP = "sleep"


GLOBAL_SCOPE = "global"


@dataclass(frozen=True)
class Record:
    id: int
    content: str
    kind: Kind
    importance: int
    private: bool
    pinned: bool
    scope: str
    created_at: float
    updated_at: float
    last_access_at: float | None
    access_count: int
    consolidated_at: float | None
    source: Source
    source_turn: str | None
    vector_model: str | None = None
    accesses: tuple[float, ...] = field(default=(), compare=False)
    # the day it points to (SPEC §8.11, schema v8): ISO date, recurrence, the owner's answer
    due_on: str | None = None
    due_every: str | None = None
    remind_state: str | None = None
    remind_after: float | None = None

    @property
    def recalled_at(self) -> float:
        """The moment age is measured from: the last access, or creation if never accessed."""
        return self.last_access_at if self.last_access_at is not None else self.created_at


def source_of(value: object) -> Source:
    """A stored ``source`` read leniently (issue 15): a value this Eva does not know (a newer
    Eva's, or a hand edit) reads as ``init`` (kept from elsewhere) — one odd row never makes
    the whole store unopenable. Writes are checked (:func:`insert`)."""
    if not isinstance(value, str):  # no Source is anything but text
        return Source.INIT
    try:
        return Source(value)
    except ValueError:
        return Source.INIT


@dataclass(frozen=True)
class ArchivedRecord:
    record: Record
    archived_at: float
    archived_by: str
    why: str
    purge_at: float


# ---------------------------------------------------------------------------- rows (SPEC §2, §11)
# The memory tables (memories, accesses, changes) as plain functions over a connection. The
# caller holds the store's lock and, for writes, is inside one transaction.

COLUMNS = (
    "m.id, m.content, m.kind, m.importance, m.private, m.pinned, m.scope, m.created_at, "
    "m.updated_at, m.last_access_at, m.access_count, m.consolidated_at, m.source, "
    "m.source_turn, m.stems, m.archived_at, m.archived_by, m.archived_why, m.due_on, m.due_every, "
    "m.remind_state, m.remind_after, v.model AS vector_model"
)
FROM = "memories m LEFT JOIN vectors v ON v.memory_id = m.id"


_KINDS = {k.value: k for k in Kind}
_SOURCES = {s.value: s for s in Source}


def from_row(row: sqlite3.Row, accesses: Sequence[float] = ()) -> Record:
    kind, source = row["kind"], row["source"]
    # Built without the frozen dataclass's __init__ (it sets every field through
    # object.__setattr__: most of the cost of fetching a few records); the fields and values
    # are exactly those Record(...) would hold, so it compares, hashes and prints the same.
    r = object.__new__(Record)
    r.__dict__.update(
        id=row["id"],
        content=row["content"],
        kind=_KINDS.get(kind) or Kind(kind),
        importance=row["importance"],
        private=bool(row["private"]),
        pinned=bool(row["pinned"]),
        scope=row["scope"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_access_at=row["last_access_at"],
        access_count=row["access_count"],
        consolidated_at=row["consolidated_at"],
        source=_SOURCES.get(source) or source_of(source),
        source_turn=row["source_turn"],
        vector_model=row["vector_model"],
        accesses=tuple(accesses),
        due_on=row["due_on"],
        due_every=row["due_every"],
        remind_state=row["remind_state"],
        remind_after=row["remind_after"],
    )
    return r


def row(conn: sqlite3.Connection, record_id: int) -> sqlite3.Row | None:
    return conn.execute(f"SELECT {COLUMNS} FROM {FROM} WHERE m.id = ?", (record_id,)).fetchone()


def history(conn: sqlite3.Connection, record_id: int) -> list[float]:
    """The access history of one record, oldest first."""
    return [
        a[0]
        for a in conn.execute(
            "SELECT at FROM accesses WHERE memory_id = ? ORDER BY at", (record_id,)
        )
    ]


def fetch(conn: sqlite3.Connection, record_id: int, with_history: bool = False) -> Record | None:
    r = row(conn, record_id)
    if r is None:
        return None
    return from_row(r, history(conn, record_id) if with_history else ())


def fetch_written(conn: sqlite3.Connection, record_id: int) -> Record:
    """A record an op acts on in its transaction (it just wrote it, or the index found it),
    read back: :func:`fetch` that never hands on None (a missing row is :class:`NotFound`)."""
    r = fetch(conn, record_id)
    if r is None:
        raise NotFound(record_id)
    return r


# what fetch_many reads: a Record's fields, in its order (not the stems or the archive mark)
_FIELDS = (
    "id",
    "content",
    "kind",
    "importance",
    "private",
    "pinned",
    "scope",
    "created_at",
    "updated_at",
    "last_access_at",
    "access_count",
    "consolidated_at",
    "source",
    "source_turn",
    "vector_model",
    "due_on",
    "due_every",
    "remind_state",
    "remind_after",
)
_RECORD_COLUMNS = ", ".join("v.model" if f == "vector_model" else f"m.{f}" for f in _FIELDS)


def fetch_many(
    conn: sqlite3.Connection, ids: Iterable[int], *, live: bool = False
) -> dict[int, Record]:
    """Records by id (absent ids are left out); ``live`` leaves archived ones out too. Fields
    are read by position (a search reads eight records: by name, each cost more than the SQL)."""
    ids = [int(i) for i in ids]
    out: dict[int, Record] = {}
    cond = "m.archived_at IS NULL AND " if live else ""
    kinds, sources, new = _KINDS, _SOURCES, object.__new__
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        q = ",".join("?" * len(part))
        for row in conn.execute(
            f"SELECT {_RECORD_COLUMNS} FROM {FROM} WHERE {cond}m.id IN ({q})", part
        ):
            r = new(Record)  # as from_row builds it
            d = r.__dict__
            d.update(zip(_FIELDS, row, strict=True))
            kind, source = d["kind"], d["source"]
            d["kind"] = kinds.get(kind) or Kind(kind)
            d["source"] = sources.get(source) or source_of(source)
            d["private"] = bool(d["private"])
            d["pinned"] = bool(d["pinned"])
            d["accesses"] = ()
            out[d["id"]] = r
    return out


def live(conn: sqlite3.Connection) -> list[Record]:
    """Every live record, of every scope, oldest id first (without access histories)."""
    rows = conn.execute(f"SELECT {COLUMNS} FROM {FROM} WHERE m.archived_at IS NULL ORDER BY m.id")
    return [from_row(r) for r in rows]


ORDERS = {
    "updated": "m.updated_at DESC",
    "created": "m.created_at DESC",
    "importance": "m.importance DESC, m.updated_at DESC",
    "id": "m.id",
}


def listing(
    conn: sqlite3.Connection,
    *,
    kind: Kind | None,
    private: bool | None,
    pinned: bool | None,
    scope: str | None,
    scopes: Sequence[str] | None,
    contains: str | None,
    order: str,
    limit: int,
    offset: int,
) -> list[Record]:
    """Live records by these filters (None: any), in one of ``ORDERS``."""
    where, args = ["m.archived_at IS NULL"], []
    for column, value in (
        ("kind", None if kind is None else kind.value),
        ("private", None if private is None else int(private)),
        ("pinned", None if pinned is None else int(pinned)),
        ("scope", scope),
    ):
        if value is not None:
            where.append(f"m.{column} = ?")
            args.append(value)
    if scopes is not None:
        scopes = list(scopes)
        where.append(f"m.scope IN ({','.join('?' * len(scopes)) or 'NULL'})")
        args.extend(scopes)
    if contains:
        where.append("m.content LIKE ?")
        args.append(f"%{contains}%")
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM {FROM} WHERE {' AND '.join(where)} "
        f"ORDER BY {ORDERS[order]} LIMIT ? OFFSET ?",
        (*args, limit, offset),
    )
    return [from_row(r) for r in rows]


def archived(conn: sqlite3.Connection, ttl_seconds: float, limit: int) -> list[ArchivedRecord]:
    """Archived records, newest first, with who/why/when and the moment of purge."""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM {FROM} WHERE m.archived_at IS NOT NULL "
        "ORDER BY m.archived_at DESC LIMIT ?",
        (limit,),
    )
    return [
        ArchivedRecord(
            from_row(r),
            r["archived_at"],
            r["archived_by"],
            r["archived_why"] or "",
            r["archived_at"] + ttl_seconds,
        )
        for r in rows
    ]


def is_archived(conn: sqlite3.Connection, record_id: int) -> bool:
    r = conn.execute("SELECT archived_at FROM memories WHERE id = ?", (record_id,)).fetchone()
    return r is not None and r[0] is not None


def pinned_count(conn: sqlite3.Connection, scope: str) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM memories WHERE pinned = 1 AND archived_at IS NULL AND scope = ?",
        (scope,),
    ).fetchone()[0]


def check_pin_room(
    conn: sqlite3.Connection,
    scope: str,
    cap: int,
    adding: int = 1,
    *,
    where: str = "",
    then: str = "",
) -> None:
    """The owner's pinned cap (SPEC §2: at most ``cap`` pinned live records per scope): the one
    check every path that pins makes before it pins ``adding`` more into ``scope`` — inside its
    transaction, so what it pinned so far counts. Refused, naming the room left; ``where`` and
    ``then`` say which line of an import it was and what was (not) done."""
    if adding <= 0:
        return
    have = pinned_count(conn, scope)
    if have + adding > cap:
        asked = f", {adding} were asked" if adding > 1 else ""
        raise Refused(
            f"{where}scope {scope!r} already has {have} pinned memories and the limit "
            f"is {cap}: {max(0, cap - have)} more fit{asked}; unpin "
            f"{have + adding - cap} first{then}"
        )


def contents(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    """The contents of these records, by id (absent ids are left out)."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        part = list(ids[start : start + 500])
        marks = ",".join("?" * len(part))
        out.update(
            conn.execute(f"SELECT id, content FROM memories WHERE id IN ({marks})", part).fetchall()
        )
    return out


def existing(conn: sqlite3.Connection, ids: Sequence[int]) -> set[int]:
    """Which of these ids are records still in the store (live or archived)."""
    out: set[int] = set()
    for start in range(0, len(ids), 500):
        part = list(ids[start : start + 500])
        marks = ",".join("?" * len(part))
        out.update(
            r[0] for r in conn.execute(f"SELECT id FROM memories WHERE id IN ({marks})", part)
        )
    return out


def live_rows(conn: sqlite3.Connection) -> Iterator[sqlite3.Row]:
    """Every live record's row (:data:`COLUMNS`: a Record's fields and its stems)."""
    yield from conn.execute(f"SELECT {COLUMNS} FROM {FROM} WHERE m.archived_at IS NULL")


def score_rows(conn: sqlite3.Connection) -> list[tuple]:
    """What recall's score columns read of every live record, in id order, as plain tuples:
    (id, is core, is event, importance, private, pinned, scope, created_at, last recalled,
    access_count) — SQL does the per-row work: in Python it was most of the columns' share of
    opening a store."""
    cur = conn.cursor()
    cur.row_factory = None
    # NOT INDEXED: a scan in id order; through the archive index SQLite looked every row up
    # and sorted them again (100k records: 0.60 -> 0.24 s)
    return cur.execute(
        "SELECT id, kind = 'core', kind = 'event', importance, private, pinned, scope, "
        "created_at, COALESCE(last_access_at, created_at), access_count FROM memories "
        "NOT INDEXED WHERE archived_at IS NULL ORDER BY id"
    ).fetchall()


def count(conn: sqlite3.Connection, archived: bool = False) -> int:
    """How many records are live (or, with ``archived``, in the archive)."""
    q = "IS NOT NULL" if archived else "IS NULL"
    return conn.execute(f"SELECT COUNT(*) FROM memories WHERE archived_at {q}").fetchone()[0]


def insert(
    conn: sqlite3.Connection,
    content: str,
    kind: Kind,
    importance: int,
    *,
    private: bool,
    pinned: bool,
    scope: str,
    created_at: float,
    updated_at: float,
    source: Source,
    source_turn: str | None,
    consolidated_at: float | None = None,
    history: Sequence[float] = (),
    said_at: float | None = None,
) -> int:
    """The one INSERT INTO memories: a new live record (stems derived from its content) and,
    for a record split off another, that record's access history. The source is checked here
    (there is no CHECK constraint on the column, and no migration adds one). The day the
    words point to is read against ``said_at`` (default: its creation) and written with it."""
    source = Source(source)  # ValueError for a value that is not a Source
    kind = Kind(kind)
    cur = conn.execute(
        "INSERT INTO memories (content, kind, importance, private, pinned, scope, created_at, "
        "updated_at, consolidated_at, source, source_turn, stems) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            content,
            kind.value,
            importance,
            int(private),
            int(pinned),
            scope,
            created_at,
            updated_at,
            consolidated_at,
            source.value,
            source_turn,
            " ".join(text.stems(content)),
        ),
    )
    rid = cur.lastrowid
    if rid is None:  # an INSERT always sets it
        raise StoreError("the store gave the new record no id")
    redate(conn, rid, content, created_at if said_at is None else said_at)
    if history:
        conn.executemany(
            "INSERT INTO accesses (memory_id, at) VALUES (?, ?)", [(rid, at) for at in history]
        )
        conn.execute(
            "UPDATE memories SET last_access_at = ?, access_count = ? WHERE id = ?",
            (max(history), len(history), rid),
        )
    return rid


def reinforce(conn: sqlite3.Connection, record_id: int, now: float) -> None:
    """One access: history, last access and count (the change is logged by the caller)."""
    conn.execute("INSERT INTO accesses (memory_id, at) VALUES (?, ?)", (record_id, now))
    conn.execute(
        "UPDATE memories SET last_access_at = ?, access_count = access_count + 1 WHERE id = ?",
        (now, record_id),
    )


def log_accesses(
    conn: sqlite3.Connection,
    now: float,
    actor: Actor,
    turn_id: str | None,
    record_ids: Sequence[int],
) -> None:
    """Reinforce these records (one access each, at ``now``) and log each as a "reinforce"
    change that holds only the access it appended — not a snapshot of the record and its whole
    history: ``rollback`` takes that one access back."""
    if not record_ids:
        return
    before = json.dumps({"access": now})
    conn.executemany(
        "INSERT INTO changes (at, actor, turn_id, op, memory_id, before) "
        "VALUES (?, ?, ?, 'reinforce', ?, ?)",
        [(now, actor.value, turn_id, rid, before) for rid in record_ids],
    )
    conn.executemany(
        "INSERT INTO accesses (memory_id, at) VALUES (?, ?)", [(rid, now) for rid in record_ids]
    )
    conn.executemany(
        "UPDATE memories SET last_access_at = ?, access_count = access_count + 1 WHERE id = ?",
        [(now, rid) for rid in record_ids],
    )


def take_back_access(conn: sqlite3.Connection, record_id: int, at: float) -> None:
    """Undo one logged access: its row goes, the count drops by one and the last access is the
    latest one left (the history the owner sees stays the record's own)."""
    cur = conn.execute(
        "DELETE FROM accesses WHERE rowid = (SELECT rowid FROM accesses WHERE memory_id = ? "
        "AND at = ? ORDER BY rowid DESC LIMIT 1)",
        (record_id, at),
    )
    if cur.rowcount:
        conn.execute(
            "UPDATE memories SET access_count = MAX(access_count - 1, 0), last_access_at = "
            "(SELECT MAX(at) FROM accesses WHERE memory_id = ?) WHERE id = ?",
            (record_id, record_id),
        )


def snapshot(conn: sqlite3.Connection, record_id: int) -> str | None:
    """The record's row and access history as JSON: what ``rollback`` puts back."""
    r = conn.execute("SELECT * FROM memories WHERE id = ?", (record_id,)).fetchone()
    if r is None:
        return None
    return json.dumps({"row": dict(r), "accesses": history(conn, record_id)})


def log_change(
    conn: sqlite3.Connection,
    now: float,
    actor: Actor,
    turn_id: str | None,
    op: str,
    record_id: int,
    before: str | None,
) -> None:
    conn.execute(
        "INSERT INTO changes (at, actor, turn_id, op, memory_id, before) VALUES (?,?,?,?,?,?)",
        (now, actor.value, turn_id, op, record_id, before),
    )


def archive(
    conn: sqlite3.Connection,
    record_id: int,
    now: float,
    actor: Actor,
    turn_id: str | None,
    why: str,
) -> None:
    """The one move to the archive: logged ("forget", with the record as it was), then marked
    archived by whom and why. Restorable until purged."""
    log_change(conn, now, actor, turn_id, "forget", record_id, snapshot(conn, record_id))
    conn.execute(
        "UPDATE memories SET archived_at = ?, archived_by = ?, archived_why = ? WHERE id = ?",
        (now, actor.value, why, record_id),
    )


def unarchive(conn: sqlite3.Connection, record_id: int) -> None:
    conn.execute(
        "UPDATE memories SET archived_at = NULL, archived_by = NULL, archived_why = NULL "
        "WHERE id = ?",
        (record_id,),
    )


def update(
    conn: sqlite3.Connection,
    record_id: int,
    now: float,
    *,
    content: str | None,
    kind: Kind | None,
    importance: int | None,
    private: bool | None,
) -> None:
    """An edit in place of the given fields (None: unchanged); the knowledge is now."""
    sets = ["updated_at = ?"]
    args: list[object] = [now]
    if content is not None:
        sets += ["content = ?", "stems = ?"]
        args += [content, " ".join(text.stems(content))]
    for column, value in (
        ("kind", None if kind is None else kind.value),
        ("importance", importance),
        ("private", None if private is None else int(private)),
    ):
        if value is not None:
            sets.append(f"{column} = ?")
            args.append(value)
    conn.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", (*args, record_id))
    if content is not None:
        redate(conn, record_id, content, now)


def reword(
    conn: sqlite3.Connection,
    record_id: int,
    content: str,
    now: float,
    *,
    said_at: float | None,
    source_turn: str | None = None,
) -> None:
    """New words for a record (its stems with them; the knowledge is now). The day they point
    to is read again against ``said_at`` (:func:`redate`); None keeps the day as it is (a done
    mark's own date is no new day to be reminded of)."""
    conn.execute(
        "UPDATE memories SET content = ?, stems = ?, updated_at = ?, "
        "source_turn = COALESCE(?, source_turn) WHERE id = ?",
        (content, " ".join(text.stems(content)), now, source_turn, record_id),
    )
    if said_at is not None:
        redate(conn, record_id, content, said_at)


def set_flag(conn: sqlite3.Connection, record_id: int, flag: str, value: bool) -> None:
    """The owner's pin or the private mark, as it is (the change is logged by the caller)."""
    if flag not in ("pinned", "private"):
        raise ValueError(f"{flag} is not a flag")
    conn.execute(f"UPDATE memories SET {flag} = ? WHERE id = ?", (int(value), record_id))


def redate(
    conn: sqlite3.Connection,
    record_id: int,
    content: str,
    said_at: float,
    *,
    keep_if_none: bool = False,
) -> None:
    """The day a record's (new) words point to, read against ``said_at``, written in the
    caller's transaction (SPEC §8.11: an update or a correction moves the date; the old one is
    no longer due). Words that still carry the phrase the day was read from keep that day (a
    relative "в субботу" stays the Saturday it meant when it was said); words without a day
    clear it, unless ``keep_if_none`` (sleep rewording keeps the day it cannot read anew). A
    moved day is a new reminder: the owner's done / snooze / dismiss of the old one goes."""
    new = due_day.read(content, said_at)
    old = conn.execute(
        "SELECT due_on, due_every, due_read FROM memories WHERE id = ?", (record_id,)
    ).fetchone()
    if old is not None and old["due_on"] is not None:
        if new is None and keep_if_none:
            return
        if new is not None and old["due_read"]:
            try:
                phrase = json.loads(old["due_read"]).get("phrase")
            except (ValueError, AttributeError):
                phrase = None
            if phrase == new.phrase and (old["due_every"] or None) == new.every:
                return
    cols = new.columns() if new is not None else (None, None, None)
    if old is not None and (old["due_on"], old["due_every"]) == cols[:2]:
        conn.execute("UPDATE memories SET due_read = ? WHERE id = ?", (cols[2], record_id))
        return
    conn.execute(
        "UPDATE memories SET due_on = ?, due_every = ?, due_read = ?, "
        "remind_state = NULL, remind_after = NULL WHERE id = ?",
        (*cols, record_id),
    )


def said_at(conn: sqlite3.Connection, record_id: int) -> float | None:
    """When the words a record's day was read from were said (its reading's day, at noon), or
    its creation: what a rewording of it is read against."""
    r = conn.execute(
        "SELECT due_read, created_at FROM memories WHERE id = ?", (record_id,)
    ).fetchone()
    if r is None:
        return None
    if r["due_read"]:
        try:
            day = json.loads(r["due_read"])["said"]
            return datetime.fromisoformat(day).replace(hour=12).timestamp()
        except (ValueError, KeyError, TypeError):
            pass
    return r["created_at"]


# ---------------------------------------------------------------------------- reminders (§8.11)

_REMIND = (
    "id, content, importance, private, updated_at, due_on, due_every, remind_state, "
    "remind_after, scope, stems"
)


def due(conn: sqlite3.Connection, *, private: bool) -> list[sqlite3.Row]:
    """Every live record with a day (private ones only with ``private``), for
    :func:`core.reminders.schedule.coming_up`."""
    return conn.execute(
        f"SELECT {_REMIND} FROM memories WHERE archived_at IS NULL AND due_on "
        f"IS NOT NULL{'' if private else ' AND private = 0'}"
    ).fetchall()


def open_one_offs(conn: sqlite3.Connection, scope: str, exclude: int) -> list[sqlite3.Row]:
    """The live, unpinned one-off records of ``scope`` whose reminder is still open (what a
    record saying a thing moved may end)."""
    return conn.execute(
        f"SELECT {_REMIND} FROM memories WHERE archived_at IS NULL AND id != ? AND due_on IS "
        "NOT NULL AND due_every IS NULL AND remind_state IS NULL AND scope = ? AND pinned = 0",
        (exclude, scope),
    ).fetchall()


def set_reminder(
    conn: sqlite3.Connection,
    record_id: int,
    *,
    state: str | None = None,
    after: float | None = None,
) -> None:
    """The owner's answer to a reminder: its state (done, dismissed) or the moment before
    which it is not shown again."""
    if state is not None:
        conn.execute("UPDATE memories SET remind_state = ? WHERE id = ?", (state, record_id))
    if after is not None:
        conn.execute("UPDATE memories SET remind_after = ? WHERE id = ?", (after, record_id))


def purge(conn: sqlite3.Connection, before: float, *, dry_run: bool = False) -> int:
    """The one purge: delete archive entries archived before ``before`` (with ``dry_run`` only
    count them)."""
    cond = "FROM memories WHERE archived_at IS NOT NULL AND archived_at < ?"
    if dry_run:
        return conn.execute(f"SELECT COUNT(*) {cond}", (before,)).fetchone()[0]
    return conn.execute(f"DELETE {cond}", (before,)).rowcount


def model_changes(conn: sqlite3.Connection, turn_id: str) -> int:
    """How many updates and forgets the model made in this turn."""
    return conn.execute(
        "SELECT COUNT(*) FROM changes WHERE turn_id = ? AND actor = ? "
        "AND op IN ('update', 'forget')",
        (turn_id, Actor.MODEL.value),
    ).fetchone()[0]


# ---------------------------------------------------------------------------- the owner's hands
# (issue 13: scopes, clear all, export and import)


def scope_stats(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """Per scope: (live records, of which pinned)."""
    rows = conn.execute(
        "SELECT scope, COUNT(*), SUM(pinned) FROM memories WHERE archived_at IS NULL GROUP BY scope"
    )
    return {r[0]: (r[1], r[2] or 0) for r in rows}


def live_ids(conn: sqlite3.Connection, scope: str, *, pinned: bool | None = None) -> list[int]:
    """Live record ids of one scope (``pinned``: only pinned / only unpinned / any)."""
    cond = "" if pinned is None else f" AND pinned = {int(pinned)}"
    return [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM memories WHERE archived_at IS NULL AND scope = ?{cond} ORDER BY id",
            (scope,),
        )
    ]


def set_scope(conn: sqlite3.Connection, record_ids: Sequence[int], scope: str) -> None:
    """Move records to another scope (the change is logged by the caller)."""
    conn.executemany(
        "UPDATE memories SET scope = ? WHERE id = ?", [(scope, rid) for rid in record_ids]
    )


def all_ids(conn: sqlite3.Connection, scope: str) -> list[int]:
    """Every record id of a scope, live or archived."""
    return [
        r[0] for r in conn.execute("SELECT id FROM memories WHERE scope = ? ORDER BY id", (scope,))
    ]
