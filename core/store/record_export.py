"""The memory tables' rows for the owner's export and back in for an import (SPEC §11): what
:mod:`core.memory.bulk` reads and writes beyond :mod:`core.store.records`' one insert. Plain functions
over a connection; the caller holds the store's lock and, for writes, is inside one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from core.store.records import Actor, history, log_change, snapshot


def exported(
    conn: sqlite3.Connection, *, include_archive: bool, private: bool
) -> Iterable[tuple[sqlite3.Row, list[float]]]:
    """Rows for an export, oldest id first, each with its access history. Private rows are
    left out unless ``private``; archived ones unless ``include_archive``."""
    where = []
    if not include_archive:
        where.append("archived_at IS NULL")
    if not private:
        where.append("private = 0")
    cond = f" WHERE {' AND '.join(where)}" if where else ""
    for r in conn.execute(f"SELECT * FROM memories{cond} ORDER BY id").fetchall():
        yield r, history(conn, r["id"])


def count_private(conn: sqlite3.Connection, *, include_archive: bool) -> int:
    cond = "" if include_archive else " AND archived_at IS NULL"
    return conn.execute(f"SELECT COUNT(*) FROM memories WHERE private = 1{cond}").fetchone()[0]


def log_imported_history(
    conn: sqlite3.Connection, record_id: int, accesses: Sequence[float], turn_id: str | None
) -> None:
    """The change log of an imported record's access history: one "reinforce" per access, as
    if it had been reinforced here (the log tells the same story as the rows; a rollback of the
    import takes each back before the record)."""
    conn.executemany(
        "INSERT INTO changes (at, actor, turn_id, op, memory_id, before) "
        "VALUES (?, 'owner', ?, 'reinforce', ?, ?)",
        [(at, turn_id, record_id, json.dumps({"access": at})) for at in accesses],
    )


def mark_archived(
    conn: sqlite3.Connection,
    record_id: int,
    at: float,
    by: str,
    why: str,
    turn_id: str | None = None,
) -> None:
    """An imported record that was in the archive where it was exported: archived as it was
    (when, by whom, why — logged as its "forget"), restorable until purged."""
    log_change(conn, at, Actor(by), turn_id, "forget", record_id, snapshot(conn, record_id))
    conn.execute(
        "UPDATE memories SET archived_at = ?, archived_by = ?, archived_why = ? WHERE id = ?",
        (at, by, why, record_id),
    )


def same_record(conn: sqlite3.Connection, content: str, created_at: float) -> int | None:
    """A record (live or archived) with exactly this content and creation time: the one an
    import of an earlier export of this store would copy."""
    r = conn.execute(
        "SELECT id FROM memories WHERE content = ? AND created_at = ? LIMIT 1",
        (content, created_at),
    ).fetchone()
    return None if r is None else r[0]
