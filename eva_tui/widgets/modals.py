"""Modal dialogs: look at a record, edit it, confirm forgetting it."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, Static

from core.records import Kind, Record
from eva_tui.widgets.fmt import ago
from eva_tui.widgets.inputs import EvaInput, EvaTextArea

KIND_OPTIONS = [(k.value, k.value) for k in Kind]
IMPORTANCE_OPTIONS = [
    (f"{i} — {w}", i)
    for i, w in ((1, "trivia"), (2, "minor"), (3, "normal"), (4, "important"), (5, "essential"))
]


def record_text(r: Record, now: float, archived: Any = None) -> Text:
    t = Text()

    def row(k: str, v: str) -> None:
        t.append(f"{k:>14}  ", style="dim")
        t.append(f"{v}\n")

    row("kind", r.kind.value)
    row("importance", str(r.importance))
    row("private", "yes" if r.private else "no")
    row("pinned", "yes" if r.pinned else "no")
    row("scope", r.scope)
    row("created", ago(r.created_at, now))
    row("updated", ago(r.updated_at, now))
    row("last recalled", ago(r.last_access_at, now))
    row("reinforced", f"{r.access_count}×")
    row("source", r.source.value + (f" (turn {r.source_turn[:8]})" if r.source_turn else ""))
    row("vector", r.vector_model or "none")
    if archived is not None:
        row("forgotten by", archived.archived_by)
        row("why", archived.why)
        row("when", ago(archived.archived_at, now))
    t.append("\n")
    t.append(r.content)
    return t


class RecordView(ModalScreen[str | None]):
    """One record in full. Returns the action the owner picked (or None)."""

    BINDINGS = [
        Binding("escape", "dismiss_none", "Close", id="record.close"),
        Binding("e", "pick('edit')", "Edit", id="record.edit"),
        Binding("v", "pick('private')", "Private", id="record.private"),
        Binding("p", "pick('pin')", "Pin", id="record.pin"),
        Binding("d,delete", "pick('forget')", "Forget", id="record.forget"),
        Binding("c", "pick('copy')", "Copy", id="record.copy"),
    ]

    def __init__(self, record: Record, now: float, archived: Any = None) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.now = now
        self.archived = archived

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog"):
            yield Label(
                f"Memory #{r.id}" + (" (archived)" if self.archived else ""), classes="dialog-title"
            )
            yield Static(record_text(r, self.now, self.archived), classes="record-text")
            with Horizontal(classes="buttons"):
                if self.archived is not None:
                    yield Button("Restore", id="restore", variant="primary")
                else:
                    yield Button("Edit", id="edit", variant="primary")
                    yield Button("Unmark private" if r.private else "Mark private", id="private")
                    yield Button("Unpin" if r.pinned else "Pin", id="pin")
                    yield Button("Forget", id="forget", variant="error")
                yield Button("Copy", id="copy")
                yield Button("Close", id="close")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None if event.button.id == "close" else event.button.id)

    def action_pick(self, what: str) -> None:
        if self.archived is not None and what not in ("copy",):
            return
        self.dismiss(what)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class EditRecord(ModalScreen[dict | None]):
    """Edit content, kind and importance. Returns the changed fields (or None)."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="edit.cancel"),
        Binding("ctrl+s", "save", "Save", id="edit.save"),
    ]

    def __init__(self, record: Record, max_chars: int) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.max_chars = max_chars

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog"):
            yield Label(f"Edit memory #{r.id}", classes="dialog-title")
            yield EvaTextArea(r.content, id="content", soft_wrap=True)
            with Horizontal(classes="fields"):
                yield Label("kind", classes="field-label")
                yield Select(KIND_OPTIONS, value=r.kind.value, allow_blank=False, id="kind")
                yield Label("importance", classes="field-label")
                yield Select(
                    IMPORTANCE_OPTIONS, value=r.importance, allow_blank=False, id="importance"
                )
            yield Label("", id="edit-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#content", EvaTextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_save(self) -> None:
        content = self.query_one("#content", EvaTextArea).text.strip()
        if not content:
            self.query_one("#edit-error", Label).update("The content is empty.")
            return
        if len(content) > self.max_chars:
            self.query_one("#edit-error", Label).update(
                f"{len(content)} characters; the limit is {self.max_chars}. "
                "Keep one topic per memory."
            )
            return
        r = self.record
        changes: dict[str, Any] = {}
        if content != r.content:
            changes["content"] = content
        kind = self.query_one("#kind", Select).value
        if kind != r.kind.value:
            changes["kind"] = kind
        imp = self.query_one("#importance", Select).value
        if imp != r.importance:
            changes["importance"] = imp
        self.dismiss(changes)


class ConfirmForget(ModalScreen[str | None]):
    """Forgetting moves the record to the archive; the owner says why. Returns the why."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="forget.cancel")]

    def __init__(self, record: Record, ttl_days: float) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.ttl_days = ttl_days

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog"):
            yield Label(f"Forget memory #{r.id}?", classes="dialog-title")
            yield Static(r.content, markup=False, classes="record-text")
            yield Label(
                f"It moves to the archive and can be restored for {self.ttl_days:g} days.",
                classes="dim",
            )
            yield EvaInput(value="no longer true", placeholder="why", id="why")
            yield Label("", id="forget-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Forget", id="forget", variant="error")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#why", EvaInput).focus()

    def on_input_submitted(self, event: EvaInput.Submitted) -> None:
        event.stop()
        self._confirm()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "forget":
            self._confirm()
        else:
            self.action_cancel()

    def _confirm(self) -> None:
        why = self.query_one("#why", EvaInput).value.strip()
        if not why:
            self.query_one("#forget-error", Label).update("Say why (it is kept with the record).")
            return
        self.dismiss(why)

    def action_cancel(self) -> None:
        self.dismiss(None)
