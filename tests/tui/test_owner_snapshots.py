"""Snapshots of the owner's new dialogs (issue 13): personas, add a memory with its duplicate
named, clear all, save from dialogue with drafts, initialize from a description with drafts.
Same setup as tests/tui/test_snapshots.py (scripted model, temporary store, fixed clock, no
blink, fixed size). Update with ``--snapshot-update`` on just these after checking the SVGs."""

from __future__ import annotations

from textual.widgets import Button

from eva_tui.widgets import EvaTextArea
from screens import owner
from tests.tui.conftest import NOW, SEED, SIZE, send, settle, until
from tests.tui.test_owner import DRAFTS
from tests.tui.test_snapshots import quiet


def test_personas_screen(snap_compare, env_factory):
    """§8.6: the personas with the active one marked, detail level and learning (own or the
    default), how many memories each has, and the persona text."""
    env = env_factory(seed=SEED)
    ps = env.services.personas
    ps.create(
        "Work",
        NOW,
        persona_text="You are a focused, terse colleague.",
        detail_level="key",
        learning=False,
    )
    ps.create("Мама", NOW)
    env.services.switch_persona("work")

    async def open_it(pilot) -> None:
        owner.open_personas(pilot.app)
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(open_it))


def test_add_memory_names_the_duplicate(snap_compare, env_factory):
    """Issue 13 item 2: the add dialog after a first Save found a near duplicate."""
    env = env_factory(seed=SEED)

    async def fill(pilot) -> None:
        owner.add_memory(pilot.app)
        await settle(pilot)
        pilot.app.screen.query_one("#content", EvaTextArea).text = "The cat Murka likes salmon!"
        pilot.app.screen.query_one("#save", Button).press()
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(fill))


def test_clear_all_dialog(snap_compare, env_factory):
    """§8.8: what clearing a scope does, before it is done."""
    env = env_factory(seed=SEED)

    async def open_it(pilot) -> None:
        owner.clear_all(pilot.app)
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(open_it))


def test_save_from_dialogue_with_drafts(snap_compare, env_factory):
    """§8.5: the selected messages and the model's drafts, each with keep / drop."""
    env = env_factory([["Oh, Yerevan! How does she like it?"]])

    async def draft(pilot) -> None:
        await send(pilot, "My sister Lena moved to Yerevan. I'm allergic to penicillin.")
        await until(pilot, lambda: not pilot.app.screen.busy)
        env.llm.plans[:] = [DRAFTS]
        owner.save_from_dialogue(pilot.app)
        await settle(pilot)
        pilot.app.screen.query_one("#draft", Button).press()
        await until(pilot, lambda: len(pilot.app.screen.query(".draft-keep")) == 3)
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=(110, 44), run_before=quiet(draft))


def test_initialize_from_a_description_with_drafts(snap_compare, env_factory):
    """§8.5: the description, its count, and the drafts to confirm one by one."""
    env = env_factory()

    async def draft(pilot) -> None:
        owner.init_from_description(pilot.app)
        await settle(pilot)
        pilot.app.screen.query_one(
            "#description", EvaTextArea
        ).text = "I'm Sasha. My sister Lena lives in Yerevan. I'm allergic to penicillin."
        await settle(pilot)
        env.llm.plans[:] = [DRAFTS]
        pilot.app.screen.query_one("#draft", Button).press()
        await until(pilot, lambda: len(pilot.app.screen.query("#skip-2")) == 1)
        pilot.app.screen.query_one("#save-0", Button).press()
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=(110, 44), run_before=quiet(draft))
