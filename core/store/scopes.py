"""Records by scope, for the owner's hands (issue 13; SPEC §8.6, §8.8): live and pinned counts
per scope, a scope's record ids, and the move of records to another scope. Plain functions over a
connection; the caller holds the store's lock and, for writes, is inside one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


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
