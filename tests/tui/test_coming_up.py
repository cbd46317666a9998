"""Issue 29 item 3 (SPEC §8.11): the chat's "Coming up" card and the record view's reminder
actions. Every test runs on a ManualClock: a promise told on one day is due on another."""

from __future__ import annotations

from datetime import datetime

from core import OWNER_TRUSTED
from core.store.records import Actor
from eva_tui.widgets.coming_up import ComingUpCard, ReminderItem
from eva_tui.widgets.modals import RecordView
from screens.coming_up import CLOSED
from tests.tui.conftest import DAY, NOW, SEED, aio, send, settle, until

PROMISE = "Я обещал маме починить кран послезавтра"
DENTIST = "Promised to call the dentist tomorrow"


def told(env, content: str = PROMISE, *, days_ago: float = 2, **kw) -> int:
    """A promise the owner told ``days_ago`` days before the clock's now."""
    said = env.clock.now() - days_ago * DAY
    return env.memory.save(content, OWNER_TRUSTED, said_at=said, actor=Actor.OWNER, **kw).id


def card(pilot) -> ComingUpCard | None:
    found = pilot.app.screen.query(ComingUpCard)
    return found.first() if found else None


def items(pilot) -> list[str]:
    c = card(pilot)
    return [] if c is None else [w.reminder.content for w in c.query(ReminderItem)]


@aio
async def test_the_card_shows_a_due_promise_when_eva_opens(env_factory):
    """SPEC §8.11 / issue 29 item 3: a promise told two days ago for "послезавтра" is due
    today; opening Eva shows the "Coming up" card with it, saying "today"."""
    env = env_factory(seed=SEED)
    told(env)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: card(pilot) is not None)
        assert items(pilot) == [PROMISE]
        line = str(card(pilot).query_one(".reminder-text").render())
        assert line.startswith("today · ")


@aio
async def test_no_card_when_nothing_is_due(env_factory):
    """SPEC §8.11: nothing due today, tomorrow or within [reminders] days (3) — a promise five
    days ahead and the seed's past stories — and Eva opens without a card (the check ran)."""
    env = env_factory(seed=SEED)
    told(env, "Promised to call the dentist in 5 days", days_ago=0)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        assert pilot.app.screen.coming_up.checked_day is not None  # it looked
        assert card(pilot) is None


async def focus_item(pilot, content: str) -> ReminderItem:
    await until(pilot, lambda: content in items(pilot))
    item = next(w for w in card(pilot).query(ReminderItem) if w.reminder.content == content)
    item.focus()
    await pilot.pause()
    return item


@aio
async def test_done_writes_into_the_memory_and_leaves_the_card(env_factory):
    """Issue 29 item 3: `x` on a focused item marks it done as the core does (the memory's words
    say so: "(сделано 28.05.2026)"); it leaves the card, and with it the card itself."""
    env = env_factory(seed=SEED)
    rid = told(env)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await focus_item(pilot, PROMISE)
        await pilot.press("x")
        await settle(pilot)
        rec = env.memory.get(rid)
        assert rec.remind_state == "done"
        assert rec.content == f"{PROMISE} (сделано 28.05.2026)"
        assert env.memory.coming_up() == []
        assert card(pilot) is None
        assert pilot.app.screen.focused is pilot.app.screen.prompt


@aio
async def test_snooze_and_dismiss_from_the_card(env_factory):
    """Issue 29 item 3: `z` snoozes an item until tomorrow (it is back the next day, overdue),
    `n` dismisses one for good; each leaves the card, the other items stay."""
    env = env_factory(seed=SEED)
    a = told(env)
    b = told(env, DENTIST, days_ago=1)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: len(items(pilot)) == 2)
        await focus_item(pilot, PROMISE)
        await pilot.press("z")
        await settle(pilot)
        assert items(pilot) == [DENTIST]
        assert env.memory.get(a).remind_after == datetime(2026, 5, 29).timestamp()  # tomorrow
        assert [r.id for r in env.memory.coming_up()] == [b]
        await focus_item(pilot, DENTIST)
        await pilot.press("n")
        await settle(pilot)
        assert env.memory.get(b).remind_state == "dismissed"
        assert card(pilot) is None
    env.clock.advance(DAY)
    assert [(r.id, r.days) for r in env.memory.coming_up()] == [(a, -1)]  # snoozed: back


@aio
async def test_the_buttons_answer_too(env_factory):
    """Issue 29 item 3: each item's Done button (a click) does what `x` does."""
    env = env_factory(seed=SEED)
    rid = told(env)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: card(pilot) is not None)
        await pilot.click(".remind-done")
        await settle(pilot)
        assert env.memory.get(rid).remind_state == "done"


@aio
async def test_a_closed_card_stays_closed_that_day_and_the_palette_opens_it(env_factory):
    """SPEC §8.11: the owner closes the card (`c`); opening Eva again that day shows no card
    (the store noted it), the palette's "Coming up" opens it on demand, and the next day it
    opens by itself again."""
    env = env_factory(seed=SEED)
    told(env)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await focus_item(pilot, PROMISE)
        await pilot.press("c")
        await settle(pilot)
        assert card(pilot) is None
        assert env.memory.noted(CLOSED.format(day="2026-05-28"))
    env.memory.close()
    again = env_factory()  # Eva opened again: the same store
    assert again.memory.coming_up() != []
    async with again.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        assert pilot.app.screen.coming_up.checked_day == "2026-05-28"
        assert card(pilot) is None
        pilot.app.action_coming_up()
        await settle(pilot)
        assert items(pilot) == [PROMISE]
        assert isinstance(pilot.app.screen.focused, ReminderItem)


@aio
async def test_the_palette_lists_coming_up(env_factory):
    """Issue 29 item 4: the command palette offers "Coming up" on every screen."""
    env = env_factory(seed=SEED)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        titles = [c.title for c in pilot.app.get_system_commands(pilot.app.screen)]
        assert "Coming up" in titles
        pilot.app.action_go("memories")
        await settle(pilot)
        titles = [c.title for c in pilot.app.get_system_commands(pilot.app.screen)]
        assert "Coming up" in titles
        pilot.app.action_coming_up()
        await settle(pilot)
        assert pilot.app.current_mode == "chat"
        assert card(pilot) is not None  # on demand: it says nothing is coming up
        assert "Nothing is coming up" in str(card(pilot).query_one(".dim").render())


@aio
async def test_a_new_chat_brings_the_card_and_a_new_day_does_too(env_factory):
    """SPEC §8.11: starting a chat shows the card (unless closed today); with Eva left open
    overnight, the day's first message looks again and shows what became due."""
    env = env_factory(["Hi!", "Morning!"], seed=SEED)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        assert card(pilot) is None
        told(env, days_ago=1)  # "послезавтра" from yesterday: due tomorrow
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert items(pilot) == [PROMISE]
        card(pilot).query(ReminderItem).first().focus()
        await pilot.press("c")
        await settle(pilot)
        env.clock.advance(DAY)
        await send(pilot, "Good morning")
        await settle(pilot)
        assert items(pilot) == [PROMISE]
        assert "today" in str(card(pilot).query_one(".reminder-text").render())


@aio
async def test_the_card_follows_the_personas_scope(env_factory):
    """SPEC §1 / §8.6 and issue 29 item 3: the card lists what the chat's turn sees — global
    memories and the active persona's — never another persona's."""
    from core.chat.personas import Personas

    env = env_factory(seed=SEED)
    ps = env.memory.attach(Personas)
    ps.create("Work", NOW)
    ps.create("Home", NOW)
    env.services.switch_persona("work")  # as the personas screen does
    told(env, "Promised to send the report to Oleg tomorrow", days_ago=0, scope="work")
    told(env, "Promised to fix the tap for mum tomorrow", days_ago=0, scope="home")
    told(env, DENTIST, days_ago=0)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: len(items(pilot)) >= 2)
        await settle(pilot)
        assert sorted(items(pilot)) == sorted(
            [DENTIST, "Promised to send the report to Oleg tomorrow"]
        )


# ---------------------------------------------------------------------------- the record view
@aio
async def test_the_record_view_shows_the_due_day_and_answers_it(env_factory):
    """Issue 29 item 3: the record view of a memory with a due day shows it ("due Sat 30 May
    2026") with Done / Snooze / Dismiss; `x` marks it done there and the view shows the new
    words and state; a memory without a day offers none of them."""
    env = env_factory(seed=SEED)
    rid = told(env, days_ago=0)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        pilot.app.screen.open_record(3)  # the cat: no day
        await settle(pilot)
        view = pilot.app.screen
        assert isinstance(view, RecordView) and not view.reminds
        assert not view.query("#done")
        await pilot.press("x")
        await settle(pilot)
        assert env.memory.get(3).remind_state is None
        await pilot.press("escape")
        pilot.app.screen.open_record(rid)
        await settle(pilot)
        view = pilot.app.screen
        assert isinstance(view, RecordView) and view.reminds
        text = str(view.query_one(".record-text").render())
        assert "Sat 30 May 2026" in text
        await pilot.press("z")
        await settle(pilot)
        assert env.memory.get(rid).remind_after is not None
        assert "not brought up before Fri 29 May" in str(
            pilot.app.screen.query_one(".record-text").render()
        )
        await pilot.press("x")
        await settle(pilot)
        assert env.memory.get(rid).remind_state == "done"
        view = pilot.app.screen
        assert isinstance(view, RecordView)
        text = str(view.query_one(".record-text").render())
        assert "· done" in text and "(сделано 28.05.2026)" in text


@aio
async def test_the_card_shows_with_chat_off_too(env_factory):
    """SPEC §8.11: what is due soon needs the memory, not the chat model — with no model the
    card still opens (under the note that says why chat is off)."""
    env = env_factory(seed=SEED, model=False)
    told(env)
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        assert pilot.app.screen.chat_off
        await until(pilot, lambda: card(pilot) is not None)
        assert items(pilot) == [PROMISE]


@aio
async def test_a_notable_night_is_on_the_card_and_dismiss_marks_it_seen(env_factory):
    """Issue 29 item 4 / SPEC §8.11: a notable night not yet shown is on the card (Done and
    Dismiss, no Snooze: `z` says why); `n` marks it seen through the sleeper."""
    from core.sleep import journal
    from core.sleep.journal import Journal

    env = env_factory(seed=SEED)
    with env.memory.attach(Journal).transaction() as conn:
        run = journal.start_run(conn, NOW - 3600, False, "schedule", "scripted")
        journal.finish_run(
            conn, run, NOW - 60, "done", {"memory": "done"}, True, "merged 2 records", "scripted"
        )
    async with env.app.run_test(size=(110, 32)) as pilot:
        await settle(pilot)
        night = await focus_item(pilot, "A notable night of sleep: merged 2 records")
        assert night.night and not night.query(".remind-snooze")
        await pilot.press("z")
        await settle(pilot)
        assert env.sleeper.seen == [] and night.is_attached
        await pilot.press("n")
        await settle(pilot)
        assert env.sleeper.seen == [run]
        assert card(pilot) is None
