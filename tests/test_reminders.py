"""Issue 29 / SPEC §8.11: the day a memory points to, moved by corrections, kept by sleep, and
what is coming up — never a private item for an audience that may not see it."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from bench import reminders as bench
from core import (
    OWNER_IN_GROUP,
    OWNER_TRUSTED,
    OWNER_UNTRUSTED,
    PUBLIC,
    ManualClock,
    Memory,
    MemoryConfig,
)
from core.reminders import due_day

MONDAY = datetime(2026, 5, 18, 10).timestamp()
DAY = 86_400.0


def at(y, m, d, h=10):
    return datetime(y, m, d, h).timestamp()


@pytest.mark.parametrize(
    "text, due, every",
    [
        ("Я обещал маме починить кран в субботу, не дай мне забыть", date(2026, 5, 23), None),
        ("next Friday I'm flying to Berlin", date(2026, 5, 29), None),
        ("Завтра стоматолог", date(2026, 5, 19), None),
        ("через две недели экзамен", date(2026, 6, 1), None),
        ("У мамы день рождения 14 марта", date(2027, 3, 14), "year"),
        ("по средам бассейн", date(2026, 5, 20), "week"),
        ("Rent is due on the 5th of every month", date(2026, 6, 5), "month"),
        ("Перенесли встречу с субботы на воскресенье", date(2026, 5, 24), None),
        ("Turns out the exam is on June 12, not June 10", date(2026, 6, 12), None),
    ],
)
def test_read_finds_the_day(text, due, every):
    got = due_day.read(text, MONDAY)
    assert got is not None and (got.on, got.every) == (due, every)


@pytest.mark.parametrize(
    "text",
    [
        "Три года назад я жил в Казани",
        "В детстве я боялся собак",
        "В субботу ходили в кино",
        "14 мая ездили на дачу",
        "I hate Mondays",
        "Сегодня был тяжёлый день",
        "Я люблю завтракать",
        "I used to go fishing on Saturdays",
        "Обещал маме починить кран (сделано 23.05.2026)",
    ],
)
def test_times_that_are_not_due_dates(text):
    assert due_day.read(text, MONDAY) is None


def test_after_the_holidays_is_read_against_when_it_was_said():
    assert due_day.read("после праздников созвонимся", at(2026, 12, 18)).on == date(2027, 1, 9)
    assert due_day.read("после праздников созвонимся", at(2026, 4, 28)).on == date(2026, 5, 12)
    assert due_day.read("после праздников созвонимся", at(2026, 8, 1)) is None  # none near


def test_test_split_floor():
    """Issue 29 targets on the held-out split (tuned on dev only): precision >= 0.95, recall
    >= 0.9, false reminders <= 2 %."""
    items = bench.load()
    test = [i for i in items if i.split == "test"]
    assert len(items) >= 200 and len(test) >= 100
    assert {i.group[-2:] for i in items} >= {"ru", "en"}
    m, _ = bench.score(test)
    assert m["date_precision"] >= 0.95, m
    assert m["date_recall"] >= 0.9, m
    assert m["false_reminders"] <= 0.02, m


def test_the_manual_clock_scenario():
    """Told on Monday, opened on Saturday: due; told and corrected: only the new day; a private
    promise is not visible to a public turn; done is said in the memory."""
    out = bench.scenario()
    assert out["passed"], out


@pytest.fixture
def mem(tmp_path):
    clock = ManualClock(MONDAY)
    with Memory.open(tmp_path / "m.db", MemoryConfig(), clock) as m:
        yield m


def test_the_day_is_stored_with_the_words_and_moves_with_an_update(mem):
    rid = mem.save("Встреча с Олегом в пятницу", kind="event").id
    assert mem.get(rid).due_on == "2026-05-22"
    mem.clock.advance(2 * DAY)  # Wednesday: the words keep "в пятницу": the same Friday
    mem.update(rid, content="Встреча с Олегом и Аней в пятницу")
    assert mem.get(rid).due_on == "2026-05-22"
    mem.update(rid, content="Встречу с Олегом перенесли на 2 июня")
    assert mem.get(rid).due_on == "2026-06-02"
    mem.update(rid, content="С Олегом встретились, всё обсудили")
    assert mem.get(rid).due_on is None


def test_a_regenerated_turn_takes_the_moved_day_back(mem):
    from core import TurnContext

    rid = mem.save("Dentist on Thursday", kind="event").id
    ctx = TurnContext(turn_id="t-2")
    mem.save("Dentist appointment moved to next Monday", ctx, kind="event")
    assert rid not in {r.id for r in mem.coming_up(days=7)}
    mem.rollback_turn("t-2")
    assert rid in {r.id for r in mem.coming_up(days=7)}


def test_coming_up_windows_and_overdue(mem):
    birthday = mem.save("Mom's birthday is June 1", kind="fact").id
    promise = mem.save("I promised to fix the tap on Wednesday", kind="event").id
    later = mem.save("Vacation starts August 10th", kind="event").id
    ids = {r.id for r in mem.coming_up()}
    assert promise in ids and birthday not in ids and later not in ids
    mem.clock.set(at(2026, 5, 26))  # Tuesday: the birthday a week ahead; the promise overdue
    got = {r.id: r for r in mem.coming_up()}
    assert birthday in got and got[birthday].days == 6
    assert got[promise].days == -6 and "overdue" in got[promise].when
    mem.update(
        promise, content="I promised to fix the tap on Wednesday; still broken", actor=mem_owner()
    )
    assert promise not in {r.id for r in mem.coming_up()}  # a later word about it


def mem_owner():
    from core.store.records import Actor

    return Actor.OWNER


def test_done_snooze_dismiss(mem):
    a = mem.save("Завтра стоматолог", kind="event").id
    b = mem.save("Tomorrow call the bank", kind="event").id
    c = mem.save("Day after tomorrow pick up the parcel", kind="event").id
    w = mem.save("Swimming every Tuesday", kind="fact").id
    mem.remind(a, "done")
    mem.remind(b, "snooze")
    mem.remind(c, "dismiss")
    mem.remind(w, "done")
    assert "сделано" in mem.get(a).content and mem.get(a).due_on == "2026-05-19"
    assert {r.id for r in mem.coming_up()} == set()
    mem.clock.set(at(2026, 5, 19))
    assert {r.id for r in mem.coming_up()} == {b}  # snoozed to the next morning
    mem.clock.set(at(2026, 5, 25))
    assert w in {r.id for r in mem.coming_up()}  # the next Tuesday is due again


def test_private_items_only_where_private_memory_is_visible(mem):
    secret = mem.save("Анализы в клинике завтра", kind="event", private=True).id
    open_ = mem.save("Завтра купить хлеб", kind="event").id
    assert {r.id for r in mem.coming_up(OWNER_TRUSTED)} == {secret, open_}
    for ctx in (PUBLIC, OWNER_UNTRUSTED, OWNER_IN_GROUP):
        assert {r.id for r in mem.coming_up(ctx)} == {open_}


def test_sleep_keeps_the_day(mem):
    """SPEC §8.11 / §7: a rewording without the day keeps it (read against when it was said,
    not the night); a merge keeps its members' day."""
    from core.sleep import ops

    a = mem.save("Обещал маме починить кран в субботу", kind="event").id
    b = mem.save("Маме нужно починить кран на кухне", kind="event").id
    c = mem.save("Dentist on Thursday", kind="event").id
    mem.clock.set(at(2026, 5, 22, 3))  # Friday night: "в субботу" read now would be the same
    with ops.transaction(mem, "sleep:1") as tx, tx.op():
        planned = ops.versions(tx.conn, [a, b, c])
        ops.rewrite(tx, c, "Dentist appointment with Dr. Lee", "clearer", planned)
        ops.merge(tx, [a, b], "Обещал маме починить кран на кухне", "same promise", planned)
    assert mem.get(c).due_on == "2026-05-21"
    survivor = next(r for r in mem.list() if "кран" in r.content)
    assert survivor.due_on == "2026-05-23"
    mem.clock.set(at(2026, 5, 23))
    assert survivor.id in {r.id for r in mem.coming_up()}
