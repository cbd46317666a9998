"""A record's accesses (SPEC §4, §11) in the accesses table and the memories table's counts: one
reinforcement, a logged batch of them (a search's, written with the next transaction by
:mod:`core.memory.reinforcement`) and taking one logged access back (a rollback). The history is
read by :func:`core.store.records.history`. Plain functions over a connection; the caller holds
the store's lock and is inside one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from core.store.records import Actor


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
