"""Crash safety (SPEC §11): "every multi-step change … is one transaction; a crash at any point
leaves a consistent store and loses no memory".

A. Fault injection: each operation runs once per statement it makes, with that statement failing
   (``once``: a transient I/O error; ``dead``: that and every later statement fail, as in a
   process that died there). The file must then hold exactly the state before or exactly the state
   after the operation, satisfy the store's invariants, and the in-memory index of the Memory
   object that saw the failure must agree with the file.
B. A child process doing saves/updates/forgets/restores/searches is SIGKILLed at random moments;
   every operation it reported as returned must be in the store — a search's reinforcement once
   a later write returned (it waits for the next transaction: core.memory.reinforcement; a crash loses
   at most those, never a memory).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from core import ManualClock, Memory, MemoryConfig
from core.privacy import OWNER_TRUSTED
from tests.crashkit import (
    REPO,
    FaultPlan,
    HashEmbedder,
    InjectedFault,
    dump,
    faulty_factory,
    invariant_problems,
)

T0 = 1_780_000_000.0
DAY = 86_400.0
QUERIES = (
    "cat Murka",
    "Анна пятница",
    "Go language",
    "piano lessons",
    "blood pressure",
    "Kazan sister",
)


# ---------------------------------------------------------------------------- the template store
def _build_template(path: Path) -> dict[str, int]:
    clock = ManualClock(T0)
    mem = Memory.open(path, MemoryConfig(), clock, embedder=HashEmbedder())
    ids = {}
    ids["cat"] = mem.save(
        "The owner's cat is called Murka and she likes fish", kind="fact", importance=3
    ).id
    ids["anna"] = mem.save(
        "Встреча с Анной в пятницу в 3 часа у метро", kind="event", importance=4
    ).id
    ids["bp"] = mem.save(
        "Owner's blood pressure was 140/90 at the doctor", kind="fact", importance=5, private=True
    ).id
    ids["core"] = mem.save(
        "The owner prefers short answers in Russian", kind="core", importance=4
    ).id
    ids["piano"] = mem.save("Owner takes piano lessons on Tuesdays", kind="fact", importance=2).id
    ids["old"] = mem.save("Owner's sister lives in Kazan", kind="fact", importance=3).id
    clock.advance(2 * DAY)
    mem.search("cat Murka fish", OWNER_TRUSTED)
    mem.search("piano lessons", OWNER_TRUSTED)
    clock.advance(DAY)
    mem.forget(ids["old"], "moved away", OWNER_TRUSTED)
    clock.advance(3 * DAY)
    mem.close()
    return ids


@dataclass(frozen=True)
class Op:
    name: str
    run: Callable[[Memory, dict[str, int]], object]
    expect: Callable[[object], None] = lambda res: None


def _save_fact(content: str, **extra: object) -> Callable[[Memory, dict[str, int]], object]:
    """A save as the model makes it (a fact of importance 3 in the owner's trusted turn): the
    three save ops differ only in the text, which decides new record, reinforcement or update."""
    return lambda m, ids: m.save(content, OWNER_TRUSTED, kind="fact", importance=3, **extra)


OPS = [
    Op(
        "save-new",
        _save_fact("Owner started learning the Go language in 2026"),
        lambda res: res.status == "created" or pytest.fail(f"expected a new record, got {res}"),
    ),
    Op(
        "save-dedup-reinforce",
        _save_fact("The owner's cat is called Murka and she likes fish"),
        lambda res: res.status == "reinforced" or pytest.fail(f"expected a dedup hit: {res}"),
    ),
    Op(
        "save-dedup-update",
        _save_fact("The owner's cat is called Murka and she likes fish and milk", private=True),
        lambda res: res.status == "updated" or pytest.fail(f"expected a detailed dedup: {res}"),
    ),
    Op(
        "update",
        lambda m, ids: m.update(
            ids["anna"],
            OWNER_TRUSTED,
            content="Встреча с Анной перенесена на субботу в 5 часов",
            importance=3,
            kind="fact",
        ),
    ),
    Op("update-flag", lambda m, ids: m.update(ids["piano"], OWNER_TRUSTED, private=True)),
    Op("forget", lambda m, ids: m.forget(ids["cat"], "the cat is gone", OWNER_TRUSTED)),
    Op("restore", lambda m, ids: m.restore(ids["old"], OWNER_TRUSTED)),
    Op(
        "search-reinforce",
        lambda m, ids: m.search("owner cat piano blood pressure Murka", OWNER_TRUSTED),
        lambda res: len(res) >= 2 or pytest.fail(f"search should reinforce several: {res}"),
    ),
    Op("pin", lambda m, ids: m.pin(ids["piano"], True)),
    Op(
        "prompt-reinforce",
        lambda m, ids: m.prompt_section("cat Murka piano", OWNER_TRUSTED, reinforce=True),
        lambda res: len(res.recalled_ids) >= 2 or pytest.fail(f"nothing recalled: {res}"),
    ),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    d = tmp_path_factory.mktemp("crash-template")
    path = d / "memory.db"
    ids = _build_template(path)
    assert not Path(str(path) + "-wal").exists() or Path(str(path) + "-wal").stat().st_size == 0
    return path, ids


def _copy(template_path: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "memory.db"
    for f in dest.glob("memory.db*"):
        f.unlink()
    shutil.copyfile(template_path, target)
    return target


def _open(path: Path, plan: FaultPlan | None = None) -> Memory:
    kwargs = {"connection_factory": faulty_factory(plan)} if plan is not None else {}
    return Memory.open(
        path, MemoryConfig(), ManualClock(T0 + 6 * DAY), embedder=HashEmbedder(), **kwargs
    )


def _recall_view(mem: Memory) -> list:
    """What the in-memory indexes say, through the public read path (reinforces nothing)."""
    out = []
    for q in QUERIES:
        hits = mem.recall(q, OWNER_TRUSTED)
        out.append([(h.id, round(h.score, 9)) for h in hits])
        sec = mem.preview(q)
        out.append((sec.core_ids, sec.recalled_ids))
    out.append(mem.status().vectors)
    return out


@dataclass(frozen=True)
class Baseline:
    before: dict
    after: dict
    statements: list[str]
    view_before: list
    view_after: list


def clean_runs(
    ops: list[Op],
    template: tuple[Path, dict[str, int]],
    tmp_path_factory: pytest.TempPathFactory,
    dumper: Callable[[Path], dict] = dump,
) -> dict[str, Baseline]:
    """For each op: the dump (by ``dumper``) and the recall view before and after a clean run
    on a copy of the template, and the statements it makes (one faulty run per statement)."""
    tpl, ids = template
    out = {}
    for op in ops:
        path = _copy(tpl, tmp_path_factory.mktemp(f"clean-{op.name}"))
        plan = FaultPlan()
        mem = _open(path, plan)
        before, view_before = dumper(path), _recall_view(mem)
        plan.armed = True
        res = op.run(mem, ids)
        plan.armed = False
        op.expect(res)
        view_after = _recall_view(mem)
        mem.close()
        after = dumper(path)
        assert after != before, f"{op.name} changed nothing"
        assert invariant_problems(path) == [], op.name
        out[op.name] = Baseline(before, after, list(plan.executed), view_before, view_after)
    return out


def run_failing_at(
    op: Op, template: tuple[Path, dict[str, int]], dest: Path, n: int, mode: str
) -> tuple[Path, FaultPlan, Memory, bool]:
    """``op`` run on a fresh copy of the template in ``dest`` with its statement ``n`` failing
    (``mode``: once or dead): the copy, the plan (still armed), the Memory that saw the fault
    (still open) and whether the op raised."""
    tpl, ids = template
    path = _copy(tpl, dest)
    plan = FaultPlan(fail_at=n, mode=mode)
    mem = _open(path, plan)
    plan.armed = True
    try:
        op.run(mem, ids)
    except sqlite3.Error:
        return path, plan, mem, True
    return path, plan, mem, False


@pytest.fixture(scope="module")
def baselines(template, tmp_path_factory):
    return clean_runs(OPS, template, tmp_path_factory)


def _state_name(state: dict, base: Baseline) -> str | None:
    if state == base.before:
        return "before"
    if state == base.after:
        return "after"
    return None


def _diff(state: dict, ref: dict) -> str:
    return "; ".join(
        f"{t}: +{sorted(set(state[t]) - set(ref[t]))[:3]} -{sorted(set(ref[t]) - set(state[t]))[:3]}"
        for t in state
        if state[t] != ref[t]
    )


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_transient_fault_at_every_statement_is_all_or_nothing(op, template, baselines, tmp_path):
    """SPEC §11: an operation failing at ANY statement (here: one transient I/O error) leaves
    either the whole change or none of it; the store's invariants hold; the failed Memory
    object's in-memory indexes did not move ahead of (or lag behind) the file; and the
    operation can simply be retried."""
    ids = template[1]
    base = baselines[op.name]
    assert len(base.statements) >= 3, base.statements
    for n in range(len(base.statements)):
        path, plan, mem, raised = run_failing_at(op, template, tmp_path / f"n{n}", n, "once")
        plan.armed = False
        assert plan.fired, f"statement {n} of {op.name} was not reached"
        where = f"{op.name}: fault at statement {n} ({base.statements[n]})"
        state = dump(path)
        which = _state_name(state, base)
        assert which is not None, f"{where}: half-written store: {_diff(state, base.before)}"
        # a fault after the commit (e.g. listing similar records) may be absorbed, but only
        # when the whole change is in the file
        assert raised or which == "after", f"{where}: reported success without the change"
        assert invariant_problems(path) == [], where
        # the object that saw the failure agrees with a fresh reader of the file
        fresh = _open(path)
        assert _recall_view(mem) == _recall_view(fresh), (
            f"{where}: in-memory index of the failed Memory differs from the file ({which})"
        )
        fresh.close()
        if which == "before":
            # nothing happened, so a retry on the same object is the clean run
            res = op.run(mem, ids)
            op.expect(res)
            assert _recall_view(mem) == base.view_after, f"{where}: retry diverged"
        mem.close()
        if which == "before":
            assert dump(path) == base.after, f"{where}: retry wrote something else"


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_crash_at_every_statement_is_all_or_nothing(op, template, baselines, tmp_path):
    """SPEC §11: a crash at ANY statement (that statement and everything after it never reach
    the file, the connection is abandoned mid-transaction) leaves exactly the old or the new
    state, readable by a fresh ``Memory.open`` while the dead connection still exists."""
    base = baselines[op.name]
    for n in range(len(base.statements)):
        path, plan, mem, raised = run_failing_at(op, template, tmp_path / f"n{n}", n, "dead")
        where = f"{op.name}: crash at statement {n} ({base.statements[n]})"
        # a fresh process opens the file while the dead one still holds its connection
        fresh = _open(path)
        state = dump(path)
        assert _state_name(state, base) is not None, (
            f"{where}: half-written store: {_diff(state, base.before)}"
        )
        assert raised or state == base.after, f"{where}: reported success without the change"
        assert invariant_problems(path) == [], where
        expected_view = base.view_before if state == base.before else base.view_after
        assert _recall_view(fresh) == expected_view, where
        fresh.close()
        plan.armed = False
        mem.close()
        # closing the dead connection (rolling back whatever it held) changes nothing either
        assert dump(path) == state, f"{where}: closing the dead connection changed the file"


def test_failed_save_reports_no_record_and_leaves_no_trace(template, tmp_path):
    """SPEC §3.2/§11: "nothing is half-written" — a save that failed at its INSERT leaves no
    record, no vector, no change-log row, and the id is not burnt (the next save gets it)."""
    tpl, ids = template
    path = _copy(tpl, tmp_path)
    plan = FaultPlan()
    mem = _open(path, plan)
    plan.armed = True
    mem.save("A completely new memory about sailing boats", OWNER_TRUSTED)
    plan.armed = False
    insert_at = next(i for i, s in enumerate(plan.executed) if s.startswith("INSERT INTO memories"))
    mem.close()

    path = _copy(tpl, tmp_path / "again")
    before = dump(path)
    plan = FaultPlan(fail_at=insert_at, mode="once")
    mem = _open(path, plan)
    plan.armed = True
    with pytest.raises(InjectedFault):
        mem.save("A completely new memory about sailing boats", OWNER_TRUSTED)
    plan.armed = False
    assert dump(path) == before
    assert mem.search("sailing boats", OWNER_TRUSTED, reinforce=False) == []
    res = mem.save("A completely new memory about sailing boats", OWNER_TRUSTED)
    assert res.status == "created" and res.id == max(r[0] for r in before["memories"]) + 1
    mem.close()


# ---------------------------------------------------------------------------- B: SIGKILL
def _spawn(path: Path, seed: int, seq: int, stderr) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.crashkit", str(path), str(seed), str(seq)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def _db_state(path: Path) -> dict[int, dict]:
    conn = sqlite3.connect(str(path))
    try:
        return {
            rid: {"content": content, "archived": archived is not None, "access": n}
            for rid, content, archived, n in conn.execute(
                "SELECT id, content, archived_at, access_count FROM memories"
            )
        }
    finally:
        conn.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkilled_writer_loses_nothing_it_reported(tmp_path):
    """SPEC §11: a crash at any point (a real SIGKILL of the process, several times at random
    moments) leaves a store that passes ``PRAGMA integrity_check`` and the invariants, and loses
    no memory: every operation the child reported as returned is in the store; the one in flight
    is either wholly there or not at all. The reinforcements of the searches since the last
    write that returned may be lost (issue 32: they wait for the next transaction or a few
    seconds), all or none of them — never more."""
    rng = random.Random(20260611)
    path = tmp_path / "memory.db"
    Memory.open(path, MemoryConfig(), ManualClock(T0), embedder=HashEmbedder()).close()
    model: dict[int, dict] = {}
    seq = 0
    rounds = 8
    reported_total = 0
    for rnd in range(rounds):
        err_path = tmp_path / f"child-{rnd}.err"
        err = err_path.open("w")
        proc = _spawn(path, rng.randrange(1 << 30), seq, err)
        target = rng.randint(3, 40)
        done: list[dict] = []
        inflight: dict | None = None
        lines: list[str] = []
        try:
            while len(done) < target:
                line = proc.stdout.readline()
                if not line:
                    proc.wait()
                    pytest.fail(f"child died on its own: {err_path.read_text()[-3000:]}")
                lines.append(line)
                msg = json.loads(line)
                if "done" in msg:
                    done.append(msg)
            # kill it somewhere inside one of the next operations (the pause only spreads the
            # moment of the kill; nothing is asserted about time)
            for _ in range(rng.randint(0, 3)):
                line = proc.stdout.readline()
                if line:
                    lines.append(line)
            time.sleep(rng.choice((0.0, 0.0005, 0.001, 0.002, 0.004)))
        finally:
            proc.send_signal(signal.SIGKILL)
            # read what it wrote before dying through the same buffered reader (communicate()
            # would bypass the lines readline() already buffered)
            rest = proc.stdout.read()
            proc.stdout.close()
            proc.wait()
            err.close()
        lines.extend(rest.splitlines(keepends=True))
        complete = [json.loads(ln) for ln in lines if ln.endswith("\n")]
        begun: dict[int, dict] = {}
        for msg in complete:
            if "begin" in msg:
                begun[msg["begin"]] = msg
                inflight = msg
            elif "done" in msg:
                inflight = None
                seq = max(seq, msg["done"])
                reported_total += 1
                _apply_done(model, begun[msg["done"]], msg)
        if inflight is not None:
            seq = max(seq, inflight["begin"])

        assert invariant_problems(path) == [], f"round {rnd}"
        state = _db_state(path)
        _check_against_model(state, model, inflight, f"round {rnd}")
        # the next round continues from the truth of the file
        model = state
        reopened = Memory.open(path, MemoryConfig(), ManualClock(T0), embedder=HashEmbedder())
        assert reopened.count() == sum(not s["archived"] for s in state.values())
        reopened.close()
    assert reported_total >= rounds * 3


def _apply_done(model: dict[int, dict], begin: dict, done: dict) -> None:
    op = done["op"]
    if op == "save":
        if done["status"] == "created":
            model[done["id"]] = {"content": begin["content"], "archived": False, "access": 0}
        else:  # a dedup hit on an older note
            model[done["id"]]["access"] += 1
            if done["status"] == "updated":
                model[done["id"]]["content"] = begin["content"]
    elif op == "resave":
        model[done["id"]]["access"] += 1
    elif op == "update":
        model[done["id"]]["content"] = begin["content"]
    elif op == "forget":
        model[done["id"]]["archived"] = True
    elif op == "restore":
        model[done["id"]]["archived"] = False
    elif op == "search":
        for rid in done["ids"]:  # written with the next transaction (or within seconds)
            model[rid]["waiting"] = model[rid].get("waiting", 0) + 1
        return
    for r in model.values():  # a write's transaction wrote every waiting reinforcement first
        r["access"] += r.pop("waiting", 0)


def _check_against_model(
    state: dict[int, dict], model: dict[int, dict], inflight: dict | None, where: str
) -> None:
    extra = sorted(set(state) - set(model))
    if extra:
        assert inflight is not None and inflight["op"] == "save" and len(extra) == 1, (
            f"{where}: records nobody saved: {extra} (in flight: {inflight})"
        )
        assert state[extra[0]]["content"] == inflight["content"], where
    missing = sorted(set(model) - set(state))
    assert not missing, f"{where}: reported records lost: {missing}"
    target = inflight.get("id") if inflight else None
    waiting = {rid: want.pop("waiting", 0) for rid, want in model.items()}
    if any(waiting.values()):  # the searches' reinforcements since the last write: all or none
        written = [
            state[rid]["access"] - model[rid]["access"] >= n for rid, n in waiting.items() if n
        ]
        assert all(written) or not any(written), f"{where}: reinforcements half written"
        if all(written):
            for rid, n in waiting.items():
                model[rid]["access"] += n
    for rid, want in model.items():
        got = state[rid]
        may_change = inflight is not None and (
            rid == target or inflight["op"] in ("search", "save")
        )
        if got == want:
            continue
        assert may_change, f"{where}: #{rid} is {got}, reported {want} (in flight: {inflight})"
        op = inflight["op"]
        if op in ("search", "save", "resave"):
            assert got["content"] == want["content"] or op == "save", where
            assert got["archived"] == want["archived"], where
            assert got["access"] == want["access"] + 1, f"{where}: #{rid} {got} vs {want}"
        elif op == "update":
            assert got["content"] == inflight["content"], f"{where}: #{rid} half-updated: {got}"
            assert got["archived"] == want["archived"] and got["access"] == want["access"], where
        elif op in ("forget", "restore"):
            assert got["archived"] == (op == "forget"), where
            assert got["content"] == want["content"] and got["access"] == want["access"], where
