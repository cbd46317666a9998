"""The `?` help (issue 16): the keys of the current screen or dialog, and the keys that work
everywhere. It closes with Esc or `?` (Textual's own keys panel does not close with Esc)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Label, Static

from eva_tui import strings as S


def screen_keys(app: Any, screen: Screen) -> list[tuple[str, str]]:
    """(keys, what they do) of the Eva bindings (with an id) ``screen`` declares that can run now
    (a binding its ``check_action`` hides is left out), keys of one action joined."""
    rows: dict[tuple[str, str], list[str]] = {}
    for key, active in screen.active_bindings.items():
        if active.node is not screen or not active.binding.description or not active.binding.id:
            continue
        b = active.binding
        rows.setdefault((b.action, b.description), [])
        shown = app.get_key_display(Binding(key, b.action))
        if shown not in rows[(b.action, b.description)]:
            rows[(b.action, b.description)].append(shown)
    return [(" ".join(keys), desc) for (_, desc), keys in rows.items()]


def everywhere_keys(app: Any) -> list[tuple[str, str]]:
    out = [(key, title) for _mode, title, key in app.nav_items()]
    for binding in app.BINDINGS:
        if isinstance(binding, Binding) and binding.id in (
            "app.wake",
            "app.dry_run",
            "app.sleep",
            "app.help",
        ):
            keys = app.services.config.keymap.get(binding.id, binding.key).split(",")
            out.append((" ".join(app.key_label(k) for k in keys), binding.description))
    out.append(("Ctrl+P", S.HELP_PALETTE))
    out.append((app.key_of("app.interrupt", "ctrl+c"), S.INTERRUPT_DESC))
    out.append((app.key_of("app.quit", "ctrl+q"), S.HELP_QUIT))
    return out


def keys_text(sections: list[tuple[str, list[tuple[str, str]]]]) -> Text:
    t = Text()
    width = max((len(k) for _, rows in sections for k, _ in rows), default=4)
    for i, (title, rows) in enumerate(sections):
        if i:
            t.append("\n")
        t.append(f"{title}\n", style="bold")
        for keys, desc in rows:
            t.append(f"  {keys:>{width}}  ", style="bold cyan")
            t.append(f"{desc}\n")
    return t


class HelpScreen(ModalScreen[None]):
    """A dialog listing keys; built by :meth:`for_screen`."""

    BINDINGS = [
        Binding("escape", "close", S.BTN_CLOSE, id="help.close"),
        Binding("question_mark,f1", "close", S.BTN_CLOSE, show=False, id="help.toggle"),
    ]

    def __init__(self, title: str, sections: list[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.sections = sections

    @classmethod
    def for_screen(cls, app: Any, screen: Screen) -> HelpScreen:
        mode = getattr(app, "current_mode", "")
        if isinstance(screen, ModalScreen):
            name = getattr(screen, "HELP_NAME", "this dialog")
        else:
            name = S.NAV_TITLES.get(mode, (mode, mode))[1]
        sections = []
        own = screen_keys(app, screen)
        if own:
            sections.append((S.HELP_THIS_SCREEN, own))
        if not isinstance(screen, ModalScreen):
            sections.append((S.HELP_EVERYWHERE, everywhere_keys(app)))
        return cls(S.help_screen_title(name), sections)

    @property
    def text(self) -> str:
        return keys_text(self.sections).plain

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="help-dialog"):
            yield Label(self.title_text, classes="dialog-title")
            with VerticalScroll(classes="dialog-body"):
                yield Static(keys_text(self.sections), id="help-text")
            yield Label(S.HELP_CLOSE, classes="dim")
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
