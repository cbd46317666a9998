"""Issue 15, disk full on a small filesystem we create (a tmpfs mounted with ``size=``): during
saves, a night of sleep (stopping at different phases) and an online backup, the error is clear,
the store stays consistent, nothing committed is lost, and with room again it works on. Skipped
where this machine does not allow mounting (tests/diskfull.py)."""

from __future__ import annotations

import logging

import pytest

from tests import diskfull


@pytest.fixture(autouse=True)
def _need_mount():
    try:
        with diskfull.small_fs(64):
            pass
    except (diskfull.Unavailable, FileNotFoundError) as e:
        pytest.skip(f"cannot mount a small tmpfs here: {e}")


def test_saves_until_the_disk_is_full():
    r = diskfull.save_until_full()
    assert r["saved_before_full"] >= 1 and r["lost"] == 0


@pytest.mark.parametrize("leave_kb", [16, 128, 256])
def test_a_night_on_a_full_disk(leave_kb, caplog):
    caplog.set_level(logging.CRITICAL)
    r = diskfull.sleep_when_full(leave_kb)
    assert r["faults"] == 1 and r["lost"] == 0, r


def test_a_backup_into_a_full_disk():
    r = diskfull.backup_when_full()
    assert "full" in r["error"]
