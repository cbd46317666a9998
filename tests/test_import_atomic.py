"""Issue 15, data loss: ``import_records`` is all or nothing. A bad item anywhere (even in a
later batch) or a failure while writing leaves the store and the in-memory indexes exactly as
they were, and the error names the item."""

from __future__ import annotations

import sqlite3

import pytest

from core import OWNER_TRUSTED, MemoryOpError
from core.errors import Refused


def rows(mem):
    return mem._storage.conn.execute("SELECT id, content FROM memories ORDER BY id").fetchall()


def test_a_bad_item_in_a_later_batch_writes_nothing_and_is_named(mem):
    mem.save("Owner likes tea", OWNER_TRUSTED)
    before = [tuple(r) for r in rows(mem)]
    items = [{"content": f"Imported fact number {i}"} for i in range(12)]
    items[10] = {"content": "bad time", "created_at": "yesterday"}
    with pytest.raises(MemoryOpError, match="import item 11: created_at"):
        mem.import_records(items, batch=5)
    assert [tuple(r) for r in rows(mem)] == before
    assert mem.recall("Imported fact number", OWNER_TRUSTED) == []


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "text",
        5,
        {"content": ""},
        {"content": 7},
        {"content": "x", "kind": "wish"},
        {"content": "x", "created_at": float("nan")},
    ],
)
def test_each_kind_of_bad_item_is_a_clear_error(mem, bad):
    with pytest.raises(MemoryOpError, match="import item 2"):
        mem.import_records([{"content": "fine"}, bad])
    assert mem.count() == 0


def test_a_failure_while_writing_rolls_back_every_batch(mem, monkeypatch):
    """A write that fails mid-way (here the 8th insert) leaves nothing of the earlier batches."""
    from core.store import records

    real = records.insert
    calls = {"n": 0}

    def failing(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 8:
            raise sqlite3.OperationalError("database or disk is full")
        return real(*a, **kw)

    monkeypatch.setattr(records, "insert", failing)
    with pytest.raises(sqlite3.OperationalError):
        mem.import_records([{"content": f"Imported fact number {i}"} for i in range(12)], batch=5)
    monkeypatch.setattr(records, "insert", real)
    assert mem.count() == 0 and rows(mem) == []
    assert mem.recall("Imported fact number", OWNER_TRUSTED) == []
    ids = mem.import_records([{"content": "Owner's cat is Murka"}])  # the store still works
    assert [h.id for h in mem.recall("Murka", OWNER_TRUSTED)] == ids


def test_too_many_pins_in_one_import_is_refused_whole(mem):
    items = [
        {"content": f"Pinned fact {i}", "pinned": True} for i in range(mem.config.max_pinned + 1)
    ]
    with pytest.raises(Refused, match="nothing was imported"):
        mem.import_records(items)
    assert mem.count() == 0
