"""DataTable helpers shared by the record screens, and the base of the screens that list records."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar, TypeVar

from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from eva_tui import strings as S
from eva_tui.widgets.actions import RecordActions
from eva_tui.widgets.nav import StatusBar

T = TypeVar("T")


def selected_id(table: DataTable) -> int | None:
    """The record id (row key) under the cursor, or None for an empty table."""
    if table.row_count == 0:
        return None
    try:
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
    except Exception:  # the cursor is past the rows (the table was just cleared)
        return None
    return int(key.value) if key.value is not None else None


def keep_cursor(table: DataTable, record_id: int | None) -> None:
    """Put the cursor back on a record after the table was refilled."""
    if record_id is not None and str(record_id) in table.rows:
        table.move_cursor(row=table.get_row_index(str(record_id)))


class RecordTableScreen(RecordActions):
    """A screen whose DataTable lists records (one row a record, keyed by its id), with an info
    line under it; it loads in a thread worker and reloads when the memory changes — at once
    when it is the current screen, else when it is shown again.

    Subclasses set ``TABLE_ID``, ``INFO_ID``, ``COLUMNS`` (label, key) and ``LOAD_NAME`` (the
    worker's name), end their ``compose`` with :meth:`compose_table` and give :meth:`loader`."""

    TABLE_ID: ClassVar[str]
    INFO_ID: ClassVar[str]
    COLUMNS: ClassVar[tuple[tuple[str, str], ...]]
    LOAD_NAME: ClassVar[str]

    def __init__(self) -> None:
        super().__init__()
        self._loaded_version = -1

    def compose_table(self) -> ComposeResult:
        yield DataTable(id=self.TABLE_ID, cursor_type="row", zebra_stripes=True)
        yield Static("", markup=False, id=self.INFO_ID)
        yield StatusBar()
        yield Footer()

    @property
    def table(self) -> DataTable:
        return self.query_one(f"#{self.TABLE_ID}", DataTable)

    def set_info(self, text: str) -> None:
        self.query_one(f"#{self.INFO_ID}", Static).update(text)

    def on_mount(self) -> None:
        for label, key in self.COLUMNS:
            self.table.add_column(label, key=key)
        self.watch(self.app, "memory_version", self._memory_changed, init=True)
        self.watch(self.app, "services_version", self._services_changed, init=False)
        self.table.focus()

    def _services_changed(self, _version: int) -> None:
        if self.services.memory is None:  # still opening, or failed: say which
            self.reload()

    def on_screen_resume(self) -> None:
        if self._loaded_version != self.app.memory_version:
            self.reload()

    def _memory_changed(self, _version: int) -> None:
        if self.is_current or self._loaded_version < 0:
            self.reload()

    def reload(self) -> None:
        memory = self.services.memory
        if memory is None:
            self.set_info(self.app.memory_problem() or S.MEMORY_OPENING)
            return
        self._loaded_version = self.app.memory_version
        self._load(self.loader(memory))

    @work(thread=True, exit_on_error=False, group="load", exclusive=True)
    def _load(self, read: Callable[[], Message]) -> None:
        get_current_worker().name = self.LOAD_NAME
        self.post_message(read())

    def loader(self, memory) -> Callable[[], Message]:
        """The work of one load (run in a thread): it returns what it read as a message."""
        raise NotImplementedError

    def fill_table(self, rows: Iterable[tuple[str, ...]]) -> None:
        """Refill the table; a row's first cell is the record id, its key. The cursor stays on
        the record it was on."""
        table = self.table
        keep = self._selected_id()
        table.clear()
        for cells in rows:
            table.add_row(*cells, key=cells[0])
        keep_cursor(table, keep)

    def _selected_id(self) -> int | None:
        return selected_id(self.table)

    def selected_item(self, items: Mapping[int, T], missing: str) -> T | None:
        """The item of the selected row, or None after telling the owner ``missing``."""
        rid = self._selected_id()
        item = items.get(rid) if rid is not None else None
        if item is None:
            self.notify(missing)
        return item
