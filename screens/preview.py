"""Prompt preview (SPEC §5): for a query, the exact memory section a turn would carry — as the
trusted owner and as a public turn — side by side. ``Memory.preview`` reinforces nothing.

The trusted pane marks the memories a public turn would not see (issue 16). The screen opens with
the panes focused, so `/` reaches the message box (and Esc leaves it)."""

from __future__ import annotations

import re

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Footer, Input, Label, Static

from core.memory.facade import Memory
from core.memory.prompt_section import PromptSection
from eva_tui import strings as S
from eva_tui.widgets import EvaInput, EvaScreen, NavBar, PaletteCommand, StatusBar


class PreviewReady(Message):
    def __init__(self, query: str, trusted: PromptSection, public: PromptSection) -> None:
        super().__init__()
        self.query = query
        self.trusted = trusted
        self.public = public


RECORD_LINE = re.compile(r"^(\d+) \|")  # a record's row in the section: "12 | fact | …"


def hidden_ids(trusted: PromptSection, public: PromptSection) -> set[int]:
    """The records the owner's section carries and a public turn's does not."""
    return set(trusted.core_ids + trusted.recalled_ids) - set(public.core_ids + public.recalled_ids)


def marked_text(trusted: PromptSection, public: PromptSection) -> Text:
    """The trusted section with every line a public turn would not see marked."""
    hidden = hidden_ids(trusted, public)
    t = Text()
    for i, line in enumerate(trusted.text.split("\n")):
        if i:
            t.append("\n")
        m = RECORD_LINE.match(line)
        if hidden and m and int(m.group(1)) in hidden:
            t.append(S.PREVIEW_HIDDEN_MARK, style="bold red")
            t.append(line, style="yellow")
        else:
            t.append(" " * len(S.PREVIEW_HIDDEN_MARK) if hidden else "")
            t.append(line)
    return t


def stats(s: PromptSection) -> str:
    parts = [
        f"{len(s.core_ids)} core/pinned",
        f"{len(s.recalled_ids)} recalled",
        f"{len(s.text)} chars",
    ]
    if s.dropped_core:
        parts.append(f"{s.dropped_core} core dropped")
    if s.withheld_footnote:
        parts.append("private withheld (footnote)")
    return " · ".join(parts)


class PreviewScreen(EvaScreen):
    BINDINGS = [
        Binding("slash", "focus_query", "Message", id="preview.query"),
        Binding("alt+w", "copy('trusted')", "Copy trusted", id="preview.copy_trusted"),
        Binding("ctrl+g", "copy('public')", "Copy public", id="preview.copy_public"),
    ]
    DEBOUNCE = 0.3

    def __init__(self) -> None:
        super().__init__()
        self.query_text = ""
        self.sections: dict[str, PromptSection] = {}
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield NavBar("preview")
        yield EvaInput(placeholder=S.PREVIEW_PLACEHOLDER, id="query")
        with Horizontal(id="preview-panes"):
            with Vertical(classes="pane"):
                yield Label(S.PREVIEW_TRUSTED, classes="pane-title")
                yield Static("", markup=False, id="trusted-stats", classes="pane-stats")
                with VerticalScroll(id="trusted-pane"):
                    yield Static("", id="trusted-text", markup=False, classes="section-text")
            with Vertical(classes="pane"):
                yield Label(S.PREVIEW_PUBLIC, classes="pane-title")
                yield Static("", markup=False, id="public-stats", classes="pane-stats")
                with VerticalScroll(id="public-pane"):
                    yield Static("", id="public-text", markup=False, classes="section-text")
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "memory_version", lambda _v: self.refresh_preview(), init=True)
        self.watch(self.app, "services_version", lambda _v: self.refresh_preview(), init=False)
        self.query_one("#trusted-pane").focus()  # `/` then reaches the message box

    def key_escape(self) -> None:
        if self.focused is self.query_one("#query", EvaInput):
            self.query_one("#trusted-pane").focus()

    def on_screen_resume(self) -> None:
        self.refresh_preview()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "query":
            return
        self.query_text = event.value
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(self.DEBOUNCE, self.refresh_preview)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "query":
            event.stop()
            self.query_text = event.value
            self.refresh_preview()

    def refresh_preview(self) -> None:
        memory = self.services.memory
        if memory is None:
            self.query_one("#trusted-text", Static).update(
                self.app.memory_problem() or S.MEMORY_OPENING
            )
            return
        self._preview(memory, self.query_text)

    @work(
        thread=True,
        exit_on_error=False,
        name="previewing the prompt",
        group="preview",
        exclusive=True,
    )
    def _preview(self, memory: Memory, q: str) -> None:
        self.post_message(PreviewReady(q, memory.preview(q), memory.preview(q, public=True)))

    def on_preview_ready(self, event: PreviewReady) -> None:
        if event.query != self.query_text:
            return
        self.sections = {"trusted": event.trusted, "public": event.public}
        for name, sec in self.sections.items():
            self.query_one(f"#{name}-stats", Static).update(stats(sec))
            self.query_one(f"#{name}-text", Static).update(sec.text or S.PREVIEW_EMPTY)
        if event.trusted.text and hidden_ids(event.trusted, event.public):
            self.query_one("#trusted-stats", Static).update(
                f"{stats(event.trusted)}\n{S.PREVIEW_HIDDEN_LEGEND}"
            )
            self.query_one("#trusted-text", Static).update(marked_text(event.trusted, event.public))

    def action_focus_query(self) -> None:
        self.query_one("#query", EvaInput).focus()

    def action_copy(self, which: str) -> None:
        sec = self.sections.get(which)
        if sec is not None:
            self.app.copy_text(sec.text, f"the {which} section")

    def commands(self) -> list[PaletteCommand]:
        c = S.CMD_PREVIEW
        return [
            PaletteCommand(*c["query"], self.action_focus_query),
            PaletteCommand(*c["trusted"], lambda: self.action_copy("trusted")),
            PaletteCommand(*c["public"], lambda: self.action_copy("public")),
        ]
