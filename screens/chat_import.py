"""Import chats in the TUI (issue 28 item 7): the owner gives a file, Eva names its format and
shows what it holds — chats, message counts, days, what will be skipped — before anything is
written; Import writes it in one transaction (:meth:`core.chat.chats.Chats.import_chats`). Then Eva
offers to draft memories from the imported messages in batches of 20, through the
save-from-dialogue dialog: the owner keeps, edits or drops each draft, and nothing is saved
unless she keeps it.

Reading, checking and writing run in thread workers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, Static

from core.chat import imports as chat_import
from core.chat.chats import Chat, Chats
from core.chat.drafts import MAX_MESSAGES
from core.chat.transcript import StoredMessage, Transcript
from core.errors import MemoryOpError
from eva_tui.widgets import EvaInput, clip
from eva_tui.widgets.base import eva_app
from eva_tui.widgets.modals import HELP

PREVIEW_ROWS = 200  # chats listed in the preview at most (the counts cover all)


def summary_lines(plan: chat_import.ImportPlan) -> list[str]:
    """What a checked import holds, in the owner's words (the CLI says the same)."""
    return [f"{line}." for line in chat_import.import_summary(plan)]


class Checked(Message):
    def __init__(self, plan: chat_import.ImportPlan | None, error: str = "") -> None:
        super().__init__()
        self.plan = plan
        self.error = error


class Written(Message):
    def __init__(self, ids: list[int], moved: int, error: str = "") -> None:
        super().__init__()
        self.ids = ids
        self.moved = moved
        self.error = error


class ImportChatsScreen(ModalScreen[list[int] | None]):
    """A file → its preview → Import (or Cancel). Dismisses with the new chat ids."""

    BINDINGS = [
        HELP,
        Binding("escape", "close", "Cancel", id="import.close"),
        Binding("ctrl+l", "check", "Check file", show=False, id="import.check"),
        Binding("ctrl+s", "write", "Import", show=False, id="import.write"),
    ]
    DEFAULT_CSS = """
    ImportChatsScreen .import-dialog { height: auto; max-height: 100%; max-width: 110; }
    ImportChatsScreen #import-path-row { height: auto; margin-top: 1; }
    ImportChatsScreen #import-path { width: 1fr; }
    ImportChatsScreen #import-summary { height: auto; }
    ImportChatsScreen #import-chats { height: auto; max-height: 12; }
    ImportChatsScreen #import-error { height: auto; max-height: 8; color: $error; }
    """

    def __init__(self, path: str = "") -> None:
        super().__init__(classes="modal")
        self.initial = path
        self.plan: chat_import.ImportPlan | None = None
        self.checked_path = ""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog import-dialog"):
            yield Label("Import chats", classes="dialog-title")
            yield Static(
                "Eva reads her own chat export, ChatGPT's conversations.json and a "
                "SillyTavern chat .jsonl. Nothing is written until you press Import.",
                markup=False,
                classes="dim",
            )
            with Horizontal(id="import-path-row"):
                yield EvaInput(
                    value=self.initial,
                    id="import-path",
                    placeholder="path to the file, e.g. ~/Downloads/conversations.json",
                )
                yield Button("Check", id="import-check")
            yield Static("", id="import-summary", markup=False)
            yield DataTable(id="import-chats", cursor_type="row", zebra_stripes=True)
            yield Static("", id="import-error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Import", id="import-write", variant="primary", disabled=True)
                yield Button("Cancel", id="import-cancel")

    def on_mount(self) -> None:
        table = self.query_one("#import-chats", DataTable)
        for label in ("chat", "messages", "days"):
            table.add_column(label, key=label)
        table.display = False
        self.query_one("#import-path", EvaInput).focus()
        if self.initial.strip():
            self.action_check()

    # ------------------------------------------------------------------ checking
    @on(Input.Submitted, "#import-path")
    def _on_path_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_check()

    @on(Input.Changed, "#import-path")
    def _on_path_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != self.checked_path:  # another file: check it before importing
            self.query_one("#import-write", Button).disabled = True

    def action_check(self) -> None:
        path = self.query_one("#import-path", EvaInput).value.strip()
        if not path:
            self._show_error("Give the path of the file to import.")
            return
        self._show_error("")
        self.query_one("#import-summary", Static).update("Reading and checking every line…")
        self.checked_path = path
        self._check_file(path, eva_app(self).services.clock.now())

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="chat-import",
        name="checking the import file",
    )
    def _check_file(self, path: str, now: float) -> None:
        try:
            self.post_message(Checked(chat_import.parse_file(Path(path).expanduser(), now)))
        except chat_import.ChatImportRefused as e:
            lines = [
                "Nothing will be imported"
                + (f" ({chat_import.FORMAT_NAMES[e.format]})" if e.format else "")
                + ":"
            ]
            lines += [f"  {w}: {why}" if w else f"  {why}" for w, why in e.problems]
            if e.total > len(e.problems):
                lines.append(f"  … and {e.total - len(e.problems)} more bad lines")
            self.post_message(Checked(None, "\n".join(lines)))
        except MemoryOpError as e:
            self.post_message(Checked(None, str(e)))

    def on_checked(self, event: Checked) -> None:
        self.plan = event.plan
        table = self.query_one("#import-chats", DataTable)
        table.clear()
        button = self.query_one("#import-write", Button)
        if event.plan is None:
            self.query_one("#import-summary", Static).update("")
            table.display = False
            button.disabled = True
            self._show_error(event.error)
            return
        plan = event.plan
        self.query_one("#import-summary", Static).update("\n".join(summary_lines(plan)))
        for k, c in enumerate(plan.chats[:PREVIEW_ROWS]):
            table.add_row(
                clip(c.title or "(untitled)", 50),
                str(len(c.messages)),
                chat_import.day_span(c.created_at, c.updated_at),
                key=str(k),
            )
        table.display = bool(plan.chats)
        if len(plan.chats) > PREVIEW_ROWS:
            self._show_error(
                f"… and {len(plan.chats) - PREVIEW_ROWS} more chats (all are imported)."
            )
        button.disabled = not plan.chats
        if plan.chats:
            button.label = f"Import {len(plan.chats)} chat{'s' if len(plan.chats) != 1 else ''}"
            button.focus()

    def _show_error(self, text: str) -> None:
        self.query_one("#import-error", Static).update(text)

    # ------------------------------------------------------------------ writing
    def action_write(self) -> None:
        button = self.query_one("#import-write", Button)
        if self.plan is None or not self.plan.chats or button.disabled:
            return
        button.disabled = True
        button.label = "Importing…"
        self._write_plan(self.plan, eva_app(self).services.clock.now())

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="chat-import-write",
        name="importing chats",
    )
    def _write_plan(self, plan: chat_import.ImportPlan, now: float) -> None:
        memory = eva_app(self).services.memory
        assert memory is not None, "the import dialog opens only once the memory is open"
        try:
            ids, moved = memory.attach(Chats).import_chats(plan.chats, plan.format, now)
        except (MemoryOpError, OSError) as e:
            self.post_message(Written([], 0, str(e)))
            return
        self.post_message(Written(ids, moved))

    def on_written(self, event: Written) -> None:
        if event.error:
            self._show_error(f"Nothing was imported: {event.error}")
            self.query_one("#import-write", Button).label = "Import"
            self.query_one("#import-write", Button).disabled = False
            return
        self.dismiss(event.ids)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "import-check":
            self.action_check()
        elif event.button.id == "import-write":
            self.action_write()
        else:
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


# ---------------------------------------------------------------------------- review in batches
class ReviewOffer(ModalScreen[str | None]):
    """One batch of an imported chat, offered for drafting: "draft", "skip", "stop" or None
    (later: the place is kept)."""

    BINDINGS = [HELP, Binding("escape", "later", "Later", id="review.later")]

    def __init__(self, chat: Chat, batch: list[StoredMessage], chats: int) -> None:
        super().__init__(classes="modal")
        # (not ``self.batch``: that is Textual's own batch() of every widget, which a recompose
        # of the screen calls)
        self.chat, self.messages, self.chats = chat, batch, chats

    def compose(self) -> ComposeResult:
        n = len(self.messages)
        with Vertical(classes="dialog"):
            yield Label("Memories from imported chats", classes="dialog-title")
            yield Static(
                f"“{self.chat.label}” ({self.chat.messages} messages): the next {n} "
                f"message{'s' if n != 1 else ''} not yet reviewed"
                + (f" ({self.chats} imported chats wait in all)" if self.chats > 1 else "")
                + ". Eva drafts memories from them; you keep, edit or drop each draft. "
                "Nothing is saved unless you keep it.",
                markup=False,
            )
            yield Static(
                "\n".join(
                    f"{'You' if m.role == 'user' else 'Eva'}: "
                    f"{clip(' '.join(m.content.split()), 70)}"
                    for m in self.messages[:4]
                )
                + ("\n…" if n > 4 else ""),
                markup=False,
                classes="dim",
            )
            with Horizontal(classes="buttons"):
                yield Button("Draft from these", id="draft", variant="primary")
                yield Button("Skip these", id="skip")
                yield Button("Stop for this chat", id="stop")
                yield Button("Later", id="later")

    def on_mount(self) -> None:
        self.query_one("#draft", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None if event.button.id == "later" else event.button.id)

    def action_later(self) -> None:
        self.dismiss(None)


def offer_review(app, open_drafts: Callable[[list[StoredMessage], Callable], None]) -> bool:
    """Offer the next batch of imported messages for drafting (issue 28 item 7). Returns
    False when nothing waits. ``open_drafts(batch, done)`` opens the save-from-dialogue dialog
    over the batch and calls ``done`` when it closes."""
    memory = app.services.memory
    if memory is None:
        return False
    chats, tr = memory.attach(Chats), memory.attach(Transcript)
    waiting = chats.to_review()
    for chat in waiting:
        batch = tr.page(chat.id, after=chat.review_from - 1, limit=MAX_MESSAGES)
        if not batch:
            chats.stop_review(chat.id)
            continue

        def next_batch(
            _result: object = None, chat: Chat = chat, batch: list[StoredMessage] = batch
        ) -> None:
            chats.reviewed(chat.id, batch[-1].id)
            offer_review(app, open_drafts)

        def chosen(
            choice: str | None, chat: Chat = chat, batch: list[StoredMessage] = batch
        ) -> None:
            if choice == "draft":
                open_drafts(batch, next_batch)
            elif choice == "skip":
                next_batch()
            elif choice == "stop":
                chats.stop_review(chat.id)
                offer_review(app, open_drafts)

        app.push_screen(ReviewOffer(chat, batch, len(waiting)), chosen)
        return True
    return False
