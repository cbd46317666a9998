"""Issue 15: the app's sleep with the real ``core.sleep.Sleeper`` (not the fake): "sleep now"
journals a night and the status bar follows it; the app's scheduler (its timer → the sleeper's
``tick``) runs a due night after ``idle_for`` of quiet; and the status bar runs no SQL on the
event loop (its memory count and sleep schedule are read in memory or by workers)."""

from __future__ import annotations

import threading

from core import ManualClock, Memory, MemoryConfig
from core.sleep import Sleeper
from eva_runtime import config as cfg
from eva_runtime.services import Services, build_sleeper
from eva_tui.app import create_app
from tests.tui.conftest import NOW, SEED, SIZE, aio, settle, until
from tests.tui.fakes import PlannedLLM


def real_env(tmp_path, tick_seconds=None, sleep=None):
    clock = ManualClock(NOW)
    memory = Memory.open(tmp_path / "memory.db", MemoryConfig(), clock)
    memory.import_records([dict(r) for r in SEED])
    config = cfg.from_mapping(
        {
            "memory": {"embedding_model": "none"},
            "sleep": sleep or {"every": "24h", "idle_for": "15m"},
        },
        tmp_path / "config.toml",
    )
    services = Services(
        config,
        tmp_path,
        clock=clock,
        memory=memory,
        chat_model=PlannedLLM([]),
        sleeper_factory=build_sleeper,
    )
    assert isinstance(services.sleeper, Sleeper)  # the real one
    app = create_app(services, clock=clock, cursor_blink=False, tick_seconds=tick_seconds)
    return app, services, memory, clock


@aio
async def test_sleep_now_runs_the_real_sleeper_and_the_status_bar_follows(tmp_path):
    app, services, memory, clock = real_env(tmp_path)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert "sleep due" in app.status_text  # never slept: due now
            app.action_sleep_now()
            await until(pilot, lambda: not app.sleep_running)
            await settle(pilot)
            runs = services.sleeper.runs()
            assert len(runs) == 1 and runs[0].reason == "manual"
            assert runs[0].status in ("done", "skipped")
            assert "sleep in 24h" in app.status_text  # countdowns round up (issue 16)
    finally:
        services.close()


@aio
async def test_the_apps_scheduler_runs_a_due_night_after_quiet(tmp_path):
    app, services, memory, clock = real_env(tmp_path, tick_seconds=0.05)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.pause(0.3)
            assert services.sleeper.runs() == []  # due, but not quiet for idle_for yet
            clock.advance(16 * 60)
            await until(pilot, lambda: len(services.sleeper.runs()) == 1)
            await until(pilot, lambda: "sleep in" in app.status_text)
            assert services.sleeper.runs()[0].reason == "schedule"
    finally:
        services.close()


@aio
async def test_the_status_bar_runs_no_sql_on_the_event_loop(tmp_path):
    app, services, memory, clock = real_env(tmp_path)
    seen: list[tuple[str, str]] = []
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            loop_thread = threading.get_ident()
            memory._storage.conn.set_trace_callback(
                lambda sql: seen.append((threading.get_ident(), sql))
            )
            for _ in range(3):
                app.refresh_status()
                await settle(pilot)
            on_loop = [sql for tid, sql in seen if tid == loop_thread]
            assert on_loop == []
            assert "5 memories" in app.status_text or "4 memories" in app.status_text
            memory._storage.conn.set_trace_callback(None)
    finally:
        services.close()
