"""The owner's dialogs over memory (issue 13): add a memory by hand (checked like any save: the
record it would reinforce is shown first, the similar ones after), move one to another scope
(SPEC §8.6), and clear all of a scope (§8.8: unpinned ones to the archive; pinned ones only after
a second, explicit confirmation)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, Static

from core.errors import MemoryOpError
from core.memory.facade import Memory
from core.store.records import GLOBAL_SCOPE, Record
from eva_tui import strings as S
from eva_tui.widgets import EvaTextArea, clip
from eva_tui.widgets.modals import (
    HELP,
    IMPORTANCE_OPTIONS,
    KIND_OPTIONS,
    SaveOrCancel,
    scope_field,
)

PRIVATE_OPTIONS = [("not private", False), ("private", True)]


def scope_options(memory: Memory | None, personas) -> list[tuple[str, str]]:
    """Global, every persona (by name), and any other scope records use."""
    out: list[tuple[str, str]] = [("global", GLOBAL_SCOPE)]
    seen = {GLOBAL_SCOPE}
    for p in personas.list() if personas is not None else []:
        out.append((f"{p.name} ({p.id})", p.id))
        seen.add(p.id)
    if memory is not None:
        for scope in sorted(memory.scope_stats()):
            if scope not in seen:
                out.append((scope, scope))
                seen.add(scope)
    return out


DIALOG_CSS = """
#scope { width: 40; }
.error, .dim, .record-text { width: 100%; }
"""


class AddMemory(SaveOrCancel[dict | None]):
    """Content, kind, importance, private and scope. Save first checks dedup: when a save would
    reinforce an existing record, the dialog shows it and a second Save goes ahead."""

    DEFAULT_CSS = DIALOG_CSS

    BINDINGS = [
        HELP,
        Binding("escape", "cancel", "Cancel", show=False, id="add.cancel"),
        Binding("ctrl+s", "save", "Save", show=False, id="add.save"),
    ]

    def __init__(self, memory: Memory, scopes: list[tuple[str, str]], scope: str) -> None:
        super().__init__(classes="modal")
        self.memory = memory
        self.scopes = scopes
        self.scope = scope
        self._acknowledged: tuple[str, str] | None = None  # (content, scope) shown as a dup

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Add a memory", classes="dialog-title")
            yield EvaTextArea("", id="content", soft_wrap=True)
            with Horizontal(classes="fields"):
                yield Select(KIND_OPTIONS, value="fact", allow_blank=False, compact=True, id="kind")
                yield Select(
                    IMPORTANCE_OPTIONS, value=3, allow_blank=False, compact=True, id="importance"
                )
                yield Select(
                    PRIVATE_OPTIONS, value=False, allow_blank=False, compact=True, id="private"
                )
            yield scope_field(self.scopes, self.scope)
            yield Label("", id="add-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#content", EvaTextArea).focus()

    def action_save(self) -> None:
        content = self.query_one("#content", EvaTextArea).text.strip()
        scope = str(self.query_one("#scope", Select).value)
        err = self.query_one("#add-error", Label)
        try:
            dup = self.memory.duplicate_of(content, scope)
        except MemoryOpError as e:
            err.update(str(e).capitalize() + ".")
            return
        if dup is not None and self._acknowledged != (content, scope):
            self._acknowledged = (content, scope)
            err.update(S.nearly_the_same(dup.id, clip(dup.content, 80)))
            return
        self.dismiss(
            {
                "content": content,
                "kind": self.query_one("#kind", Select).value,
                "importance": self.query_one("#importance", Select).value,
                "private": bool(self.query_one("#private", Select).value),
                "scope": scope,
            }
        )


class MoveToScope(ModalScreen[str | None]):
    DEFAULT_CSS = DIALOG_CSS

    """Move a memory to global or a persona's scope. Returns the scope (or None)."""

    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", show=False, id="move.cancel")]

    def __init__(self, record: Record, scopes: list[tuple[str, str]]) -> None:
        super().__init__(classes="modal")
        self.record = record
        self.scopes = scopes

    def compose(self) -> ComposeResult:
        r = self.record
        with Vertical(classes="dialog"):
            yield Label(f"Move memory #{r.id} to another scope", classes="dialog-title")
            yield Static(r.content, markup=False, classes="record-text")
            yield scope_field(
                self.scopes,
                r.scope if any(v == r.scope for _, v in self.scopes) else GLOBAL_SCOPE,
            )
            with Horizontal(classes="buttons"):
                yield Button("Move", id="move", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "move":
            self.dismiss(str(self.query_one("#scope", Select).value))
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ClearAll(ModalScreen[str | None]):
    DEFAULT_CSS = DIALOG_CSS

    """Clear all of one scope (§8.8): its unpinned memories go to the archive (restorable);
    pinned ones stay. Returns the scope (or None)."""

    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", show=False, id="clear.cancel")]

    def __init__(
        self, memory: Memory, scopes: list[tuple[str, str]], scope: str, ttl_days: float
    ) -> None:
        super().__init__(classes="modal")
        self.memory = memory
        self.scopes = scopes
        self.scope = scope
        self.ttl_days = ttl_days

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Clear all memories of a scope", classes="dialog-title")
            yield scope_field(self.scopes, self.scope)
            yield Static("", id="clear-what", classes="record-text")
            with Horizontal(classes="buttons"):
                yield Button("Clear", id="clear", variant="error")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self._describe()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.scope = str(event.value)
        self._describe()

    def counts(self) -> tuple[int, int]:
        return self.memory.scope_stats().get(self.scope, (0, 0))

    def _describe(self) -> None:
        n, pinned = self.counts()
        unpinned = n - pinned
        text = (
            f"{unpinned} unpinned memor{'y' if unpinned == 1 else 'ies'} of “{self.scope}” "
            f"go to the archive (restorable for {self.ttl_days:g} days)."
        )
        if pinned:
            text += (
                f" {pinned} pinned memor{'y stays' if pinned == 1 else 'ies stay'}; "
                "clearing them needs a second confirmation."
            )
        self.query_one("#clear-what", Static).update(text)
        self.query_one("#clear", Button).disabled = n == 0

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self.scope if event.button.id == "clear" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmClearPinned(ModalScreen[bool]):
    """The second, explicit confirmation for the pinned memories of a scope (§8.8)."""

    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", show=False, id="clear_pinned.cancel")]

    def __init__(self, scope: str, pinned: int) -> None:
        super().__init__(classes="modal")
        self.scope = scope
        self.pinned = pinned

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                f"Also clear the {self.pinned} pinned memories of “{self.scope}”?",
                classes="dialog-title",
            )
            yield Static(
                "Pinned memories are your lock: Eva and sleep never touch them. "
                "Clearing them moves them to the archive too.",
                classes="record-text",
            )
            with Horizontal(classes="buttons"):
                yield Button("Keep them", id="keep", variant="primary")
                yield Button(f"Clear {self.pinned} pinned", id="clear-pinned", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "clear-pinned")

    def action_cancel(self) -> None:
        self.dismiss(False)
