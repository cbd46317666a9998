"""The archive (SPEC §2): forgetting never deletes; restore brings a record back whole; entries
older than archive_ttl are purged."""

from __future__ import annotations

import pytest

from core import (
    OWNER_IN_GROUP,
    OWNER_TRUSTED,
    OWNER_UNTRUSTED,
    PUBLIC,
    AccessDenied,
    Actor,
    Memory,
    MemoryConfig,
    NotFound,
    Refused,
    TurnContext,
)
from core.config import DAY
from tests.fakes import HashEmbedder


def _full(mem: Memory, rid: int, ctx: TurnContext = OWNER_TRUSTED):
    r = mem.get(rid, ctx)
    return (
        r.id,
        r.content,
        r.kind,
        r.importance,
        r.private,
        r.pinned,
        r.scope,
        r.created_at,
        r.updated_at,
        r.last_access_at,
        r.access_count,
        r.source,
        r.accesses,
    )


def test_forget_then_restore_keeps_id_kind_flags_and_history(mem, clock):
    """SPEC §2: restorable with its id, kind, flags and history."""
    rid = mem.save("Anna's diagnosis is asthma", kind="fact", importance=4, private=True).id
    for _ in range(3):
        clock.advance(DAY)
        mem.search("asthma")
    before = _full(mem, rid)
    assert before[10] == 3 and len(before[12]) == 3
    clock.advance(DAY)
    mem.forget(rid, "owner asked to drop it", OWNER_TRUSTED)
    assert mem.count() == 0
    clock.advance(5 * DAY)
    restored = mem.restore(rid)
    assert restored.id == rid
    assert _full(mem, rid) == before


def test_restore_keeps_pinned_core_and_scope(mem):
    """SPEC §2: flags include pinned; the owner may archive and restore a pinned core record."""
    rid = mem.save(
        "As the guide, speak like a tour guide",
        kind="core",
        importance=5,
        scope="guide",
        pinned=True,
        actor=Actor.OWNER,
    ).id
    guide = TurnContext(persona="guide")
    before = _full(mem, rid, guide)
    mem.forget(rid, "trying without it", OWNER_TRUSTED, actor=Actor.OWNER)
    assert rid not in mem.prompt_section("", guide).core_ids
    mem.restore(rid)
    assert _full(mem, rid, guide) == before
    assert rid in mem.prompt_section("", guide).core_ids


def test_archive_entry_says_who_why_and_when(mem, clock):
    """SPEC §2: the archive keeps who/why/when; entries are listed newest first with the
    moment they will be purged."""
    a = mem.save("Owner lives in Omsk").id
    b = mem.save("Owner works at the bakery").id
    t1 = clock.now()
    mem.forget(a, "moved to Kazan", OWNER_TRUSTED)
    clock.advance(DAY)
    t2 = clock.now()
    mem.forget(b, "changed jobs", OWNER_TRUSTED, actor=Actor.OWNER)
    entries = mem.archived()
    assert [(e.record.id, e.archived_by, e.why, e.archived_at, e.purge_at) for e in entries] == [
        (b, "owner", "changed jobs", t2, t2 + 30 * DAY),
        (a, "model", "moved to Kazan", t1, t1 + 30 * DAY),
    ]
    assert entries[1].record.content == "Owner lives in Omsk"


def test_restored_records_are_searchable_again(mem):
    """SPEC §2, §4: a restored record is back in recall and the prompt."""
    rid = mem.save("The owner's cat is called Murka").id
    core = mem.save("Owner is Lena", kind="core").id
    mem.forget(rid, "mistake", OWNER_TRUSTED)
    mem.forget(core, "mistake", OWNER_TRUSTED)
    assert mem.search("Murka") == []
    assert core not in mem.prompt_section("Lena", OWNER_TRUSTED).core_ids
    mem.restore(rid)
    mem.restore(core)
    assert [h.record.id for h in mem.search("Murka")] == [rid]
    assert core in mem.prompt_section("Lena", OWNER_TRUSTED).core_ids


def test_archived_records_are_not_dedup_targets(mem):
    """SPEC §2, §3.2: an archived record is not live — saving the same text again creates a new
    record (the archived one stays restorable)."""
    rid = mem.save("The owner's cat is called Murka").id
    mem.forget(rid, "cat given away", OWNER_TRUSTED)
    res = mem.save("The owner's cat is called Murka")
    assert res.status == "created" and res.id != rid
    assert mem.count(archived=True) == 1


def test_purge_removes_only_entries_older_than_archive_ttl(mem, clock):
    """SPEC §2, §7 (hygiene): archive entries stay archive_ttl (30 days); purge removes only
    those older than that — live records and younger entries stay."""
    old = mem.save("Owner lives in Omsk").id
    mid = mem.save("Owner works at the bakery").id
    live = mem.save("Owner's cat is Murka").id
    mem.search("Omsk")  # give it an access history (must go with it)
    t0 = clock.now()
    mem.forget(old, "moved", OWNER_TRUSTED)
    clock.advance(20 * DAY)
    mem.forget(mid, "changed jobs", OWNER_TRUSTED)
    clock.set(t0 + 30 * DAY)  # exactly 30 days: not older than the ttl yet
    assert mem.purge_archive() == 0
    clock.advance(1.0)
    assert mem.purge_archive() == 1
    assert [e.record.id for e in mem.archived()] == [mid]
    assert mem.get(live).id == live and mem.count() == 1
    with pytest.raises(NotFound):
        mem.restore(old)
    assert (
        mem._storage.query("SELECT COUNT(*) FROM accesses WHERE memory_id = ?", (old,))[0][0] == 0
    )
    clock.advance(20 * DAY)
    assert mem.purge_archive() == 1
    assert mem.archived() == [] and mem.count() == 1


def test_purge_respects_a_configured_ttl(tmp_path, clock):
    """SPEC §2: the ttl is sleep.archive_ttl from config."""
    mem = Memory.open(tmp_path / "m.db", MemoryConfig(archive_ttl_days=2), clock)
    rid = mem.save("Owner lives in Omsk").id
    mem.forget(rid, "moved", OWNER_TRUSTED)
    clock.advance(1.5 * DAY)
    assert mem.purge_archive() == 0
    clock.advance(1 * DAY)
    assert mem.purge_archive() == 1
    mem.close()


def test_restore_of_a_live_or_unknown_id_is_not_found(mem):
    """SPEC §2: only archived records can be restored; a clear error otherwise."""
    rid = mem.save("Owner's cat is Murka").id
    with pytest.raises(NotFound):
        mem.restore(rid)
    with pytest.raises(NotFound):
        mem.restore(999)


@pytest.mark.parametrize("ctx", [OWNER_UNTRUSTED, OWNER_IN_GROUP, PUBLIC])
def test_archive_and_restore_are_the_trusted_owners(mem, ctx):
    """SPEC §1, §10: the archive carries private entries — only the trusted owner lists or
    restores it."""
    rid = mem.save("Anna's diagnosis is asthma", private=True).id
    mem.forget(rid, "outdated", OWNER_TRUSTED)
    with pytest.raises(AccessDenied):
        mem.archived(ctx)
    with pytest.raises(AccessDenied):
        mem.restore(rid, ctx)
    assert mem.count(archived=True) == 1


def test_restore_of_a_pinned_record_respects_the_pin_limit(mem):
    """SPEC §2: at most 20 pinned per scope — restoring a pinned record into a full scope is
    refused (nothing changes) until the owner unpins one."""
    first = mem.save("Pinned rule number 0", pinned=True, actor=Actor.OWNER).id
    mem.forget(first, "trying without it", OWNER_TRUSTED, actor=Actor.OWNER)
    others = [
        mem.save(f"Pinned rule number {i}: item {i}", pinned=True, actor=Actor.OWNER).id
        for i in range(1, 21)
    ]
    with pytest.raises(Refused):
        mem.restore(first)
    assert mem.count(archived=True) == 1
    assert len(mem.list(pinned=True)) == 20
    mem.pin(others[0], False)
    assert mem.restore(first).pinned


def test_restore_brings_the_vector_back(tmp_path, clock):
    """SPEC §2, §6: a restored record keeps its vector (no re-embedding needed)."""
    emb = HashEmbedder()
    mem = Memory.open(tmp_path / "m.db", MemoryConfig(embedding_model=emb.name), clock, emb)
    rid = mem.save("The owner's cat is called Murka").id
    mem.save("The owner drinks green tea")
    mem.forget(rid, "mistake", OWNER_TRUSTED)
    assert mem.status().vectors == 1
    calls = len(emb.calls)
    mem.restore(rid)
    assert mem.status().vectors == 2 and mem.status().missing_vectors == 0
    assert len(emb.calls) == calls
    (hit,) = mem.recall("Murka cat", OWNER_TRUSTED)
    assert hit.id == rid and hit.semantic is not None and hit.semantic > 0
    mem.close()
