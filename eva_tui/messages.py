"""Messages that change the app's own state. Screens and the app's own workers post them; only
:class:`EvaApp` handles them, so the state they carry (what is generating, which turns can be
cancelled, whether Eva sleeps, what the store and the models are doing) has one owner."""

from __future__ import annotations

import threading
from typing import Any

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


class ServicesChanged(Message):
    """A model, the embedder or the store changed state (from a bring-up worker)."""


class MemoryFailed(Message):
    """The store could not be opened (``error`` says why)."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class Woken(Message):
    """Eva was woken (from a worker)."""


class SleepStarted(Message):
    def __init__(self, dry_run: bool | None, reason: str) -> None:
        super().__init__()
        self.dry_run = dry_run
        self.reason = reason


class SleepProgressed(Message):
    def __init__(self, progress: Any) -> None:
        super().__init__()
        self.progress = progress


class SleepFinished(Message):
    def __init__(self, run: Any = None, error: str | None = None) -> None:
        super().__init__()
        self.run = run
        self.error = error
