"""The fault campaign (issue 15): kill -9, injected faults, fuzz and a soak, as one JSON report.

    python -m bench.faults                       # everything (several minutes)
    python -m bench.faults --turns 2000 --fuzz-examples 300 --stride 5   # shorter

* ``kills`` — SIGKILLs delivered by the kill -9 matrix (tests/faultkit.py): a real forked
  process killed before every SQL statement of save, detailed dedup, update, sleep's merge, a
  night of sleep, regenerate, import, the rolling summaries and searches followed by a save,
  and after each returned; every time the file's integrity, record invariants and exact
  committed state are checked, and it reopens.
* ``reinforcements_lost_at_kill`` — what those kills lost that is not a memory: a search's
  reinforcement waits for the next transaction (or a few seconds, issue 32), so the kill right
  after the ``search`` scenario returned lost its last search's accesses (and nothing else).
* ``faults`` — other injected faults: a transient disk I/O error at every statement of the
  single-transaction operations (the file must be exactly before or after), and a real full disk
  (a tmpfs mounted with ``size=``) during saves, nights stopping in different phases and an
  online backup (skipped, and said so, where mounting is not allowed).
* ``inputs`` — fuzzed inputs tried (tests/fuzzkit.py: memory-step JSON, tool arguments, config
  files, ``EVA_`` variables, imported items).
* ``lost`` — committed records lost or corrupted over all of it: must be 0.
* ``http_probes`` / ``cli_probes`` — the probes of issue 25 run (tests/probekit.py): attacks on
  a real ``eva serve`` (a store whose private records carry markers and numbers, a journal
  quoting them) and on the ``eva`` command (broken stores, deep or huge inputs, ``-o`` onto
  existing files and symlinks, ``/dev/full``, a closed pipe, file modes); ``leaks`` — probes
  where private content or a private number reached an untrusted output, or a private file was
  readable by others; ``tracebacks`` — probes that showed a traceback (stderr, server log);
  ``probes`` — every probe's outcome. All must be 0 / ok::

      python -m bench.faults --only probes       # just the probes (about a minute)

* ``soak`` — scripted turns (a fake chat model, the real memory and sleep) with a night every
  24 hours of a manual clock: RSS after warm-up and at the end (growth must be ≤ 10 %), and the
  database's size against the text it holds.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


# ---------------------------------------------------------------------------- kill -9 matrix
def kills(stride: int, work: Path) -> dict:
    from tests.faultkit import SCENARIOS

    out = {}
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    for name in SCENARIOS:
        proc = subprocess.run(
            [sys.executable, "-m", "tests.faultkit", name, str(work / f"kill-{name}"), str(stride)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if proc.returncode != 0:
            out[name] = {
                "error": proc.stderr[-2000:],
                "kills": 0,
                "lost": 0,
                "problems": ["the matrix process failed"],
            }
            continue
        r = json.loads(proc.stdout.splitlines()[-1])
        r.pop("result", None)
        out[name] = r
    return out


# ---------------------------------------------------------------------------- injected faults
def io_errors(work: Path) -> dict:
    """A transient I/O error at every statement of the single-transaction operations."""
    from tests.crashkit import FaultPlan
    from tests.faultkit import SCENARIOS, _copy, _open, dry_run, record_problems, state

    out = {}
    for name in ("save", "save-dedup", "update", "merge", "import"):
        sc = SCENARIOS[name]
        d = work / f"io-{name}"
        d.mkdir(parents=True, exist_ok=True)
        template = d / "template.db"
        sc.build(template)
        for f in d.glob("template.db.*"):
            f.unlink()
        expected, final, _ = dry_run(sc, template, d)
        before = expected[0]
        faults = lost = 0
        problems = []
        for n in range(len(expected)):
            path = _copy(template, d / "io.db")
            plan = FaultPlan(fail_at=n, mode="once")
            mem = _open(path, plan)
            plan.armed = True
            with contextlib.suppress(Exception):  # the injected fault, surfaced as an error
                sc.op(mem)
            plan.armed = False
            faults += plan.fired
            mem.close()
            got = state(path)
            if got not in (before, final):
                lost += 1
                problems.append(f"{name}@{n}: neither before nor after")
            bad = record_problems(path)
            if bad:
                problems.append(f"{name}@{n}: {bad[:2]}")
        out[name] = {
            "statements": len(expected),
            "faults": faults,
            "lost": lost,
            "problems": problems[:10],
        }
    return out


def disk_full() -> dict:
    from tests import diskfull

    try:
        with diskfull.small_fs(64):
            pass
    except (diskfull.Unavailable, FileNotFoundError) as e:
        return {"skipped": f"cannot mount a small tmpfs: {e}", "faults": 0, "lost": 0}
    logging.disable(logging.CRITICAL)
    try:
        runs = {"save": diskfull.save_until_full()}
        for leave in (16, 64, 128, 192, 256):
            runs[f"sleep-{leave}k-free"] = diskfull.sleep_when_full(leave)
        runs["backup"] = diskfull.backup_when_full()
    finally:
        logging.disable(logging.NOTSET)
    return {
        "how": "tmpfs mounted with size= (real ENOSPC)",
        "runs": runs,
        "faults": sum(r["faults"] for r in runs.values()),
        "lost": sum(r["lost"] for r in runs.values()),
    }


# ---------------------------------------------------------------------------- fuzz
def fuzz(examples: int) -> dict:
    from tests import fuzzkit

    logging.disable(logging.CRITICAL)
    try:
        failures = {}
        for name, fn in fuzzkit.TARGETS.items():
            try:
                fn(examples)
            except Exception as e:  # noqa: BLE001 - a falsifying example: reported
                failures[name] = f"{type(e).__name__}: {str(e)[:500]}"
    finally:
        logging.disable(logging.NOTSET)
    return {"inputs": dict(fuzzkit.INPUTS), "reached": dict(fuzzkit.OUTCOMES), "failures": failures}


# ---------------------------------------------------------------------------- soak
class SoakPlanner:
    """Sleep's planner for the soak: merges each cluster into its first record's text, forgets
    every candidate, re-weighs nothing."""

    name = "soak-planner"
    context_size = 32_768

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream_chat(self, *a, **k):  # pragma: no cover - not used by sleep
        raise NotImplementedError

    def warm_up(self, messages, tools=None) -> None:
        """Nothing to read in: there is no cache."""

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        raise NotImplementedError("the soak's planner answers sleep_finish only")

    def force_tool_call(self, messages, tool, timeout=None, cancel=None):
        from core.llm import ToolCall
        from tests.sleep_kit import tool_ids

        ids = sorted(tool_ids(tool))
        d = tool["description"]
        if "forgetting" in d:
            ops = [{"op": "forget", "id": i, "why": "faded"} for i in ids]
        elif "kinds" in d:
            ops = []
        else:
            text = messages[1]["content"].split('"content": "')[1].split('"')[0]
            ops = [{"op": "merge", "ids": ids, "content": text, "why": "same"}]
        return ToolCall("sleep_finish", {"reasoning": "soak", "ops": ops})


def soak(turns: int, work: Path, warmup: int | None = None) -> dict:
    from dataclasses import replace

    from core import OWNER_TRUSTED, ManualClock, Memory, MemoryConfig
    from core.chat.conversation import Conversation
    from core.chat.conversation_config import ConversationConfig
    from core.config import SleepConfig
    from core.llm import ToolCall
    from core.sleep import Sleeper
    from tests.crashkit import WORDS, HashEmbedder
    from tests.fake_llm import ScriptedLLM

    logging.disable(logging.WARNING)
    warmup = warmup if warmup is not None else max(1, turns // 5)
    path = work / "soak.db"
    for f in work.glob("soak.db*"):
        f.unlink()
    rng = random.Random(15)
    clock = ManualClock(1_780_000_000.0)
    mem = Memory.open(path, MemoryConfig(), clock, embedder=HashEmbedder())
    llm = ScriptedLLM([])
    conv = Conversation(mem, llm, config=replace(ConversationConfig(), memory_writes="tools"))
    sleeper = Sleeper(
        mem, SoakPlanner(), SleepConfig(min_memories=0, max_forget=50, max_calls=40), clock
    )
    step = 600.0  # ten minutes between turns: 144 turns a day
    nights = saves = 0
    last_night = clock.now()
    marks: dict[str, dict] = {}
    started = time.monotonic()

    def measure() -> dict:
        gc.collect()
        conn = mem._storage.conn
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        text = conn.execute(
            "SELECT COALESCE(SUM(LENGTH(CAST(content AS BLOB))), 0) FROM memories"
        ).fetchone()[0]
        text += conn.execute(
            "SELECT COALESCE(SUM(LENGTH(CAST(content AS BLOB)) + LENGTH(COALESCE(meta, ''))), 0)"
            " FROM messages"
        ).fetchone()[0]
        size = path.stat().st_size + sum(
            p.stat().st_size for p in work.glob("soak.db-*") if p.exists()
        )
        return {
            "rss_mb": round(_rss_mb(), 1),
            "db_bytes": size,
            "text_bytes": text,
            "db_per_text_byte": round(size / max(text, 1), 2),
            "live": mem.count(),
            "archived": mem.count(archived=True),
            "messages": conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
        }

    for t in range(1, turns + 1):
        clock.advance(step)
        words = " ".join(rng.sample(WORDS, 3))
        text = f"Day note {t}: I was at the {words} with item {rng.randrange(10**6)}"
        if rng.random() < 0.3:
            saves += 1
            llm.replies.append(
                [
                    ToolCall(
                        "memory_save",
                        {"content": text, "kind": "fact", "importance": rng.randint(1, 5)},
                    )
                ]
            )
            llm.replies.append([f"Noted {t}."])
        else:
            llm.replies.append([f"Reply {t} about the {words}."])
        for _ in conv.turn(text, OWNER_TRUSTED):
            pass
        llm.calls.clear()
        llm.json_calls.clear()
        llm.warmed.clear()
        if clock.now() - last_night >= 86_400:
            sleeper.run(reason="schedule")
            nights += 1
            last_night = clock.now()
        if t == warmup:
            marks["warm"] = measure()
    marks["end"] = measure()
    mem.close()
    logging.disable(logging.NOTSET)
    w, e = marks["warm"], marks["end"]
    growth = (e["rss_mb"] - w["rss_mb"]) / w["rss_mb"] * 100
    return {
        "turns": turns,
        "warmup_turns": warmup,
        "nights": nights,
        "saves": saves,
        "warm": w,
        "end": e,
        "rss_growth_percent": round(growth, 1),
        "rss_ok": growth <= 10.0,
        "db_per_text_byte_ratio_end_to_warm": round(
            e["db_per_text_byte"] / max(w["db_per_text_byte"], 1e-9), 2
        ),
        "seconds": round(time.monotonic() - started, 1),
    }


# ---------------------------------------------------------------------------- probes
def probes(kinds: tuple[str, ...] = ("http", "cli")) -> dict:
    from tests import probekit

    return probekit.run(kinds)  # logging stays on: the probes read the server's error records


# ---------------------------------------------------------------------------- main
PARTS = ("kills", "io", "disk", "fuzz", "soak", "probes")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Eva's fault campaign (issue 15)")
    p.add_argument("--turns", type=int, default=10_000, help="soak turns (0: no soak)")
    p.add_argument("--fuzz-examples", type=int, default=1000, help="inputs per fuzz target")
    p.add_argument("--stride", type=int, default=1, help="kill every n-th statement")
    p.add_argument("--skip", default="", help=f"comma list of: {','.join(PARTS)}")
    p.add_argument(
        "--only",
        default="",
        help="comma list of the parts to run (the rest are skipped), e.g. --only probes",
    )
    args = p.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    unknown = (skip | only) - set(PARTS)
    if unknown:
        p.error(f"unknown part {sorted(unknown)[0]!r} (parts: {', '.join(PARTS)})")
    if only:
        skip |= set(PARTS) - only
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, str(REPO))
    work = Path(tempfile.mkdtemp(prefix="eva-faults-"))
    report: dict = {"bench": "faults", "load_before": _load()}
    started = time.monotonic()
    try:
        k = kills(args.stride, work) if "kills" not in skip else {}
        io = io_errors(work) if "io" not in skip else {}
        disk = disk_full() if "disk" not in skip else {"faults": 0, "lost": 0}
        fz = fuzz(args.fuzz_examples) if "fuzz" not in skip else {"inputs": {}, "failures": {}}
        sk = soak(args.turns, work) if args.turns and "soak" not in skip else None
        probed = probes() if "probes" not in skip else None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    problems = [pr for r in k.values() for pr in r.get("problems", [])]
    problems += [pr for r in io.values() for pr in r["problems"]]
    report.update(
        {
            "kills": sum(r.get("kills", 0) for r in k.values()),
            "faults": sum(r["faults"] for r in io.values()) + disk["faults"],
            "inputs": sum(fz["inputs"].values()),
            "lost": (
                sum(r.get("lost", 0) for r in k.values())
                + sum(r["lost"] for r in io.values())
                + disk["lost"]
            ),
            "reinforcements_lost_at_kill": sum(r.get("waiting_at_return", 0) for r in k.values()),
            "problems": problems[:20],
            "fuzz_failures": fz.get("failures", {}),
            "http_probes": probed["http_probes"] if probed else 0,
            "cli_probes": probed["cli_probes"] if probed else 0,
            "leaks": probed["leaks"] if probed else 0,
            "tracebacks": probed["tracebacks"] if probed else 0,
            "kill_matrix": k,
            "io_errors": io,
            "disk_full": disk,
            "fuzz": fz,
            "soak": sk,
            "probes": (
                {
                    "failed": probed["failed"],
                    "seconds": probed["seconds"],
                    "outcomes": probed["probes"],
                }
                if probed
                else None
            ),
            "seconds": round(time.monotonic() - started, 1),
            "load_after": _load(),
        }
    )
    print(json.dumps(report, ensure_ascii=False, indent=1))
    ok = (
        report["lost"] == 0
        and not problems
        and not report["fuzz_failures"]
        and (sk is None or sk["rss_ok"])
        and (probed is None or probed["failed"] == 0)
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
