"""Several processes on one store (issue 14 item 4, SPEC §10): a connection's in-memory
indexes follow what other connections write, before it recalls — and only the changed records
are reindexed. Two ``Memory`` objects on one file are two SQLite connections, exactly what two
processes are to SQLite (``tests/test_serve.py`` does it across real processes)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import ManualClock, Memory, MemoryConfig
from core.privacy import OWNER_TRUSTED, PUBLIC
from core.store.records import Actor
from tests.fakes import HashEmbedder

T0 = 1_780_000_000.0
WORDS = (
    "sister",
    "Anna",
    "Kazan",
    "cello",
    "bank",
    "doctor",
    "hiking",
    "garden",
    "Lena",
    "nurse",
    "bicycle",
    "piano",
)


def index_state(mem: Memory) -> dict:
    """Everything recall reads from the in-memory index, by record id."""
    idx = mem._index
    cols = idx.columns
    names = {code: name for name, code in cols._scope_codes.items()}
    out = {}
    for i in np.flatnonzero(cols.alive[: len(cols.alive)]):
        i = int(i)
        vec = (
            idx.vectors.get(i) if idx.vectors is not None and hasattr(idx.vectors, "get") else None
        )
        out[i] = (
            bool(cols.core[i]),
            bool(cols.private[i]),
            bool(cols.pinned[i]),
            float(cols.importance[i]),
            float(cols.half_life[i]),
            float(cols.recalled_at[i]),
            float(cols.reinforcements[i]),
            names[int(cols.scope[i])],
            tuple(idx.lexical.docs.get(i, ())),
            None if vec is None else tuple(np.round(vec, 5)),
        )
    keys = set() if idx.vectors is None else {int(k) for k in idx.vectors.keys()}  # noqa: SIM118
    return {"records": out, "vector_keys": keys}


ops = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "save",
                "save_private",
                "update",
                "set_private",
                "unset_private",
                "pin",
                "forget",
                "restore",
                "search",
                "rollback",
                "import",
                "backfill",
            ]
        ),
        st.lists(st.sampled_from(WORDS), min_size=2, max_size=5).map(" ".join),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_another_connections_writes_are_seen_before_recall(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("coord") / "memory.db"
    clock = ManualClock(T0)
    emb = HashEmbedder()
    a = Memory.open(path, MemoryConfig(), clock, emb)  # the writer ("the TUI")
    b = Memory.open(path, MemoryConfig(), clock, emb)  # the reader ("eva serve")
    plain = Memory.open(path, MemoryConfig(), clock)  # writes records without vectors
    try:
        a.save("Owner's sister Anna lives in Kazan", OWNER_TRUSTED)
        turns: list[tuple[str, bool]] = []  # (turn id, wrote content)
        for n, (op, words, k) in enumerate(steps):
            clock.advance(3600)
            live = [r.id for r in a.list(limit=1000)]
            archived = [r.record.id for r in a.archived()]
            rid = live[k % len(live)] if live else None
            turn = OWNER_TRUSTED.with_turn(f"t{n}")
            if op in ("save", "save_private"):
                a.save(f"{words} {n}", turn, private=op == "save_private")
                turns.append((f"t{n}", True))
            elif op == "update" and rid:
                a.update(rid, turn, content=f"{words} changed {n}", actor=Actor.OWNER)
                turns.append((f"t{n}", True))
            elif op in ("set_private", "unset_private") and rid:
                a.set_private(rid, op == "set_private")
            elif op == "pin" and rid:
                a.pin(rid, k % 2 == 0)
            elif op == "forget" and rid:
                a.forget(rid, "test", OWNER_TRUSTED, actor=Actor.OWNER)
            elif op == "restore" and archived:
                a.restore(archived[k % len(archived)])
            elif op == "search":
                a.search(words, turn)
                turns.append((f"t{n}", False))
            elif op == "rollback" and turns:
                # a regenerate rolls back the last turn; a night's rollback (sleep:<run>) an
                # older one, which always rewrote records (see core.memory.coordination.changed_ids)
                older = [i for i, (_, content) in enumerate(turns[:-1]) if content]
                pick = older[k % len(older)] if older and k % 2 else len(turns) - 1
                a.rollback_turn(turns.pop(pick)[0])
            elif op == "import":
                a.import_records([{"content": f"{words} imported {n}", "private": k % 2 == 0}])
            elif op == "backfill":
                plain.save(f"{words} unembedded {n}", OWNER_TRUSTED)
                a.backfill_vectors()
            b.recall(words, PUBLIC)  # the reader recalls: it must be in step first
            truth = Memory.open(path, MemoryConfig(), clock, emb)
            try:
                assert index_state(b) == index_state(truth), (op, n)
            finally:
                truth._storage.close()  # never persist its index
            for h in b.recall(words, PUBLIC):  # privacy holds across processes
                assert not b.get(h.id).private
    finally:
        for m in (a, b, plain):
            m._storage.close()


def test_only_the_changed_records_are_reindexed(tmp_path):
    a = Memory.open(tmp_path / "m.db")
    b = Memory.open(tmp_path / "m.db")
    a.import_records(
        [{"content": f"record number {i} about {WORDS[i % len(WORDS)]}"} for i in range(500)]
    )
    assert b.refresh() == 500  # the import: every new record
    assert b.refresh() == 0  # nothing since
    a._storage.meta_set("x", "1")  # a commit that wrote no memory
    assert b.refresh() == 0
    rid = a.save("Owner adopted a quokka", OWNER_TRUSTED).id
    assert b.refresh() == 1
    a.set_private(rid, True)
    assert b.refresh() == 1
    assert not b.recall("quokka", PUBLIC) and b.recall("quokka", OWNER_TRUSTED)
    a._storage.close()
    b._storage.close()


def test_a_live_holder_on_this_host_is_respected_while_its_pid_lives(tmp_path):
    """One sleeper at a time (SPEC §10): on this host the holder's pid decides — a heartbeat
    held up by a long write does not hand the lease over; a pid that is gone does, and so does
    a heartbeat so old that the pid must belong to another program by now."""
    import json
    import os
    import subprocess
    import sys
    import time

    from core.memory.coordination import _HOST, LEASE_KEY, Lease, SleepLease

    with Memory.open(tmp_path / "m.db") as mem:
        lease = mem.attach(SleepLease)
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:

            def hold(heartbeat_age: float, pid: int = other.pid) -> Lease | None:
                now = time.time()
                mem._storage.meta_set(
                    LEASE_KEY,
                    json.dumps(
                        {
                            "pid": pid,
                            "host": _HOST,
                            "nonce": "other",
                            "since": now - 300,
                            "heartbeat": now - heartbeat_age,
                        }
                    ),
                )
                return lease.holder()

            assert hold(5) is not None
            assert hold(120) is not None  # silent for 2 min, but its pid lives
            assert hold(3600) is None  # an hour: that pid is another program now
            assert hold(5, pid=os.getpid()) is None  # our pid, not our nonce: gone
        finally:
            other.kill()
            other.wait()
        assert hold(5) is None  # the holder died
