"""The archive (SPEC §2): forgotten records with who, why and when, the time left before the
purge, and restore (same id, kind, flags and history)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from core.privacy import OWNER_TRUSTED
from core.store.records import ArchivedRecord
from eva_tui import strings as S
from eva_tui.widgets import NavBar, PaletteCommand, ago, clip, in_time
from eva_tui.widgets.tables import RecordTableScreen

COLUMNS = tuple(
    (S.COLUMNS[key], key)
    for key in ("id", "kind", "private", "by", "why", "when", "purge", "content")
)


class ArchiveLoaded(Message):
    def __init__(self, items: list[ArchivedRecord]) -> None:
        super().__init__()
        self.items = items


class ArchiveScreen(RecordTableScreen):
    BINDINGS = [
        Binding("r", "restore", "Restore", id="archive.restore"),
        Binding("c", "copy", "Copy", id="archive.copy"),
        Binding("o", "open", "Open", id="archive.open"),
    ]
    TABLE_ID = "archive"
    INFO_ID = "archive-info"
    COLUMNS = COLUMNS
    LOAD_NAME = "loading the archive"

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[int, ArchivedRecord] = {}

    def compose(self) -> ComposeResult:
        yield NavBar("archive")
        yield from self.compose_table()

    def loader(self, memory) -> Callable[[], ArchiveLoaded]:
        return lambda: ArchiveLoaded(memory.archived(OWNER_TRUSTED))

    def on_archive_loaded(self, event: ArchiveLoaded) -> None:
        now = self.services.clock.now()
        self.items = {a.record.id: a for a in event.items}
        width = max(16, self.size.width - 79)
        self.fill_table(
            (
                str(a.record.id),
                a.record.kind.value,
                S.YES if a.record.private else "",  # privacy you can see (issue 16)
                a.archived_by,
                clip(a.why, 24),
                ago(a.archived_at, now),
                in_time(a.purge_at, now),
                clip(a.record.content, width),
            )
            for a in event.items
        )
        n = len(event.items)
        ttl = self.services.memory.config.archive_ttl_days if self.services.memory else 30
        self.set_info(S.archive_info(n, ttl))

    def _selected(self) -> ArchivedRecord | None:
        return self.selected_item(self.items, S.SELECT_FORGOTTEN)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        if item := self._selected():
            self._show_record(item.record, item)

    def action_restore(self) -> None:
        if item := self._selected():
            self.restore_record(item.record.id)

    def action_copy(self) -> None:
        if item := self._selected():
            self.app.copy_text(
                item.record.content,
                f"memory #{item.record.id}",
            )

    def commands(self) -> list[PaletteCommand]:
        c = S.CMD_ARCHIVE
        return [
            PaletteCommand(*c["restore"], self.action_restore),
            PaletteCommand(*c["open"], self.action_open),
            PaletteCommand(*c["copy"], self.action_copy),
            PaletteCommand(*c["reload"], self.reload),
        ]
