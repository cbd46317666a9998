"""Reinforcement without a commit per search (SPEC §4 "search reinforces", §10, §11; issue 32):
a search's access rows wait for the next transaction on the store (or a few seconds, or close)
while its scoring columns move at once; everything that reads the access history writes them
first; a rollback of the turn takes them back; another process sees them once written."""

from __future__ import annotations

import threading

import pytest

from core import OWNER_TRUSTED, Memory, MemoryConfig
from core.store.records import Actor
from tests.crashkit import invariant_problems

T0 = 1_780_000_000.0


def _open(path, clock, **kw) -> Memory:
    return Memory.open(path, MemoryConfig(recall_floor=0.0), clock, **kw)


def _rows(mem: Memory, rid: int) -> tuple[int, int, float | None]:
    """(access rows, access_count, last_access_at) as the file holds them."""
    n = mem._storage.query("SELECT COUNT(*) FROM accesses WHERE memory_id = ?", (rid,))[0][0]
    r = mem._storage.query(
        "SELECT access_count, last_access_at FROM memories WHERE id = ?", (rid,)
    )[0]
    return n, r[0], r[1]


def _columns(mem: Memory, rid: int) -> tuple[float, float]:
    c = mem._index.columns
    return float(c.recalled_at[rid]), float(c.reinforcements[rid])


def test_a_search_commits_nothing_yet_ranks_and_reports_its_reinforcement(tmp_path, clock):
    """SPEC §4: a search reinforces what it returns — its hits carry the new count and last
    access and the next recall ranks by them at once — while its rows wait: the file is not
    written by the search itself (no commit per search), only by the next transaction, which
    writes them first, under the turn that made them."""
    mem = _open(tmp_path / "m.db", clock)
    rid = mem.save("The owner's cat Murka likes fish", OWNER_TRUSTED).id
    clock.advance(3600)
    version = mem._storage.query("PRAGMA data_version")[0][0]
    changes = mem._storage.query("SELECT COUNT(*) FROM changes")[0][0]
    hits = mem.search("Murka fish", OWNER_TRUSTED.with_turn("turn-7"))
    assert [h.id for h in hits] == [rid]
    assert hits[0].record.access_count == 1 and hits[0].record.last_access_at == clock.now()
    assert _rows(mem, rid) == (0, 0, None)  # nothing written yet
    assert mem._storage.query("SELECT COUNT(*) FROM changes")[0][0] == changes
    assert _columns(mem, rid) == (clock.now(), 1.0)  # but recall already counts it
    at = clock.now()
    clock.advance(60)
    other = mem.save("The owner drinks green tea", OWNER_TRUSTED).id  # the next transaction
    assert _rows(mem, rid) == (1, 1, at)
    log = mem._storage.query("SELECT op, turn_id, memory_id FROM changes WHERE op = 'reinforce'")
    assert [tuple(r) for r in log] == [("reinforce", "turn-7", rid)]
    assert _rows(mem, other) == (0, 0, None)
    assert mem._storage.query("PRAGMA data_version")[0][0] == version  # our own commits only
    mem.close()
    assert invariant_problems(tmp_path / "m.db") == []


@pytest.mark.parametrize("read", ["get", "list", "exported", "corpus"])
def test_what_reads_the_access_history_sees_every_access(tmp_path, clock, read):
    """SPEC §2 (a record's access history), §7, §11: a record with its history, the owner's
    listing, the export and sleep's corpus write the waiting reinforcements first."""
    mem = _open(tmp_path / "m.db", clock)
    rid = mem.save("Owner's sister Anna lives in Kazan", OWNER_TRUSTED).id
    clock.advance(60)
    mem.search("Anna Kazan", OWNER_TRUSTED)
    clock.advance(60)
    mem.search("sister Kazan", OWNER_TRUSTED)
    if read == "get":
        r = mem.get(rid)
        assert r.access_count == 2 and len(r.accesses) == 2
    elif read == "list":
        assert mem.list(OWNER_TRUSTED)[0].access_count == 2
    elif read == "exported":
        rows, _ = mem.exported(private=True)
        assert rows[0]["access_count"] == 2 and len(rows[0]["accesses"]) == 2
    else:
        assert mem.corpus()[0].access_count == 2
    assert _rows(mem, rid)[:2] == (2, 2)
    mem.close()


def test_close_writes_the_waiting_reinforcements(tmp_path, clock):
    """SPEC §11: an orderly close loses no reinforcement."""
    path = tmp_path / "m.db"
    mem = _open(path, clock)
    rid = mem.save("Owner takes piano lessons on Tuesdays", OWNER_TRUSTED).id
    mem.search("piano lessons", OWNER_TRUSTED)
    mem.close()
    again = _open(path, clock)
    assert again.get(rid).access_count == 1
    assert _columns(again, rid)[1] == 1.0
    again.close()


def test_a_rollback_of_the_turn_takes_its_waiting_reinforcements_back(tmp_path, clock):
    """SPEC §8.4 (regenerate): the rollback's transaction writes the turn's waiting accesses
    first and then undoes them with the rest of the turn; the index follows the file."""
    path = tmp_path / "m.db"
    mem = _open(path, clock)
    rid = mem.save("Owner's dog Rex hides from thunder", OWNER_TRUSTED).id
    clock.advance(60)
    mem.search("Rex thunder", OWNER_TRUSTED.with_turn("keep"))
    clock.advance(60)
    mem.search("dog Rex", OWNER_TRUSTED.with_turn("undo"))
    assert _columns(mem, rid)[1] == 2.0
    done = mem.rollback_turn("undo")
    assert rid in done.touched
    assert _rows(mem, rid) == (1, 1, T0 + 60)
    assert _columns(mem, rid) == (T0 + 60, 1.0)
    mem.close()
    assert invariant_problems(path) == []


def test_a_transaction_that_fails_keeps_them_waiting(tmp_path, clock):
    """SPEC §11: a write that fails rolls back the reinforcements it carried with it; they
    stay waiting and the next transaction writes them, once."""
    mem = Memory.open(tmp_path / "m.db", MemoryConfig(max_pinned=1), clock)
    rid = mem.save("Owner's blood type is A+", OWNER_TRUSTED).id
    mem.save("Owner is allergic to cats", OWNER_TRUSTED, pinned=True, actor=Actor.OWNER)
    mem.search("blood type", OWNER_TRUSTED)
    with pytest.raises(Exception, match="pinned"):  # refused inside its transaction
        mem.save("Owner's passport expires in 2031", OWNER_TRUSTED, pinned=True, actor=Actor.OWNER)
    assert _rows(mem, rid)[:2] == (0, 0)
    mem.save("Owner likes jazz", OWNER_TRUSTED)
    assert _rows(mem, rid)[:2] == (1, 1)
    mem.close()
    assert invariant_problems(tmp_path / "m.db") == []


def test_another_process_sees_them_within_seconds_and_a_purged_record_is_skipped(tmp_path, clock):
    """SPEC §10: the reinforcements reach the file within a few seconds without any other
    write (a timer), and another process's index follows them; an access to a record another
    process deleted meanwhile is dropped, and writing goes on."""
    path = tmp_path / "m.db"
    a = _open(path, clock)
    b = _open(path, clock)
    rid = a.save("Owner's sister Lena moved to Riga", OWNER_TRUSTED).id
    gone = a.save("Owner's old phone number ends in 42", OWNER_TRUSTED).id
    b.refresh()
    written = threading.Event()
    ended = a._accesses._begin

    def watch(conn):
        done = ended(conn)

        def end(committed: bool) -> None:
            done(committed)
            if committed and not len(a._accesses):
                written.set()

        return end

    a._storage.write_hooks[a._storage.write_hooks.index(ended)] = watch
    a._accesses.interval = 0.05
    a.search("Lena Riga", OWNER_TRUSTED)
    assert written.wait(30), "the timer never wrote the reinforcements"
    b.recall("Lena", OWNER_TRUSTED)  # b looks: it reindexes what a wrote
    assert _columns(b, rid) == _columns(a, rid) == (clock.now(), 1.0)
    a._accesses.interval = None
    a.search("phone number", OWNER_TRUSTED)  # waits
    b.forget(gone, "wrong number", OWNER_TRUSTED, actor=Actor.OWNER)  # and purged, elsewhere
    clock.advance(b.config.archive_ttl_seconds + 60)
    assert b.purge_archive() == 1
    a.save("Owner started running", OWNER_TRUSTED)  # writes what waits, without #gone
    assert a._storage.query("SELECT COUNT(*) FROM accesses WHERE memory_id = ?", (gone,))[0][0] == 0
    assert a._storage.query("SELECT access_count FROM memories WHERE id = ?", (rid,))[0][0] == 1
    a.close()
    b.close()
