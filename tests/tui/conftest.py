"""The TUI under test: built by the app factory on a temporary store, a scripted model, a fixed
clock and a fake sleeper; no cursor blink, no timers."""

from __future__ import annotations

import asyncio
import fcntl
import functools
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from core import ManualClock, Memory, MemoryConfig
from eva_runtime import config as cfg
from eva_runtime.services import Services
from eva_tui.app import EvaApp, create_app
from eva_tui.widgets import TurnView
from tests.fake_llm import ScriptedLLM
from tests.tui.fakes import FakeLoader, FakeSleeper, PlannedLLM

NOW = 1_780_000_000.0
DAY = 86_400.0
SIZE = (110, 32)

SEED = [
    {
        "content": "The owner is Sasha; likes short, direct answers",
        "kind": "core",
        "importance": 5,
        "pinned": True,
        "created_at": NOW - 90 * DAY,
    },
    {
        "content": "Sister Anna lives in Kazan, Pushkin street 12",
        "kind": "fact",
        "importance": 4,
        "private": True,
        "created_at": NOW - 40 * DAY,
    },
    {
        "content": "The cat Murka likes salmon",
        "kind": "fact",
        "importance": 3,
        "created_at": NOW - 10 * DAY,
    },
    {
        "content": "Went hiking along the Volga last weekend",
        "kind": "event",
        "importance": 2,
        "created_at": NOW - 5 * DAY,
    },
    {
        "content": "Writes backend services in Go at work",
        "kind": "fact",
        "importance": 3,
        "scope": "work",
        "created_at": NOW - 2 * DAY,
    },
]


@dataclass
class Env:
    app: EvaApp
    memory: Memory
    llm: ScriptedLLM | None
    sleeper: FakeSleeper | None
    clock: ManualClock
    services: Services
    config_path: Path


def build(
    tmp_path: Path,
    replies=None,
    *,
    plans=None,
    seed=(),
    llm=None,
    model: bool = True,
    sleeper: FakeSleeper | None | bool = True,
    keymap: dict | None = None,
    chat: dict | None = None,
    reminders: dict | None = None,
    config_path: Path | None = None,
) -> Env:
    clock = ManualClock(NOW)
    memory = Memory.open(tmp_path / "memory.db", MemoryConfig(), clock)
    if seed:
        memory.import_records([dict(r) for r in seed])
    if model and llm is None:
        llm = PlannedLLM(list(replies or []), plans)
    data: dict = {"memory": {"embedding_model": "none"}}
    if keymap:
        data["keymap"] = keymap
    if chat:
        data["chat"] = chat
    if reminders:
        data["reminders"] = reminders
    config_path = config_path or tmp_path / "config.toml"
    config = cfg.from_mapping(data, config_path)
    if sleeper is True:
        sleeper = FakeSleeper(clock)
    services = Services(
        config,
        tmp_path,
        clock=clock,
        memory=memory,
        chat_model=llm if model else None,
        sleeper=sleeper or None,
        sleeper_factory=lambda s: None,
        loader=None if model else FakeLoader(),
    )
    app = create_app(services, clock=clock, cursor_blink=False, tick_seconds=None)
    return Env(app, memory, llm, sleeper or None, clock, services, config_path)


def aio(fn):
    """Run an async test with asyncio.run (no async plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


async def settle(pilot, rounds: int = 3) -> None:
    """Let workers finish and the messages they posted be handled."""
    for _ in range(rounds):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def send(pilot, text: str) -> None:
    prompt = pilot.app.screen.query_one("#prompt")
    prompt.value = text
    prompt.focus()
    await pilot.press("enter")
    await settle(pilot)


def spy_notices(app) -> list[str]:
    """The notifications the app shows from now on, as text, in order (``app.notify`` still
    shows them)."""
    seen: list[str] = []
    original = app.notify

    def notify(message, **kw):
        seen.append(str(message))
        return original(message, **kw)

    app.notify = notify
    return seen


def answers(app) -> list[TurnView]:
    """Eva's answers in the chat on screen (a turn view with a turn id; not the welcome)."""
    return [v for v in app.screen.query(TurnView) if v.turn_id]


async def until(pilot, condition, rounds: int = 400) -> None:
    """Pump the app until ``condition()`` holds (a bounded number of rounds, no clock)."""
    for _ in range(rounds):
        if condition():
            return
        await pilot.pause(0.01)
    assert condition(), "the app never reached the expected state"


@pytest.fixture
def env_factory():
    # The data dir has the same path on every run (the welcome names it, and snapshots show
    # the welcome): pytest's tmp_path grows a digit as runs pile up (pytest-9, pytest-62),
    # which rewrapped the welcome text behind a modal and failed a snapshot.
    # Two test runs at once (two checkouts on one machine) would share it: each test holds an
    # exclusive lock on it for its life, so the other run waits for it instead of losing its
    # store mid-test ("disk I/O error").
    data = Path(tempfile.gettempdir()) / "eva-tui-test"
    with open(Path(tempfile.gettempdir()) / "eva-tui-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir()
        made: list[Env] = []

        def make(*args, **kwargs) -> Env:
            e = build(data, *args, **kwargs)
            made.append(e)
            return e

        try:
            yield make
        finally:
            for e in made:
                e.memory.close()
            shutil.rmtree(data, ignore_errors=True)


__all__ = [
    "aio",
    "DAY",
    "NOW",
    "SEED",
    "SIZE",
    "Env",
    "build",
    "replace",
    "send",
    "settle",
    "until",
]
