"""Issue 15, clear errors: `eva sleep` and `eva calibrate` on a corrupt store, an unwritable or
impossible --data, and a full disk say what failed and what to do (exit 1) — never a traceback,
and the damaged file is left as it was."""

from __future__ import annotations

import os
import sqlite3

import pytest

from eva_tui import cli


def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("EVA_MEMORY__EMBEDDING_MODEL", "none")
    monkeypatch.setenv("EVA_LLM__MODEL__GENERAL", str(tmp_path / "missing.gguf"))


@pytest.mark.parametrize("cmd", [["sleep"], ["sleep", "--dry-run"], ["calibrate"]])
def test_a_corrupt_store_is_a_clear_error_and_left_untouched(tmp_path, monkeypatch, capsys, cmd):
    _env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    junk = b"this is not an SQLite file " * 200
    (data / "memory.db").write_bytes(junk)
    rc = cli.main(["--data", str(data), *cmd])
    err = capsys.readouterr().err
    assert rc == 1
    assert "is damaged" in err and str(data / "memory.db") in err and "backup" in err
    assert "Traceback" not in err
    assert (data / "memory.db").read_bytes() == junk


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
@pytest.mark.parametrize("cmd", [["sleep"], ["calibrate"]])
def test_an_unwritable_data_dir_is_a_clear_error(tmp_path, monkeypatch, capsys, cmd):
    _env(monkeypatch, tmp_path)
    data = tmp_path / "locked"
    data.mkdir()
    data.chmod(0o500)
    try:
        rc = cli.main(["--data", str(data / "inner"), *cmd])
    finally:
        data.chmod(0o700)
    err = capsys.readouterr().err
    assert rc == 1 and "not writable" in err and "--data" in err


def test_data_that_is_a_file_is_a_clear_error(tmp_path, monkeypatch, capsys):
    _env(monkeypatch, tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    rc = cli.main(["--data", str(blocker), "sleep"])
    err = capsys.readouterr().err
    assert rc == 1 and str(blocker) in err and "Traceback" not in err


def test_a_full_disk_during_sleep_is_a_clear_error(tmp_path, monkeypatch, capsys):
    _env(monkeypatch, tmp_path)
    from core.sleep import Sleeper

    def full(self, **kw):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Sleeper, "run", full)
    rc = cli.main(["--data", str(tmp_path / "data"), "sleep"])
    err = capsys.readouterr().err
    assert rc == 1 and "is full" in err and "free some space" in err


@pytest.mark.parametrize("problem", [
    PermissionError(13, "Permission denied"),
    sqlite3.OperationalError("attempt to write a readonly database"),
    sqlite3.DatabaseError("database disk image is malformed"),
    OSError(28, "No space left on device"),
])
def test_each_store_problem_names_a_fix(tmp_path, problem):
    msg = cli.store_problem(problem, tmp_path)
    assert str(tmp_path) in msg
    assert any(w in msg for w in ("--data", "backup", "free some space"))
