"""Personas (SPEC §8.6, §8.2, §8.7; issue 13): list, switch, create, edit and delete the personas
Eva runs as. A persona has a name, a persona text, a detail level and a learning toggle; the
active one is what every chat turn runs as (its memories plus global ones). Deleting a persona
turns its memories global and archives its chats (the core does it in one transaction)."""

from __future__ import annotations

from functools import partial

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Label, Select, Static

from core.chat.personas import DEFAULT_ID, Persona
from core.errors import MemoryOpError
from eva_tui.widgets import EvaInput, EvaTextArea, clip
from eva_tui.widgets.base import eva_app
from eva_tui.widgets.modals import HELP, SaveOrCancel

DEFAULT = "default"  # a Select value: follow the configured default
LEVEL_OPTIONS = [
    ("as in settings", DEFAULT),
    ("key events", "key"),
    ("balanced", "balanced"),
    ("detailed", "detailed"),
]
LEARNING_OPTIONS = [("as in settings", DEFAULT), ("learning on", True), ("learning off", False)]


class PersonasChanged(Message):
    """A persona was created, edited, switched to or deleted (``note`` tells the owner)."""

    def __init__(self, note: str, switched: bool = False) -> None:
        super().__init__()
        self.note = note
        self.switched = switched


class PersonaForm(SaveOrCancel[dict | None]):
    """Create or edit a persona. Returns the fields (or None)."""

    BINDINGS = [
        HELP,
        Binding("escape", "cancel", "Cancel", show=False, id="persona_form.cancel"),
        Binding("ctrl+s", "save", "Save", show=False, id="persona_form.save"),
    ]
    DEFAULT_CSS = """
    PersonaForm #persona-text { height: 8; }
    PersonaForm .error, PersonaForm .dim { width: 100%; }
    PersonaForm .fields Select { width: 30; }
    """

    def __init__(self, persona: Persona | None) -> None:
        super().__init__(classes="modal")
        self.persona = persona

    def compose(self) -> ComposeResult:
        p = self.persona
        with Vertical(classes="dialog"):
            yield Label(f"Edit persona “{p.name}”" if p else "New persona", classes="dialog-title")
            yield EvaInput(value=p.name if p else "", placeholder="name", id="persona-name")
            yield Label(
                "Persona text (empty: the configured persona file / Eva's default)", classes="dim"
            )
            yield EvaTextArea((p.text or "") if p else "", id="persona-text", soft_wrap=True)
            with Horizontal(classes="fields"):
                yield Select(
                    LEVEL_OPTIONS,
                    allow_blank=False,
                    compact=True,
                    id="persona-level",
                    value=(p.detail_level if p and p.detail_level else DEFAULT),
                )
                yield Select(
                    LEARNING_OPTIONS,
                    allow_blank=False,
                    compact=True,
                    id="persona-learning",
                    value=(DEFAULT if p is None or p.learning is None else p.learning),
                )
            yield Label("", id="persona-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#persona-name", EvaInput).focus()

    def on_input_submitted(self, event: EvaInput.Submitted) -> None:
        event.stop()
        self.action_save()

    def action_save(self) -> None:
        name = self.query_one("#persona-name", EvaInput).value.strip()
        if not name:
            self.query_one("#persona-error", Label).update("Give the persona a name.")
            return
        level = self.query_one("#persona-level", Select).value
        learning = self.query_one("#persona-learning", Select).value
        self.dismiss(
            {
                "name": name,
                "persona_text": self.query_one("#persona-text", EvaTextArea).text,
                "detail_level": None if level == DEFAULT else level,
                "learning": None if learning == DEFAULT else bool(learning),
            }
        )


class ConfirmDeletePersona(ModalScreen[bool]):
    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", show=False, id="persona_delete.cancel")]

    def __init__(self, persona: Persona, memories: int) -> None:
        super().__init__(classes="modal")
        self.persona = persona
        self.memories = memories

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Delete persona “{self.persona.name}”?", classes="dialog-title")
            yield Static(
                f"Its {self.memories} memor{'y' if self.memories == 1 else 'ies'} become "
                "global (every persona sees them) and its chats go to the archive. "
                "Nothing is lost.",
                classes="record-text",
            )
            with Horizontal(classes="buttons"):
                yield Button("Delete", id="delete", variant="error")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "delete")

    def action_cancel(self) -> None:
        self.dismiss(False)


class PersonasScreen(ModalScreen[None]):
    """The personas, the active one marked; Enter switches to the selected one."""

    BINDINGS = [
        HELP,
        Binding("escape", "close", "Close", id="personas.close"),
        Binding("enter", "switch", "Switch", show=False, id="personas.switch"),
        Binding("n", "new", "New", id="personas.new"),
        Binding("e", "edit", "Edit", id="personas.edit"),
        Binding("d,delete", "delete", "Delete", id="personas.delete"),
    ]
    DEFAULT_CSS = """
    PersonasScreen #personas { height: auto; max-height: 14; }
    PersonasScreen .dim { width: 100%; }
    """

    def __init__(self) -> None:
        super().__init__(classes="modal")
        self.personas: dict[str, Persona] = {}
        self.active: str = DEFAULT_ID

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Personas", classes="dialog-title")
            yield DataTable(id="personas", cursor_type="row", zebra_stripes=True)
            yield Label("", id="personas-info", classes="dim")
            with Horizontal(classes="buttons"):
                yield Button("Switch", id="switch", variant="primary")
                yield Button("New", id="new")
                yield Button("Edit", id="edit")
                yield Button("Delete", id="delete", variant="error")
                yield Button("Close", id="close")

    @property
    def services(self):
        return eva_app(self).services

    def on_mount(self) -> None:
        t = self.query_one("#personas", DataTable)
        t.add_columns("", "name", "id (scope)", "detail", "learning", "memories", "text")
        self.reload()
        t.focus()

    def reload(self) -> None:
        ps = self.services.personas
        if ps is None:
            self.query_one("#personas-info", Label).update("The memory is still opening…")
            return
        stats = self.services.memory.scope_stats()
        active = ps.active()
        self.active = active.id
        t = self.query_one("#personas", DataTable)
        cursor = t.cursor_row
        t.clear()
        self.personas = {}
        for p in ps.list():
            self.personas[p.id] = p
            body, level, learning = self.services.persona_settings(p)
            n, pinned = stats.get(p.id, (0, 0))
            t.add_row(
                "●" if p.id == active.id else "",
                p.name,
                p.id,
                level + ("" if p.detail_level else " (default)"),
                ("on" if learning else "off") + ("" if p.learning is not None else " (default)"),
                f"{n}" + (f" ({pinned} pinned)" if pinned else ""),
                clip(body.replace("\n", " "), 36),
                key=p.id,
            )
        t.move_cursor(row=min(cursor, max(0, t.row_count - 1)))
        g = stats.get("global", (0, 0))
        self.query_one("#personas-info", Label).update(
            f"Active: {active.name}. Each persona sees its own memories and the {g[0]} global "
            "ones. Enter switches · n new · e edit · d delete."
        )

    def _selected(self) -> Persona | None:
        t = self.query_one("#personas", DataTable)
        if not t.row_count:
            return None
        key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        return self.personas.get(str(key))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        getattr(self, f"action_{event.button.id}")()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_switch()

    # ------------------------------------------------------------------ actions
    def action_close(self) -> None:
        self.dismiss(None)

    def action_switch(self) -> None:
        p = self._selected()
        if p is None:
            return
        if p.id == self.active:
            self.notify(f"{p.name} is already the active persona.")
            return
        self._run(
            partial(self.services.switch_persona, p.id),
            f"Eva is now “{p.name}”: her memories plus the global ones.",
            switched=True,
        )

    def action_new(self) -> None:
        def made(fields: dict | None) -> None:
            if fields:
                now = self.services.clock.now()
                self._run(
                    lambda: self.services.personas.create(now=now, **fields),
                    f"Persona “{fields['name']}” created (Enter switches to it).",
                )

        self.app.push_screen(PersonaForm(None), made)

    def action_edit(self) -> None:
        p = self._selected()
        if p is None:
            return

        def edited(fields: dict | None) -> None:
            if fields:
                now = self.services.clock.now()

                def do() -> None:
                    self.services.personas.update(p.id, now, **fields)
                    self.services.refresh_persona()

                self._run(do, f"Persona “{fields['name']}” saved.")

        self.app.push_screen(PersonaForm(p), edited)

    def action_delete(self) -> None:
        p = self._selected()
        if p is None:
            return
        if p.id == DEFAULT_ID:
            self.notify("The default persona cannot be deleted.", severity="warning")
            return
        n = self.services.memory.scope_stats().get(p.id, (0, 0))[0]

        def confirmed(yes: bool | None) -> None:
            if not yes:
                return

            def do() -> None:
                was_active = self.active == p.id
                ids, _chats = self.services.personas.delete(p.id, self.services.memory)
                if was_active:
                    self.services.switch_persona(DEFAULT_ID)
                return ids

            self._run(
                do,
                f"Persona “{p.name}” deleted; its memories are global now.",
                switched=self.active == p.id,
            )

        self.app.push_screen(ConfirmDeletePersona(p, n), confirmed)

    @work(thread=True, exit_on_error=False, group="personas")
    def _run(self, fn, note: str, switched: bool = False) -> None:
        try:
            fn()
        except MemoryOpError as e:
            self.app.call_from_thread(self.notify, str(e), severity="error", timeout=8)
            return
        self.post_message(PersonasChanged(note, switched))

    def on_personas_changed(self, event: PersonasChanged) -> None:
        self.reload()
        self.notify(event.note, timeout=5)
        app = eva_app(self)
        app.memory_changed()
        if event.switched:
            app.persona_switched()
