"""Freeze a store at one schema version as an SQL dump: tests/fixtures/store_v<N>.sql.

Run it once when a schema version is released (after appending MIGRATIONS[N-1])::

    PYTHONPATH=. python scripts/freeze_store_fixture.py 5

It builds a store that lived through versions 0..N (each version's representative data, the
inserts of tests/test_migrations.py FIXTURES, written with the columns that existed then) and
writes it as text. The dump is then never regenerated: tests/test_migration_fixtures.py opens
every frozen dump with today's code, so an edit to a released migration (or a new one that
breaks older data) fails there even though MIGRATIONS[:N] would still agree with itself.
``--force`` overwrites an existing dump (only for a version that was never released)."""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def dump(path: Path, version: int) -> str:
    conn = sqlite3.connect(str(path))
    try:
        # a virtual table's rows (the FTS5 message index of v7) are not rows of its own: its
        # shadow tables hold the index and are dumped; inserting its rows again on load would
        # fail (the table is made through sqlite_master) or index them twice
        virtual = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
        ]
        rows = [
            ln
            for ln in conn.iterdump()
            if not any(ln.startswith(f'INSERT INTO "{v}" ') for v in virtual)
        ]
        lines = [
            f"-- Eva store, schema v{version}, frozen by scripts/freeze_store_fixture.py",
            "-- Never edit or regenerate: it is what a store of this version holds.",
            *rows,
            f"PRAGMA user_version = {version};",
        ]
    finally:
        conn.close()
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("version", type=int)
    p.add_argument("--force", action="store_true")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from core.store.storage import SCHEMA_VERSION
    from tests.test_migrations import build_store

    if not 1 <= args.version <= SCHEMA_VERSION:
        print(f"version must be 1..{SCHEMA_VERSION}", file=sys.stderr)
        return 2
    out = FIXTURES / f"store_v{args.version}.sql"
    if out.exists() and not args.force:
        print(f"{out} exists (frozen); --force only for a version never released", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "memory.db"
        build_store(path, args.version)
        FIXTURES.mkdir(parents=True, exist_ok=True)
        out.write_text(dump(path, args.version), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
