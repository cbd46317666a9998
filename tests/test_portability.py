"""Export, import and backup (SPEC §11 "nothing the owner owns is locked in"; issue 13 item 6):
JSON Lines round trips exactly, Markdown is for reading, private memory leaves only on request,
an import is checked whole and written in one transaction through dedup, a backup is a
consistent, self-contained copy."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig, Refused
from core.memory import portability as pt
from core.store.records import Actor

T0 = 1_780_000_000.0
DAY = 86_400.0
WORDS = [
    "cat",
    "Murka",
    "salmon",
    "Kazan",
    "sister",
    "Anna",
    "chess",
    "Volga",
    "hiking",
    "piano",
    "Lena",
    "Go",
    "backend",
    "coffee",
    "Tuesday",
    "кошка",
    "сестра",
    "шахматы",
    "Москва",
    "врач",
    "3",
    "42",
    "2024",
]


def fresh(path: Path, at: float = T0) -> Memory:
    return Memory.open(path, MemoryConfig(), ManualClock(at))


# A generated store: records with a unique marker each (so one record's text never hides in
# another's), random kind, importance, flags and scope, some reinforced, some archived.
record = st.fixed_dictionaries(
    {
        "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
        "kind": st.sampled_from(["core", "fact", "event"]),
        "importance": st.integers(1, 5),
        "private": st.booleans(),
        "pinned": st.booleans(),
        "scope": st.sampled_from(["global", "global", "work", "friend"]),
        "age_days": st.integers(0, 400),
        "reinforced": st.integers(0, 3),
        "archived": st.booleans(),
    }
)
stores = st.lists(record, min_size=1, max_size=25)


def build_store(path: Path, spec: list[dict]) -> tuple[Memory, dict[str, dict]]:
    """The store a spec describes; returns it and each record's spec by its marker."""
    mem = fresh(path)
    items, by_marker = [], {}
    for k, r in enumerate(spec):
        marker = f"zq{k}x"
        content = " ".join([*r["words"], marker])
        items.append(
            {
                "content": content,
                "kind": r["kind"],
                "importance": r["importance"],
                "private": r["private"],
                "pinned": r["pinned"],
                "scope": r["scope"],
                "created_at": T0 - r["age_days"] * DAY,
            }
        )
        by_marker[marker] = {**r, "content": content}
    ids = mem.import_records(items)
    for rid, (marker, r) in zip(ids, by_marker.items(), strict=True):
        for n in range(r["reinforced"]):
            mem.clock.advance(60 + n)
            mem.search(marker, OWNER_TRUSTED)
        if r["archived"]:
            mem.forget(rid, "generated", OWNER_TRUSTED, actor=Actor.OWNER)
    return mem, by_marker


def records_of(lines: list[str]) -> list[dict]:
    """An export's record lines without ids (a store gives its own ids), header dropped."""
    out = []
    for raw in lines:
        obj = json.loads(raw)
        if pt.HEADER_KEY in obj:
            continue
        obj.pop("id")
        out.append(obj)
    return out


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(spec=stores)
def test_export_import_round_trip_is_exact(spec):
    """§11 export → import: content, kind, importance, flags, scope, source, dates, access
    history and the archive's who/why/when come back equal (a property over generated
    stores, private and archived records included)."""
    spec = [dict(r, pinned=False) if k >= 15 else r for k, r in enumerate(spec)]
    with tempfile.TemporaryDirectory() as d:
        mem, _ = build_store(Path(d) / "a.db", spec)
        with mem:
            first = pt.export(mem, include_archive=True, private=True)
        assert first.records == len(spec)
        with fresh(Path(d) / "b.db", T0 + 5 * DAY) as other:
            res = pt.import_lines(other, first.lines)
            assert len(res.created) == len(spec) and not res.duplicates
            second = pt.export(other, include_archive=True, private=True)
        assert records_of(second.lines) == records_of(first.lines)


@SETTINGS
@given(spec=stores)
def test_export_without_private_has_no_private_content(spec):
    """§1, §11: an export without --private carries no private record — in JSON Lines and in
    Markdown, live or archived — and says how many it left out; every public one is there."""
    spec = [*spec, {**spec[0], "private": True}]  # at least one private record
    with tempfile.TemporaryDirectory() as d:
        mem, by_marker = build_store(Path(d) / "a.db", spec)
        with mem:
            for fmt in pt.FORMATS:
                ex = pt.export(mem, fmt, include_archive=True)
                body = "".join(ex.lines)
                for marker, r in by_marker.items():
                    if r["private"]:
                        assert marker not in body, f"private record {marker} leaked ({fmt})"
                    else:
                        assert r["content"] in body
                n_private = sum(r["private"] for r in by_marker.values())
                assert ex.private_left_out == n_private
                if fmt == "md":
                    assert f"{n_private} private memor" in body
                else:
                    assert json.loads(ex.lines[0])["private_left_out"] == n_private


def test_export_leaves_archive_out_unless_asked(tmp_path):
    """Issue 13: --include-archive adds the archived records; without it only live ones."""
    mem = fresh(tmp_path / "a.db")
    keep = mem.save("The cat Murka likes salmon")
    gone = mem.save("Went hiking along the Volga", kind="event")
    mem.forget(gone.id, "old news", actor=Actor.OWNER)
    live = records_of(pt.export(mem).lines)
    both = records_of(pt.export(mem, include_archive=True).lines)
    assert [r["content"] for r in live] == [keep.record.content]
    assert [r["archived"] for r in both] == [None, {"at": T0, "by": "owner", "why": ""}]
    full = records_of(pt.export(mem, include_archive=True, private=True).lines)
    assert [r["archived"] for r in full] == [None, {"at": T0, "by": "owner", "why": "old news"}]
    mem.close()


def test_an_archive_why_quoting_a_private_memory_leaves_only_with_private(tmp_path):
    """Issue 25 (redaction by construction), §1/§11: an archived public record's why is the
    model's or the owner's words at the time (a merge, a forget) and may quote a private memory;
    an export without --private leaves every why out, in JSON Lines and Markdown."""
    mem = fresh(tmp_path / "a.db")
    mem.save("My card PIN is 4417 zqpinmark", private=True)
    gone = mem.save("Went hiking along the Volga", kind="event")
    mem.forget(gone.id, "duplicate of the PIN 4417 zqpinmark note", actor=Actor.MODEL)
    for fmt in pt.FORMATS:
        body = "".join(pt.export(mem, fmt, include_archive=True).lines)
        assert "Went hiking along the Volga" in body
        assert "zqpinmark" not in body and "4417" not in body, fmt
        full = "".join(pt.export(mem, fmt, include_archive=True, private=True).lines)
        assert "duplicate of the PIN 4417 zqpinmark note" in full
    mem.close()


def test_import_reports_every_bad_line_and_writes_nothing(tmp_path):
    """Issue 13: a bad line is reported with its number and the reason; nothing is written."""
    mem = fresh(tmp_path / "a.db")
    mem.save("The cat Murka likes salmon")
    lines = [
        json.dumps({"content": "Sister Anna lives in Kazan", "private": True}),
        json.dumps({"content": "Plays chess on Tuesdays", "importance": 9}),
        "{not json",
        json.dumps({"content": "Likes coffee", "privat": True}),
        "",
        json.dumps({"content": "Works in Go", "kind": "fact"}),
    ]
    with pytest.raises(pt.ImportRefused) as e:
        pt.import_lines(mem, lines)
    assert [n for n, _ in e.value.problems] == [2, 3, 4]
    reasons = dict(e.value.problems)
    assert "importance" in reasons[2] and "not JSON" in reasons[3] and "'privat'" in reasons[4]
    assert mem.count() == 1 and [r.content for r in mem.list()] == ["The cat Murka likes salmon"]
    mem.close()


def test_import_goes_through_dedup_and_can_be_taken_back(tmp_path):
    """Issue 13: importing goes through dedup (the same file twice adds nothing; a near
    duplicate of a stored memory is skipped and named) and is one change (rollback of its
    turn id takes it all back)."""
    mem = fresh(tmp_path / "a.db")
    old = mem.save("The owner's cat Murka likes salmon very much")
    lines = [
        json.dumps({"content": "The owner's cat Murka likes salmon very much!"}),
        json.dumps({"content": "Sister Anna lives in Kazan", "private": True}),
        json.dumps({"content": "Plays chess on Tuesdays", "importance": 4}),
    ]
    res = pt.import_lines(mem, lines)
    assert res.duplicates == ((1, old.id),)
    assert len(res.created) == 2 and mem.count() == 3
    again = pt.import_lines(mem, lines)
    assert again.created == () and [n for n, _ in again.duplicates] == [1, 2, 3]
    mem.rollback_turn(res.turn_id)
    assert mem.count() == 1
    mem.close()


def test_import_over_the_pinned_cap_writes_nothing(tmp_path):
    """§2 (≤ 20 pinned per scope) in an import: the line that would pass the cap is named and
    the whole import is refused."""
    mem = fresh(tmp_path / "a.db")
    lines = [
        json.dumps({"content": f"Pinned rule number {k} zq{k}", "pinned": True}) for k in range(21)
    ]
    with pytest.raises(Refused, match="line 21"):
        pt.import_lines(mem, lines)
    assert mem.count() == 0
    mem.close()


def test_backup_is_a_consistent_self_contained_copy(tmp_path):
    """§11: ``eva backup`` uses SQLite's online backup while the store is open (writes still
    in the WAL are in the copy); the copy is one file that opens as a store with the same
    memories, archive and history."""
    mem = fresh(tmp_path / "a.db")
    for k in range(30):
        mem.save(f"Memory number {k} about topic zq{k}x")
    mem.forget(3, "old", actor=Actor.OWNER)
    mem.search("topic zq5x")
    other = sqlite3.connect(tmp_path / "a.db")  # another process writing meanwhile
    other.execute("INSERT INTO meta (key, value) VALUES ('x', 'y')")
    other.commit()
    dest = pt.backup(mem, tmp_path / "backups", now=T0)
    assert dest == tmp_path / "backups" / "eva-backup-20260528-202640.db"
    assert not (tmp_path / "backups" / (dest.name + "-wal")).exists()
    assert (dest.stat().st_mode & 0o777) == 0o600  # it holds private memories
    before = records_of(pt.export(mem, include_archive=True, private=True).lines)
    second = pt.backup(mem, tmp_path / "backups", now=T0)
    assert second != dest and second.exists()
    mem.close()
    other.close()
    with Memory.open(dest, MemoryConfig(), ManualClock(T0)) as copy:
        assert copy.count() == 29 and copy.count(archived=True) == 1
        assert records_of(pt.export(copy, include_archive=True, private=True).lines) == before


def test_backup_refuses_to_overwrite(tmp_path):
    mem = fresh(tmp_path / "a.db")
    mem.save("The cat Murka likes salmon")
    (tmp_path / "b.db").write_text("precious")
    with pytest.raises(FileExistsError):
        mem.backup(tmp_path / "b.db")
    assert (tmp_path / "b.db").read_text() == "precious"
    mem.close()


# ---------------------------------------------------------------------------- the commands
def _cli_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("EVA_MEMORY__EMBEDDING_MODEL", "none")


def test_eva_export_import_backup_commands(tmp_path, monkeypatch, capsys):
    """Issue 13: `eva export|import|backup` take the global --data; export writes to stdout
    unless -o, says what it left out, keeps private ones out unless --private; import of the
    export into another store round-trips; backup writes one file into DIR."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    with fresh(data / "memory.db") as mem:
        mem.save("The cat Murka likes salmon")
        mem.save("Sister Anna lives in Kazan, Pushkin street 12", private=True)
    assert cli.main(["--data", str(data), "export"]) == 0
    out = capsys.readouterr()
    assert "Murka" in out.out and "Anna" not in out.out
    assert "1 private memory was left out (--private includes them)" in out.err
    assert cli.main(["export", "--data", str(data), "--format", "md"]) == 0
    assert "# Eva's memory" in capsys.readouterr().out
    dump = tmp_path / "all.jsonl"
    assert cli.main(["--data", str(data), "export", "--private", "-o", str(dump)]) == 0
    assert "Anna" in dump.read_text() and (dump.stat().st_mode & 0o777) == 0o600
    capsys.readouterr()
    other = tmp_path / "other"
    assert cli.main(["--data", str(other), "import", str(dump)]) == 0
    assert "imported 2 memories" in capsys.readouterr().out
    assert cli.main(["--data", str(other), "import", str(dump)]) == 0
    assert "imported 0 memories; 2 already in the store" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine"}\n{"content": "x", "kind": "memo"}\n')
    assert cli.main(["--data", str(other), "import", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "nothing was imported" in err and "line 2: kind must be one of" in err
    assert cli.main(["--data", str(data), "backup", str(tmp_path / "bk")]) == 0
    assert "backup written" in capsys.readouterr().out
    assert len(list((tmp_path / "bk").glob("eva-backup-*.db"))) == 1
    assert cli.main(["--data", str(tmp_path / "none"), "backup", str(tmp_path / "bk")]) == 1


# ---------------------------------------------------------------------------- issue 25
def _store_with(data: Path, *contents: str, private: bool = False) -> None:
    with fresh(data / "memory.db") as mem:
        for c in contents:
            mem.save(c, private=private)


def test_export_o_refuses_an_existing_file_unless_force(tmp_path, monkeypatch, capsys):
    """Issue 25 item B1 (SPEC §11): `eva export -o FILE` does not silently overwrite FILE: it
    refuses (exit 2, FILE untouched) unless --force, which replaces it (mode 0600)."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    _store_with(data, "The cat Murka likes salmon")
    out = tmp_path / "notes.txt"
    out.write_text("the owner's precious notes")
    assert cli.main(["--data", str(data), "export", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("eva: ") and "already exists" in err and "--force" in err
    assert out.read_text() == "the owner's precious notes"
    assert cli.main(["--data", str(data), "export", "-o", str(out), "--force"]) == 0
    assert "Murka" in out.read_text() and (out.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt])
def test_a_failed_export_o_leaves_no_part_file(tmp_path, monkeypatch, capsys, failure):
    """Issue 25 item B2 (SPEC §11): an export that fails while it is written (a full disk, Ctrl+C)
    leaves no temp file holding the private export behind, and FILE is not made."""
    from eva_runtime import cli_files
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    _store_with(data, "Sister Anna lives in Kazan, Pushkin street 12", private=True)
    out = tmp_path / "exp" / "all.jsonl"
    out.parent.mkdir()

    def fail(*a, **kw):
        raise failure

    monkeypatch.setattr(cli_files.os, "replace", fail)
    rc = cli.main(["--data", str(data), "export", "--private", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == (130 if failure is KeyboardInterrupt else 74)
    assert "Traceback" not in err and err.startswith("eva: ")
    assert list(out.parent.iterdir()) == []


def test_export_o_result_is_0600_whatever_part_file_was_there(tmp_path, monkeypatch):
    """Issue 25 item B3 (SPEC §11): a stale FILE.part of mode 0644 (from an older Eva, or
    planted) does not lend its mode to the export: the result is 0600, and the stale file is
    not ours to touch."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    _store_with(data, "Sister Anna lives in Kazan", private=True)
    out = tmp_path / "all.jsonl"
    stale = tmp_path / "all.jsonl.part"
    stale.write_text("stale")
    stale.chmod(0o644)
    assert cli.main(["--data", str(data), "export", "--private", "-o", str(out)]) == 0
    assert (out.stat().st_mode & 0o777) == 0o600 and "Anna" in out.read_text()


@pytest.mark.parametrize("force", [False, True])
def test_export_o_refuses_a_symlink(tmp_path, monkeypatch, capsys, force):
    """Issue 25 item B4 (SPEC §11): an -o FILE that is a symbolic link is refused (exit 2), with
    or without --force: the link is neither replaced nor written through."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    _store_with(data, "Sister Anna lives in Kazan", private=True)
    target = tmp_path / "shared" / "public.txt"
    target.parent.mkdir()
    target.write_text("public")
    link = tmp_path / "export.jsonl"
    link.symlink_to(target)
    args = ["--data", str(data), "export", "--private", "-o", str(link)]
    assert cli.main(args + ["--force"] * force) == 2
    err = capsys.readouterr().err
    assert "symbolic link" in err and "Traceback" not in err
    assert link.is_symlink() and target.read_text() == "public"
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere" / "x")
    assert cli.main(["--data", str(data), "export", "-o", str(dangling)]) == 2
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()


def test_a_line_repeated_in_one_file_is_imported_once(tmp_path):
    """Issue 25 item C1 (SPEC §11, §3.2): a line that repeats an earlier line of the same file —
    the same content at another time, or the same content after dedup's normalisation (case,
    punctuation, word endings) — is reported as a duplicate of the record the first made, not
    imported twice. The file gives what importing its lines one by one gives: a persona's line
    repeating a global one is a duplicate (a save there would reinforce it), a global line
    repeating a persona's is not, and an archived copy of another time stays."""
    lines = [
        json.dumps({"content": "The cat Murka likes salmon", "created_at": T0 - DAY}),
        json.dumps({"content": "The cat Murka likes salmon", "created_at": T0 - 2 * DAY}),
        json.dumps({"content": "the cat murka LIKES salmon!"}),
        json.dumps({"content": "Plays chess on Tuesdays"}),
        json.dumps({"content": "The cat Murka likes salmon", "scope": "work"}),
        json.dumps({"content": "plays chess on tuesdays", "scope": "work"}),
        json.dumps(
            {
                "content": "Plays chess on Tuesdays",
                "created_at": T0 - 9 * DAY,
                "archived": {"at": T0 - 8 * DAY},
            }
        ),
        json.dumps({"content": "Owner likes green tea", "scope": "work"}),
        json.dumps({"content": "Owner likes green tea!"}),
    ]
    mem = fresh(tmp_path / "a.db")
    res = pt.import_lines(mem, lines)
    cat, chess, archived, tea_work, tea = res.created
    assert mem.count() == 4 and mem.count(archived=True) == 1
    assert res.duplicates == ((2, cat), (3, cat), (5, cat), (6, chess))
    one_by_one = fresh(tmp_path / "b.db")
    made = [pt.import_lines(one_by_one, [ln]).created for ln in lines]
    assert [n for n, c in enumerate(made, 1) if c] == [1, 4, 7, 8, 9]
    mem.close()
    one_by_one.close()


def test_line_separators_inside_a_content_round_trip(tmp_path, monkeypatch, capsys):
    """Issue 25 item C2 (SPEC §11): an export holding U+2028, U+2029, U+0085, a form feed or a
    vertical tab inside a content imports back as it was (lines are split on "\\n" only, a
    "\\r\\n" file read too) — str.splitlines used to cut such a line in two."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    data = tmp_path / "data"
    odd = [
        "Murka\u2028likes salmon",
        "Anna\u0085lives in Kazan",
        "chess\u2029on Tuesdays",
        "Volga\x0chiking\x0btrip",
        "Lena\x1cplays piano",
    ]
    _store_with(data, *odd)
    dump = tmp_path / "all.jsonl"
    assert cli.main(["--data", str(data), "export", "-o", str(dump)]) == 0
    assert cli.main(["--data", str(tmp_path / "other"), "import", str(dump)]) == 0
    assert "imported 5 memories" in capsys.readouterr().out
    with fresh(tmp_path / "other" / "memory.db") as mem:
        assert sorted(r.content for r in mem.list()) == sorted(odd)
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(dump.read_bytes().replace(b"\n", b"\r\n"))
    assert cli.main(["--data", str(tmp_path / "third"), "import", str(crlf)]) == 0
    with fresh(tmp_path / "third" / "memory.db") as mem:
        assert sorted(r.content for r in mem.list()) == sorted(odd)


@pytest.mark.parametrize(
    "when",
    [
        "0001-01-01",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31",
        -1,
        -62135596800,
        1e11,
        253402300799,
        "1969-12-31T23:59:59Z",
        T0 + 2 * DAY,
        10**400,
    ],
    ids=lambda w: str(w)[:24],
)
def test_import_refuses_times_out_of_range(tmp_path, when):
    """Issue 25 item C3 (SPEC §11): created_at (and every other time) must lie between
    1970-01-01 and a day past now; year 1, year 9999, negative and 400-digit times are refused
    with the line named, never stored."""
    mem = fresh(tmp_path / "a.db")
    for field in ("created_at", "updated_at", "accesses", "archived"):
        value = {"accesses": [when], "archived": {"at": when}}.get(field, when)
        line = json.dumps({"content": "The cat Murka likes salmon", field: value})
        with pytest.raises(pt.ImportRefused) as e:
            pt.import_lines(mem, [line])
        assert e.value.problems[0][0] == 1 and "out of range" in e.value.problems[0][1], field
    assert mem.count() == 0 and mem.count(archived=True) == 0
    ok = pt.import_lines(
        mem,
        [
            json.dumps({"content": "x y", "created_at": "1970-01-01"}),
            json.dumps({"content": "z w", "created_at": T0 + DAY / 2}),
        ],
    )
    assert len(ok.created) == 2
    mem.close()


def test_markdown_export_survives_any_stored_time(tmp_path):
    """Issue 25 item C3 (SPEC §11): whatever a store holds as a time (year 1, a far future, text
    written by another tool), `eva export --format md` writes the page instead of crashing."""
    mem = fresh(tmp_path / "a.db")
    for k, bad in enumerate([-62135596800.0, 1e18, -1e300, "yesterday"]):
        rec = mem.save(f"Memory number {k} zq{k}x")
        with mem._storage.transaction() as conn:
            conn.execute(
                "UPDATE memories SET created_at = ?, updated_at = ? WHERE id = ?",
                (bad, bad, rec.id),
            )
    body = "".join(pt.export(mem, "md").lines)
    assert body.count("not a valid time") >= 4 and "zq3x" in body
    mem.close()


def test_a_refused_import_leaves_no_store_behind(tmp_path, monkeypatch, capsys):
    """Issue 25 item C4 (SPEC §11): the file is checked before the store is opened: a refused
    import into a data dir that has no store makes none (and no data dir)."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine"}\n{"content": "x", "kind": "memo"}\n')
    data = tmp_path / "new"
    assert cli.main(["--data", str(data), "import", str(bad)]) == 1
    assert "nothing was imported" in capsys.readouterr().err
    assert not data.exists()


@pytest.mark.parametrize(
    "line",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"content": "x", "created_at": ' + "9" * 400 + "}",
        '{"content": "x", "accesses": [' + "1" * 400 + "]}",
        '{"content": "x", "importance": ' + "7" * 5000 + "}",
        '{"content": "x", "kind": ' + "3" * 5000 + "}",
    ],
    ids=[
        "nested 100k",
        "created_at 400 digits",
        "access 400 digits",
        "importance 5000 digits",
        "kind 5000 digits",
    ],
)
def test_hostile_json_is_a_bad_line_not_a_crash(tmp_path, monkeypatch, capsys, line):
    """Issue 25 item A (SPEC §11): `eva import` of a line nested 100,000 deep (json's
    RecursionError), or holding a 400-digit or a 5000-digit number (past Python's int-str
    limit) is a bad line named in the refusal, exit 1 — never a traceback."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    f = tmp_path / "hostile.jsonl"
    f.write_text('{"content": "fine"}\n' + line + "\n")
    rc = cli.main(["--data", str(tmp_path / "data"), "import", str(f)])
    err = capsys.readouterr().err
    assert rc == 1 and "nothing was imported" in err and "line 2:" in err
    assert "Traceback" not in err and len(err) < 1000


@pytest.mark.parametrize("field", ["kind", "source", "private", "created_at", "scope_x"])
def test_a_huge_bad_value_is_clipped_in_the_error(tmp_path, monkeypatch, capsys, field):
    """Issue 25 item C5: a 1 MB bad value (or field name) is not echoed whole to stderr: every
    value an error quotes is clipped (80 characters and "…")."""
    from eva_tui import cli

    _cli_env(monkeypatch, tmp_path)
    huge = "k" * 1_000_000
    obj = {"content": "x", field: huge} if field != "scope_x" else {"content": "x", huge: 1}
    f = tmp_path / "huge.jsonl"
    f.write_text(json.dumps(obj) + "\n")
    rc = cli.main(["--data", str(tmp_path / "data"), "import", str(f)])
    err = capsys.readouterr().err
    assert rc == 1 and "line 1:" in err and "…" in err
    assert len(err) < 600, len(err)
