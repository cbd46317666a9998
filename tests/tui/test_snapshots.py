"""Snapshots of every screen in its main states — empty, filled, asleep, error — through the app
factory: a scripted model, a temporary store, a fixed clock, no cursor blink, a fixed terminal
size (SPEC §9). Update with ``pytest tests/tui --snapshot-update`` after checking the report."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from core import ManualClock
from core.llm import ModelError
from tests.tui.conftest import NOW, SEED, SIZE, send, settle, until
from tests.tui.fakes import FakeSleeper, night

OWNER_DATA = Path("/home/owner/.local/share/eva")
OWNER_CONFIG = Path("/home/owner/.config/eva/config.toml")
CHAT_SCRIPT = [
    ["Noted — I'll keep that between us."],
    # only what the memory holds (SPEC §8.10: a name nothing shown holds is asked again)
    [
        "Here is what I know:\n\n- your sister **Anna** lives in *Kazan*\n- you told me it is "
        "private"
    ],
]
CHAT_PLANS = [  # the structured memory step (SPEC §3.1): one save, then nothing to keep
    {
        "ops": [
            {
                "op": "save",
                "content": "The owner's sister Anna lives in Kazan",
                "kind": "fact",
                "importance": 4,
                "private": True,
            }
        ]
    },
    {"ops": []},
]


def quiet(before=None, wait_workers: bool = True):
    """run_before: optional steps, then settle and drop the toasts (they expire in real
    time). A turn waiting for Eva to wake is a worker that does not finish: don't wait."""

    async def run(pilot) -> None:
        await settle(pilot)
        if before is not None:
            await before(pilot)
        if wait_workers:
            await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run


def goto(key: str, then=None):
    async def steps(pilot) -> None:
        await pilot.press(key)
        await settle(pilot)
        if then is not None:
            await then(pilot)

    return steps


# ---------------------------------------------------------------------------- chat
def test_chat_first_run(snap_compare, env_factory):
    """§9: the first run greets the owner; model, embedder, memory count and sleep in the
    status bar."""
    env = env_factory()
    env.services.data_dir = OWNER_DATA  # the welcome names it: a fixed path in the picture
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet())


def test_chat_conversation(snap_compare, env_factory):
    """§9, §3.1: streamed Markdown answers with the memory step's writes as inline notes."""
    env = env_factory(CHAT_SCRIPT, plans=CHAT_PLANS, seed=SEED)

    async def talk(pilot) -> None:
        await send(pilot, "My sister Anna lives in Kazan")
        await send(pilot, "What do you know about me?")

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(talk))


def test_chat_notice(snap_compare, env_factory):
    """§3.1, §9, issue 9: a notice of the turn (the memory step failed) is a calm, dim note
    below the answer, not an error."""
    env = env_factory([["Lovely — what breed is he?"]], plans=[ModelError("timed out")], seed=SEED)

    async def talk(pilot) -> None:
        await send(pilot, "My dog is called Bublik")

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(talk))


def test_chat_asleep(snap_compare, env_factory):
    """§7: asleep, the chat says "sleeping…" with a Wake button and queues the message."""
    env = env_factory(
        [["Good morning!"]], seed=SEED, sleeper=FakeSleeper(ManualClock(NOW), sleeping=True)
    )

    async def typed(pilot) -> None:
        prompt = pilot.app.screen.query_one("#prompt")
        prompt.value = "are you awake?"
        await pilot.press("enter")
        await until(
            pilot, lambda: "1 message" in str(pilot.app.screen.query_one("#sleep-text").render())
        )

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(typed, wait_workers=False))


def test_chat_without_a_model(snap_compare, env_factory):
    """§6, §9: no chat model: the app starts, chat is off and says what to install."""
    env = env_factory(model=False, seed=SEED, config_path=OWNER_CONFIG)
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet())


# ---------------------------------------------------------------------------- memories
def test_memories_empty(snap_compare, env_factory):
    """§9: the memory browser with no memories."""
    env = env_factory()
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f2")))


def test_memories_filled(snap_compare, env_factory):
    """§2, §9: live records with kind, importance, age, private, pinned, scope, content."""
    env = env_factory(seed=SEED)
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f2")))


def test_memories_edit_modal(snap_compare, env_factory):
    """§9: the edit modal (content, kind, importance)."""
    env = env_factory(seed=SEED)

    async def edit(pilot) -> None:
        table = pilot.app.screen.query_one("#records", DataTable)
        table.move_cursor(row=table.get_row_index("3"))
        await pilot.press("e")

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f2", edit)))


# ---------------------------------------------------------------------------- archive
def test_archive_empty(snap_compare, env_factory):
    """§2: the archive with nothing forgotten."""
    env = env_factory(seed=SEED)
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f3")))


def test_archive_filled(snap_compare, env_factory):
    """§2: forgotten records with who, why, when and the time left before the purge."""
    env = env_factory(seed=SEED)
    from core import OWNER_TRUSTED
    from core.store.records import Actor

    env.memory.forget(4, "it was a one-off", OWNER_TRUSTED, actor=Actor.OWNER)
    env.clock.advance(3 * 86_400)
    env.memory.forget(3, "Murka prefers tuna now", OWNER_TRUSTED)
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f3")))


# ---------------------------------------------------------------------------- journal
def test_journal_empty(snap_compare, env_factory):
    """§7: no nights yet; sleep now / dry run now are offered."""
    env = env_factory(seed=SEED)
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f4")))


def test_journal_filled(snap_compare, env_factory):
    """§7: nights with their phases, applied, refused and planned ops with their why."""
    sleeper = FakeSleeper(
        ManualClock(NOW),
        runs=[
            night(2, NOW - 3600, dry_run=True, seen=True),
            night(1, NOW - 86_400 - 3600, seen=True),
        ],
    )
    env = env_factory(seed=SEED, sleeper=sleeper)
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f4")))


def test_journal_sleeping(snap_compare, env_factory):
    """§7: progress while a night runs, and Wake."""
    env = env_factory(seed=SEED)
    env.sleeper.hold = True

    async def sleep(pilot) -> None:
        await pilot.press("s")
        await until(
            pilot,
            lambda: "cluster 1 of 3" in str(pilot.app.screen.query_one("#progress-text").render()),
        )

    assert snap_compare(
        env.app, terminal_size=SIZE, run_before=quiet(goto("f4", sleep), wait_workers=False)
    )


# ---------------------------------------------------------------------------- preview, settings
def test_preview_trusted_and_public(snap_compare, env_factory):
    """§1, §5: the exact memory section as trusted and as public, side by side."""
    env = env_factory(seed=SEED)

    async def ask(pilot) -> None:
        query = pilot.app.screen.query_one("#query")
        query.value = "where does sister Anna live"
        await pilot.press("enter")

    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f5", ask)))


def test_settings(snap_compare, env_factory):
    """§9: the settings that matter, with the config file they are saved to."""
    env = env_factory(seed=SEED, config_path=Path("/home/owner/.config/eva/config.toml"))
    assert snap_compare(env.app, terminal_size=SIZE, run_before=quiet(goto("f6")))
