"""Memory's reminders (SPEC §8.11): what is coming up, the owner's answer to a reminder, and the
reminder a newer record ends by saying the thing moved — on :meth:`core.memory.facade.Memory.transaction`
and :mod:`core.store.records` (a record's day and reminder: :mod:`core.store.reminder_rows`). The
rules of days (reading them, recurrences, what is due) are :mod:`core.reminders`' own."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING

from core.errors import MemoryOpError, NotFound
from core.memory import checks
from core.memory import validation as valid
from core.privacy import OWNER_TRUSTED, TurnContext
from core.reminders import due_day, schedule
from core.store import records, reminder_rows
from core.store.records import Actor, Record

if TYPE_CHECKING:
    from core.memory.facade import Memory


def coming_up(
    mem: Memory, ctx: TurnContext, *, days: int, scopes: Iterable[str] | None, now: float | None
) -> list[schedule.Reminder]:
    """What is due around now (:func:`core.reminders.schedule.coming_up`) among the live records
    this audience may see (a private one only where private memory is visible)."""
    mem.refresh()
    now = mem.clock.now() if now is None else now
    with mem.reading() as conn:
        rows = reminder_rows.due(conn, private=ctx.sees_private)
    if scopes is not None:
        allowed = set(scopes)
        rows = [r for r in rows if r["scope"] in allowed]
    return schedule.coming_up(rows, now, days=days)


def remind(mem: Memory, record_id: object, action: str, *, until: float | None) -> Record:
    """The owner's answer to a reminder, one transaction: ``done`` (a one-off's words say so:
    "(done 23.05.2026)"; a recurrence's current occurrence is over), ``snooze`` (not before
    ``until``, default the next morning) or ``dismiss`` (a one-off never again; a recurrence's
    current occurrence)."""
    if action not in ("done", "snooze", "dismiss"):
        raise MemoryOpError("action must be done, snooze or dismiss")
    rid = valid.record_id(record_id)
    with mem.transaction() as w:
        r = checks.live_target(w.conn, rid, OWNER_TRUSTED, Actor.OWNER)
        if r.due_on is None:
            raise MemoryOpError(f"#{rid} has no day to be reminded of")
        checks.log(w.conn, w.now, Actor.OWNER, OWNER_TRUSTED, "update", rid)
        on = date.fromisoformat(r.due_on)
        if action == "snooze":
            after = until if until is not None else schedule.next_morning(w.now)
            reminder_rows.set_reminder(w.conn, rid, after=after)
        elif r.due_every is not None:
            reminder_rows.set_reminder(
                w.conn, rid, after=schedule.after_occurrence(on, r.due_every, w.now)
            )
        elif action == "dismiss":
            reminder_rows.set_reminder(w.conn, rid, state=schedule.DISMISSED)
        else:
            content = schedule.done_text(r.content, w.now, mem.config.max_chars)
            vecs = mem.embed([content])
            records.reword(w.conn, rid, content, w.now, said_at=None)
            reminder_rows.set_reminder(w.conn, rid, state=schedule.DONE)
            w.vector(rid, None if vecs is None else vecs[0])
        w.touched.add(rid)
        return records.fetch_written(w.conn, rid)


def moved_from(
    conn: sqlite3.Connection,
    rid: int,
    content: str,
    new_stems: list[str],
    ctx: TurnContext,
    actor: Actor,
    now: float,
) -> None:
    """A new record that says a dated thing moved ("встречу перенесли на 2 июня") ends the
    reminder of the record it moves (the old day is no longer due), in the save's transaction:
    a one-off, open reminder of a live record this audience sees, in the same scope, sharing
    the thing's words (stems beyond the days). Logged, so a regenerate puts it back."""
    new = records.row(conn, rid)
    if new is None:  # the save inserted it in this transaction
        raise NotFound(rid)
    if new["due_on"] is None or not due_day.says_moved(content):
        return
    mine = due_day.topic_stems(new_stems)
    if not mine:
        return
    for r in reminder_rows.open_one_offs(conn, new["scope"], rid):
        if r["private"] and not ctx.sees_private:
            continue
        theirs = due_day.topic_stems(r["stems"].split())
        shared = mine & theirs
        if len(shared) >= 1 and len(shared) / len(mine | theirs) >= 0.25:
            checks.log(conn, now, actor, ctx, "update", r["id"])
            reminder_rows.set_reminder(conn, r["id"], state=schedule.DISMISSED)
