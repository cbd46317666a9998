"""The summary panel (SPEC §8.3, issue 12): the rolling summaries of the current chat — each with
its tier, status, the messages it covers, its prose and its verbatim list — how many messages
that left the window are not summarised yet, edit one, and rebuild them all in the background
(resumable: the work is kept in the store step by step; the panel says when it is done or
failed)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Label, Static

from core.chat.summaries import TIER_NAMES, Summary
from core.chat.summarizer import Progress
from eva_tui.widgets import EvaTextArea, clip
from eva_tui.widgets.base import eva_app
from eva_tui.widgets.modals import HELP, SaveOrCancel
from eva_tui.widgets.tables import keep_cursor, selected_id

COLUMNS = (
    ("id", "id"),
    ("tier", "tier"),
    ("status", "status"),
    ("messages", "covers"),
    ("summary", "prose"),
)
REBUILD_GROUP = "summaries"


class SummariesLoaded(Message):
    def __init__(
        self, summaries: list[Summary], covers: dict[int, int], progress: Progress, running: bool
    ) -> None:
        super().__init__()
        self.summaries = summaries
        self.covers = covers
        self.progress = progress
        self.running = running


def progress_line(p: Progress, running: bool) -> str:
    tiers = ", ".join(f"{p.by_tier.get(t, 0)} {TIER_NAMES[t]}" for t in sorted(TIER_NAMES))
    if not p.left_window:
        todo = "no message has left the live window yet"
    elif p.unsummarised:
        todo = (
            f"{p.unsummarised} of {p.left_window} messages that left the window are not "
            f"summarised yet"
        )
    else:
        todo = f"all {p.left_window} messages that left the window are summarised"
    return f"{tiers} · {todo}" + (" · summarising…" if running else "")


def summary_text(s: Summary, covers: int) -> Text:
    t = Text()
    t.append(f"#{s.id} · {s.tier_name} · {s.status}", style="bold")
    t.append(
        f" · {covers} messages (#{s.first_id}…#{s.last_id})"
        + (" · private-only" if s.private else ""),
        style="dim",
    )
    t.append("\n\n" + s.prose + "\n")
    if s.verbatim:
        t.append("\nKept exactly:\n", style="dim")
        for v in s.verbatim:
            t.append(f"  • {v}\n")
    return t


class EditSummary(SaveOrCancel[tuple[str, list[str]] | None]):
    """Edit a summary's prose and its verbatim list (one item a line)."""

    BINDINGS = [
        HELP,
        Binding("escape", "cancel", "Cancel", id="summary.edit_cancel"),
        Binding("ctrl+s", "save", "Save", id="summary.edit_save"),
    ]

    def __init__(self, summary: Summary) -> None:
        super().__init__(classes="modal")
        self.summary = summary

    def compose(self) -> ComposeResult:
        s = self.summary
        with Vertical(classes="dialog"):
            yield Label(f"Edit summary #{s.id} ({s.tier_name})", classes="dialog-title")
            yield EvaTextArea(s.prose, id="prose", soft_wrap=True)
            yield Label("Kept exactly (one item a line)", classes="dim")
            yield EvaTextArea("\n".join(s.verbatim), id="verbatim", soft_wrap=True)
            yield Label("", id="summary-error", classes="error")
            with Horizontal(classes="buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#prose", EvaTextArea).focus()

    def action_save(self) -> None:
        prose = self.query_one("#prose", EvaTextArea).text.strip()
        if not prose:
            self.query_one("#summary-error", Label).update("The summary is empty.")
            return
        items = [
            ln.strip()
            for ln in self.query_one("#verbatim", EvaTextArea).text.splitlines()
            if ln.strip()
        ]
        self.dismiss((prose, items))


class SummaryPanel(ModalScreen[None]):
    BINDINGS = [
        HELP,
        Binding("escape", "close", "Close", id="summary.close"),
        Binding("e", "edit", "Edit", id="summary.edit"),
        Binding("r", "rebuild", "Rebuild", id="summary.rebuild"),
    ]
    REFRESH_SECONDS = 1.0

    def __init__(self) -> None:
        super().__init__(classes="modal")
        self.items: dict[int, Summary] = {}
        self.covers: dict[int, int] = {}
        self._shown = False  # the table was filled once

    @property
    def conversation(self) -> Any:
        return eva_app(self).services.conversation

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog summary-dialog"):
            yield Label("Conversation summary", classes="dialog-title")
            yield Static("", markup=False, id="summary-progress")
            yield DataTable(id="summaries", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="summary-detail-box"):
                yield Static("", id="summary-detail")
            yield Static("e edit · r rebuild (in the background) · Esc close", classes="dim")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#summaries", DataTable)
        for label, key in COLUMNS:
            table.add_column(label, key=key)
        table.focus()
        self.reload()
        self.set_interval(self.REFRESH_SECONDS, self.reload)

    # ------------------------------------------------------------------ loading
    def running(self) -> bool:
        return any(w.group == REBUILD_GROUP and w.is_running for w in self.app.workers)

    def reload(self) -> None:
        if self.conversation is None:
            self.query_one("#summary-progress", Static).update(
                "Summaries are available once the chat model is loaded."
            )
            return
        self._load(self.running())

    @work(
        thread=True,
        exit_on_error=False,
        name="loading the summaries",
        group="summary-load",
        exclusive=True,
    )
    def _load(self, running: bool) -> None:
        conv = self.conversation
        items = conv.summaries.active(conv.chat_id)
        covers = {s.id: len(conv.summaries.covers(s.id)) for s in items}
        self.post_message(SummariesLoaded(items, covers, conv.summary_progress(), running))

    def on_summaries_loaded(self, event: SummariesLoaded) -> None:
        self.query_one("#summary-progress", Static).update(
            progress_line(event.progress, event.running)
        )
        ids = [s.id for s in event.summaries]
        if (
            self._shown
            and ids == list(self.items)
            and all(self.items[s.id].updated_at == s.updated_at for s in event.summaries)
        ):
            return  # nothing changed: keep the cursor and the detail as they are
        self._shown = True
        self.items = {s.id: s for s in event.summaries}
        self.covers = event.covers
        table = self.query_one("#summaries", DataTable)
        keep = self._selected_id()
        table.clear()
        for s in event.summaries:
            table.add_row(
                str(s.id),
                s.tier_name,
                s.status,
                str(event.covers.get(s.id, 0)),
                clip(s.prose.replace("\n", " "), 60),
                key=str(s.id),
            )
        keep_cursor(table, keep)
        self._show_selected()

    def _selected_id(self) -> int | None:
        return selected_id(self.query_one("#summaries", DataTable))

    def _show_selected(self) -> None:
        sid = self._selected_id()
        detail = self.query_one("#summary-detail", Static)
        if sid is None or sid not in self.items:
            detail.update(
                "No summaries yet: messages are summarised once they leave the live window."
            )
            return
        detail.update(summary_text(self.items[sid], self.covers.get(sid, 0)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_selected()

    # ------------------------------------------------------------------ actions
    def action_edit(self) -> None:
        sid = self._selected_id()
        if sid is None or sid not in self.items:
            self.notify("Select a summary first.")
            return
        conv = self.conversation

        def done(result: tuple[str, list[str]] | None) -> None:
            if result is None:
                return
            prose, items = result
            try:
                conv.summaries.edit(
                    sid,
                    prose,
                    items,
                    conv.clock.now(),
                    conv.model.count_tokens(prose + "\n".join(items)),
                )
            except ValueError as e:
                self.notify(str(e).capitalize() + ".", severity="error")
                return
            self.notify(f"Summary #{sid} saved as you wrote it.", timeout=4)
            self.items = {}
            self.reload()

        self.app.push_screen(EditSummary(self.items[sid]), done)

    def action_rebuild(self) -> None:
        conv = self.conversation
        if conv is None:
            return
        if self.running():
            self.notify("A rebuild is already running.")
            return
        start_rebuild(self.app, conv)
        self.items = {}
        self.reload()

    def action_close(self) -> None:
        self.dismiss(None)


def start_rebuild(app: Any, conv: Any) -> None:
    """Drop this chat's summaries (kept as invalid) and summarise everything that left the
    window again, in an app worker (it outlives the panel). Resumable: what is done is in the
    store, and the chat's next summarising continues it."""
    chat_id = conv.chat_id

    def rebuild() -> None:
        try:
            conv.summaries.rebuild(chat_id, conv.clock.now())
            results = conv.summarise(chat_id=chat_id)
        except Exception as e:  # noqa: BLE001 - said to the owner, the store keeps what is done
            app.call_from_thread(
                app.notify, f"Rebuilding the summaries failed: {e}", severity="error", timeout=10
            )
            return
        if results and results[-1].action == "paused":
            app.call_from_thread(
                app.notify,
                "Rebuilding the summaries paused for your message; it continues after the reply.",
                timeout=6,
            )
            return
        p = conv.summary_progress(chat_id)
        app.call_from_thread(app.notify, "Summaries rebuilt: " + progress_line(p, False), timeout=8)

    app.run_worker(
        rebuild,
        thread=True,
        exit_on_error=False,
        group=REBUILD_GROUP,
        name="rebuilding the summaries",
    )


def start_summarising(app: Any, conv: Any) -> None:
    """After a turn: summarise what left the window, in the background (never on the send path:
    a turn interrupts it, and it continues after the next reply). One at a time."""
    if any(w.group == REBUILD_GROUP and w.is_running for w in app.workers):
        return

    def summarise() -> None:
        conv.summarise()

    app.run_worker(
        summarise,
        thread=True,
        exit_on_error=False,
        group=REBUILD_GROUP,
        name="summarising the conversation",
    )
