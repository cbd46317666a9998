"""Personas (SPEC §8.6 scopes, §8.2 detail level per persona, §8.7 learning per persona; issue 13
item 1): create, rename, switch, delete; turns carry the active persona, so recall sees its
memories plus global ones; deleting a persona turns its memories global."""

from __future__ import annotations

import pytest

from core import OWNER_TRUSTED, Refused
from core.chat.conversation_config import DETAIL_LEVELS
from core.chat.events import MemoryUsed
from core.chat.personas import DEFAULT_ID, PersonaNotFound, Personas, slug
from core.store.records import Actor
from eva_runtime import config as cfg
from eva_runtime.services import Services
from tests.fake_llm import ScriptedLLM

T0 = 1_780_000_000.0  # the clock of tests/conftest.py's mem


def services(tmp_path, mem, replies=(), **chat) -> Services:
    config = cfg.from_mapping(
        {"memory": {"embedding_model": "none"}, "chat": chat}, tmp_path / "config.toml"
    )
    llm = ScriptedLLM(list(replies), plans=[])
    return Services(
        config,
        tmp_path,
        clock=mem.clock,
        memory=mem,
        chat_model=llm,
        sleeper_factory=lambda s: None,
        persona="You are Eva.",
    )


def test_detail_levels_are_the_conversations():
    """§8.2: a persona's detail level is one the conversation knows."""
    from core.chat import personas

    assert set(personas.DETAIL_LEVELS) == set(DETAIL_LEVELS)


def test_default_persona_exists_and_cannot_be_deleted(mem):
    """§8.6: a default persona exists from the start; it cannot be deleted."""
    ps = mem.attach(Personas)
    assert [p.id for p in ps.list()] == [DEFAULT_ID]
    assert ps.active().id == DEFAULT_ID
    with pytest.raises(Refused, match="default persona cannot be deleted"):
        ps.delete(DEFAULT_ID, mem)


def test_create_rename_keep_the_scope_id(mem):
    """§8.6: a persona's id is its memories' scope; a rename never changes it. Names are
    unique (case-insensitive); bad values are refused with the reason."""
    ps = mem.attach(Personas)
    work = ps.create(
        "Work", T0, persona_text="You are a terse colleague.", detail_level="key", learning=False
    )
    assert (work.id, work.name, work.detail_level, work.learning) == ("work", "Work", "key", False)
    mama = ps.create("Мама", T0)
    assert mama.id == "mama" and slug("Ёлка и я") == "elka-i-ya"
    with pytest.raises(Refused, match="already a persona named 'Work'"):
        ps.create("  work ", T0)
    with pytest.raises(Exception, match="detail level"):
        ps.create("Other", T0, detail_level="huge")
    renamed = ps.update("work", T0 + 1, name="Office", learning=None)
    assert renamed.id == "work" and renamed.name == "Office" and renamed.learning is None
    with pytest.raises(PersonaNotFound):
        ps.update("nope", T0, name="x")
    again = ps.create("Work", T0)  # the name is free again; the id is not
    assert again.id == "work-2"


def test_deleting_a_persona_turns_its_memories_global(mem):
    """§8.6: deleting a persona turns its memories global (live and archived, so a restore
    lands in a scope that exists) in one transaction; recall as any persona then sees them;
    the active persona falls back to the default."""
    ps = mem.attach(Personas)
    ps.create("Work", T0)
    ps.set_active("work")
    kept = mem.save("Writes backend services in Go at work", scope="work", actor=Actor.OWNER)
    gone = mem.save("The Friday standup moved to Monday", scope="work", actor=Actor.OWNER)
    mem.forget(gone.id, "old", actor=Actor.OWNER)
    other = mem.save("The cat Murka likes salmon")
    assert [h.id for h in mem.recall("backend services Go", OWNER_TRUSTED)] == []
    ids, _chats = ps.delete("work", mem)
    assert sorted(ids) == sorted([kept.id, gone.id])
    assert mem.get(kept.id).scope == "global" and mem.get(gone.id).scope == "global"
    assert mem.get(other.id).scope == "global"
    assert [h.id for h in mem.recall("backend services Go", OWNER_TRUSTED)] == [kept.id]
    assert ps.active().id == DEFAULT_ID and [p.id for p in ps.list()] == [DEFAULT_ID]


def test_deleting_a_persona_whose_pins_do_not_fit_changes_nothing(mem):
    """§2 (≤ 20 pinned per scope) when a persona is deleted: refused with the count to unpin;
    the persona and its memories stay as they were."""
    ps = mem.attach(Personas)
    ps.create("Work", T0)
    mem.import_records([{"content": f"global rule {k} zq{k}", "pinned": True} for k in range(19)])
    mem.import_records(
        [{"content": f"work rule {k} zw{k}", "pinned": True, "scope": "work"} for k in range(3)]
    )
    with pytest.raises(Refused, match="unpin 2 first"):
        ps.delete("work", mem)
    assert ps.get("work").name == "Work"
    assert mem.scope_stats()["work"] == (3, 3)


def test_turns_carry_the_active_persona(tmp_path, mem):
    """Issue 13, §8.6: the TUI's turn context is the active persona's: recall sees its memories
    plus global ones, and not another persona's; switching changes it from the next turn."""
    ps = mem.attach(Personas)
    ps.create("Work", T0)
    ps.create("Friend", T0)
    w = mem.save("Writes backend services in Go at work", scope="work", actor=Actor.OWNER)
    f = mem.save("Plays chess with Dima on Tuesdays", scope="friend", actor=Actor.OWNER)
    g = mem.save("The owner's cat Murka likes salmon and Go")
    s = services(tmp_path, mem, replies=[["ok"], ["ok"], ["ok"]])
    assert s.turn_context().persona == DEFAULT_ID

    def recalled(text: str) -> set[int]:
        evs = list(s.conversation.turn(text, s.turn_context()))
        return set(next(e for e in evs if isinstance(e, MemoryUsed)).section.recalled_ids)

    s.switch_persona("work")
    assert s.turn_context().persona == "work" and s.conversation.config.persona_id == "work"
    got = recalled("Go backend services chess Dima Murka")
    assert w.id in got and g.id in got and f.id not in got
    s.switch_persona("friend")
    got = recalled("Go backend services chess Dima Murka")
    assert f.id in got and g.id in got and w.id not in got
    assert ps.active().id == "friend"  # remembered across restarts (meta)


def test_persona_text_level_and_learning_reach_the_conversation(tmp_path, mem):
    """§8.2, §8.7: each persona has its own text, detail level and learning toggle; unset, they
    follow [chat]. Learning off stops reading memory (no memory section)."""
    ps = mem.attach(Personas)
    ps.create(
        "Quiet",
        T0,
        persona_text="You are a quiet listener.",
        detail_level="detailed",
        learning=False,
    )
    mem.save("The owner's cat Murka likes salmon")
    s = services(tmp_path, mem, replies=[["hm"]], detail_level="key")
    conv = s.conversation
    assert (conv.persona, conv.config.detail_level, conv.config.learning) == (
        "You are Eva.",
        "key",
        True,
    )
    s.switch_persona("quiet")
    assert (conv.persona, conv.config.detail_level, conv.config.learning) == (
        "You are a quiet listener.",
        "detailed",
        False,
    )
    evs = list(conv.turn("What does Murka like?", s.turn_context()))
    assert not any(isinstance(e, MemoryUsed) for e in evs)
    assert s.chat_model.calls[-1]["messages"][0]["content"].startswith("You are a quiet")
    ps.update("quiet", T0, learning=None)
    s.refresh_persona()
    assert conv.config.learning is True


def test_each_persona_has_its_own_chats_and_deleting_it_archives_them(tmp_path, mem):
    """§8.6, §8.9: a chat belongs to a persona. Switching persona continues that persona's own
    most recent chat (the other's messages are not in its window); deleting the persona moves
    its chats to the archive, with their summaries, in the deleting transaction."""
    from core.chat.chats import Chats

    ps = mem.attach(Personas)
    ps.create("Work", T0)
    s = services(tmp_path, mem, replies=[["ok"], ["ok"], ["ok"]])
    conv = s.conversation
    default_chat = conv.chat_id
    list(conv.turn("My cat is Murka", s.turn_context()))
    s.switch_persona("work")
    work_chat = conv.chat_id
    assert work_chat != default_chat and conv.chat.persona == "work"
    list(conv.turn("The release is on Friday", s.turn_context()))
    assert [m.content for m in conv.history()][:1] == ["The release is on Friday"]
    s.switch_persona(DEFAULT_ID)
    assert conv.chat_id == default_chat
    assert [m.content for m in conv.history()][:1] == ["My cat is Murka"]

    ps.delete("work", mem)
    chats = mem.attach(Chats)
    assert chats.get(work_chat).archived and not chats.get(default_chat).archived
    assert [c.id for c in chats.list(archived=True)] == [work_chat]
