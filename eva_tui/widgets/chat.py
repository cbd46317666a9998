"""Chat pieces: the owner's message, Eva's streamed answer, inline memory notes, notices and the
"sleeping…" banner with its Wake button (SPEC §7, §9)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from eva_tui import strings as S

WRITE_TOOLS = ("memory_save", "memory_update", "memory_forget")
REMEMBERING = S.REMEMBERING  # the answer's subtitle while the memory step runs (SPEC §3.1)


def note_for(tool: str, ok: bool, data: dict[str, Any]) -> tuple[str, int | None, bool] | None:
    """(text, record id, archived?) of the inline note for one memory tool call, or None for a
    call that wrote nothing the owner needs to see."""
    rid = data.get("id")
    if not ok:
        if tool not in WRITE_TOOLS:
            return None
        what = tool.removeprefix("memory_")
        return S.note_refused(what, str(data.get("error", S.NOTE_REFUSED))), None, False
    if tool == "memory_save":
        status = data.get("status", "created")
        parts = [S.note_saved(status, rid)]
        if status != "reinforced":
            parts += [str(data.get("kind", "")), str(data.get("importance", ""))]
        if data.get("private"):
            parts.append(S.NOTE_PRIVATE)
        return " · ".join(p for p in parts if p), rid, False
    if tool == "memory_update":
        return S.note_saved("updated", rid), rid, False
    if tool == "memory_forget":
        return S.note_forgot(rid), rid, True
    return None


class UserMessage(Static):
    def __init__(self, text: str, queued: bool = False) -> None:
        super().__init__(
            text, markup=False, classes="user-message" + (" -queued" if queued else "")
        )
        self.text = text
        if queued:
            self.border_subtitle = S.QUEUED

    def mark_sent(self) -> None:
        self.remove_class("-queued")
        self.border_subtitle = ""

    def thinking(self) -> None:
        """Sent; no word of the answer yet (a long prompt takes a while on a CPU)."""
        self.remove_class("-queued")
        self.border_subtitle = S.THINKING

    def waiting(self) -> None:
        self.add_class("-queued")
        self.border_subtitle = S.QUEUED_UNTIL_AWAKE


class AssistantMessage(Markdown):
    BORDER_TITLE = "Eva"


class MemoryNote(Static, can_focus=True):
    """ "saved #42 · fact · 4" — click (or focus and Enter) to open the record."""

    BINDINGS = [Binding("enter", "open", "Open memory", show=False, id="chat.open_note")]

    class Open(Message):
        def __init__(self, record_id: int, archived: bool) -> None:
            super().__init__()
            self.record_id = record_id
            self.archived = archived

    def __init__(
        self, text: str, record_id: int | None, archived: bool = False, error: bool = False
    ) -> None:
        super().__init__(text, markup=False, classes="memory-note" + (" -error" if error else ""))
        self.record_id = record_id
        self.archived = archived

    def action_open(self) -> None:
        if self.record_id is not None:
            self.post_message(self.Open(self.record_id, self.archived))

    def on_click(self) -> None:
        self.action_open()


class Notice(Static):
    def __init__(self, text: str, error: bool = False, markup: bool = False) -> None:
        super().__init__(text, markup=markup, classes="notice" + (" -error" if error else ""))


class TurnView(Vertical):
    """One answer of Eva: the Markdown body (streamed through ``Markdown.get_stream``, so a
    token appends to the document instead of re-rendering the whole reply) and its notes."""

    def __init__(self, text: str = "", turn_id: str | None = None) -> None:
        super().__init__(classes="turn")
        self.initial = text
        self.turn_id = turn_id
        self.text = text
        self._stream: MarkdownStream | None = None

    def compose(self) -> ComposeResult:
        yield AssistantMessage(self.initial)

    @property
    def body(self) -> AssistantMessage:
        return self.query_one(AssistantMessage)

    async def write(self, chunk: str) -> None:
        self.text += chunk
        if self._stream is None:
            bodies = self.query(AssistantMessage)
            if not bodies:  # the app is closing and took the answer's body away: the reply is
                return  # kept in the store by the core, nothing on screen to write to
            self._stream = Markdown.get_stream(bodies.first())
        await self._stream.write(chunk)

    async def _end_stream(self) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None

    async def remembering(self) -> None:
        """The reply is complete; the memory-writing step runs now (SPEC §3.1). The answer
        stops streaming and says so quietly until :meth:`finish`."""
        await self._end_stream()
        self.add_class("-remembering")
        self._subtitle(REMEMBERING)

    @property
    def is_remembering(self) -> bool:
        return self.has_class("-remembering")

    async def finish(self, subtitle: str = "") -> None:
        await self._end_stream()
        self.remove_class("-remembering")
        self._subtitle(subtitle)

    def _subtitle(self, text: str) -> None:
        bodies = self.query(AssistantMessage)
        if bodies:  # absent only while the app closes (a cancelled turn ends as it quits)
            bodies.first().border_subtitle = text

    def add_note(self, tool: str, ok: bool, data: dict[str, Any]) -> MemoryNote | None:
        note = note_for(tool, ok, data)
        if note is None:
            return None
        text, rid, archived = note
        widget = MemoryNote(text, rid, archived, error=not ok)
        notes = self.query(".notes")
        if notes:  # the row exists only once there is a note: less to lay out per frame
            notes.first(Horizontal).mount(widget)
        else:
            self.mount(Horizontal(widget, classes="notes"))
        return widget

    @property
    def notes(self) -> list[MemoryNote]:
        return list(self.query(MemoryNote))


class SleepBanner(Horizontal):
    """Shown while Eva sleeps: messages wait in a queue until she wakes."""

    def __init__(self) -> None:
        super().__init__(id="sleep-banner")

    def compose(self) -> ComposeResult:
        yield Static(S.sleeping_banner(0), id="sleep-text", markup=False)
        yield Button(S.BTN_WAKE, id="wake", variant="warning")

    def show(self, queued: int) -> None:
        self.query_one("#sleep-text", Static).update(S.sleeping_banner(queued))
        self.add_class("-visible")

    def hide(self) -> None:
        self.remove_class("-visible")
