"""The model picker (issue 31 item 3) and the one-time question before memory leaves the
machine (item 2).

The picker lists the packaged chat models, the GGUF files in the models directory (and any
configured path) and the models the configured server reports (``/v1/models``), read in a
worker. Choosing one runs the chat on it from the next turn — the chat, its window and the
memory stay (:meth:`eva_runtime.services.Services.switch_model`) — or names it as the active
persona's model.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from eva_runtime.loader import ModelChoice
from eva_tui.widgets.base import eva_app
from eva_tui.widgets.modals import HELP

SOURCES = {"packaged": "packaged", "local": "local GGUF", "server": "server"}


class ModelPicker(ModalScreen[str | None]):
    """Lists the models Eva can run on; dismisses with the chosen spec (None: cancelled)."""

    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", id="models.close")]

    def __init__(
        self, title: str = "Switch the chat model", on_pick: Callable[[str], object] | None = None
    ) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.on_pick = on_pick
        self.choices: list[ModelChoice] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield Static("Reading the models…", id="models-note", classes="dim", markup=False)
            yield OptionList(id="models-list")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self._read()

    @work(thread=True, exit_on_error=False, name="listing the models", group="models")
    def _read(self) -> None:
        s = eva_app(self).services
        llm = s.config.llm
        extra = (llm.general, llm.smartest, s.config.sleep.memory_model)
        choices = s.loader.choices(llm, extra) if hasattr(s.loader, "choices") else []
        self.app.call_from_thread(self._show, choices)

    def _show(self, choices: list[ModelChoice]) -> None:
        self.choices = choices
        current = eva_app(self).services.model_spec
        options = []
        for i, c in enumerate(choices):
            mark = "● " if c.spec and c.spec == current else "  "
            note = f" — {c.note}" if c.note else ""
            options.append(
                Option(
                    f"{mark}{c.label}  ({SOURCES.get(c.source, c.source)}){note}",
                    id=str(i),
                    disabled=not (c.ready and c.spec),
                )
            )
        lst = self.query_one("#models-list", OptionList)
        lst.clear_options()
        lst.add_options(options)
        self.query_one("#models-note", Static).update(
            "Enter: run the chat on it from the next turn (the chat and memory stay)."
            if options
            else "No models found."
        )
        lst.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        c = self.choices[int(event.option.id or 0)]
        if self.on_pick is not None:
            self.on_pick(c.spec)
        self.dismiss(c.spec)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RemoteConfirm(ModalScreen[bool]):
    """Asked once, before the first message goes to a server that is not this machine."""

    BINDINGS = [HELP, Binding("escape", "cancel", "Cancel", id="remote.cancel")]

    def __init__(self, base_url: str) -> None:
        super().__init__(classes="modal")
        self.base_url = base_url

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Memory will leave this machine", classes="dialog-title")
            yield Static(
                f"The chat model runs at {self.base_url}, which is not this machine. Every "
                "turn sends it your message, the chat and the memories recalled for it — "
                "private ones included. Eva asks this once.",
                classes="record-text",
                markup=False,
            )
            with Horizontal(classes="buttons"):
                yield Button("Send memory there", id="yes", variant="warning")
                yield Button("Keep chat off", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_cancel(self) -> None:
        self.dismiss(False)
