"""Chats (SPEC §8.9, issue 12): the list of the owner's chats — switch, new, rename, delete (to
the archive, restorable until the archive TTL), restore, clear history.

A modal over the chat screen. It dismisses with True when the chat the screen shows changed
(switched, new, cleared or deleted), so the chat screen reloads its log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Label, Static

from core.chat.chats import Chat
from eva_tui.widgets import EvaInput, ago, clip, in_time
from eva_tui.widgets.base import eva_app
from eva_tui.widgets.modals import HELP
from eva_tui.widgets.tables import selected_id

COLUMNS = (
    ("", "current"),
    ("chat", "label"),
    ("messages", "messages"),
    ("persona", "persona"),
    ("last used", "used"),
)


class ChatsLoaded(Message):
    def __init__(self, chats: list[Chat], current: int | None) -> None:
        super().__init__()
        self.chats = chats
        self.current = current


class ChatsChanged(Message):
    """A worker changed the chats; ``note`` is said to the owner, ``current`` marks that the
    chat on screen changed."""

    def __init__(
        self, note: str, current: bool = False, error: bool = False, close: bool = False
    ) -> None:
        super().__init__()
        self.note = note
        self.current = current
        self.error = error
        self.close = close


class RenameChat(ModalScreen[str | None]):
    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", id="chats.rename_cancel")]

    def __init__(self, chat: Chat) -> None:
        super().__init__(classes="modal")
        self.chat = chat

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Rename chat “{self.chat.label}”", classes="dialog-title", markup=False)
            yield EvaInput(
                value=self.chat.title, placeholder="a name (empty: its first words)", id="title"
            )
            with Horizontal(classes="buttons"):
                yield Button("Rename", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#title", EvaInput).focus()

    def on_input_submitted(self, event: EvaInput.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self.query_one("#title", EvaInput).value if event.button.id == "ok" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmChat(ModalScreen[bool]):
    """Yes/no for deleting or clearing a chat (both go to the archive)."""

    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", id="chats.confirm_cancel")]

    def __init__(self, title: str, body: str, action: str) -> None:
        super().__init__(classes="modal")
        self.title_text, self.body, self.action_label = title, body, action

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield Static(self.body, markup=False, classes="dim")
            with Horizontal(classes="buttons"):
                yield Button(self.action_label, id="ok", variant="error")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "ok")

    def action_cancel(self) -> None:
        self.dismiss(False)


class ChatsScreen(ModalScreen[bool]):
    BINDINGS = [
        HELP,
        Binding("escape", "close", "Close", id="chats.close"),
        Binding("enter", "switch", "Open", id="chats.open", show=True),
        Binding("n", "new", "New", id="chats.new"),
        Binding("r", "rename", "Rename", id="chats.rename"),
        Binding("d,delete", "delete", "Delete", id="chats.delete"),
        Binding("c", "clear", "Clear history", id="chats.clear"),
        Binding("a", "toggle_archived", "Archived", id="chats.archived"),
        Binding("u", "restore", "Restore", id="chats.restore"),
    ]

    def __init__(self, busy: bool = False) -> None:
        super().__init__(classes="modal")
        self.busy = busy  # a turn runs: the chat on screen cannot change now
        self.archived = False
        self.items: dict[int, Chat] = {}
        self.current: int | None = None
        self.changed = False

    @property
    def conversation(self) -> Any:
        return eva_app(self).services.conversation

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog chats-dialog"):
            yield Label("Chats", classes="dialog-title", id="chats-title")
            yield DataTable(id="chats", cursor_type="row", zebra_stripes=True)
            yield Static("", markup=False, id="chats-info", classes="dim")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#chats", DataTable)
        for label, key in COLUMNS:
            table.add_column(label, key=key)
        table.focus()
        self.reload()

    # ------------------------------------------------------------------ loading
    def reload(self) -> None:
        if self.conversation is None:
            self.query_one("#chats-info", Static).update(
                "Chats are available once the chat model is loaded."
            )
            return
        self._load(self.archived)

    @work(thread=True, exit_on_error=False, name="loading the chats", group="chats", exclusive=True)
    def _load(self, archived: bool) -> None:
        conv = self.conversation
        self.post_message(ChatsLoaded(conv.chats.list(archived=archived), conv.chat_id))

    def on_chats_loaded(self, event: ChatsLoaded) -> None:
        table = self.query_one("#chats", DataTable)
        keep = self._selected_id()
        table.clear()
        now = eva_app(self).services.clock.now()
        self.items = {c.id: c for c in event.chats}
        self.current = event.current
        for c in event.chats:
            used = (
                in_time(c.archived_at + self._ttl(), now)
                if c.archived_at is not None
                else ago(c.updated_at, now)
            )
            table.add_row(
                "▶" if c.id == event.current else "",
                clip(c.label, 40),
                str(c.messages),
                c.persona,
                used,
                key=str(c.id),
            )
        if keep is not None and str(keep) in table.rows:
            table.move_cursor(row=table.get_row_index(str(keep)))
        elif event.current is not None and str(event.current) in table.rows:
            table.move_cursor(row=table.get_row_index(str(event.current)))
        n = len(event.chats)
        title = "Archived chats" if self.archived else "Chats"
        self.query_one("#chats-title", Label).update(title)
        if self.archived:
            info = (
                f"{n} deleted chat{'s' if n != 1 else ''}; u restores one; each is kept "
                f"{self._ttl() / 86_400:g} days, then purged. a: back to the chats."
                if n
                else "No deleted chats."
            )
        else:
            info = (
                f"{n} chat{'s' if n != 1 else ''}. Enter opens · n new · r rename · d delete "
                "(to the archive) · c clear history · a archived"
            )
        self.query_one("#chats-info", Static).update(info)

    def _ttl(self) -> float:
        mem = eva_app(self).services.memory
        return mem.config.archive_ttl_seconds if mem is not None else 30 * 86_400.0

    def _selected_id(self) -> int | None:
        return selected_id(self.query_one("#chats", DataTable))

    def _selected(self) -> Chat | None:
        cid = self._selected_id()
        if cid is None or cid not in self.items:
            self.notify("Select a chat first.")
            return None
        return self.items[cid]

    # ------------------------------------------------------------------ actions
    def _refuse_busy(self) -> bool:
        busy = self.busy and eva_app(self).generating  # live: the turn may end while this is open
        if busy:
            self.notify(
                "Eva is answering in this chat; wait for her (or Esc to stop her) "
                "before changing chats.",
                severity="warning",
            )
        return busy

    @work(thread=True, exit_on_error=False, name="changing the chats", group="chats-write")
    def _do(self, fn: Callable[[], tuple[str, bool]], close: bool = False) -> None:
        """Run one change of the chats in a worker; ``close`` dismisses the list after it."""
        try:
            note, current = fn()
        except ValueError as e:  # MemoryOpError: a clear reason, nothing changed
            self.post_message(ChatsChanged(str(e).capitalize() + ".", error=True))
            return
        self.post_message(ChatsChanged(note, current, close=close))

    def on_chats_changed(self, event: ChatsChanged) -> None:
        if event.current:
            self.changed = True
        if event.note:
            self.notify(event.note, severity="error" if event.error else "information", timeout=5)
        if event.close and not event.error:
            self.dismiss(True)
            return
        self.reload()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_switch()

    def action_switch(self) -> None:
        if self.archived:
            self.action_restore()
            return
        chat = self._selected()
        if chat is None:
            return
        if chat.id == self.current:
            self.dismiss(self.changed)
            return
        if self._refuse_busy():
            return
        conv = self.conversation
        self._do(lambda: (f"Opened “{conv.switch_chat(chat.id).label}”.", True), close=True)

    def action_new(self) -> None:
        if self.conversation is None or self._refuse_busy():
            return
        conv = self.conversation
        self._do(lambda: (f"Started a new chat (#{conv.new_chat().id}).", True), close=True)

    def _live_selected(self, *, emptying: bool = False) -> Chat | None:
        """The selected live chat a rename, delete or clear acts on; None when no chat is
        selected, the archive is shown, or, for a delete or a clear (``emptying``), it is the
        open chat while Eva answers in it (the owner is told why)."""
        chat = self._selected()
        if chat is None or self.archived:
            return None
        if emptying and chat.id == self.current and self._refuse_busy():
            return None
        return chat

    def _confirm(
        self, title: str, body: str, action: str, change: Callable[[], tuple[str, bool]]
    ) -> None:
        """Ask before a change that moves messages to the archive; ``change`` runs on yes."""

        def done(ok: bool | None) -> None:
            if ok:
                self._do(change)

        self.app.push_screen(ConfirmChat(title, body, action), done)

    def action_rename(self) -> None:
        chat = self._live_selected()
        if chat is None:
            return
        conv = self.conversation

        def done(title: str | None) -> None:
            if title is not None:
                self._do(
                    lambda: (f"Renamed to “{conv.chats.rename(chat.id, title).label}”.", False)
                )

        self.app.push_screen(RenameChat(chat), done)

    def action_delete(self) -> None:
        chat = self._live_selected(emptying=True)
        if chat is None:
            return
        conv = self.conversation
        days = self._ttl() / 86_400
        self._confirm(
            f"Delete “{chat.label}”?",
            f"The chat, its {chat.messages} messages and its summaries move to the archive; "
            f"you can restore them for {days:g} days (a: archived chats, u: restore).",
            "Delete",
            lambda: (
                f"“{conv.delete_chat(chat.id).label}” moved to the archive "
                f"(restorable for {days:g} days).",
                chat.id == self.current,
            ),
        )

    def action_clear(self) -> None:
        chat = self._live_selected(emptying=True)
        if chat is None:
            return
        conv = self.conversation

        def clear() -> tuple[str, bool]:
            if chat.id == conv.chat_id:
                n = conv.clear_chat()
            else:
                n = conv.chats.clear(chat.id, conv.clock.now())
            return f"Cleared {n} messages of “{chat.label}” (to the archive).", (
                chat.id == self.current
            )

        self._confirm(
            f"Clear the history of “{chat.label}”?",
            f"Its {chat.messages} messages and its summaries move to the archive; the chat "
            "stays, empty. What Eva saved in her memory stays.",
            "Clear",
            clear,
        )

    def action_toggle_archived(self) -> None:
        self.archived = not self.archived
        self.reload()

    def action_restore(self) -> None:
        if not self.archived:
            self.notify("Restore works on archived chats: press a to see them.")
            return
        chat = self._selected()
        if chat is None:
            return
        conv = self.conversation
        self._do(lambda: (f"Restored “{conv.chats.restore(chat.id).label}”.", False))

    def action_close(self) -> None:
        self.dismiss(self.changed)
