"""The memory browser (SPEC §2, §9): live records with search, filters and sort; edit, toggle
private, pin, forget. Search is :func:`eva_tui.search.search_records` (by meaning, then by words
in any letter case), the same as the command palette's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Input, Select

from core.privacy import OWNER_TRUSTED
from core.store.records import Record
from eva_tui import strings as S
from eva_tui.search import search_records
from eva_tui.widgets import EvaInput, NavBar, PaletteCommand, age, clip
from eva_tui.widgets.tables import RecordTableScreen

ANY = "any"
KIND_FILTER = [(S.FILTER_ANY_KIND, ANY), ("core", "core"), ("fact", "fact"), ("event", "event")]
IMPORTANCE_FILTER = [(S.importance_at_least(1), ANY)] + [
    (S.importance_at_least(i), i) for i in range(2, 6)
]
PRIVATE_FILTER = list(zip(S.FILTER_PRIVATE, (ANY, True, False), strict=True))
PINNED_FILTER = list(zip(S.FILTER_PINNED, (ANY, True, False), strict=True))
SORTS = [
    (S.SORTS[key], key) for key in ("relevance", "updated", "created", "importance", "id", "age")
]
COLUMNS = tuple(
    (S.COLUMNS[key], key)
    for key in ("id", "kind", "importance", "age", "private", "pinned", "scope", "content")
)
LIMIT = 2000


@dataclass(frozen=True)
class Query:
    text: str = ""
    kind: object = ANY
    importance: str | int = ANY
    private: object = ANY
    pinned: object = ANY
    scope: object = ANY
    sort: str = "relevance"  # relevance when searching, else most recently updated first


class RecordsLoaded(Message):
    def __init__(self, query: Query, records: list[Record], scopes: list[str]) -> None:
        super().__init__()
        self.query = query
        self.records = records
        self.scopes = scopes


def load_records(memory, q: Query) -> list[Record]:
    """The records a query shows, in order. Pure reads (recall reinforces nothing)."""
    if q.text.strip():  # the one search, shared with the command palette (issue 16)
        records = search_records(memory, q.text, limit=500)
        records = [r for r in records if _matches(r, q, server_side=False)]
    else:
        records = memory.list(
            OWNER_TRUSTED,
            kind=None if q.kind == ANY else q.kind,
            private=None if q.private == ANY else bool(q.private),
            pinned=None if q.pinned == ANY else bool(q.pinned),
            scope=None if q.scope == ANY else str(q.scope),
            order=q.sort if q.sort in ("updated", "created", "importance", "id") else "updated",
            limit=LIMIT,
        )
        records = [r for r in records if _matches(r, q, server_side=True)]
    if q.sort == "age":
        records.sort(key=lambda r: -r.recalled_at)
    elif q.sort != "relevance" and q.text.strip():
        key = {
            "updated": lambda r: -r.updated_at,
            "created": lambda r: -r.created_at,
            "importance": lambda r: (-r.importance, -r.updated_at),
            "id": lambda r: r.id,
        }
        records.sort(key=key.get(q.sort, key["updated"]))
    return records


def _matches(r: Record, q: Query, server_side: bool) -> bool:
    if q.importance != ANY and r.importance < int(q.importance):
        return False
    if server_side:
        return True
    return (
        (q.kind == ANY or r.kind.value == q.kind)
        and (q.private == ANY or r.private == bool(q.private))
        and (q.pinned == ANY or r.pinned == bool(q.pinned))
        and (q.scope == ANY or r.scope == q.scope)
    )


class MemoriesScreen(RecordTableScreen):
    BINDINGS = [
        Binding("slash", "focus_search", "Search", id="memories.search"),
        Binding("e", "edit", "Edit", id="memories.edit"),
        Binding("v", "private", "Private", id="memories.private"),
        Binding("p", "pin", "Pin", id="memories.pin"),
        Binding("d,delete", "forget", "Forget", id="memories.forget"),
        Binding("c", "copy", "Copy", id="memories.copy"),
        Binding("o", "open", "Open", show=False, id="memories.open"),
        Binding("m", "move", "Scope", show=False, id="memories.move"),
        Binding("a", "add", "Add", show=False, id="memories.add"),
    ]
    TABLE_ID = "records"
    INFO_ID = "records-info"
    COLUMNS = COLUMNS
    LOAD_NAME = "loading memories"

    def __init__(self) -> None:
        super().__init__()
        self.query_state = Query()
        self.records: dict[int, Record] = {}
        self.scopes: list[str] = ["global"]

    def compose(self) -> ComposeResult:
        yield NavBar("memories")
        yield EvaInput(placeholder=S.SEARCH_PLACEHOLDER, id="search")
        with Horizontal(id="filters"):
            yield Select(KIND_FILTER, value=ANY, allow_blank=False, id="f-kind", compact=True)
            yield Select(
                IMPORTANCE_FILTER, value=ANY, allow_blank=False, id="f-importance", compact=True
            )
            yield Select(PRIVATE_FILTER, value=ANY, allow_blank=False, id="f-private", compact=True)
            yield Select(PINNED_FILTER, value=ANY, allow_blank=False, id="f-pinned", compact=True)
            yield Select(
                [(S.FILTER_ANY_SCOPE, ANY), ("global", "global")],
                value=ANY,
                allow_blank=False,
                id="f-scope",
                compact=True,
            )
            yield Select(SORTS, value="relevance", allow_blank=False, id="f-sort", compact=True)
        yield from self.compose_table()

    # ------------------------------------------------------------------ loading
    def loader(self, memory) -> Callable[[], RecordsLoaded]:
        q = self.query_state

        def read() -> RecordsLoaded:
            records = load_records(memory, q)
            scopes = sorted({r.scope for r in records} | {"global"})
            return RecordsLoaded(q, records, scopes)

        return read

    def on_records_loaded(self, event: RecordsLoaded) -> None:
        if event.query != self.query_state:
            return  # a newer query is on its way
        now = self.services.clock.now()
        self.records = {r.id: r for r in event.records}
        width = max(20, self.size.width - 52)
        self.fill_table(
            (
                str(r.id),
                r.kind.value,
                str(r.importance),
                age(now - r.recalled_at),
                "yes" if r.private else "",
                "yes" if r.pinned else "",
                r.scope,
                clip(r.content, width),
            )
            for r in event.records
        )
        n = len(event.records)
        what = S.records_count(n)
        if event.query.text.strip():
            what = S.records_for(what, event.query.text.strip())
        if n >= LIMIT:
            what = S.records_first(what, LIMIT)
        if not n and not event.query.text.strip() and event.query == Query(sort=event.query.sort):
            what = S.NO_MEMORIES
        self.set_info(what)
        self._update_scopes(event.scopes)

    def _update_scopes(self, scopes: list[str]) -> None:
        if set(scopes) <= set(self.scopes):
            return
        self.scopes = sorted(set(self.scopes) | set(scopes))
        sel = self.query_one("#f-scope", Select)
        value = sel.value
        with self.prevent(Select.Changed):
            sel.set_options([(S.FILTER_ANY_SCOPE, ANY)] + [(s, s) for s in self.scopes])
            sel.value = value if value in self.scopes else ANY

    # ------------------------------------------------------------------ filters and search
    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "search":
            event.stop()
            self._set_query(text=event.value)
            self.table.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "search" and not event.value.strip() and self.query_state.text:
            self._set_query(text="")

    def on_select_changed(self, event: Select.Changed) -> None:
        field = {
            "f-kind": "kind",
            "f-importance": "importance",
            "f-private": "private",
            "f-pinned": "pinned",
            "f-scope": "scope",
            "f-sort": "sort",
        }.get(event.select.id or "")
        if field:
            event.stop()
            self._set_query(**{field: event.value})

    def _set_query(self, **changes) -> None:
        self.query_state = replace(self.query_state, **changes)
        self.reload()

    def action_focus_search(self) -> None:
        self.query_one("#search", EvaInput).focus()

    def key_escape(self) -> None:
        if self.focused is not self.table:
            self.table.focus()

    # ------------------------------------------------------------------ record actions
    def _selected(self) -> Record | None:
        return self.selected_item(self.records, S.SELECT_MEMORY)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_edit()

    def action_open(self) -> None:
        if rec := self._selected():
            self.open_record(rec.id)

    def action_edit(self) -> None:
        if rec := self._selected():
            self.edit_record(rec)

    def action_private(self) -> None:
        if rec := self._selected():
            self.toggle_private(rec)

    def action_pin(self) -> None:
        if rec := self._selected():
            self.toggle_pin(rec)

    def action_forget(self) -> None:
        if rec := self._selected():
            self.forget_record(rec)

    def action_copy(self) -> None:
        if rec := self._selected():
            self.app.copy_text(rec.content, f"memory #{rec.id}")

    def action_move(self) -> None:
        """Move the selected memory to global or a persona's scope (issue 13, §8.6)."""
        from screens.owner import move_to_scope

        if rec := self._selected():
            move_to_scope(self.app, rec)

    def action_add(self) -> None:
        from screens.owner import add_memory

        add_memory(self.app)

    def commands(self) -> list[PaletteCommand]:
        c = S.CMD_MEMORIES
        return [
            PaletteCommand(*c["move"], self.action_move),
            PaletteCommand(*c["search"], self.action_focus_search),
            PaletteCommand(*c["edit"], self.action_edit),
            PaletteCommand(*c["private"], self.action_private),
            PaletteCommand(*c["pin"], self.action_pin),
            PaletteCommand(*c["forget"], self.action_forget),
            PaletteCommand(*c["copy"], self.action_copy),
            PaletteCommand(*c["open"], self.action_open),
            PaletteCommand(*c["reload"], self.reload),
        ]
