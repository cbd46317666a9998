"""The day's reminder in a chat turn (SPEC §8.11): the owner's first turn of the day carries the
most urgent item coming up in its prompt, and when Eva's reply leaves it out, her own line
brings it up after the reply."""

from __future__ import annotations

import logging
from datetime import datetime

from core import language
from core.clock import Clock
from core.memory.facade import Memory
from core.privacy import TurnContext
from core.reminders.schedule import Reminder
from core.store.records import GLOBAL_SCOPE
from core.text import stem_set as text_stems

log = logging.getLogger("eva.conversation")


def day_reminder(
    memory: Memory, ctx: TurnContext, days: int, persona_id: str, clock: Clock
) -> Reminder | None:
    """The most urgent item coming up within ``days``, for the owner's first turn of the day
    (once a day, in whichever chat comes first; only what this audience may see, of the
    global memory and this persona's). None when ``days`` is 0 (off)."""
    if days <= 0 or not ctx.is_owner or not ctx.can_mutate:
        return None
    try:
        items = memory.coming_up(ctx, days=days, scopes=(GLOBAL_SCOPE, persona_id))
    except Exception as e:  # noqa: BLE001 - a reminder is a courtesy, never a failed turn
        log.warning("reminders unavailable: %s", type(e).__name__)
        return None
    day = datetime.fromtimestamp(clock.now()).date().isoformat()
    if not items or not memory.first_time(f"reminder:{day}"):
        return None
    return items[0]


def reminder_line(item: Reminder, lang: str | None) -> str:
    """Eva's own line for the day's reminder (SPEC §8.11), added after her first reply of the
    day when the reply itself did not bring the item up: the owner's words quoted, with when
    they are due. Measured with the default model (tests/test_reminders_real.py): with the
    reminder in the prompt it answered "Доброе утро, Ева! Как дела?" and left it out, and a
    nudge after the message made it greet back twice; when it did mention it, it repeated the
    owner's words as its own ("Я обещал маме…"). Only for an item still ahead (today, tomorrow,
    in a few days): an overdue one may have been done without a word, and one read from a
    complaint ("Соседи сверлят, и это в субботу!", measured on an unseen scenario) came back as
    "срок был 06.06" in an answer about work — the card still lists it for the owner to dismiss."""
    quote = " ".join(item.content.split())
    if lang == language.RUSSIAN:
        when = {0: "на сегодня", 1: "на завтра"}.get(
            item.days, f"через {item.days} дн., {item.on:%d.%m}"
        )
        return f"Кстати, напоминаю ({when}): «{quote}»"
    return f"By the way, a reminder ({item.when}): “{quote}”"


def mentions(reply: str, content: str) -> bool:
    """The reply already brings the item up: it shares two of its words (one when the item
    has only one), by stem."""
    theirs = text_stems(content)
    return len(text_stems(reply) & theirs) >= min(2, len(theirs))
