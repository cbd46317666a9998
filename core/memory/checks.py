"""The checks every memory operation makes (SPEC §2, §3, §9): who may change memory in a turn,
what a turn may see, the live record an op acts on, and the change logged before it — shared by
:class:`core.memory.facade.Memory` and its facets (:mod:`core.memory.reminders`,
:mod:`core.memory.bulk`). Plain functions; the caller holds the store's lock and, for a
write, is inside its transaction."""

from __future__ import annotations

import sqlite3

from core.errors import NotFound, Refused
from core.privacy import AccessDenied, TurnContext
from core.store import records
from core.store.records import Actor, Record


def check_mutate(ctx: TurnContext, actor: Actor, op: str) -> None:
    """The model changes memory only in the owner's turns."""
    if actor is Actor.MODEL and not ctx.can_mutate:
        raise AccessDenied(f"{op} is available only in the owner's turns")


def visible(r: Record | None, ctx: TurnContext) -> bool:
    """Whether this turn may see the record: a private one only where private memory is
    visible, and only in a scope the turn reads."""
    return r is not None and (ctx.sees_private or not r.private) and r.scope in ctx.scopes()


def live_target(conn: sqlite3.Connection, record_id: int, ctx: TurnContext, actor: Actor) -> Record:
    """The live record an op acts on. Records the turn may not see are reported as
    non-existent, so an error never confirms that a private memory exists."""
    row = records.row(conn, record_id)
    if row is None or row["archived_at"] is not None:
        raise NotFound(record_id)
    r = records.from_row(row, records.history(conn, record_id))
    if actor is not Actor.OWNER and not visible(r, ctx):
        raise NotFound(record_id)
    if actor is not Actor.OWNER and r.pinned:
        raise Refused(f"memory #{record_id} is pinned by the owner; only the owner changes it")
    return r


def log(
    conn: sqlite3.Connection, now: float, actor: Actor, ctx: TurnContext, op: str, record_id: int
) -> None:
    """Log a change with the record as it is before it (what rollback puts back)."""
    records.log_change(
        conn, now, actor, ctx.turn_id, op, record_id, records.snapshot(conn, record_id)
    )
