"""The chat's message box (issue 28 item 1): several lines, a paste kept whole, ↑/↓ through the
owner's earlier messages of this chat, and a stated length limit.

Keys: Enter sends; Shift+Enter or Ctrl+J adds a new line (Ctrl+J is the line feed every terminal
sends; Shift+Enter reaches Eva only in terminals that report it). ↑/↓ walk the earlier messages
while the box is empty or still holds a recalled message as it was (otherwise they move the
cursor). `?` on an empty box opens the help; with text in the box it types a `?`. A paste
(bracketed, as every modern terminal sends it) is inserted as it is, every line kept, and
nothing is sent until Enter.
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from eva_tui import strings as S

# TextArea's own keys, less the F-keys it takes for selection (F6 select line, F7 select all):
# those are Eva's screens and Wake everywhere else, and must stay so in the chat
_KEPT: list[BindingType] = [
    b
    for b in TextArea.BINDINGS
    if isinstance(b, Binding) and not set(b.key.split(",")) & {"f6", "f7"}
]
NEWLINE_KEYS = ("shift+enter", "ctrl+j", "newline")


class Composer(TextArea, inherit_bindings=False):
    """A multi-line message box; posts :class:`Composer.Submitted` on Enter."""

    BINDINGS = _KEPT

    class Submitted(Message):
        """Enter in the box: ``text`` is what it holds (the box is not cleared here)."""

        def __init__(self, composer: Composer, text: str) -> None:
            super().__init__()
            self.composer = composer
            self.text = text

        @property
        def control(self) -> Composer:
            return self.composer

    def __init__(
        self, *, max_chars: int = 8000, placeholder: str = "", id: str | None = None
    ) -> None:  # noqa: A002 - Textual's name
        super().__init__(
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=placeholder,
        )
        self.max_chars = max_chars
        self.earlier: list[str] = []  # the owner's earlier messages of this chat, oldest first
        self._pos: int | None = None  # where ↑/↓ are in ``history`` (None: not walking)
        self._recalled: str | None = None  # the text ↑/↓ put in the box

    def on_mount(self) -> None:
        self.cursor_blink = bool(getattr(self.app, "cursor_blink", True))
        self._count()

    # ------------------------------------------------------------------ text
    @property
    def value(self) -> str:
        """The text (the same name as ``Input.value``, for the chat and its tests)."""
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)
        self._pos = None
        self._recalled = None

    def clear(self) -> None:  # type: ignore[override]
        self.value = ""

    @property
    def untouched(self) -> bool:
        """Empty, or holding a recalled message as it was: ↑/↓ walk the history."""
        return not self.text or (self._recalled is not None and self.text == self._recalled)

    def remember(self, text: str) -> None:
        """A message was sent: it is the newest entry of the history."""
        if text and (not self.earlier or self.earlier[-1] != text):
            self.earlier.append(text)
        self._pos = None
        self._recalled = None

    def _recall(self, pos: int | None) -> None:
        self._pos = pos
        text = "" if pos is None else self.earlier[pos]
        self.load_text(text)
        self.move_cursor(self.document.end)
        self._recalled = text if pos is not None else None

    # ------------------------------------------------------------------ keys
    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))
            return
        if key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            if not self.read_only:
                self.replace("\n", *self.selection)
            return
        if key == "question_mark" and not self.text:
            event.stop()
            event.prevent_default()
            await self.run_action("app.help")
            return
        if key in ("up", "down") and self.earlier and self.untouched:
            if key == "up":
                event.stop()
                event.prevent_default()
                self._recall(len(self.earlier) - 1 if self._pos is None else max(0, self._pos - 1))
                return
            if self._pos is not None:
                event.stop()
                event.prevent_default()
                nxt = self._pos + 1
                self._recall(nxt if nxt < len(self.earlier) else None)
                return

    def _on_text_area_changed(self, _event: TextArea.Changed) -> None:
        self._count()

    def _count(self) -> None:
        """Near the limit the box says how long the message is against it."""
        n = len(self.text)
        self.border_subtitle = (
            S.composer_count(n, self.max_chars) if n > self.max_chars * 0.9 else ""
        )
        self.set_class(n > self.max_chars, "-too-long")
