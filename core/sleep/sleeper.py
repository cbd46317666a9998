"""Sleep (SPEC §7): once a day, when the conversation has been quiet, Eva consolidates memory.

The public API the TUI, the chat and the HTTP layer use::

    sleeper = Sleeper(memory, planner, SleepConfig(), persona=persona_text)
    Conversation(..., sleep=sleeper)              # SleepGate: is_sleeping(), wait_awake(cancel)
    sleeper.tick(idle_seconds, generating)        # the app's timer: sleeps when due and quiet
    run = sleeper.run(reason="manual", progress=cb)   # blocking: call it in a worker thread
    sleeper.wake()                                # from another thread
    sleeper.runs(), sleeper.get_run(id), sleeper.unseen_notable(), sleeper.mark_seen(id)

Sleep runs **named stages** in order (``register_stage``); the ``memory`` stage
(:mod:`core.sleep.memory_stage`) is built in. While a run is in progress Eva is asleep: turns wait
(``wait_awake``); ``wake()`` makes the running phase stop at its next check (between steps and
model calls — a call in flight is abandoned), discards that phase, keeps the phases already
applied, and leaves the next sleep due (a woken run does not count as the day's sleep).

Every run is journaled (:mod:`core.sleep.journal`); a notable night — anything applied,
planned or refused by a model phase, or a failure — is flagged for the owner until
``mark_seen``. ``memory_consolidate`` (:data:`CONSOLIDATE_TOOL`, :func:`consolidate_tool`) lets
the chat start sleep on the owner's word.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from core.clock import Clock
from core.config import SleepConfig
from core.instructions import DEFAULT_PERSONA
from core.llm import ChatModel
from core.memory.coordination import Lease, LeaseHeld, SleepLease
from core.memory.facade import Memory
from core.memory.tools import ToolResult
from core.privacy import TurnContext
from core.sleep import journal
from core.sleep.apply import NightBudget
from core.sleep.journal import Journal, PhaseLog, SleepProgress, SleepRun
from core.sleep.memory_stage import memory_stage
from core.sleep.plan import Woken
from core.sleep.stage import StageContext

# what this module defines for others; the package's API (with the journal's records, the
# stage context and the planner chain) is gathered once, in core/sleep/__init__.py
__all__ = [
    "CONSOLIDATE_TOOL",
    "STAGES",
    "AlreadySleeping",
    "Sleeper",
    "consolidate_tool",
    "register_stage",
]

log = logging.getLogger("eva.sleep")

StageFn = Callable[[StageContext], str]

# The stages every new Sleeper runs, in order. A later stage (e.g. curating other state) is
# added with register_stage(name, fn) here or on one Sleeper.
STAGES: dict[str, StageFn] = {"memory": memory_stage}

OP_VERBS = {
    "merge": "merged",
    "resolve": "resolved",
    "rewrite": "rewrote",
    "split": "split",
    "derive": "derived",
    "forget": "forgot",
    "set_kind": "re-kinded",
    "set_importance": "re-weighed",
}


def register_stage(name: str, fn: StageFn) -> None:
    """Add (or replace) a stage for every Sleeper created afterwards."""
    if not name or not isinstance(name, str):
        raise ValueError("a stage needs a name")
    STAGES[name] = fn


class AlreadySleeping(RuntimeError):
    """A run was asked for while one is in progress (here, or in another process: ``holder``
    is then that process's lease)."""

    def __init__(self, message: str, holder: Lease | None = None) -> None:
        super().__init__(message)
        self.holder = holder


def _notable(phases: list[PhaseLog], status: str) -> bool:
    if status == "failed":
        return True
    for p in phases:
        if p.status == "failed":
            return True
        if p.name != "hygiene" and p.ops:
            return True
    return False


def _summary(phases: list[PhaseLog], status: str, dry_run: bool) -> str:
    applied: Counter[str] = Counter()
    planned: Counter[str] = Counter()
    refused = 0
    for p in phases:
        if p.name == "hygiene":
            continue
        for o in p.ops:
            if o.refused_reason is not None:
                refused += 1
            elif o.applied:
                applied[o.op] += 1
            else:
                planned[o.op] += 1

    def words(c: Counter[str]) -> str:
        return ", ".join(f"{OP_VERBS.get(k, k)} {v}" for k, v in c.items())

    parts = []
    if applied:
        parts.append(words(applied))
    if planned:
        parts.append(f"planned (dry run): {words(planned)}" if dry_run else words(planned))
    if refused:
        parts.append(f"refused {refused}")
    failed = [p.name for p in phases if p.status == "failed"]
    if failed:
        parts.append(f"failed: {', '.join(failed)}")
    calls = sum(p.calls for p in phases)
    if not parts:
        parts.append("nothing to change")
    text = "; ".join(parts) + f" — {calls} model call{'' if calls == 1 else 's'}"
    if status == "woken":
        where = next((p.name for p in phases if p.status == "discarded"), None)
        text = f"woken{' during ' + where if where else ''}; " + text
    return text


class Sleeper:
    def __init__(
        self,
        memory: Memory,
        planner: ChatModel | None,
        config: SleepConfig | None = None,
        clock: Clock | None = None,
        persona: str = DEFAULT_PERSONA,
    ) -> None:
        self.memory = memory
        self.planner = planner
        self.config = config or SleepConfig()
        self.clock = clock or memory.clock
        self.persona = persona
        self._stages: dict[str, StageFn] = dict(STAGES)
        self._run_lock = threading.Lock()
        self._state = threading.Condition()
        self._sleeping = False
        self._wake = threading.Event()
        self._requested: str | None = None
        self._journal = memory.attach(Journal)
        # one sleeper at a time across processes (SPEC §10): a night another live process is
        # running is not "interrupted"; a dead holder's night is, once its lease is taken over
        self.lease = memory.attach(SleepLease)
        if self.lease.holder() is None:
            with self._journal.transaction() as conn:
                journal.fail_interrupted(conn, self.clock.now())

    # ------------------------------------------------------------------ stages
    def register_stage(self, name: str, fn: StageFn) -> None:
        """Add (or replace) a stage of this Sleeper; stages run in registration order."""
        if not name or not isinstance(name, str):
            raise ValueError("a stage needs a name")
        self._stages[name] = fn

    @property
    def stage_names(self) -> list[str]:
        return list(self._stages)

    # ------------------------------------------------------------------ SleepGate
    def is_sleeping(self) -> bool:
        """Asleep here, or in another process that holds the sleep lease."""
        with self._state:
            if self._sleeping:
                return True
        return self.sleeping_elsewhere() is not None

    def sleeping_elsewhere(self) -> Lease | None:
        """The lease of another live process that is sleeping on this store, if any."""
        try:
            return self.lease.holder()
        except Exception:  # noqa: BLE001 - a busy or closed store: not known to sleep
            return None

    def wait_awake(self, cancel: threading.Event | None) -> bool:
        """Block until Eva is awake (here and in every other process); False if ``cancel`` was
        set first."""
        while True:
            with self._state:
                while self._sleeping:
                    if cancel is not None and cancel.is_set():
                        return False
                    self._state.wait(0.1)
            if self.sleeping_elsewhere() is None:
                return True
            if cancel is not None and cancel.wait(0.5):
                return False
            if cancel is None:
                threading.Event().wait(0.5)

    # ------------------------------------------------------------------ schedule
    def next_due_at(self) -> float | None:
        """When the next night is due; None when Eva has never slept (due now). A woken run
        does not count; a failed one is retried after ``retry_after``. A dry run the owner asked
        for does not count either, unless Eva runs in dry-run mode (``sleep.dry_run``): then
        dry runs are her nights (issue 16)."""
        row = self._journal.last_night(dry_runs=self.config.dry_run)
        if row is None:
            return None
        if row["status"] == "failed":
            return (row["finished_at"] or row["started_at"]) + min(
                self.config.retry_after, self.config.every
            )
        return row["started_at"] + self.config.every

    def due(self) -> bool:
        if self._requested is not None:
            return True
        at = self.next_due_at()
        return at is None or self.clock.now() >= at

    def request(self, reason: str = "requested") -> None:
        """Ask for a sleep as soon as nothing is generating (``tick`` starts it, without
        waiting for ``idle_for``)."""
        self._requested = reason

    @property
    def requested(self) -> bool:
        return self._requested is not None

    def tick(self, idle_seconds: float, generating: bool) -> bool:
        """The scheduler: runs a night (in the calling thread) when one is due and the
        conversation has been quiet for ``idle_for`` with no generation running — or at once
        when one was requested and nothing generates. Returns whether it ran."""
        if generating or self.is_sleeping():
            return False
        reason = self._requested
        if reason is None:
            if idle_seconds < self.config.idle_for or not self.due():
                return False
            reason = "schedule"
        try:
            self.run(reason=reason)
        except AlreadySleeping:
            return False
        return True

    # ------------------------------------------------------------------ runs
    def run(
        self,
        *,
        dry_run: bool | None = None,
        reason: str = "manual",
        progress: Callable[[SleepProgress], None] | None = None,
    ) -> SleepRun:
        """One night, blocking (the app calls it in a worker thread). Raises
        :class:`AlreadySleeping` if a run is in progress."""
        if not self._run_lock.acquire(blocking=False):
            raise AlreadySleeping("Eva is already asleep")
        try:
            taken = self.lease.acquire()
        except LeaseHeld as e:
            self._run_lock.release()
            raise AlreadySleeping(str(e), e.lease) from None
        except BaseException:
            self._run_lock.release()
            raise
        self.lease.start_beating(on_wake=self.wake)
        try:
            if taken is not None:  # a dead process's lease: its night was interrupted
                log.warning("took over the sleep lease of %s", taken.describe(taken.heartbeat))
                with self._journal.transaction() as conn:
                    journal.fail_interrupted(conn, self.clock.now())
            self._wake.clear()
            with self._state:
                self._sleeping = True
            self._requested = None
            return self._run(
                self.config.dry_run if dry_run is None else bool(dry_run), reason, progress
            )
        finally:
            with self._state:
                self._sleeping = False
                self._state.notify_all()
            self._wake.clear()
            try:
                self.lease.release()
            except Exception as e:  # noqa: BLE001 - a store gone bad: the lease goes stale
                log.warning("sleep lease not released: %s", e)
            finally:
                self._run_lock.release()

    def _run(
        self, dry_run: bool, reason: str, progress: Callable[[SleepProgress], None] | None
    ) -> SleepRun:
        model = getattr(self.planner, "name", None) if self.planner is not None else None
        with self._journal.transaction() as conn:
            run_id = journal.start_run(conn, self.clock.now(), dry_run, reason, model)
        budget = NightBudget(self.config.max_ops, self.config.max_forget)
        seq, calls = [0], 0
        phases: list[PhaseLog] = []
        stages: dict[str, str] = {}
        woken = False
        for name, fn in list(self._stages.items()):
            ctx = StageContext(
                self.memory,
                self.planner,
                self.config,
                self.persona,
                dry_run,
                run_id,
                name,
                budget,
                self._wake,
                self._journal,
                progress,
                calls=calls,
                seq=seq,
            )
            try:
                ctx.check()
                result = fn(ctx)
                stages[name] = result if result in ("done", "skipped") else "done"
            except Woken:
                stages[name] = "woken"
                woken = True
            except Exception:  # a bug or a broken store: journaled, the night goes on
                log.exception("sleep stage %r failed", name)
                stages[name] = "failed"
            finally:
                phases.extend(ctx.phases)
                calls = ctx.calls
            if woken:
                break
        if woken:
            status = "woken"
        elif "failed" in stages.values():
            status = "failed"
        elif stages and all(s == "skipped" for s in stages.values()):
            status = "skipped"
        else:
            status = "done"
        with self._journal.transaction() as conn:
            journal.finish_run(
                conn,
                run_id,
                self.clock.now(),
                status,
                stages,
                _notable(phases, status),
                _summary(phases, status, dry_run),
                model,
            )
        return self.get_run(run_id)

    def start(
        self,
        *,
        dry_run: bool | None = None,
        reason: str = "manual",
        progress: Callable[[SleepProgress], None] | None = None,
        on_done: Callable[[SleepRun | BaseException], None] | None = None,
    ) -> threading.Thread:
        """``run`` in a daemon thread (sleep on demand from a surface without workers)."""

        def work() -> None:
            try:
                out: SleepRun | BaseException = self.run(
                    dry_run=dry_run, reason=reason, progress=progress
                )
            except BaseException as e:  # noqa: BLE001 — handed to on_done
                out = e
                if on_done is None:
                    log.warning("background sleep did not run: %s", e)
            if on_done is not None:
                on_done(out)

        t = threading.Thread(target=work, name="eva-sleep", daemon=True)
        t.start()
        return t

    def wake(self) -> None:
        """Wake Eva (from any thread): the running phase stops at its next check and is
        discarded; applied phases stay; the next sleep stays due. When another process is
        the one sleeping, it is asked to wake (at its next heartbeat)."""
        with self._state:
            here = self._sleeping
        if here:
            self._wake.set()
        else:
            self.lease.request_wake()

    # ------------------------------------------------------------------ journal
    def runs(self, limit: int = 30) -> list[SleepRun]:
        """Nights, newest first, with their phases and ops."""
        return self._journal.runs(max(1, int(limit)))

    def get_run(self, run_id: int) -> SleepRun:
        found = self._journal.runs(1, run_id=int(run_id))
        if not found:
            raise KeyError(f"there is no sleep run #{run_id}")
        return found[0]

    def unseen_notable(self) -> list[SleepRun]:
        """Notable nights the owner has not been shown yet (newest first)."""
        return self._journal.runs(100, notable_unseen=True)

    def mark_seen(self, run_id: int) -> None:
        with self._journal.transaction() as conn:
            if not journal.mark_seen(conn, int(run_id)):
                raise KeyError(f"there is no sleep run #{run_id}")


# ---------------------------------------------------------------------------- the chat's tool

CONSOLIDATE_TOOL: dict[str, Any] = {
    "name": "memory_consolidate",
    "description": (
        "Sleep now: consolidate your memory (merge duplicates, resolve contradictions, forget "
        "faded trivia) in the background, as soon as this turn ends. Use it when the owner asks "
        "you to sleep or tidy up your memory. You cannot answer while asleep."
    ),
    "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
}


def consolidate_tool(sleeper: Sleeper, ctx: TurnContext, *, start_now: bool = False) -> ToolResult:
    """Handle ``memory_consolidate`` (owner turns only). By default the night is requested
    and ``Sleeper.tick`` starts it once the turn's generation has ended; ``start_now`` starts
    it at once in a background thread (for callers with nothing generating)."""
    name = CONSOLIDATE_TOOL["name"]
    if not ctx.can_mutate:
        return ToolResult(
            name,
            False,
            "Error: memory_consolidate is available only in the owner's turns",
            {"error": "not allowed"},
        )
    if sleeper.is_sleeping():
        return ToolResult(
            name, True, "Already asleep: consolidation is in progress.", {"status": "sleeping"}
        )
    if start_now:
        sleeper.start(reason="tool")
        return ToolResult(
            name, True, "Going to sleep now to consolidate memory.", {"status": "started"}
        )
    sleeper.request("tool")
    return ToolResult(
        name,
        True,
        "I will sleep and consolidate my memory as soon as this turn ends.",
        {"status": "requested"},
    )
