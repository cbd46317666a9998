"""Chats and the summary panel in the TUI (issue 12 item 4, SPEC §8.3, §8.9): Ctrl+N starts a
new chat, Ctrl+O lists the chats (open, rename, delete to the archive, restore, clear), Ctrl+T
shows the summaries of this chat with the unsummarised count, edits one and rebuilds them in the
background; Pilot tests and snapshots."""

from __future__ import annotations

from textual.widgets import DataTable, Static

from core.chat.summary_fidelity import salient_terms
from core.chat.transcript import Transcript
from eva_tui.widgets import TurnView, UserMessage
from screens.chats import ChatsScreen
from screens.summary import EditSummary, SummaryPanel
from tests.chat_kit import tui_message
from tests.tui.conftest import NOW, SIZE, aio, send, settle, spy_notices, until
from tests.tui.fakes import PlannedLLM


class SummarisingLLM(PlannedLLM):
    """Scripted replies; summaries keep the names and numbers of what they read."""

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        if "summary" not in schema.get("properties", {}):
            return super().generate_json(messages, schema, timeout, max_tokens, cancel)
        body = messages[-1]["content"].split("The conversation:", 1)[-1]
        terms = sorted(salient_terms(body.split("The summaries:", 1)[-1]))
        out = {"summary": "They talked about " + ", ".join(terms or ["little"]) + "."}
        if "verbatim" in schema["properties"]:
            out["verbatim"] = terms[:2]
        return out


def texts(app) -> list[str]:
    return [w.text for w in app.screen.query(UserMessage)] + [
        v.text for v in app.screen.query(TurnView) if v.turn_id
    ]


def left_window(env, n=6):
    """A chat whose first ``n`` turns have left the live window."""
    conv = env.services.conversation
    tr = env.memory.attach(Transcript)
    last = 0
    for i in range(n):
        for role, text in (
            ("user", f"My friend Boris{i} turned {30 + i} in Kazan"),
            ("assistant", f"Say happy birthday to Boris{i}!"),
        ):
            last = tui_message(
                tr,
                f"t{i}",
                role,
                text,
                chat_id=conv.chat_id,
                at=NOW + i,
                tokens=8,
                meta={"owner": True} if role == "user" else {},
            )
    conv.chats.set_window_start(conv.chat_id, last + 1)
    conv._window_start = last + 1
    return conv


@aio
async def test_new_chat_and_switching_back_from_the_chats_list(env_factory):
    """§8.9: Ctrl+N starts an empty chat; Ctrl+O lists both, Enter on the older one opens it
    with its messages."""
    env = env_factory([["Nice, Kazan!"], ["Hello in the new chat."]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "I was born in Kazan")
        first = env.services.conversation.chat_id
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert env.services.conversation.chat_id != first
        assert texts(pilot.app) == []
        await send(pilot, "hello")
        assert texts(pilot.app) == ["hello", "Hello in the new chat."]
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ChatsScreen)
        table = pilot.app.screen.query_one("#chats", DataTable)
        assert table.row_count == 2
        table.move_cursor(row=table.get_row_index(str(first)))
        await pilot.press("enter")
        await settle(pilot)
        await until(pilot, lambda: not isinstance(pilot.app.screen, ChatsScreen))
        await settle(pilot)
        assert env.services.conversation.chat_id == first
        assert texts(pilot.app) == ["I was born in Kazan", "Nice, Kazan!"]


@aio
async def test_rename_delete_and_restore_from_the_chats_list(env_factory):
    env = env_factory([["ok"]])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await send(pilot, "first words here")
        conv = env.services.conversation
        other = conv.chats.create("default", "tui", NOW + 5, "Spare").id
        await pilot.press("ctrl+o")
        await settle(pilot)
        table = pilot.app.screen.query_one("#chats", DataTable)
        table.move_cursor(row=table.get_row_index(str(other)))
        await pilot.press("r")
        await settle(pilot)
        pilot.app.screen.query_one("#title").value = "Holiday"
        await pilot.press("enter")
        await settle(pilot)
        assert conv.chats.get(other).title == "Holiday"
        await pilot.press("d")
        await settle(pilot)
        await pilot.click("#ok")
        await settle(pilot)
        assert conv.chats.get(other).archived
        assert pilot.app.screen.query_one("#chats", DataTable).row_count == 1
        await pilot.press("a")
        await settle(pilot)
        table = pilot.app.screen.query_one("#chats", DataTable)
        assert table.row_count == 1
        await pilot.press("u")
        await settle(pilot)
        assert not conv.chats.get(other).archived


@aio
async def test_summary_panel_shows_counts_edits_and_rebuilds(env_factory):
    """§8.3 in the TUI: the panel shows how many messages are not summarised yet; after the
    background summarising it lists the summaries; an edit is kept as written; a rebuild runs
    in the background and says when it is done."""
    env = env_factory(llm=SummarisingLLM([["ok"]]))
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        conv = left_window(env)
        await pilot.press("ctrl+t")
        await settle(pilot)
        panel = pilot.app.screen
        assert isinstance(panel, SummaryPanel)
        progress = panel.query_one("#summary-progress", Static)
        assert "12 of 12 messages that left the window are not summarised" in str(progress.render())
        conv.summarise()  # what the app's worker does after a turn
        panel.reload()
        await settle(pilot)
        assert "all 12 messages that left the window are summarised" in str(progress.render())
        table = panel.query_one("#summaries", DataTable)
        assert table.row_count == 1  # 12 messages in one chunk
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(pilot.app.screen, EditSummary)
        pilot.app.screen.query_one("#prose").text = "Boris0 to Boris5 had birthdays."
        await pilot.press("ctrl+s")
        await settle(pilot)
        [s] = conv.summaries.active(conv.chat_id)
        assert (s.prose, s.status) == ("Boris0 to Boris5 had birthdays.", "edited")
        seen = spy_notices(pilot.app)
        await pilot.press("r")
        await settle(pilot, rounds=6)
        await until(pilot, lambda: any(m.startswith("Summaries rebuilt") for m in seen))
        [again] = conv.summaries.active(conv.chat_id)
        assert again.id != s.id and again.status == "ok" and "Boris5" in again.text()


@aio
async def test_an_empty_summary_panel_says_why_it_is_empty(env_factory):
    env = env_factory([])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        panel = pilot.app.screen
        assert "no message has left the live window yet" in str(
            panel.query_one("#summary-progress", Static).render()
        )
        assert "No summaries yet" in str(panel.query_one("#summary-detail", Static).render())


@aio
async def test_summarising_runs_after_a_turn_in_the_background(env_factory):
    """§8.3: after a turn (and a quiet moment) the app summarises what left the window in a
    worker."""
    from screens.chat import ChatScreen

    env = env_factory(llm=SummarisingLLM([["ok then"]]))
    ChatScreen.SUMMARY_AFTER_QUIET = 0.05
    try:
        await _summarised_after_a_turn(env)
    finally:
        ChatScreen.SUMMARY_AFTER_QUIET = 15.0


async def _summarised_after_a_turn(env):
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        conv = left_window(env, n=3)
        assert conv.summaries.active(conv.chat_id) == []
        await send(pilot, "what's new?")
        await settle(pilot, rounds=5)
        await until(pilot, lambda: len(conv.summaries.active(conv.chat_id)) == 1)


# ---------------------------------------------------------------------------- snapshots
def _quiet(steps):
    async def run(pilot) -> None:
        await settle(pilot)
        await steps(pilot)
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run


def test_chats_list_snapshot(snap_compare, env_factory):
    env = env_factory([["Nice!"]])

    async def steps(pilot):
        await send(pilot, "I was born in Kazan")
        env.services.conversation.chats.create("default", "tui", NOW + 60, "Holiday plans")
        await pilot.press("ctrl+o")

    assert snap_compare(env.app, terminal_size=SIZE, run_before=_quiet(steps))


def test_summary_panel_snapshot(snap_compare, env_factory):
    env = env_factory(llm=SummarisingLLM())

    async def steps(pilot):
        conv = left_window(env, n=4)
        conv.summarise()
        left_window(env, n=1)  # two more messages leave the window, not summarised yet
        await pilot.press("ctrl+t")

    assert snap_compare(env.app, terminal_size=SIZE, run_before=_quiet(steps))


def test_keep_days_retention_and_the_chat_archive_purge_run_at_start(env_factory):
    """chat.keep_days (issue 12): at start, messages older than that move to the archive; what
    waited in the archive past the TTL is purged."""
    env = env_factory([], chat={"keep_days": 30})
    conv = env.services.conversation
    tr = env.memory.attach(Transcript)
    for i, age in enumerate((40, 1)):
        tui_message(
            tr,
            f"t{i}",
            "user",
            f"message {age} days old",
            chat_id=conv.chat_id,
            at=NOW - age * 86_400,
            tokens=4,
        )
    env.services.housekeeping()
    assert [m.content for m in conv.history()] == ["message 1 days old"]
    env.clock.advance(31 * 86_400)
    env.services.housekeeping()  # the retained one waited 31 days in the archive: purged
    rows = env.memory._storage.query("SELECT content FROM messages ORDER BY id")
    assert [r[0] for r in rows] == ["message 1 days old"]


def test_keep_days_must_be_positive():
    import pytest

    from eva_runtime import config as cfg

    with pytest.raises(cfg.ConfigError, match=r"\[chat\] keep_days: must be > 0 days"):
        cfg.from_mapping({"chat": {"keep_days": 0}})
    assert cfg.from_mapping({"chat": {"keep_days": 90}}).chat.keep_days == 90.0
    assert cfg.from_mapping({"chat": {"keep_days": "off"}}).chat.keep_days is None
