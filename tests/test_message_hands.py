"""SPEC §8.12, issue 28 item 5 (the core under the chat's keys): the owner edits or deletes any
message of a chat, hers or Eva's; regenerate keeps the earlier answers as alternatives; choosing
one makes it the answer the window and the summaries use, and rolls back the memory writes of
the answer it replaces (§8.4), in one transaction with the switch."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core import OWNER_TRUSTED
from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.chat.events import TurnDone
from core.chat.summaries import INVALID
from core.chat.summarizer import Summarizer
from core.errors import MemoryOpError
from core.llm import ToolCall
from tests.chat_kit import tui_message
from tests.fake_llm import ScriptedLLM
from tests.test_summaries import TURNS, SummaryLLM, fill


def save(content):
    return ToolCall("memory_save", {"content": content, "kind": "fact", "importance": 3})


def tools_conv(mem, script):
    cfg = replace(ConversationConfig(), memory_writes="tools")
    return Conversation(mem, ScriptedLLM(script), config=cfg)


def done(events) -> TurnDone:
    [d] = [e for e in events if isinstance(e, TurnDone)]
    return d


def test_turn_done_names_the_stored_messages(mem):
    """Issue 28 item 5: the chat learns the ids of the stored messages (to edit them)."""
    conv = tools_conv(mem, [["Hello!"], ["Hi again!"]])
    d = done(conv.turn("hi", OWNER_TRUSTED))
    hist = conv.history()
    assert (d.user_message_id, d.message_id) == (hist[0].id, hist[1].id)
    again = done(conv.regenerate(OWNER_TRUSTED))
    assert again.user_message_id == hist[0].id and again.message_id not in (None, hist[1].id)


def test_regenerate_keeps_the_earlier_answers_and_a_choice_flips_back(mem):
    """§8.12: after two regenerates a turn has three answers; choosing the first puts it back in
    the window and the history (the others leave them), and the memory the chosen-away answer
    saved is rolled back (§8.4); choosing the newest again brings its words back, not its
    undone memory."""
    conv = tools_conv(
        mem,
        [
            ["First answer."],
            [save("Owner's dog is called Rex")],
            ["Second answer."],
            ["Third answer."],
        ],
    )
    turn_id = done(conv.turn("my dog is Rex", OWNER_TRUSTED)).turn_id
    list(conv.regenerate(OWNER_TRUSTED))
    assert [r.content for r in mem.list(OWNER_TRUSTED)] == ["Owner's dog is called Rex"]
    list(conv.regenerate(OWNER_TRUSTED))  # the second answer's save is rolled back here
    assert mem.list(OWNER_TRUSTED) == []
    alts = conv.alternatives(turn_id)
    assert [a.content for a in alts] == ["First answer.", "Second answer.", "Third answer."]
    assert [a.status for a in alts] == ["discarded", "discarded", "ok"]
    assert conv.alternative_counts() == {turn_id: 3}

    conv.choose_alternative(turn_id, alts[0].id)
    assert [m.content for m in conv.history()] == ["my dog is Rex", "First answer."]
    assert [m.content for m in conv.live_window()] == ["my dog is Rex", "First answer."]
    assert [a.status for a in conv.alternatives(turn_id)] == ["ok", "discarded", "discarded"]

    conv.choose_alternative(turn_id, alts[1].id)
    assert [m.content for m in conv.history()][-1] == "Second answer."
    assert mem.list(OWNER_TRUSTED) == []  # the undone save is not redone by choosing again
    assert conv.alternatives(turn_id)[1].meta.get("undone") is True


def test_choosing_away_from_an_answer_rolls_its_memory_back(mem):
    """§8.4 as today: the memory writes of the answer that stops being the chosen one are
    rolled back with the switch (archived with the reason "regenerated")."""
    conv = tools_conv(mem, [["First."], [save("Owner's cat is Murka")], ["Second."]])
    turn_id = done(conv.turn("my cat is Murka", OWNER_TRUSTED)).turn_id
    list(conv.regenerate(OWNER_TRUSTED))
    [kept] = mem.list(OWNER_TRUSTED)
    first = conv.alternatives(turn_id)[0]
    conv.choose_alternative(turn_id, first.id)
    assert mem.list(OWNER_TRUSTED) == []
    assert mem.archived()[0].record.id == kept.id and mem.archived()[0].why == "regenerated"


def test_a_choice_outside_the_turn_changes_nothing(mem):
    conv = tools_conv(mem, [["One."], ["Two."]])
    a = done(conv.turn("first", OWNER_TRUSTED))
    b = done(conv.turn("second", OWNER_TRUSTED))
    with pytest.raises(MemoryOpError, match="not an answer of that turn"):
        conv.choose_alternative(a.turn_id, b.message_id)
    assert [m.content for m in conv.history()] == ["first", "One.", "second", "Two."]


def test_the_owner_edits_and_deletes_any_message_of_the_chat(mem):
    """§8.12: her message and Eva's answer can be edited (the window carries the new words) or
    deleted (to the archive: out of the history and the window); a message of another chat or
    an empty text is refused and changes nothing."""
    conv = tools_conv(mem, [["Kazan is lovely."], ["Noted."]])
    d = done(conv.turn("I live in Kazan", OWNER_TRUSTED))
    conv.edit_message(d.user_message_id, "I live in Kazan, on Pushkin street")
    edited = conv.edit_message(d.message_id, "Kazan is lovely in May.")
    assert edited.content == "Kazan is lovely in May."
    window = [m.meta.get("prompt", m.content) for m in conv.live_window()]
    assert window == ["I live in Kazan, on Pushkin street", "Kazan is lovely in May."]
    with pytest.raises(MemoryOpError, match="empty"):
        conv.edit_message(d.message_id, "   ")
    first_chat = conv.chat_id
    conv.new_chat()
    with pytest.raises(MemoryOpError, match="no message"):
        conv.delete_message(d.message_id)
    conv.switch_chat(first_chat)
    conv.delete_message(d.message_id)
    assert [m.content for m in conv.history()] == ["I live in Kazan, on Pushkin street"]


def test_choosing_an_alternative_invalidates_the_summaries_covering_it(mem, clock):
    """§8.3 coverage: the summary covering a turn's answer is invalid once another answer is
    chosen (it summarised words the chat no longer shows)."""
    conv = Conversation(mem, SummaryLLM(), config=ConversationConfig(learning=False))
    s = Summarizer(conv.summaries, conv.model, clock=clock, chunk_messages=2)
    ids = fill(mem, conv.chat_id, TURNS[:2])
    s.run(conv.chat_id, ids[-1] + 1)
    before = conv.summaries.active(conv.chat_id)
    assert len(before) == 2
    turn_id = "t0.0-0"
    conv._transcript.discard_answers(turn_id, clock.now())  # a regenerate's discard …
    fill_again = tui_message(
        conv._transcript,
        turn_id,
        "assistant",
        "Anna0, again!",
        chat_id=conv.chat_id,
        at=clock.now(),
        tokens=2,
    )
    assert len(conv.summaries.active(conv.chat_id)) == 1
    s.run(conv.chat_id, fill_again + 1)
    covering = [
        x for x in conv.summaries.active(conv.chat_id) if fill_again in conv.summaries.covers(x.id)
    ]
    assert covering
    conv.choose_alternative(turn_id, ids[1])
    statuses = {x.id: x.status for x in conv.summaries.all(conv.chat_id)}
    assert all(statuses[x.id] == INVALID for x in covering)
    assert [m.content for m in conv.history()][:2] == [TURNS[0][0], TURNS[0][1]]
