"""Phase 5 of the ``memory`` stage, calibrate (SPEC §7): kinds, importance and the core budget
over the whole corpus — promote to core what is used constantly, demote dead core, recalibrate
importance that crept to 4–5, shrink a core that outgrew its share of the prompt budget.
Skipped when nothing changed since it last ran (a fingerprint of the corpus in the store's
meta).

With ``review = "decide"`` the arithmetic proposes (:func:`calibrate_proposals`) and the model
answers one small question per record; with ``review = "plan"`` one call sees the corpus in
compact form (:func:`compact_selection`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from core.config import MemoryConfig
from core.memory.prompt_section import CORE_HEADER
from core.memory.prompt_section import line as prompt_line
from core.recall.score import half_life_of
from core.sleep import decisions, ops, questions
from core.sleep.apply import Proposal, Safeguards
from core.sleep.phase import apply_phase, no_call_reason, plan_log, skip_phase, transient_ids
from core.sleep.plan import calibrate_messages, calibrate_tool
from core.sleep.stage import PhaseClock, StageContext
from core.store.records import GLOBAL_SCOPE, Kind, Record

CALIBRATE_META = "sleep:calibrate:fingerprint"


def fingerprint(corpus: dict[int, Record]) -> str:
    h = hashlib.sha256()
    for rid in sorted(corpus):
        r = corpus[rid]
        h.update(
            repr(
                (
                    rid,
                    r.kind.value,
                    r.importance,
                    r.private,
                    r.pinned,
                    r.scope,
                    r.updated_at,
                    r.access_count,
                    r.content,
                )
            ).encode()
        )
    return h.hexdigest()


def core_usage(corpus: dict[int, Record], now: float) -> int:
    """Characters core + pinned take in the prompt of the most loaded scope view."""
    per_scope: Counter[str] = Counter()
    for r in corpus.values():
        if r.kind is Kind.CORE or r.pinned:
            per_scope[r.scope] += len(prompt_line(r, now)) + 1
    glob = per_scope.pop(GLOBAL_SCOPE, 0)
    base = len(CORE_HEADER) + 1 if (glob or per_scope) else 0
    return base + glob + max(per_scope.values(), default=0)


def compact_selection(corpus: dict[int, Record], budget_chars: int) -> list[Record]:
    """What phase 5 shows: core first, then importance 4–5, then the most recalled, then the
    most recently changed, until ``budget_chars``. Pinned records are the owner's: not shown."""
    pool = [r for r in corpus.values() if not r.pinned]
    pool.sort(
        key=lambda r: (
            r.kind is not Kind.CORE,
            r.importance < 4,
            -r.access_count,
            -r.updated_at,
            r.id,
        )
    )
    out, used = [], 0
    for r in pool:
        size = 170 + min(len(r.content), 120)  # a JSON line of the compact form, roughly
        if used + size > budget_chars:
            break
        out.append(r)
        used += size
    return sorted(out, key=lambda r: r.id)


PROMOTE_RECALLS = 5  # a non-core record recalled this often within a half-life: promote?
CREPT_SHARE = 0.3  # importance 4–5 above this share of the corpus has crept up


def calibrate_proposals(
    corpus: dict[int, Record], config: MemoryConfig, now: float, core_chars: int, core_budget: int
) -> list[tuple[Record, str]]:
    """What phase 5 could change, by arithmetic (``review = "decide"``: the call shows only
    these, and is not made when there are none): a non-core record recalled at least
    ``PROMOTE_RECALLS`` times and within its half-life (promote?); every core record when core
    outgrew its budget (demote or shrink?); when importance 4–5 is more than ``CREPT_SHARE`` of
    the corpus, the important records never recalled for two half-lives (lower?). Pinned
    records are the owner's: never shown."""
    pool = [r for r in corpus.values() if not r.pinned]
    out = {
        r.id: (r, questions.PROMOTE)
        for r in pool
        if r.kind is not Kind.CORE
        and r.access_count >= PROMOTE_RECALLS
        and now - r.recalled_at <= half_life_of(r.kind, config)
    }
    if core_chars > core_budget:
        out.update((r.id, (r, questions.DEMOTE)) for r in pool if r.kind is Kind.CORE)
    high = [r for r in pool if r.importance >= 4 and r.kind is not Kind.CORE]
    if corpus and len(high) > CREPT_SHARE * len(corpus):
        out.update(
            (r.id, (r, questions.LOWER))
            for r in high
            if r.access_count == 0
            and now - r.recalled_at > 2 * half_life_of(r.kind, config)
            and r.id not in out
        )
    return [out[i] for i in sorted(out)]


def calibrate(ctx: StageContext) -> None:
    mem = ctx.memory
    with ctx.phase("calibrate") as elapsed:
        now = mem.clock.now()
        corpus = ctx.read_corpus().records
        fp = fingerprint(corpus)
        if ctx.store.meta_get(CALIBRATE_META) == fp:
            skip_phase(
                ctx, "calibrate", elapsed, "nothing changed since the last review: no model call"
            )
            return
        why = no_call_reason(ctx)
        if why is not None:
            skip_phase(ctx, "calibrate", elapsed, why)
            return
        core_chars = core_usage(corpus, now)
        core_budget = int(mem.config.prompt_budget * mem.config.core_share)
        if ctx.config.review == "decide":
            # arithmetic proposes (issue 17): the call sees only what it could change — the
            # open-ended call over 12 000 characters took 536 s of a 30-minute first night
            # (1.5B, load ~9) and changed nothing
            proposed = calibrate_proposals(corpus, mem.config, now, core_chars, core_budget)
            if not proposed:
                skip_phase(
                    ctx,
                    "calibrate",
                    elapsed,
                    "no record to promote, demote or recalibrate by arithmetic: no model call",
                )
                if not ctx.dry_run:
                    ctx.store.meta_set(CALIBRATE_META, fp)
                return
            calibrate_decide(
                ctx, corpus, proposed[: ctx.calls_left], elapsed, core_chars, core_budget
            )
            return
        shown = compact_selection(corpus, ctx.config.calibrate_chars)
        if not shown:
            skip_phase(ctx, "calibrate", elapsed, "nothing to review (every record is pinned)")
            return
        ids = [r.id for r in shown]
        hist = Counter(r.importance for r in corpus.values())
        ctx.progress("calibrate", 0, 1, f"{len(shown)} of {len(corpus)} record(s)")
        res = ctx.call(
            calibrate_messages(
                ctx.persona,
                shown,
                now,
                total=len(corpus),
                omitted=len(corpus) - len(shown),
                core_chars=core_chars,
                core_budget=core_budget,
                importance_hist=hist,
            ),
            calibrate_tool(ids),
        )
        ctx.progress("calibrate", 1, 1, "applying")
        plans = [plan_log(res, shown=len(shown), core_chars=core_chars, core_budget=core_budget)]
        note = (
            f"{len(shown)} of {len(corpus)} record(s) shown; core uses {core_chars} of "
            f"{core_budget} characters"
        )
        if res.plan is None:
            note += f"; the call failed ({res.error}): nothing changed"
        _apply_calibration(
            ctx,
            corpus,
            now,
            shown,
            [] if res.plan is None else res.plan.ops,
            plans,
            elapsed,
            note,
            failed=res.plan is None,
            settle=res.plan is not None,
            core_chars=core_chars,
            core_budget=core_budget,
        )


def calibrate_decide(
    ctx: StageContext,
    corpus: dict[int, Record],
    proposed: list[tuple[Record, str]],
    elapsed: PhaseClock,
    core_chars: int,
    core_budget: int,
) -> None:
    """Phase 5 with ``review = "decide"``: one small question per record the arithmetic
    proposed (:func:`calibrate_proposals`), applied through the same safeguards. Measured on
    dev (1.5B, load ~5): the open-ended call took over 3 minutes for 2 records."""
    now = ctx.memory.clock.now()
    ctx.progress("calibrate", 0, len(proposed), f"{len(proposed)} of {len(corpus)} record(s)")
    tally = decisions.Tally()
    raw, log, failed = decisions.decide_calibration(proposed, now, ctx.decide, tally)
    ctx.progress("calibrate", len(proposed), len(proposed), "applying")
    note = (
        f"{len(proposed)} record(s) proposed by arithmetic; core uses {core_chars} of "
        f"{core_budget} characters"
    )
    if failed:
        note += f"; {failed} question(s) failed (nothing changed for them)"
    plans = [{"decisions": log, "core_chars": core_chars, "core_budget": core_budget}]
    _apply_calibration(
        ctx,
        corpus,
        now,
        [r for r, _ in proposed],
        raw,
        plans,
        elapsed,
        note,
        failed=failed == len(proposed),
        settle=not failed,
        core_chars=core_chars,
        core_budget=core_budget,
    )


def _apply_calibration(
    ctx: StageContext,
    corpus: dict[int, Record],
    now: float,
    shown: list[Record],
    raw_ops: list[dict[str, Any]],
    plans: list[dict[str, Any]],
    elapsed: PhaseClock,
    note: str,
    *,
    failed: bool,
    settle: bool,
    core_chars: int,
    core_budget: int,
) -> None:
    """Phase 5's ops, however they were asked for (one planner call or one question a
    record), through the same safeguards: each op only on the records ``shown``, as they were
    when shown. When every answer came (``settle``) and nothing was refused for a passing
    reason, the corpus's fingerprint is kept: an unchanged corpus is not reviewed again."""
    ids = frozenset(r.id for r in shown)
    versions = {r.id: ops.version_of(r) for r in shown}
    guard = Safeguards(
        ctx.memory,
        ctx.config,
        ctx.budget,
        "calibrate",
        corpus,
        now,
        core_chars=core_chars,
        core_budget=core_budget,
    )
    proposals = [Proposal(op, ids, versions) for op in raw_ops]
    result = apply_phase(ctx, guard, proposals, plans, elapsed, note, failed=failed)
    if settle and not ctx.dry_run and not transient_ids(result):
        ctx.store.meta_set(CALIBRATE_META, fingerprint(ctx.read_corpus().records))
