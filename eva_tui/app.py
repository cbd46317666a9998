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
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from core.clock import Clock
from eva_tui.config import EvaConfig, format_duration
from eva_tui.messages import TurnFinished, TurnStarted
from eva_tui.palette import MemoryProvider
from eva_tui.services import Services, SleeperLike
from eva_tui.widgets.base import EvaScreen
from eva_tui.widgets.fmt import in_time
from screens import owner
from screens.archive import ArchiveScreen
from screens.chat import ChatScreen
from screens.journal import JournalScreen
from screens.memories import MemoriesScreen
from screens.preview import PreviewScreen
from screens.settings import SettingsScreen

NAV = (
    ("chat", "Chat", "f1"),
    ("memories", "Memories", "f2"),
    ("archive", "Archive", "f3"),
    ("journal", "Sleep journal", "f4"),
    ("preview", "Prompt preview", "f5"),
    ("settings", "Settings", "f6"),
)


class ServicesChanged(Message):
    """A model, the embedder or the store changed state (from a bring-up worker)."""


class MemoryFailed(Message):
    """The store could not be opened (``error`` says why)."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class Woken(Message):
    """Eva was woken (from a worker)."""


class SleepStarted(Message):
    def __init__(self, dry_run: bool | None, reason: str) -> None:
        super().__init__()
        self.dry_run = dry_run
        self.reason = reason


class SleepProgressed(Message):
    def __init__(self, progress: Any) -> None:
        super().__init__()
        self.progress = progress


class SleepFinished(Message):
    def __init__(self, run: Any = None, error: str | None = None) -> None:
        super().__init__()
        self.run = run
        self.error = error


class EvaApp(App):
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
    ]

    status_text: reactive[str] = reactive("")
    memory_version: reactive[int] = reactive(0)  # bumped after every memory change
    services_version: reactive[int] = reactive(0)  # bumped when a model/store changes state
    sleeping: reactive[bool] = reactive(False)
    sleep_running: reactive[bool] = reactive(False)
    sleep_progress: reactive[Any] = reactive(None)
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

    # ------------------------------------------------------------------ start-up
    def on_mount(self) -> None:
        if self.services.config.keymap:
            self.set_keymap(self.services.config.keymap)
        s = self.services
        if self.start_loading and s.memory is None:
            self._bring_up_memory()
        if self.start_loading and s.chat_model is None and s.config.llm.general:
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
        except Exception as e:  # e.g. an unwritable data dir: say so, keep the app up
            self.post_message(MemoryFailed(f"{type(e).__name__}: {e}"))
            raise  # the worker-failure notice tells the owner
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

    @work(thread=True, exit_on_error=False, name="warming up the model", group="bring-up")
    def _warm_up(self) -> None:
        self.services.warm_up()

    def on_memory_failed(self, event: MemoryFailed) -> None:
        self.memory_error = event.error
        self.refresh_status()

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
        if s.memory is not None:
            n = s.memory.count()
            parts.append(f"{n} memor{'y' if n == 1 else 'ies'}")
        else:
            parts.append("memory: unavailable" if self.memory_error else "memory: opening…")
        parts.append(self.sleep_label())
        persona = s.active_persona() if s.memory is not None else None
        if persona is not None and not persona.is_default:
            parts.insert(0, f"persona: {persona.name}")
        self.status_text = "  │  ".join(parts)

    def sleep_label(self) -> str:
        sl = self.services.sleeper
        if sl is None:
            return "sleep: unavailable" if self.services.memory is not None else "sleep: —"
        if self.sleep_running or self.sleeping:
            p = self.sleep_progress
            if p is not None and getattr(p, "total", 0):
                return f"sleeping… {p.stage}/{p.phase} {p.done}/{p.total}"
            return "sleeping…"
        due = sl.next_due_at()  # None: never slept, due now
        now = self.clock.now()
        if due is None or due <= now:
            quiet = format_duration(self.services.config.sleep.idle_for)
            return f"sleep due (after {quiet} quiet)"
        return f"sleep {in_time(due, now)}"

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
        self._schedule_worker: Worker | None = None

    # ------------------------------------------------------------------ navigation
    def nav_items(self) -> list[tuple[str, str, str]]:
        keymap = self.services.config.keymap
        out = []
        for mode, title, key in NAV:
            keys = keymap.get(f"app.{mode}", key).split(",")[0]
            out.append((mode, title, keys.upper() if keys.startswith("f") else keys))
        return out

    def action_go(self, mode: str) -> None:
        if mode != self.current_mode:
            self.switch_mode(mode)

    # ------------------------------------------------------------------ sleep
    def _tick(self) -> None:
        """On the timer: show whether Eva sleeps, and let the sleeper's schedule decide."""
        sl = self.services.sleeper
        if sl is None:
            self.refresh_status()
            return
        self.sync_sleeping()
        scheduling = self._schedule_worker is not None and self._schedule_worker.is_running
        if not (self.sleep_running or self.sleeping or scheduling):
            idle = max(0.0, self.clock.now() - self.last_activity)
            self._schedule_worker = self._schedule(sl, idle, self.generating)

    @work(thread=True, exit_on_error=False, name="sleep schedule", group="tick")
    def _schedule(self, sl: SleeperLike, idle: float, generating: bool) -> None:
        """``Sleeper.tick`` is the one scheduler (SPEC §7): a night that is due after
        ``sleep.idle_for`` of quiet, or that the owner asked for (``memory_consolidate``), runs
        in this worker when nothing generates."""
        if sl.tick(idle, generating):
            runs = sl.runs(limit=1)
            self.post_message(SleepFinished(runs[0] if runs else None))

    def action_sleep_now(self, dry_run: bool | None = None) -> None:
        self.start_sleep(True if dry_run else None, "manual")

    def start_sleep(self, dry_run: bool | None, reason: str) -> None:
        """Sleep now (SPEC §7): one run at a time, in a worker; progress comes as messages."""
        sl = self.services.sleeper
        if sl is None:
            self.notify("Sleep is not available in this build.", severity="warning")
            return
        if self.sleep_running or sl.is_sleeping():
            if reason == "manual":
                self.notify("Eva is already sleeping.")
            return
        self.sleep_running = True
        self.sleeping = True
        self.sleep_progress = None
        self.post_message(SleepStarted(dry_run, reason))
        self._sleep_worker(dry_run, reason)

    @work(thread=True, exit_on_error=False, name="sleep", group="sleep", exclusive=True)
    def _sleep_worker(self, dry_run: bool | None, reason: str) -> None:
        sl = self.services.sleeper
        assert sl is not None
        try:
            run = sl.run(
                dry_run=dry_run,
                reason=reason,
                progress=lambda p: self.post_message(SleepProgressed(p)),
            )
        except Exception as e:
            self.post_message(SleepFinished(None, f"{type(e).__name__}: {e}"))
            return
        self.post_message(SleepFinished(run))

    def on_sleep_started(self, _: SleepStarted) -> None:
        self.refresh_status()

    def on_sleep_progressed(self, event: SleepProgressed) -> None:
        self.sleep_progress = event.progress
        self.refresh_status()

    def on_sleep_finished(self, event: SleepFinished) -> None:
        self.sleep_running = False
        self.sleep_progress = None
        sl = self.services.sleeper
        self.sleeping = bool(sl and sl.is_sleeping())
        if event.error:
            self.notify(f"Sleep failed: {event.error}", severity="error", timeout=12)
        elif event.run is not None:
            run = event.run
            what = "Dry run" if getattr(run, "dry_run", False) else "Sleep"
            summary = getattr(run, "summary", "") or getattr(run, "status", "")
            self.notify(f"{what} finished: {summary}", timeout=8)
        self.memory_changed()
        self._notable_nights()

    def action_wake(self) -> None:
        sl = self.services.sleeper
        if sl is None or not (self.sleeping or self.sleep_running or sl.is_sleeping()):
            self.notify("Eva is awake.")
            return
        self._wake(sl)

    @work(thread=True, exit_on_error=False, name="waking Eva", group="wake")
    def _wake(self, sl: SleeperLike) -> None:
        sl.wake()
        self.post_message(Woken())

    def on_woken(self, _: Woken) -> None:
        self.sync_sleeping()

    def sync_sleeping(self) -> None:
        sl = self.services.sleeper
        self.sleeping = bool(sl is not None and (sl.is_sleeping() or self.sleep_running))
        self.refresh_status()

    def _notable_nights(self) -> None:
        sl = self.services.sleeper
        if sl is None:
            return
        try:
            notable = sl.unseen_notable()
        except Exception:  # the journal is a nicety; never stop start-up for it
            return
        if notable:
            n = len(notable)
            self.notify(
                f"{n} notable night{'s' if n > 1 else ''} in the sleep journal "
                f"({self.nav_items()[3][2]}).",
                title="While you were away",
                timeout=10,
            )

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
        self.notify(f"Copied {what} to the clipboard.", timeout=3)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.report_worker_failure(event.worker)

    def report_worker_failure(self, worker: Worker) -> None:
        """The one place a failed worker becomes a notice (never a crash)."""
        err = worker.error
        name = worker.name or "background work"
        msg = str(err) or type(err).__name__ if isinstance(err, Exception) else "unknown error"
        self.notify(f"{name} failed: {msg}", severity="error", timeout=12)
        if worker.group == "sleep":
            self.sleep_running = False
            self.sleep_progress = None

    # ------------------------------------------------------------------ command palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for mode, title, key in self.nav_items():
            yield SystemCommand(
                f"Go to {title}",
                f"Switch to the {title.lower()} screen ({key})",
                partial(self.action_go, mode),
            )
        yield SystemCommand(
            "Sleep now", "Consolidate the memory now (SPEC §7)", self.action_sleep_now
        )
        yield SystemCommand(
            "Dry run now",
            "Plan a night and journal it without applying",
            partial(self.action_sleep_now, True),
        )
        yield SystemCommand("Wake Eva", "Stop sleeping; queued messages are sent", self.action_wake)
        for cmd in owner.owner_commands(self):  # issue 13: personas, add, clear, export, backup
            yield SystemCommand(cmd.title, cmd.help, cmd.callback)
        target = screen
        if not isinstance(target, EvaScreen):  # a modal: offer the screen under it
            stack = self.screen_stack
            target = next((s for s in reversed(stack) if isinstance(s, EvaScreen)), None)
        if isinstance(target, EvaScreen):
            for cmd in target.commands():
                yield SystemCommand(cmd.title, cmd.help, cmd.callback)

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
        from eva_tui import config as cfg

        config = config or cfg.load()
        services = Services(config, data_dir or cfg.default_data_dir(), clock=clock)
        services.first_run_offer = True
    return EvaApp(
        services,
        clock=clock,
        cursor_blink=cursor_blink,
        tick_seconds=tick_seconds,
        start_loading=start_loading,
    )
