"""Editing a message of the chat (SPEC §8.12, issue 28 item 5): the owner's own or one of Eva's
answers, in a box of several lines; Ctrl+S saves, Esc cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Footer, Label

from eva_tui import strings as S
from eva_tui.widgets.inputs import EvaTextArea
from eva_tui.widgets.modals import HELP, SaveOrCancel


class EditMessage(SaveOrCancel[str | None]):
    """Returns the new text (stripped, not empty, within ``max_chars``), or None."""

    HELP_NAME = "editing a message"
    BINDINGS = [
        Binding("escape", "cancel", S.BTN_CANCEL, id="message_edit.cancel"),
        Binding("ctrl+s", "save", S.BTN_SAVE, id="message_edit.save"),
        HELP,
    ]

    def __init__(self, text: str, mine: bool, max_chars: int) -> None:
        super().__init__(classes="modal")
        self.text = text
        self.mine = mine
        self.max_chars = max_chars

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="message-edit-dialog"):
            yield Label(S.edit_message_title(self.mine), classes="dialog-title")
            yield EvaTextArea(self.text, id="message-text", soft_wrap=True)
            yield Label("", id="message-edit-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button(S.BTN_SAVE, id="save", variant="primary")
                yield Button(S.BTN_CANCEL, id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        area = self.query_one("#message-text", EvaTextArea)
        area.focus()
        area.move_cursor(area.document.end)

    def action_save(self) -> None:
        text = self.query_one("#message-text", EvaTextArea).text.strip()
        error = self.query_one("#message-edit-error", Label)
        if not text:
            error.update(S.MESSAGE_EMPTY)
            return
        if len(text) > self.max_chars:
            error.update(S.too_long(len(text), self.max_chars))
            return
        self.dismiss(text if text != self.text else None)
