"""Settings (SPEC §7, §8, §9): the config keys that matter, saved to the config file.

Chat settings (detail level, learning, how memory is written) apply from the next turn; models,
the embedder and the sleep schedule apply on the next start. A save writes only the keys changed
in the form (tomlkit): the file keeps its comments, layout and every other key, and a value in
force from an ``EVA_`` variable is never written unless the owner changes it here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Footer, Label, Select, Static, Switch

from core.chat.conversation_config import DETAIL_LEVELS
from core.chat.memory_writer import MEMORY_WRITES
from eva_runtime import config as cfg
from eva_runtime import config_file
from eva_tui import strings as S
from eva_tui.widgets import EvaInput, EvaScreen, NavBar, PaletteCommand, StatusBar
from eva_tui.widgets.base import eva_app


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    kind: str  # text | duration | switch | select
    help: str
    empty: Any = None  # what an empty text field is written as (None: the key is removed)
    options: tuple[str, ...] = ()  # a select's choices
    live: bool = False  # applies from the next turn (else on the next start)


def _field(key: str, kind: str, **kw: Any) -> Field:
    label, help_ = S.SETTINGS[key]
    return Field(key, label, kind, help_, **kw)


FIELDS = (
    _field("llm.model.general", "text", live=True),  # issue 31: switched at the next turn
    _field("llm.model.smartest", "text"),
    _field("memory.embedding_model", "text", empty="none"),
    _field("chat.detail_level", "select", options=DETAIL_LEVELS, live=True),
    _field("chat.learning", "switch", live=True),
    _field("chat.memory_writes", "select", options=MEMORY_WRITES, live=True),
    _field("chat.persona_file", "text"),
    _field("sleep.every", "duration"),
    _field("sleep.idle_for", "duration"),
    _field("sleep.dry_run", "switch"),
    _field("sleep.memory.model", "text"),
)


class SettingsSaved(Message):
    def __init__(self, config: cfg.EvaConfig, path: Path, values: dict[str, Any]) -> None:
        super().__init__()
        self.config = config
        self.path = path
        self.values = values  # the form as saved: the next save writes what changes from it


class SettingsRefused(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


def current_values(config: cfg.EvaConfig) -> dict[str, Any]:
    return {
        "llm.model.general": config.llm.general or "",
        "llm.model.smartest": config.llm.smartest or "",
        "memory.embedding_model": config.memory.embedding_model or "",
        "chat.detail_level": config.chat.detail_level,
        "chat.learning": config.chat.learning,
        "chat.memory_writes": config.chat.memory_writes,
        "chat.persona_file": config.chat.persona_file or "",
        "sleep.every": cfg.format_duration(config.sleep.every),
        "sleep.idle_for": cfg.format_duration(config.sleep.idle_for),
        "sleep.dry_run": config.sleep.dry_run,
        "sleep.memory.model": config.sleep.memory_model or "",
    }


_WIDGETS: dict[str, type[EvaInput | Switch | Select]] = {
    "text": EvaInput,
    "duration": EvaInput,
    "switch": Switch,
    "select": Select,
}


def changed_keys(values: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """What a save writes (issue 16): only the fields the owner changed from ``baseline`` (the
    form as shown, or as last saved), as dotted key → TOML value; an emptied text field is its
    ``Field.empty`` (None: the key is removed). A value in force from an ``EVA_`` variable is
    shown but, left alone, is never written."""
    out: dict[str, Any] = {}
    for f in FIELDS:
        v = values[f.key]
        if v == baseline[f.key]:
            continue
        out[f.key] = f.empty if isinstance(v, str) and not v else v
    return out


def _wid(key: str) -> str:
    return "set-" + key.replace(".", "-").replace("_", "-")


class SettingsScreen(EvaScreen):
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="settings.save"),
        Binding("ctrl+z", "revert", "Revert to saved", id="settings.revert"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("settings")
        values = current_values(self.services.config)
        with VerticalScroll(id="settings-form"):
            yield Static("", id="config-path", markup=False)
            for f in FIELDS:
                with Horizontal(classes="setting"):
                    with Vertical(classes="setting-label"):
                        yield Label(f.label, classes="setting-name")
                        yield Label(f"{f.key} — {f.help}", classes="setting-help", markup=False)
                    value = values[f.key]
                    if f.kind == "switch":
                        yield Switch(value=bool(value), id=_wid(f.key))
                    elif f.kind == "select":
                        yield Select(
                            [(k, k) for k in f.options],
                            value=value,
                            allow_blank=False,
                            id=_wid(f.key),
                        )
                    else:
                        yield EvaInput(value=str(value), id=_wid(f.key))
            yield Label("", id="settings-error", classes="error", markup=False)
            with Horizontal(classes="buttons"):
                yield Button(S.BTN_SAVE, id="save", variant="primary")
                yield Button(S.BTN_REVERT, id="revert")
            yield Static(
                S.SETTINGS_KEYMAP_NOTE,
                classes="dim",
                markup=False,
            )
        yield StatusBar()
        yield Footer()

    def on_mount(self) -> None:
        self._baseline = current_values(self.services.config)
        self._show_path()

    def _path(self) -> Path:
        return self.services.config.path or cfg.default_config_path()

    def _show_path(self) -> None:
        over = self.services.config.overrides
        text = S.config_file(self._path(), list(over))
        self.query_one("#config-path", Static).update(text)

    def _read(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in FIELDS:
            w = self.query_one(f"#{_wid(f.key)}", _WIDGETS[f.kind])
            out[f.key] = w.value.strip() if isinstance(w, EvaInput) else w.value
        return out

    def action_save(self) -> None:
        values = self._read()
        changes = changed_keys(values, self._baseline)
        if not changes:
            self.query_one("#settings-error", Label).update("")
            self.notify(S.NOTHING_TO_SAVE)
            return
        self._save(changes, values, self._path())

    @work(thread=True, exit_on_error=False, name="saving the settings", group="settings")
    def _save(self, changes: dict[str, Any], values: dict[str, Any], path: Path) -> None:
        try:
            config_file.save_changes(path, changes)
            new = config_file.load(path)
        except cfg.ConfigError as e:
            self.post_message(SettingsRefused(str(e)))
            return
        self.post_message(SettingsSaved(new, path, values))

    def on_settings_refused(self, event: SettingsRefused) -> None:
        self.query_one("#settings-error", Label).update(event.error)
        self.notify(event.error, severity="error")

    def on_settings_saved(self, event: SettingsSaved) -> None:
        self._baseline = event.values
        self.query_one("#settings-error", Label).update("")
        old, new = self.services.config, event.config
        self.services.apply_chat_settings(new.chat)
        if new.llm.general and new.llm.general != old.llm.general:
            self.services.config = replace(self.services.config, llm=new.llm)
            app = eva_app(self)
            if self.services.chat_model is not None:
                app._switch_model(new.llm.general, None)
        restart = [
            f.label.lower()
            for f in FIELDS
            if not f.live and current_values(old)[f.key] != current_values(new)[f.key]
        ]
        self.notify(S.saved_to(event.path, restart), timeout=8)
        self._show_path()

    def action_revert(self) -> None:
        """Back to the last saved values (the form as saved, or as opened): after a save,
        Ctrl+Z no longer brings back what the save replaced (issue 16), and says so."""
        values = self._baseline
        for f in FIELDS:
            w = self.query_one(f"#{_wid(f.key)}", _WIDGETS[f.kind])
            w.value = values[f.key]
        self.query_one("#settings-error", Label).update("")
        self.notify(S.REVERTED, timeout=4)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save":
            self.action_save()
        elif event.button.id == "revert":
            self.action_revert()

    def commands(self) -> list[PaletteCommand]:
        c = S.CMD_SETTINGS
        return [
            PaletteCommand(*c["save"], self.action_save),
            PaletteCommand(*c["revert"], self.action_revert),
            PaletteCommand(
                "Choose the chat model",
                "List the packaged models, local GGUF "
                "files and the server's models; the choice fills Chat model",
                self.action_choose_model,
            ),
        ]

    def action_choose_model(self) -> None:
        from screens.models import ModelPicker

        def fill(spec: str | None) -> None:
            if spec:
                self.query_one(f"#{_wid('llm.model.general')}", EvaInput).value = spec

        self.app.push_screen(ModelPicker("Chat model (saved with Ctrl+S)"), fill)
