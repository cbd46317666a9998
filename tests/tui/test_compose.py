"""Issue 28 (the chat an owner expects), items 1–5 and 8, through the app factory and Pilot:
the multi-line composer (a paste sent once, every line kept; ↑/↓ history; the length limit),
notes in the owner's words without internal refusals, Ctrl+C like a terminal, keys that do not
fight the terminal or readline, editing and deleting any message, regenerated answers kept as
alternatives, and the theme kept across starts (SPEC §8.12, §9)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
from textual import events
from textual.binding import Binding
from textual.widgets import TextArea

from core import OWNER_TRUSTED
from eva_runtime import config as cfg
from eva_runtime import config_file
from eva_tui.widgets import Composer, MemoryNote, TurnView, UserMessage
from eva_tui.widgets.help import HelpScreen
from eva_tui.widgets.modals import Confirm
from screens.message_dialogs import EditMessage
from tests.tui.conftest import SIZE, aio, answers, send, settle, spy_notices, until
from tests.tui.fakes import GatedLLM

PASTE = "First line of my note.\nSecond line: my cat is named Pirozhok.\nThird line."
README = Path(__file__).resolve().parents[2] / "README.md"


def composer(app) -> Composer:
    return app.screen.query_one("#prompt", Composer)


# ---------------------------------------------------------------------------- 1. the composer
@aio
async def test_a_three_line_paste_is_kept_whole_and_sent_once(env_factory):
    """Issue 28 item 1 (the bug: a 3-line paste was sent twice, lines joined without spaces): a
    bracketed paste lands in the box with its three lines and sends nothing; Enter sends it as
    one owner message whose text has all three lines; Eva answers once."""
    env = env_factory([["Pirozhok is a lovely name."], ["(a second answer: a bug)"]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.post_message(events.Paste(PASTE))
        await settle(pilot)
        assert composer(pilot.app).text == PASTE
        assert env.services.conversation.history() == []  # a paste alone sends nothing
        await pilot.press("enter")
        await settle(pilot)
        owner = [m for m in env.services.conversation.history() if m.role == "user"]
        assert [m.content for m in owner] == [PASTE]
        assert [m.text for m in pilot.app.screen.query(UserMessage)] == [PASTE]
        assert len(env.llm.calls) == 1 and len(answers(pilot.app)) == 1
        assert composer(pilot.app).text == ""


@aio
async def test_a_paste_with_chat_off_stays_and_is_refused_once(env_factory):
    """Issue 28 item 1: with no chat model, a pasted note and Enter give one "Chat is off"
    notice (not one per line) and the text stays in the box."""
    env = env_factory(model=False)
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.post_message(events.Paste(PASTE))
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert sum("your text stays in the box" in n for n in notices) == 1
        assert composer(pilot.app).text == PASTE


@aio
async def test_enter_sends_and_ctrl_j_or_shift_enter_add_a_line(env_factory):
    """Issue 28 item 1: Ctrl+J (the line feed every terminal sends) and Shift+Enter add a new
    line; Enter sends the lines as one message."""
    env = env_factory([["Got both lines."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        composer(pilot.app).focus()
        await pilot.press(*"one", "ctrl+j", *"two", "shift+enter", *"three")
        assert composer(pilot.app).text == "one\ntwo\nthree"
        assert env.services.conversation.history() == []
        await pilot.press("enter")
        await settle(pilot)
        assert env.services.conversation.history()[0].content == "one\ntwo\nthree"


@aio
async def test_up_and_down_walk_this_chats_earlier_messages(env_factory):
    """Issue 28 item 1: ↑ on an empty box brings back the owner's last message of this chat,
    ↑ again the one before (loaded from the store too); ↓ goes forward and past the newest
    empties the box. Once the recalled text is edited, ↑ moves the cursor instead."""
    env = env_factory([["One."], ["Two."], ["Three."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "first message")
        await send(pilot, "second\nmessage")
        box = composer(pilot.app)
        box.focus()
        await pilot.press("up")
        assert box.text == "second\nmessage"
        await pilot.press("up")
        assert box.text == "first message"
        await pilot.press("up")  # the oldest stays
        assert box.text == "first message"
        await pilot.press("down")
        assert box.text == "second\nmessage"
        await pilot.press("down")
        assert box.text == ""
        await pilot.press("up", "!")  # edited: no longer a recalled message
        assert box.text == "second\nmessage!"
        await pilot.press("up")
        assert box.text == "second\nmessage!"
        assert box.cursor_location[0] == 0  # the cursor moved up a line


@aio
async def test_history_comes_from_the_store_of_this_chat(env_factory):
    """Issue 28 item 1: after a restart the box still walks the chat's earlier messages."""
    env = env_factory([["One."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "kept across starts")
    from eva_tui.app import create_app

    app = create_app(env.services, clock=env.clock, cursor_blink=False, tick_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        composer(pilot.app).focus()
        await pilot.press("up")
        assert composer(pilot.app).text == "kept across starts"


@aio
async def test_a_message_over_the_limit_is_kept_and_the_limit_is_said(env_factory):
    """Issue 28 item 1: `[chat] max_message_chars` is the limit; a longer message is not sent,
    stays whole in the box, and the notice names its length, the limit and the key; near the
    limit the box shows the count."""
    env = env_factory([["Fine."]], chat={"max_message_chars": 200})
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        long = "word " * 50  # 250 characters
        pilot.app.post_message(events.Paste(long))
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert env.services.conversation.history() == []
        assert composer(pilot.app).text == long
        assert any("249" in n and "200" in n and "max_message_chars" in n for n in notices)
        assert "/ 200" in str(composer(pilot.app).border_subtitle)


def test_the_limit_is_a_checked_config_key():
    """Issue 28 item 1: the default is 8000 characters; a value out of range names the key."""
    assert cfg.from_mapping({}).chat.max_message_chars == 8000
    with pytest.raises(cfg.ConfigError, match=r"\[chat\] max_message_chars"):
        cfg.from_mapping({"chat": {"max_message_chars": 5}})


# ---------------------------------------------------------------------------- 2. notes
@aio
async def test_notes_say_what_was_kept_and_hide_refusals(env_factory):
    """Issue 28 item 2: the note under a reply names what was kept in the memory's words; an
    op the memory step refused (it changed nothing) is not shown in the chat, while the turn's
    stored ops keep it."""
    plan = {
        "ops": [
            {
                "op": "save",
                "content": "my cat is named Pirozhok",
                "kind": "fact",
                "importance": 3,
                "private": False,
            },
            {
                "op": "save",
                "content": "my cat is named Pirozhok",
                "kind": "fact",
                "importance": 3,
                "private": False,
            },
            {"op": "forget", "id": 999, "why": "no such memory"},
        ]
    }
    env = env_factory([["What a name!"]], plans=[plan])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "my cat is named Pirozhok")
        [view] = answers(pilot.app)
        notes = [str(n.render()) for n in view.query(MemoryNote)]
        assert notes == ["Kept: “my cat is named Pirozhok”"]
        assert not any("✗" in n or "refused" in n or "already kept by" in n for n in notes)
        stored = env.services.conversation.history()[-1].meta["ops"]
        assert any(not op["ok"] for op in stored)  # the refusals are kept, just not shown


# ---------------------------------------------------------------------------- 3. stop and quit
@aio
async def test_ctrl_c_stops_a_running_reply_and_keeps_what_was_streamed(env_factory):
    """Issue 28 item 3: Ctrl+C, even with the focus in the box, stops the reply; the streamed
    part stays, marked stopped; the app keeps running."""
    llm = GatedLLM([["Once upon a time, far away,", " never shown"]])
    env = env_factory(llm=llm)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        composer(pilot.app).value = "tell me a story"
        await pilot.press("enter")
        await until(pilot, llm.started.is_set)
        await pilot.pause()
        assert composer(pilot.app).has_focus
        await pilot.press("ctrl+c")
        await settle(pilot)
        [view] = answers(pilot.app)
        assert view.text == "Once upon a time, far away,"
        assert "stopped" in str(view.body.border_subtitle)
        assert env.services.conversation.history()[-1].status == "stopped"
        assert pilot.app.is_running


@aio
async def test_ctrl_c_with_nothing_running_asks_once_then_quits(env_factory):
    """Issue 28 item 3: the first Ctrl+C asks in plain words (no "[b]" markup) and keeps the
    app; the second quits."""
    env = env_factory()
    notices = spy_notices(env.app)
    quit_calls = []
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.exit = lambda *a, **k: quit_calls.append(a)  # type: ignore[method-assign]
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert quit_calls == []
        assert notices and "Ctrl+C again" in notices[-1] and "Ctrl+Q" in notices[-1]
        assert not any("[b]" in n or "[/b]" in n for n in notices)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert len(quit_calls) == 1


@aio
async def test_ctrl_q_quits(env_factory):
    """Issue 28 item 3: Ctrl+Q quits at once, from the box too."""
    env = env_factory()
    quit_calls = []
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.exit = lambda *a, **k: quit_calls.append(a)  # type: ignore[method-assign]
        composer(pilot.app).focus()
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert len(quit_calls) == 1


# ---------------------------------------------------------------------------- 4. keys
@aio
async def test_help_opens_from_the_box_with_f1_or_with_question_mark_when_empty(env_factory):
    """Issue 28 item 4: F1 opens the help wherever the focus is; `?` opens it from the empty
    box, and types a `?` once the box has text."""
    env = env_factory()
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        composer(pilot.app).focus()
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(pilot.app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        composer(pilot.app).focus()
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(pilot.app.screen, HelpScreen)
        await pilot.press("question_mark")  # closes it
        await settle(pilot)
        composer(pilot.app).focus()
        await pilot.press(*"why", "question_mark")
        await settle(pilot)
        assert not isinstance(pilot.app.screen, HelpScreen)
        assert composer(pilot.app).text == "why?"


@aio
async def test_screens_are_on_alt_digits_with_f_keys_as_aliases(env_factory):
    """Issue 28 item 4: Alt+1…6 reach the screens (terminals pass them); F2–F6 still work;
    F1 is help, not Chat."""
    env = env_factory()
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, mode in (
            ("alt+2", "memories"),
            ("alt+1", "chat"),
            ("f3", "archive"),
            ("alt+6", "settings"),
            ("alt+1", "chat"),
        ):
            await pilot.press(key)
            await settle(pilot)
            assert pilot.app.current_mode == mode, key
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(pilot.app.screen, HelpScreen)


def eva_bindings() -> list[tuple[str, Binding]]:
    """(class, binding) for every Binding Eva declares in screens/ and eva_tui/ (a text
    field's own editing keys, inherited from Textual, excepted)."""
    import eva_tui.widgets
    import screens
    from eva_tui.app import EvaApp

    textual_own = {id(b) for b in TextArea.BINDINGS}
    out = [("EvaApp", b) for b in EvaApp.BINDINGS if isinstance(b, Binding)]
    for pkg in (screens, eva_tui.widgets):
        for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__:
                    continue
                for b in cls.__dict__.get("BINDINGS", []):
                    if isinstance(b, Binding) and id(b) not in textual_own:
                        out.append((name, b))
    return out


def test_every_binding_has_an_id_the_readme_key_table_names():
    """Issue 28 item 4: every binding of every screen, dialog and widget has an id (so
    `[keymap]` can rebind it), the keymap accepts it, and the README's key table names it."""
    from eva_runtime.keymap import BINDING_IDS

    readme = README.read_text(encoding="utf-8")
    table = readme[readme.index("### Binding ids") :]
    named = set(re.findall(r"`([a-z_]+\.[a-z_]+)`", table))
    bindings = eva_bindings()
    assert len(bindings) > 80
    missing = [f"{cls}: {b.key} → {b.action}" for cls, b in bindings if not b.id]
    assert missing == []
    assert {b.id for _, b in bindings} <= BINDING_IDS
    assert BINDING_IDS - named == set()


READLINE = {
    "ctrl+a",
    "ctrl+b",
    "ctrl+d",
    "ctrl+e",
    "ctrl+f",
    "ctrl+h",
    "ctrl+k",
    "ctrl+u",
    "ctrl+w",
    "ctrl+y",
    "alt+b",
    "alt+d",
    "alt+f",
    "alt+backspace",
}


def test_no_default_binding_shadows_a_readline_editing_key():
    """Issue 28 item 4: no default key of Eva is one readline uses to edit a line (Ctrl+A E B F
    D H K U W Y, Alt+B F D): inside a text field those keys edit, as the owner expects."""
    clash = [
        f"{cls}: {key} ({b.id})"
        for cls, b in eva_bindings()
        for key in b.key.split(",")
        if key in READLINE
    ]
    assert clash == []


# ---------------------------------------------------------------------------- 5. messages
async def focus_last(pilot, kind):
    widget = list(pilot.app.screen.query(kind))[-1]
    widget.focus()
    await pilot.pause()
    return widget


@aio
async def test_the_owner_edits_her_message_and_evas_answer(env_factory):
    """Issue 28 item 5, SPEC §8.12: a focused message opens the edit dialog with `e`; Ctrl+S
    saves; the chat shows the new words, marked edited, and the store has them (the next
    window too) — the owner's message and Eva's answer alike."""
    env = env_factory([["Kazan is lovely."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "I live in Kazan")
        mine = await focus_last(pilot, UserMessage)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(pilot.app.screen, EditMessage)
        await pilot.press(*" now")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert mine.text == "I live in Kazan now"
        answer = await focus_last(pilot, TurnView)
        await pilot.press("e")
        await settle(pilot)
        pilot.app.screen.query_one("#message-text").text = "Kazan is lovely in May."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert answer.text == "Kazan is lovely in May."
        assert str(mine.border_subtitle) == "edited"
        assert "edited" in str(answer.body.border_subtitle)
        conv = env.services.conversation
        assert [m.content for m in conv.history()] == [
            "I live in Kazan now",
            "Kazan is lovely in May.",
        ]
        window = [m.meta.get("prompt", m.content) for m in conv.live_window()]
        assert window == ["I live in Kazan now", "Kazan is lovely in May."]


@aio
async def test_the_owner_deletes_a_message_after_a_question(env_factory):
    """Issue 28 item 5: `d` on a focused answer asks first; yes removes it from the chat and
    from what Eva reads; no keeps it."""
    env = env_factory([["Secret answer."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "hello")
        await focus_last(pilot, TurnView)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(pilot.app.screen, Confirm)
        await pilot.press("n")
        await settle(pilot)
        assert len(answers(pilot.app)) == 1
        await focus_last(pilot, TurnView)
        await pilot.press("delete")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert answers(pilot.app) == []
        assert [m.content for m in env.services.conversation.history()] == ["hello"]


@aio
async def test_regenerated_answers_are_alternatives_flipped_with_arrows(env_factory):
    """Issue 28 item 5: after two regenerates the answer says "‹ 3/3 ›"; ← shows the second
    (its words, "‹ 2/3 ›"), ← again the first; the store's history (what the window and the
    summaries use) follows the choice; the memory the replaced answer kept is rolled back; →
    at the newest says there is no later one."""
    dog = {
        "ops": [
            {
                "op": "save",
                "content": "my dog is called Bublik",
                "kind": "fact",
                "importance": 3,
                "private": False,
            }
        ]
    }
    env = env_factory([["First."], ["Second."], ["Third."]], plans=[{"ops": []}, {"ops": []}, dog])
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "my dog is called Bublik")
        for _ in range(2):
            await pilot.press("ctrl+r")
            await settle(pilot)
        [view] = answers(pilot.app)
        assert view.text == "Third."
        assert "‹ 3/3 ›" in str(view.body.border_subtitle)
        assert [r.content for r in env.memory.list(OWNER_TRUSTED)] == ["my dog is called Bublik"]
        view.focus()
        await pilot.press("right")
        await settle(pilot)
        assert "later" in notices[-1] or "latest" in notices[-1]
        await pilot.press("left")
        await settle(pilot)
        [view] = answers(pilot.app)
        assert view.text == "Second." and "‹ 2/3 ›" in str(view.body.border_subtitle)
        assert env.memory.list(OWNER_TRUSTED) == []  # the third answer's save is rolled back
        assert view.notes == []
        await pilot.press("left")
        await settle(pilot)
        assert answers(pilot.app)[0].text == "First."
        history = env.services.conversation.history()
        assert [m.content for m in history] == ["my dog is called Bublik", "First."]


@aio
async def test_alternatives_are_shown_after_a_restart(env_factory):
    """Issue 28 item 5: the chosen answer and its place among the others come back from the
    store."""
    env = env_factory([["First."], ["Second."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "hello")
        await pilot.press("ctrl+r")
        await settle(pilot)
        answers(pilot.app)[0].focus()
        await pilot.press("left")
        await settle(pilot)
    from eva_tui.app import create_app

    app = create_app(env.services, clock=env.clock, cursor_blink=False, tick_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [view] = answers(pilot.app)
        assert view.text == "First." and "‹ 1/2 ›" in str(view.body.border_subtitle)


# ---------------------------------------------------------------------------- 8. theme
@aio
async def test_the_chosen_theme_is_saved_and_used_at_the_next_start(env_factory, tmp_path):
    """Issue 28 item 8: a theme picked in the app is written to the config file (`[ui] theme`,
    the settings' own save: the file's other lines stay) and the next start uses it."""
    env = env_factory(config_path=tmp_path / "config.toml")  # a file of this test alone
    env.config_path.write_text('# mine\n[chat]\ndetail_level = "key"\n')
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.theme = "nord"
        await settle(pilot)
    text = env.config_path.read_text()
    assert text.startswith('# mine\n[chat]\ndetail_level = "key"\n')
    assert config_file.load(env.config_path, environ={}).ui.theme == "nord"
    from eva_tui.app import create_app

    env.services.config = config_file.load(env.config_path, environ={})
    app = create_app(env.services, clock=env.clock, cursor_blink=False, tick_seconds=None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert pilot.app.theme == "nord"
