"""Crash safety of the owner's multi-record changes (SPEC §11 "every multi-step change is one
transaction"; issue 13: import is all or nothing, clear all, save from dialogue, move to a scope,
deleting a persona). Each runs once per statement it makes, with that statement failing — a
transient I/O error, or a process that died there — and the file must hold exactly the state
before or exactly the state after, and the failed Memory's index must agree with the file.
The machinery is tests/test_crash_safety.py's, over the same template store plus a persona."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.chat.personas import Personas
from core.memory import portability as pt
from core.store.records import Source
from tests.crashkit import dump, invariant_problems, open_ro
from tests.test_crash_safety import (
    DAY,
    T0,
    Op,
    _build_template,
    _open,
    _recall_view,
    clean_runs,
    run_failing_at,
)

IMPORT_LINES = [
    json.dumps(
        {
            "content": "Owner's brother Pavel is a surgeon in Novosibirsk",
            "private": True,
            "importance": 4,
            "created_at": T0 - 90 * DAY,
            "accesses": [T0 - 30 * DAY],
        }
    ),
    json.dumps({"content": "The owner's cat is called Murka and she likes fish"}),  # a dup
    json.dumps({"content": "Owner plays chess on weekends", "scope": "work", "pinned": True}),
    json.dumps(
        {
            "content": "Owner lived in Samara as a child",
            "archived": {"at": T0 - DAY, "by": "owner", "why": "old"},
        }
    ),
]

OPS = [
    Op(
        "import",
        lambda m, ids: pt.import_lines(m, IMPORT_LINES),
        lambda res: (
            (len(res.created) == 3 and len(res.duplicates) == 1)
            or pytest.fail(f"unexpected import: {res}")
        ),
    ),
    Op(
        "clear-scope",
        lambda m, ids: m.clear_scope("global"),
        lambda res: len(res[1]) >= 3 or pytest.fail(f"cleared too little: {res}"),
    ),
    Op(
        "clear-scope-pinned",
        lambda m, ids: m.clear_scope("work", pinned=True),
        lambda res: len(res[1]) == 2 or pytest.fail(f"expected both work records: {res}"),
    ),
    Op("move-to-scope", lambda m, ids: m.move_to_scope(ids["piano"], "work")),
    Op(
        "save-pinned",
        lambda m, ids: m.save_pinned(
            [
                {"content": "Call me Sasha", "kind": "core"},
                {"content": "Never call before 10 am", "importance": 5},
            ],
            "global",
            Source.DIALOGUE,
        ),
        lambda res: len(res) == 2 or pytest.fail(f"expected two records: {res}"),
    ),
    Op(
        "persona-delete",
        lambda m, ids: m.attach(Personas).delete("work", m),
        lambda res: len(res[0]) == 2 or pytest.fail(f"expected two memories made global: {res}"),
    ),
]


def full_dump(path: Path) -> dict:
    """The memory tables and the personas table."""
    out = dump(path)
    conn = open_ro(path)
    try:
        out["personas"] = sorted(tuple(r) for r in conn.execute("SELECT * FROM personas"))
    finally:
        conn.close()
    return out


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    path = tmp_path_factory.mktemp("owner-crash-template") / "memory.db"
    ids = _build_template(path)
    mem = _open(path)
    Personas_ = mem.attach(Personas)
    Personas_.create("Work", T0)
    ids["work_a"] = mem.save("Writes backend services in Go at work", scope="work").id
    ids["work_b"] = mem.import_records(
        [{"content": "The standup is at ten", "scope": "work", "pinned": True}]
    )[0]
    mem.close()
    return path, ids


@pytest.fixture(scope="module")
def baselines(template, tmp_path_factory):
    return clean_runs(OPS, template, tmp_path_factory, full_dump)


@pytest.mark.parametrize("mode", ["once", "dead"])
@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_a_fault_at_every_statement_is_all_or_nothing(op, mode, template, baselines, tmp_path):
    """§11, issue 13: a fault at ANY statement of these owner operations leaves the store
    exactly as before or exactly as after (never half an import, half a clearing, half a
    persona deletion), consistent, and the in-memory index of the failed Memory agrees with a
    fresh reader of the file."""
    base = baselines[op.name]
    assert len(base.statements) >= 3, base.statements
    for n in range(len(base.statements)):
        path, plan, mem, raised = run_failing_at(op, template, tmp_path / f"n{n}", n, mode)
        where = f"{op.name} ({mode}): fault at statement {n} ({base.statements[n]})"
        assert plan.fired, f"{where}: not reached"
        fresh = _open(path)
        state = full_dump(path)
        assert state in (base.before, base.after), f"{where}: half-written store"
        assert raised or state == base.after, f"{where}: reported success without the change"
        assert invariant_problems(path) == [], where
        expected = base.view_before if state == base.before else base.view_after
        assert _recall_view(fresh) == expected, where
        if mode == "once":
            assert _recall_view(mem) == expected, f"{where}: the failed Memory's index differs"
        fresh.close()
        plan.armed = False
        mem.close()
