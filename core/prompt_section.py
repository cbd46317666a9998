"""The memory section of the prompt (SPEC §5).

Bounded by ``memory.prompt_budget`` characters. Core and pinned records take at most
``memory.core_share`` of it (their unused share goes to recalled records); past the share, core
loses the least important first and, among equal importance, the youngest — and the section
says so aloud. Each line is ``id | kind | age | importance | content``.

The core part is meant for the stable (cached) system prefix; the recalled part (and the
withheld-private footnote) goes close to the end of the prompt, next to the user's message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.config import MemoryConfig
from core.privacy import WITHHELD_FOOTNOTE
from core.records import Record

CORE_HEADER = "# Memory\nid | kind | age | importance | content"
RECALLED_HEADER = "## Recalled for this message\nid | kind | age | importance | content"


def human_age(seconds: float) -> str:
    """"now", "5m", "3h", "3d", "5mo", "2y"."""
    s = max(0.0, seconds)
    if s < 60:
        return "now"
    if s < 3600:
        return f"{int(s // 60)}m"
    if s < 86_400:
        return f"{int(s // 3600)}h"
    days = s / 86_400
    if days < 30:
        return f"{int(days)}d"
    if days < 365:
        return f"{int(days // 30)}mo"
    return f"{int(days // 365)}y"


def line(r: Record, now: float) -> str:
    content = " ".join(r.content.split())
    return f"{r.id} | {r.kind.value} | {human_age(now - r.updated_at)} | {r.importance} | {content}"


def core_priority(r: Record) -> tuple:
    """Order of the core part and of what survives the share: pinned first, then the more
    important, then the older (the youngest of equal importance is dropped first)."""
    return (not r.pinned, -r.importance, r.created_at, r.id)


def dropped_notice(n: int) -> str:
    noun = "record" if n == 1 else "records"
    return (
        f"Note: {n} core {noun} did not fit the memory budget and are not shown — "
        "fold or demote some."
    )


@dataclass(frozen=True)
class PromptSection:
    core_text: str
    recalled_text: str
    core_ids: tuple[int, ...]
    recalled_ids: tuple[int, ...]
    dropped_core: int
    withheld_footnote: bool

    @property
    def text(self) -> str:
        return "\n\n".join(p for p in (self.core_text, self.recalled_text) if p)


def build(
    core: Sequence[Record],
    recalled: Sequence[Record],
    config: MemoryConfig,
    now: float,
    footnote: bool,
) -> PromptSection:
    budget = config.prompt_budget
    share = int(budget * config.core_share)

    core_lines: list[str] = []
    core_ids: list[int] = []
    used = len(CORE_HEADER) + 1
    dropped = 0
    for r in sorted(core, key=core_priority):
        ln = line(r, now)
        if used + len(ln) + 1 <= share:
            core_lines.append(ln)
            core_ids.append(r.id)
            used += len(ln) + 1
        else:
            dropped += 1
    core_text = ""
    if core_lines or dropped:
        parts = [CORE_HEADER, *core_lines]
        if dropped:
            parts.append(dropped_notice(dropped))
        core_text = "\n".join(parts)

    remaining = budget - len(core_text)
    foot = WITHHELD_FOOTNOTE if footnote else ""
    remaining -= len(foot) + 2 if foot else 0
    rec_lines: list[str] = []
    rec_ids: list[int] = []
    used = len(RECALLED_HEADER) + 1
    shown = set(core_ids)
    for r in recalled:
        if r.id in shown:
            continue
        ln = line(r, now)
        if used + len(ln) + 1 > remaining:
            break
        rec_lines.append(ln)
        rec_ids.append(r.id)
        used += len(ln) + 1
    parts = []
    if rec_lines:
        parts.append("\n".join([RECALLED_HEADER, *rec_lines]))
    if foot:
        parts.append(foot)
    return PromptSection(
        core_text=core_text,
        recalled_text="\n\n".join(parts),
        core_ids=tuple(core_ids),
        recalled_ids=tuple(rec_ids),
        dropped_core=dropped,
        withheld_footnote=bool(foot),
    )
