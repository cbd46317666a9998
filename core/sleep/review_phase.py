"""Phase 3 of the ``memory`` stage, the review (SPEC §7): what the unsettled clusters say
twice, or say no longer.

With ``review = "decide"`` (the default, issue 17): the clusters, joined by loose links searched
from the records changed since the last night (:func:`core.sleep.candidates.probe_links`),
raise *candidates* by arithmetic — duplicates, a newer record that changes an older one, runs
of events — and the model answers one small grammar-forced question each
(:mod:`core.sleep.decisions`); the answers become merge, resolve, dated rewrite and derive ops.
With ``review = "plan"``: one open-ended planner call per unsettled cluster (merge, resolve,
rewrite, split, derive). At most ``max_calls`` calls a night; the rest waits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.embedding import calibrated, primary_rows
from core.sleep import candidates, clustering, decisions, gate, journal, ops
from core.sleep.apply import Applied, Proposal, Safeguards, is_young, op_ids
from core.sleep.ops import SleepTxn
from core.sleep.phase import (
    MARK_FORGET,
    NO_PLANNER,
    ClusterState,
    apply_phase,
    plan_log,
    settled,
    skip_phase,
)
from core.sleep.plan import review_messages, review_tool
from core.sleep.stage import StageContext
from core.store.records import Record


def _priority(c: tuple[int, ...], corpus: dict[int, Record]) -> tuple:
    fresh = sum(not settled(corpus[i]) for i in c)
    return (-fresh, -max(corpus[i].updated_at for i in c), c)


ALL_SETTLED = "every cluster is settled: no model call"  # the journal's note, either way


def _mark_reviewed(
    tx: SleepTxn,
    result: Applied,
    answered: dict[int, tuple[int, ...]],
    versions: dict[int, tuple],
) -> None:
    """Mark settled, as of the versions shown, the records of every answered cluster but those
    where an op was refused for a passing reason (that cluster is reviewed again)."""
    done = [i for unit, c in answered.items() if unit not in result.blocked_units for i in c]
    ops.mark_consolidated(tx, done, versions)


def review(ctx: StageContext, state: ClusterState) -> None:
    if ctx.config.review == "decide":
        review_decide(ctx, state)
        return
    mem = ctx.memory
    with ctx.phase("review") as elapsed:
        if not state.unsettled:
            skip_phase(ctx, "review", elapsed, ALL_SETTLED)
            return
        if ctx.planner is None:
            skip_phase(ctx, "review", elapsed, NO_PLANNER)
            return
        order = sorted(state.unsettled, key=lambda c: _priority(c, state.corpus))
        todo = order[: ctx.calls_left]
        waiting = len(order) - len(todo)
        now = mem.clock.now()
        proposals: list[Proposal] = []
        plans: list[dict[str, Any]] = []
        versions: dict[int, tuple] = {}
        answered: dict[int, tuple[int, ...]] = {}
        for unit, ids in enumerate(todo):
            ctx.progress("review", unit, len(todo), f"reviewing a cluster of {len(ids)}")
            recs = [state.corpus[i] for i in ids]
            vers = {r.id: ops.version_of(r) for r in recs}
            versions.update(vers)
            res = ctx.call(
                review_messages(ctx.persona, recs, now), review_tool(ids, mem.config.max_chars)
            )
            plans.append(plan_log(res, cluster=list(ids)))
            if res.plan is None:
                continue
            answered[unit] = ids
            proposals.extend(Proposal(raw, frozenset(ids), vers, unit) for raw in res.plan.ops)
        ctx.progress("review", len(todo), len(todo), "applying")
        failed_calls = len(todo) - len(answered)
        note = f"{len(todo)} cluster(s) reviewed"
        if failed_calls:
            note += f", {failed_calls} call(s) failed (nothing applied for them)"
        if waiting:
            note += f"; {waiting} cluster(s) wait for the next night (max_calls)"

        def mark(tx: SleepTxn, result: Applied) -> None:
            _mark_reviewed(tx, result, answered, versions)

        guard = Safeguards(mem, ctx.config, ctx.budget, "review", state.corpus, now)
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


def similar_fn(ctx: StageContext, state: ClusterState) -> decisions.Similar | None:
    """Whether a new text means what a record says, by their vectors (calibrated cosine at
    least 0.8 × ``cluster_cosine``): how a merged text in one language is seen to keep a member
    written in another. None without vectors (then only shared words count)."""
    if state.vectors is None:
        return None
    ids, mat, background = state.vectors
    row = {int(i): k for k, i in enumerate(ids)}
    cache: dict[str, Any] = {}
    limit = 0.8 * ctx.config.cluster_cosine

    def similar(content: str, r: Record) -> bool:
        k = row.get(r.id)
        if k is None:
            return False
        if content not in cache:
            m = ctx.memory.embed([content])
            # compared with vector_rows(): the multilingual half of a two-model embedder
            v = None if m is None else primary_rows(ctx.memory.embedder, m)[0]
            if v is not None:
                n = float(np.linalg.norm(v))
                v = v / n if n > 0 else None
            cache[content] = v
        v = cache[content]
        if v is None:
            return False
        return float(calibrated(mat[k] @ v, background)) >= limit

    return similar


def closeness_fn(state: ClusterState) -> decisions.Closeness | None:
    """How close two records' vectors are: their calibrated cosine (0 at the store's
    background, 1 the same text), clipped to [0, 1]; None without vectors or for a record
    without a row."""
    if state.vectors is None:
        return None
    ids, mat, background = state.vectors
    row = {int(i): k for k, i in enumerate(ids)}

    def closeness(a: int, b: int) -> float | None:
        ka, kb = row.get(a), row.get(b)
        if ka is None or kb is None:
            return None
        return float(calibrated(mat[ka] @ mat[kb], background))

    return closeness


def _refused_young(
    c: candidates.Candidate, corpus: dict[int, Record], now: float, keep_recent: float
) -> bool:
    """The candidate's change could not be applied tonight (the safeguards keep a record
    younger than ``keep_recent`` seconds from a merge, and an older record from being replaced
    while it is that young): a duplicate with a young member, a supersession of a young
    record. A run of events can be asked (a derived fact adds a record)."""

    def young(i: int) -> bool:
        return is_young(corpus[i], now, keep_recent)

    if c.kind == candidates.DUPLICATE:
        return any(young(i) for i in c.ids)
    if c.kind == candidates.SUPERSEDE:
        return young(c.ids[0])
    return False


def review_decide(ctx: StageContext, state: ClusterState) -> None:
    """Phase 3 as small decisions (issue 17): each unsettled cluster's candidates
    (:mod:`core.sleep.candidates`) are asked about one by one (:mod:`core.sleep.decisions`);
    the answers become ops applied through the safeguards. A cluster whose questions were all
    answered is marked settled."""
    mem = ctx.memory
    with ctx.phase("review") as elapsed:
        if ctx.planner is None:
            skip_phase(ctx, "review", elapsed, NO_PLANNER)
            return
        now = mem.clock.now()
        corpus = state.corpus
        # the strict clusters' edges, and the loose links searched from the changed records
        links = candidates.probe_links(
            [i for i, r in corpus.items() if not settled(r)],
            corpus,
            state.stems,
            state.vectors,
            check=ctx.check,
        )
        weights = dict(links.weights)
        weights.update(state.result.weights)
        change_only = links.change_only - set(state.result.weights)
        units, _ = clustering.components(
            [(a, b, w) for (a, b), w in weights.items()], ctx.config.max_cluster
        )
        units = [u for u in units if not all(settled(corpus[i]) for i in u)]
        order = sorted(units, key=lambda c: _priority(c, corpus))
        if not order:
            skip_phase(ctx, "review", elapsed, ALL_SETTLED)
            return
        similar = similar_fn(ctx, state)
        tally = decisions.Tally()
        proposals: list[Proposal] = []
        plans: list[dict[str, Any]] = []
        versions: dict[int, tuple] = {}
        answered: dict[int, tuple[int, ...]] = {}
        waiting = 0
        chosen: list[tuple[int, tuple[int, ...], list[candidates.Candidate]]] = []
        gated: dict[int, list[dict[str, Any]]] = {}
        young = 0  # clusters left for a later night: an answer could not be applied yet
        budget = ctx.calls_left
        # which supersessions can be true: the learned gate over the USE vectors (issue 27)
        screen = gate.for_vectors(mem.embedder, state.vectors)
        for unit, ids in enumerate(order):
            # a question about records that were all reviewed since they last changed was
            # asked then: a new record linked to their cluster does not ask it again (measured
            # at 10k records: a record of no cluster, linked on the second night, re-asked its
            # neighbours' duplicate pair — a call on an unchanged store)
            cands = [
                c
                for c in candidates.propose(ids, corpus, weights, change_only)
                if not all(settled(corpus[i]) for i in c.ids)
            ]
            if screen is not None:
                cands, gated[unit] = screen.screen(cands, ids, corpus)
            if any(_refused_young(c, corpus, now, ctx.config.keep_recent_seconds) for c in cands):
                # its answer could not be applied yet (a record younger than keep_recent is
                # neither merged nor replaced): asked once, when it is old enough — not asked
                # tonight and again tomorrow (measured at 10k: a new duplicate's merge was
                # decided, refused, and decided again the next night)
                young += 1
                continue
            need = len(cands) + 1  # every candidate, and a merged text
            if budget < need:
                waiting += 1
                continue
            budget -= need
            chosen.append((unit, ids, cands))
            versions.update({i: ops.version_of(corpus[i]) for i in ids})
        asked_total = sum(len(c) for _, _, c in chosen)
        found_in = elapsed()  # candidate generation: the links, the units, what to ask

        def prog(step: str, done: int, _total: int) -> None:
            ctx.progress("review", done, asked_total, f"{step}: {len(chosen)} cluster(s)")

        results = decisions.decide_units(
            [c for _, _, c in chosen],
            corpus,
            now,
            ctx.decide,
            tally,
            mem.config.max_chars,
            similar,
            prog,
            closeness_fn(state),
        )
        for (unit, ids, cands), got in zip(chosen, results, strict=True):
            plans.append(
                {
                    "cluster": list(ids),
                    "candidates": [
                        {
                            "kind": c.kind,
                            "ids": list(c.ids),
                            "why": c.why,
                            **({} if c.p is None else {"p": c.p}),
                            **({"same_first": True} if c.same_first else {}),
                        }
                        for c in cands
                    ],
                    **({"not_asked": gated[unit]} if gated.get(unit) else {}),
                    "decisions": got.log,
                    "ops": got.ops,
                }
            )
            state.linked.update(i for raw in got.ops for i in op_ids(raw))
            # a run of events whose fact was not derived is not forgetting material either
            state.linked.update(i for c in cands if c.kind == candidates.EVENTS for i in c.ids)
            if got.failed:
                continue
            answered[unit] = ids
            vers = {i: versions[i] for i in ids}
            proposals.extend(Proposal(raw, frozenset(ids), vers, unit) for raw in got.ops)
        ctx.progress("review", len(order), len(order), "applying")
        asked = sum(tally.asked.values())
        note = f"{len(chosen)} cluster(s) reviewed with {asked} decision(s): " + ", ".join(
            f"{k} {v['asked']} {v['answers']}" for k, v in tally.as_dict().items()
        )
        unanswered = len(chosen) - len(answered)
        if unanswered:
            note += f"; {unanswered} cluster(s) with a failed question (nothing applied for them)"
        if waiting:
            note += f"; {waiting} cluster(s) wait for the next night (max_calls)"
        if young:
            note += (
                f"; {young} cluster(s) wait until their newest record is "
                f"{ctx.config.keep_recent:g} d old"
            )
        note += f"; candidates found in {found_in:.2f} s"

        def mark(tx: SleepTxn, result: Applied) -> None:
            _mark_reviewed(tx, result, answered, versions)
            # records an op of this night named (e.g. the events a fact was derived from) are
            # not forgetting candidates until a half-life has passed, like a kept candidate
            named = {i for o in result.ops if o.applied for i in o.ids}
            named |= {
                i
                for unit, _ids, cands in chosen
                if unit in answered and unit not in result.blocked_units
                for c in cands
                if c.kind == candidates.EVENTS
                for i in c.ids
            }
            journal.set_marks(tx.conn, MARK_FORGET, sorted(named & set(corpus)), tx.now)

        guard = Safeguards(
            mem, ctx.config, ctx.budget, "review", state.corpus, now, similar=similar
        )
        apply_phase(
            ctx,
            guard,
            proposals,
            plans,
            elapsed,
            note,
            failed=not answered and unanswered > 0,
            after=mark,
        )
