"""Chats (SPEC §8.9, §11; issue 12 item 1): new chat, switch, rename, delete to the archive with
restore until the TTL, clear history, ``chat.keep_days`` retention, and each chat's own window."""

from __future__ import annotations

import pytest

from core import OWNER_TRUSTED
from core.chat.chats import Chats
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.summaries import SummaryStore
from core.errors import MemoryOpError
from tests.fake_llm import ScriptedLLM

DAY = 86_400.0


def conv_for(mem, replies=(), **kw):
    llm = ScriptedLLM([[r] for r in replies])
    return Conversation(mem, llm, config=ConversationConfig(learning=False, **kw))


def say(conv, text):
    return list(conv.turn(text, OWNER_TRUSTED))


def test_new_chat_has_its_own_history_and_window(mem):
    """§8.9: a new chat starts empty; switching back continues the old one."""
    conv = conv_for(
        mem, ["Nice to hear about Kazan!", "Hello again, new chat here.", "Back to the first one."]
    )
    first = conv.chat_id
    say(conv, "I was born in Kazan")
    new = conv.new_chat()
    assert new.id != first and conv.chat_id == new.id
    assert conv.history() == [] and conv.live_window() == []
    say(conv, "hello there")
    assert [m.content for m in conv.history()] == ["hello there", "Hello again, new chat here."]
    conv.switch_chat(first)
    assert [m.content for m in conv.history()][:1] == ["I was born in Kazan"]
    say(conv, "and another thing")
    prompt = conv.model.calls[-1]["messages"]
    assert any("Kazan" in str(m["content"]) for m in prompt)
    assert not any("hello there" in str(m["content"]) for m in prompt)


def test_chats_are_listed_most_recent_first_with_persona_channel_and_label(mem, clock):
    conv = conv_for(mem, ["ok one", "ok two"])
    say(conv, "first chat message")
    clock.advance(60)
    conv.new_chat("Holiday plans")
    clock.advance(60)
    say(conv, "second chat message")
    listed = conv.chats.list("default", "tui")
    assert [c.label for c in listed] == ["Holiday plans", "first chat message"]
    assert all((c.persona, c.channel) == ("default", "tui") for c in listed)
    assert listed[0].messages == 2


def test_rename_checks_the_title_and_loses_nothing_on_bad_input(mem):
    chats = mem.attach(Chats)
    c = chats.create("default", "tui", 0.0, "Old")
    assert chats.rename(c.id, "  New   name ").title == "New name"
    with pytest.raises(MemoryOpError, match="at most 80"):
        chats.rename(c.id, "x" * 81)
    with pytest.raises(MemoryOpError, match="no chat #999"):
        chats.rename(999, "x")
    assert chats.get(c.id).title == "New name"


def test_delete_moves_the_chat_with_summaries_to_the_archive_then_purges_after_ttl(mem, clock):
    """§8.9, §11: deleting a chat archives it (messages and summaries too), restorable until the
    archive TTL; only then is it purged."""
    conv = conv_for(mem, ["Noted, the dentist."])
    say(conv, "dentist on 5 June")
    chat_id = conv.chat_id
    store = mem.attach(SummaryStore)
    ids = [m.id for m in conv.history()]
    store.add(
        chat_id,
        1,
        True,
        "The owner has a dentist visit on 5 June.",
        ["5 June"],
        ids,
        status="ok",
        detail_level="balanced",
        tokens=10,
        now=clock.now(),
    )
    conv.delete_chat(chat_id)
    assert conv.chat_id != chat_id  # the current chat moved on to another (a new one)
    assert [c.id for c in conv.chats.list(archived=True)] == [chat_id]
    assert chat_id not in [c.id for c in conv.chats.list()]
    assert store.active(chat_id) == []
    clock.advance(10 * DAY)
    assert conv.chats.purge(clock.now(), 30 * DAY) == 0
    restored = conv.chats.restore(chat_id)
    assert not restored.archived and restored.messages == 2
    assert [s.prose for s in store.active(chat_id)] == ["The owner has a dentist visit on 5 June."]
    conv.chats.archive(chat_id, clock.now())
    clock.advance(31 * DAY)
    assert conv.chats.purge(clock.now(), 30 * DAY) == 2
    with pytest.raises(MemoryOpError):
        conv.chats.get(chat_id)
    assert mem._storage.query("SELECT COUNT(*) FROM summaries")[0][0] == 0
    assert mem._storage.query("SELECT COUNT(*) FROM summary_covers")[0][0] == 0


def test_clear_history_archives_messages_and_summaries_and_can_be_undone(mem, clock):
    conv = conv_for(mem, ["a reply", "fresh start"])
    say(conv, "something to clear")
    store = mem.attach(SummaryStore)
    store.add(
        conv.chat_id,
        1,
        True,
        "Something was said.",
        [],
        [m.id for m in conv.history()],
        status="ok",
        detail_level="balanced",
        tokens=5,
        now=clock.now(),
    )
    assert conv.clear_chat() == 2
    assert conv.history() == [] and store.active(conv.chat_id) == []
    say(conv, "new beginning")
    assert "something to clear" not in str(conv.model.calls[-1]["messages"])
    assert conv.chats.restore_history(conv.chat_id) == 2
    assert [m.content for m in conv.history()][0] == "something to clear"
    assert len(store.active(conv.chat_id)) == 1


def test_retention_keep_days_moves_old_messages_to_the_archive(mem, clock):
    """chat.keep_days: older messages leave (to the archive); None keeps everything."""
    conv = conv_for(mem, ["old reply", "new reply"])
    say(conv, "old message")
    clock.advance(40 * DAY)
    say(conv, "new message")
    assert conv.chats.apply_retention(clock.now(), None) == 0
    assert conv.chats.apply_retention(clock.now(), 30) == 2
    assert [m.content for m in conv.history()] == ["new message", "new reply"]
    clock.advance(31 * DAY)
    assert conv.chats.purge(clock.now(), 30 * DAY) == 2
    assert mem._storage.query("SELECT COUNT(*) FROM messages")[0][0] == 2


def test_a_chat_keeps_its_window_start_across_restarts(mem):
    """The live window's start is the chat's, so a restart (or a switch) resumes it and the
    summariser knows what has left the window."""
    import random

    rng = random.Random(3)
    replies = ["r " + " ".join(f"{rng.getrandbits(40):x}" for _ in range(40)) for _ in range(20)]
    conv = Conversation(
        mem,
        ScriptedLLM([[r] for r in replies], context_size=1024),
        config=ConversationConfig(learning=False),
    )
    for i in range(20):
        say(conv, f"message {i} " + "w " * 30)
    kept = conv.chat.window_start
    assert kept is not None and kept > conv.history(limit=1000)[0].id  # the window slid
    again = Conversation(
        mem, ScriptedLLM(context_size=1024), config=ConversationConfig(learning=False)
    )
    assert again.chat_id == conv.chat_id
    assert again.window().messages == conv.window().messages


def test_archived_chat_cannot_be_switched_to_or_renamed(mem, clock):
    conv = conv_for(mem)
    other = conv.new_chat("other")
    conv.new_chat("third")
    conv.delete_chat(other.id)
    with pytest.raises(MemoryOpError, match="archive"):
        conv.switch_chat(other.id)
    with pytest.raises(MemoryOpError, match="archive"):
        conv.chats.rename(other.id, "x")
