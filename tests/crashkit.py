"""Tools for crash-safety tests (SPEC §11): a connection that fails at statement N, a tiny
deterministic embedder (so the ``vectors`` table takes part), dumps and invariants of a store
file, and the child process that the kill test SIGKILLs (``python -m tests.crashkit …``).
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------- fault injection
class InjectedFault(sqlite3.OperationalError):
    """The failure a :class:`FaultPlan` injects (looks like a disk I/O error to the core)."""


@dataclass
class FaultPlan:
    """Which statement fails once the plan is armed.

    ``mode="once"``: only statement ``fail_at`` fails (a transient I/O error; later statements,
    e.g. the ROLLBACK, work). ``mode="dead"``: ``fail_at`` and every later statement fail, as if
    the process had died there — nothing after the fault reaches the file.
    ``fail_at=None`` only counts (a dry run that measures how many statements an op makes)."""

    fail_at: int | None = None
    mode: str = "once"
    armed: bool = False
    executed: list[str] = field(default_factory=list)  # statements seen while armed
    fired: bool = False

    def tick(self, sql: str) -> None:
        if not self.armed:
            return
        n = len(self.executed)
        self.executed.append(" ".join(str(sql).split())[:120])
        if self.fail_at is None:
            return
        if n == self.fail_at or (self.mode == "dead" and n > self.fail_at):
            self.fired = True
            raise InjectedFault(f"disk I/O error (injected at statement {n}: {self.executed[-1]})")


class FaultyConnection(sqlite3.Connection):
    """A real sqlite3 connection whose ``execute``/``executemany`` consult a :class:`FaultPlan`."""

    plan: FaultPlan | None = None

    def execute(self, sql, parameters=(), /):  # type: ignore[override]
        if self.plan is not None:
            self.plan.tick(sql)
        return super().execute(sql, parameters)

    def executemany(self, sql, parameters, /):  # type: ignore[override]
        if self.plan is not None:
            self.plan.tick(sql)
        return super().executemany(sql, parameters)


def faulty_factory(plan: FaultPlan) -> Callable[[str | Path], sqlite3.Connection]:
    """A ``connection_factory`` for :class:`core.store.storage.Storage` (same setup as ``connect``)."""

    def factory(path: str | Path) -> sqlite3.Connection:
        conn = sqlite3.connect(
            str(path),
            isolation_level=None,
            check_same_thread=False,
            timeout=30.0,
            factory=FaultyConnection,
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.plan = plan
        return conn

    return factory


# ---------------------------------------------------------------------------- a fake embedder
class HashEmbedder:
    """Deterministic bag-of-stems vectors: no model files, but real rows in ``vectors``."""

    name = "test-hash-32"
    dim = 32

    def embed(self, texts: list[str]) -> np.ndarray:
        from core import text as core_text

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for s in core_text.stems(t):
                h = int.from_bytes(hashlib.blake2b(s.encode(), digest_size=4).digest(), "little")
                out[i, h % self.dim] += 1.0 if h & 1 << 31 else -1.0
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else out[i]
            if not n:
                out[i, 0] = 1.0
        return out

    def embed_many(
        self,
        texts: list[str],
        batch_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        from core.embedding import embed_batches

        return embed_batches(self.embed, self.dim, texts, batch_size, progress)


# ---------------------------------------------------------------------------- dumps, invariants
TABLES = ("memories", "accesses", "vectors", "changes", "meta", "sqlite_sequence")


def open_ro(path: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
    conn.row_factory = sqlite3.Row
    return conn


def dump(path: str | Path) -> dict[str, list[tuple]]:
    """Every row of the memory tables, in a canonical order (for before/after comparison)."""
    conn = open_ro(path)
    try:
        out = {}
        for t in TABLES:
            rows = conn.execute(f"SELECT * FROM {t}").fetchall()
            out[t] = sorted(tuple(r) for r in rows)
        return out
    finally:
        conn.close()


def invariant_problems(path: str | Path) -> list[str]:
    """What is inconsistent in a store file (empty list: consistent)."""
    conn = open_ro(path)
    problems: list[str] = []
    try:
        ic = conn.execute("PRAGMA integrity_check").fetchall()
        if [tuple(r) for r in ic] != [("ok",)]:
            problems.append(f"integrity_check: {[tuple(r) for r in ic]}")
        fk = conn.execute("PRAGMA foreign_key_check").fetchall()
        if fk:
            problems.append(f"foreign_key_check: {[tuple(r) for r in fk]}")
        for row in conn.execute(
            "SELECT m.id, m.access_count, (SELECT COUNT(*) FROM accesses a WHERE a.memory_id = m.id)"
            " AS n, m.last_access_at, (SELECT MAX(at) FROM accesses a WHERE a.memory_id = m.id)"
            " AS last FROM memories m"
        ):
            if row["access_count"] != row["n"]:
                problems.append(
                    f"#{row['id']}: access_count {row['access_count']} != {row['n']} access rows"
                )
            if row["last_access_at"] != row["last"]:
                problems.append(
                    f"#{row['id']}: last_access_at {row['last_access_at']} != "
                    f"latest access {row['last']}"
                )
        for t, col in (
            ("accesses", "memory_id"),
            ("vectors", "memory_id"),
            ("changes", "memory_id"),
        ):
            orphans = conn.execute(
                f"SELECT DISTINCT {col} FROM {t} WHERE {col} NOT IN (SELECT id FROM memories)"
            ).fetchall()
            if orphans:
                problems.append(f"{t} rows of missing records: {[r[0] for r in orphans]}")
        for row in conn.execute(
            "SELECT id, content, stems, archived_at, archived_by FROM memories"
        ):
            from core import text as core_text

            if row["stems"] != " ".join(core_text.stems(row["content"])):
                problems.append(f"#{row['id']}: stems do not match content")
            if (row["archived_at"] is None) != (row["archived_by"] is None):
                problems.append(f"#{row['id']}: half-archived")
        # the change log tells the same story as the rows
        for row in conn.execute("SELECT id, access_count, archived_at FROM memories"):
            ops = [
                r[0]
                for r in conn.execute(
                    "SELECT op FROM changes WHERE memory_id = ? ORDER BY id", (row["id"],)
                )
            ]
            if ops.count("create") > 1 or (ops and "create" in ops and ops[0] != "create"):
                problems.append(f"#{row['id']}: change log {ops} has a misplaced create")
            n_reinf = sum(op in ("reinforce", "dedup") for op in ops)
            if n_reinf != row["access_count"]:
                problems.append(
                    f"#{row['id']}: {n_reinf} reinforce/dedup changes but "
                    f"access_count {row['access_count']}"
                )
            moves = [op for op in ops if op in ("forget", "restore")]
            archived = row["archived_at"] is not None
            if archived != (bool(moves) and moves[-1] == "forget"):
                problems.append(f"#{row['id']}: archived={archived} but change log {ops}")
    finally:
        conn.close()
    return problems


# ---------------------------------------------------------------------------- the kill child
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
    "сад",
    "пианино",
    "река",
    "кофе",
    "поезд",
    "зима",
    "книга",
    "письмо",
    "врач",
    "рынок",
    "bicycle",
    "museum",
    "кошка",
    "собака",
    "море",
    "гора",
)


def note(seq: int, rng: random.Random, tag: str = "") -> str:
    words = " ".join(rng.sample(WORDS, 3))
    return f"note{seq} zk{rng.getrandbits(40):010x} {tag}{words}"


def child_main(argv: list[str]) -> None:
    """Loop of random memory ops on ``argv[0]``; prints a JSON line (flushed) before each op
    starts ("begin") and after it returned ("done")."""
    from core import ManualClock, Memory, MemoryConfig
    from core.privacy import OWNER_TRUSTED
    from core.store.records import Actor

    path, seed, seq = argv[0], int(argv[1]), int(argv[2])
    rng = random.Random(seed)
    clock = ManualClock(1_780_000_000.0 + seq)
    mem = Memory.open(path, MemoryConfig(), clock, embedder=HashEmbedder())
    # a search's reinforcement is written by the next write's transaction, not by a timer:
    # what a kill may lose is then exactly the searches since the last write that returned
    mem._accesses.interval = None
    live = {r.id: r.content for r in mem.list(OWNER_TRUSTED, limit=10_000)}
    archived = {a.record.id for a in mem.archived(OWNER_TRUSTED, limit=10_000)}

    def say(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    say({"ready": True})
    while True:
        seq += 1
        clock.advance(1.0)
        roll = rng.random()
        if roll < 0.35 or len(live) < 3:
            content = note(seq, rng)
            say({"begin": seq, "op": "save", "content": content})
            res = mem.save(
                content, OWNER_TRUSTED, kind="fact", importance=3, private=rng.random() < 0.3
            )
            live[res.id] = res.record.content
            say({"done": seq, "op": "save", "id": res.id, "status": res.status})
        elif roll < 0.45:
            rid = rng.choice(sorted(live))
            say({"begin": seq, "op": "resave", "id": rid, "content": live[rid]})
            res = mem.save(live[rid], OWNER_TRUSTED, kind="fact", importance=3)
            say({"done": seq, "op": "resave", "id": res.id, "status": res.status})
        elif roll < 0.6:
            rid = rng.choice(sorted(live))
            content = note(seq, rng, "updated ")
            say({"begin": seq, "op": "update", "id": rid, "content": content})
            mem.update(rid, OWNER_TRUSTED, content=content, importance=rng.randint(1, 5))
            live[rid] = content
            say({"done": seq, "op": "update", "id": rid})
        elif roll < 0.72:
            rid = rng.choice(sorted(live))
            say({"begin": seq, "op": "forget", "id": rid})
            mem.forget(rid, "test", OWNER_TRUSTED, actor=Actor.OWNER)
            archived.add(rid)
            live.pop(rid)
            say({"done": seq, "op": "forget", "id": rid})
        elif roll < 0.8 and archived:
            rid = rng.choice(sorted(archived))
            say({"begin": seq, "op": "restore", "id": rid})
            r = mem.restore(rid, OWNER_TRUSTED)
            archived.discard(rid)
            live[rid] = r.content
            say({"done": seq, "op": "restore", "id": rid})
        else:
            q = " ".join(rng.sample(WORDS, 2))
            say({"begin": seq, "op": "search", "query": q})
            hits = mem.search(q, OWNER_TRUSTED)
            say({"done": seq, "op": "search", "ids": [h.record.id for h in hits]})


if __name__ == "__main__":
    child_main(sys.argv[1:])
