"""The journal of nights (SPEC §7): each run with its stages and phases, the plans the model
made, every op applied or refused with its ``why`` and the reason, the model, timings, calls.

Rows live in the ``sleep_runs`` / ``sleep_phases`` / ``sleep_ops`` tables (schema v3); this
module owns them (:class:`Journal`, on the memory's database: ``memory.attach(Journal)``). A
phase that changes memory is journaled on the same connection, inside the same transaction, as
its changes: after a crash the journal and the store tell the same story. ``sleep_marks``
remembers per record when a phase last reviewed it (e.g. a faded record the model chose to keep).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from core.store.storage import Storage

RUN_STATUSES = ("done", "woken", "failed", "skipped")
PHASE_STATUSES = ("applied", "planned", "skipped", "failed", "discarded")


@dataclass(frozen=True)
class SleepProgress:
    stage: str
    phase: str
    done: int
    total: int
    message: str


@dataclass(frozen=True)
class OpLog:
    op: str
    ids: list[int]
    applied: bool
    why: str
    refused_reason: str | None = None  # None: applied (or, in a dry run, would be applied)
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PhaseLog:
    stage: str
    name: str
    status: str  # applied | planned | skipped | failed | discarded
    seconds: float
    calls: int
    plans: list[dict[str, Any]] = field(default_factory=list)
    ops: list[OpLog] = field(default_factory=list)
    note: str = ""


@dataclass(frozen=True)
class SleepRun:
    id: int
    started_at: float
    finished_at: float | None
    status: str  # done | woken | failed | skipped ("running" only while in progress)
    dry_run: bool
    reason: str  # schedule | manual | tool | requested | …
    model: str | None
    stages: dict[str, str]  # stage name → done | skipped | woken | failed
    phases: list[PhaseLog]
    notable: bool
    summary: str
    seen: bool = False

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.phases)

    @property
    def ops(self) -> list[OpLog]:
        return [o for p in self.phases for o in p.ops]

    def redacted(self) -> SleepRun:
        """The run as anyone but the owner on a trusted surface may see it (SPEC §11): built
        from an allowlist — ids, counts, statuses, times, flags and the code's own words (stage,
        phase, op and reason names). Every free-text field is blanked, whatever it holds:
        plans, whys, op details, refused reasons (a refusal may quote a record's numbers: it
        becomes the bare word ``refused``), phase notes, the model's name; the summary is
        rebuilt from counts alone."""
        phases = [
            PhaseLog(
                _word(p.stage),
                _word(p.name),
                _word(p.status),
                float(p.seconds),
                int(p.calls),
                plans=[],
                ops=[
                    OpLog(
                        _word(o.op),
                        [int(i) for i in o.ids],
                        bool(o.applied),
                        "",
                        None if o.refused_reason is None else "refused",
                        {},
                    )
                    for o in p.ops
                ],
                note="",
            )
            for p in self.phases
        ]
        ops = [o for p in phases for o in p.ops]
        applied = sum(o.applied for o in ops)
        refused = sum(o.refused_reason is not None for o in ops)
        return SleepRun(
            id=int(self.id),
            started_at=self.started_at,
            finished_at=self.finished_at,
            status=_word(self.status),
            dry_run=bool(self.dry_run),
            reason=self.reason if self.reason in RUN_REASONS else "other",
            model=None,
            stages={_word(k): _word(v) for k, v in self.stages.items()},
            phases=phases,
            notable=bool(self.notable),
            summary=f"{applied} applied, {refused} refused" if ops else "",
            seen=bool(self.seen),
        )


# why a night ran: the code's own words (anything else is shown to others as "other")
RUN_REASONS = ("schedule", "manual", "tool", "requested", "api", "cron")
_CODE_WORD = re.compile(r"[a-z][a-z0-9_]{0,31}")


def _word(value: object) -> str:
    """A name the code gave (a stage, phase, op or status) as it is; anything else — free
    text that could quote memory — as ``other``."""
    return value if isinstance(value, str) and _CODE_WORD.fullmatch(value) else "other"


# ---------------------------------------------------------------------------- writing


def start_run(
    conn: sqlite3.Connection, now: float, dry_run: bool, reason: str, model: str | None
) -> int:
    cur = conn.execute(
        "INSERT INTO sleep_runs (started_at, status, dry_run, reason, model) "
        "VALUES (?, 'running', ?, ?, ?)",
        (now, int(dry_run), reason, model),
    )
    assert cur.lastrowid is not None  # an INSERT sets it
    return cur.lastrowid


def write_phase(conn: sqlite3.Connection, run_id: int, seq: int, phase: PhaseLog) -> int:
    cur = conn.execute(
        "INSERT INTO sleep_phases (run_id, seq, stage, name, status, seconds, calls, plans, note) "
        "VALUES (?,?,?,?,?,?,?,?,?)",
        (
            run_id,
            seq,
            phase.stage,
            phase.name,
            phase.status,
            float(phase.seconds),
            phase.calls,
            json.dumps(phase.plans, ensure_ascii=False, default=str),
            phase.note,
        ),
    )
    assert cur.lastrowid is not None  # an INSERT sets it
    pid = cur.lastrowid
    conn.executemany(
        "INSERT INTO sleep_ops (phase_id, seq, op, ids, applied, why, refused_reason, detail) "
        "VALUES (?,?,?,?,?,?,?,?)",
        [
            (
                pid,
                i,
                o.op,
                json.dumps(list(o.ids)),
                int(o.applied),
                o.why,
                o.refused_reason,
                json.dumps(o.detail, ensure_ascii=False, default=str),
            )
            for i, o in enumerate(phase.ops)
        ],
    )
    return pid


def finish_run(
    conn: sqlite3.Connection,
    run_id: int,
    now: float,
    status: str,
    stages: dict[str, str],
    notable: bool,
    summary: str,
    model: str | None,
) -> None:
    conn.execute(
        "UPDATE sleep_runs SET finished_at = ?, status = ?, stages = ?, notable = ?, "
        "summary = ?, model = ? WHERE id = ?",
        (now, status, json.dumps(stages), int(notable), summary, model, run_id),
    )


def fail_interrupted(conn: sqlite3.Connection, now: float) -> int:
    """Runs left 'running' by a process that died mid-sleep become failed (notable)."""
    return conn.execute(
        "UPDATE sleep_runs SET status = 'failed', finished_at = COALESCE(finished_at, ?), "
        "notable = 1, summary = 'interrupted: Eva stopped while sleeping; applied phases are "
        "kept, the unfinished one was discarded' WHERE status = 'running'",
        (now,),
    ).rowcount


def mark_seen(conn: sqlite3.Connection, run_id: int) -> bool:
    return conn.execute("UPDATE sleep_runs SET seen = 1 WHERE id = ?", (run_id,)).rowcount > 0


def set_marks(conn: sqlite3.Connection, phase: str, ids: Iterable[int], at: float) -> None:
    conn.executemany(
        "INSERT INTO sleep_marks (memory_id, phase, at) VALUES (?, ?, ?) "
        "ON CONFLICT(memory_id, phase) DO UPDATE SET at = excluded.at",
        [(int(i), phase, at) for i in ids],
    )


# ---------------------------------------------------------------------------- the store


class Journal:
    """The journal's tables on the memory's database (same connection and lock)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._storage.transaction() as conn:
            yield conn

    def last_night(self, dry_runs: bool = True) -> sqlite3.Row | None:
        """The latest run that counts for the schedule (done, skipped or failed); with
        ``dry_runs`` False, a dry run does not count."""
        rows = self._storage.query(
            "SELECT status, started_at, finished_at FROM sleep_runs "
            "WHERE status IN ('done', 'skipped', 'failed')"
            + ("" if dry_runs else " AND dry_run = 0")
            + " ORDER BY id DESC LIMIT 1"
        )
        return rows[0] if rows else None

    def runs(
        self, limit: int = 30, *, notable_unseen: bool = False, run_id: int | None = None
    ) -> list[SleepRun]:
        return load_runs(self._storage, limit, notable_unseen=notable_unseen, run_id=run_id)

    def marks(self, phase: str) -> dict[int, float]:
        return marks(self._storage, phase)

    def meta_get(self, key: str) -> str | None:
        return self._storage.meta_get(key)

    def meta_set(self, key: str, value: str) -> None:
        self._storage.meta_set(key, value)


# ---------------------------------------------------------------------------- reading


def marks(storage: Storage, phase: str) -> dict[int, float]:
    """When each record was last reviewed by ``phase`` (and kept)."""
    return {
        r[0]: r[1]
        for r in storage.query("SELECT memory_id, at FROM sleep_marks WHERE phase = ?", (phase,))
    }


def _runs(storage: Storage, rows: Sequence[sqlite3.Row]) -> list[SleepRun]:
    if not rows:
        return []
    ids = [r["id"] for r in rows]
    q = ",".join("?" * len(ids))
    phases: dict[int, list[tuple[int, sqlite3.Row]]] = {}
    pids: list[int] = []
    for p in storage.query(
        f"SELECT * FROM sleep_phases WHERE run_id IN ({q}) ORDER BY run_id, seq", tuple(ids)
    ):
        phases.setdefault(p["run_id"], []).append((p["id"], p))
        pids.append(p["id"])
    ops: dict[int, list[OpLog]] = {}
    for start in range(0, len(pids), 500):
        part = pids[start : start + 500]
        qq = ",".join("?" * len(part))
        for o in storage.query(
            f"SELECT * FROM sleep_ops WHERE phase_id IN ({qq}) ORDER BY phase_id, seq", tuple(part)
        ):
            ops.setdefault(o["phase_id"], []).append(
                OpLog(
                    o["op"],
                    json.loads(o["ids"]),
                    bool(o["applied"]),
                    o["why"],
                    o["refused_reason"],
                    json.loads(o["detail"]),
                )
            )
    out = []
    for r in rows:
        plist = [
            PhaseLog(
                p["stage"],
                p["name"],
                p["status"],
                p["seconds"],
                p["calls"],
                json.loads(p["plans"]),
                ops.get(pid, []),
                p["note"],
            )
            for pid, p in phases.get(r["id"], [])
        ]
        out.append(
            SleepRun(
                id=r["id"],
                started_at=r["started_at"],
                finished_at=r["finished_at"],
                status=r["status"],
                dry_run=bool(r["dry_run"]),
                reason=r["reason"],
                model=r["model"],
                stages=json.loads(r["stages"]),
                phases=plist,
                notable=bool(r["notable"]),
                summary=r["summary"],
                seen=bool(r["seen"]),
            )
        )
    return out


def load_runs(
    storage: Storage, limit: int = 30, *, notable_unseen: bool = False, run_id: int | None = None
) -> list[SleepRun]:
    where, args = [], []
    if run_id is not None:
        where.append("id = ?")
        args.append(run_id)
    if notable_unseen:
        where.append("notable = 1 AND seen = 0 AND status != 'running'")
    sql = "SELECT * FROM sleep_runs" + (" WHERE " + " AND ".join(where) if where else "")
    rows = storage.query(sql + " ORDER BY id DESC LIMIT ?", (*args, limit))
    return _runs(storage, rows)
