"""Undoing a turn's changes to memory (SPEC §8.4 regenerate, a night rolled back): the change
log read back, newest first, on the records nothing changed since."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from core.store.accesses import take_back_access
from core.store.records import Actor, is_archived


@dataclass
class Rollback:
    """What undoing a turn did: the records it touched, the ones it left because they changed
    after the turn (an owner's edit, a later turn, a night of sleep), and those whose content
    went back to an earlier wording (their vectors are re-embedded by the caller)."""

    touched: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    reworded: dict[int, str] = field(default_factory=dict)


REGENERATED = "regenerated"
NIGHT_UNDONE = "night undone"  # a whole night of sleep rolled back (turn id "sleep:<run id>")
# the columns a rollback puts back from a snapshot: the record's knowledge and flags, never its
# access history (later turns' accesses stay theirs; a dedup's own access is taken back alone)
_RESTORED = (
    "content",
    "kind",
    "importance",
    "private",
    "scope",
    "updated_at",
    "consolidated_at",
    "source",
    "source_turn",
    "stems",
    "archived_at",
    "archived_by",
    "archived_why",
    "due_on",
    "due_every",
    "due_read",
    "remind_state",
    "remind_after",
)


def _changed_since(conn: sqlite3.Connection, record_id: int, turn_id: str, after: int) -> bool:
    """Whether anything but this turn changed the record after change ``after`` (an access by
    a later turn is not a change of the record; its access stays)."""
    return (
        conn.execute(
            "SELECT 1 FROM changes WHERE memory_id = ? AND id > ? AND op != 'reinforce' "
            "AND (turn_id IS NULL OR turn_id != ?) LIMIT 1",
            (record_id, after, turn_id),
        ).fetchone()
        is not None
    )


def rollback(conn: sqlite3.Connection, turn_id: str, now: float) -> Rollback:
    """Undo the changes one turn logged, newest first (inside the caller's transaction), but
    only on records unchanged since: a record the owner, sleep or a later turn changed after
    the turn is kept as it is now (and reported). Nothing is deleted: a record the turn created
    goes to the archive with the reason "regenerated" ("night undone" for a night of sleep). Records pinned by the owner are left as
    they are. The undone changes leave the log; the kept ones stay in it, marked ``:kept``."""
    out = Rollback()
    changes = conn.execute(
        "SELECT id, at, op, memory_id, before FROM changes WHERE turn_id = ? ORDER BY id DESC",
        (turn_id,),
    ).fetchall()
    last: dict[int, int] = {}
    for ch in changes:
        last.setdefault(ch["memory_id"], ch["id"])
    skip: set[int] = set()
    for rid, after in last.items():
        cur = conn.execute("SELECT pinned FROM memories WHERE id = ?", (rid,)).fetchone()
        if cur is None:
            skip.add(rid)  # purged since: nothing left to undo
        elif cur["pinned"]:
            skip.add(rid)  # the owner's lock: regenerate never touches a pinned record
        elif _changed_since(conn, rid, turn_id, after):
            skip.add(rid)
            out.kept.append(rid)
    for ch in changes:
        rid = ch["memory_id"]
        if rid in skip:
            if rid in out.kept:
                conn.execute(
                    "UPDATE changes SET turn_id = ? WHERE id = ?", (f"{turn_id}:kept", ch["id"])
                )
            continue
        if ch["before"] is None:  # created by this turn: archived, never deleted
            if not is_archived(conn, rid):
                why = NIGHT_UNDONE if turn_id.startswith("sleep:") else REGENERATED
                conn.execute(
                    "UPDATE memories SET archived_at = ?, archived_by = ?, "
                    "archived_why = ? WHERE id = ?",
                    (now, Actor.OWNER.value, why, rid),
                )
        else:
            snap = json.loads(ch["before"])
            if "access" in snap:  # a reinforcement: only its own access is taken back
                take_back_access(conn, rid, snap["access"])
            else:
                r = snap["row"]
                cols = [c for c in _RESTORED if c in r]
                old = conn.execute("SELECT content FROM memories WHERE id = ?", (rid,)).fetchone()[
                    0
                ]
                conn.execute(
                    f"UPDATE memories SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                    (*[r[c] for c in cols], rid),
                )
                if r.get("content") is not None and r["content"] != old:
                    out.reworded[rid] = r["content"]
                if ch["op"] == "dedup":  # the dedup's reinforcement, at the change's moment
                    take_back_access(conn, rid, ch["at"])
        conn.execute("DELETE FROM changes WHERE id = ?", (ch["id"],))
        if rid not in out.touched:
            out.touched.append(rid)
    return out
