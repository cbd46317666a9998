"""The chat's "Coming up" card (SPEC §8.11, issue 29 item 3): what is due soon — promises and
plans due today, tomorrow or within ``[reminders] days``, birthdays a week ahead, promises whose
day passed, a notable night — each with Done, Snooze and Dismiss.

Presentation only: an item posts :class:`ReminderAction` and the screen runs the store call in
a worker (``screens.coming_up``). The keys live on the focused item (a text field never sees
them, so readline's keys stay the box's); its buttons take no focus, so Tab / Shift+Tab stop once
per item."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Label, Static

from core.reminders.schedule import Reminder
from eva_tui import strings as S


class ReminderAction(Message):
    """The owner's answer to one item: ``action`` is done, snooze, dismiss, open or close."""

    def __init__(self, item: ReminderItem | None, action: str) -> None:
        super().__init__()
        self.item = item
        self.action = action


def _button(label: str, action: str, variant: str = "default") -> Button:
    b = Button(
        label,
        name=action,
        variant=variant,  # type: ignore[arg-type]
        compact=True,
        classes=f"remind-{action}",
    )
    b.can_focus = False
    return b


class ReminderItem(Horizontal, can_focus=True):
    """One item of the card. Focused: x done, z snooze, n dismiss, Enter opens the memory,
    c closes the card."""

    BINDINGS = [
        Binding("x", "act('done')", S.BTN_DONE, id="coming_up.done"),
        Binding("z", "act('snooze')", S.BTN_SNOOZE, id="coming_up.snooze"),
        Binding("n", "act('dismiss')", S.BTN_DISMISS, id="coming_up.dismiss"),
        Binding("enter", "act('open')", "Open memory", id="coming_up.open"),
        Binding("c", "act('close')", S.BTN_CLOSE_CARD, id="coming_up.close"),
    ]

    def __init__(self, reminder: Reminder) -> None:
        super().__init__(classes="reminder")
        self.reminder = reminder
        self.busy = False  # an action on it runs in a worker

    @property
    def night(self) -> bool:
        return self.reminder.kind == "night"

    def compose(self) -> ComposeResult:
        r = self.reminder
        yield Static(
            S.reminder_line(r.when, r.content, r.private, self.night),
            markup=False,
            classes="reminder-text",
        )
        yield _button(S.BTN_DONE, "done", "primary")
        if not self.night:
            yield _button(S.BTN_SNOOZE, "snooze")
        yield _button(S.BTN_DISMISS, "dismiss")

    def action_act(self, action: str) -> None:
        if action == "close":
            self.post_message(ReminderAction(None, "close"))
        else:
            self.post_message(ReminderAction(self, action))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_act(event.button.name or "")

    def on_click(self) -> None:
        self.focus()


class ComingUpCard(Vertical):
    """The card: a title with a Close button, one :class:`ReminderItem` per item, a hint."""

    def __init__(self, items: Sequence[Reminder]) -> None:
        super().__init__(id="coming-up", classes="coming-up")
        self.items = list(items)

    def compose(self) -> ComposeResult:
        with Horizontal(classes="coming-up-title"):
            yield Label(S.COMING_UP_TITLE, classes="coming-up-label")
            yield _button(S.BTN_CLOSE_CARD, "close")
        if not self.items:
            yield Static(S.COMING_UP_NOTHING, classes="dim", markup=False)
        for r in self.items:
            yield ReminderItem(r)
        yield Label(S.COMING_UP_HINT, classes="dim coming-up-hint", markup=False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.name == "close":
            event.stop()
            self.post_message(ReminderAction(None, "close"))

    def item_for(self, reminder: Reminder) -> ReminderItem | None:
        for w in self.query(ReminderItem):
            if w.reminder.id == reminder.id and w.reminder.kind == reminder.kind:
                return w
        return None
