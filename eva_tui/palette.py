"""Command palette providers. Every action is a ``SystemCommand`` (``EvaApp.get_system_commands``
plus each screen's ``commands()``); this provider adds the records themselves: type a few words
in the palette and open a memory. The search is the memories screen's
(:func:`eva_tui.search.search_records`: by meaning, then by words in any letter case; it
reinforces nothing)."""

from __future__ import annotations

import asyncio
from functools import partial

from textual.command import Hit, Hits, Provider

from core.memory.facade import Memory
from eva_tui import strings as S
from eva_tui.search import search_records
from eva_tui.widgets.actions import RecordActions
from eva_tui.widgets.base import eva_app
from eva_tui.widgets.fmt import clip


class MemoryProvider(Provider):
    """ "Memory #42: …" entries that open the record (on the chat or memory screen)."""

    LIMIT = 12

    def _target(self) -> RecordActions | None:
        for screen in reversed(self.app.screen_stack):
            if isinstance(screen, RecordActions):
                return screen
        return None

    def _memory(self) -> Memory | None:
        return eva_app(self).services.memory

    async def search(self, query: str) -> Hits:
        memory, target = self._memory(), self._target()
        words = query.strip()
        if memory is None or target is None or len(words) < 2:
            return
        records = await asyncio.to_thread(search_records, memory, words, self.LIMIT)
        matcher = self.matcher(words)
        for r in records:
            title = S.palette_memory(r.id, clip(r.content, 70))
            score = matcher.match(title) or 0.5
            yield Hit(
                score,
                matcher.highlight(title),
                partial(target.open_record, r.id),
                help=f"{r.kind.value} · importance {r.importance}"
                + (" · private" if r.private else "")
                + (" · pinned" if r.pinned else ""),
            )
