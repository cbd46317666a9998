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


def fit_status(text: str, width: int) -> str:
    """The status line within ``width`` columns (issue 16: 80×24): first without the "model:"
    and "recall:" labels, then with the model names cut at their first dash — the memory count
    and the sleep state at the end stay whole."""
    if len(text) <= width:
        return text
    parts = [p.removeprefix("model: ").removeprefix("recall: ") for p in text.split(" │ ")]
    short = " │ ".join(parts)
    if len(short) <= width or len(parts) < 3:
        return short
    for i in (1, 0):
        if len(" │ ".join(parts)) <= width:
            break
        name, _, rest = parts[i].partition(" ")
        parts[i] = (name.split("-")[0] + "…" if "-" in name else name) + (
            f" {rest}" if rest else ""
        )
    return " │ ".join(parts)


class StatusBar(Static):
    """Model · embedder (or "lexical only") · memory count · next sleep; mirrors the app's
    ``status_text``, fitted to the width."""

    def __init__(self) -> None:
        super().__init__("", id="status", markup=False)
        self._text = ""

    def on_mount(self) -> None:
        self.watch(self.app, "status_text", self._show, init=True)

    def on_resize(self) -> None:
        self._show(self._text)

    def _show(self, text: str) -> None:
        self._text = text
        width = self.size.width - 2 if self.size.width else 0  # the padding
        self.update(fit_status(text, width) if width > 0 else text)
