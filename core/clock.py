"""Time source. Everything in the core asks a clock, so tests can set and move time."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (UTC)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when told to (tests, benchmarks, replaying dated corpora)."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self._t = float(start)

    def now(self) -> float:
        return self._t

    def set(self, t: float) -> None:
        self._t = float(t)

    def advance(self, seconds: float) -> None:
        self._t += float(seconds)


class ShiftedClock:
    """The system clock, moved so that it read ``start`` when it was made, then running on
    (``EVA_NOW``: try a reminder on another day without waiting for it)."""

    def __init__(self, start: float) -> None:
        self._offset = float(start) - time.time()

    def now(self) -> float:
        return time.time() + self._offset


def parse_now(raw: str) -> float:
    """An ``EVA_NOW`` value: an ISO date or date and time in the owner's local time
    ("2026-05-23", "2026-05-23T09:30"). ValueError with the reason otherwise."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(raw.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"must be a date or date and time like 2026-05-23 or "
            f"2026-05-23T09:30 (got {raw.strip()[:40]!r})"
        ) from None


def from_env(environ: dict | None = None) -> Clock:
    """The clock the app runs on: the system's, or ``EVA_NOW``'s when it is set (demos and
    tests: Eva believes it is that moment, and time runs on from it)."""
    import os

    raw = (os.environ if environ is None else environ).get("EVA_NOW", "").strip()
    return ShiftedClock(parse_now(raw)) if raw else SystemClock()
