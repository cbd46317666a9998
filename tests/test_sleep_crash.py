"""kill -9 during sleep (SPEC §7, §11): "every multi-step change (…, apply a sleep phase, …) is one
transaction; a crash at any point leaves a consistent store and loses no memory".

A child process (``python -m tests.test_sleep_crash <db> <phase> <n>``) sleeps over a store of
24 duplicate pairs and 8 faded trivia, with a planner that merges every pair, forgets every
candidate and re-weighs what it is shown, and SIGKILLs itself (a real ``kill -9``) at the n-th
SQL statement after the chosen phase starts applying — n drawn at random, so the kill lands
before, inside or after that phase's transaction. The parent then checks the file: integrity, the record invariants, and that each phase is there
wholly (its journal row and all of its changes) or not at all. Sleep then starts again on the
file: the interrupted run is journaled as failed and a new night completes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core import ManualClock
from core.config import SleepConfig
from core.llm import ToolCall
from core.sleep import Sleeper
from tests.crashkit import REPO, open_ro
from tests.fakes import HashEmbedder
from tests.sleep_kit import ANCIENT, OLD, T0, open_memory, tool_ids

PAIRS = 24
TRIVIA = 8
WORDS = (
    "garden",
    "piano",
    "river",
    "coffee",
    "train",
    "winter",
    "book",
    "letter",
    "doctor",
    "market",
    "bicycle",
    "museum",
    "violin",
    "castle",
    "forest",
    "island",
    "kitchen",
    "recipe",
    "camera",
    "laptop",
    "tennis",
    "opera",
    "ballet",
    "harbor",
    "meadow",
    "canyon",
    "glacier",
    "orchard",
    "lantern",
    "compass",
    "anchor",
    "falcon",
)


def corpus() -> list[dict]:
    items = []
    for i in range(PAIRS):
        a, b, c = WORDS[i % len(WORDS)], WORDS[(i + 7) % len(WORDS)], WORDS[(i + 13) % len(WORDS)]
        base = f"Pair {i} zq{i:03d}: the owner keeps a {a} and a {b} near the {c}"
        items.append({"content": base, "created_at": OLD})
        items.append({"content": base + " at home", "created_at": OLD, "private": i % 3 == 0})
    for i in range(TRIVIA):
        w = [WORDS[(i + k * 8) % len(WORDS)] for k in range(4)]
        items.append(
            {"content": f"Trivia tq{i:03d}: {' '.join(w)}", "importance": 1, "created_at": ANCIENT}
        )
    return items


def planner_reply(messages, tool) -> ToolCall:
    ids = sorted(tool_ids(tool))
    d = tool["description"]
    if "forgetting" in d:
        ops = [{"op": "forget", "id": i, "why": "faded"} for i in ids]
    elif "kinds" in d:
        ops = [
            {"op": "set_importance", "id": i, "importance": 4, "why": "matters"} for i in ids[:5]
        ]
    else:
        text = messages[1]["content"].split('"content": "')[1].split('"')[0]
        ops = [{"op": "merge", "ids": ids, "content": text + " (merged)", "why": "same"}]
    return ToolCall("sleep_finish", {"reasoning": "tidy", "ops": ops})


class ScriptPlanner:
    name = "crash-planner"
    context_size = 32_768

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream_chat(self, *a, **k):  # pragma: no cover - not used by sleep
        raise NotImplementedError

    def force_tool_call(self, messages, tool, timeout=None) -> ToolCall:
        return planner_reply(messages, tool)

    def generate_json(self, messages, schema, timeout=None, max_tokens=None) -> dict:
        raise NotImplementedError


class KillSwitch:
    """Armed when the target phase starts applying; SIGKILLs its own process at the N-th
    statement after that — a real kill -9 at a chosen point of the apply."""

    armed = False
    count = 0
    at = -1


class CountingConnection(sqlite3.Connection):
    def _tick(self) -> None:
        if KillSwitch.armed:
            if KillSwitch.count == KillSwitch.at:
                os.kill(os.getpid(), signal.SIGKILL)
            KillSwitch.count += 1

    def execute(self, sql, parameters=(), /):  # type: ignore[override]
        self._tick()
        return super().execute(sql, parameters)

    def executemany(self, sql, parameters, /):  # type: ignore[override]
        self._tick()
        return super().executemany(sql, parameters)


def counting_factory(path):
    conn = sqlite3.connect(
        str(path),
        isolation_level=None,
        check_same_thread=False,
        timeout=30.0,
        factory=CountingConnection,
    )
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def config() -> SleepConfig:
    return SleepConfig(min_memories=0, max_forget=100, max_ops=500, max_calls=500, review="plan")


def child_main(argv: list[str]) -> None:
    """``<db> <phase> <n>``: sleep, and die by SIGKILL at the n-th statement after ``phase``
    starts applying."""
    from core import Memory, MemoryConfig

    path, target, at = argv[0], argv[1], int(argv[2])
    clock = ManualClock(T0)
    mem = Memory.open(
        path, MemoryConfig(), clock, embedder=HashEmbedder(), connection_factory=counting_factory
    )

    def say(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def progress(p) -> None:
        say({"phase": p.phase, "done": p.done, "total": p.total})
        if p.phase == target and p.done == p.total:
            KillSwitch.at, KillSwitch.armed = at, True

    s = Sleeper(mem, ScriptPlanner(), config(), clock)
    run = s.run(progress=progress)
    say({"finished": run.status, "statements": KillSwitch.count})


if __name__ == "__main__":
    child_main(sys.argv[1:])


# ---------------------------------------------------------------------------- the checks


def record_problems(conn: sqlite3.Connection) -> list[str]:
    from core import text as core_text

    problems = []
    if [tuple(r) for r in conn.execute("PRAGMA integrity_check")] != [("ok",)]:
        problems.append("integrity_check failed")
    if conn.execute("PRAGMA foreign_key_check").fetchall():
        problems.append("foreign_key_check failed")
    for row in conn.execute(
        "SELECT m.id, m.content, m.stems, m.access_count, m.last_access_at, m.archived_at, "
        "m.archived_by, (SELECT COUNT(*) FROM accesses a WHERE a.memory_id = m.id) AS n, "
        "(SELECT MAX(at) FROM accesses a WHERE a.memory_id = m.id) AS last FROM memories m"
    ):
        if row["access_count"] != row["n"] or row["last_access_at"] != row["last"]:
            problems.append(f"#{row['id']}: access history out of step")
        if row["stems"] != " ".join(core_text.stems(row["content"])):
            problems.append(f"#{row['id']}: stems do not match content")
        if (row["archived_at"] is None) != (row["archived_by"] is None):
            problems.append(f"#{row['id']}: half-archived")
    for t in ("accesses", "vectors", "changes", "sleep_marks"):
        if conn.execute(
            f"SELECT COUNT(*) FROM {t} WHERE memory_id NOT IN (SELECT id FROM memories)"
        ).fetchone()[0]:
            problems.append(f"{t}: rows of missing records")
    return problems


def phase_problems(conn: sqlite3.Connection, template: dict[int, dict]) -> tuple[list[str], dict]:
    """Each phase is wholly in the file (journal row + all its changes) or not at all."""
    problems = []
    phases = {r["name"]: r["status"] for r in conn.execute("SELECT name, status FROM sleep_phases")}
    rows = {
        r["id"]: dict(r)
        for r in conn.execute(
            "SELECT id, content, archived_at, archived_why, importance FROM memories"
        )
    }
    pairs = [(i, i + 1) for i in range(1, 2 * PAIRS, 2)]
    merged = [
        sum(rows[x]["archived_at"] is not None for x in p) == 1
        and any(rows[x]["content"].endswith("(merged)") for x in p)
        for p in pairs
    ]
    untouched = [
        all(
            rows[x]["archived_at"] is None and rows[x]["content"] == template[x]["content"]
            for x in p
        )
        for p in pairs
    ]
    if phases.get("review") == "applied":
        if not all(merged):
            problems.append("review journaled as applied but not every pair is merged")
    elif not all(untouched):
        problems.append("review not journaled but some pair changed")
    trivia = range(2 * PAIRS + 1, 2 * PAIRS + TRIVIA + 1)
    gone = [rows[t]["archived_at"] is not None for t in trivia]
    if phases.get("forgetting") == "applied":
        if not all(gone):
            problems.append("forgetting journaled as applied but trivia are live")
    elif any(gone):
        problems.append("forgetting not journaled but trivia are archived")
    ops = conn.execute(
        "SELECT COUNT(*) FROM sleep_ops o JOIN sleep_phases p ON p.id = o.phase_id"
        " WHERE p.name = 'review' AND o.applied = 1"
    ).fetchone()[0]
    if phases.get("review") == "applied" and ops != PAIRS:
        problems.append(f"review journal has {ops} applied ops, expected {PAIRS}")
    return problems, phases


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_during_sleep_leaves_a_consistent_store(tmp_path):
    """§11 + §7: a real SIGKILL at random moments around the apply of the review and the
    forgetting phases leaves a store that passes integrity and record checks, with each phase
    applied wholly (with its journal) or not at all; the next start journals the interrupted
    run as failed and a new night completes on the same file."""
    template = tmp_path / "template.db"
    clock = ManualClock(T0)
    mem = open_memory(tmp_path, clock, embedder=HashEmbedder(), name="template.db")
    mem.import_records(corpus())
    mem.close()
    conn = open_ro(template)
    tmpl = {r["id"]: dict(r) for r in conn.execute("SELECT id, content FROM memories")}
    conn.close()
    rng = random.Random(20260612)
    seen_states: set[tuple] = set()
    outcomes: list[tuple] = []
    for rnd in range(8):
        path = tmp_path / f"round-{rnd}.db"
        shutil.copy(template, path)
        for suffix in ("-wal", "-shm"):
            if Path(str(template) + suffix).exists():
                shutil.copy(str(template) + suffix, str(path) + suffix)
        target = rng.choice(["review", "forgetting"])
        at = rng.randrange(0, 900 if target == "review" else 220)
        err = (tmp_path / f"child-{rnd}.err").open("w")
        proc = subprocess.run(
            [sys.executable, "-m", "tests.test_sleep_crash", str(path), target, str(at)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            timeout=300,
        )
        err.close()
        lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.strip()]
        finished = next((m["finished"] for m in lines if "finished" in m), None)
        assert proc.returncode == -signal.SIGKILL or finished is not None, (
            tmp_path / f"child-{rnd}.err"
        ).read_text()[-2000:]
        conn = open_ro(path)
        try:
            assert record_problems(conn) == [], f"round {rnd}"
            problems, phases = phase_problems(conn, tmpl)
            assert problems == [], f"round {rnd}: {phases}"
            seen_states.add(tuple(sorted(phases.items())))
        finally:
            conn.close()

        from core import Memory, MemoryConfig

        clock = ManualClock(T0 + DAY_AFTER)
        mem = Memory.open(path, MemoryConfig(), clock, embedder=HashEmbedder())
        s = Sleeper(mem, ScriptPlanner(), config(), clock)
        last = s.runs()[0]
        # killed mid-run: journaled as interrupted; killed just after the end: a done night
        assert (last.status == "failed" and "interrupted" in last.summary) or (
            last.status == "done" and phases.get("calibrate") is not None
        ), f"round {rnd}"
        outcomes.append((target, last.status, tuple(sorted(phases.items()))))
        again = s.run()
        assert again.status == "done"
        mem.close()
        conn = open_ro(path)
        try:
            assert record_problems(conn) == [], f"round {rnd} after the new night"
            live = conn.execute(
                "SELECT COUNT(*) FROM memories WHERE archived_at IS NULL"
            ).fetchone()[0]
            assert live == PAIRS  # every pair merged, every trivia forgotten, nothing lost
        finally:
            conn.close()
    # the kills landed in different places (before/inside/after phases), mostly mid-run
    assert len(seen_states) >= 2
    assert any(status == "failed" for _t, status, _p in outcomes)


DAY_AFTER = 86_400.0
