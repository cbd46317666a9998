"""Sleeping, waking and the schedule (SPEC §7): "Once a day (sleep.every), when the conversation
has been quiet for sleep.idle_for and no generation is running, Eva sleeps", "Sleeping Eva does
not answer: a turn is queued until she wakes", "Waking discards the unfinished phase, keeps
applied phases, and the next sleep stays due"."""

from __future__ import annotations

import threading

import pytest

from core.chat.conversation import Conversation
from core.chat.events import Sleeping
from core.privacy import OWNER_TRUSTED
from core.sleep import AlreadySleeping
from tests.fake_llm import ScriptedLLM
from tests.fakes import HashEmbedder
from tests.sleep_kit import (
    ANCIENT,
    DAY,
    PlannerLLM,
    forget,
    load,
    merge,
    open_memory,
    plan,
    set_importance,
    sleeper,
    tool_ids,
)

CORPUS = {
    "cat_a": {"content": "The owner's cat is called Murka and she likes fish"},
    "cat_b": {"content": "Owner's cat Murka likes fish a lot, she is called Murka"},
    "tea": {"content": "Likes green tea without sugar in the mornings"},
    "trivia": {"content": "Saw a heron on the river once", "importance": 1, "created_at": ANCIENT},
}


def names(run) -> list[tuple[str, str]]:
    return [(p.name, p.status) for p in run.phases]


class WakingEmbedder(HashEmbedder):
    """Wakes Eva from inside the embedding of the hygiene phase."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name)
        self.sleeper = None

    def embed(self, texts):
        if self.sleeper is not None and self.sleeper.is_sleeping():
            self.sleeper.wake()
        return super().embed(texts)


def test_wake_during_hygiene(tmp_path, clock):
    """§7: woken in the hygiene phase — it is discarded, nothing after it runs, the run is
    'woken' and the night stays due."""
    m = open_memory(tmp_path, clock, embedder=HashEmbedder(name="old"))
    load(m, CORPUS)
    m.close()
    emb = WakingEmbedder("new")
    m = open_memory(tmp_path, clock, embedder=emb)
    s = sleeper(m, PlannerLLM(), clock)
    emb.sleeper = s
    run = s.run()
    assert run.status == "woken" and run.stages == {"memory": "woken"}
    assert names(run) == [("hygiene", "discarded")]
    assert s.due() and s.next_due_at() is None and not s.is_sleeping()
    assert "woken during hygiene" in run.summary
    m.close()


def test_wake_during_clustering(mem, clock):
    """§7: woken in the clustering phase (a long computation checks between its blocks) —
    the applied hygiene stays, clustering is discarded, no model call is made."""
    load(mem, CORPUS)
    planner = PlannerLLM()
    s = sleeper(mem, planner, clock)

    def progress(p):
        if p.phase == "clustering":
            s.wake()

    run = s.run(progress=progress)
    assert names(run) == [("hygiene", "skipped"), ("clustering", "discarded")]
    assert run.status == "woken" and planner.count() == 0 and s.due()


def test_wake_during_review_discards_its_plans(mem, clock):
    """§7: woken while the model reviews a cluster — nothing of the review phase is applied,
    its clusters stay unsettled, and the next night reviews them again."""
    ids = load(mem, CORPUS)
    holder: dict = {}

    def wake_then_answer(messages, tool):
        holder["s"].wake()
        return plan(merge([ids["cat_a"], ids["cat_b"]], "Cat Murka likes fish"))

    s = sleeper(mem, PlannerLLM(review=[wake_then_answer]), clock)
    holder["s"] = s
    run = s.run()
    assert names(run)[-1] == ("review", "discarded")
    assert {ids["cat_a"], ids["cat_b"]} <= {r.id for r in mem.list(OWNER_TRUSTED)}
    assert all(mem.get(i).consolidated_at is None for i in (ids["cat_a"], ids["cat_b"]))
    assert s.due()
    planner = PlannerLLM()
    s.planner = planner
    s.run()
    assert planner.count("review") == 1


def test_wake_during_forgetting_keeps_the_applied_review(mem, clock):
    """§7: "Waking discards the unfinished phase, keeps applied phases" — the review's merge
    stays; the forgetting plan is dropped."""
    ids = load(mem, CORPUS)
    holder: dict = {}

    def wake_then_forget(messages, tool):
        holder["s"].wake()
        return plan(forget(ids["trivia"]))

    planner = PlannerLLM(
        review=[plan(merge([ids["cat_a"], ids["cat_b"]], "Cat Murka, fish"))],
        forgetting=[wake_then_forget],
    )
    s = sleeper(mem, planner, clock)
    holder["s"] = s
    run = s.run()
    assert names(run)[-2:] == [("review", "applied"), ("forgetting", "discarded")]
    live = {r.id for r in mem.list(OWNER_TRUSTED)}
    assert ids["trivia"] in live and len({ids["cat_a"], ids["cat_b"]} & live) == 1
    assert run.status == "woken" and run.notable and s.due()


def test_wake_during_calibrate(mem, clock):
    """§7: woken in the last phase — its plan is dropped, the earlier phases stay applied."""
    ids = load(mem, CORPUS)
    holder: dict = {}

    def wake_then_reweigh(messages, tool):
        holder["s"].wake()
        return plan(set_importance(ids["tea"], 5))

    planner = PlannerLLM(forgetting=[plan(forget(ids["trivia"]))], calibrate=[wake_then_reweigh])
    s = sleeper(mem, planner, clock)
    holder["s"] = s
    run = s.run()
    assert names(run)[-2:] == [("forgetting", "applied"), ("calibrate", "discarded")]
    assert mem.get(ids["tea"]).importance == 3
    assert ids["trivia"] not in {r.id for r in mem.list(OWNER_TRUSTED)}


def test_a_turn_waits_while_eva_sleeps_and_runs_after_wake(mem, clock):
    """§7: "Sleeping Eva does not answer: a turn is queued until she wakes; its stream opens
    with a sleeping event" — is_sleeping/wait_awake from other threads, wake() from another
    thread stops a model call in flight."""
    load(mem, CORPUS)
    entered, release = threading.Event(), threading.Event()

    def block(messages, tool):
        entered.set()
        release.wait(30)
        return plan()

    s = sleeper(mem, PlannerLLM(review=[block]), clock)
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("run", s.run()))
    t.start()
    try:
        assert entered.wait(30)
        assert s.is_sleeping()
        cancelled = threading.Event()
        cancelled.set()
        assert s.wait_awake(cancelled) is False
        with pytest.raises(AlreadySleeping):
            s.run()
        assert s.tick(idle_seconds=10**6, generating=False) is False
        events: list = []
        queued = threading.Event()
        conv = Conversation(mem, ScriptedLLM([["awake now"]]), sleep=s)

        def talk() -> None:
            for e in conv.turn("hi", OWNER_TRUSTED):
                events.append(e)
                if isinstance(e, Sleeping):
                    queued.set()

        turn = threading.Thread(target=talk)
        turn.start()
        assert queued.wait(30)  # the turn is queued behind sleep
        s.wake()
        turn.join(30)
        t.join(30)
    finally:
        release.set()
    assert not t.is_alive() and out["run"].status == "woken"
    assert isinstance(events[0], Sleeping)
    assert "awake now" in "".join(getattr(e, "text", "") for e in events)
    assert s.wait_awake(None) is True and not s.is_sleeping()


# ---------------------------------------------------------------------------- the schedule


def test_the_schedule_waits_for_quiet_and_for_the_day(mem, clock):
    """§7: "Once a day (sleep.every), when the conversation has been quiet for sleep.idle_for
    and no generation is running" — never slept means due now."""
    load(mem, CORPUS)
    s = sleeper(mem, PlannerLLM(), clock, every=DAY, idle_for=600)
    assert s.next_due_at() is None and s.due()
    assert s.tick(idle_seconds=599, generating=False) is False
    assert s.tick(idle_seconds=10_000, generating=True) is False
    assert s.tick(idle_seconds=600, generating=False) is True
    run = s.runs()[0]
    assert run.reason == "schedule" and run.status == "done"
    assert s.next_due_at() == run.started_at + DAY and not s.due()
    assert s.tick(idle_seconds=10**6, generating=False) is False
    clock.advance(DAY)
    assert s.due() and s.tick(idle_seconds=600, generating=False) is True


def test_a_woken_night_does_not_count(mem, clock):
    """§7: "the next sleep stays due" after a wake-up — the woken run is not the day's sleep."""
    load(mem, CORPUS)
    s = sleeper(mem, PlannerLLM(), clock)
    s.run()
    clock.advance(DAY)
    due_before = s.next_due_at()

    def wake(p):
        if p.phase == "clustering":
            s.wake()

    assert s.run(progress=wake).status == "woken"
    assert s.next_due_at() == due_before and s.due()
    assert s.tick(idle_seconds=10**6, generating=False) is True
    assert s.runs()[0].status == "done"


def test_a_manual_night_counts_and_sleep_can_run_in_the_background(mem, clock):
    """§7: sleep on demand (a TUI command) — ``start`` runs a night in a worker thread and
    hands the run back; it counts as the day's sleep."""
    load(mem, CORPUS)
    s = sleeper(mem, PlannerLLM(), clock)
    done = threading.Event()
    got: list = []
    t = s.start(reason="manual", on_done=lambda r: (got.append(r), done.set()))
    assert done.wait(30)
    t.join(30)
    assert got[0].status == "done" and got[0].reason == "manual" and not s.due()


def test_an_interrupted_night_is_failed_on_the_next_start(mem, clock):
    """§7/§11: a run left 'running' by a process that died is journaled as failed (notable)
    when sleep starts again, and is retried after retry_after."""
    load(mem, CORPUS)
    with mem._storage.transaction() as c:
        c.execute(
            "INSERT INTO sleep_runs (started_at, status, reason) VALUES (?, 'running', 'schedule')",
            (clock.now(),),
        )
    s = sleeper(mem, PlannerLLM(), clock, retry_after=900)
    run = s.runs()[0]
    assert run.status == "failed" and run.notable and "interrupted" in run.summary
    assert s.next_due_at() == run.finished_at + 900


def test_only_the_clusters_own_ids_reach_the_model(mem, clock):
    """§7.3: one model call per unsettled cluster, and the tool names only that cluster's
    records (constrained decoding cannot even produce another id)."""
    ids = load(mem, CORPUS)
    planner = PlannerLLM()
    sleeper(mem, planner, clock).run()
    review = [c for c in planner.tool_calls if c["phase"] == "review"]
    assert len(review) == 1
    assert sorted(tool_ids(review[0]["tool"])) == sorted([ids["cat_a"], ids["cat_b"]])


def test_wake_stops_a_model_call_that_can_be_cancelled(mem, clock):
    """§7: waking stops the running phase at once — a planner whose force_tool_call takes a
    ``cancel`` event is told to stop generating (the model is free for the owner's turn)."""
    load(mem, CORPUS)
    entered, finished, seen = threading.Event(), threading.Event(), {}

    class CancellablePlanner(PlannerLLM):
        def force_tool_call(self, messages, tool, timeout=None, cancel=None):
            entered.set()
            seen["stopped"] = cancel is not None and cancel.wait(30)
            finished.set()
            return plan()

    s = sleeper(mem, CancellablePlanner(), clock)
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("run", s.run()))
    t.start()
    assert entered.wait(30)
    s.wake()
    t.join(30)
    assert out["run"].status == "woken"
    assert finished.wait(30)  # the abandoned call ends on its own thread, told to stop
    assert seen["stopped"] is True


def test_a_dry_run_is_not_the_days_night_unless_eva_runs_in_dry_run_mode(mem, clock):
    """Issue 16 (sleep journal): "A dry run counts as the day's night: it moved 'sleep due' to
    'sleep in 23h'. It should not, unless the owner runs in dry-run mode." """
    load(mem, CORPUS)
    s = sleeper(mem, PlannerLLM(), clock, every=DAY, idle_for=600)
    s.run(dry_run=True, reason="manual")
    assert s.next_due_at() is None and s.due()  # still never slept for real
    real = s.run(reason="manual")
    clock.advance(3600)
    s.run(dry_run=True, reason="manual")
    assert s.next_due_at() == real.started_at + DAY and not s.due()  # the real night counts

    dry = sleeper(mem, PlannerLLM(), clock, every=DAY, idle_for=600, dry_run=True)
    clock.advance(3600)
    night = dry.run(reason="schedule")  # in dry-run mode a dry run is the day's night
    assert night.dry_run and dry.next_due_at() == night.started_at + DAY
