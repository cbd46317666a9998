"""The sleep journal (SPEC §7): each night with its phases, every applied and refused op with
its why; "sleep now", "dry run now", Wake, and progress while a night runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Button, DataTable, Footer, ProgressBar, Static

from eva_runtime.night_text import night_pieces, run_mode
from eva_tui import strings as S
from eva_tui.widgets import EvaScreen, NavBar, PaletteCommand, StatusBar, ago
from eva_tui.widgets.tables import keep_cursor, selected_id

if TYPE_CHECKING:
    from eva_runtime.services import SleeperLike

COLUMNS = tuple(
    (S.JOURNAL_COLUMNS[key], key)
    for key in ("id", "started", "status", "mode", "applied", "refused")
)


class RunsLoaded(Message):
    def __init__(self, runs: list[Any]) -> None:
        super().__init__()
        self.runs = runs


def run_text(run: Any, now: float) -> Text:
    """A night, phase by phase, every op with its why (and the refusal's reason), styled."""
    return Text.assemble(*night_pieces(run, now))


class JournalScreen(EvaScreen):
    # below 100 columns the nights stack above the detail (issue 16: usable at 80×24)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    BINDINGS = [
        Binding("s", "app.sleep_now", "Sleep now", id="journal.sleep"),
        Binding("d", "app.sleep_now(True)", "Dry run now", id="journal.dry_run"),
        Binding("w", "app.wake", "Wake", id="journal.wake"),
        Binding("c", "copy", "Copy night", id="journal.copy"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.runs: dict[int, Any] = {}
        self._marked: set[int] = set()
        self._newest: int | None = None  # the newest night shown (a newer one is followed)

    def compose(self) -> ComposeResult:
        yield NavBar("journal")
        with Horizontal(id="journal-actions"):
            yield Button("Sleep now", id="sleep-now", variant="primary")
            yield Button("Dry run now", id="dry-run")
            yield Button("Wake", id="journal-wake", variant="warning")
            yield Static("", markup=False, id="sleep-state")
        with Horizontal(id="sleep-progress-row"):
            yield ProgressBar(id="sleep-progress", show_eta=False)
            yield Static("", markup=False, id="progress-text")
        with Horizontal(id="journal-body"):
            yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="run-detail"):
                yield Static("", markup=False, id="run-text")
        yield StatusBar()
        yield Footer()

    @property
    def table(self) -> DataTable:
        return self.query_one("#runs", DataTable)

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.table.add_column(label, key=key)
        self.watch(self.app, "sleep_running", self._running_changed, init=True)
        self.watch(self.app, "sleep_progress", self._progress, init=True)
        self.watch(self.app, "services_version", lambda _v: self.reload(), init=False)
        self.table.focus()

    def on_screen_resume(self) -> None:
        self.reload()

    # ------------------------------------------------------------------ runs
    def reload(self) -> None:
        sl = self.services.sleeper
        if sl is None:
            self.query_one("#run-text", Static).update(
                self.app.memory_problem()
                or (S.MEMORY_OPENING if self.services.memory is None else S.SLEEP_NOT_IN_BUILD)
            )
            return
        self._load_runs(sl)

    @work(
        thread=True,
        exit_on_error=False,
        name="loading the sleep journal",
        group="load",
        exclusive=True,
    )
    def _load_runs(self, sl: SleeperLike) -> None:
        self.post_message(RunsLoaded(sl.runs(limit=30)))

    def on_runs_loaded(self, event: RunsLoaded) -> None:
        table = self.table
        keep = selected_id(table)
        newest = max((r.id for r in event.runs), default=None)
        if newest is not None and self._newest is not None and newest > self._newest:
            keep = newest  # a night just ran (sleep now, dry run, the schedule): show it
        self._newest = newest
        table.clear()
        now = self.services.clock.now()
        self.runs = {r.id: r for r in event.runs}
        for r in event.runs:
            ops = [o for p in r.phases for o in p.ops]
            applied = sum(1 for o in ops if o.applied)
            refused = sum(1 for o in ops if o.refused_reason is not None)
            status = r.status + (" ★" if r.notable else "")
            table.add_row(
                str(r.id),
                ago(r.started_at, now),
                status,
                run_mode(r),
                str(applied),
                str(refused),
                key=str(r.id),
            )
        keep_cursor(table, keep)
        if not event.runs:
            self.query_one("#run-text", Static).update(S.NO_NIGHTS)
        else:
            self._show(selected_id(table))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._show(int(event.row_key.value))

    def _show(self, run_id: int | None) -> None:
        run = self.runs.get(run_id) if run_id is not None else None
        if run is None:
            return
        self.query_one("#run-text", Static).update(run_text(run, self.services.clock.now()))
        sl = self.services.sleeper
        if (
            sl is not None
            and run.notable
            and not getattr(run, "seen", False)
            and run.id not in self._marked
        ):
            self._marked.add(run.id)
            self._mark_seen(sl, run.id)

    @work(thread=True, exit_on_error=False, name="marking a night seen", group="seen")
    def _mark_seen(self, sl: SleeperLike, run_id: int) -> None:
        sl.mark_seen(run_id)

    # ------------------------------------------------------------------ progress
    def _running_changed(self, running: bool) -> None:
        row = self.query_one("#sleep-progress-row")
        row.display = running
        self.query_one("#sleep-now", Button).disabled = running
        self.query_one("#dry-run", Button).disabled = running
        self.query_one("#sleep-state", Static).update(S.EVA_SLEEPING if running else "")
        if not running:
            self.reload()

    def _progress(self, p: Any) -> None:
        bar = self.query_one("#sleep-progress", ProgressBar)
        if p is None:
            bar.update(total=None, progress=0)
            self.query_one("#progress-text", Static).update("")
            return
        bar.update(total=p.total or None, progress=p.done)
        self.query_one("#progress-text", Static).update(
            f"{p.stage} / {p.phase}: {p.message}" if p.message else f"{p.stage} / {p.phase}"
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "sleep-now":
            self.app.action_sleep_now()
        elif event.button.id == "dry-run":
            self.app.action_sleep_now(True)
        elif event.button.id == "journal-wake":
            self.app.action_wake()

    def action_copy(self) -> None:
        run = self.runs.get(selected_id(self.table) or -1)
        if run is None:
            self.notify(S.SELECT_NIGHT)
            return
        self.app.copy_text(
            run_text(run, self.services.clock.now()).plain,
            f"night #{run.id}",
        )

    def commands(self) -> list[PaletteCommand]:
        c = S.CMD_JOURNAL
        return [
            PaletteCommand(*c["copy"], self.action_copy),
            PaletteCommand(*c["reload"], self.reload),
        ]
