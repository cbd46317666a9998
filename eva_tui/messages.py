"""Messages that change the app's own state. Screens post them; only :class:`EvaApp` handles
them, so the state they carry (what is generating, which turns can be cancelled) has one owner."""

from __future__ import annotations

import threading

from textual.message import Message


class TurnStarted(Message):
    """A chat turn began; ``cancel`` stops it (quitting sets it)."""

    def __init__(self, cancel: threading.Event) -> None:
        super().__init__()
        self.cancel = cancel


class TurnFinished(Message):
    """The chat turn of ``cancel`` ended (answered, stopped or failed)."""

    def __init__(self, cancel: threading.Event) -> None:
        super().__init__()
        self.cancel = cancel


class ScheduleRead(Message):
    """A worker read when the next night is due (``Services.next_due``): the status bar shows it."""
