"""The navigation bar (one tab per screen) and the status bar (model, embedder, memory, sleep)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from eva_tui import strings as S
from eva_tui.widgets.base import eva_app


class NavTab(Static):
    def __init__(self, mode: str, label: str, active: bool) -> None:
        super().__init__(label, classes="nav-tab" + (" -active" if active else ""))
        self.mode = mode

    def on_click(self) -> None:
        self.app.switch_mode(self.mode)


class NavBar(Horizontal):
    """Tabs for the screens; the active one is highlighted. Clicking switches."""

    def __init__(self, active: str) -> None:
        super().__init__(id="nav")
        self.active = active

    def compose(self) -> ComposeResult:
        yield Static("Eva", id="nav-title")
        for mode, title, key in eva_app(self).nav_items():
            short = S.NAV_TITLES.get(mode, (title, title))[0]  # the bar fits 80 columns
            yield NavTab(mode, f"{short} [dim]{key}[/]" if key else short, mode == self.active)


class StatusBar(Static):
    """Model · embedder (or "lexical only") · memory count · next sleep; mirrors the app's
    ``status_text``."""

    def __init__(self) -> None:
        super().__init__("", id="status", markup=False)

    def on_mount(self) -> None:
        self.watch(self.app, "status_text", self._show, init=True)

    def _show(self, text: str) -> None:
        self.update(text)
