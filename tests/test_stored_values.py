"""Issue 15, stored values: one bad stored value never makes the store unopenable. A ``source``
this Eva does not know reads as ``init`` (and is refused on write); a damaged stored background
cosine falls back to the model's declared or the default one."""

from __future__ import annotations

import pytest

from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig
from core.store.records import Kind, Source, insert
from tests.fakes import HashEmbedder


def test_an_unknown_source_reads_leniently_and_the_store_opens(tmp_path):
    clock = ManualClock(1_780_000_000.0)
    path = tmp_path / "m.db"
    with Memory.open(path, MemoryConfig(), clock) as mem:
        a = mem.save("Owner's cat is Murka", OWNER_TRUSTED).id
        b = mem.save("Owner likes tea", OWNER_TRUSTED).id
        mem._storage.conn.execute(
            "UPDATE memories SET source = 'from-the-future' WHERE id = ?", (a,)
        )
    with Memory.open(path, MemoryConfig(), clock) as mem:
        assert mem.get(a).source is Source.INIT and mem.get(b).source is Source.TOOL
        assert [h.id for h in mem.recall("Murka", OWNER_TRUSTED)] == [a]
        assert {r.id for r in mem.list(OWNER_TRUSTED)} == {a, b}


def test_a_bad_source_is_refused_on_write(mem):
    with pytest.raises(ValueError), mem._storage.transaction() as conn:
        insert(
            conn,
            "x",
            Kind.FACT,
            3,
            private=False,
            pinned=False,
            scope="global",
            created_at=1.0,
            updated_at=1.0,
            source="bogus",
            source_turn=None,
        )
    assert mem.count() == 0


@pytest.mark.parametrize("stored", ["garbage", "nan", "inf", "7", "", "-3.5"])
def test_a_damaged_background_cosine_falls_back(tmp_path, stored):
    emb = HashEmbedder()
    clock = ManualClock(1_780_000_000.0)
    with Memory.open(tmp_path / "m.db", MemoryConfig(), clock, emb) as mem:
        rid = mem.save("Owner's cat is Murka", OWNER_TRUSTED).id
        fallback = mem._index.background()
        mem._storage.meta_set(f"background_cosine:{emb.name}", stored)
        assert mem._index.background() == fallback
        assert [h.id for h in mem.recall("Murka", OWNER_TRUSTED)] == [rid]
        mem.set_background(0.25)
        assert mem._index.background() == 0.25
