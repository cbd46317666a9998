"""Prompt preview (SPEC §5): for a query, the exact memory section a turn would carry — as the
trusted owner and as a public turn — side by side. ``Memory.preview`` reinforces nothing."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Footer, Input, Label, Static

from core.memory import Memory
from core.prompt_section import PromptSection
from eva_tui.widgets import EvaInput, EvaScreen, NavBar, PaletteCommand, StatusBar


class PreviewReady(Message):
    def __init__(self, query: str, trusted: PromptSection, public: PromptSection) -> None:
        super().__init__()
        self.query = query
        self.trusted = trusted
        self.public = public


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
        Binding("slash", "focus_query", "Query", show=False, id="preview.query"),
        Binding("ctrl+y", "copy('trusted')", "Copy trusted", id="preview.copy_trusted"),
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
        yield EvaInput(
            placeholder="A message to preview the memory section for (empty: core and pinned only)",
            id="query",
        )
        with Horizontal(id="preview-panes"):
            with Vertical(classes="pane"):
                yield Label("As the owner (trusted, private visible)", classes="pane-title")
                yield Static("", markup=False, id="trusted-stats", classes="pane-stats")
                with VerticalScroll():
                    yield Static("", id="trusted-text", markup=False, classes="section-text")
            with Vertical(classes="pane"):
                yield Label("As a public turn (others read it)", classes="pane-title")
                yield Static("", markup=False, id="public-stats", classes="pane-stats")
                with VerticalScroll():
                    yield Static("", id="public-text", markup=False, classes="section-text")
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        self.watch(self.app, "memory_version", lambda _v: self.refresh_preview(), init=True)
        self.query_one("#query", EvaInput).focus()

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
            self.query_one("#trusted-text", Static).update("Opening the memory…")
            return
        self._preview(memory, self.query_text)

    @work(thread=True, exit_on_error=False, name="previewing the prompt", group="preview",
          exclusive=True)
    def _preview(self, memory: Memory, q: str) -> None:
        self.post_message(PreviewReady(q, memory.preview(q), memory.preview(q, public=True)))

    def on_preview_ready(self, event: PreviewReady) -> None:
        if event.query != self.query_text:
            return
        self.sections = {"trusted": event.trusted, "public": event.public}
        for name, sec in self.sections.items():
            self.query_one(f"#{name}-stats", Static).update(stats(sec))
            self.query_one(f"#{name}-text", Static).update(
                sec.text or "(an empty section: nothing to carry)"
            )

    def action_focus_query(self) -> None:
        self.query_one("#query", EvaInput).focus()

    def action_copy(self, which: str) -> None:
        sec = self.sections.get(which)
        if sec is not None:
            self.app.copy_text(sec.text, f"the {which} section")

    def commands(self) -> list[PaletteCommand]:
        return [
            PaletteCommand(
                "Preview: copy the trusted section",
                "As the owner sees it (ctrl+y)",
                lambda: self.action_copy("trusted"),
            ),
            PaletteCommand(
                "Preview: copy the public section",
                "As a public turn sees it (ctrl+g)",
                lambda: self.action_copy("public"),
            ),
        ]
