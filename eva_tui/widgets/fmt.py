"""Small text helpers shared by the screens (ages, clipping)."""

from __future__ import annotations

import math

from core.memory.prompt_section import human_age


def age(seconds: float) -> str:
    """ "now", "5m", "3h", "3d", "5mo", "2y" — the same words the prompt uses (SPEC §5)."""
    return human_age(seconds)


def ago(ts: float | None, now: float) -> str:
    if ts is None:
        return "—"
    a = age(now - ts)
    return a if a == "now" else f"{a} ago"


def in_time(ts: float | None, now: float) -> str:
    """ "in 5h", "now" (overdue), "—" (never)."""
    if ts is None:
        return "—"
    if ts <= now:
        return "now"
    left = ts - now
    # a countdown reads better in days ("in 30d", not "in 1mo"), and rounded up: a record
    # forgotten a second ago is purged "in 30d", as the archive says (issue 16), not "in 29d";
    # a night that just ran with `every = 24h` is next "in 24h", not "in 23h"
    if left > 86_400:
        return f"in {math.ceil(left / 86_400)}d"
    minutes = math.ceil(left / 60)
    return f"in {minutes}m" if minutes < 60 else f"in {math.ceil(left / 3600)}h"


def clip(text: str, width: int) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= width else one[: max(0, width - 1)] + "…"
