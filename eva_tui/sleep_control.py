"""Eva's sleep as the app runs it (SPEC §7): the timer's tick that lets the sleeper's schedule
decide, sleeping now (F8/F9, the palette), waking (F7), the status line's sleep label, and the
journal's unseen notable nights. :class:`eva_tui.app.EvaApp` is built on :class:`SleepControl`;
every store read runs in a thread worker, never on the event loop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App
from textual.reactive import reactive

from eva_runtime.config import format_duration
from eva_runtime.services import SleeperLike
from eva_tui import strings as S
from eva_tui.messages import ScheduleRead, SleepFinished, SleepProgressed, SleepStarted, Woken
from eva_tui.widgets.fmt import in_time

if TYPE_CHECKING:
    from textual.worker import Worker

    from core.clock import Clock
    from eva_runtime.services import Services


class SleepControl(App):
    """The sleep part of :class:`eva_tui.app.EvaApp`: its state (reactive, for the screens that
    show it), the schedule's worker, sleeping and waking in workers, their messages."""

    sleeping: reactive[bool] = reactive(False)
    sleep_running: reactive[bool] = reactive(False)
    sleep_progress: reactive[Any] = reactive(None)

    if TYPE_CHECKING:  # EvaApp's, used here
        services: Services
        clock: Clock
        last_activity: float
        _schedule_worker: Worker | None

        @property
        def generating(self) -> bool: ...
        def refresh_status(self) -> None: ...
        def memory_problem(self) -> str | None: ...
        def memory_changed(self) -> None: ...
        def nav_items(self) -> list[tuple[str, str, str]]: ...

    def sleep_label(self) -> str:
        sl = self.services.sleeper
        if sl is None:
            return "sleep: unavailable" if self.services.memory is not None else "sleep: —"
        if self.sleep_running or self.sleeping:
            p = self.sleep_progress
            if p is not None and p.total:
                return f"sleeping… {p.stage}/{p.phase} {p.done}/{p.total}"
            return "sleeping…"
        if not self.services.schedule_read:  # read in a worker, never on the event loop
            self._read_schedule()
            return "sleep: …"
        due = self.services.next_due  # None: never slept, due now
        now = self.clock.now()
        if due is None or due <= now:
            quiet = format_duration(self.services.config.sleep.idle_for)
            return f"sleep due (after {quiet} quiet)"
        return f"sleep {in_time(due, now)}"

    @work(
        thread=True,
        exit_on_error=False,
        name="reading the sleep schedule",
        group="schedule",
        exclusive=True,
    )
    def _read_schedule(self) -> None:
        self.services.refresh_schedule()
        if self.services.schedule_read:
            self.post_message(ScheduleRead())

    def on_schedule_read(self, _: ScheduleRead) -> None:
        self.refresh_status()

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
            self.services.refresh_schedule()
            self.post_message(SleepFinished(runs[0] if runs else None))
            return
        before = self.services.next_due
        self.services.refresh_schedule()  # e.g. `eva sleep` ran a night in another process
        if self.services.next_due != before:
            self.post_message(ScheduleRead())

    def action_sleep_now(self, dry_run: bool | None = None) -> None:
        self.start_sleep(True if dry_run else None, "manual")

    def start_sleep(self, dry_run: bool | None, reason: str) -> None:
        """Sleep now (SPEC §7): one run at a time, in a worker; progress comes as messages."""
        sl = self.services.sleeper
        if sl is None:
            problem = self.memory_problem()
            if problem:
                self.notify(problem, severity="error", timeout=12)
            elif self.services.memory is None:
                self.notify(S.MEMORY_OPENING)
            else:
                self.notify(S.SLEEP_NOT_IN_BUILD, severity="warning")
            return
        if self.sleep_running or sl.is_sleeping():
            if reason == "manual":
                self.notify(S.SLEEPING_ALREADY)
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
                progress=lambda p: (self.post_message(SleepProgressed(p)), None)[1],
            )
        except Exception as e:
            self.services.refresh_schedule()
            self.post_message(SleepFinished(None, f"{type(e).__name__}: {e}"))
            return
        self.services.refresh_schedule()
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
            self.notify(S.sleep_failed(event.error), severity="error", timeout=12)
        elif event.run is not None:
            run = event.run
            summary = getattr(run, "summary", "") or getattr(run, "status", "")
            self.notify(S.sleep_finished(bool(getattr(run, "dry_run", False)), summary), timeout=8)
        self.memory_changed()
        self._notable_nights()

    def action_wake(self) -> None:
        sl = self.services.sleeper
        if sl is None or not (self.sleeping or self.sleep_running or sl.is_sleeping()):
            self.notify(S.AWAKE)
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
        if self.services.sleeper is not None:
            self._read_notable()

    @work(thread=True, exit_on_error=False, name="reading the sleep journal", group="notable")
    def _read_notable(self) -> None:
        """The journal's unseen notable nights, read off the event loop (SQL)."""
        sl = self.services.sleeper
        try:
            notable = sl.unseen_notable() if sl is not None else []
        except Exception:  # the journal is a nicety; never stop start-up for it
            return
        if notable:
            self.call_from_thread(self._announce_notable, len(notable))

    def _announce_notable(self, n: int) -> None:
        self.notify(S.notable_nights(n, self.nav_items()[3][2]), title=S.NOTABLE_TITLE, timeout=10)
