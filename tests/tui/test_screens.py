"""Owner actions on the other screens through Pilot: edit, toggle private, pin, forget →
archive → restore, search without reinforcing, filters, sleep now / dry run / Wake with
progress, prompt preview trusted vs public, settings, the palette and user keymaps
(SPEC §1, §2, §4, §5, §7, §9)."""

from __future__ import annotations

from textual.widgets import DataTable, Select, Static

from core import OWNER_TRUSTED
from eva_runtime import config_file
from eva_tui.widgets import ConfirmForget, EditRecord
from eva_tui.widgets.modals import Confirm
from tests.tui.conftest import SEED, SIZE, aio, settle, until

ANNA = 2  # the private record of SEED
CAT = 3


async def open_screen(pilot, key: str) -> None:
    await pilot.press(key)
    await settle(pilot)


def select_row(pilot, table_id: str, record_id: int) -> DataTable:
    table = pilot.app.screen.query_one(table_id, DataTable)
    table.move_cursor(row=table.get_row_index(str(record_id)))
    table.focus()
    return table


async def press_on(pilot, table_id: str, record_id: int, key: str) -> None:
    """Press ``key`` on the record's row of the table ``table_id``, as the owner does: the row
    selected, the key pressed, what it started finished."""
    select_row(pilot, table_id, record_id)
    await pilot.press(key)
    await settle(pilot)


def row_ids(pilot, table_id: str) -> list[int]:
    table = pilot.app.screen.query_one(table_id, DataTable)
    return [int(k.value) for k in table.rows]


def text_of(pilot, selector: str) -> str:
    return str(pilot.app.screen.query_one(selector, Static).render())


# ---------------------------------------------------------------------------- memories
@aio
async def test_memories_lists_live_records_with_their_fields(env_factory):
    """§2, §9: the browser shows every live record (id, kind, importance, age, private, pinned,
    scope, content)."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        table = pilot.app.screen.query_one("#records", DataTable)
        assert sorted(row_ids(pilot, "#records")) == [1, 2, 3, 4, 5]
        row = table.get_row("2")
        assert row[:7] == ["2", "fact", "4", "1mo", "yes", "", "global"]
        assert table.get_row("1")[5] == "yes"  # pinned
        assert table.get_row("5")[6] == "work"


@aio
async def test_edit_changes_content_kind_and_importance(env_factory):
    """§3.2 (memory_update by the owner), §9: the edit modal changes a record in place."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        await press_on(pilot, "#records", CAT, "e")
        modal = pilot.app.screen
        assert isinstance(modal, EditRecord)
        modal.query_one("#content").text = "The cat Murka likes salmon and tuna"
        modal.query_one("#importance", Select).value = 5
        modal.query_one("#kind", Select).value = "core"
        await pilot.press("ctrl+s")
        await settle(pilot)
        r = env.memory.get(CAT)
        assert (r.content, r.importance, r.kind.value) == (
            "The cat Murka likes salmon and tuna",
            5,
            "core",
        )
        assert pilot.app.screen.query_one("#records", DataTable).get_row(str(CAT))[2] == "5"


@aio
async def test_toggle_private_marks_and_unmarks(env_factory):
    """§2: the owner marks a record private and unmarks it (the owner's decision); making it
    public asks first (issue 16)."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        await press_on(pilot, "#records", CAT, "v")
        assert env.memory.get(CAT).private
        await press_on(pilot, "#records", CAT, "v")
        assert isinstance(pilot.app.screen, Confirm) and env.memory.get(CAT).private
        await pilot.press("y")
        await settle(pilot)
        assert not env.memory.get(CAT).private


@aio
async def test_pin_and_unpin(env_factory):
    """§2: pinning is the owner's lock; p pins and unpins."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        await press_on(pilot, "#records", CAT, "p")
        assert env.memory.get(CAT).pinned
        await press_on(pilot, "#records", CAT, "p")
        assert not env.memory.get(CAT).pinned


@aio
async def test_forget_goes_to_the_archive_and_restore_brings_it_back(env_factory):
    """§2: forgetting asks for confirmation and why, moves the record to the archive (with
    who/why/when), and restore brings it back with its id and flags."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        await press_on(pilot, "#records", ANNA, "d")
        assert isinstance(pilot.app.screen, ConfirmForget)
        pilot.app.screen.query_one("#why").value = "she moved to Samara"
        await pilot.press("enter")
        await settle(pilot)
        assert ANNA not in row_ids(pilot, "#records")
        [arch] = env.memory.archived(OWNER_TRUSTED)
        assert (arch.record.id, arch.archived_by, arch.why) == (
            ANNA,
            "owner",
            "she moved to Samara",
        )
        await open_screen(pilot, "f3")
        table = pilot.app.screen.query_one("#archive", DataTable)
        assert table.get_row(str(ANNA))[:7] == [
            "2",
            "fact",
            "yes",
            "owner",
            "she moved to Samara",
            "now",
            "in 30d",
        ]
        await press_on(pilot, "#archive", ANNA, "r")
        assert row_ids(pilot, "#archive") == []
        r = env.memory.get(ANNA)
        assert r.private and r.content.startswith("Sister Anna")
        await open_screen(pilot, "f2")
        assert ANNA in row_ids(pilot, "#records")


@aio
async def test_cancelled_forget_changes_nothing(env_factory):
    """§2: a forget the owner cancels leaves the record live."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        await press_on(pilot, "#records", CAT, "d")
        await pilot.press("escape")
        await settle(pilot)
        assert env.memory.count() == 5


@aio
async def test_search_finds_by_recall_and_reinforces_nothing(env_factory):
    """§4, §9: the browser's search uses pure recall (plus a text match, so core records are
    found too) and reinforces nothing."""
    env = env_factory(seed=SEED)
    before = {r.id: r.access_count for r in env.memory.list(OWNER_TRUSTED)}
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        search = pilot.app.screen.query_one("#search")
        search.value = "cat salmon"
        search.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert row_ids(pilot, "#records") == [CAT]
        search.value = "Sasha"
        search.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert row_ids(pilot, "#records") == [1]  # a core record, found by text
    after = {r.id: r.access_count for r in env.memory.list(OWNER_TRUSTED)}
    assert after == before


@aio
async def test_filters_by_kind_private_pinned_scope_and_importance(env_factory):
    """§9: filter by kind, importance, private, pinned and scope."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f2")
        screen = pilot.app.screen

        async def only(select_id: str, value, expected: list[int]) -> None:
            screen.query_one(select_id, Select).value = value
            await settle(pilot)
            assert sorted(row_ids(pilot, "#records")) == expected
            screen.query_one(select_id, Select).value = "any"
            await settle(pilot)

        await only("#f-kind", "event", [4])
        await only("#f-private", True, [ANNA])
        await only("#f-pinned", True, [1])
        await only("#f-scope", "work", [5])
        await only("#f-importance", 4, [1, ANNA])


# ---------------------------------------------------------------------------- journal
@aio
async def test_sleep_now_and_dry_run_now_run_and_are_journaled(env_factory):
    """§7: "sleep now" and "dry run now" start a night; the journal shows its phases and every
    op with its why, applied and refused."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f4")
        await pilot.press("s")
        await settle(pilot)
        assert env.sleeper.calls == [{"dry_run": None, "reason": "manual"}]
        detail = text_of(pilot, "#run-text")
        assert "merge #3 #7 — the same fact about the cat, twice" in detail
        assert "refused: record #9 is pinned by the owner" in detail
        await pilot.press("d")
        await settle(pilot)
        assert env.sleeper.calls[-1] == {"dry_run": True, "reason": "manual"}
        assert row_ids(pilot, "#runs") == [2, 1]
        table = pilot.app.screen.query_one("#runs", DataTable)
        assert table.get_row("2")[3] == "dry run"


@aio
async def test_progress_shows_while_sleeping_and_wake_stops_the_night(env_factory):
    """§7: long work shows progress; Wake stops the night (the run ends as woken) and the chat
    is no longer asleep."""
    env = env_factory(seed=SEED)
    env.sleeper.hold = True
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f4")
        await pilot.press("s")
        await until(pilot, lambda: "cluster 1 of 3" in text_of(pilot, "#progress-text"))
        assert pilot.app.screen.query_one("#sleep-progress-row").display
        assert "sleeping" in pilot.app.status_text
        assert pilot.app.sleeping
        await pilot.press("w")
        await until(pilot, lambda: not pilot.app.sleep_running)
        await settle(pilot)
        assert env.sleeper.woken == 1
        assert env.sleeper.runs()[0].status == "woken"
        assert not pilot.app.sleeping
        assert not pilot.app.screen.query_one("#sleep-progress-row").display


@aio
async def test_viewing_a_notable_night_marks_it_seen(env_factory):
    """§7: a notable night is announced until the owner has seen it in the journal."""
    from core import ManualClock
    from tests.tui.conftest import NOW
    from tests.tui.fakes import FakeSleeper, night

    sleeper = FakeSleeper(ManualClock(NOW), runs=[night(1, NOW - 3600)])
    env = env_factory(seed=SEED, sleeper=sleeper)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_screen(pilot, "f4")
        await settle(pilot)
        assert sleeper.seen == [1]


# ---------------------------------------------------------------------------- preview
@aio
async def test_preview_shows_private_text_only_as_trusted(env_factory):
    """§1, §5: the preview shows the exact section as trusted and as public, side by side;
    a private memory appears only in the trusted one, and nothing is reinforced."""
    env = env_factory(seed=SEED)
    before = {r.id: r.access_count for r in env.memory.list(OWNER_TRUSTED)}
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f5")
        query = pilot.app.screen.query_one("#query")
        query.value = "where does sister Anna live"
        query.focus()
        await pilot.press("enter")
        await settle(pilot)
        trusted = text_of(pilot, "#trusted-text")
        public = text_of(pilot, "#public-text")
        assert "Pushkin street 12" in trusted
        assert "Pushkin street 12" not in public
        assert "Anna" not in public
        # the trusted pane marks what a public turn would not see (issue 16)
        assert [line[:2] for line in trusted.split("\n")] == ["  "] * 6 + ["✗ "]
        assert (
            "\n".join(line[2:] for line in trusted.split("\n"))
            == env.memory.preview("where does sister Anna live").text
        )
        assert public == env.memory.preview("where does sister Anna live", public=True).text
    after = {r.id: r.access_count for r in env.memory.list(OWNER_TRUSTED)}
    assert after == before


# ---------------------------------------------------------------------------- settings
@aio
async def test_settings_are_saved_to_the_config_file_and_chat_ones_apply(env_factory):
    """§8.2, §8.7, §9, §3.1: settings are written to the config file; detail level, learning
    and memory_writes apply to the conversation at once."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f6")
        screen = pilot.app.screen
        screen.query_one("#set-chat-detail-level", Select).value = "detailed"
        screen.query_one("#set-chat-learning").value = False
        screen.query_one("#set-chat-memory-writes", Select).value = "tools"
        screen.query_one("#set-sleep-every").value = "12h"
        screen.query_one("#set-sleep-dry-run").value = True
        await pilot.press("ctrl+s")
        await settle(pilot)
        saved = config_file.load(env.config_path, environ={})
        assert saved.chat.detail_level == "detailed"
        assert saved.chat.learning is False
        assert saved.chat.memory_writes == "tools"
        assert saved.sleep.every == 12 * 3600
        assert saved.sleep.dry_run is True
        conv = env.services.conversation
        assert (conv.config.detail_level, conv.config.learning) == ("detailed", False)
        assert conv.config.memory_writes == "tools"


@aio
async def test_a_bad_setting_is_reported_with_the_key_and_not_saved(env_factory):
    """§9: a bad value is reported with the key and the reason; the file is not written."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await open_screen(pilot, "f6")
        pilot.app.screen.query_one("#set-sleep-idle-for").value = "soon"
        await pilot.press("ctrl+s")
        await settle(pilot)
        error = str(pilot.app.screen.query_one("#settings-error").render())
        assert "[sleep] idle_for" in error
        assert not env.config_path.exists()


# ---------------------------------------------------------------------------- palette, keys
@aio
async def test_the_palette_offers_every_action(env_factory):
    """§9: a command palette entry for every action, on every screen."""
    env = env_factory(seed=SEED)
    expected = {
        "chat": ["Stop the answer", "Regenerate", "Copy the last answer"],
        "memories": [
            "Memory: edit selected",
            "Memory: toggle private",
            "Memory: pin / unpin",
            "Memory: forget selected",
            "Memory: search",
        ],
        "archive": ["Archive: restore selected"],
        "journal": ["Journal: copy the selected night"],
        "preview": ["Preview: copy the trusted section", "Preview: copy the public section"],
        "settings": ["Settings: save"],
    }
    common = [
        "Sleep now",
        "Dry run now",
        "Wake Eva",
        "Go to Chat",
        "Go to Memories",
        "Go to Archive",
        "Go to Sleep journal",
        "Go to Prompt preview",
        "Go to Settings",
    ]
    async with env.app.run_test(size=SIZE) as pilot:
        for mode, titles in expected.items():
            pilot.app.switch_mode(mode)
            await settle(pilot)
            offered = [c.title for c in pilot.app.get_system_commands(pilot.app.screen)]
            for title in titles + common:
                assert title in offered, (mode, title)


@aio
async def test_user_keymap_from_config_rebinds_actions(env_factory):
    """§9: bindings have ids and the [keymap] table of the config rebinds them."""
    env = env_factory(seed=SEED, keymap={"app.memories": "f12", "memories.pin": "ctrl+t"})
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_screen(pilot, "f12")
        assert pilot.app.current_mode == "memories"
        await press_on(pilot, "#records", CAT, "ctrl+t")
        assert env.memory.get(CAT).pinned
        nav = [t for _m, t, k in pilot.app.nav_items() if k == "F12"]
        assert nav == ["Memories"]


@aio
async def test_the_palette_finds_and_opens_a_memory(env_factory):
    """§9: typing words of a memory in the command palette opens that record."""
    from eva_tui.widgets import RecordView

    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"Murka")
        await until(
            pilot,
            lambda: (
                "Memory #3"
                in str(pilot.app.screen.query_one("CommandList").get_option_at_index(0).prompt)
            ),
        )
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, RecordView))
        assert pilot.app.screen.record.id == CAT


# ---------------------------------------------------------------------------- schedule
@aio
async def test_the_sleepers_tick_is_the_only_schedule(env_factory):
    """§7, issue 10: the app's timer hands the decision to ``Sleeper.tick`` with the quiet time
    and whether a turn generates, and starts no night itself; a night the tick ran is reported
    and reloads the screens like a manual one."""
    env = env_factory(seed=SEED)
    ticks: list[tuple[float, bool]] = []

    def tick(idle_seconds: float, generating: bool) -> bool:
        ticks.append((idle_seconds, generating))
        env.sleeper.run(reason="schedule")
        return True

    env.sleeper.tick = tick
    env.sleeper.due_in = None  # due now: the app's old schedule would have started a run itself
    async with env.app.run_test(size=SIZE) as pilot:
        version = pilot.app.memory_version
        env.clock.advance(3600)
        pilot.app._tick()
        await settle(pilot)
        assert ticks == [(3600.0, False)]
        assert env.sleeper.calls == [{"dry_run": None, "reason": "schedule"}]
        assert pilot.app.memory_version > version
        assert any("Sleep finished" in n.message for n in pilot.app._notifications)
        assert not pilot.app.sleeping and not pilot.app.sleep_running
