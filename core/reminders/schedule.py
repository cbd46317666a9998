"""What is coming up (SPEC §8.11, issue 29): the due days of memories against today.

:func:`coming_up` lists, for a day, what is due: today, tomorrow and within ``days``;
birthdays and anniversaries (yearly) a week ahead; weekly ones today and tomorrow; and one-off
promises whose day passed (up to ``overdue_days``) without a later word about them (the record
was not changed after its day). Done / dismissed items and snoozed ones are left out.

The owner's answers: :func:`done_text` (a one-off's words say it is done),
:func:`next_morning` (a snooze's end), :func:`after_occurrence` (a recurrence's current
occurrence is over). The days themselves are read by :mod:`core.reminders.due_day`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from core.reminders.due_day import local_day, next_yearly, strip_done

__all__ = [
    "DISMISSED",
    "DONE",
    "Reminder",
    "after_occurrence",
    "coming_up",
    "done_text",
    "next_morning",
    "next_occurrence",
]

DAY = 86_400.0
DONE, DISMISSED = "done", "dismissed"


def done_text(content: str, now: float, max_chars: int) -> str:
    """A one-off's words once the owner marked it done: "(done 23.05.2026)" in its language."""
    word = "сделано" if re.search(r"[а-яё]", content.lower()) else "done"
    mark = f" ({word} {local_day(now):%d.%m.%Y})"
    base = strip_done(content).rstrip()
    return base[: max(0, max_chars - len(mark))] + mark


def next_morning(now: float) -> float:
    """A snooze's end: the next midnight (the next day's first look)."""
    return _midnight(local_day(now)) + DAY


def next_occurrence(on: date, every: str | None, today: date) -> date:
    """The first occurrence of a due day at or after ``today`` (a one-off: the day itself)."""
    if every is None or on >= today:
        return on
    if every == "week":
        return today + timedelta(days=(on.weekday() - today.weekday()) % 7)
    if every == "month":
        d = today
        for _ in range(62):
            if d.day == min(on.day, calendar.monthrange(d.year, d.month)[1]):
                return d
            d += timedelta(days=1)
        return d
    return next_yearly(today, on.month, on.day)


@dataclass(frozen=True)
class Reminder:
    """One item coming up: a memory (its id, words, flags) and the day it is due."""

    id: int
    content: str
    on: date
    every: str | None
    days: int  # from today: 0 today, 1 tomorrow, < 0 overdue
    private: bool
    importance: int
    kind: str = "memory"  # "memory" or "night" (a notable night of sleep)

    @property
    def when(self) -> str:
        if self.days < 0:
            return f"overdue since {self.on:%d %b}" if self.days < -1 else "overdue since yesterday"
        if self.days == 0:
            return "today"
        if self.days == 1:
            return "tomorrow"
        return f"in {self.days} days ({self.on:%a %d %b})"

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "content": self.content,
            "due": self.on.isoformat(),
            "every": self.every,
            "days": self.days,
            "when": self.when,
            "private": self.private,
            "kind": self.kind,
        }


def coming_up(
    rows: Iterable, now: float, *, days: int = 3, yearly_days: int = 7, overdue_days: int = 7
) -> list[Reminder]:
    """What is due around ``now`` among ``rows`` (mappings with the memory's id, content,
    importance, private, updated_at and the v8 columns): most urgent first — today and the
    overdue, then by day, then by importance."""
    today = local_day(now)
    out: list[Reminder] = []
    for r in rows:
        if not r["due_on"]:
            continue
        on = date.fromisoformat(r["due_on"])
        every = r["due_every"]
        state, after = r["remind_state"], r["remind_after"]
        if every is None and state in (DONE, DISMISSED):
            continue
        start = today
        if after is not None and after > now:
            if every is None:
                continue  # snoozed
            start = max(today, local_day(after))
        when = next_occurrence(on, every, start)
        delta = (when - today).days
        if every is None and delta < 0:
            # a promise whose day passed: brought back unless a later word was said
            if -delta > overdue_days or r["updated_at"] >= _midnight(on) + DAY:
                continue
        else:
            window = yearly_days if every == "year" else (min(days, 1) if every == "week" else days)
            if delta > window:
                continue
        out.append(
            Reminder(
                r["id"],
                strip_done(r["content"]),
                when,
                every,
                delta,
                bool(r["private"]),
                r["importance"],
            )
        )
    out.sort(key=lambda x: (x.days > 0, x.days if x.days > 0 else 0, -x.importance, x.id))
    return out


def _midnight(d: date) -> float:
    return datetime(d.year, d.month, d.day).timestamp()


def after_occurrence(on: date, every: str | None, now: float) -> float:
    """The moment a done / dismissed occurrence of a recurring item stops being shown: the
    midnight after the occurrence that is current at ``now``."""
    when = next_occurrence(on, every, local_day(now))
    return _midnight(when) + DAY
