"""Issue 15, data loss: regenerate (SPEC §8.4) rolls back only what is unchanged since its turn,
never deletes (what the turn created is archived with the reason "regenerated"), and tells the
owner what it kept because it changed meanwhile — also after a restart."""

from __future__ import annotations

from dataclasses import replace

from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import Notice
from core.llm import ToolCall
from core.sleep import ops
from core.store.records import Actor
from tests.fake_llm import ScriptedLLM


def save(content):
    return ToolCall("memory_save", {"content": content, "kind": "fact", "importance": 3})


def conv_for(mem, script):
    cfg = replace(ConversationConfig(), memory_writes="tools")
    return Conversation(mem, ScriptedLLM(script), config=cfg)


def turn(conv, text):
    return list(conv.turn(text, OWNER_TRUSTED))


def notices(events):
    return [e.text for e in events if isinstance(e, Notice)]


def moved_to_moscow(mem):
    """The owner's "Owner lives in Kazan", and a turn whose tool call updated it to Moscow; the
    record's id and the conversation, whose next answer is a regenerate's ("Again.")."""
    rid = mem.save("Owner lives in Kazan", OWNER_TRUSTED, actor=Actor.OWNER).id
    update = ToolCall("memory_update", {"id": rid, "content": "Owner lives in Moscow"})
    conv = conv_for(mem, [[update], ["Ok."], ["Again."]])
    turn(conv, "I moved to Moscow")
    return rid, conv


def test_a_record_the_owner_edited_after_the_turn_is_kept_and_reported(mem):
    conv = conv_for(mem, [[save("Owner's dog is called Rex")], ["Noted."], ["Again."]])
    turn(conv, "my dog is Rex")
    rid = mem.list(OWNER_TRUSTED)[0].id
    mem.update(rid, OWNER_TRUSTED, content="Owner's dog is called Rex, a beagle", actor=Actor.OWNER)
    events = list(conv.regenerate(OWNER_TRUSTED))
    assert [r.content for r in mem.list(OWNER_TRUSTED)] == ["Owner's dog is called Rex, a beagle"]
    assert any(f"#{rid}" in n and "Kept" in n for n in notices(events))
    # a second regenerate does not report it again: the decision was made
    conv.model.replies.append(["Third."])
    assert not any("Kept" in n for n in notices(list(conv.regenerate(OWNER_TRUSTED))))


def test_an_update_the_turn_made_is_not_restored_over_a_later_owner_edit(mem):
    rid, conv = moved_to_moscow(mem)
    mem.update(rid, OWNER_TRUSTED, importance=5, actor=Actor.OWNER)
    list(conv.regenerate(OWNER_TRUSTED))
    r = mem.get(rid)
    assert r.content == "Owner lives in Moscow" and r.importance == 5


def test_an_unchanged_update_is_undone_with_the_old_wording_searchable(mem):
    rid, conv = moved_to_moscow(mem)
    list(conv.regenerate(OWNER_TRUSTED))
    assert mem.get(rid).content == "Owner lives in Kazan"
    assert [h.id for h in mem.recall("Kazan", OWNER_TRUSTED)] == [rid]
    assert mem.recall("Moscow", OWNER_TRUSTED) == []


def test_a_record_sleep_merged_into_after_the_turn_is_kept(mem, clock):
    conv = conv_for(mem, [[save("Owner's cat is Murka")], ["Ok."], ["Again."]])
    other = mem.save("Murka likes fish", OWNER_TRUSTED, actor=Actor.OWNER).id
    turn(conv, "my cat is Murka")
    rid = next(r.id for r in mem.list(OWNER_TRUSTED) if r.id != other)
    planned = ops.versions(mem._storage.conn, [rid, other])
    with ops.transaction(mem, "sleep:1") as tx, tx.op():
        ops.merge(tx, [rid, other], "Owner's cat Murka likes fish", "same cat", planned)
    survivor = [r for r in mem.list(OWNER_TRUSTED)]
    assert len(survivor) == 1
    events = list(conv.regenerate(OWNER_TRUSTED))
    assert [r.content for r in mem.list(OWNER_TRUSTED)] == ["Owner's cat Murka likes fish"]
    assert any("Kept" in n for n in notices(events))


def test_regenerate_after_a_restart_archives_what_the_turn_created(tmp_path):
    clock = ManualClock(1_780_000_000.0)
    path = tmp_path / "memory.db"
    mem = Memory.open(path, MemoryConfig(), clock)
    conv = conv_for(mem, [[save("Owner's sister is Anna")], ["Ok."]])
    turn(conv, "my sister is Anna")
    mem.close()
    mem = Memory.open(path, MemoryConfig(), clock)
    try:
        conv = conv_for(mem, [["Again."]])
        events = list(conv.regenerate(OWNER_TRUSTED))
        assert events[-1].text == "Again."
        assert mem.count() == 0 and mem.count(archived=True) == 1
        assert mem.archived()[0].why == "regenerated"
        mem.restore(mem.archived()[0].record.id)  # the owner can bring it back
        assert [r.content for r in mem.list(OWNER_TRUSTED)] == ["Owner's sister is Anna"]
    finally:
        mem.close()


def test_a_later_turns_access_survives_rolling_back_a_dedup(mem, clock):
    rid = mem.save("Owner's dog is called Rex", OWNER_TRUSTED, actor=Actor.OWNER).id
    conv = conv_for(mem, [[save("Owner's dog is called Rex")], ["Ok."], ["Again."]])
    turn(conv, "my dog is Rex")
    assert mem.get(rid).access_count == 1
    clock.advance(60)
    mem.search("Rex", OWNER_TRUSTED.with_turn("later"))
    list(conv.regenerate(OWNER_TRUSTED))
    r = mem.get(rid)
    assert r.access_count == 1 and r.accesses == (clock.now(),)


def test_undoing_a_night_archives_what_it_created_as_night_undone(mem):
    a = mem.save("Owner swam on Sunday morning", OWNER_TRUSTED, kind="event").id
    b = mem.save("Owner swam on Sunday again", OWNER_TRUSTED, kind="event").id
    planned = ops.versions(mem._storage.conn, [a, b])
    with ops.transaction(mem, "sleep:9") as tx, tx.op():
        derived = ops.derive(tx, [a, b], "Owner swims on Sundays", "a habit", planned).id
    done = mem.rollback_turn("sleep:9")
    assert derived in done.touched and mem.count() == 2
    assert [(x.record.id, x.why) for x in mem.archived()] == [(derived, "night undone")]
