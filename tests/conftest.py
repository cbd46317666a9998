"""Shared fixtures: a fresh store on a manual clock."""

from __future__ import annotations

import pytest

from core import ManualClock, Memory, MemoryConfig

DAY = 86_400.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_780_000_000.0)


@pytest.fixture
def mem(tmp_path, clock):
    m = Memory.open(tmp_path / "memory.db", MemoryConfig(), clock)
    yield m
    m.close()
