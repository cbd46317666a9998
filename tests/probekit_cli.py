"""The CLI probes of issue 25 (tests/probekit.py runs them): ``python -m eva_tui.cli`` in
subprocesses on temporary data dirs (``XDG_CONFIG_HOME`` in a temp dir,
``EVA_MEMORY__EMBEDDING_MODEL=none``, umask 022), each returning a probe outcome."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.probekit import (
    STDERR_LIMIT,
    T0,
    _eva_cmd,
    _free_port,
    build_secret_store,
    cli_env,
    has_traceback,
    outcome,
    under_umask_022,
)


# ---------------------------------------------------------------------------- CLI
@dataclass
class Ran:
    exit: int | None
    out: str
    err: str
    timed_out: bool = False


def eva(
    tmp: Path,
    *args: str,
    env: dict | None = None,
    stdout=None,
    timeout: float = 60,
    wrapper: list[str] | None = None,
) -> Ran:
    cmd = _eva_cmd(*args) if wrapper is None else [*wrapper, *args]
    try:
        p = subprocess.run(
            cmd,
            env=env or cli_env(tmp),
            cwd=tmp,
            timeout=timeout,
            stdout=stdout if stdout is not None else subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except subprocess.TimeoutExpired as e:
        return Ran(
            None,
            (e.stdout or b"").decode(errors="replace"),
            (e.stderr or b"").decode(errors="replace"),
            True,
        )
    out = p.stdout.decode(errors="replace") if isinstance(p.stdout, bytes) else ""
    return Ran(p.returncode, out, p.stderr.decode(errors="replace"))


def _refused(
    name: str, r: Ran, *, extra_ok: bool = True, note: str = "", leak: bool = False
) -> dict:
    """A command that must fail with one sentence: nonzero exit, a message, no traceback."""
    tb = has_traceback(r.err) or has_traceback(r.out)
    ok = r.exit not in (0, None) and not r.timed_out and bool(r.err.strip()) and extra_ok
    last = r.err.strip().splitlines()[-1:] if r.err.strip() else []
    what = "timed out (kept running)" if r.timed_out else f"exit {r.exit}"
    return outcome(
        name,
        "cli",
        ok,
        leak=leak,
        traceback=tb,
        exit=r.exit,
        note=f"{what}; {note + '; ' if note else ''}stderr: {(last[0] if last else '')[:300]!r}",
    )


def _store(path: Path, texts: list[tuple[str, bool]] | None = None) -> None:
    from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig

    path.parent.mkdir(parents=True, exist_ok=True)
    with Memory.open(path, MemoryConfig(embedding_model=None), ManualClock(T0)) as mem:
        for t, private in texts or [
            ("Owner's cat is called Murka", False),
            ("Owner's PIN hint is 5550123 zqcli0x00aa11", True),
        ]:
            mem.save(t, OWNER_TRUSTED, private=private)


def _big_store(path: Path, n: int = 300, filler: str = '\\"') -> None:
    """Many records; with a control character as ``filler`` their export is several times the
    database (it is six bytes in JSON, and indexes no word)."""
    import random

    from core import ManualClock, Memory, MemoryConfig
    from core.memory import portability

    rng = random.Random(25)
    letters = "bcdfghjklmnpqrstvwxz"
    lines = []
    for i in range(n):
        words = " ".join("".join(rng.choice(letters) for _ in range(9)) for _ in range(6))
        lines.append(
            json.dumps(
                {
                    "content": f"note {i} {words} " + filler * (400 // len(filler)),
                    "created_at": T0 - i,
                }
            )
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with Memory.open(path, MemoryConfig(embedding_model=None), ManualClock(T0)) as mem:
        portability.import_lines(mem, lines)
        mem._storage.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _valid_import(tmp: Path) -> Path:
    f = tmp / "ok.jsonl"
    f.write_text(json.dumps({"content": "Owner likes green tea", "created_at": T0}) + "\n")
    return f


BROKEN = ("damaged", "directory", "future_schema", "unwritable")


def _broken(tmp: Path, how: str) -> Path:
    """A data dir whose store is broken ``how``."""
    data = tmp / "data"
    if how == "damaged":
        data.mkdir(parents=True)
        (data / "memory.db").write_bytes(b"SQLite format 3\x00" + b"\xde\xad junk " * 4000)
    elif how == "directory":
        (data / "memory.db").mkdir(parents=True)
    elif how == "future_schema":
        from core.store.storage import SCHEMA_VERSION

        _store(data / "memory.db")
        with contextlib.closing(sqlite3.connect(data / "memory.db")) as c:
            c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 7}")
            c.commit()
    elif how == "unwritable":  # emulated as root: the data dir would be under a regular file
        (tmp / "a-file").write_text("not a directory\n")
        data = tmp / "a-file" / "data"
    return data


def _serve_on(tmp: Path, data: Path, *extra: str) -> Ran:
    return eva(
        tmp,
        "--data",
        str(data),
        "serve",
        "--port",
        str(_free_port()),
        "--no-chat",
        *extra,
        timeout=20,
    )


def cli_broken_store(how: str, command: str) -> Callable[[Path], dict]:
    def probe(tmp: Path) -> dict:
        data = _broken(tmp, how)
        if command == "export":
            r = eva(tmp, "--data", str(data), "export")
        elif command == "import":
            r = eva(tmp, "--data", str(data), "import", str(_valid_import(tmp)))
        elif command == "backup":
            r = eva(tmp, "--data", str(data), "backup", str(tmp / "bk"))
        else:
            r = _serve_on(tmp, data)
        return _refused(f"{command}_on_{how}_store", r)

    probe.__name__ = f"cli_{command}_on_{how}_store"
    return probe


def cli_export_dev_full(tmp: Path) -> dict:
    _store(tmp / "data" / "memory.db")
    with open("/dev/full", "w") as full:
        r = eva(tmp, "--data", str(tmp / "data"), "export", stdout=full)
    return _refused("export_to_dev_full", r)


def cli_export_head(tmp: Path) -> dict:
    _big_store(tmp / "data" / "memory.db")
    p = subprocess.Popen(
        _eva_cmd("--data", str(tmp / "data"), "export"),
        env=cli_env(tmp),
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = p.stdout.readline()
    p.stdout.close()  # `| head -1`
    try:
        err = p.stderr.read().decode(errors="replace")
        code = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        code, err = None, "(hung)"
    tb = has_traceback(err)
    return outcome(
        "export_pipe_closed_early",
        "cli",
        bool(first) and code is not None,
        traceback=tb,
        exit=code,
        note=f"exit {code}; stderr: {err.strip().splitlines()[-1:] if err else ''}",
    )


def cli_import_deep_array(tmp: Path) -> dict:
    f = tmp / "deep.jsonl"
    f.write_text("[" * 100_000 + "\n")
    r = eva(tmp, "--data", str(tmp / "data"), "import", str(f))
    return _refused("import_nested_100000", r)


def _import_number(digits: int) -> Callable[[Path], dict]:
    def probe(tmp: Path) -> dict:
        f = tmp / "num.jsonl"
        n = "9" * digits
        f.write_text(n + "\n" + '{"content": "a note", "created_at": ' + n + "}\n")
        r = eva(tmp, "--data", str(tmp / "data"), "import", str(f))
        return _refused(f"import_{digits}_digit_number", r)

    probe.__name__ = f"cli_import_{digits}_digit_number"
    return probe


def cli_serve_rate_nan(tmp: Path) -> dict:
    """--rate-limit nan (and inf) is a usage error naming the flag (exit 2), not a traceback nor
    a catch-all "unexpected error"."""
    _store(tmp / "data" / "memory.db")
    r = _serve_on(tmp, tmp / "data", "--rate-limit", "nan")
    r2 = _serve_on(tmp, tmp / "data", "--rate-limit", "inf")
    named = all(x.exit == 2 and "rate-limit" in x.err for x in (r, r2))
    worst = r if not (r.exit == 2 and "rate-limit" in r.err) else r2
    return _refused(
        "serve_rate_limit_nan_inf",
        worst,
        extra_ok=named,
        note=f"nan: exit {r.exit}, inf: exit {r2.exit} (want 2, naming the flag)",
    )


def _deep_toml(kind: str) -> Callable[[Path], dict]:
    def probe(tmp: Path) -> dict:
        _store(tmp / "data" / "memory.db")
        f = tmp / "deep.toml"
        if kind == "array":
            f.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
        else:
            f.write_text("a = " + "{b = " * 50_000 + "1" + "}" * 50_000 + "\n")
        r = eva(tmp, "--config", str(f), "--data", str(tmp / "data"), "export")
        return _refused(
            f"config_deep_toml_{kind}",
            r,
            extra_ok=r.exit == 2,
            note="expected exit 2 (config error)",
        )

    probe.__name__ = f"cli_config_deep_toml_{kind}"
    return probe


def cli_export_overwrite(tmp: Path) -> dict:
    _store(tmp / "data" / "memory.db")
    out = tmp / "out.jsonl"
    out.write_text("the owner's notes\n")
    r = eva(tmp, "--data", str(tmp / "data"), "export", "-o", str(out))
    kept = out.read_text() == "the owner's notes\n"
    return _refused(
        "export_o_refuses_overwrite",
        r,
        extra_ok=kept,
        note="existing file kept" if kept else "existing file overwritten",
    )


def cli_export_fail_no_part(tmp: Path) -> dict:
    """A write that fails half way (the file size limit: EFBIG) leaves no FILE.part behind."""
    data = tmp / "data"
    _big_store(data / "memory.db", filler="\x01")
    size = sum(p.stat().st_size for p in data.iterdir())
    limit = size + 64 * 1024  # the store's own writes fit; the export (~700 kB) does not
    wrapper = under_umask_022(
        sys.executable,
        "-c",
        "import resource, runpy, sys; "
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
        "sys.argv = ['eva'] + sys.argv[1:]; "
        "runpy.run_module('eva_tui.cli', run_name='__main__')",
    )
    outdir = tmp / "out"
    outdir.mkdir()
    r = eva(tmp, "--data", str(data), "export", "-o", str(outdir / "export.jsonl"), wrapper=wrapper)
    left = sorted(p.name for p in outdir.iterdir())
    return _refused(
        "export_o_failure_leaves_no_part",
        r,
        extra_ok=not left,
        note=f"limit {limit} B; left behind: {left or 'nothing'}",
    )


def cli_export_part_mode(tmp: Path) -> dict:
    _store(tmp / "data" / "memory.db")
    out = tmp / "out.jsonl"
    part = tmp / "out.jsonl.part"
    part.write_text("stale\n")
    os.chmod(part, 0o644)
    r = eva(tmp, "--data", str(tmp / "data"), "export", "--private", "-o", str(out))
    tb = has_traceback(r.err)
    if not out.exists():
        return outcome(
            "export_o_stale_part_gives_0600",
            "cli",
            False,
            traceback=tb,
            exit=r.exit,
            note=f"no result; stderr {r.err.strip()[-200:]!r}",
        )
    mode = stat.S_IMODE(out.stat().st_mode)
    return outcome(
        "export_o_stale_part_gives_0600",
        "cli",
        r.exit == 0 and mode == 0o600,
        leak=bool(mode & 0o077),
        traceback=tb,
        exit=r.exit,
        note=f"result mode {oct(mode)} (a private export)",
    )


def cli_export_symlink(tmp: Path) -> dict:
    _store(tmp / "data" / "memory.db")
    target = tmp / "elsewhere.txt"
    target.write_text("original\n")
    link = tmp / "link.jsonl"
    link.symlink_to(target)
    r = eva(tmp, "--data", str(tmp / "data"), "export", "-o", str(link))
    unchanged = (
        link.is_symlink()
        and os.readlink(link) == str(target)
        and target.read_text() == "original\n"
    )
    same_target = target.read_text() == "original\n"
    return _refused(
        "export_o_refuses_symlink",
        r,
        extra_ok=unchanged,
        note="link and target unchanged"
        if unchanged
        else f"link is {'still' if link.is_symlink() else 'no longer'} a symlink; "
        f"target {'unchanged' if same_target else 'changed'}",
    )


def _count(db: Path, content: str) -> int:
    with contextlib.closing(sqlite3.connect(db)) as c:
        return c.execute("SELECT COUNT(*) FROM memories WHERE content = ?", (content,)).fetchone()[
            0
        ]


def cli_import_duplicates(tmp: Path) -> dict:
    line = json.dumps({"content": "Owner's bike is blue", "created_at": T0})
    f = tmp / "dups.jsonl"
    f.write_text(line + "\n" + line + "\n")
    data = tmp / "data"
    r = eva(tmp, "--data", str(data), "import", str(f))
    n = _count(data / "memory.db", "Owner's bike is blue") if (data / "memory.db").is_file() else 0
    return outcome(
        "import_duplicates_in_one_file",
        "cli",
        r.exit == 0 and n == 1,
        traceback=has_traceback(r.err),
        exit=r.exit,
        note=f"stored {n} times; stdout {r.out.strip()[:200]!r}",
    )


def cli_export_line_separators(tmp: Path) -> dict:
    content = "First part\u2028second part\u0085third part\u2029end zqsepx0a0b0c"
    _store(tmp / "a" / "memory.db", [(content, False), ("A plain note", False)])
    ea = eva(tmp, "--data", str(tmp / "a"), "export")
    f = tmp / "a.jsonl"
    f.write_text(ea.out, encoding="utf-8")
    ib = eva(tmp, "--data", str(tmp / "b"), "import", str(f))
    eb = eva(tmp, "--data", str(tmp / "b"), "export")

    def contents(text: str) -> list[str]:
        out = []
        for raw in text.split("\n"):
            if raw.strip():
                with contextlib.suppress(ValueError):
                    obj = json.loads(raw)
                    if isinstance(obj, dict) and "content" in obj:
                        out.append(obj["content"])
        return sorted(out)

    same = (
        ea.exit == 0
        and ib.exit == 0
        and contents(ea.out) == contents(eb.out)
        and content in contents(eb.out)
    )
    tb = any(has_traceback(x.err) for x in (ea, ib, eb))
    return outcome(
        "export_import_round_trips_line_separators",
        "cli",
        same,
        traceback=tb,
        exit=ib.exit,
        note=f"import exit {ib.exit}: {ib.err.strip()[-200:]!r}",
    )


def cli_import_year_one(tmp: Path) -> dict:
    notes, ok, tb, code = [], True, False, None
    for i, when in enumerate(("0001-01-01", "0001-01-01T00:00:00+14:00")):
        data = tmp / f"d{i}"
        f = tmp / f"y{i}.jsonl"
        f.write_text(json.dumps({"content": f"An ancient note {i}", "created_at": when}) + "\n")
        r = eva(tmp, "--data", str(data), "import", str(f))
        tb |= has_traceback(r.err)
        code = r.exit
        if r.exit == 0:
            for fmt in ("md", "jsonl"):
                e = eva(tmp, "--data", str(data), "export", "--format", fmt)
                if e.exit != 0 or has_traceback(e.err):
                    ok = False
                    tb |= has_traceback(e.err)
                    notes.append(
                        f"{when}: imported; export {fmt} exit {e.exit} "
                        f"{e.err.strip().splitlines()[-1:]}"
                    )
                else:
                    notes.append(f"{when}: imported; export {fmt} fine")
        else:
            notes.append(f"{when}: refused ({r.err.strip()[-120:]!r})")
            ok &= r.exit is not None
    return outcome("import_year_one", "cli", ok, traceback=tb, exit=code, note="; ".join(notes))


def cli_refused_import_no_db(tmp: Path) -> dict:
    f = tmp / "bad.jsonl"
    f.write_text("this is not json\n")
    data = tmp / "new-data"
    r = eva(tmp, "--data", str(data), "import", str(f))
    made = (data / "memory.db").exists()
    return _refused(
        "refused_import_creates_no_store",
        r,
        extra_ok=not made,
        note=f"memory.db {'created' if made else 'not created'}",
    )


def cli_import_huge_value(tmp: Path) -> dict:
    f = tmp / "huge.jsonl"
    f.write_text(json.dumps({"content": "a note", "kind": "k" * 1_000_000}) + "\n")
    r = eva(tmp, "--data", str(tmp / "data"), "import", str(f))
    n = len(r.err.encode())
    return _refused(
        "import_huge_bad_value_not_echoed", r, extra_ok=n < STDERR_LIMIT, note=f"stderr {n} bytes"
    )


def cli_env_one_underscore(tmp: Path) -> dict:
    _store(tmp / "data" / "memory.db")
    r = eva(tmp, "--data", str(tmp / "data"), "export", env=cli_env(tmp, EVA_MEMORY_TOP_K="5"))
    said = "EVA_MEMORY_TOP_K" in r.err
    return outcome(
        "env_one_underscore_reported",
        "cli",
        said and r.exit is not None,
        traceback=has_traceback(r.err),
        exit=r.exit,
        note=("reported" if said else "silently ignored") + f"; stderr {r.err.strip()[-200:]!r}",
    )


def cli_export_no_secret(tmp: Path) -> dict:
    """``eva export`` without --private (jsonl and md, with and without the archive) carries no
    private marker or number — the archive's ``why`` of a non-private record included (sleep
    and memory_forget write the model's words there, which may quote a private memory)."""
    data = tmp / "data"
    sec = build_secret_store(data / "memory.db")
    trusted = eva(tmp, "--data", str(data), "export", "--private", "--include-archive")
    missing = sec.all_in(trusted.out)
    found: dict[str, list[str]] = {}
    tb = has_traceback(trusted.err)
    codes = []
    for fmt in ("jsonl", "md"):
        for arch in ((), ("--include-archive",)):
            r = eva(tmp, "--data", str(data), "export", "--format", fmt, *arch)
            codes.append(r.exit)
            tb |= has_traceback(r.err)
            bad = sec.leaks(r.out + r.err)
            if bad:
                found[f"{fmt}{' ' + arch[0] if arch else ''}"] = bad
    ok = not missing and all(c == 0 for c in codes)
    return outcome(
        "export_without_private_leaks_nothing",
        "cli",
        ok,
        leak=bool(found),
        traceback=tb,
        exit=max(c or 0 for c in codes),
        note=(f"--private lacks {missing}; " if missing else "") + f"leaks: {found or 'none'}",
    )


def cli_file_modes(tmp: Path) -> dict:
    """A session in a fresh data dir (a store with a private memory, a backup, a private
    export, the serve token): the dir 0700, every file in it 0600, and the backup and the
    private export 0600 too."""
    data = tmp / "fresh"
    f = tmp / "seed.jsonl"
    f.write_text(
        json.dumps({"content": "Owner's PIN hint is 5550123", "private": True})
        + "\n"
        + json.dumps({"content": "Owner likes green tea"})
        + "\n"
    )
    runs = [
        eva(tmp, "--data", str(data), "import", str(f)),
        eva(tmp, "--data", str(data), "backup", str(tmp / "backups")),
        eva(tmp, "--data", str(data), "export", "--private", "-o", str(tmp / "mine.jsonl")),
    ]
    tok = subprocess.run(
        under_umask_022(
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from eva_api.token import ensure_token; ensure_token(Path(sys.argv[1]))",
            str(data),
        ),
        env=cli_env(tmp),
        capture_output=True,
        text=True,
        timeout=60,
    )
    tb = any(has_traceback(r.err) for r in runs) or has_traceback(tok.stderr)
    wide = {}
    if data.exists():
        for p in [data, *data.rglob("*")]:
            mode = stat.S_IMODE(p.lstat().st_mode)
            want = 0o700 if p.is_dir() else 0o600
            if mode & 0o077 or (p.is_dir() and mode != want):
                wide[str(p.relative_to(tmp))] = oct(mode)
    for p in [*(tmp / "backups").glob("*"), tmp / "mine.jsonl"]:
        if p.exists() and stat.S_IMODE(p.stat().st_mode) & 0o077:
            wide[str(p.relative_to(tmp))] = oct(stat.S_IMODE(p.stat().st_mode))
    ran = all(r.exit == 0 for r in runs) and tok.returncode == 0
    return outcome(
        "file_modes_after_a_session",
        "cli",
        ran,
        leak=bool(wide),
        traceback=tb,
        exit=max((r.exit or 0) for r in runs),
        note=f"readable by others: {wide or 'nothing'}"
        + ("" if ran else f"; a step failed: {[r.exit for r in runs]}"),
    )


CLI_PROBES: list[Callable[[Path], dict]] = [
    *(
        cli_broken_store(how, cmd)
        for how in BROKEN
        for cmd in ("export", "import", "backup", "serve")
    ),
    cli_export_dev_full,
    cli_export_head,
    cli_import_deep_array,
    _import_number(400),
    _import_number(5000),
    cli_serve_rate_nan,
    _deep_toml("array"),
    _deep_toml("inline_table"),
    cli_export_overwrite,
    cli_export_fail_no_part,
    cli_export_part_mode,
    cli_export_symlink,
    cli_import_duplicates,
    cli_export_line_separators,
    cli_import_year_one,
    cli_refused_import_no_db,
    cli_import_huge_value,
    cli_env_one_underscore,
    cli_export_no_secret,
    cli_file_modes,
]
