"""Chat actions through the app factory and Pilot: send, stream, stop, regenerate, inline memory
notes, sleeping and Wake, the queue, copy, failures as notices (SPEC §7, §8, §9)."""

from __future__ import annotations

from textual.widgets import Markdown

from core import ManualClock
from core.llm import ToolCall
from eva_tui.widgets import MemoryNote, Notice, RecordView, SleepBanner, TurnView, UserMessage
from tests.tui.conftest import NOW, SEED, SIZE, aio, send, settle, until
from tests.tui.fakes import FakeSleeper, GatedLLM

SAVE = ToolCall(
    "memory_save",
    {"content": "The owner's sister Anna lives in Kazan", "kind": "fact", "importance": 4},
)


def spy_notices(app) -> list[str]:
    seen: list[str] = []
    orig = app.notify

    def notify(message, **kw):
        seen.append(message)
        return orig(message, **kw)

    app.notify = notify
    return seen


def answers(app) -> list[TurnView]:
    return [v for v in app.screen.query(TurnView) if v.turn_id]


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


@aio
async def test_escape_stops_a_streaming_answer(env_factory):
    """§9: Esc stops the answer mid-stream (the cancel event); the partial answer is kept and
    marked stopped."""
    llm = GatedLLM([["First part.", " never shown"]])
    env = env_factory(llm=llm)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.screen.query_one("#prompt").value = "tell me a story"
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                answers(pilot.app)
                or any(v.text for v in pilot.app.screen.query(TurnView) if not v.turn_id and v.text)
            ),
        )
        await pilot.press("escape")
        await settle(pilot)
        [view] = answers(pilot.app)
        assert view.text == "First part."
        assert "stopped" in str(view.body.border_subtitle)
        last = env.services.conversation.history()[-1]
        assert (last.role, last.status) == ("assistant", "stopped")


@aio
async def test_memory_writes_appear_inline_and_open_the_record(env_factory):
    """§9, §3.2: a turn's memory save shows as a small note ("saved #1 · fact · 4") that opens
    the record."""
    env = env_factory([[SAVE], ["I'll remember that."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "my sister Anna lives in Kazan")
        [note] = list(pilot.app.screen.query(MemoryNote))
        assert str(note.render()) == "saved #1 · fact · 4"
        await pilot.click(MemoryNote)
        await settle(pilot)
        assert isinstance(pilot.app.screen, RecordView)
        assert pilot.app.screen.record.id == 1
        await pilot.press("escape")


@aio
async def test_regenerate_answers_again_and_rolls_back_the_turns_memory(env_factory):
    """§8.4: regenerate discards the last answer, rolls back its memory writes and streams a
    new one."""
    env = env_factory([[SAVE], ["Noted."], ["A second answer."]])
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
    """§9: copying a message goes through OSC 52 (App.copy_to_clipboard)."""
    env = env_factory([["Copy me."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "hi")
        await pilot.press("ctrl+y")
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
    """§6, §9: without a chat model the app still starts, says what to install (status bar and
    a notice) and keeps chat disabled."""
    env = env_factory(model=False, seed=SEED)
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert pilot.app.screen.query_one("#prompt").disabled
        assert "no model" in pilot.app.status_text
        assert any("make setup" in n for n in notices)
        [note] = [n for n in pilot.app.screen.query(Notice)]
        assert "make setup" in str(note.render())
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
