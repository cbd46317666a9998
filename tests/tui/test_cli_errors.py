"""Issue 15, clear errors: `eva sleep` and `eva calibrate` on a corrupt store, an unwritable or
impossible --data, and a full disk say what failed and what to do (exit 1) — never a traceback,
and the damaged file is left as it was. Issue 25 item A: every command goes through one guard
in ``cli.main`` — one sentence, a documented exit code, a traceback only with EVA_DEBUG=1."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from eva_runtime import cli_files, cli_io, cli_memory, config_file
from eva_runtime import config as cfg
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


@pytest.mark.parametrize(
    "problem",
    [
        PermissionError(13, "Permission denied"),
        sqlite3.OperationalError("attempt to write a readonly database"),
        sqlite3.DatabaseError("database disk image is malformed"),
        OSError(28, "No space left on device"),
    ],
)
def test_each_store_problem_names_a_fix(tmp_path, problem):
    msg = cli_io.store_problem(problem, tmp_path)
    assert str(tmp_path) in msg
    assert any(w in msg for w in ("--data", "backup", "free some space"))


# ---------------------------------------------------------------------------------- issue 25
# Item A: one error path for every command. Each failure is one sentence on stderr prefixed
# "eva: ", a documented exit code (cli_io.EXIT_CODES), and never a traceback unless EVA_DEBUG=1.
ROOT = Path(__file__).resolve().parents[2]
T0 = 1_780_000_000.0


def _store(path: Path, n: int = 2, width: int = 0) -> None:
    """A store at ``path`` (memory.db) holding ``n`` memories."""
    from core import ManualClock, Memory, MemoryConfig

    path.parent.mkdir(parents=True, exist_ok=True)
    with Memory.open(path, MemoryConfig(), ManualClock(T0)) as mem:
        mem.import_records(
            [{"content": f"Memory number {k} zq{k}x " + "w" * width} for k in range(n)]
        )


def _damage(kind: str, tmp_path: Path) -> Path:
    """A data dir whose store cannot be used, in one of four ways."""
    data = tmp_path / "data"
    if kind == "junk":
        data.mkdir()
        (data / "memory.db").write_bytes(b"this is not an SQLite file " * 200)
    elif kind == "directory":
        (data / "memory.db").mkdir(parents=True)
    elif kind == "future schema":
        _store(data / "memory.db")
        con = sqlite3.connect(data / "memory.db")
        con.execute("PRAGMA user_version = 9999")
        con.commit()
        con.close()
    elif kind == "under a file":  # unwritable, even for root: a path through a regular file
        (tmp_path / "plain").write_text("x")
        data = tmp_path / "plain" / "data"
    return data


def _errors(err: str) -> list[str]:
    """stderr's lines less the notes (``note: …``, e.g. the data dir narrowed to the owner's)."""
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("note: ")]


def _one_sentence(err: str) -> None:
    lines = _errors(err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert lines and lines[0].startswith("eva: "), err


def _cmd(cmd: str, tmp_path: Path) -> list[str]:
    if cmd == "import":
        good = tmp_path / "good.jsonl"
        good.write_text(json.dumps({"content": "The cat Murka likes salmon"}) + "\n")
        return ["import", str(good)]
    if cmd == "backup":
        return ["backup", str(tmp_path / "bk")]
    return [cmd]


DAMAGES = ["junk", "directory", "future schema", "under a file"]


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("cmd", ["export", "import", "backup", "sleep", "calibrate"])
def test_every_command_on_an_unusable_store_is_one_sentence(
    tmp_path, monkeypatch, capsys, cmd, damage
):
    """Issue 25 item A: export, import and backup (like sleep and calibrate) on a damaged
    store, a directory in place of memory.db, a store of a newer schema, or a data dir that
    cannot be made say so in one sentence, exit 1, and leave the store as it was."""
    _env(monkeypatch, tmp_path)
    data = _damage(damage, tmp_path)
    before = (data / "memory.db").read_bytes() if (data / "memory.db").is_file() else None
    rc = cli.main(["--data", str(data), *_cmd(cmd, tmp_path)])
    err = capsys.readouterr().err
    assert rc == 1, err
    _one_sentence(err)
    assert str(data) in err
    if damage == "future schema":
        assert "newer" in err
    if damage == "directory":
        assert "is a directory" in err
    if before is not None:
        assert (data / "memory.db").read_bytes() == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _subprocess_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVA_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        EVA_MEMORY__EMBEDDING_MODEL="none",
        EVA_LLM__MODEL__GENERAL=str(tmp_path / "missing.gguf"),
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def _eva(args: list[str], tmp_path: Path, **kw) -> subprocess.CompletedProcess:
    env = _subprocess_env(tmp_path, **kw.pop("env", {}))
    return subprocess.run(
        [sys.executable, "-m", "eva_tui.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=kw.pop("stdout", None) is None,
        text=True,
        timeout=120,
        **kw,
    )


@pytest.mark.parametrize("damage", DAMAGES)
def test_serve_on_an_unusable_store_is_one_sentence(tmp_path, damage):
    """Issue 25 item A: `eva serve` on an unusable store is one sentence and exit 1 (run as a
    process: were it to start serving, the timeout ends it and the test fails)."""
    data = _damage(damage, tmp_path)
    r = _eva(["--data", str(data), "serve", "--no-chat", "--port", str(_free_port())], tmp_path)
    assert r.returncode == 1, r.stderr
    _one_sentence(r.stderr)


def test_an_unexpected_error_is_one_sentence_and_eva_debug_shows_it(tmp_path, monkeypatch, capsys):
    """Issue 25 item A: an exception nobody expected is "unexpected error (TypeName)", exit 1;
    EVA_DEBUG=1 prints its traceback too (same exit code)."""
    _env(monkeypatch, tmp_path)

    def boom(*a, **kw):
        raise TypeError("something nobody planned for")

    monkeypatch.setattr(cli_memory, "cmd_doctor", boom)
    rc = cli.main(["--data", str(tmp_path / "d"), "doctor"])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.strip() == "eva: unexpected error (TypeError); run with EVA_DEBUG=1 for details"
    monkeypatch.setenv("EVA_DEBUG", "1")
    rc = cli.main(["--data", str(tmp_path / "d"), "doctor"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" in err and "nobody planned" in err


def test_ctrl_c_is_exit_130_with_one_word(tmp_path, monkeypatch, capsys):
    """Issue 25 item A: Ctrl+C anywhere is exit 130 and "eva: interrupted"."""
    _env(monkeypatch, tmp_path)

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_files, "cmd_export", interrupted)
    assert cli.main(["--data", str(tmp_path), "export"]) == 130
    assert capsys.readouterr().err == "eva: interrupted\n"


def test_the_exit_codes_are_in_help_and_readme(capsys):
    """Issue 25 item A: every exit code is named in `eva --help` (its epilog) and in README's
    "Exit codes" list."""
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    codes = [
        cli_io.EXIT_OK,
        cli_io.EXIT_FAILED,
        cli_io.EXIT_USAGE,
        cli_io.EXIT_OUTPUT,
        cli_io.EXIT_ASLEEP_ELSEWHERE,
        cli_io.EXIT_INTERRUPTED,
    ]
    assert codes == [0, 1, 2, 74, 75, 130]
    assert "exit codes:" in out and "EVA_DEBUG=1" in out and "EVA_DEBUG=1" in section
    for code in codes:
        assert f"\n  {code} " in out, code
        assert f"`{code}`" in section, code


def test_export_to_a_full_disk_is_exit_74_in_one_sentence(tmp_path):
    """Issue 25 item A: `eva export > /dev/full` (ENOSPC on stdout) is one sentence and exit
    74, with no "Exception ignored" at the interpreter's exit."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    data = tmp_path / "data"
    _store(data / "memory.db", n=50)
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-m", "eva_tui.cli", "--data", str(data), "export"],
            cwd=ROOT,
            env=_subprocess_env(tmp_path),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert r.returncode == 74, r.stderr
    _one_sentence(r.stderr)
    assert "stdout" in r.stderr and len(_errors(r.stderr)) == 1


def test_export_into_a_closed_pipe_exits_quietly_with_74(tmp_path):
    """Issue 25 item A: `eva export | head -1` on a long export: the reader leaves, Eva stops
    quietly (no traceback, no "Exception ignored", nothing on stderr) with exit 74."""
    data = tmp_path / "data"
    _store(data / "memory.db", n=1500, width=200)  # ~400 KB: far more than a pipe holds
    p = subprocess.Popen(
        [sys.executable, "-m", "eva_tui.cli", "--data", str(data), "export"],
        cwd=ROOT,
        env=_subprocess_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert b"eva_export" in first
    assert rc == 74, err
    assert _errors(err) == [], err


def test_a_deeply_nested_config_is_a_config_error_naming_the_file(tmp_path, monkeypatch, capsys):
    """Issue 25 item A/D: a TOML file nested 100,000 deep (tomllib's RecursionError) or with a
    table header 5,000 names deep is a config error naming the file, exit 2."""
    _env(monkeypatch, tmp_path)
    for text in (
        "a = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "[" + ".".join(["x"] * 5000) + "]\nk = 1\n",
    ):
        p = tmp_path / "deep.toml"
        p.write_text(text)
        with pytest.raises(cfg.ConfigError, match="nested too deeply"):
            config_file.load(p, environ={})
        rc = cli.main(["--config", str(p), "--data", str(tmp_path / "d"), "doctor"])
        err = capsys.readouterr().err
        assert rc == 2
        _one_sentence(err)
        assert str(p) in err and "nested too deeply" in err


@pytest.mark.parametrize("cmd", ["export", "backup"])
def test_an_output_that_cannot_be_written_is_exit_74(tmp_path, monkeypatch, capsys, cmd):
    """Issue 25 item A: an -o FILE or a backup DIR that cannot be written (here: under a regular
    file) is one sentence naming it and exit 74 — not a store problem, and nothing is left."""
    _env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    _store(data / "memory.db")
    (tmp_path / "plain").write_text("x")
    where = tmp_path / "plain" / "sub"
    args = ["export", "-o", str(where / "all.jsonl")] if cmd == "export" else ["backup", str(where)]
    rc = cli.main(["--data", str(data), *args])
    err = capsys.readouterr().err
    assert rc == 74, err
    _one_sentence(err)
    assert str(where) in err and "memory store" not in err
    assert (tmp_path / "plain").read_text() == "x"
