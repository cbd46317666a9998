"""Issue 25 item 2: the data directory is the owner's. It is made 0700 and every file Eva
writes there is 0600 (store, WAL, SHM, persisted index, backups, exports, the serve token); a
data dir an older Eva left open to other users is narrowed when the store is opened, and the
owner is told once."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from core import ManualClock, Memory, MemoryConfig, ownership
from core.privacy import OWNER_TRUSTED
from eva_tui import cli
from eva_tui import config as cfg
from eva_tui.services import Services
from tests.fake_llm import ScriptedLLM

NOW = 1_780_000_000.0
SECRET = "Anna's diagnosis is confidential zq7"


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


@pytest.fixture(autouse=True)
def usual_umask():
    """The umask most systems run with (022): without Eva's care, files come out 0644."""
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("EVA_MEMORY__EMBEDDING_MODEL", "none")


def walk(data: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(every directory, every file) under ``data`` with its mode, by relative path."""
    dirs, files = {".": mode(data)}, {}
    for root, ds, fs in os.walk(data):
        for d in ds:
            dirs[os.path.relpath(Path(root, d), data)] = mode(Path(root, d))
        for f in fs:
            files[os.path.relpath(Path(root, f), data)] = mode(Path(root, f))
    return dirs, files


def services(data: Path, replies=None) -> Services:
    config = cfg.from_mapping({"memory": {"embedding_model": "none"},
                               "sleep": {"min_memories": 0}}, None)
    llm = ScriptedLLM(replies if replies is not None else [["Noted", "."]] * 20,
                      plans=[{"ops": []}] * 20)
    return Services(config, data, clock=ManualClock(NOW), chat_model=llm)


# ---------------------------------------------------------------------------- the store
def test_a_new_store_and_its_wal_are_0600(tmp_path):
    mem = Memory.open(tmp_path / "x" / "memory.db", MemoryConfig(), ManualClock(NOW))
    try:
        mem.save("a fact for the WAL", OWNER_TRUSTED)
        assert mode(tmp_path / "x") == 0o700
        for name in ("memory.db", "memory.db-wal", "memory.db-shm"):
            assert mode(tmp_path / "x" / name) == 0o600, name
    finally:
        mem.close()
    assert mode(tmp_path / "x" / "memory.db.index") == 0o600


# ---------------------------------------------------------------------------- the helpers
def test_a_backup_dir_the_owner_named_is_not_changed(tmp_path, cli_env):
    """`eva backup DIR`: the file is 0600; an existing DIR keeps its mode (it is not Eva's),
    a missing one is made 0700."""
    data = tmp_path / "eva"
    Memory.open(data / "memory.db", MemoryConfig(), ManualClock(NOW)).close()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    assert cli.main(["--data", str(data), "backup", str(shared)]) == 0
    (dest,) = shared.iterdir()
    assert mode(shared) == 0o755 and mode(dest) == 0o600
    assert cli.main(["--data", str(data), "backup", str(tmp_path / "new" / "bk")]) == 0
    assert mode(tmp_path / "new" / "bk") == 0o700


def test_narrowing_only_takes_bits_away_and_follows_no_symlink(tmp_path):
    data = tmp_path / "eva"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    (data / "memory.db").write_bytes(b"")
    os.chmod(data / "memory.db", 0o444)  # read-only by the owner's choice: stays read-only
    outside = tmp_path / "outside.txt"
    outside.write_text("not in the data dir")
    os.chmod(outside, 0o644)
    (data / "memory.db.index").symlink_to(outside)
    loosened = ownership.tighten(data)
    assert sorted(loosened) == sorted([str(data), str(data / "memory.db")])
    assert mode(data) == 0o700 and mode(data / "memory.db") == 0o400
    assert mode(outside) == 0o644
    assert ownership.tighten(data) == [] and ownership.tighten(tmp_path / "missing") == []
    assert ownership.tightened_note(data, []) is None


def test_open_private_narrows_a_file_that_was_there(tmp_path):
    p = tmp_path / "f"
    p.write_text("old")
    os.chmod(p, 0o644)
    with ownership.open_private(p, "w", encoding="utf-8") as f:
        f.write("new")
    assert p.read_text() == "new" and mode(p) == 0o600
    with pytest.raises(FileExistsError):
        ownership.open_private(p, "x")
    link = tmp_path / "link"
    link.symlink_to(p)
    with pytest.raises(OSError):
        ownership.open_private(link, "w")


def test_a_backup_is_never_readable_by_others_while_it_is_written(tmp_path, monkeypatch):
    """The backup's temporary file is 0600 before SQLite writes a page into it."""
    mem = Memory.open(tmp_path / "memory.db", MemoryConfig(), ManualClock(NOW))
    mem.save(SECRET, OWNER_TRUSTED, private=True)
    seen: list[int] = []
    real = sqlite3.connect

    def spy(path, *a, **kw):
        if str(path).endswith(".part"):
            seen.append(mode(Path(path)))
        return real(path, *a, **kw)

    monkeypatch.setattr(sqlite3, "connect", spy)
    mem.backup(tmp_path / "b.db")
    monkeypatch.undo()
    mem.close()
    assert seen and set(seen) == {0o600}
