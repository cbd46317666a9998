"""Issue 16: every screen and dialog at 80×24 (the smallest terminal Eva supports) and at
120×40, through the app factory (scripted model, temporary store, fixed clock, no blink).
Update with ``pytest tests/tui/test_snapshots_sizes.py --snapshot-update`` after checking the
report."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import DataTable

from core import OWNER_TRUSTED, ManualClock
from core.store.records import Actor
from eva_tui.widgets import TurnView
from tests.tui.conftest import NOW, SEED, send, settle
from tests.tui.fakes import FakeSleeper, night
from tests.tui.test_snapshots import (
    CHAT_PLANS,
    CHAT_SCRIPT,
    OWNER_CONFIG,
    OWNER_DATA,
    goto,
    quiet,
)

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def row(table_id: str, record_id: int, key: str):
    async def steps(pilot) -> None:
        table = pilot.app.screen.query_one(table_id, DataTable)
        table.move_cursor(row=table.get_row_index(str(record_id)))
        await pilot.press(key)

    return steps


def then(*steps):
    async def run(pilot) -> None:
        for step in steps:
            await step(pilot)
            await pilot.pause()
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    return run


# ---------------------------------------------------------------------------- chat
@pytest.mark.parametrize("size", SIZES)
def test_chat_conversation(snap_compare, env_factory, size):
    """Issue 16 item 5: answers, notes, the prompt, the status bar and the footer fit."""
    env = env_factory(CHAT_SCRIPT, plans=CHAT_PLANS, seed=SEED)

    async def talk(pilot) -> None:
        await send(pilot, "My sister Anna lives in Kazan")
        await send(pilot, "What do you know about me?")

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(talk))


THREE_LINES = "First line of my note.\nSecond line: my cat is named Pirozhok.\nThird line."


@pytest.mark.parametrize("size", SIZES)
def test_chat_composer_with_three_lines(snap_compare, env_factory, size):
    """Issue 28 items 1 and 9: a pasted three-line note shows whole in the box (its three lines,
    the box grown to hold them) before it is sent."""
    env = env_factory(CHAT_SCRIPT, plans=CHAT_PLANS, seed=SEED)

    async def paste(pilot) -> None:
        await send(pilot, "My sister Anna lives in Kazan")
        pilot.app.post_message(events.Paste(THREE_LINES))

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(paste))


@pytest.mark.parametrize("size", SIZES)
def test_chat_edited_message(snap_compare, env_factory, size):
    """Issue 28 items 5 and 9: the owner's message and Eva's answer after an edit (through the
    keys: Shift+Tab to the answer, e, Ctrl+S), the focus back in the box."""
    env = env_factory(CHAT_SCRIPT, plans=CHAT_PLANS, seed=SEED)

    async def edit(pilot) -> None:
        await send(pilot, "My sister Anna lives in Kazan")
        view = [v for v in pilot.app.screen.query(TurnView) if v.turn_id][-1]
        view.focus()
        await pilot.press("e")
        await settle(pilot)
        pilot.app.screen.query_one("#message-text").text = "Noted — Anna in Kazan stays between us."
        await pilot.press("ctrl+s")
        await settle(pilot)
        pilot.app.screen.query_one("#prompt").focus()

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(edit))


@pytest.mark.parametrize("size", SIZES)
def test_chat_alternatives(snap_compare, env_factory, size):
    """Issue 28 items 5 and 9: an answer regenerated twice, flipped back to the second of its
    three versions with ← (the subtitle says ‹ 2/3 ›; the focused answer is outlined)."""
    env = env_factory([["First answer."], ["Second answer, kept."], ["Third answer."]], seed=SEED)

    async def flip(pilot) -> None:
        await send(pilot, "Tell me something short")
        for _ in range(2):
            await pilot.press("ctrl+r")
            await settle(pilot)
        view = [v for v in pilot.app.screen.query(TurnView) if v.turn_id][-1]
        view.focus()
        await pilot.press("left")
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(flip))


@pytest.mark.parametrize("size", SIZES)
def test_chat_first_run_welcome(snap_compare, env_factory, size):
    """Issue 16 (first run): an empty store gets what Eva is, how private works, where the data
    lives; the hook's button shows under it."""
    env = env_factory()
    env.services.data_dir = OWNER_DATA  # the welcome names it: a fixed path in the picture
    env.app.welcome_actions.append(("Tell Eva about yourself", lambda: None))
    assert snap_compare(env.app, terminal_size=size, run_before=quiet())


@pytest.mark.parametrize("size", SIZES)
def test_chat_without_a_model(snap_compare, env_factory, size):
    """Issue 16 item 7: why chat is off and how to fix it; the box takes text; no Stop or
    Regenerate in the footer."""
    env = env_factory(model=False, seed=SEED, config_path=OWNER_CONFIG)
    assert snap_compare(env.app, terminal_size=size, run_before=quiet())


@pytest.mark.parametrize("size", SIZES)
def test_chat_asleep(snap_compare, env_factory, size):
    """Issue 16 item 5: the sleeping banner and its Wake button keep their label."""
    env = env_factory(
        [["Good morning!"]], seed=SEED, sleeper=FakeSleeper(ManualClock(NOW), sleeping=True)
    )
    assert snap_compare(env.app, terminal_size=size, run_before=quiet())


# ---------------------------------------------------------------------------- memories and dialogs
@pytest.mark.parametrize("size", SIZES)
def test_memories(snap_compare, env_factory, size):
    env = env_factory(seed=SEED)
    assert snap_compare(env.app, terminal_size=size, run_before=quiet(goto("f2")))


@pytest.mark.parametrize("size", SIZES)
def test_record_view(snap_compare, env_factory, size):
    """Issue 16 items 5, 9: every field and every labelled button of a record fit."""
    env = env_factory(seed=SEED)
    assert snap_compare(
        env.app, terminal_size=size, run_before=quiet(goto("f2", row("#records", 2, "o")))
    )


@pytest.mark.parametrize("size", SIZES)
def test_record_view_after_pin(snap_compare, env_factory, size):
    """Issue 16 item 9: after `p` the view stays open and shows "pinned yes" and Unpin."""
    env = env_factory(seed=SEED)

    async def pin(pilot) -> None:
        await pilot.press("p")

    assert snap_compare(
        env.app,
        terminal_size=size,
        run_before=quiet(goto("f2", then(row("#records", 3, "o"), pin))),
    )


@pytest.mark.parametrize("size", SIZES)
def test_confirm_make_public(snap_compare, env_factory, size):
    """Issue 16 item 9: making a private memory public asks, showing the memory."""
    env = env_factory(seed=SEED)
    assert snap_compare(
        env.app, terminal_size=size, run_before=quiet(goto("f2", row("#records", 2, "v")))
    )


@pytest.mark.parametrize("size", SIZES)
def test_edit_dialog(snap_compare, env_factory, size):
    """Issue 16 items 5, 8: the text, kind and importance, the counter, Save/Cancel with their
    labels, and the dialog's own keys in the footer."""
    env = env_factory(seed=SEED)
    assert snap_compare(
        env.app, terminal_size=size, run_before=quiet(goto("f2", row("#records", 3, "e")))
    )


@pytest.mark.parametrize("size", SIZES)
def test_forget_dialog(snap_compare, env_factory, size):
    env = env_factory(seed=SEED)
    assert snap_compare(
        env.app, terminal_size=size, run_before=quiet(goto("f2", row("#records", 3, "d")))
    )


@pytest.mark.parametrize("size", SIZES)
def test_help_screen(snap_compare, env_factory, size):
    """Issue 16 item 13: `?` on the memories screen."""
    env = env_factory(seed=SEED)

    async def help_(pilot) -> None:
        await pilot.press("question_mark")

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(goto("f2", help_)))


# ---------------------------------------------------------------------------- the other screens
@pytest.mark.parametrize("size", SIZES)
def test_archive(snap_compare, env_factory, size):
    """Issue 16 item 14: the private column and the purge countdown."""
    env = env_factory(seed=SEED)
    env.memory.forget(2, "she moved", OWNER_TRUSTED, actor=Actor.OWNER)
    env.clock.advance(3 * 86_400)
    env.memory.forget(3, "Murka prefers tuna now", OWNER_TRUSTED)
    assert snap_compare(env.app, terminal_size=size, run_before=quiet(goto("f3")))


@pytest.mark.parametrize("size", SIZES)
def test_journal(snap_compare, env_factory, size):
    """Issue 16 item 11: one word for the mode in the table and the detail."""
    sleeper = FakeSleeper(
        ManualClock(NOW),
        runs=[
            night(2, NOW - 3600, dry_run=True, seen=True),
            night(1, NOW - 86_400 - 3600, seen=True),
        ],
    )
    env = env_factory(seed=SEED, sleeper=sleeper)
    assert snap_compare(env.app, terminal_size=size, run_before=quiet(goto("f4")))


@pytest.mark.parametrize("size", SIZES)
def test_preview(snap_compare, env_factory, size):
    """Issue 16 items 10, 14: the panes focused, the private line marked in the trusted one."""
    env = env_factory(seed=SEED)

    async def ask(pilot) -> None:
        await pilot.press("slash")
        pilot.app.screen.query_one("#query").value = "where does sister Anna live"
        await pilot.press("enter")

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(goto("f5", ask)))


@pytest.mark.parametrize("size", SIZES)
def test_settings(snap_compare, env_factory, size):
    from pathlib import Path

    env = env_factory(seed=SEED, config_path=Path("/home/owner/.config/eva/config.toml"))
    assert snap_compare(env.app, terminal_size=size, run_before=quiet(goto("f6")))


# ---------------------------------------------------------------------------- issues 12 and 13
def _open(factory):
    async def steps(pilot) -> None:
        factory(pilot.app)

    return steps


@pytest.mark.parametrize("size", SIZES)
def test_chats_list(snap_compare, env_factory, size):
    """Issues 12 and 16: the chats list fits, with its keys in the footer."""
    env = env_factory(CHAT_SCRIPT, plans=CHAT_PLANS, seed=SEED)

    async def talk(pilot) -> None:
        await send(pilot, "My sister Anna lives in Kazan")
        pilot.app.screen.action_chats()

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(talk))


@pytest.mark.parametrize("size", SIZES)
def test_personas_dialog(snap_compare, env_factory, size):
    """Issues 13 and 16: the personas dialog fits, buttons labelled."""
    from screens.owner import open_personas

    env = env_factory(seed=SEED)
    assert snap_compare(env.app, terminal_size=size, run_before=quiet(_open(open_personas)))


@pytest.mark.parametrize("size", SIZES)
def test_add_memory_dialog(snap_compare, env_factory, size):
    """Issues 13 and 16: add a memory — content, kind, importance, private, scope — fits."""
    from screens.owner import add_memory

    env = env_factory(seed=SEED)
    assert snap_compare(env.app, terminal_size=size, run_before=quiet(_open(add_memory)))


# ---------------------------------------------------------------------------- coming up (§8.11)
def _due(env) -> list[int]:
    """Issue 29: a promise told two days ago for "послезавтра" (due today), a private one told
    yesterday for tomorrow, and a birthday in five days."""
    from core.reminders.schedule import DAY as _DAY

    now = env.clock.now()
    said = [
        ("Я обещал маме починить кран послезавтра", now - 2 * _DAY, False),
        ("Promised to pay the rent to the landlord tomorrow", now - _DAY, True),
        ("Brother's birthday is on June 2nd", now - 30 * _DAY, False),
    ]
    return [
        env.memory.save(c, OWNER_TRUSTED, private=p, said_at=at, actor=Actor.OWNER).id
        for c, at, p in said
    ]


@pytest.mark.parametrize("size", SIZES)
def test_coming_up_card(snap_compare, env_factory, size):
    """Issue 29 item 3 (SPEC §8.11): Eva opens with the "Coming up" card — today, tomorrow
    (private, marked), a birthday a week ahead — each with Done / Snooze / Dismiss; the first
    item focused (Shift+Tab), the footer shows its keys."""
    env = env_factory(seed=SEED)
    _due(env)

    async def focus(pilot) -> None:
        from eva_tui.widgets.coming_up import ReminderItem

        pilot.app.screen.query(ReminderItem).first().focus()

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(focus))


@pytest.mark.parametrize("size", SIZES)
def test_record_view_with_a_due_day(snap_compare, env_factory, size):
    """Issue 29 item 3: the record view of a promise shows its due day and Done / Snooze /
    Dismiss under the record's own buttons."""
    env = env_factory(seed=SEED)
    rid = _due(env)[0]

    async def open_it(pilot) -> None:
        pilot.app.screen.open_record(rid)

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(open_it))
