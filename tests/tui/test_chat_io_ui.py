"""Search, scroll-back and import in the TUI (issue 28 items 6, 7 and 9; SPEC §8.12): Pilot
tests of what the owner does, and snapshots of the search results and the import preview at
80×24 and 120×40."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from textual.widgets import Button, OptionList, SelectionList, Static

from core.chat.chats import Chats
from core.chat.transcript import Transcript
from eva_tui.widgets import TurnView, UserMessage
from screens import owner
from screens.chat_import import ImportChatsScreen, ReviewOffer
from screens.chat_search import ChatSearchScreen
from screens.drafting import SaveFromDialogue
from tests.chat_kit import tui_message
from tests.tui.conftest import NOW, SIZE, aio, settle, until
from tests.tui.test_snapshots import quiet

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "chats"
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


def fill(env, title: str, lines: list[str], start: int = 0) -> int:
    """A chat of the default persona with ``lines`` said by the owner and Eva in turn."""
    chats, tr = env.memory.attach(Chats), env.memory.attach(Transcript)
    c = chats.create("default", "tui", NOW + start, title).id
    for k, text in enumerate(lines):
        role = "user" if k % 2 == 0 else "assistant"
        tui_message(
            tr, f"t{c}-{k // 2}", role, text, chat_id=c, at=NOW - 86_400 * 30 + start + k * 60
        )
    return c


def on_screen(app) -> list[str]:
    log = app.screen.query_one("#log")
    return [
        str(getattr(w, "text", "")) for w in log.children if isinstance(w, UserMessage | TurnView)
    ]


# ---------------------------------------------------------------------------- search
@aio
async def test_search_lists_hits_and_enter_opens_the_chat_at_the_message(env_factory):
    """Issue 28 item 6: Ctrl+G opens the search; a word in another form and case finds the
    message in another chat; Enter opens that chat with the hit marked and the messages
    before it."""
    env = env_factory([["ok"]])
    trip = fill(
        env,
        "Trip",
        [f"Day {i}: walked around Tbilisi" for i in range(30)]
        + ["Мы нашли кота в старом дворе", "Какой он?", "Рыжий, с белым хвостом"]
        + [f"Later {i}" for i in range(10)],
    )
    fill(env, "Other", ["Nothing here", "Indeed"], start=10_000)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert env.services.conversation.chat_id != trip
        await pilot.press("ctrl+g")
        await settle(pilot)
        search = pilot.app.screen
        assert isinstance(search, ChatSearchScreen)
        await pilot.press(*"КОТ")
        await settle(pilot)
        hits = search.query_one("#search-hits", OptionList)
        assert hits.option_count == 1 and search.hits[0].chat_label == "Trip"
        context = str(search.query_one("#search-context", Static).render())
        assert "Мы нашли кота" in context and "Рыжий" in context
        await pilot.press("enter")
        await settle(pilot)
        assert env.services.conversation.chat_id == trip
        marked = pilot.app.screen.query(".search-hit")
        assert len(marked) == 1 and "кота" in str(marked.first().render())
        texts = on_screen(pilot.app)
        hit = next(k for k, t in enumerate(texts) if "кота" in t)
        assert hit >= 10  # the messages before it are there to read
        assert texts[-1] == "Later 9"  # and the chat goes on to its end


@aio
async def test_nothing_found_says_so_and_escape_closes(env_factory):
    env = env_factory()
    fill(env, "Trip", ["hello there", "hi"])
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+g")
        await pilot.press(*"zqxnothing")
        await settle(pilot)
        info = str(pilot.app.screen.query_one("#search-info", Static).render())
        assert "Nothing found" in info
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(pilot.app.screen, ChatSearchScreen)


@aio
async def test_older_messages_load_as_the_owner_scrolls_up(env_factory):
    """Issue 28 item 6: the chat opens with its last 100 messages; scrolled to the top, the
    100 before them load above, and the owner's place stays."""
    env = env_factory()
    chat = fill(env, "Long", [f"message number {i}" for i in range(250)], start=20_000)
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        env.services.conversation.switch_chat(chat)
        await pilot.app.screen.reload_chat()
        await settle(pilot)
        assert len(on_screen(pilot.app)) == 100
        assert on_screen(pilot.app)[0] == "message number 150"
        log = pilot.app.screen.query_one("#log")
        log.scroll_home(animate=False)
        await settle(pilot)
        await until(pilot, lambda: len(on_screen(pilot.app)) == 200)
        assert on_screen(pilot.app)[0] == "message number 50"
        assert log.scroll_y > 0  # kept at the message that was at the top, not thrown to 0
        log.scroll_home(animate=False)
        await settle(pilot)
        await until(pilot, lambda: len(on_screen(pilot.app)) == 250)
        assert on_screen(pilot.app)[0] == "message number 0"
        assert not pilot.app.screen.scrollback.more


# ---------------------------------------------------------------------------- import
@aio
async def test_import_preview_then_import_then_drafts_to_review(env_factory):
    """Issue 28 item 7: the file's format is named and its chats and counts shown before
    anything is written; Import writes them; then Eva offers 20 messages at a time for drafts,
    all of them selected, and nothing is saved unless the owner keeps it."""
    env = env_factory()
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.import_chats(pilot.app, str(FIX / "chatgpt_conversations.json"))
        await settle(pilot)
        preview = pilot.app.screen
        assert isinstance(preview, ImportChatsScreen)
        summary = str(preview.query_one("#import-summary", Static).render())
        assert "ChatGPT export (conversations.json): 2 chats, 6 messages" in summary
        assert "3 messages are not yours" in summary
        before = [c.id for c in env.memory.attach(Chats).list()]  # the chat screen's own
        assert not env.memory.attach(Transcript).search("пирожки")  # nothing written yet
        await pilot.click("#import-write")
        await settle(pilot)
        made = [c for c in env.memory.attach(Chats).list() if c.id not in before]
        assert sorted(c.title for c in made) == ["Trip to Tbilisi", "Рецепт пирожков"]
        offer = pilot.app.screen
        assert isinstance(offer, ReviewOffer) and offer.chat.title == "Рецепт пирожков"
        await pilot.click("#draft")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, SaveFromDialogue)
        assert len(dialog.query_one("#messages", SelectionList).selected) == 4
        await pilot.press("escape")  # saved nothing
        await settle(pilot)
        offer = pilot.app.screen
        assert isinstance(offer, ReviewOffer) and offer.chat.title == "Trip to Tbilisi"
        await pilot.click("#later")
        await settle(pilot)
        assert [c.title for c in env.memory.attach(Chats).to_review()] == ["Trip to Tbilisi"]
        assert env.memory.count() == 0  # nothing saved silently


@aio
async def test_the_review_offer_can_be_drawn_again(env_factory):
    """Issue 28 item 7: the offer of imported messages is an ordinary screen: composed again
    (Textual does it through the screen's own ``batch()``), it still offers the same
    messages. It once kept them in ``self.batch``, hiding that method."""
    env = env_factory()
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.import_chats(pilot.app, str(FIX / "chatgpt_conversations.json"))
        await settle(pilot)
        await pilot.click("#import-write")
        await settle(pilot)
        offer = pilot.app.screen
        assert isinstance(offer, ReviewOffer)
        shown = [str(w.render()) for w in offer.query(Static)]
        await offer.recompose()
        await settle(pilot)
        assert pilot.app.screen is offer
        assert [str(w.render()) for w in offer.query(Static)] == shown
        assert any("the next 4 messages not yet reviewed" in text for text in shown)


@aio
async def test_a_bad_file_is_refused_with_its_line_and_writes_nothing(env_factory, tmp_path):
    env = env_factory()
    bad = tmp_path / "chat.jsonl"
    bad.write_text('{"user_name": "A", "character_name": "B"}\n{"mes": "hi"}\n{"mes": 7}\n')
    async with env.app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        owner.import_chats(pilot.app, str(bad))
        await settle(pilot)
        screen = pilot.app.screen
        error = str(screen.query_one("#import-error", Static).render())
        assert "SillyTavern chat (.jsonl)" in error and "line 3: mes must be text" in error
        assert screen.query_one("#import-write", Button).disabled
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert all(c.imported_from is None for c in env.memory.attach(Chats).list())


# ---------------------------------------------------------------------------- snapshots
@pytest.mark.parametrize("size", SIZES)
def test_search_results_snapshot(snap_compare, env_factory, size):
    """Issue 28 item 9: the search results (chat, day, who, the marked words) and the context
    of the highlighted hit fit at both sizes."""
    env = env_factory()
    fill(
        env,
        "Кот и ветеринар",
        [
            "Пирожку завтра к ветеринару в 10:00",
            "Запомнила: завтра в 10:00 ветеринар для Пирожка.",
            "И купи ему корм для котов",
            "Куплю корм для кота.",
        ],
    )
    fill(
        env,
        "Trip to Tbilisi",
        [
            "We fly to Tbilisi on 12 May",
            "Noted!",
            "My cat stays with Anna",
            "Good, the cat will be fine.",
        ],
        start=5_000,
    )

    async def search(pilot) -> None:
        await pilot.press("ctrl+g")
        await pilot.press(*"кот")
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(search))


@pytest.mark.parametrize("size", SIZES)
def test_import_preview_snapshot(snap_compare, env_factory, size):
    """Issue 28 item 9: the import preview names the format and lists the chats with their
    message counts and days, before anything is written."""
    env = env_factory()
    # the file's path is in the picture: the same on every machine (a fixed folder of its own)
    folder = Path(tempfile.gettempdir()) / "eva-import-preview"
    folder.mkdir(exist_ok=True)
    path = folder / "conversations.json"
    shutil.copy(FIX / "chatgpt_conversations.json", path)

    async def preview(pilot) -> None:
        owner.import_chats(pilot.app, str(path))
        await settle(pilot)

    assert snap_compare(env.app, terminal_size=size, run_before=quiet(preview))
