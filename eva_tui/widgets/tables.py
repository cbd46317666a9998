"""DataTable helpers shared by the record screens."""

from __future__ import annotations

from textual.widgets import DataTable


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
