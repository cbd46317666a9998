"""What a named stage of sleep gets to work with (SPEC §7: "sleep runs named stages").

A stage is a function ``stage(ctx: StageContext) -> str`` returning its status (``done`` or
``skipped``); it raises :class:`core.sleep.plan.Woken` when Eva is woken (through
``ctx.check()`` or ``ctx.call``). Its phases are journaled through ``ctx``:
``ctx.journal(phase)`` on its own, or ``ctx.journal(phase, tx.conn)`` inside the phase's
transaction (``with ctx.transaction() as tx``) so the journal and the changes commit together.
A phase interrupted by a wake-up is journaled as ``discarded`` by ``ctx.phase(name)``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from core.config import SleepConfig
from core.llm import ChatModel, Message
from core.memory.facade import Memory
from core.sleep import ops
from core.sleep.apply import NightBudget
from core.sleep.journal import Journal, PhaseLog, SleepProgress, write_phase
from core.sleep.ops import SleepTxn
from core.sleep.plan import CallResult, Woken, call_planner, run_call
from core.sleep.questions import PROBABILITIES, one_choice
from core.store.records import Record


@dataclass
class Corpus:
    """Every live record by id, as this night knows it."""

    records: dict[int, Record]

    def refresh(self, memory: Memory, ids: set[int]) -> None:
        """Re-read these records (changed by the night): archived ones leave, new ones join."""
        fresh = {r.id: r for r in memory.corpus(ids)}
        for rid in ids:
            if rid in fresh:
                self.records[rid] = fresh[rid]
            else:
                self.records.pop(rid, None)


class PhaseClock:
    """What a phase's journal entry reports of its cost: called, the seconds since the phase
    began; ``calls``, the planner calls made since (counted here, once, for every entry the
    phase may end with: applied, planned, failed or discarded)."""

    def __init__(self, ctx: StageContext) -> None:
        self._ctx = ctx
        self._t0 = time.perf_counter()
        self._c0 = ctx.calls

    def __call__(self) -> float:
        return time.perf_counter() - self._t0

    @property
    def calls(self) -> int:
        return self._ctx.calls - self._c0


@dataclass
class StageContext:
    memory: Memory
    planner: ChatModel | None
    config: SleepConfig
    persona: str
    dry_run: bool
    run_id: int
    stage: str
    budget: NightBudget
    wake: threading.Event
    store: Journal
    on_progress: Callable[[SleepProgress], None] | None = None
    phases: list[PhaseLog] = field(default_factory=list)  # journaled (and committed)
    calls: int = 0  # planner calls this night
    seq: list[int] = field(default_factory=lambda: [0])  # shared across the night's stages
    corpus: Corpus | None = None  # the night's corpus, once a stage has read it
    _uncommitted: list[PhaseLog] = field(default_factory=list)

    def read_corpus(self) -> Corpus:
        """The live corpus, read once a night and kept up to date with the night's own
        changes (a write by anyone else meanwhile is caught by the plan's version check)."""
        if self.corpus is None:
            self.corpus = Corpus({r.id: r for r in self.memory.corpus()})
        return self.corpus

    @property
    def turn_id(self) -> str:
        return f"sleep:{self.run_id}"

    @property
    def calls_left(self) -> int:
        return max(0, self.config.max_calls - self.calls)

    def check(self) -> None:
        """Stop here if Eva was woken (between steps and model calls)."""
        if self.wake.is_set():
            raise Woken()

    def progress(self, phase: str, done: int, total: int, message: str = "") -> None:
        if self.on_progress is not None:
            with contextlib.suppress(Exception):  # a broken progress sink never stops sleep
                self.on_progress(SleepProgress(self.stage, phase, done, total, message))

    def call(self, messages: list[Message], tool: dict[str, Any]) -> CallResult:
        """One planner call (wall-clock limited; raises Woken when woken meanwhile)."""
        self.check()
        if self.planner is None:
            return CallResult(None, "no planner model is available", 0.0)
        self.calls += 1
        return call_planner(self.planner, messages, tool, self.config.call_timeout, self.wake)

    def decide(
        self, messages: list[Message], schema: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, str | None, float]:
        """One small grammar-forced decision (``ChatModel.generate_json`` against ``schema``):
        (answer, error, seconds); wall-clock limited, raises Woken when woken meanwhile."""
        self.check()
        if self.planner is None:
            return None, "no planner model is available", 0.0
        if self.calls_left == 0:
            return None, "max_calls reached: asked the next night", 0.0
        self.calls += 1
        cancel = threading.Event()
        planner = self.planner
        choice = one_choice(schema)
        choose = getattr(planner, "choice_probabilities", None) if choice else None
        if choice is not None and callable(choose):
            # a closed choice read with its probability (issue 27 item 3): the most likely
            # option, and every option's probability under PROBABILITIES
            key, options = choice
            probs, error, seconds = run_call(
                lambda: choose(
                    messages, key, options, timeout=self.config.call_timeout, cancel=cancel
                ),
                self.config.call_timeout,
                self.wake,
                cancel,
            )
            if error is None and isinstance(probs, dict) and set(probs) == set(options):
                best = max(options, key=lambda o: probs[o])
                return {key: best, PROBABILITIES: dict(probs)}, None, seconds
            return None, error or "the model gave no probability of each option", seconds
        answer, error, seconds = run_call(
            lambda: planner.generate_json(
                messages, schema, timeout=self.config.call_timeout, cancel=cancel
            ),
            self.config.call_timeout,
            self.wake,
            cancel,
        )
        if error is None and not isinstance(answer, dict):
            answer, error = None, "the answer is not a JSON object"
        return answer, error, seconds

    def journal(self, phase: PhaseLog, conn: sqlite3.Connection | None = None) -> None:
        """Write a phase to the journal: on ``conn`` (inside the phase's transaction, kept
        only if it commits) or in a transaction of its own."""
        self.seq[0] += 1
        if conn is not None:
            write_phase(conn, self.run_id, self.seq[0], phase)
            self._uncommitted.append(phase)
            return
        with self.store.transaction() as c:
            write_phase(c, self.run_id, self.seq[0], phase)
        self.phases.append(phase)

    @contextmanager
    def transaction(self) -> Iterator[SleepTxn]:
        """The phase's one transaction (memory changes + their journal)."""
        try:
            with ops.transaction(self.memory, self.turn_id) as tx:
                yield tx
                changed = tx.touched | tx.marked
        except BaseException:
            self._uncommitted.clear()
            raise
        self.phases.extend(self._uncommitted)
        self._uncommitted.clear()
        if self.corpus is not None and changed:
            self.corpus.refresh(self.memory, changed)

    @contextmanager
    def phase(self, name: str) -> Iterator[PhaseClock]:
        """Run a phase; yields its clock (seconds, and planner calls, so far). A wake-up inside
        journals it as discarded (nothing of it applied) and stops the stage; an unexpected
        error journals it as failed."""
        elapsed = PhaseClock(self)
        try:
            yield elapsed
        except Woken:
            self.journal(
                PhaseLog(
                    self.stage,
                    name,
                    "discarded",
                    elapsed(),
                    elapsed.calls,
                    [],
                    [],
                    "woken: this phase was discarded",
                )
            )
            raise
        except Exception as e:
            self.journal(
                PhaseLog(
                    self.stage,
                    name,
                    "failed",
                    elapsed(),
                    elapsed.calls,
                    [],
                    [],
                    f"{type(e).__name__}: {e}"[:500],
                )
            )
            raise
