"""The archive (SPEC §2): forgotten records with who, why and when, the time left before the
purge, and restore (same id, kind, flags and history)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Footer, Static

from core.privacy import OWNER_TRUSTED
from core.records import ArchivedRecord
from eva_tui.widgets import NavBar, PaletteCommand, StatusBar, ago, clip, in_time
from eva_tui.widgets.actions import RecordActions
from eva_tui.widgets.tables import keep_cursor, selected_id

COLUMNS = (
    ("id", "id"),
    ("kind", "kind"),
    ("by", "by"),
    ("why", "why"),
    ("forgotten", "when"),
    ("purge", "purge"),
    ("content", "content"),
)


class ArchiveLoaded(Message):
    def __init__(self, items: list[ArchivedRecord]) -> None:
        super().__init__()
        self.items = items


class ArchiveScreen(RecordActions):
    BINDINGS = [
        Binding("r", "restore", "Restore", id="archive.restore"),
        Binding("c", "copy", "Copy", id="archive.copy"),
        Binding("o", "open", "Open", id="archive.open"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[int, ArchivedRecord] = {}
        self._loaded_version = -1

    def compose(self) -> ComposeResult:
        yield NavBar("archive")
        yield DataTable(id="archive", cursor_type="row", zebra_stripes=True)
        yield Static("", markup=False, id="archive-info")
        yield StatusBar()
        yield Footer()

    @property
    def table(self) -> DataTable:
        return self.query_one("#archive", DataTable)

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.table.add_column(label, key=key)
        self.watch(self.app, "memory_version", self._memory_changed, init=True)
        self.table.focus()

    def on_screen_resume(self) -> None:
        if self._loaded_version != self.app.memory_version:  # type: ignore[attr-defined]
            self.reload()

    def _memory_changed(self, _version: int) -> None:
        if self.is_current or self._loaded_version < 0:
            self.reload()

    def reload(self) -> None:
        memory = self.services.memory
        if memory is None:
            self.query_one("#archive-info", Static).update("Opening the memory…")
            return
        self._loaded_version = self.app.memory_version  # type: ignore[attr-defined]

        def work() -> None:
            self.post_message(ArchiveLoaded(memory.archive(OWNER_TRUSTED)))

        self.run_worker(
            work,
            thread=True,
            exit_on_error=False,
            name="loading the archive",
            group="load",
            exclusive=True,
        )

    def on_archive_loaded(self, event: ArchiveLoaded) -> None:
        table = self.table
        keep = self._selected_id()
        table.clear()
        now = self.services.clock.now()
        self.items = {a.record.id: a for a in event.items}
        width = max(16, self.size.width - 70)
        for a in event.items:
            r = a.record
            table.add_row(
                str(r.id),
                r.kind.value,
                a.archived_by,
                clip(a.why, 24),
                ago(a.archived_at, now),
                in_time(a.purge_at, now),
                clip(r.content, width),
                key=str(r.id),
            )
        keep_cursor(table, keep)
        n = len(event.items)
        ttl = self.services.memory.config.archive_ttl_days if self.services.memory else 30
        info = (
            (
                f"{n} forgotten record{'s' if n != 1 else ''}; each stays restorable "
                f"{ttl:g} days, then sleep purges it."
            )
            if n
            else (
                f"The archive is empty. Forgotten memories wait here, restorable, for {ttl:g} days."
            )
        )
        self.query_one("#archive-info", Static).update(info)

    def _selected_id(self) -> int | None:
        return selected_id(self.table)

    def _selected(self) -> ArchivedRecord | None:
        rid = self._selected_id()
        item = self.items.get(rid) if rid is not None else None
        if item is None:
            self.notify("Select a forgotten memory first.")
        return item

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
                item.record.content,  # type: ignore[attr-defined]
                f"memory #{item.record.id}",
            )

    def commands(self) -> list[PaletteCommand]:
        return [
            PaletteCommand(
                "Archive: restore selected",
                "Bring it back with its id and history (r)",
                self.action_restore,
            ),
            PaletteCommand(
                "Archive: open selected", "Who forgot it, why and when (o)", self.action_open
            ),
            PaletteCommand("Archive: copy selected", "Copy its content (c)", self.action_copy),
            PaletteCommand("Archive: reload", "Read the archive again", self.reload),
        ]
