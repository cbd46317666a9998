"""The core opens, saves and recalls (SPEC §2–§4, smoke)."""

from core import OWNER_TRUSTED


def test_save_then_search_finds_it(mem):
    res = mem.save("The owner's cat is called Murka", OWNER_TRUSTED, kind="fact", importance=3)
    hits = mem.search("what is the cat called", OWNER_TRUSTED)
    assert [h.record.id for h in hits] == [res.id]
