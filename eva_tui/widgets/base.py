"""The base of every Eva screen: the typed app, its palette commands and the one worker-failure
path."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from textual.screen import Screen
from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from eva_runtime.services import Services
    from eva_tui.app import EvaApp


class InApp(Protocol):
    """A widget, a screen or a command provider: anything that knows its app."""

    @property
    def app(self) -> Any: ...


def eva_app(node: InApp) -> EvaApp:
    """The running :class:`~eva_tui.app.EvaApp`, typed (for widgets and command providers)."""
    return cast("EvaApp", node.app)


class PaletteCommand(NamedTuple):
    title: str
    help: str
    callback: Callable[[], object]


class EvaScreen(Screen):
    """A screen of Eva. Subclasses list their actions in :meth:`commands` (the command palette
    shows them) and run blocking work in thread workers; a failed worker becomes a notice."""

    if TYPE_CHECKING:
        app: EvaApp  # textual's own ``app`` getter, typed: every Eva screen runs in EvaApp

    @property
    def services(self) -> Services:
        return self.app.services

    def commands(self) -> list[PaletteCommand]:
        return []

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.app.report_worker_failure(event.worker)
