"""Issue 30 / SPEC §11 (every multi-step write is one transaction, in the module that knows the
table): only the table owners run SQL — also on a connection handed to another module. The
import-linter contract ``sql_owners`` (devtools/sql_owners.py) checks it in ``make lint``; these
tests check the checker, and the tree against the owners pyproject.toml names."""

from __future__ import annotations

import tomllib
from pathlib import Path

from devtools.sql_owners import breaches_in, owned

ROOT = Path(__file__).resolve().parent.parent


def _contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (found,) = [c for c in contracts if c["type"] == "sql_owners"]
    return found


def test_a_statement_on_a_handed_connection_is_a_breach():
    src = (
        "import sqlite3\n"
        "def f(conn: sqlite3.Connection):\n"
        "    with conn:\n"
        "        conn.execute('DELETE FROM memories')\n"
        "        tx.conn.executemany('UPDATE x SET y = ?', [])\n"
    )
    found = breaches_in("core.somewhere", src)
    assert [(b.line, b.what) for b in found] == [(4, ".execute()"), (5, ".executemany()")]


def test_owners_are_modules_or_packages():
    owners = {"core.store", "core.chat.transcript"}
    assert owned("core.store.records", owners)
    assert owned("core.chat.transcript", owners)
    assert not owned("core.storefront", owners)
    assert not owned("core.chat.conversation", owners)


def test_no_module_outside_the_owners_runs_sql():
    contract = _contract()
    owners = set(contract["owners"])
    checked = 0
    breaches = []
    for package in contract["containers"]:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            if owned(module, owners):
                continue
            checked += 1
            breaches += breaches_in(module, path.read_text(encoding="utf-8"))
    assert checked > 100  # the whole tree was read, not an empty list
    assert breaches == []
