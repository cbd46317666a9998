"""Fakes of the shapes the TUI depends on: a Sleeper (core.sleep's API), a model loader, and a
chat model that waits between chunks (to act while an answer streams)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from core.llm import Done, TextDelta
from core.sleep.journal import OpLog, PhaseLog, SleepProgress, SleepRun
from tests.fake_llm import ScriptedLLM


def night(
    run_id: int,
    started_at: float,
    *,
    dry_run: bool = False,
    status: str = "done",
    reason: str = "schedule",
    notable: bool = True,
    seen: bool = False,
) -> SleepRun:
    """A journaled night with an applied merge, a refused forget and a dry-run plan."""
    phases = [
        PhaseLog("memory", "hygiene", "applied", 0.2, 0, [], [], "re-embedded 3; purged 1"),
        PhaseLog(
            "memory",
            "review",
            "planned" if dry_run else "applied",
            12.5,
            2,
            [],
            [
                OpLog("merge", [3, 7], not dry_run, "the same fact about the cat, twice"),
                OpLog(
                    "forget",
                    [9],
                    False,
                    "trivia from a month ago",
                    "record #9 is pinned by the owner",
                ),
            ],
        ),
        PhaseLog("memory", "forgetting", "skipped", 0.0, 0, [], [], "no faded candidates"),
    ]
    return SleepRun(
        run_id,
        started_at,
        started_at + 40.0,
        status,
        dry_run,
        reason,
        "scripted",
        {"memory": "done"},
        phases,
        notable,
        "merged 1 · refused 1" if not dry_run else "planned 1 · refused 1",
        seen,
    )


class FakeSleeper:
    """core.sleep.Sleeper's shape. ``run`` journals a night; with ``hold`` set it reports
    progress and waits until released or woken (to see progress and test Wake)."""

    def __init__(
        self,
        clock,
        *,
        sleeping: bool = False,
        runs: list[SleepRun] | None = None,
        due_in: float | None = 3600.0,
    ) -> None:
        self.clock = clock
        self._state = threading.Condition()
        self._sleeping = sleeping
        self._runs = list(runs or [])
        self.due_in = due_in
        self.calls: list[dict] = []
        self.hold = False
        self.release = threading.Event()
        self.reached = threading.Event()  # the held run has reported progress
        self.seen: list[int] = []
        self.woken = 0
        self.planner = "scripted"

    # SleepGate
    def is_sleeping(self) -> bool:
        with self._state:
            return self._sleeping

    def wait_awake(self, cancel: threading.Event | None) -> bool:
        with self._state:
            while self._sleeping:
                if cancel is not None and cancel.is_set():
                    return False
                self._state.wait(0.02)
            return True

    def _set(self, sleeping: bool) -> None:
        with self._state:
            self._sleeping = sleeping
            self._state.notify_all()

    # schedule
    def next_due_at(self) -> float | None:
        return None if self.due_in is None else self.clock.now() + self.due_in

    def due(self) -> bool:
        return self.due_in is None

    requested = False

    def tick(self, idle_seconds: float, generating: bool) -> bool:
        return False

    # runs
    def run(
        self,
        *,
        dry_run: bool | None = None,
        reason: str = "manual",
        progress: Callable[[SleepProgress], None] | None = None,
    ) -> SleepRun:
        self.calls.append({"dry_run": dry_run, "reason": reason})
        self._set(True)
        woken = False
        try:
            if progress:
                progress(SleepProgress("memory", "review", 1, 3, "cluster 1 of 3"))
            if self.hold:
                self.reached.set()
                while not self.release.wait(0.02):
                    if not self.is_sleeping():
                        woken = True
                        break
        finally:
            self._set(False)
        run = night(
            len(self._runs) + 1,
            self.clock.now(),
            dry_run=bool(dry_run),
            reason=reason,
            status="woken" if woken else "done",
        )
        self._runs.insert(0, run)
        return run

    def wake(self) -> None:
        self.woken += 1
        self._set(False)

    def runs(self, limit: int = 30) -> list[SleepRun]:
        return self._runs[:limit]

    def get_run(self, run_id: int) -> SleepRun:
        return next(r for r in self._runs if r.id == run_id)

    def unseen_notable(self) -> list[SleepRun]:
        return [r for r in self._runs if r.notable and r.id not in self.seen and not r.seen]

    def mark_seen(self, run_id: int) -> None:
        self.seen.append(run_id)


class FakeLoader:
    """eva_runtime.loader.ModelLoader's shape: nothing is installed."""

    def __init__(
        self, problem: str = "chat model 'qwen2.5-coder-1.5b' is not installed — run `make setup`"
    ) -> None:
        self.problem = problem

    def check_chat(self, spec):
        return self.problem

    def chat_model(self, spec, **kw):
        raise AssertionError("check_chat said it is missing")

    def check_embedder(self, spec):
        return None

    def embedder(self, spec):
        raise AssertionError("no embedder in tests")

    def fallback_embedder(self, spec):
        return None

    def describe(self, spec):
        return spec


NOTHING_TO_KEEP = {"ops": []}


class PlannedLLM(ScriptedLLM):
    """The scripted model of the TUI tests. ``replies`` script the answers, ``plans`` the JSON
    answers of the structured memory step (SPEC §3.1); once the plans run out the step keeps
    nothing, so a test that is not about memory scripts only the replies.

    With ``hold_plans`` the memory step waits for ``plan_gate`` (or the cancel event) — a turn
    that is still remembering while the test acts; ``remembering`` is set when it waits."""

    def __init__(self, replies=None, plans=None, *, hold_plans: bool = False, **kw) -> None:
        super().__init__(replies, plans=list(plans or []), **kw)
        self.hold_plans = hold_plans
        self.plan_gate = threading.Event()
        self.remembering = threading.Event()

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        if self.hold_plans:
            self.remembering.set()
            while not self.plan_gate.wait(0.02):
                if cancel is not None and cancel.is_set():
                    break
        if not self.plans:
            self.plans.append(NOTHING_TO_KEEP)
        return super().generate_json(messages, schema, timeout, max_tokens, cancel)


class GatedLLM(PlannedLLM):
    """Streams the first chunk of each reply, then waits for ``gate`` (or the cancel event)
    before each further chunk — an answer that is still streaming while the test acts."""

    def __init__(self, replies=None, plans=None, **kw) -> None:
        super().__init__(replies, plans, **kw)
        self.gate = threading.Event()
        self.started = threading.Event()

    def stream_chat(self, messages, tools=None, cancel=None, max_tokens=None, temperature=0.7):
        self.calls.append({"messages": messages, "tools": tools})
        reply = self.replies.pop(0) if self.replies else ["(no more script)"]
        n = 0
        for i, item in enumerate(reply):
            if i > 0:
                while not self.gate.wait(0.02):
                    if cancel is not None and cancel.is_set():
                        yield Done(0, 0, n, stopped=True)
                        return
            n += 1
            yield TextDelta(item) if isinstance(item, str) else item
            self.started.set()
        yield Done(0, 0, n, stopped=False)
