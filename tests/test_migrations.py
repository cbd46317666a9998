"""Schema migrations (SPEC §11 "versioned and tested from every earlier version"; SPEC §2 "records
created before the flag existed are *not* private — never a migration's guess").

A store at version v is built the way a real one lives: migrate to 1, insert data valid at v1,
migrate to 2, insert data valid at v2, … up to v. ``FIXTURES[k]`` holds the data that version k
introduced and what must hold for it after the upgrade. A new entry in ``core.store.storage.MIGRATIONS``
without a fixture here fails with a message saying what to add.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig, TurnContext
from core import text as core_text
from core.store import storage as core_storage
from core.store.storage import MIGRATIONS, SCHEMA_VERSION, StoreError, connect, migrate

T0 = 1_780_000_000.0
DAY = 86_400.0


def _stems(content: str) -> str:
    return " ".join(core_text.stems(content))


# ---------------------------------------------------------------------------- v1: memories
V1_ROWS = [
    # id, content, kind, importance, private, pinned, scope, archived_at, archived_why
    (1, "The owner's cat is called Murka", "fact", 3, 0, 0, "global", None, None),
    (2, "Давление владельца 140/90 после визита к врачу", "fact", 5, 1, 0, "global", None, None),
    (3, "The owner prefers short answers", "core", 4, 0, 1, "global", None, None),
    (4, "Concert with Anna on Friday", "event", 2, 0, 0, "p1", None, None),
    (5, "Owner lived in Kazan", "fact", 2, 1, 0, "global", T0 - DAY, "moved to Moscow"),
]
V1_DEFAULTS_ID = 6
V1_DEFAULTS_CONTENT = "Owner's old passport was issued in 2015"


def v1_insert(conn: sqlite3.Connection) -> None:
    for rid, content, kind, imp, priv, pin, scope, arch_at, arch_why in V1_ROWS:
        conn.execute(
            "INSERT INTO memories (id, content, kind, importance, private, pinned, scope, "
            "created_at, updated_at, last_access_at, access_count, consolidated_at, source, "
            "source_turn, stems, archived_at, archived_by, archived_why) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                rid,
                content,
                kind,
                imp,
                priv,
                pin,
                scope,
                T0 - 10 * DAY,
                T0 - 9 * DAY,
                T0 - 2 * DAY if rid == 4 else None,
                2 if rid == 4 else 0,
                T0 - 5 * DAY if rid == 1 else None,
                "tool",
                "turn-1" if rid == 1 else None,
                _stems(content),
                arch_at,
                "owner" if arch_at else None,
                arch_why,
            ),
        )
        conn.execute(
            "INSERT INTO changes (at, actor, turn_id, op, memory_id, before) "
            "VALUES (?, 'model', ?, 'create', ?, NULL)",
            (T0 - 10 * DAY, "turn-1" if rid == 1 else None, rid),
        )
    # a row written by code that knew nothing of the private/pinned/scope columns
    conn.execute(
        "INSERT INTO memories (id, content, kind, importance, created_at, updated_at, source, "
        "stems) VALUES (?, ?, 'fact', 3, ?, ?, 'init', ?)",
        (
            V1_DEFAULTS_ID,
            V1_DEFAULTS_CONTENT,
            T0 - 3 * DAY,
            T0 - 3 * DAY,
            _stems(V1_DEFAULTS_CONTENT),
        ),
    )
    for at in (T0 - 4 * DAY, T0 - 2 * DAY):
        conn.execute("INSERT INTO accesses (memory_id, at) VALUES (4, ?)", (at,))
    vec = np.arange(4, dtype=np.float32) / 4
    conn.execute(
        "INSERT INTO vectors (memory_id, model, dim, vec) VALUES (1, 'old-model', 4, ?)",
        (vec.tobytes(),),
    )
    conn.execute("INSERT INTO meta (key, value) VALUES ('background_cosine:old-model', '0.41')")


def v1_check(mem: Memory) -> None:
    cat = mem.get(1)
    assert (cat.content, cat.kind.value, cat.importance, cat.private, cat.pinned) == (
        "The owner's cat is called Murka",
        "fact",
        3,
        False,
        False,
    )
    assert cat.vector_model == "old-model" and cat.source_turn == "turn-1"
    assert cat.consolidated_at == T0 - 5 * DAY
    assert mem.get(2).private is True, "a private record stays private"
    assert mem.get(3).pinned is True and mem.get(3).kind.value == "core"
    p1 = mem.get(4, TurnContext(persona="p1"))
    assert p1.scope == "p1" and p1.access_count == 2
    assert p1.accesses == (T0 - 4 * DAY, T0 - 2 * DAY) and p1.last_access_at == T0 - 2 * DAY
    # records written before anybody set the flag are not private, not pinned, global
    legacy = mem.get(V1_DEFAULTS_ID)
    assert (legacy.private, legacy.pinned, legacy.scope) == (False, False, "global")
    # the archive keeps its entries with who/why/when, restorable
    archived = {a.record.id: a for a in mem.archived()}
    assert set(archived) == {5}
    assert archived[5].why == "moved to Moscow" and archived[5].record.private is True
    assert mem.count() == 5 and mem.count(archived=True) == 1
    # the indexes were built from the upgraded store
    assert [h.record.id for h in mem.search("cat Murka", reinforce=False)] == [1]
    assert mem._storage.meta_get("background_cosine:old-model") == "0.41"
    restored = mem.restore(5)
    assert restored.private is True and restored.content == "Owner lived in Kazan"


# ---------------------------------------------------------------------------- v2: messages
def v2_insert(conn: sqlite3.Connection) -> None:
    for i, (role, content) in enumerate([("user", "Привет, Ева"), ("assistant", "Hi!")]):
        conn.execute(
            "INSERT INTO messages (turn_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            ("turn-1", role, content, T0 - DAY + i),
        )


def v2_check(mem: Memory) -> None:
    rows = mem._storage.query(
        "SELECT turn_id, role, content FROM messages WHERE id < 100 ORDER BY id"
    )
    assert [tuple(r) for r in rows] == [
        ("turn-1", "user", "Привет, Ева"),
        ("turn-1", "assistant", "Hi!"),
    ]
    v2_messages_become_a_chat(mem)


# ---------------------------------------------------------------------------- v3: sleep journal
def v3_insert(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO sleep_runs (id, started_at, finished_at, status, reason) "
        "VALUES (1, ?, ?, 'done', 'scheduled')",
        (T0 - DAY, T0 - DAY + 60),
    )
    conn.execute(
        "INSERT INTO sleep_phases (id, run_id, seq, stage, name, status) "
        "VALUES (1, 1, 1, 'memory', 'hygiene', 'applied')"
    )
    conn.execute(
        "INSERT INTO sleep_ops (phase_id, seq, op, why) "
        "VALUES (1, 1, 'merge', 'two wordings of one fact')"
    )
    conn.execute(
        "INSERT INTO sleep_marks (memory_id, phase, at) VALUES (1, 'review', ?)", (T0 - DAY,)
    )


def v3_check(mem: Memory) -> None:
    assert mem._storage.query("SELECT status FROM sleep_runs WHERE id = 1")[0][0] == "done"
    assert mem._storage.query("SELECT why FROM sleep_ops")[0][0] == "two wordings of one fact"
    assert mem._storage.query("SELECT memory_id FROM sleep_marks")[0][0] == 1


# ---------------------------------------------------------------------------- v4: index generation
def v4_insert(conn: sqlite3.Connection) -> None:
    # a write to what the recall index is built from moves the generation (a trigger)
    conn.execute("UPDATE memories SET stems = stems WHERE id = 1")
    conn.execute("UPDATE memories SET importance = importance WHERE id = 1")  # does not


def v4_check(mem: Memory) -> None:
    store, generation = mem._storage.index_stamp()
    assert len(store) == 32 and generation >= 1
    mem.search("Kazan")  # a reinforcement changes no indexed field
    assert mem._storage.index_stamp() == (store, generation)
    mem.save("Owner's v4 check note about the piano")
    assert mem._storage.index_stamp()[1] > generation


# ---------------------------------------------------------------------------- v5: chats, summaries
def v5_insert(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO chats (id, persona, channel, title, created_at, updated_at) "
        "VALUES (7, 'default', 'tui', 'Trip plans', ?, ?)",
        (T0 - DAY, T0 - DAY),
    )
    for i, role in enumerate(("user", "assistant")):
        conn.execute(
            "INSERT INTO messages (id, turn_id, role, content, created_at, chat_id, private_ok) "
            "VALUES (?, 'turn-5', ?, ?, ?, 7, 1)",
            (
                100 + i,
                role,
                "We fly to Tbilisi on 12 May" if role == "user" else "Noted!",
                T0 - DAY + i,
            ),
        )
    conn.execute(
        "INSERT INTO summaries (id, chat_id, tier, private, prose, verbatim, first_id, "
        "last_id, created_at, updated_at) VALUES (1, 7, 1, 1, 'The owner flies to "
        "Tbilisi on 12 May.', '[\"12 May\"]', 100, 101, ?, ?)",
        (T0, T0),
    )
    conn.executemany(
        "INSERT INTO summary_covers (summary_id, message_id) VALUES (1, ?)", [(100,), (101,)]
    )


def v5_check(mem: Memory) -> None:
    from core.chat.chats import Chats
    from core.chat.summaries import SummaryStore

    chats = mem.attach(Chats)
    trip = chats.get(7)
    assert (trip.title, trip.messages, trip.persona) == ("Trip plans", 2, "default")
    [s] = mem.attach(SummaryStore).for_prompt(7, sees_private=True)
    assert s.verbatim == ("12 May",) and s.private
    assert mem.attach(SummaryStore).for_prompt(7, sees_private=False) == []


def v2_messages_become_a_chat(mem: Memory) -> None:
    """v5 turns the one conversation of each persona and channel into a chat."""
    from core.chat.chats import Chats
    from core.chat.transcript import Transcript

    if mem._storage.schema_version() < 5:
        return
    [old] = [c for c in mem.attach(Chats).list() if c.id not in (7, 8)]  # 8: v7's
    assert old.messages == 2 and old.first_words == "Привет, Ева"
    assert [m.content for m in mem.attach(Transcript).chat_history(old.id)] == [
        "Привет, Ева",
        "Hi!",
    ]


# ---------------------------------------------------------------------------- v6: personas
def personas_insert(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO personas (id, name, persona_text, detail_level, learning, "
        "created_at, updated_at) VALUES ('p1', 'Work', 'You are terse.', 'key', 0, ?, ?)",
        (T0 - DAY, T0 - DAY),
    )


def personas_check(mem: Memory) -> None:
    from core.chat.personas import Personas

    personas = mem.attach(Personas)
    got = {p.id: p for p in personas.list()}
    assert set(got) == {"default", "p1"}
    assert got["p1"].name == "Work" and got["p1"].text == "You are terse."
    assert got["p1"].detail_level == "key" and got["p1"].learning is False
    assert got["default"].text is None and got["default"].learning is None


# ---------------------------------------------------------------------------- v7: message search
def search_insert(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO chats (id, persona, channel, title, created_at, updated_at) "
        "VALUES (8, 'default', 'tui', 'Ёлка', ?, ?)",
        (T0, T0),
    )
    conn.execute(
        "INSERT INTO messages (id, turn_id, role, content, created_at, chat_id, "
        "private_ok) VALUES (200, 'turn-7', 'user', 'Купили ЁЛКУ для кота', ?, 8, 1)",
        (T0,),
    )


def search_check(mem: Memory) -> None:
    """Issue 28 item 6: messages written before the index existed are found (the step indexed
    them), and so are those written after (the triggers), in any case; an edit and a delete
    keep the index in step."""
    from core.chat.transcript import Transcript
    from tests.chat_kit import tui_message

    tr = mem.attach(Transcript)
    version = mem._storage.schema_version()
    assert version >= 7
    found = {h.message_id for h in tr.search("елку")}
    assert 200 in found
    if mem._storage.query("SELECT 1 FROM messages WHERE id = 100"):  # v5's data is there
        assert [h.message_id for h in tr.search("TBILISI")] == [100]
        tr.edit(100, "We fly to Yerevan on 12 May", T0)
        assert tr.search("tbilisi") == [] and [h.message_id for h in tr.search("yerevan")] == [100]
    new = tui_message(tr, "turn-8", "user", "Кот Пирожок спит", chat_id=8, at=T0, tokens=4)
    assert [h.message_id for h in tr.search("пирожок")] == [new]
    mem._storage.conn.execute("DELETE FROM messages WHERE id = ?", (new,))
    assert tr.search("пирожок") == []


# ---------------------------------------------------------------------------- v8: reminders
def reminders_insert(conn: sqlite3.Connection) -> None:
    """v1's "Concert with Anna on Friday" as a v8 Eva reads it: its Friday and how."""
    conn.execute(
        "UPDATE memories SET due_on = '2026-05-29', due_read = ? WHERE id = 4",
        ('{"how": "weekday", "phrase": "on friday", "said": "2026-05-28"}',),
    )


def reminders_check(mem: Memory) -> None:
    """Issue 29: a record's day and how it was read survive; records older than v8 carry
    none (never a migration's guess); the day is due on it."""
    from datetime import datetime

    if mem._storage.query("SELECT 1 FROM memories WHERE id = 4 AND due_read IS NOT NULL"):
        r = mem.get(4)
        assert r.due_on == "2026-05-29" and r.due_every is None and r.remind_state is None
        friday = datetime(2026, 5, 29, 9).timestamp()
        assert 4 in [x.id for x in mem.coming_up(now=friday)]
    assert mem.get(1).due_on is None


@dataclass(frozen=True)
class Fixture:
    """Data that version k introduced (inserted right after migrating to k, with the columns
    that existed then) and what must still hold after upgrading to the current version."""

    insert: Callable[[sqlite3.Connection], None]
    check: Callable[[Memory], None] = lambda mem: None


FIXTURES: dict[int, Fixture] = {
    0: Fixture(insert=lambda conn: None),  # an empty file: nothing existed before v1
    1: Fixture(v1_insert, v1_check),
    2: Fixture(v2_insert, v2_check),
    3: Fixture(v3_insert, v3_check),
    4: Fixture(v4_insert, v4_check),
    5: Fixture(v5_insert, v5_check),
    6: Fixture(personas_insert, personas_check),
    7: Fixture(search_insert, search_check),
    8: Fixture(reminders_insert, reminders_check),
}


def _fixture(k: int) -> Fixture:
    if k not in FIXTURES:
        pytest.fail(
            f"core.store.storage.MIGRATIONS has a step to v{k} but tests/test_migrations.py has no "
            f"FIXTURES[{k}]: add data valid at v{k} (an insert for what v{k} introduced) and "
            f"the checks it must pass after an upgrade (SPEC §11: migrations are tested from "
            f"every earlier version)"
        )
    return FIXTURES[k]


def build_store(path: Path, version: int) -> None:
    """A store that lived through versions 0..version, with each version's data in it."""
    conn = connect(path)
    try:
        for k in range(version + 1):
            assert migrate(conn, upto=k) == k
            conn.execute("BEGIN")
            _fixture(k).insert(conn)
            conn.execute("COMMIT")
        assert conn.execute("PRAGMA user_version").fetchone()[0] == version
    finally:
        conn.close()


def table_rows(path: Path) -> dict[str, tuple[list[str], list[tuple]]]:
    """Columns and rows of every user table."""
    conn = sqlite3.connect(str(path))
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        out = {}
        for t in names:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
            out[t] = (cols, sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr))
        return out
    finally:
        conn.close()


def schema(path: Path) -> set[tuple]:
    conn = sqlite3.connect(str(path))
    try:
        return {
            tuple(r)
            for r in conn.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
            )
        }
    finally:
        conn.close()


# ---------------------------------------------------------------------------- tests
def test_every_schema_version_has_a_fixture():
    """SPEC §11: every version a store can be at (0 … SCHEMA_VERSION) has representative data
    here — a new MIGRATIONS entry without a fixture fails with a message naming what to add."""
    assert len(MIGRATIONS) == SCHEMA_VERSION
    for k in range(SCHEMA_VERSION + 1):
        _fixture(k)
    stale = sorted(k for k in FIXTURES if k > SCHEMA_VERSION)
    assert not stale, f"FIXTURES has versions {stale} that core.store.storage.MIGRATIONS does not"


@pytest.mark.parametrize("version", range(SCHEMA_VERSION + 1), ids=lambda v: f"from-v{v}")
def test_store_from_every_version_opens_with_its_data(version, tmp_path):
    """SPEC §11: a store at every earlier version (and the current one) opens with
    ``Memory.open``, is brought to the current version, has the same schema as a fresh store,
    and keeps every row it had (the columns that existed then, unchanged) plus the meaning of
    that data through the public API (SPEC §2: flags, scope, history, archive, vectors)."""
    path = tmp_path / "memory.db"
    build_store(path, version)
    before = table_rows(path)
    mem = Memory.open(path, MemoryConfig(), ManualClock(T0))
    try:
        assert mem._storage.schema_version() == SCHEMA_VERSION
        after = table_rows(path)
        for table, (cols, rows) in before.items():
            assert table in after, f"upgrading from v{version} dropped table {table}"
            new_cols, new_rows = after[table]
            keep = [new_cols.index(c) for c in cols]
            projected = sorted((tuple(r[i] for i in keep) for r in new_rows), key=repr)
            assert projected == rows, f"upgrading from v{version} changed rows of {table}"
        for k in range(version + 1):
            _fixture(k).check(mem)
    finally:
        mem.close()
    fresh = tmp_path / "fresh.db"
    Memory.open(fresh, MemoryConfig(), ManualClock(T0)).close()
    assert schema(path) == schema(fresh), f"a store upgraded from v{version} differs from a new one"


@pytest.mark.parametrize("version", range(SCHEMA_VERSION + 1), ids=lambda v: f"v{v}")
def test_migrate_one_step_at_a_time_equals_all_at_once(version, tmp_path):
    """SPEC §11 (versioned migrations): each step moves exactly one version, and stepping from
    v to the current version gives the same schema as migrating in one go."""
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    ca, cb = connect(a), connect(b)
    try:
        migrate(ca, upto=version)
        assert ca.execute("PRAGMA user_version").fetchone()[0] == version
        for k in range(version, SCHEMA_VERSION):
            assert migrate(ca, upto=k + 1) == k + 1
        migrate(cb)
    finally:
        ca.close()
        cb.close()
    assert schema(a) == schema(b)


def test_reopening_a_current_store_changes_nothing(tmp_path):
    """SPEC §11: migrations run once; opening an up-to-date store again leaves schema, version
    and data as they were."""
    path = tmp_path / "memory.db"
    build_store(path, SCHEMA_VERSION)
    Memory.open(path, MemoryConfig(), ManualClock(T0)).close()
    rows, sch = table_rows(path), schema(path)
    mem = Memory.open(path, MemoryConfig(), ManualClock(T0))
    assert mem._storage.schema_version() == SCHEMA_VERSION
    mem.close()
    assert table_rows(path) == rows and schema(path) == sch


def test_store_from_a_newer_eva_is_refused_clearly(tmp_path):
    """SPEC §11: a store written by a newer Eva (a higher schema version) is refused with a clear
    StoreError naming both versions — and is left as it was, and the connection is released."""
    path = tmp_path / "memory.db"
    build_store(path, SCHEMA_VERSION)
    conn = sqlite3.connect(str(path))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    rows = table_rows(path)
    opened: list[sqlite3.Connection] = []

    def tracking(p):
        c = connect(p)
        opened.append(c)
        return c

    with pytest.raises(StoreError) as e:
        Memory.open(path, MemoryConfig(), ManualClock(T0), connection_factory=tracking)
    msg = str(e.value)
    assert f"v{SCHEMA_VERSION + 1}" in msg and f"v{SCHEMA_VERSION}" in msg, msg
    assert "newer" in msg and "upgrade" in msg.lower(), msg
    assert table_rows(path) == rows
    conn = sqlite3.connect(str(path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    conn.close()
    assert len(opened) == 1
    with pytest.raises(sqlite3.ProgrammingError):
        opened[0].execute("SELECT 1")  # closed: a refused store does not keep a connection
    # the low-level entry point refuses it too
    conn = connect(path)
    with pytest.raises(StoreError):
        migrate(conn)
    conn.close()


def test_a_failing_migration_step_leaves_the_previous_version(tmp_path, monkeypatch):
    """SPEC §11: each migration step is one transaction — a step that fails half-way leaves the
    store at the previous version with none of the step's changes (a future step is simulated by
    appending a broken one)."""
    path = tmp_path / "memory.db"
    build_store(path, SCHEMA_VERSION)
    rows = table_rows(path)
    broken = [
        "CREATE TABLE future_things (a INTEGER)",
        "ALTER TABLE memories ADD COLUMN mood TEXT",
        "INSERT INTO no_such_table VALUES (1)",
    ]
    monkeypatch.setattr(core_storage, "MIGRATIONS", [*MIGRATIONS, broken])
    conn = connect(path)
    try:
        with pytest.raises(sqlite3.OperationalError):
            core_storage.migrate(conn, upto=SCHEMA_VERSION + 1)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert not conn.in_transaction
    finally:
        conn.close()
    assert table_rows(path) == rows, "a failed step left tables or columns behind"


def test_private_flag_defaults_to_not_private_and_no_migration_guesses_it():
    """SPEC §2: records created before the private flag existed are not private — marking them
    is the owner's decision, never a migration's guess: the column defaults to 0 and no migration
    step writes it."""
    conn = sqlite3.connect(":memory:")
    try:
        migrate(conn)
        cols = {r[1]: r for r in conn.execute("PRAGMA table_info(memories)")}
        _cid, _name, _type, notnull, default, _pk = cols["private"]
        assert notnull == 1 and str(default) == "0"
    finally:
        conn.close()
    for k, step in enumerate(MIGRATIONS, start=1):
        for statement in step:
            s = " ".join(statement.lower().split())
            assert not ("update memories" in s and "private" in s), (
                f"migration v{k} sets the private flag: {statement}"
            )


def test_upgraded_store_is_fully_usable(tmp_path):
    """SPEC §11: after an upgrade from the oldest version with data (v1) the store takes new
    writes, and they survive a reopen alongside the old data."""
    path = tmp_path / "memory.db"
    build_store(path, 1)
    with Memory.open(path, MemoryConfig(), ManualClock(T0)) as mem:
        res = mem.save("Owner started pottery classes", OWNER_TRUSTED, kind="fact", importance=3)
        assert res.status == "created" and res.id == V1_DEFAULTS_ID + 1
        mem.update(1, OWNER_TRUSTED, content="The owner's cat is called Murka; she is 5")
    with Memory.open(path, MemoryConfig(), ManualClock(T0)) as mem:
        assert mem.get(res.id).content == "Owner started pottery classes"
        assert mem.get(1).content.endswith("she is 5")
        log = mem._storage.query("SELECT op FROM changes WHERE memory_id = 1 ORDER BY id")
        assert [r[0] for r in log] == ["create", "update"]
        before = json.loads(
            mem._storage.query("SELECT before FROM changes WHERE memory_id = 1 AND op = 'update'")[
                0
            ][0]
        )
        assert before["row"]["content"] == "The owner's cat is called Murka"
