"""Reminders (issue 29): how well the day a memory points to is read, and the scenario.

    python -m bench.reminders [--data bench/data/reminders.tsv] [--split dev|test|all] [--errors]

The labelled set (``bench/data/reminders.tsv``) holds Russian and English messages, each with
when it was said and the day it points to (a due date and a recurrence, or none). Within each
group the messages alternate dev / test (the first of a group is dev); :mod:`core.reminders`
was tuned on dev only. For each split it prints:

- ``date_precision``: of the messages given a due day, the share whose day is exactly right;
- ``date_recall``: of the messages that point to a day, the share given exactly that day;
- ``recurrence_accuracy``: of the messages that point to a day, the share whose recurrence
  (none, weekly, monthly, yearly) is read right;
- ``false_reminders``: of the messages that point to no day (stories, habits, "три года
  назад", "в детстве", no time at all), the share given one anyway — an item shown that the
  owner never set.

Then the scenario on a manual clock, through :class:`core.memory.facade.Memory`: a promise told on a
Monday for Saturday is due when Eva is opened on Saturday (and not on Thursday); told and then
corrected (an update, and a separate "перенесли" message), only the new day is due; a private
promise is not visible to a public turn (nor an owner turn from an untrusted place).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from core.reminders import due_day

DATA = Path(__file__).parent / "data" / "reminders.tsv"


@dataclass(frozen=True)
class Item:
    group: str
    said: datetime
    text: str
    due: date | None
    every: str | None
    split: str


def load(path: Path = DATA) -> list[Item]:
    out: list[Item] = []
    seen: dict[str, int] = defaultdict(int)
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        group, said, text, due, every = line.split("\t")
        split = "dev" if seen[group] % 2 == 0 else "test"
        seen[group] += 1
        out.append(
            Item(
                group,
                datetime.fromisoformat(said),
                text,
                None if due == "-" else date.fromisoformat(due),
                None if every == "-" else every,
                split,
            )
        )
    return out


def score(items: list[Item]) -> tuple[dict, list[dict]]:
    predicted = correct = expected = every_right = false = none_items = 0
    errors = []
    for it in items:
        got = due_day.read(it.text, it.said.timestamp())
        on = got.on if got else None
        every = got.every if got else None
        if got is not None:
            predicted += 1
        if it.due is not None:
            expected += 1
            correct += on == it.due
            every_right += got is not None and every == it.every
        else:
            none_items += 1
            false += got is not None
        if on != it.due or (it.due is not None and every != it.every):
            errors.append(
                {
                    "group": it.group,
                    "text": it.text,
                    "said": it.said.isoformat(),
                    "want": [it.due and it.due.isoformat(), it.every],
                    "got": [on and on.isoformat(), every, got.phrase if got else None],
                }
            )
    return {
        "n": len(items),
        "with_due": expected,
        "date_precision": round(correct / predicted, 4) if predicted else None,
        "date_recall": round(correct / expected, 4) if expected else None,
        "recurrence_accuracy": round(every_right / expected, 4) if expected else None,
        "false_reminders": round(false / none_items, 4) if none_items else None,
        "false_reminders_n": false,
    }, errors


def scenario() -> dict[str, bool]:
    """The manual-clock scenario of issue 29, through the memory engine."""
    from core import (
        OWNER_IN_GROUP,
        OWNER_TRUSTED,
        OWNER_UNTRUSTED,
        PUBLIC,
        ManualClock,
        Memory,
        MemoryConfig,
    )

    monday = datetime(2026, 5, 18, 10).timestamp()
    day = 86_400.0
    out: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as d:
        clock = ManualClock(monday)
        with Memory.open(Path(d) / "memory.db", MemoryConfig(), clock) as mem:
            tap = mem.save(
                "Я обещал маме починить кран в субботу", OWNER_TRUSTED, kind="event", importance=4
            ).id
            meet = mem.save("Встреча с Олегом в пятницу в 12", OWNER_TRUSTED, kind="event").id
            dentist = mem.save("Dentist appointment on Thursday", OWNER_TRUSTED, kind="event").id
            secret = mem.save(
                "Анализы в клинике в субботу", OWNER_TRUSTED, kind="event", private=True
            ).id
            clock.set(monday + day)
            # a correction as an update of the record (the memory step's "update")
            mem.update(meet, OWNER_TRUSTED, content="Встреча с Олегом перенесена на 2 июня")
            # a correction as a message of its own
            mem.save("Dentist appointment moved to next Monday", OWNER_TRUSTED, kind="event")
            clock.set(monday + 3 * day)  # Thursday: Saturday's promise is not due yet … soon
            thursday = {r.id: r.days for r in mem.coming_up(OWNER_TRUSTED, days=1)}
            out["thursday_not_yet_due"] = tap not in thursday
            clock.set(monday + 5 * day)  # Saturday: opened
            sat = {r.id: r for r in mem.coming_up(OWNER_TRUSTED)}
            out["told_monday_due_saturday"] = tap in sat and sat[tap].days == 0
            out["corrected_old_day_not_due"] = (
                meet not in sat
                and dentist not in sat
                and all(r.on != date(2026, 5, 21) for r in sat.values())
            )
            clock.set(datetime(2026, 6, 1, 9).timestamp())
            june = {r.id: r for r in mem.coming_up(OWNER_TRUSTED)}
            out["corrected_new_day_due"] = meet in june and june[meet].on == date(2026, 6, 2)
            clock.set(monday + 5 * day)
            out["private_seen_by_owner"] = secret in sat
            out["private_not_in_public_turn"] = all(
                secret not in {r.id for r in mem.coming_up(ctx)}
                for ctx in (PUBLIC, OWNER_UNTRUSTED, OWNER_IN_GROUP)
            )
            mem.remind(tap, "done")
            out["done_not_due_again"] = tap not in {r.id for r in mem.coming_up(OWNER_TRUSTED)}
            out["done_said_in_memory"] = "сделано" in mem.get(tap).content
    out["passed"] = all(out.values())
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--split", choices=("dev", "test", "all"), default="all")
    p.add_argument(
        "--errors",
        action="store_true",
        help="list the misread messages (dev only unless --split test is given: tune on dev)",
    )
    args = p.parse_args(argv)
    items = load(args.data)
    result: dict = {"data": str(args.data), "splits": {}}
    for split in ("dev", "test"):
        if args.split not in (split, "all"):
            continue
        metrics, errors = score([i for i in items if i.split == split])
        result["splits"][split] = metrics
        if args.errors and (split == "dev" or args.split == "test"):
            result.setdefault("errors", {})[split] = errors
    result["scenario"] = scenario()
    json.dump(result, sys.stdout, ensure_ascii=False, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
