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

# the tools whose success changes memory: the chat shows a note, the app reloads its views
MEMORY_CHANGING_TOOLS = ("memory_save", "memory_update", "memory_forget")
REMEMBERING = S.REMEMBERING  # the answer's subtitle while the memory step runs (SPEC §3.1)


def note_for(tool: str, ok: bool, data: dict[str, Any]) -> tuple[str, int | None, bool] | None:
    """(text, record id, archived?) of the inline note for one memory tool call, or None for a
    call that changed nothing the owner needs to see. The note says what was kept, updated or
    forgotten in the memory's own words (issue 28 item 2); a refusal changed nothing and is not
    shown in the chat (the turn's stored ops and the journal keep it)."""
    if not ok or tool not in MEMORY_CHANGING_TOOLS:
        return None
    rid = data.get("id")
    words = data.get("content")
    if tool == "memory_save":
        status = str(data.get("status", "created"))
        text = S.note_kept(status, words, rid)
        if data.get("private"):
            text += f" · {S.NOTE_PRIVATE}"
        return text, rid, False
    if tool == "memory_update":
        return S.note_kept("updated", words, rid), rid, False
    return S.note_kept("forgotten", words, rid), rid, True


class MessageAction(Message):
    """A key on a message of the chat (issue 28 item 5): ``action`` is "edit", "delete",
    "previous" or "next" (another answer of the turn); the chat screen does it."""

    def __init__(self, widget: UserMessage | TurnView, action: str) -> None:
        super().__init__()
        self.widget = widget
        self.action = action


class UserMessage(Static, can_focus=True):
    """The owner's message. Focused (Shift+Tab from the box, or a click): `e` edits it, `d`
    or Delete deletes it (issue 28 item 5)."""

    BINDINGS = [
        Binding("e", "act('edit')", S.BTN_EDIT, id="message.edit"),
        Binding("d,delete", "act('delete')", S.BTN_DELETE, id="message.delete"),
    ]

    def __init__(self, text: str, queued: bool = False, message_id: int | None = None) -> None:
        super().__init__(
            text, markup=False, classes="user-message" + (" -queued" if queued else "")
        )
        self.text = text
        self.message_id = message_id
        if queued:
            self.border_subtitle = S.QUEUED

    def action_act(self, action: str) -> None:
        self.post_message(MessageAction(self, action))

    def set_text(self, text: str) -> None:
        self.text = text
        self.update(text)

    def mark_edited(self) -> None:
        self.border_subtitle = S.EDITED

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


class TurnView(Vertical, can_focus=True):
    """One answer of Eva: the Markdown body (streamed through ``Markdown.get_stream``, so a
    token appends to the document instead of re-rendering the whole reply) and its notes.
    Focused: `e` edits it, `d` or Delete deletes it, ←/→ flip through the answers regenerate
    kept (issue 28 item 5); the subtitle shows which one of how many is chosen."""

    BINDINGS = [
        Binding("e", "act('edit')", S.BTN_EDIT, id="answer.edit"),
        Binding("d,delete", "act('delete')", S.BTN_DELETE, id="answer.delete"),
        Binding("left", "act('previous')", S.ANSWER_PREVIOUS, id="answer.previous"),
        Binding("right", "act('next')", S.ANSWER_NEXT, id="answer.next"),
    ]

    def __init__(
        self, text: str = "", turn_id: str | None = None, message_id: int | None = None
    ) -> None:
        super().__init__(classes="turn")
        self.initial = text
        self.turn_id = turn_id
        self.message_id = message_id
        self.text = text
        self._stream: MarkdownStream | None = None
        self._subtitle_text = ""
        self.alternative: tuple[int, int] | None = None  # (1-based index, count) when several
        self.edited = False  # the owner edited this answer

    def action_act(self, action: str) -> None:
        self.post_message(MessageAction(self, action))

    async def set_text(self, text: str) -> None:
        """Show other words (an edit, another alternative): the body is rendered anew."""
        await self._end_stream()
        self.text = text
        bodies = self.query(AssistantMessage)
        if bodies:
            await bodies.first().update(text)

    def mark_edited(self, edited: bool = True) -> None:
        self.edited = edited
        self._subtitle(self._subtitle_text)

    def show_alternative(self, index: int, count: int) -> None:
        self.alternative = (index, count) if count > 1 else None
        self._subtitle(self._subtitle_text)

    def finish_subtitle(self, text: str) -> None:
        """The subtitle after the answer (stopped, recalled…), the alternative kept before it."""
        self._subtitle(text)

    def clear_notes(self) -> None:
        for notes in self.query(".notes"):
            notes.remove()

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
        self._subtitle_text = text
        parts = [
            S.alternative(*self.alternative) if self.alternative else "",
            S.EDITED if self.edited else "",
            text,
        ]
        text = " · ".join(p for p in parts if p)
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
        if notes:  # the list exists only once there is a note: less to lay out per frame
            notes.first(Vertical).mount(widget)
        else:
            self.mount(Vertical(widget, classes="notes"))
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
