"""The owner's hands on memory in the TUI, through Pilot (issue 13; SPEC §8.5, §8.6, §8.8, §11):
personas (create, switch, delete), turns carrying the active persona, add a memory (dedup shown
first), move to a scope, clear all with a second confirmation for pinned, save from dialogue
(drafts kept, edited, dropped; saved pinned; the cap said clearly), initialize from a
description (confirm each), and the palette's export and backup."""

from __future__ import annotations

import json

from textual.widgets import Button, DataTable, Label, Select, SelectionList

from core import OWNER_TRUSTED
from core.chat.personas import DEFAULT_ID
from core.store.records import Source
from eva_tui.widgets import EvaInput, EvaTextArea
from screens import owner
from screens.drafting import DraftRow, InitFromDescription, SaveFromDialogue
from screens.memory_dialogs import AddMemory, ClearAll, ConfirmClearPinned, MoveToScope
from screens.personas import ConfirmDeletePersona, PersonaForm, PersonasScreen
from tests.tui.conftest import SEED, SIZE, aio, send, settle, until

CAT = 3
WORK = 5  # SEED's record in scope "work"

DRAFTS = {
    "memories": [
        {
            "content": "My sister Lena moved to Yerevan",
            "kind": "fact",
            "importance": 4,
            "private": True,
        },
        {"content": "Allergic to penicillin", "kind": "core", "importance": 5, "private": True},
        {"content": "Likes the weather today", "kind": "event", "importance": 1, "private": False},
    ]
}


async def press_button(pilot, selector: str) -> None:
    pilot.app.screen.query_one(selector, Button).press()
    await settle(pilot)


def label(pilot, selector: str) -> str:
    return str(pilot.app.screen.query_one(selector, Label).render())


# ---------------------------------------------------------------------------- palette
@aio
async def test_palette_offers_owner_commands_and_export_backup_write_files(env_factory):
    """Issue 13: the palette offers personas, add, save from dialogue, initialize, clear all,
    export and backup; export (without private) writes a JSON Lines file with no private
    content; backup writes a store copy."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        offered = {c.title: c for c in pilot.app.get_system_commands(pilot.app.screen)}
        for title in (
            "Personas…",
            "Add a memory…",
            "Save from dialogue…",
            "Initialize memories from a description…",
            "Clear all memories of a scope…",
            "Backup now",
            "Export memory (JSON Lines, without private)",
            "Export memory with private (JSON Lines)",
        ):
            assert title in offered, title
        offered["Export memory (JSON Lines, without private)"].callback()
        offered["Backup now"].callback()
        await settle(pilot)
    exports = list((env.services.data_dir / "exports").glob("eva-export-*.jsonl"))
    assert len(exports) == 1
    body = exports[0].read_text()
    assert "Murka" in body and "Anna" not in body  # SEED #2 (Anna) is private
    assert json.loads(body.splitlines()[0])["private_left_out"] == 1
    assert len(list((env.services.data_dir / "backups").glob("eva-backup-*.db"))) == 1


# ---------------------------------------------------------------------------- personas
@aio
async def test_personas_create_switch_and_delete(env_factory):
    """§8.6: the owner creates a persona, switches to it (the status bar names it and the next
    turn runs as it: its memories plus global ones), and deletes it (its memories turn global,
    the default persona is active again)."""
    env = env_factory([["Hi there."]], seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.open_personas(pilot.app)
        await settle(pilot)
        assert isinstance(pilot.app.screen, PersonasScreen)
        await pilot.press("n")
        await settle(pilot)
        form = pilot.app.screen
        assert isinstance(form, PersonaForm)
        form.query_one("#persona-name", EvaInput).value = "Work"
        form.query_one("#persona-text", EvaTextArea).text = "You are a focused colleague."
        form.query_one("#persona-level", Select).value = "key"
        await press_button(pilot, "#save")
        screen = pilot.app.screen
        assert isinstance(screen, PersonasScreen)
        table = screen.query_one("#personas", DataTable)
        assert [k.value for k in table.rows] == [DEFAULT_ID, "work"]  # adopts SEED's scope
        table.move_cursor(row=1)
        table.focus()
        await press_button(pilot, "#switch")
        assert env.services.turn_context().persona == "work"
        assert "persona: Work" in pilot.app.status_text
        await pilot.press("escape")
        await settle(pilot)
        await send(pilot, "What do I write at work?")
        await until(pilot, lambda: len(env.llm.calls) >= 1)
        await settle(pilot)
        first = env.llm.calls[0]["messages"]
        assert first[0]["content"].startswith("You are a focused colleague.")
        assert "Writes backend services in Go at work" in first[-1]["content"]
        assert env.services.conversation.config.detail_level == "key"
        # delete it: the work memory turns global
        owner.open_personas(pilot.app)
        await settle(pilot)
        table = pilot.app.screen.query_one("#personas", DataTable)
        table.move_cursor(row=1)
        table.focus()
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ConfirmDeletePersona)
        await press_button(pilot, "#delete")
        await until(pilot, lambda: env.memory.get(WORK).scope == "global")
        assert env.services.active_persona().id == DEFAULT_ID
        assert env.services.turn_context().persona == DEFAULT_ID
        assert "persona:" not in pilot.app.status_text


# ---------------------------------------------------------------------------- add, move, clear
@aio
async def test_add_memory_shows_the_duplicate_first(env_factory):
    """Issue 13 item 2: a memory added by hand is checked like any save — a near duplicate is
    named before saving and a second Save reinforces it; a new one is saved with its kind,
    importance, private flag, scope and source `owner`."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.add_memory(pilot.app)
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, AddMemory)
        dialog.query_one("#content", EvaTextArea).text = "The cat Murka likes salmon!"
        await press_button(pilot, "#save")
        assert "Memory #3 says nearly the same" in label(pilot, "#add-error")
        assert pilot.app.screen is dialog
        before = env.memory.get(CAT).access_count
        await press_button(pilot, "#save")
        await until(pilot, lambda: env.memory.get(CAT).access_count == before + 1)
        assert env.memory.count() == 5
        owner.add_memory(pilot.app)
        await settle(pilot)
        d = pilot.app.screen
        d.query_one("#content", EvaTextArea).text = "Dima is my best friend from school"
        d.query_one("#kind", Select).value = "fact"
        d.query_one("#importance", Select).value = 4
        d.query_one("#private", Select).value = True
        d.query_one("#scope", Select).value = "work"
        await press_button(pilot, "#save")
        await until(pilot, lambda: env.memory.count() == 6)
        new = env.memory.list(OWNER_TRUSTED, contains="Dima")[0]
        assert (new.importance, new.private, new.scope, new.source) == (
            4,
            True,
            "work",
            Source.OWNER,
        )


@aio
async def test_move_to_scope_from_the_memory_browser(env_factory):
    """§8.6: the browser moves a memory to another scope (m)."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await settle(pilot)
        table = pilot.app.screen.query_one("#records", DataTable)
        table.move_cursor(row=table.get_row_index(str(CAT)))
        table.focus()
        await pilot.press("m")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, MoveToScope)
        dialog.query_one("#scope", Select).value = "work"
        await press_button(pilot, "#move")
        await until(pilot, lambda: env.memory.get(CAT).scope == "work")


@aio
async def test_clear_all_needs_a_second_confirmation_for_pinned(env_factory):
    """§8.8: clear all moves every unpinned memory of the scope to the archive; the pinned one
    survives and the second dialog asks explicitly; keeping them keeps them, clearing them
    archives them too. Other scopes are untouched."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.clear_all(pilot.app)
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, ClearAll)
        text = str(dialog.query_one("#clear-what").render())
        assert "3 unpinned memories" in text and "1 pinned memory stays" in text
        await press_button(pilot, "#clear")
        await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmClearPinned))
        assert sorted(r.id for r in env.memory.list()) == [1, WORK]
        await press_button(pilot, "#keep")
        assert sorted(r.id for r in env.memory.list()) == [1, WORK]
        owner.clear_all(pilot.app)
        await settle(pilot)
        await press_button(pilot, "#clear")
        await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmClearPinned))
        await press_button(pilot, "#clear-pinned")
        await until(pilot, lambda: [r.id for r in env.memory.list()] == [WORK])
        assert {a.record.id for a in env.memory.archived()} == {1, 2, CAT, 4}


# ---------------------------------------------------------------------------- drafting
@aio
async def test_save_from_dialogue_keeps_edits_and_drops(env_factory):
    """§8.5: the last exchange is preselected; the model drafts (one structured call); the
    owner drops one draft and edits another; the rest is saved pinned with source
    `dialogue`."""
    env = env_factory([["Oh, Yerevan! How does she like it?"]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "My sister Lena moved to Yerevan. I'm allergic to penicillin.")
        await until(pilot, lambda: not pilot.app.screen.busy)
        env.llm.plans[:] = [DRAFTS]
        owner.save_from_dialogue(pilot.app)
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, SaveFromDialogue)
        assert len(dialog.query_one("#messages", SelectionList).selected) == 2
        await press_button(pilot, "#draft")
        await until(pilot, lambda: len(dialog.query(".draft-keep")) == 3)
        assert "Owner: My sister Lena" in env.llm.json_calls[-1]["messages"][-1]["content"]
        rows = list(dialog.query(DraftRow))
        rows[1].query_one(".draft-text", EvaTextArea).text = "Allergic to penicillin (rash)"
        rows[2].query_one(".draft-keep", Select).value = "drop"
        await press_button(pilot, "#save")
        await until(pilot, lambda: not isinstance(pilot.app.screen, SaveFromDialogue))
        saved = env.memory.list(OWNER_TRUSTED, pinned=True)
        assert sorted(r.content for r in saved) == [
            "Allergic to penicillin (rash)",
            "My sister Lena moved to Yerevan",
        ]
        assert all(r.source is Source.DIALOGUE and r.private for r in saved)


@aio
async def test_save_from_dialogue_says_when_the_pinned_cap_is_reached(env_factory):
    """§8.5, §2: with 19 pinned global memories, two drafts do not fit: the dialog says how
    many fit and nothing is saved; the selection kept verbatim (one draft) then fits."""
    env = env_factory([["Noted."]])
    env.memory.import_records([{"content": f"rule {k} zq{k}", "pinned": True} for k in range(19)])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Call me Sasha, and never call before 10 am.")
        await until(pilot, lambda: not pilot.app.screen.busy)
        env.llm.plans[:] = [{"memories": DRAFTS["memories"][:2]}]
        owner.save_from_dialogue(pilot.app)
        await settle(pilot)
        dialog = pilot.app.screen
        await press_button(pilot, "#draft")
        await until(pilot, lambda: len(dialog.query(".draft-keep")) == 2)
        await press_button(pilot, "#save")
        await until(pilot, lambda: "Nothing was saved" in label(pilot, "#draft-error"))
        assert "1 more fit" in label(pilot, "#draft-error")
        assert env.memory.count() == 19
        await press_button(pilot, "#verbatim")
        rows = list(dialog.query(DraftRow))
        assert len(rows) == 1
        assert rows[0].query_one(".draft-text", EvaTextArea).text == (
            "Call me Sasha, and never call before 10 am."
        )
        await press_button(pilot, "#save")
        await until(pilot, lambda: env.memory.count() == 20)


@aio
async def test_initialize_from_a_description_confirms_each(env_factory):
    """§8.5: the owner writes about themselves (≤ 1,000 characters, counted), the model
    drafts, and each draft is saved or skipped one by one (source `init`)."""
    env = env_factory()
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.init_from_description(pilot.app)
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, InitFromDescription)
        area = dialog.query_one("#description", EvaTextArea)
        area.text = "x" * 1001
        await settle(pilot)
        assert dialog.query_one("#draft", Button).disabled
        assert "too long" in label(pilot, "#description-count")
        area.text = "I'm Sasha. My sister Lena lives in Yerevan. I'm allergic to penicillin."
        await settle(pilot)
        env.llm.plans[:] = [DRAFTS]
        await press_button(pilot, "#draft")
        await until(pilot, lambda: len(dialog.query("#skip-2")) == 1)
        await press_button(pilot, "#save-0")
        await press_button(pilot, "#skip-2")
        await until(pilot, lambda: env.memory.count() == 1)
        rec = env.memory.list()[0]
        assert rec.content == "My sister Lena moved to Yerevan" and rec.source is Source.INIT
        await press_button(pilot, "#close")
        assert not isinstance(pilot.app.screen, InitFromDescription)
        assert env.memory.count() == 1


@aio
async def test_first_run_offers_to_initialize_memories_once(env_factory):
    """§8.5 "Offer it on first run": an empty store gets one notice naming the palette command;
    the next start does not repeat it."""
    env = env_factory()
    env.services.first_run_offer = True
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        notes = [n.message for n in pilot.app._notifications]
        assert any("Initialize memories from a description" in m for m in notes)
    assert env.memory.first_time(owner.INIT_OFFERED) is False


@aio
async def test_drafting_dialogs_work_from_the_keyboard(env_factory):
    """§9 (every action from the keyboard), issue 28 item 4: Ctrl+G drafts (Ctrl+D deletes a
    character in the text box, as in readline); in the init dialog Enter saves the
    focused draft and the focus moves to the next one (Tab then Enter skips it); in save from
    dialogue Ctrl+S saves the drafts."""
    env = env_factory([["Noted."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.init_from_description(pilot.app)
        await settle(pilot)
        pilot.app.screen.query_one("#description", EvaTextArea).text = "I'm Sasha from Kazan."
        env.llm.plans[:] = [DRAFTS]
        await pilot.press("ctrl+g")
        await until(pilot, lambda: len(pilot.app.screen.query("#skip-2")) == 1)
        await settle(pilot)
        await pilot.press("enter")  # saves draft 0
        await settle(pilot)
        await pilot.press("tab", "enter")  # skips draft 1
        await settle(pilot)
        await pilot.press("enter")  # saves draft 2
        await until(pilot, lambda: env.memory.count() == 2)
        assert sorted(r.content for r in env.memory.list()) == [
            "Likes the weather today",
            "My sister Lena moved to Yerevan",
        ]
        await pilot.press("escape")
        await settle(pilot)
        await send(pilot, "Call me Sasha, please.")
        await until(pilot, lambda: not pilot.app.screen.busy)
        env.llm.plans[:] = [{"memories": DRAFTS["memories"][1:2]}]
        owner.save_from_dialogue(pilot.app)
        await settle(pilot)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: len(pilot.app.screen.query(".draft-keep")) == 1)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: env.memory.count() == 3)
        assert env.memory.list(OWNER_TRUSTED, pinned=True)[0].content == "Allergic to penicillin"


@aio
async def test_the_chat_shows_the_active_personas_conversation(env_factory):
    """§8.6, §8.9: each persona has its own conversation: switching shows the other persona's
    messages (empty at first), and switching back shows the first one again."""
    env = env_factory([["Hello Sasha."], ["Hi from work."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "Hi, I'm Sasha.")
        await until(pilot, lambda: not pilot.app.screen.busy)

        def shown() -> str:
            return " ".join(str(w.render()) for w in pilot.app.screen.query("UserMessage"))

        assert "I'm Sasha" in shown()
        env.services.personas.create("Work", env.clock.now())
        env.services.switch_persona("work")
        pilot.app.persona_switched()
        await settle(pilot)
        assert "I'm Sasha" not in shown()
        await send(pilot, "Standup at ten.")
        await until(pilot, lambda: not pilot.app.screen.busy)
        assert "Standup" in shown()
        env.services.switch_persona("default")
        pilot.app.persona_switched()
        await settle(pilot)
        assert "I'm Sasha" in shown() and "Standup" not in shown()


@aio
async def test_the_first_run_welcome_button_opens_initialize(env_factory):
    """§8.5 "Offer it on first run" through issue 16's welcome hook: the real app (which sets
    ``first_run_offer``) puts a "Tell Eva about yourself" button under the welcome of an empty
    store, and it opens the initialize-from-a-description dialog."""
    from eva_tui import strings as S
    from eva_tui.app import create_app

    env = env_factory()
    env.services.first_run_offer = True
    app = create_app(env.services, clock=env.clock, cursor_blink=False, tick_seconds=None)
    assert [label for label, _ in app.welcome_actions] == [S.WELCOME_INIT]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # the button is the offer: no notice over the message box besides it (seen at 120x40)
        assert not [n for n in pilot.app._notifications if n.title == "Welcome"]
        button = pilot.app.screen.query_one("#welcome-0", Button)
        assert str(button.label) == S.WELCOME_INIT
        button.press()
        await settle(pilot)
        assert isinstance(pilot.app.screen, InitFromDescription)
