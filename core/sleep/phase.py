"""What the phases of the ``memory`` stage share (SPEC §7): the stage's name in the journal,
when a record counts as settled, the cluster state that clustering hands to the review and the
forgetting, the journal entry of one planner call or of a skipped phase, and applying a phase —
its ops judged by the safeguards (:mod:`core.sleep.apply`) and written in one transaction with
its journal entry (in a dry run, judged and journaled as planned).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.sleep.apply import TRANSIENT, Applied, Proposal, Safeguards, embed_new_texts
from core.sleep.clustering import Clustering
from core.sleep.journal import PhaseLog
from core.sleep.ops import SleepTxn
from core.sleep.plan import CallResult
from core.sleep.stage import PhaseClock, StageContext
from core.store.records import Record

STAGE = "memory"
MARK_FORGET = "forgetting"  # the marks of records not to offer for forgetting again yet
NO_PLANNER = "no planner model is available"  # why a phase was skipped, in the journal


def settled(r: Record) -> bool:
    """Reviewed by sleep since its last change."""
    return r.consolidated_at is not None and r.consolidated_at >= r.updated_at


@dataclass(frozen=True)
class ClusterState:
    corpus: dict[int, Record]
    result: Clustering
    unsettled: list[tuple[int, ...]]
    vectors: tuple[Any, Any, float] | None = None  # (ids, unit rows, background b)
    stems: dict[int, frozenset[str]] = field(default_factory=dict)
    linked: set[int] = field(default_factory=set)  # records the review asked about


def plan_log(res: CallResult, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(extra)
    out["seconds"] = round(res.seconds, 3)
    if res.plan is None:
        out["error"] = res.error
    else:
        out.update(reasoning=res.plan.reasoning, ops=res.plan.ops, via=res.plan.via)
    return out


def skip_phase(
    ctx: StageContext,
    name: str,
    elapsed: PhaseClock,
    note: str,
    plans: list[dict[str, Any]] | None = None,
) -> None:
    """Journal a phase that stops before any model call, changing nothing; ``note`` says why
    (the owner reads it in the night's journal)."""
    ctx.journal(PhaseLog(STAGE, name, "skipped", elapsed(), 0, plans or [], [], note))


def no_call_reason(ctx: StageContext) -> str | None:
    """Why a phase that needs a model call cannot make one tonight, or None when it can."""
    if ctx.planner is None:
        return NO_PLANNER
    if ctx.calls_left == 0:
        return "max_calls reached"
    return None


def apply_phase(
    ctx: StageContext,
    guard: Safeguards,
    proposals: Sequence[Proposal],
    plans: list[dict[str, Any]],
    elapsed: PhaseClock,
    note: str,
    failed: bool,
    after: Callable[[SleepTxn, Applied], None] | None = None,
) -> Applied:
    """Judge and apply one phase's ops in one transaction with its journal (or, in a dry
    run, judge and journal them as planned). The phase is the one ``guard`` judges for."""
    name = guard.phase
    screened = guard.screen(proposals)
    if ctx.dry_run:
        result = guard.apply(None, screened)
        ctx.journal(
            PhaseLog(
                STAGE,
                name,
                "failed" if failed else "planned",
                elapsed(),
                elapsed.calls,
                plans,
                result.ops,
                note,
            )
        )
        return result
    vectors = embed_new_texts(ctx.memory, screened)
    ctx.check()  # the last point where a wake-up discards this phase
    with ctx.transaction() as tx:
        result = guard.apply(tx, screened, vectors)
        if after is not None and not failed:
            after(tx, result)
        ctx.journal(
            PhaseLog(
                STAGE,
                name,
                "failed" if failed else "applied",
                elapsed(),
                elapsed.calls,
                plans,
                result.ops,
                note,
            ),
            tx.conn,
        )
    return result


def transient_ids(result: Applied) -> set[int]:
    return {
        i
        for o in result.ops
        if o.refused_reason and any(t in o.refused_reason for t in TRANSIENT)
        for i in o.ids
    }
