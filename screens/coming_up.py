"""The chat's "Coming up" card (SPEC §8.11, issue 29 item 3), kept apart from the chat screen.

- It opens by itself when Eva opens, when the owner starts a new chat, and at the first message
  of a new day — unless the owner closed it that day (the store notes the day, so reopening Eva
  does not bring it back). The palette's "Coming up" opens it whenever asked.
- It lists :func:`core.chat.upcoming.upcoming` for the chat's own turn context (the active persona's
  scope plus global; only what that audience may see) and ``[reminders] days``.
- Done / Snooze / Dismiss run :meth:`core.memory.facade.Memory.remind` (a notable night: the sleeper's
  ``mark_seen``) in a thread worker; the item leaves the card when the store has the answer.

Every store read and write runs in a thread worker; the event loop only mounts widgets."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from textual.message import Message

from core.chat.upcoming import upcoming
from core.errors import MemoryOpError, StoreError
from core.reminders.schedule import Reminder
from core.store.records import GLOBAL_SCOPE
from eva_tui import strings as S
from eva_tui.widgets.coming_up import ComingUpCard, ReminderAction, ReminderItem

if TYPE_CHECKING:
    from screens.chat import ChatScreen

CLOSED = "coming-up-closed:{day}"  # Memory.first_time key: the owner closed the card that day


class ComingUpLoaded(Message):
    def __init__(self, items: list[Reminder], on_demand: bool) -> None:
        super().__init__()
        self.items = items
        self.on_demand = on_demand


class ReminderAnswered(Message):
    def __init__(self, item: ReminderItem, action: str, error: str | None = None) -> None:
        super().__init__()
        self.item = item
        self.action = action
        self.error = error


class ComingUp:
    def __init__(self, screen: ChatScreen) -> None:
        self.screen = screen
        self.checked_day: str | None = None  # the day the card was last looked for

    @property
    def services(self):
        return self.screen.services

    def today(self) -> str:
        return datetime.fromtimestamp(self.services.clock.now()).date().isoformat()

    @property
    def card(self) -> ComingUpCard | None:
        found = self.screen.query(ComingUpCard)
        return found.first() if found else None

    # ------------------------------------------------------------------ showing
    def check(self, on_demand: bool = False) -> None:
        """Look for what is coming up (a worker) and show the card: by itself unless the owner
        closed it today, or asked for (``on_demand``: even with nothing due, it says so)."""
        if self.services.memory is None:
            if on_demand:
                self.screen.notify(S.COMING_UP_NOTHING)
            return
        self.checked_day = self.today()
        self.screen.run_worker(
            lambda: self._read(on_demand),
            thread=True,
            exit_on_error=False,
            name="reading what is coming up",
            group="coming-up",
        )

    def new_day(self) -> None:
        """The owner writes: on the day's first message (Eva left open overnight) look again."""
        if self.checked_day is not None and self.checked_day != self.today():
            self.check()

    def _read(self, on_demand: bool) -> None:
        s = self.services
        memory = s.memory
        if memory is None:
            return
        day = self.today()
        if not on_demand and memory.noted(CLOSED.format(day=day)):
            return
        ctx = s.turn_context()  # the chat's turn: the active persona's scope rules hold
        scopes = (GLOBAL_SCOPE, ctx.persona) if ctx.persona else (GLOBAL_SCOPE,)
        items = upcoming(
            memory, ctx, days=s.config.reminders.days, scopes=scopes, nights=s.sleeper is not None
        )
        self.screen.post_message(ComingUpLoaded(items, on_demand))

    async def loaded(self, event: ComingUpLoaded) -> None:
        if not event.items and not event.on_demand:
            return
        old = self.card
        card = ComingUpCard(event.items)
        log = self.screen.log_view
        if old is not None:
            await log.mount(card, after=old)
            await old.remove()
        else:
            await log.mount(card)
        if event.on_demand:
            log.scroll_to_widget(card, animate=False)
            items = card.query(ReminderItem)
            if items:
                items.first().focus()

    # ------------------------------------------------------------------ answers
    async def action(self, event: ReminderAction) -> None:
        if event.action == "close" or event.item is None:
            await self.close()
            return
        item = event.item
        if event.action == "open":
            if not item.night:
                self.screen.open_record(item.reminder.id)
            else:
                self.screen.app.action_go("journal")
            return
        if item.busy:
            return
        if item.night and event.action == "snooze":
            self.screen.notify(S.NIGHT_CANNOT_SNOOZE)
            return
        item.busy = True
        self.screen.run_worker(
            lambda: self._answer(item, event.action),
            thread=True,
            exit_on_error=False,
            name=f"{event.action} a reminder",
            group="coming-up-answer",
        )

    def _answer(self, item: ReminderItem, action: str) -> None:
        s = self.services
        r = item.reminder
        try:
            if item.night:
                if s.sleeper is None:
                    raise MemoryOpError("sleep is not running")
                s.sleeper.mark_seen(r.id)
            else:
                assert s.memory is not None
                s.memory.remind(r.id, action)
        except (MemoryOpError, StoreError, KeyError) as e:
            self.screen.post_message(ReminderAnswered(item, action, str(e)))
            return
        self.screen.post_message(ReminderAnswered(item, action))

    async def answered(self, event: ReminderAnswered) -> None:
        item = event.item
        item.busy = False
        if event.error:
            self.screen.notify(event.error, severity="warning")
            return
        self.screen.notify(S.reminded(event.action, item.reminder.id, item.night), timeout=4)
        if not item.night:
            self.screen.app.memory_changed()
        card = self.card
        if item.is_attached:
            await item.remove()
        if card is not None:  # the card was read again meanwhile: its copy of the item goes
            again = card.item_for(item.reminder)
            if again is not None:
                await again.remove()
        if card is not None and not card.query(ReminderItem):
            await card.remove()
            self.screen.prompt.focus()

    async def close(self) -> None:
        card = self.card
        if card is not None:
            await card.remove()
        self.screen.prompt.focus()
        memory = self.services.memory
        if memory is not None:
            day = self.today()
            self.screen.run_worker(
                lambda: memory.first_time(CLOSED.format(day=day)),
                thread=True,
                exit_on_error=False,
                name="closing the coming-up card",
                group="coming-up",
            )
