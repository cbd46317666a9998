"""What is coming up (SPEC §8.11, issue 29): the reminders of the memory, and the notable nights
of sleep the owner has not been shown — one list for the chat's card, the first turn of the
day, ``eva remind`` and ``GET /v1/reminders``.

The audience decides, as everywhere (SPEC §1): a private memory is listed only where private
memory is visible (the owner alone on a trusted surface), and so is a night of sleep (its
journal is the owner's; others get the redacted one from ``/v1/sleep/runs``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from core.memory.facade import Memory
from core.privacy import TurnContext
from core.reminders.schedule import Reminder
from core.sleep.journal import Journal

__all__ = ["NIGHT_DAYS", "upcoming"]

NIGHT_DAYS = 7  # a notable night not yet shown is listed for a week


def upcoming(
    memory: Memory,
    ctx: TurnContext,
    *,
    days: int = 3,
    scopes: Iterable[str] | None = None,
    now: float | None = None,
    nights: bool = True,
) -> list[Reminder]:
    now = memory.clock.now() if now is None else now
    out = memory.coming_up(ctx, days=days, scopes=scopes, now=now)
    if nights and ctx.sees_private:
        today = datetime.fromtimestamp(now).date()
        for run in memory.attach(Journal).runs(20, notable_unseen=True):
            at = run.finished_at or run.started_at
            day = datetime.fromtimestamp(at).date()
            if 0 <= (today - day).days <= NIGHT_DAYS:
                out.append(
                    Reminder(
                        run.id,
                        f"A notable night of sleep: {run.summary}",
                        day,
                        None,
                        (day - today).days,
                        True,
                        3,
                        kind="night",
                    )
                )
    return out
