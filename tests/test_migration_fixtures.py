"""Issue 15 / SPEC §11 ("migrations are tested from every earlier version (frozen fixtures)"):
a store frozen as an SQL dump at every released schema version (tests/fixtures/store_v<N>.sql,
made once by scripts/freeze_store_fixture.py and never regenerated) opens with today's code,
is upgraded, keeps every row, reads back with the meaning it had, matches a fresh store's
schema, passes ``PRAGMA integrity_check`` and takes new writes. Unlike running today's
``MIGRATIONS[:v]``, this fails when a released migration is edited."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig
from core.store.storage import SCHEMA_VERSION
from tests.test_migrations import FIXTURES, T0, schema, table_rows

DIR = Path(__file__).parent / "fixtures"
DUMPS = sorted(DIR.glob("store_v*.sql"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))


def version_of(p: Path) -> int:
    return int(re.findall(r"\d+", p.name)[0])


def test_every_released_version_has_a_frozen_store():
    have = {version_of(p) for p in DUMPS}
    missing = sorted(set(range(1, SCHEMA_VERSION + 1)) - have)
    assert not missing, (
        f"no frozen store for schema v{missing}: run `PYTHONPATH=. python "
        f"scripts/freeze_store_fixture.py {missing[0]}` once, when it is released"
    )
    assert have <= set(range(1, SCHEMA_VERSION + 1)), "a frozen store newer than the code"


def load(dump: Path, path: Path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        conn.executescript(dump.read_text(encoding="utf-8"))
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: p.stem)
def test_a_frozen_store_upgrades_with_its_data(dump, tmp_path):
    version = version_of(dump)
    path = tmp_path / "memory.db"
    assert load(dump, path) == version
    before = table_rows(path)
    assert before["memories"][1], "the frozen store has records"
    with Memory.open(path, MemoryConfig(), ManualClock(T0)) as mem:
        assert mem._storage.schema_version() == SCHEMA_VERSION
        assert mem._storage.query("PRAGMA integrity_check")[0][0] == "ok"
        after = table_rows(path)
        for table, (cols, rows) in before.items():
            assert table in after, f"upgrading frozen v{version} dropped table {table}"
            new_cols, new_rows = after[table]
            missing = [c for c in cols if c not in new_cols]
            assert not missing, f"upgrading frozen v{version} dropped {table}.{missing}"
            keep = [new_cols.index(c) for c in cols]
            projected = sorted((tuple(r[i] for i in keep) for r in new_rows), key=repr)
            assert projected == rows, f"upgrading frozen v{version} changed rows of {table}"
        for k in range(version + 1):
            FIXTURES[k].check(mem)
        res = mem.save("Owner started pottery classes", OWNER_TRUSTED, kind="fact", importance=3)
        assert res.status == "created"
    with Memory.open(path, MemoryConfig(), ManualClock(T0)) as mem:
        assert mem.get(res.id).content == "Owner started pottery classes"
        assert [h.id for h in mem.recall("pottery classes", OWNER_TRUSTED)] == [res.id]
    fresh = tmp_path / "fresh.db"
    Memory.open(fresh, MemoryConfig(), ManualClock(T0)).close()
    assert schema(path) == schema(fresh), f"a store upgraded from frozen v{version} differs"


def test_an_edited_released_migration_is_caught(tmp_path, monkeypatch):
    """The point of freezing: a released step changed in place (here v2 loses its index on
    turn ids) no longer matches the frozen v2 store, though MIGRATIONS[:2] agrees with itself."""
    from core.store import storage

    edited = [list(m) for m in storage.MIGRATIONS]
    assert edited[1][-1].startswith("CREATE INDEX messages_turn")
    edited[1] = edited[1][:-1]
    monkeypatch.setattr(storage, "MIGRATIONS", edited)
    v2 = next(p for p in DUMPS if version_of(p) == 2)
    a, fresh = tmp_path / "a.db", tmp_path / "fresh.db"
    load(v2, a)
    conn = storage.connect(fresh)
    storage.migrate(conn, upto=2)
    conn.close()
    assert schema(a) != schema(fresh)
