"""The owner's hands on memory in the core (issue 13 items 1–5): move a memory to another scope,
add one by hand (dedup visible first), save confirmed drafts pinned within the cap (§8.5),
clear all per scope (§8.8: to the archive; pinned only on a second confirmation) — and clearing
then restoring loses nothing."""

from __future__ import annotations

import json

import pytest

from core import OWNER_TRUSTED, Memory, Refused, TurnContext
from core.memory import portability as pt
from core.store.records import Actor, Source

T0 = 1_780_000_000.0  # the clock of tests/conftest.py's mem
DAY = 86_400.0


def snapshot(mem: Memory) -> list[dict]:
    """Every record with every exported field (live and archived), ids included."""
    return [
        json.loads(line) for line in pt.export(mem, include_archive=True, private=True).lines[1:]
    ]


def test_move_to_scope_changes_who_recalls_it(mem):
    """§8.6: the owner moves a memory to a persona's scope and back; recall follows; a pinned
    one needs room among the target scope's pins."""
    r = mem.save("Writes backend services in Go at work", actor=Actor.OWNER)
    work = TurnContext(persona="work")
    mem.move_to_scope(r.id, "work")
    assert mem.get(r.id).scope == "work"
    assert [h.id for h in mem.recall("backend services Go", OWNER_TRUSTED)] == []
    assert [h.id for h in mem.recall("backend services Go", work)] == [r.id]
    mem.move_to_scope(r.id, "global")
    assert [h.id for h in mem.recall("backend services Go", OWNER_TRUSTED)] == [r.id]
    mem.import_records(
        [{"content": f"work rule {k} zq{k}", "pinned": True, "scope": "work"} for k in range(20)]
    )
    mem.pin(r.id)
    with pytest.raises(Refused, match="already has 20 pinned"):
        mem.move_to_scope(r.id, "work")
    assert mem.get(r.id).scope == "global"


def test_duplicate_of_shows_what_a_save_would_reinforce(mem):
    """§3.2 for the owner's add-memory dialog: a near duplicate (private ones included, the
    owner sees them) is named before saving; numbers keep different facts apart."""
    a = mem.save("Sister Anna lives in Kazan on Pushkin street", private=True)
    assert mem.duplicate_of("Sister Anna lives in Kazan, on Pushkin street!").id == a.id
    mem.save("Dentist appointment at 3 pm on Friday")
    assert mem.duplicate_of("Dentist appointment at 5 pm on Friday") is None


def test_save_pinned_within_the_cap(mem):
    """§8.5, §2: confirmed drafts are saved pinned with source `dialogue`, in one transaction;
    past 20 pinned per scope nothing is saved and the message says how many fit."""
    mem.import_records([{"content": f"rule {k} zq{k}", "pinned": True} for k in range(17)])
    ids = mem.save_pinned(
        [
            {"content": "Call me Sasha", "kind": "core"},
            {"content": "Never mention the divorce", "private": True},
        ],
        "global",
        Source.DIALOGUE,
    )
    recs = [mem.get(i) for i in ids]
    assert all(r.pinned and r.source is Source.DIALOGUE for r in recs)
    assert recs[1].private and recs[0].kind.value == "core"
    n = mem.count()
    with pytest.raises(Refused, match="19 pinned memories and the limit is 20: 1 more fit, 2"):
        mem.save_pinned(
            [{"content": "one more"}, {"content": "and another"}], "global", Source.DIALOGUE
        )
    assert mem.count() == n
    assert mem.pin_room("global") == 1 and mem.pin_room("work") == 20


def test_clear_all_archives_unpinned_and_pinned_only_on_second_confirmation(mem):
    """§8.8: clear all removes every unpinned record of one scope to the archive; pinned ones
    survive the first pass and go only with ``pinned=True``; other scopes are untouched."""
    mem.import_records(
        [
            {"content": "The cat Murka likes salmon"},
            {"content": "Sister Anna lives in Kazan", "private": True},
            {"content": "Call me Sasha", "kind": "core", "pinned": True},
            {"content": "Writes Go at work", "scope": "work"},
        ]
    )
    _turn, ids = mem.clear_scope("global")
    assert sorted(ids) == [1, 2]
    assert sorted(r.id for r in mem.list()) == [3, 4]
    assert {a.record.id for a in mem.archived()} == {1, 2}
    _turn, ids = mem.clear_scope("global", pinned=True)
    assert ids == [3]
    assert [r.id for r in mem.list()] == [4]


def test_clear_all_then_restore_loses_nothing(mem):
    """§8.8, §11 (clear all never deletes): after clearing a scope (both passes), restoring
    every archived record gives back each record exactly — id, content, kind, importance,
    flags, scope, dates, access history — and the same is true of taking the clearing back as
    one change (rollback of its turn)."""
    mem.import_records(
        [
            {"content": "The cat Murka likes salmon", "importance": 4, "created_at": T0 - 40 * DAY},
            {"content": "Sister Anna lives in Kazan", "private": True, "created_at": T0 - 9 * DAY},
            {"content": "Call me Sasha", "kind": "core", "pinned": True},
            {"content": "Went hiking along the Volga", "kind": "event", "importance": 2},
            {"content": "Writes Go at work", "scope": "work"},
        ]
    )
    mem.clock.advance(3600)
    mem.search("cat Murka salmon")
    mem.search("hiking Volga")
    before = snapshot(mem)
    t1, first = mem.clear_scope("global")
    t2, second = mem.clear_scope("global", pinned=True)
    assert mem.count() == 1 and len(first) + len(second) == 4
    for rid in [*first, *second]:
        mem.restore(rid)
    assert snapshot(mem) == before
    assert [h.id for h in mem.recall("cat Murka salmon", OWNER_TRUSTED)] == [1]
    # the same by taking the clearing back as one change
    t1, first = mem.clear_scope("global")
    mem.rollback_turn(t1)
    assert snapshot(mem) == before
