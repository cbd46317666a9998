"""Phase 4 of the ``memory`` stage, forgetting (SPEC §7): outside clusters, what has faded.

The core computes the candidates by arithmetic (past two half-lives since the last access,
never recalled, importance ≤ 2, not core, not pinned, not younger than ``keep_recent``); the
model may only shorten that list (with ``review = "decide"`` it names the ones to keep, one
record at a time, and a faded record that names money, a promise, a date or a person is not
offered). A candidate the model kept — or a record a review op of the night named — is not
asked about again for another half-life unless it changes.
"""

from __future__ import annotations

from typing import Any

from core.config import MemoryConfig
from core.recall.score import half_life_of
from core.sleep import candidates, decisions, journal, ops
from core.sleep.apply import Applied, Proposal, Safeguards
from core.sleep.ops import SleepTxn
from core.sleep.phase import (
    MARK_FORGET,
    ClusterState,
    apply_phase,
    no_call_reason,
    plan_log,
    skip_phase,
    transient_ids,
)
from core.sleep.plan import forget_messages, forget_tool
from core.sleep.stage import StageContext
from core.store.records import Kind, Record

MAX_FORGET_LIST = 40  # candidates shown in one forgetting call (oldest first)


def forgetting_candidates(
    config: MemoryConfig,
    corpus: dict[int, Record],
    clustered: set[int],
    keep_recent: float,
    reviewed: dict[int, float],
    now: float,
) -> list[Record]:
    """The arithmetic of §7.4: faded past two half-lives, never recalled, importance ≤ 2,
    not core, not pinned, not in a cluster, not younger than keep_recent — and not kept by
    an earlier night within the last half-life (unless it changed since)."""
    out = []
    for r in corpus.values():
        hl = half_life_of(r.kind, config)
        if (
            r.id in clustered
            or r.kind is Kind.CORE
            or r.pinned
            or r.importance > 2
            or r.access_count > 0
            or now - r.recalled_at <= 2 * hl
            or now - r.created_at < keep_recent
        ):
            continue
        seen = reviewed.get(r.id)
        if seen is not None and seen >= r.updated_at and now - seen < hl:
            continue
        out.append(r)
    out.sort(key=lambda r: (r.recalled_at, r.id))
    return out


def forgetting(ctx: StageContext, state: ClusterState) -> None:
    mem = ctx.memory
    decide = ctx.config.review == "decide"
    with ctx.phase("forgetting") as elapsed:
        now = mem.clock.now()
        corpus = ctx.read_corpus().records
        clustered = {i for c in state.result.clusters for i in c} | state.linked
        cands = forgetting_candidates(
            mem.config,
            corpus,
            clustered,
            ctx.config.keep_recent_seconds,
            ctx.store.marks(MARK_FORGET),
            now,
        )
        held: dict[int, str] = {}
        if decide:
            # a faded record that names money, a promise, a date or a person is not offered
            # (issue 17: never lose a debt/promise/date/person record)
            held = {r.id: why for r in cands if (why := candidates.still_matters(r.content))}
            cands = [r for r in cands if r.id not in held]
        if not cands:
            note = "no forgetting candidates"
            if held:
                note += f"; {len(held)} faded record(s) held back (they still matter)"
            skip_phase(ctx, "forgetting", elapsed, note, [{"held": held}] if held else None)
            return
        why = no_call_reason(ctx)
        if why is not None:
            skip_phase(ctx, "forgetting", elapsed, f"{len(cands)} candidate(s); {why}")
            return
        room = ctx.budget.max_forget - ctx.budget.forgotten  # resolved contradictions count
        if decide and room <= 0:  # nothing more may be forgotten tonight: ask nothing (measured
            # on the 130-memory corpus: 12 questions asked whose answers the cap then refused)
            skip_phase(
                ctx,
                "forgetting",
                elapsed,
                f"{len(cands)} candidate(s) wait for the next night "
                f"(max_forget {ctx.budget.max_forget} reached)",
            )
            return
        batches = [cands[i : i + MAX_FORGET_LIST] for i in range(0, len(cands), MAX_FORGET_LIST)]
        batches = batches[: ctx.calls_left]
        tally = decisions.Tally()
        plans: list[dict[str, Any]] = []
        proposals: list[Proposal] = []
        answered: list[int] = []
        for unit, shown in enumerate(batches):
            ctx.progress("forgetting", unit, len(batches), f"{len(shown)} faded record(s)")
            ids = [r.id for r in shown]
            versions = {r.id: ops.version_of(r) for r in shown}
            if decide:
                forget_ids, got, entries = decisions.decide_forgetting(
                    shown, now, ctx.decide, tally, limit=room - len(proposals)
                )
                plans.append({"candidates": ids, "decisions": entries})
                if not got:
                    continue
                answered.extend(got)
                proposals.extend(
                    Proposal(
                        {
                            "op": "forget",
                            "id": i,
                            "why": "faded trivia: old, never recalled, unimportant",
                        },
                        frozenset(ids),
                        versions,
                        unit,
                    )
                    for i in forget_ids
                )
                continue
            res = ctx.call(forget_messages(ctx.persona, shown, now), forget_tool(ids))
            plans.append(plan_log(res, candidates=ids))
            if res.plan is None:
                continue
            answered.extend(ids)
            proposals.extend(Proposal(raw, frozenset(ids), versions, unit) for raw in res.plan.ops)
        ctx.progress("forgetting", len(batches), len(batches), "applying")
        shown_n = sum(len(b) for b in batches)
        note = f"{len(cands)} candidate(s), {shown_n} shown in {len(batches)} call(s)"
        failed_calls = len(batches) - len(plans) + sum("error" in p for p in plans)
        if failed_calls:
            note += f"; {failed_calls} call(s) failed (nothing forgotten from them)"
        if held:
            note += (
                f"; {len(held)} faded record(s) held back (money, a promise, a date or a person)"
            )
            plans.append({"held": held})
        if shown_n < len(cands):
            note += f"; {len(cands) - shown_n} wait for the next night (max_calls)"

        def mark(tx: SleepTxn, result: Applied) -> None:
            keep = set(answered) - result.forgotten - transient_ids(result)
            journal.set_marks(tx.conn, MARK_FORGET, sorted(keep), tx.now)

        guard = Safeguards(mem, ctx.config, ctx.budget, "forgetting", corpus, now)
        apply_phase(
            ctx,
            guard,
            proposals,
            plans,
            elapsed,
            note,
            failed=not answered,
            after=mark,
        )
