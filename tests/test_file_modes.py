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
from core.memory import portability
from core.privacy import OWNER_TRUSTED
from eva_api.token import ensure_token
from eva_runtime import config as cfg
from eva_runtime.services import Services
from eva_tui import cli
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
    config = cfg.from_mapping(
        {"memory": {"embedding_model": "none"}, "sleep": {"min_memories": 0}}, None
    )
    llm = ScriptedLLM(
        replies if replies is not None else [["Noted", "."]] * 20, plans=[{"ops": []}] * 20
    )
    return Services(config, data, clock=ManualClock(NOW), chat_model=llm)


# ---------------------------------------------------------------------------- a full session
def test_a_full_session_leaves_only_the_owners_files(tmp_path, cli_env, capsys):
    """The real paths of a session in a fresh data dir: open the store, save (private too),
    a turn, a night, the index persisted at close, a backup, an export with -o into the data
    dir, the serve token — then every directory is 0700 and every file 0600."""
    data = tmp_path / "home" / "eva"
    s = services(data)
    s.open_memory()
    s.finish()
    assert s.take_problems() == []  # a fresh dir: nothing to tell
    s.memory.save(SECRET, OWNER_TRUSTED, private=True, importance=4)
    s.memory.save("The cat Murka likes salmon", OWNER_TRUSTED, importance=3)
    s.memory.save("Went hiking along the Volga", OWNER_TRUSTED, kind="event")
    list(s.conversation.turn("What does Murka like?", s.turn_context()))
    # SQLite gives the WAL and the SHM the store's own bits: they are the owner's from birth
    assert mode(data / "memory.db-wal") == 0o600 and mode(data / "memory.db-shm") == 0o600
    s.sleeper.run(reason="manual")
    backup = portability.backup(s.memory, data / "backups", NOW)
    s.close()
    assert (data / "memory.db.index").exists()  # persisted at close
    assert (
        cli.main(["--data", str(data), "export", "--private", "-o", str(data / "mine.jsonl")]) == 0
    )
    assert cli.main(["--data", str(data), "backup", str(data / "backups")]) == 0
    assert "note:" not in capsys.readouterr().err
    ensure_token(data)

    dirs, files = walk(data)
    assert {
        "memory.db",
        "memory.db.index",
        "mine.jsonl",
        "serve.token",
        os.path.relpath(backup, data),
    } <= set(files)
    assert SECRET in (data / "mine.jsonl").read_text()
    assert {k: v for k, v in dirs.items() if v != 0o700} == {}
    assert {k: v for k, v in files.items() if v != 0o600} == {}
    # the parent Eva made on the way is not the data dir: it is made as mkdir -p makes it
    assert mode(tmp_path / "home") == 0o755


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


# ---------------------------------------------------------------------------- an old data dir
def loosen(data: Path) -> None:
    """What an older Eva left: a 0755 data dir of 0644 files, backups and exports too."""
    mem = Memory.open(data / "memory.db", MemoryConfig(), ManualClock(NOW))
    mem.save(SECRET, OWNER_TRUSTED, private=True)
    portability.backup(mem, data / "backups", NOW)
    mem.close()
    (data / "exports").mkdir()
    (data / "exports" / "eva-export-20260101-000000.jsonl").write_text("{}\n")
    ensure_token(data)
    for root, ds, fs in os.walk(data):
        for d in ds:
            os.chmod(Path(root, d), 0o755)
        for f in fs:
            os.chmod(Path(root, f), 0o644)
    os.chmod(data, 0o755)


def test_an_open_data_dir_is_narrowed_at_open_and_the_owner_told_once(tmp_path):
    data = tmp_path / "eva"
    data.mkdir()
    loosen(data)
    (data / "notes.txt").write_text("the owner's own file")  # not Eva's: left as it is
    os.chmod(data / "notes.txt", 0o644)

    s = services(data)
    s.open_memory()
    s.finish()
    notes = s.take_problems()
    assert len(notes) == 1 and str(data) in notes[0] and "0700" in notes[0]
    dirs, files = walk(data)
    assert {k: v for k, v in dirs.items() if v != 0o700} == {}
    assert {k: v for k, v in files.items() if v != 0o600} == {"notes.txt": 0o644}
    s.close()

    again = services(data)  # the next start has nothing to tell
    again.open_memory()
    again.finish()
    assert again.take_problems() == []
    again.close()


def test_the_cli_narrows_an_open_store_and_says_so_once(tmp_path, cli_env, capsys):
    data = tmp_path / "eva"
    data.mkdir()
    loosen(data)
    assert cli.main(["--data", str(data), "export"]) == 0
    err = capsys.readouterr().err
    assert err.count("note: The data dir") == 1 and str(data) in err
    assert mode(data) == 0o700 and mode(data / "memory.db") == 0o600
    assert mode(data / "serve.token") == 0o600
    assert cli.main(["--data", str(data), "export"]) == 0
    assert "note: The data dir" not in capsys.readouterr().err


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


def test_setup_assembling_the_models_leaves_the_data_dir_alone(tmp_path, monkeypatch):
    """Issue 32 item 4: `make setup` assembles the weights into the cache
    ($XDG_CACHE_HOME/eva/models), not the data dir: the data dir is neither made nor touched
    before Eva first starts (and makes it 0700). The weights keep 0644 (public files)."""
    import hashlib

    from models.packaged import assemble_parts, models_dir

    monkeypatch.delenv("EVA_MODELS_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    part = tmp_path / "chunk"
    part.write_bytes(b"weights")
    dest = models_dir() / "m.gguf"
    assemble_parts([part], dest, 7, hashlib.sha256(b"weights").hexdigest())
    assert dest == tmp_path / "cache" / "eva" / "models" / "m.gguf" and mode(dest) == 0o644
    assert not (tmp_path / "xdg").exists()
