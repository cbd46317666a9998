"""The fault campaign's kill -9 matrix (issue 15, SPEC §11): a real process is SIGKILLed right
before EVERY SQL statement of an operation (and once right after it returned), for save, a
detailed dedup, update, sleep's merge, a whole night of sleep, regenerate, import, the rolling
summaries, and searches whose reinforcements wait for the next write (``search``, issue 32:
a kill loses at most the reinforcements still waiting — ``waiting_at_return`` counts those of
the kill after the return — and never a memory or anything committed).

For one scenario (``run_matrix``):

1. a template store is built and closed;
2. a dry run on a copy counts the operation's statements, and before each statement reads the
   committed state of the file through a second connection — what a kill at that statement
   must leave behind, exactly;
3. for every statement ``n`` (or every ``stride``-th), a forked child (a real process: its own
   SQLite connection, opened after the fork) copies nothing, opens the copy, runs the
   operation, and SIGKILLs itself right before statement ``n`` — or, past the last one, right
   after the operation returned (what it reported done must survive);
4. the parent checks the file: ``PRAGMA integrity_check`` and the record invariants hold, the
   committed state is exactly the expected one (nothing committed lost or half written), and
   the store opens again through ``Memory.open``.

Run one scenario as its own process: ``python -m tests.faultkit <scenario> <workdir> [stride]``
(prints one JSON line). ``bench.faults`` runs every scenario at stride 1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.crashkit import HashEmbedder, faulty_factory, open_ro

T0 = 1_780_000_000.0
DAY = 86_400.0
SKIP_COLUMNS = {"seconds"}  # wall-clock timings of the sleep journal: not state
_TIMING = re.compile(r'\b\d+(?:\.\d+)? s\b|(?<="seconds": )[\d.e-]+')


# ---------------------------------------------------------------------------- the kill switch
class KillPlan:
    """Consulted before every statement (``tests.crashkit.FaultyConnection``): SIGKILLs its
    own process before statement ``at``; ``before_each`` (the dry run) reads the file first."""

    def __init__(
        self, at: int | None = None, before_each: Callable[[int], None] | None = None
    ) -> None:
        self.at, self.before_each = at, before_each
        self.armed = False
        self.n = 0

    def tick(self, sql: str) -> None:
        if not self.armed:
            return
        if self.before_each is not None:
            self.before_each(self.n)
        if self.n == self.at:
            os.kill(os.getpid(), signal.SIGKILL)
        self.n += 1


# ---------------------------------------------------------------------------- state of a file
def state(path: Path) -> dict[str, list[tuple]]:
    """Every committed row of every table (timings left out), canonically ordered."""
    conn = open_ro(path)
    try:
        out = {}
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        for t in tables:
            cols = [
                r[1] for r in conn.execute(f"PRAGMA table_info({t})") if r[1] not in SKIP_COLUMNS
            ]
            rows = conn.execute(f"SELECT {', '.join(cols)} FROM {t}").fetchall()
            if t.startswith("sleep_"):  # how long a step took ("…; 0.02 s", "seconds": 0.01)
                rows = [
                    tuple(_TIMING.sub("<t>", v) if isinstance(v, str) else v for v in r)
                    for r in rows
                ]
            if t == "meta":  # the sleep lease names a process (pid, nonce, heartbeat), not
                # the store's content: a dead holder's lease is taken over at the next night
                rows = [r for r in rows if r[0] not in ("sleep_lease", "sleep_wake")]
            out[t] = sorted((tuple(r) for r in rows), key=repr)
        return out
    finally:
        conn.close()


def record_problems(path: Path) -> list[str]:
    from tests.test_sleep_crash import record_problems as problems

    conn = open_ro(path)
    try:
        return problems(conn)
    finally:
        conn.close()


def lost_records(actual: dict, expected: dict) -> int:
    """Committed memory rows (and their accesses and vectors) missing or changed."""
    n = 0
    for t in ("memories", "accesses", "vectors", "changes", "messages"):
        exp, act = expected.get(t, []), actual.get(t, [])
        n += sum(1 for r in set(exp) - set(act))
    return n


# ---------------------------------------------------------------------------- scenarios
def _open(path: Path, plan=None):
    from core import ManualClock, Memory, MemoryConfig

    kw = {"connection_factory": faulty_factory(plan)} if plan is not None else {}
    mem = Memory.open(
        path, MemoryConfig(), ManualClock(T0 + 10 * DAY), embedder=HashEmbedder(), **kw
    )
    # waiting reinforcements are written by the next transaction, not by the wall-clock timer:
    # the dry run and every child then make the same statements (a timer flush would land
    # wherever the machine's load put it)
    mem._accesses.interval = None
    return mem


def _base(path: Path) -> None:
    from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig
    from core.store.records import Actor

    clock = ManualClock(T0)
    mem = Memory.open(path, MemoryConfig(), clock, embedder=HashEmbedder())
    mem.save("The owner's cat is called Murka and she likes fish", OWNER_TRUSTED, importance=3)
    mem.save("Встреча с Анной в пятницу в 3 часа у метро", OWNER_TRUSTED, kind="event")
    mem.save("Owner's blood pressure was 140/90 at the doctor", OWNER_TRUSTED, private=True)
    mem.save("The owner prefers short answers", OWNER_TRUSTED, kind="core", importance=4)
    mem.save("Owner takes piano lessons on Tuesdays", OWNER_TRUSTED, importance=2)
    old = mem.save("Owner's sister lives in Kazan", OWNER_TRUSTED).id
    clock.advance(DAY)
    mem.search("cat Murka piano", OWNER_TRUSTED)
    mem.forget(old, "moved away", OWNER_TRUSTED, actor=Actor.OWNER)
    mem.close()


def _sleep_base(path: Path) -> None:
    from core import ManualClock
    from tests.sleep_kit import open_memory
    from tests.test_sleep_crash import corpus

    mem = open_memory(path.parent, ManualClock(T0), embedder=HashEmbedder(), name=path.name)
    mem.import_records(corpus())
    mem.close()


def _regenerate_base(path: Path) -> None:
    from dataclasses import replace

    from core import OWNER_TRUSTED
    from core.chat.conversation import Conversation
    from core.chat.conversation_config import ConversationConfig
    from core.llm import ToolCall
    from tests.fake_llm import ScriptedLLM

    _base(path)
    mem = _open(path)
    llm = ScriptedLLM(
        [
            [
                ToolCall(
                    "memory_save",
                    {"content": "Owner moved to Moscow in 2026", "kind": "fact", "importance": 4},
                ),
                ToolCall("memory_update", {"id": 1, "importance": 5}),
                ToolCall("memory_forget", {"id": 5, "why": "stopped piano"}),
            ],
            ["Noted: Moscow."],
        ]
    )
    conv = Conversation(mem, llm, config=replace(ConversationConfig(), memory_writes="tools"))
    list(conv.turn("I moved to Moscow and stopped piano", OWNER_TRUSTED.with_turn("turn-1")))
    mem.close()


def _op_save(mem) -> Any:
    from core import OWNER_TRUSTED

    return mem.save("Owner started learning the Go language", OWNER_TRUSTED, importance=3)


def _op_dedup(mem) -> Any:
    from core import OWNER_TRUSTED

    return mem.save(
        "The owner's cat is called Murka and she likes fish and milk", OWNER_TRUSTED, private=True
    )


def _op_update(mem) -> Any:
    from core import OWNER_TRUSTED

    return mem.update(
        2, OWNER_TRUSTED, content="Встреча с Анной перенесена на субботу", importance=3, kind="fact"
    )


def _op_merge(mem) -> Any:
    from core.sleep import ops

    planned = ops.versions(mem._storage.conn, [1, 5])
    with ops.transaction(mem, "sleep:1") as tx, tx.op():
        return ops.merge(
            tx, [1, 5], "Owner's cat Murka likes fish; piano on Tuesdays", "one owner", planned
        )


def _op_sleep(mem) -> Any:
    from core.sleep import Sleeper
    from tests.test_sleep_crash import ScriptPlanner, config

    sleeper = Sleeper(mem, ScriptPlanner(), config(), mem.clock)
    # the lease's heartbeat writes every 5 s of wall time: on a loaded machine the dry run then
    # counted more statements than a faster child ran, and the child "returned" before its kill
    # point (seen in CI). No beat during the matrix: the statements are the night's own.
    sleeper.lease.heartbeat_every = 3600.0
    return sleeper.run().status


def _op_regenerate(mem) -> Any:
    from dataclasses import replace

    from core import OWNER_TRUSTED
    from core.chat.conversation import Conversation
    from core.chat.conversation_config import ConversationConfig
    from tests.fake_llm import ScriptedLLM

    conv = Conversation(
        mem,
        ScriptedLLM([["Second answer."]]),
        config=replace(ConversationConfig(), memory_writes="tools"),
    )
    return [type(e).__name__ for e in conv.regenerate(OWNER_TRUSTED)]


def _op_import(mem) -> Any:
    items = [
        {"content": f"Imported note {i}: the owner's {w} collection", "importance": 2}
        for i, w in enumerate(
            (
                "stamp",
                "coin",
                "vinyl",
                "book",
                "tea",
                "shell",
                "map",
                "clock",
                "pen",
                "card",
                "stone",
                "lamp",
            )
        )
    ]
    return len(mem.import_records(items))


def _op_search(mem) -> Any:
    """Two searches (their reinforcements wait), a save (its transaction writes them first,
    with the new record: all or nothing), and one more search, still waiting when it returns."""
    from core import OWNER_TRUSTED

    found = [
        len(mem.search("cat Murka piano", OWNER_TRUSTED)),
        len(mem.search("blood pressure doctor", OWNER_TRUSTED)),
    ]
    saved = mem.save("Owner started learning the Go language", OWNER_TRUSTED, importance=3)
    found.append(len(mem.search("Go language cat", OWNER_TRUSTED)))
    return found, saved.status


def _summarise_base(path: Path) -> None:
    """A chat whose first exchanges left the live window: one owner fact its turn did not save
    (the window saver reads it), then talk with names and numbers to summarise."""
    from core.chat.conversation import Conversation
    from core.chat.conversation_config import ConversationConfig
    from core.chat.transcript import Transcript
    from tests.chat_kit import tui_message
    from tests.fake_llm import ScriptedLLM

    _base(path)
    mem = _open(path)
    conv = Conversation(mem, ScriptedLLM([]), config=ConversationConfig())
    tr = mem.attach(Transcript)
    rows = [
        ("t1", "user", "My sister Olga lives in Riga", {"owner": True}),
        ("t1", "assistant", "How nice!", {"ops": []}),
    ]
    rows += [
        (f"t{i}", role, text, meta)
        for i in range(2, 12)
        for role, text, meta in (
            ("user", f"I met Anna{i} at {10 + i} Baker street", {"owner": True}),
            (
                "assistant",
                f"Nice, Anna{i} sounds lovely!",
                {"ops": [{"tool": "memory_save", "ok": True}]},
            ),
        )
    ]
    ids = [
        tui_message(tr, t, role, text, chat_id=conv.chat_id, at=T0 + n, tokens=8, meta=meta)
        for n, (t, role, text, meta) in enumerate(rows)
    ]
    conv.chats.set_window_start(conv.chat_id, ids[-1] + 1)
    mem.close()


def _op_summarise(mem) -> Any:
    """Issue 12's background work: the memory step over a chunk that leaves the window
    (extraction), then its summary, tier by tier."""
    from core.chat.conversation import Conversation
    from core.chat.conversation_config import ConversationConfig
    from tests.test_summaries import OLGA_PLAN, SummaryLLM

    conv = Conversation(mem, SummaryLLM([OLGA_PLAN]), config=ConversationConfig())
    return [(r.action, r.saved) for r in conv.summarise()]


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable[[Path], None]
    op: Callable[[Any], Any]


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("save", _base, _op_save),
        Scenario("save-dedup", _base, _op_dedup),
        Scenario("update", _base, _op_update),
        Scenario("merge", _base, _op_merge),
        Scenario("sleep-apply", _sleep_base, _op_sleep),
        Scenario("regenerate", _regenerate_base, _op_regenerate),
        Scenario("import", _base, _op_import),
        Scenario("summarise", _summarise_base, _op_summarise),
        Scenario("search", _base, _op_search),
    )
}


# ---------------------------------------------------------------------------- the matrix
def _copy(template: Path, dest: Path) -> Path:
    for f in dest.parent.glob(dest.name + "*"):
        f.unlink()
    shutil.copyfile(template, dest)
    return dest


def dry_run(sc: Scenario, template: Path, work: Path) -> tuple[list[dict], dict, Any]:
    """The committed state before each statement, the final state, and the op's result."""
    seen, final, result, _waiting = _dry_run(sc, template, work)
    return seen, final, result


def _dry_run(sc: Scenario, template: Path, work: Path) -> tuple[list[dict], dict, Any, int]:
    """:func:`dry_run`, and how many reinforcements still waited when the op returned (what a
    kill right after it loses)."""
    path = _copy(template, work / "dry.db")
    seen: list[dict] = []
    plan = KillPlan(None, before_each=lambda n: seen.append(state(path)))
    mem = _open(path, plan)
    plan.armed = True
    result = sc.op(mem)
    plan.armed = False
    final = state(path)
    waiting = len(mem._accesses)
    mem.close()
    return seen, final, result, waiting


def _child(sc: Scenario, path: Path, at: int, w: int) -> None:
    """In the forked child: run the op, die before statement ``at``, or after it returned."""
    code = 0
    try:
        plan = KillPlan(at)
        mem = _open(path, plan)
        plan.armed = True
        sc.op(mem)
        os.write(w, b"returned\n")
        os.kill(os.getpid(), signal.SIGKILL)
    except BaseException as e:  # noqa: BLE001 - reported to the parent, then die
        os.write(w, f"error {type(e).__name__}: {e}\n".encode()[:400])
        code = 3
    finally:
        os._exit(code)


def kill_at(sc: Scenario, template: Path, work: Path, at: int) -> tuple[bool, str]:
    """Fork a child that runs the op on a fresh copy and SIGKILLs itself at ``at``.
    Returns (killed by SIGKILL, what it said)."""
    path = _copy(template, work / "kill.db")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        _child(sc, path, at, w)
    os.close(w)
    said = b""
    while chunk := os.read(r, 4096):
        said += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return killed, said.decode(errors="replace").strip()


def run_matrix(name: str, work: Path, stride: int = 1) -> dict:
    sc = SCENARIOS[name]
    work.mkdir(parents=True, exist_ok=True)
    template = work / "template.db"
    for f in work.glob("template.db*"):
        f.unlink()
    sc.build(template)
    for f in work.glob("template.db.*"):  # the persisted index: every open rebuilds the same
        f.unlink()
    started = time.monotonic()
    expected, final, result, waiting = _dry_run(sc, template, work)
    n_statements = len(expected)
    points = sorted(set(range(0, n_statements, max(1, stride))) | {n_statements})
    problems: list[str] = []
    kills = lost = 0
    for at in points:
        killed, said = kill_at(sc, template, work, at)
        path = work / "kill.db"
        if not killed:
            problems.append(f"{name}@{at}: the child was not SIGKILLed ({said})")
            continue
        kills += 1
        want = final if at == n_statements else expected[at]
        if (at == n_statements) != (said == "returned"):
            problems.append(f"{name}@{at}: child said {said!r}")
        bad = record_problems(path)
        if bad:
            problems.append(f"{name}@{at}: {bad[:3]}")
        got = state(path)
        if got != want:
            lost += lost_records(got, want)
            diff = [t for t in want if got.get(t) != want[t]]
            problems.append(f"{name}@{at}: committed state differs in {diff}")
        try:
            mem = _open(path)
            live = mem.count()
            mem.close()
            if live != sum(1 for r in want["memories"] if r[15] is None):
                problems.append(f"{name}@{at}: reopened count {live} is not the committed one")
        except Exception as e:  # noqa: BLE001
            problems.append(f"{name}@{at}: does not reopen: {e}")
    commits = len({json.dumps(x, sort_keys=True, default=repr) for x in [*expected, final]})
    return {
        "scenario": name,
        "statements": n_statements,
        "kills": kills,
        "states": commits,
        "points": len(points),
        "lost": lost,
        "waiting_at_return": waiting,
        "problems": problems[:20],
        "result": repr(result)[:120],
        "seconds": round(time.monotonic() - started, 1),
    }


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = sys.argv[1:]
    out = run_matrix(args[0], Path(args[1]), int(args[2]) if len(args) > 2 else 1)
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
