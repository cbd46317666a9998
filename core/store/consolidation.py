"""The rows a night of sleep changes (SPEC §7): the SQL of :mod:`core.sleep.ops`, which checks
and journals every op and calls these inside its phase's transaction, one savepoint an op."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from core import text


@contextmanager
def savepoint(conn: sqlite3.Connection, name: str) -> Iterator[None]:
    """A savepoint: an exception rolls back what ran inside it only, then propagates."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    else:
        conn.execute(f"RELEASE {name}")


def versions(
    conn: sqlite3.Connection, ids: Iterable[int], columns: Sequence[str]
) -> dict[int, tuple]:
    """``columns`` of these records as they are now, by id. Unknown ids are absent."""
    ids = sorted({int(i) for i in ids})
    out: dict[int, tuple] = {}
    cols = ", ".join(columns)
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        q = ",".join("?" * len(part))
        for row in conn.execute(f"SELECT id, {cols} FROM memories WHERE id IN ({q})", part):
            out[row["id"]] = tuple(row[c] for c in columns)
    return out


def reword(conn: sqlite3.Connection, record_id: int, content: str, now: float) -> None:
    """New words for a record (its stems with them), settled now."""
    conn.execute(
        "UPDATE memories SET content = ?, stems = ?, consolidated_at = ? WHERE id = ?",
        (content, " ".join(text.stems(content)), now, record_id),
    )


def merge(
    conn: sqlite3.Connection,
    survivor: int,
    others: Sequence[int],
    content: str,
    *,
    kind: str,
    importance: int,
    private: bool,
    created_at: float,
    updated_at: float,
    now: float,
) -> None:
    """The survivor of a merge takes ``content``, these fields and every member's accesses
    (its count and last access from the union)."""
    for rid in others:
        conn.execute(
            "INSERT INTO accesses (memory_id, at) SELECT ?, at FROM accesses WHERE memory_id = ?",
            (survivor, rid),
        )
    n, last = conn.execute(
        "SELECT COUNT(*), MAX(at) FROM accesses WHERE memory_id = ?", (survivor,)
    ).fetchone()
    conn.execute(
        "UPDATE memories SET content = ?, stems = ?, kind = ?, importance = ?, private = ?, "
        "created_at = ?, updated_at = ?, consolidated_at = ?, last_access_at = ?, "
        "access_count = ? WHERE id = ?",
        (
            content,
            " ".join(text.stems(content)),
            kind,
            importance,
            int(private),
            created_at,
            updated_at,
            now,
            last,
            n,
            survivor,
        ),
    )


def copy_due(conn: sqlite3.Connection, source: int, target: int) -> None:
    """``target`` takes ``source``'s day and the owner's answer to its reminder (§8.11)."""
    src = conn.execute(
        "SELECT due_on, due_every, due_read, remind_state, remind_after FROM memories WHERE id = ?",
        (source,),
    ).fetchone()
    conn.execute(
        "UPDATE memories SET due_on = ?, due_every = ?, due_read = ?, "
        "remind_state = ?, remind_after = ? WHERE id = ?",
        (*tuple(src), target),
    )


def set_kind_importance(
    conn: sqlite3.Connection, record_id: int, kind: str, importance: int
) -> None:
    conn.execute(
        "UPDATE memories SET kind = ?, importance = ? WHERE id = ?", (kind, importance, record_id)
    )


def mark_consolidated(conn: sqlite3.Connection, ids: Sequence[int], now: float) -> None:
    conn.executemany(
        "UPDATE memories SET consolidated_at = ? WHERE id = ?", [(now, rid) for rid in ids]
    )
