"""Eva's Textual app (SPEC §9): the trusted surface.

Built by :func:`create_app` so tests can inject a scripted model, a temporary store, a fixed
clock and a fake sleeper. Nothing here blocks the event loop: loading models, opening the store,
generation, recall and sleep run in thread workers that report back with messages; every failed
worker becomes a notice through :meth:`EvaApp.report_worker_failure`.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from core.clock import Clock
from core.locality import host_of
from eva_runtime.config import EvaConfig
from eva_runtime.services import Component, Services
from eva_tui import strings as S
from eva_tui.keys import key_label
from eva_tui.messages import (
    MemoryFailed,
    ServicesChanged,
    TurnFinished,
    TurnStarted,
)
from eva_tui.palette import MemoryProvider
from eva_tui.sleep_control import SleepControl
from eva_tui.widgets.base import EvaScreen
from eva_tui.widgets.help import HelpScreen
from screens import owner
from screens.archive import ArchiveScreen
from screens.chat import ChatScreen
from screens.journal import JournalScreen
from screens.memories import MemoriesScreen
from screens.preview import PreviewScreen
from screens.settings import SettingsScreen

# The screens are on Alt+1…6, which terminals pass through (issue 28 item 4); F2–F6 stay as
# aliases. F1 is help, as terminals and desktops use it: Chat is Alt+1.
NAV = tuple(
    (mode, S.NAV_TITLES[mode][1], key)
    for mode, key in (
        ("chat", "alt+1"),
        ("memories", "alt+2,f2"),
        ("archive", "alt+3,f3"),
        ("journal", "alt+4,f4"),
        ("preview", "alt+5,f5"),
        ("settings", "alt+6,f6"),
    )
)
QUIT_AGAIN_SECONDS = 4.0  # a second Ctrl+C within this quits


class EvaApp(SleepControl):
    CSS_PATH = "eva.tcss"
    TITLE = "Eva"
    MODES = {
        "chat": ChatScreen,
        "memories": MemoriesScreen,
        "archive": ArchiveScreen,
        "journal": JournalScreen,
        "preview": PreviewScreen,
        "settings": SettingsScreen,
    }
    DEFAULT_MODE = "chat"
    COMMANDS = App.COMMANDS | {MemoryProvider}
    BINDINGS = [
        *[
            Binding(key, f"go('{mode}')", title, show=False, id=f"app.{mode}")
            for mode, title, key in NAV
        ],
        Binding("f7", "wake", "Wake", show=False, id="app.wake"),
        Binding("f8", "sleep_now(True)", "Dry run now", show=False, id="app.dry_run"),
        Binding("f9", "sleep_now", "Sleep now", show=False, id="app.sleep"),
        Binding("f1,question_mark", "help", S.HELP_KEY_DESC, show=False, id="app.help"),
        # Ctrl+C stops a reply, else asks once and quits on the second (issue 28 item 3);
        # priority: a text field's own Ctrl+C (copy) does not swallow it
        Binding(
            "ctrl+c", "interrupt", S.INTERRUPT_DESC, show=False, priority=True, id="app.interrupt"
        ),
        Binding("ctrl+q", "quit", S.HELP_QUIT, show=False, priority=True, id="app.quit"),
    ]

    status_text: reactive[str] = reactive("")
    memory_version: reactive[int] = reactive(0)  # bumped after every memory change
    services_version: reactive[int] = reactive(0)  # bumped when a model/store changes state
    persona_version: reactive[int] = reactive(0)  # bumped when the active persona changes

    def __init__(
        self,
        services: Services,
        *,
        clock: Clock | None = None,
        cursor_blink: bool = True,
        tick_seconds: float | None = 30.0,
        start_loading: bool = True,
    ) -> None:
        super().__init__()
        self.services = services
        self.clock = clock or services.clock
        self.cursor_blink = cursor_blink
        self.tick_seconds = tick_seconds
        self.start_loading = start_loading
        # cancel events of the running chat turns (TurnStarted / TurnFinished keep it)
        self.cancels: set[threading.Event] = set()
        self.memory_error: str | None = None
        self.last_activity = self.clock.now()
        self._schedule_worker: Worker | None = None
        # The first run's welcome offers one button per entry (label, callback): the hook for
        # "initialize from a description" (issue 16). Empty: the welcome is text only.
        self.welcome_actions: list[tuple[str, Callable[[], object]]] = []
        self._quit_asked: float | None = None  # when Ctrl+C last asked (monotonic)

    # ------------------------------------------------------------------ start-up
    def on_mount(self) -> None:
        if self.services.config.keymap:
            self.set_keymap(self.services.config.keymap)
        self._apply_theme()
        s = self.services
        if self.start_loading and s.memory is None:
            self._bring_up_memory()
        if self.start_loading and s.chat_model is None and s.config.llm.general:
            if s.remote_model and not s.remote_confirmed():
                self._ask_remote()  # issue 31: the owner agrees once before memory leaves
            else:
                self._bring_up_model()
        if s.memory is not None:
            self._services_changed()
        else:
            self.refresh_status()
        if self.tick_seconds:
            self.set_interval(self.tick_seconds, self._tick)
        # After the first paint, move everything alive (modules, the screen) out of the
        # collector's sight: full collections then scan only what changes, and the pauses
        # they cause while a reply streams shrink from ~80 ms to a few (bench.tui).
        self.call_after_refresh(gc.freeze)

    @work(thread=True, exit_on_error=False, name="opening the memory", group="bring-up")
    def _bring_up_memory(self) -> None:
        try:
            self.services.open_memory()
        except Exception as e:  # e.g. an unwritable data dir: say so once, keep the app up
            self.post_message(MemoryFailed(f"{type(e).__name__}: {e}"))
            return
        self.post_message(ServicesChanged())
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if done == total or done - last[0] >= max(1, total // 20):
                last[0] = done
                self.post_message(ServicesChanged())

        if self.services.backfill(progress):
            self.post_message(ServicesChanged())

    @work(thread=True, exit_on_error=False, name="loading the chat model", group="bring-up")
    def _bring_up_model(self) -> None:
        shown = [-1]

        def progress(done: int, total: int) -> None:
            pct = 100 * done // max(total, 1)
            if pct >= shown[0] + 5:
                shown[0] = pct
                self.post_message(ServicesChanged())

        self.services.load_model(progress)
        self.post_message(ServicesChanged())

    def _ask_remote(self) -> None:
        from screens.models import RemoteConfirm

        s = self.services

        def answered(yes: bool | None) -> None:
            if yes:
                s.confirm_remote()
                self._bring_up_model()
                return
            s.model = Component(s.model.name, "off", "declined: memory stays on this machine")
            self.notify(
                "Chat is off: the model server is not on this machine and you kept "
                "your memory here. Change [llm] base_url, or restart Eva to be asked "
                "again.",
                severity="warning",
                timeout=15,
            )
            self.refresh_status()

        self.push_screen(RemoteConfirm(s.config.llm.base_url or ""), answered)

    # ------------------------------------------------------------------ models (issue 31)
    def action_pick_model(self) -> None:
        from screens.models import ModelPicker

        def picked(spec: str | None) -> None:
            if spec:
                self._switch_model(spec, None)

        self.push_screen(ModelPicker(), picked)

    def action_pick_persona_model(self) -> None:
        from screens.models import ModelPicker

        p = self.services.current_persona
        name = p.name if p is not None else "Eva"

        def picked(spec: str | None) -> None:
            if spec and p is not None:
                self._switch_model(spec, p.id)

        self.push_screen(ModelPicker(f"The model {name} runs on"), picked)

    @work(
        thread=True,
        exit_on_error=False,
        name="switching the model",
        group="model-switch",
        exclusive=True,
    )
    def _switch_model(self, spec: str, persona_id: str | None) -> None:
        s = self.services
        try:
            if persona_id is not None and s.personas is not None:
                s.personas.set_model(persona_id, spec)
            s.switch_model(spec, default=persona_id is None)
        except Exception as e:  # ModelUnavailable, a store error: the current model stays
            self.call_from_thread(
                self.notify, f"Staying on {s.model_label()}: {e}", severity="error", timeout=12
            )
            return
        self.call_from_thread(self.notify, f"The next turn runs on {s.model_label()}.", timeout=6)
        self.post_message(ServicesChanged())

    @work(thread=True, exit_on_error=False, name="warming up the model", group="bring-up")
    def _warm_up(self) -> None:
        self.services.warm_up()

    def on_memory_failed(self, event: MemoryFailed) -> None:
        self.memory_error = event.error
        problem = self.memory_problem()
        assert problem is not None
        self.notify(problem, severity="error", timeout=20)
        self.services_version += 1  # the screens show the same words instead of "opening…"
        self.refresh_status()

    def memory_problem(self) -> str | None:
        """Why the memory is not there (issue 16): one message, shown by every screen that
        needs the store, and by `s`; None while it opens or once it is open."""
        if self.services.memory is not None or not self.memory_error:
            return None
        return S.memory_unavailable(self.memory_error, self.services.data_dir)

    def on_services_changed(self, _: ServicesChanged) -> None:
        self._services_changed()

    def _services_changed(self) -> None:
        had_memory = self.memory_version > 0
        self.services.finish()
        if self.start_loading and self.services.chat_ready and not self.services.warmed:
            self._warm_up()
        for problem in self.services.take_problems():
            self.notify(problem, severity="warning", timeout=12)
        self.services_version += 1
        if not had_memory and self.services.memory is not None:
            self.memory_version += 1
            self._notable_nights()
            if self.services.first_run_offer:
                owner.offer_init(self)
        self.sync_sleeping()

    # ------------------------------------------------------------------ status
    def refresh_status(self) -> None:
        s = self.services
        parts = [f"model: {s.model_label()}", f"recall: {s.embedder_label()}"]
        if s.remote_model:  # issue 31: said wherever the model is named
            parts.insert(
                1, f"⚠ memory leaves this machine ({host_of(s.config.llm.base_url or '')})"
            )
        if s.memory is not None:
            n = s.memory.live_count()  # in memory: the event loop runs no SQL (issue 15)
            parts.append(f"{n} memor{'y' if n == 1 else 'ies'}")
        else:
            parts.append("memory: unavailable" if self.memory_error else "memory: opening…")
        parts.append(self.sleep_label())
        persona = s.current_persona  # as last read: the event loop runs no SQL (issue 15)
        if persona is not None and not persona.is_default:
            parts.insert(0, f"persona: {persona.name}")
        self.status_text = " │ ".join(parts)

    def watch_memory_version(self) -> None:
        if self.services.memory is not None:
            self.refresh_status()

    def memory_changed(self) -> None:
        """Screens call this after a write; every screen watching ``memory_version`` reloads."""
        self.memory_version += 1

    def persona_switched(self) -> None:
        """The active persona changed (screens.personas): the chat shows its conversation."""
        self.persona_version += 1
        self.refresh_status()

    @property
    def generating(self) -> bool:
        """A chat turn is running (sleep waits for it)."""
        return bool(self.cancels)

    def on_turn_started(self, event: TurnStarted) -> None:
        self.cancels.add(event.cancel)

    def on_turn_finished(self, event: TurnFinished) -> None:
        self.cancels.discard(event.cancel)
        self.touch()
        self.refresh_status()

    def touch(self) -> None:
        """The owner did something: the conversation is not idle (sleep waits for quiet)."""
        self.last_activity = self.clock.now()
        self._schedule_worker = None

    # ------------------------------------------------------------------ stop and quit
    def action_interrupt(self) -> None:
        """Ctrl+C like a terminal (issue 28 item 3): a running reply stops (what was streamed
        stays, marked stopped); with nothing running it asks once, and a second Ctrl+C within a
        few seconds quits. A text field's selection is copied instead (Textual's Ctrl+C)."""
        if self.cancels:
            for cancel in list(self.cancels):
                cancel.set()
            self._quit_asked = None
            return
        focused = self.focused
        selected = getattr(focused, "selected_text", "") if focused is not None else ""
        if selected:
            self.copy_text(selected, S.THE_SELECTION)
            return
        now = time.monotonic()
        if self._quit_asked is not None and now - self._quit_asked <= QUIT_AGAIN_SECONDS:
            self.exit()
            return
        self._quit_asked = now
        self.notify(
            S.quit_again(self.key_of("app.interrupt", "ctrl+c"), self.key_of("app.quit", "ctrl+q")),
            title=S.QUIT_TITLE,
            timeout=QUIT_AGAIN_SECONDS,
        )

    def action_help_quit(self) -> None:
        """Textual's own Ctrl+C (when ``app.interrupt`` was moved to other keys): the same."""
        self.action_interrupt()

    @staticmethod
    def key_label(key: str) -> str:
        return key_label(key)

    def key_of(self, binding_id: str, default: str) -> str:
        """How the first key of a binding reads ("Ctrl+C", "F2", "Alt+1"), keymap applied."""
        key = self.services.config.keymap.get(binding_id, default).split(",")[0]
        return key_label(key)

    # ------------------------------------------------------------------ theme (issue 28 item 8)
    def _apply_theme(self) -> None:
        """The theme saved under ``[ui] theme`` (an unknown name is said, never fatal); then
        every theme the owner picks (palette: "Change theme") is saved there."""
        name = self.services.config.ui.theme
        if name and name != self.theme:
            if name in self.available_themes:
                self.theme = name
            else:
                self.notify(S.unknown_theme(name), severity="warning", timeout=10)
        self.watch(self, "theme", self._theme_chosen, init=False)

    def _theme_chosen(self, name: str) -> None:
        if name and name != self.services.config.ui.theme:
            self._save_theme(name)

    @work(thread=True, exit_on_error=False, name="saving the theme", group="theme")
    def _save_theme(self, name: str) -> None:
        from eva_runtime import config as cfg
        from eva_runtime import config_file

        config = self.services.config
        path = config.path or cfg.default_config_path()
        try:
            config_file.save_changes(path, {"ui.theme": name})
        except cfg.ConfigError as e:
            self.call_from_thread(self.notify, S.theme_not_saved(str(e)), severity="warning")
            return
        self.services.config = replace(config, ui=replace(config.ui, theme=name))

    # ------------------------------------------------------------------ navigation
    def nav_items(self) -> list[tuple[str, str, str]]:
        keymap = self.services.config.keymap
        out = []
        for mode, title, key in NAV:
            # the shortest of its keys: the bar fits 80 columns ("F2" rather than "Alt+2")
            keys = [key_label(k) for k in keymap.get(f"app.{mode}", key).split(",")]
            out.append((mode, title, min(keys, key=len)))
        return out

    def action_go(self, mode: str) -> None:
        if mode != self.current_mode:
            self.switch_mode(mode)

    def action_coming_up(self) -> None:
        """The palette's "Coming up" (SPEC §8.11): the chat's card, on demand."""
        if self.current_mode != "chat":
            self.switch_mode("chat")
        self.call_after_refresh(self._open_coming_up)

    def _open_coming_up(self) -> None:
        chat = next((s for s in reversed(self.screen_stack) if isinstance(s, ChatScreen)), None)
        if chat is not None:
            chat.coming_up.check(on_demand=True)

    # ------------------------------------------------------------------ shared helpers
    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Notices carry config keys ("[sleep] every") and memory text: never markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def copy_text(self, text: str, what: str = "text") -> None:
        """Copy through OSC 52 (works over SSH and in most terminals)."""
        self.copy_to_clipboard(text)
        self.notify(S.copied(what), timeout=3)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.report_worker_failure(event.worker)

    def report_worker_failure(self, worker: Worker) -> None:
        """The one place a failed worker becomes a notice (never a crash)."""
        err = worker.error
        name = worker.name or "background work"
        msg = str(err) or type(err).__name__ if isinstance(err, Exception) else "unknown error"
        self.notify(S.worker_failed(name, msg), severity="error", timeout=12)
        if worker.group == "sleep":
            self.sleep_running = False
            self.sleep_progress = None

    # ------------------------------------------------------------------ command palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for cmd in super().get_system_commands(screen):
            if cmd.title != "Keys":  # Textual's keys panel does not close with Esc: ours does
                yield cmd
        yield SystemCommand(S.KEYS, S.KEYS_HELP, self.action_help)
        for mode, title, key in self.nav_items():
            yield SystemCommand(
                S.go_to(title), S.go_to_help(title, key), partial(self.action_go, mode)
            )
        yield SystemCommand(S.SLEEP_NOW, S.SLEEP_NOW_HELP, self.action_sleep_now)
        yield SystemCommand(S.DRY_RUN_NOW, S.DRY_RUN_HELP, partial(self.action_sleep_now, True))
        yield SystemCommand(S.WAKE, S.WAKE_HELP, self.action_wake)
        yield SystemCommand(*S.CMD_COMING_UP, self.action_coming_up)
        yield SystemCommand(
            "Switch model",
            "Run the chat on another model from the next turn "
            "(packaged, local GGUF or the server's); the chat and memory stay",
            self.action_pick_model,
        )
        yield SystemCommand(
            "Persona's model",
            "Name the model the active persona runs on",
            self.action_pick_persona_model,
        )
        for owner_cmd in owner.owner_commands(
            self
        ):  # issue 13: personas, add, clear, export, backup
            yield SystemCommand(owner_cmd.title, owner_cmd.help, owner_cmd.callback)
        target: Screen | None = screen
        if not isinstance(target, EvaScreen):  # a modal: offer the screen under it
            stack = self.screen_stack
            target = next((s for s in reversed(stack) if isinstance(s, EvaScreen)), None)
        if isinstance(target, EvaScreen):
            for screen_cmd in target.commands():
                yield SystemCommand(screen_cmd.title, screen_cmd.help, screen_cmd.callback)

    # ------------------------------------------------------------------ help
    def action_help(self) -> None:
        """`?`: the keys of the current screen (or dialog) and the keys that work everywhere."""
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
            return
        self.push_screen(HelpScreen.for_screen(self, self.screen))

    def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None:
        """Quitting stops what runs in the background first: the answer being generated (or
        waiting for Eva to wake) is cancelled and a running night is woken, so no worker thread
        keeps the app from closing."""
        for cancel in list(self.cancels):
            cancel.set()
        sl = self.services.sleeper
        if sl is not None and (self.sleep_running or self.sleeping or sl.is_sleeping()):
            with contextlib.suppress(Exception):  # closing anyway
                sl.wake()
        super().exit(result, return_code, message)


def create_app(
    services: Services | None = None,
    *,
    config: EvaConfig | None = None,
    data_dir: str | Path | None = None,
    clock: Clock | None = None,
    cursor_blink: bool = True,
    tick_seconds: float | None = 30.0,
    start_loading: bool = True,
) -> EvaApp:
    """The app factory. With ``services`` the app runs on them as they are (tests); otherwise
    it builds :class:`Services` for ``data_dir`` and brings them up in workers after the first
    paint."""
    if services is None:
        from eva_runtime import config as cfg
        from eva_runtime import config_file

        config = config or config_file.load()
        services = Services(config, data_dir or cfg.default_data_dir(), clock=clock)
        services.first_run_offer = True
    app = EvaApp(
        services,
        clock=clock,
        cursor_blink=cursor_blink,
        tick_seconds=tick_seconds,
        start_loading=start_loading,
    )
    if services.first_run_offer:  # the first run's welcome offers to initialize (issue 13)
        app.welcome_actions.append((S.WELCOME_INIT, partial(owner.init_from_description, app)))
    return app
