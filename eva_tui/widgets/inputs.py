"""Inputs that honour the app's cursor-blink setting (snapshot tests turn blinking off)."""

from __future__ import annotations

from textual.widgets import Input, TextArea


def _blink(widget) -> bool:
    return bool(getattr(widget.app, "cursor_blink", True))


class EvaInput(Input):
    def on_mount(self) -> None:
        self.cursor_blink = _blink(self)


class EvaTextArea(TextArea):
    def on_mount(self) -> None:
        self.cursor_blink = _blink(self)
