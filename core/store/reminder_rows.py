"""The day a record points to and its reminder (SPEC §8.11, schema v8), in the memories table's
rows: the day read from a record's words in the writing transaction (:func:`redate`, which
:mod:`core.store.records`' insert, update and reword call), when those words were said, the
records with a day, and the owner's answer to a reminder. Plain functions over a connection; the
caller holds the store's lock and, for writes, is inside one transaction. The rules of days are
:mod:`core.reminders`' own."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from core.reminders import due_day


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
