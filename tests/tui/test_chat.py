"""Chat actions through the app factory and Pilot: send, stream, stop, regenerate, inline memory
notes (from memory tools and from the structured memory step), "remembering…", sleeping and Wake,
the queue, copy, notices and failures (SPEC §3.1, §7, §8, §9; issue 9)."""

from __future__ import annotations

import pytest
from textual.widgets import Markdown

from core import OWNER_TRUSTED, ManualClock
from core.llm import ModelError, ToolCall
from eva_tui.widgets import MemoryNote, Notice, RecordView, SleepBanner, TurnView, UserMessage
from eva_tui.widgets.chat import REMEMBERING
from tests.tui.conftest import NOW, SEED, SIZE, aio, answers, send, settle, spy_notices, until
from tests.tui.fakes import FakeSleeper, GatedLLM, PlannedLLM

SAVE = ToolCall(
    "memory_save",
    {"content": "The owner's sister Anna lives in Kazan", "kind": "fact", "importance": 4},
)
TOOLS = {"memory_writes": "tools"}  # the model calls the memory tools while it answers (§3.1)
SAVE_PLAN = {  # the structured memory step's answer (§3.1)
    "ops": [
        {
            "op": "save",
            "content": "The owner's sister Anna lives in Kazan",
            "kind": "fact",
            "importance": 4,
            "private": False,
        }
    ]
}
DOG_PLAN = {
    "ops": [
        {
            "op": "save",
            "content": "The owner's dog is Bublik",
            "kind": "fact",
            "importance": 3,
            "private": False,
        }
    ]
}


@aio
async def test_send_streams_the_answer_and_stores_the_turn(env_factory):
    """§8.1, §9: a sent message streams Eva's answer into the chat and both are stored."""
    env = env_factory([["Hello", ", Sasha", "!"]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "hi there")
        assert [m.text for m in pilot.app.screen.query(UserMessage)] == ["hi there"]
        assert [v.text for v in answers(pilot.app)] == ["Hello, Sasha!"]
        conv = env.services.conversation
        assert [(m.role, m.content) for m in conv.history()] == [
            ("user", "hi there"),
            ("assistant", "Hello, Sasha!"),
        ]


@aio
async def test_streaming_appends_to_the_markdown_instead_of_rerendering(env_factory, monkeypatch):
    """§9: tokens are appended through Markdown.get_stream; the reply is never re-rendered
    whole per token (Markdown.update is not called while streaming)."""
    updates, appends = [], []
    orig_update, orig_append = Markdown.update, Markdown.append

    def spy_update(self, markdown):
        updates.append(markdown)
        return orig_update(self, markdown)

    def spy_append(self, markdown):
        appends.append(markdown)
        return orig_append(self, markdown)

    env = env_factory([[f"word{i} " for i in range(30)]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        monkeypatch.setattr(Markdown, "update", spy_update)
        monkeypatch.setattr(Markdown, "append", spy_append)
        await send(pilot, "count")
        assert answers(pilot.app)[0].text.startswith("word0 word1")
        assert [u for u in updates if u] == []  # only the empty document at mount
        assert "".join(appends) == "".join(f"word{i} " for i in range(30))


@pytest.mark.parametrize(
    "first",
    ["Once upon a time, far away,", "First part."],
    ids=["streamed", "held-back"],
)
@aio
async def test_escape_stops_a_streaming_answer(env_factory, first):
    """§9: Esc stops the answer mid-stream (the cancel event); the partial answer is kept,
    marked stopped, and the chat shows what is stored — also when the start of the reply was
    still held back (issue 9: a short start may be an echo, so it is not streamed at once)."""
    llm = GatedLLM([[first, " never shown"]])
    env = env_factory(llm=llm)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.screen.query_one("#prompt").value = "tell me a story"
        await pilot.press("enter")
        await until(pilot, llm.started.is_set)
        await pilot.pause()
        await pilot.press("escape")
        await settle(pilot)
        [view] = answers(pilot.app)
        assert view.text == first
        assert "stopped" in str(view.body.border_subtitle)
        last = env.services.conversation.history()[-1]
        assert (last.role, last.status, last.content) == ("assistant", "stopped", first)


@aio
async def test_memory_writes_appear_inline_and_open_the_record(env_factory):
    """§9, §3.2 (memory_writes = "tools"), issue 28 item 2: a turn's memory save shows as a
    small note in the memory's words ("Kept: “…”") that opens the record."""
    env = env_factory([[SAVE], ["I'll remember that."]], chat=TOOLS)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "my sister Anna lives in Kazan")
        [note] = list(pilot.app.screen.query(MemoryNote))
        assert str(note.render()) == "Kept: “The owner's sister Anna lives in Kazan”"
        await pilot.click(MemoryNote)
        await settle(pilot)
        assert isinstance(pilot.app.screen, RecordView)
        assert pilot.app.screen.record.id == 1
        await pilot.press("escape")


@pytest.mark.parametrize(
    "script, chat",
    [
        ({"replies": [[SAVE], ["Noted."], ["A second answer."]]}, TOOLS),
        ({"replies": [["Noted."], ["A second answer."]], "plans": [SAVE_PLAN]}, None),
    ],
    ids=["tools", "structured"],
)
@aio
async def test_regenerate_answers_again_and_rolls_back_the_turns_memory(env_factory, script, chat):
    """§8.4, §3.1: regenerate discards the last answer, rolls back its memory writes (made by
    the tools or by the structured memory step) and streams a new one."""
    env = env_factory(script["replies"], plans=script.get("plans"), chat=chat)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "my sister Anna lives in Kazan")
        assert env.memory.count() == 1
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert [v.text for v in answers(pilot.app)] == ["A second answer."]
        assert env.memory.count() == 0
        assert list(pilot.app.screen.query(MemoryNote)) == []
        assert [m.content for m in env.services.conversation.history()] == [
            "my sister Anna lives in Kazan",
            "A second answer.",
        ]


@aio
async def test_asleep_messages_queue_and_wake_sends_them(env_factory):
    """§7: while Eva sleeps the chat says "sleeping…" with a Wake button, messages wait in a
    queue, and waking sends them."""
    env = env_factory(
        [["Good morning!"], ["And hello again."]],
        sleeper=FakeSleeper(ManualClock(NOW), sleeping=True),
    )
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = pilot.app.screen.query_one("#prompt")
        for text in ("wake up", "are you there?"):
            prompt.value = text
            await pilot.press("enter")
        await pilot.pause()
        banner = pilot.app.screen.query_one(SleepBanner)
        assert banner.has_class("-visible")
        await until(pilot, lambda: "2 messages" in str(banner.query_one("#sleep-text").render()))
        assert all(m.has_class("-queued") for m in pilot.app.screen.query(UserMessage))
        assert answers(pilot.app) == []
        await pilot.click("#wake")
        await until(pilot, lambda: len(answers(pilot.app)) == 2)
        await settle(pilot)
        assert env.sleeper.woken == 1
        assert [v.text for v in answers(pilot.app)] == ["Good morning!", "And hello again."]
        assert not banner.has_class("-visible")
        assert not any(m.has_class("-queued") for m in pilot.app.screen.query(UserMessage))


@aio
async def test_messages_typed_while_answering_are_sent_in_order(env_factory):
    """§9: a message sent while Eva answers waits and is sent when the answer ends."""
    llm = GatedLLM([["One", " two."], ["Three."]])
    env = env_factory(llm=llm)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        prompt = pilot.app.screen.query_one("#prompt")
        prompt.value = "first"
        await pilot.press("enter")
        await until(pilot, llm.started.is_set)
        prompt.value = "second"
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.screen.query(UserMessage).last().has_class("-queued")
        llm.gate.set()
        await until(pilot, lambda: len(answers(pilot.app)) == 2)
        await settle(pilot)
        assert [v.text for v in answers(pilot.app)] == ["One two.", "Three."]


@aio
async def test_copy_last_answer_uses_the_clipboard(env_factory):
    """§9: copying a message goes through OSC 52 (App.copy_to_clipboard); issue 28 item 4:
    the key is Alt+W, and Ctrl+Y in the box is the box's own (it copies nothing)."""
    env = env_factory([["Copy me."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "hi")
        await pilot.press("ctrl+y")
        assert pilot.app.clipboard != "Copy me."
        await pilot.press("alt+w")
        assert pilot.app.clipboard == "Copy me."


@aio
async def test_a_failing_worker_becomes_a_notice_not_a_crash(env_factory):
    """§9: a worker failure (here the model raises something unexpected) becomes a notice;
    the app keeps running and the chat stays usable."""
    env = env_factory([RuntimeError("GPU on fire"), ["Still here."]])
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "hi")
        assert any("GPU on fire" in n for n in notices)
        await send(pilot, "again")
        assert answers(pilot.app)[-1].text == "Still here."


@aio
async def test_missing_model_starts_with_chat_off_and_says_what_to_install(env_factory):
    """§6, §9, issue 16: without a chat model the app still starts, says what to install and
    how to fix it (status bar, a notice, the note in the chat); typing still works."""
    env = env_factory(model=False, seed=SEED)
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not pilot.app.screen.query_one("#prompt").disabled
        assert "no model" in pilot.app.status_text
        assert any("make setup" in n for n in notices)
        [note] = list(pilot.app.screen.query(".chat-off"))
        assert "make setup" in note.source and "eva doctor" in note.source
        assert env.services.conversation is None


@aio
async def test_first_run_greets_the_owner(env_factory):
    """§9 (first run): an empty store is greeted with what Eva is and how to find things."""
    env = env_factory()
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [greeting] = list(pilot.app.screen.query(TurnView))
        assert "Hello, I'm Eva" in greeting.text
        assert greeting.turn_id is None  # not an answer: nothing to regenerate or copy


# ---------------------------------------------------------------------------- §3.1 memory step
def notes_text(view: TurnView) -> list[str]:
    return [str(n.render()) for n in view.notes]


@aio
async def test_structured_turn_shows_the_saved_memory_as_a_note(env_factory):
    """§3.1, issue 9 (memory_writes = "structured", the default): after the reply the memory
    step's save is in the store and shows under the answer as a memory note that opens the
    record; the status bar counts it; the answer's subtitle ends without "remembering…"."""
    env = env_factory([["What a lovely name!"]], plans=[DOG_PLAN])
    assert env.services.conversation.config.memory_writes == "structured"
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "my dog is called Bublik")
        [view] = answers(pilot.app)
        assert view.text == "What a lovely name!"
        [record] = env.memory.list(OWNER_TRUSTED)
        assert record.content == "my dog is called Bublik"  # the owner's own words
        assert notes_text(view) == ["Kept: “my dog is called Bublik”"]
        assert REMEMBERING not in str(view.body.border_subtitle)
        assert not view.is_remembering
        assert "1 memory" in pilot.app.status_text
        await pilot.click(MemoryNote)
        await settle(pilot)
        assert isinstance(pilot.app.screen, RecordView)
        assert pilot.app.screen.record.id == record.id


@aio
async def test_a_message_sent_while_remembering_waits_for_the_memory_step(env_factory):
    """§3.1, §9, issue 9: while the memory step runs the finished answer says "remembering…";
    a message the owner sends meanwhile is queued (below the answer) and sent only after the
    step's ops are written; then the marker is gone."""
    llm = PlannedLLM([["Bublik is a fine name."], ["Of course."]], [DOG_PLAN], hold_plans=True)
    env = env_factory(llm=llm)
    async with env.app.run_test(size=SIZE) as pilot:
        try:
            await settle(pilot)
            prompt = pilot.app.screen.query_one("#prompt")
            prompt.value = "my dog is called Bublik"
            await pilot.press("enter")
            await until(pilot, llm.remembering.is_set)
            views = lambda: list(pilot.app.screen.query(TurnView))  # noqa: E731
            await until(pilot, lambda: views()[-1].is_remembering)
            view = views()[-1]
            assert view.text == "Bublik is a fine name."  # the pending tokens were flushed
            assert str(view.body.border_subtitle) == REMEMBERING
            assert view.notes == []
            prompt.value = "will you remember him?"
            await pilot.press("enter")
            await pilot.pause()
            queued = pilot.app.screen.query(UserMessage).last()
            assert queued.has_class("-queued")
            log = list(pilot.app.screen.query_one("#log").children)
            assert log.index(queued) > log.index(view)
            assert len(llm.calls) == 1  # not sent to the model yet
            assert env.memory.count() == 0
            llm.plan_gate.set()
            await until(pilot, lambda: len(answers(pilot.app)) == 2)
            await settle(pilot)
            first, second = answers(pilot.app)
            assert (first.text, second.text) == ("Bublik is a fine name.", "Of course.")
            assert notes_text(first) == ["Kept: “my dog is called Bublik”"]
            assert notes_text(second) == []
            assert not first.is_remembering and not second.is_remembering
            assert REMEMBERING not in str(first.body.border_subtitle)
            assert not queued.has_class("-queued")
            assert [m.content for m in env.services.conversation.history()] == [
                "my dog is called Bublik",
                "Bublik is a fine name.",
                "will you remember him?",
                "Of course.",
            ]
            assert env.memory.count() == 1
        finally:  # a failing assertion must not leave the step waiting forever
            llm.plan_gate.set()


@aio
async def test_a_notice_of_the_turn_is_shown_as_a_calm_note(env_factory):
    """§3.1, §9, issue 9: a Notice of the turn (here: the memory step failed) reaches the chat
    below its answer as a calm note, not an error; the answer stands and nothing is saved."""
    env = env_factory([["Lovely!"]], plans=[ModelError("the model timed out")])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "my dog is called Bublik")
        [view] = answers(pilot.app)
        assert view.text == "Lovely!"
        [note] = list(pilot.app.screen.query(Notice))
        assert "the model timed out" in str(note.render())
        assert not note.has_class("-error")
        log = list(pilot.app.screen.query_one("#log").children)
        assert log.index(note) == log.index(view) + 1
        assert not view.is_remembering
        assert env.memory.count() == 0


def test_services_warm_the_model_once_with_the_chats_known_prefix(tmp_path):
    """Issue 9 (first token on a fresh store): once the chat is ready its known prompt prefix
    is evaluated into the model's cache — once — so the first message pays only for itself."""
    from core import Memory
    from core.clock import ManualClock
    from core.privacy import OWNER_TRUSTED
    from eva_runtime.config import EvaConfig
    from eva_runtime.services import Services
    from tests.fake_llm import ScriptedLLM

    clock = ManualClock()
    mem = Memory.open(tmp_path / "m.db", clock=clock)
    llm = ScriptedLLM([["Hello there, nice to see you again today!"]], plans=[])
    services = Services(
        EvaConfig(),
        tmp_path,
        clock=clock,
        memory=mem,
        chat_model=llm,
        sleeper_factory=lambda s: None,
    )
    services.warm_up()
    services.warm_up()
    assert len(llm.warmed) == 1 and services.warmed
    list(services.conversation.turn("hi", OWNER_TRUSTED))
    assert llm.calls[0]["evaluated"] < llm.calls[0]["prompt_tokens"] // 2
    mem.close()


@aio
async def test_the_app_owns_the_turn_state_and_quitting_cancels_a_turn(env_factory):
    """Issue 10: the chat screen announces a turn by message; the app alone keeps what is
    generating (the scheduler reads it) and the turn's cancel event, which quitting sets."""
    llm = GatedLLM([["One", " two."], ["Three", " four."]])
    env = env_factory(llm=llm)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app = pilot.app
        assert not app.generating and not app.cancels
        app.screen.query_one("#prompt").value = "first"
        await pilot.press("enter")
        await until(pilot, llm.started.is_set)
        await until(pilot, lambda: app.generating)
        (cancel,) = app.cancels
        assert cancel is app.screen.cancel
        llm.gate.set()
        await until(pilot, lambda: len(answers(app)) == 1)
        await settle(pilot)
        assert not app.generating and not app.cancels
        llm.gate.clear()
        app.screen.query_one("#prompt").value = "second"
        await pilot.press("enter")
        await until(pilot, lambda: app.generating)
        (cancel,) = app.cancels
        app.exit()
        assert cancel.is_set()


@aio
async def test_a_token_arriving_while_the_app_closes_is_not_a_crash():
    """Issue 15/16 (seen in CI under load): the last tokens of a cancelled turn reached an
    answer whose body the closing app had already removed — NoMatches crashed the quit; so did
    the turn's end marking that body stopped. The text is still kept (the core stores the reply); nothing is written on screen."""
    from textual.app import App

    from eva_tui.widgets.chat import AssistantMessage, TurnView

    class Host(App):
        def compose(self):
            yield TurnView()

    async with Host().run_test() as pilot:
        view = pilot.app.query_one(TurnView)
        await view.query_one(AssistantMessage).remove()
        await view.write("Three")
        assert view.text == "Three"
        # CI under load: the turn the quit cancelled ended (TurnDone) after the body went
        await view.remembering()
        await view.finish("stopped")
        assert view.text == "Three" and not view.is_remembering
