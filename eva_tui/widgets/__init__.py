"""Eva's widgets: the pieces every screen is built from."""

from eva_tui.widgets.base import EvaScreen, PaletteCommand
from eva_tui.widgets.chat import (
    AssistantMessage,
    MemoryNote,
    Notice,
    SleepBanner,
    TurnView,
    UserMessage,
)
from eva_tui.widgets.composer import Composer
from eva_tui.widgets.fmt import age, ago, clip, in_time
from eva_tui.widgets.inputs import EvaInput, EvaTextArea
from eva_tui.widgets.modals import ConfirmForget, EditRecord, RecordView
from eva_tui.widgets.nav import NavBar, StatusBar

__all__ = [
    "AssistantMessage",
    "Composer",
    "ConfirmForget",
    "EditRecord",
    "EvaInput",
    "EvaScreen",
    "EvaTextArea",
    "MemoryNote",
    "NavBar",
    "Notice",
    "PaletteCommand",
    "RecordView",
    "SleepBanner",
    "StatusBar",
    "TurnView",
    "UserMessage",
    "age",
    "ago",
    "clip",
    "in_time",
]
