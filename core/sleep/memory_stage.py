"""The ``memory`` stage of sleep (SPEC §7): five phases over the whole corpus.

1. **hygiene** (no model) — embed records whose vector is missing or from another model;
   purge archive entries older than ``archive_ttl``.
2. **clustering** (no model) — :mod:`core.sleep.clustering`; a cluster is *settled* when every
   member's ``consolidated_at`` is at or after its ``updated_at``; settled clusters are never
   sent to the model (a second night on an unchanged corpus costs zero calls).
3. **review** — with ``review = "decide"`` (the default, issue 17): the clusters, joined by
   loose links searched from the records changed since the last night
   (:func:`core.sleep.candidates.probe_links`), raise *candidates* by arithmetic — duplicates,
   a newer record that changes an older one, runs of events — and the model answers one small
   grammar-forced question each (:mod:`core.sleep.decisions`); the answers become merge,
   resolve, dated rewrite and derive ops. With ``review = "plan"``: one open-ended planner call
   per unsettled cluster (merge, resolve, rewrite, split, derive). At most ``max_calls`` calls a
   night; the rest waits.
4. **forgetting** — outside clusters. The core computes the candidates by arithmetic (past two
   half-lives since the last access, never recalled, importance ≤ 2, not core, not pinned, not
   younger than ``keep_recent``); the model may only shorten that list (with ``"decide"`` it
   names the ones to keep). A candidate the model kept — or a record a review op of the night
   named — is not asked about again for another half-life unless it changes.
5. **calibrate** — one call over the corpus in compact form: promote to core what is used
   constantly, demote dead core, recalibrate importance that crept to 4–5, shrink a core that
   outgrew its share of the prompt budget. Skipped when nothing changed since it last ran.

The corpus is read once, when clustering starts, and kept up to date with the night's own
changes (:meth:`core.sleep.stage.StageContext.read_corpus`). Every model phase is applied in one
transaction with its journal (:mod:`core.sleep.apply` has the safeguards); a wake-up anywhere
before that transaction discards the phase.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.config import MemoryConfig
from core.embedding import primary_rows
from core.prompt_section import CORE_HEADER
from core.prompt_section import line as prompt_line
from core.recall import half_life_of
from core.records import GLOBAL_SCOPE, Kind, Record
from core.sleep import candidates, clustering, decisions, gate, journal, ops
from core.sleep.apply import (
    TRANSIENT,
    Applied,
    Proposal,
    Safeguards,
    embed_new_texts,
    is_young,
    op_ids,
)
from core.sleep.clustering import Clustering
from core.sleep.journal import OpLog, PhaseLog
from core.sleep.ops import SleepTxn
from core.sleep.plan import (
    CallResult,
    calibrate_messages,
    calibrate_tool,
    forget_messages,
    forget_tool,
    review_messages,
    review_tool,
)
from core.sleep.stage import StageContext

STAGE = "memory"
MAX_FORGET_LIST = 40  # candidates shown in one forgetting call (oldest first)
CALIBRATE_META = "sleep:calibrate:fingerprint"
MARK_FORGET = "forgetting"


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


def memory_stage(ctx: StageContext) -> str:
    mem = ctx.memory
    n = mem.count()
    if n < ctx.config.min_memories:
        ctx.journal(PhaseLog(STAGE, STAGE, "skipped", 0.0, 0, [], [],
                             f"{n} memories, fewer than min_memories "
                             f"({ctx.config.min_memories}): the memory stage is skipped"))
        return "skipped"
    hygiene(ctx)
    state = cluster_phase(ctx)
    review(ctx, state)
    forgetting(ctx, state)
    calibrate(ctx)
    return "done"


# ---------------------------------------------------------------------------- helpers


def _plan_log(res: CallResult, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(extra)
    out["seconds"] = round(res.seconds, 3)
    if res.plan is None:
        out["error"] = res.error
    else:
        out.update(reasoning=res.plan.reasoning, ops=res.plan.ops, via=res.plan.via)
    return out


def _apply(ctx: StageContext, guard: Safeguards, proposals: Sequence[Proposal], name: str,
           plans: list[dict[str, Any]], elapsed: Callable[[], float], calls: int, note: str,
           failed: bool, after: Callable[[SleepTxn, Applied], None] | None = None) -> Applied:
    """Judge and apply one phase's ops in one transaction with its journal (or, in a dry
    run, judge and journal them as planned)."""
    screened = guard.screen(proposals)
    if ctx.dry_run:
        result = guard.apply(None, screened)
        ctx.journal(PhaseLog(STAGE, name, "failed" if failed else "planned", elapsed(), calls,
                             plans, result.ops, note))
        return result
    vectors = embed_new_texts(ctx.memory, screened)
    ctx.check()  # the last point where a wake-up discards this phase
    with ctx.transaction() as tx:
        result = guard.apply(tx, screened, vectors)
        if after is not None and not failed:
            after(tx, result)
        ctx.journal(PhaseLog(STAGE, name, "failed" if failed else "applied", elapsed(), calls,
                             plans, result.ops, note), tx.conn)
    return result


def _transient_ids(result: Applied) -> set[int]:
    return {i for o in result.ops
            if o.refused_reason and any(t in o.refused_reason for t in TRANSIENT) for i in o.ids}


# ---------------------------------------------------------------------------- 1. hygiene


def hygiene(ctx: StageContext) -> None:
    mem = ctx.memory
    with ctx.phase("hygiene") as elapsed:
        def prog(done: int, total: int) -> None:
            ctx.progress("hygiene", done, total, "embedding records without a vector")
            ctx.check()

        ctx.check()
        embedded = mem.backfill_vectors(progress=prog)
        ctx.check()
        ttl = mem.config.archive_ttl_days
        purged = mem.purge_archive(dry_run=ctx.dry_run)
        ops = []
        if embedded:
            ops.append(OpLog("embed", [], True, "no vector of the active model", None,
                             {"count": embedded}))
        if purged:
            ops.append(OpLog("purge_archive", [], not ctx.dry_run,
                             f"in the archive longer than {ttl:g} days", None, {"count": purged}))
        verb = "would purge" if ctx.dry_run else "purged"
        note = f"embedded {embedded} record(s); {verb} {purged} archive entr" + (
            "y" if purged == 1 else "ies")
        error = mem.status().error
        if error:
            note += f"; embedding failed ({error}): those records wait for the next night"
        status = "skipped" if not ops else ("planned" if ctx.dry_run and purged else "applied")
        ctx.journal(PhaseLog(STAGE, "hygiene", status, elapsed(), 0, [], ops, note))


# ---------------------------------------------------------------------------- 2. clustering


def cluster_phase(ctx: StageContext) -> ClusterState:
    mem, cfg = ctx.memory, ctx.config
    with ctx.phase("clustering") as elapsed:
        ctx.progress("clustering", 0, 1, "building the similarity graph")
        corpus = ctx.read_corpus().records
        stems = {i: s for i, s in mem.stem_sets().items() if i in corpus}
        vectors = mem.vector_rows()
        result = clustering.cluster(
            stems, jaccard=cfg.cluster_jaccard, cosine=cfg.cluster_cosine,
            max_cluster=cfg.max_cluster, vectors=vectors,
            groups={i: r.scope for i, r in corpus.items()}, max_neighbours=cfg.max_neighbours,
            check=ctx.check)
        unsettled = [c for c in result.clusters if not all(settled(corpus[i]) for i in c)]
        hist = result.histogram()
        note = (f"{len(result.clusters)} cluster(s) {hist or ''}, {len(unsettled)} unsettled; "
                f"{result.lexical_edges} lexical and {result.semantic_edges} semantic edges, "
                f"{result.cut_edges} cut; {result.seconds:.2f} s").replace("  ", " ")
        ctx.progress("clustering", 1, 1, note)
        plans = [{"histogram": {str(k): v for k, v in hist.items()},
                  "unsettled": [list(c) for c in unsettled[:200]]}]
        ctx.journal(PhaseLog(STAGE, "clustering", "planned" if ctx.dry_run else "applied",
                             elapsed(), 0, plans, [], note))
        return ClusterState(corpus, result, unsettled, vectors, stems)


# ---------------------------------------------------------------------------- 3. review


def _priority(c: tuple[int, ...], corpus: dict[int, Record]) -> tuple:
    fresh = sum(not settled(corpus[i]) for i in c)
    return (-fresh, -max(corpus[i].updated_at for i in c), c)


def review(ctx: StageContext, state: ClusterState) -> None:
    if ctx.config.review == "decide":
        review_decide(ctx, state)
        return
    mem = ctx.memory
    with ctx.phase("review") as elapsed:
        if not state.unsettled:
            ctx.journal(PhaseLog(STAGE, "review", "skipped", elapsed(), 0, [], [],
                                 "every cluster is settled: no model call"))
            return
        if ctx.planner is None:
            ctx.journal(PhaseLog(STAGE, "review", "skipped", elapsed(), 0, [], [],
                                 "no planner model is available"))
            return
        order = sorted(state.unsettled, key=lambda c: _priority(c, state.corpus))
        todo = order[: ctx.calls_left]
        waiting = len(order) - len(todo)
        now = mem.clock.now()
        c0 = ctx.calls
        proposals: list[Proposal] = []
        plans: list[dict[str, Any]] = []
        versions: dict[int, tuple] = {}
        answered: dict[int, tuple[int, ...]] = {}
        for unit, ids in enumerate(todo):
            ctx.progress("review", unit, len(todo), f"reviewing a cluster of {len(ids)}")
            recs = [state.corpus[i] for i in ids]
            vers = {r.id: ops.version_of(r) for r in recs}
            versions.update(vers)
            res = ctx.call(review_messages(ctx.persona, recs, now),
                           review_tool(ids, mem.config.max_chars))
            plans.append(_plan_log(res, cluster=list(ids)))
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
            ids = [i for unit, c in answered.items() if unit not in result.blocked_units
                   for i in c]
            ops.mark_consolidated(tx, ids, versions)

        guard = Safeguards(mem, ctx.config, ctx.budget, "review", state.corpus, now)
        _apply(ctx, guard, proposals, "review", plans, elapsed, ctx.calls - c0, note,
               failed=not answered, after=mark)


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
        cos = float(mat[k] @ v)
        return (cos - background) / (1.0 - background) >= limit

    return similar


def _refused_young(c: candidates.Candidate, corpus: dict[int, Record], now: float,
                   keep_recent: float) -> bool:
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
            ctx.journal(PhaseLog(STAGE, "review", "skipped", elapsed(), 0, [], [],
                                 "no planner model is available"))
            return
        now = mem.clock.now()
        corpus = state.corpus
        # the strict clusters' edges, and the loose links searched from the changed records
        links = candidates.probe_links([i for i, r in corpus.items() if not settled(r)], corpus,
                                       state.stems, state.vectors, check=ctx.check)
        weights = dict(links.weights)
        weights.update(state.result.weights)
        change_only = links.change_only - set(state.result.weights)
        units, _ = clustering.components([(a, b, w) for (a, b), w in weights.items()],
                                         ctx.config.max_cluster)
        units = [u for u in units if not all(settled(corpus[i]) for i in u)]
        order = sorted(units, key=lambda c: _priority(c, corpus))
        if not order:
            ctx.journal(PhaseLog(STAGE, "review", "skipped", elapsed(), 0, [], [],
                                 "every cluster is settled: no model call"))
            return
        similar = similar_fn(ctx, state)
        tally = decisions.Tally()
        c0 = ctx.calls
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
            cands = [c for c in candidates.propose(ids, corpus, weights, change_only)
                     if not all(settled(corpus[i]) for i in c.ids)]
            if screen is not None:
                cands, gated[unit] = screen.screen(cands, ids, corpus)
            if any(_refused_young(c, corpus, now, ctx.config.keep_recent_seconds)
                   for c in cands):
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

        results = decisions.decide_units([c for _, _, c in chosen], corpus, now, ctx.decide,
                                         tally, mem.config.max_chars, similar, prog)
        for (unit, ids, cands), got in zip(chosen, results, strict=True):
            plans.append({"cluster": list(ids),
                          "candidates": [{"kind": c.kind, "ids": list(c.ids), "why": c.why,
                                          **({} if c.p is None else {"p": c.p}),
                                          **({"same_first": True} if c.same_first else {})}
                                         for c in cands],
                          **({"not_asked": gated[unit]} if gated.get(unit) else {}),
                          "decisions": got.log, "ops": got.ops})
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
        note = (f"{len(chosen)} cluster(s) reviewed with {asked} decision(s): "
                + ", ".join(f"{k} {v['asked']} {v['answers']}"
                            for k, v in tally.as_dict().items()))
        unanswered = len(chosen) - len(answered)
        if unanswered:
            note += f"; {unanswered} cluster(s) with a failed question (nothing applied for them)"
        if waiting:
            note += f"; {waiting} cluster(s) wait for the next night (max_calls)"
        if young:
            note += (f"; {young} cluster(s) wait until their newest record is "
                     f"{ctx.config.keep_recent:g} d old")
        note += f"; candidates found in {found_in:.2f} s"

        def mark(tx: SleepTxn, result: Applied) -> None:
            done = [i for unit, c in answered.items() if unit not in result.blocked_units
                    for i in c]
            ops.mark_consolidated(tx, done, versions)
            # records an op of this night named (e.g. the events a fact was derived from) are
            # not forgetting candidates until a half-life has passed, like a kept candidate
            named = {i for o in result.ops if o.applied for i in o.ids}
            named |= {i for unit, _ids, cands in chosen if unit in answered
                      and unit not in result.blocked_units
                      for c in cands if c.kind == candidates.EVENTS for i in c.ids}
            journal.set_marks(tx.conn, MARK_FORGET, sorted(named & set(corpus)), tx.now)

        guard = Safeguards(mem, ctx.config, ctx.budget, "review", state.corpus, now,
                           similar=similar)
        _apply(ctx, guard, proposals, "review", plans, elapsed, ctx.calls - c0, note,
               failed=not answered and unanswered > 0, after=mark)


# ---------------------------------------------------------------------------- 4. forgetting


def forgetting_candidates(config: MemoryConfig, corpus: dict[int, Record], clustered: set[int],
                          keep_recent: float, reviewed: dict[int, float], now: float
                          ) -> list[Record]:
    """The arithmetic of §7.4: faded past two half-lives, never recalled, importance ≤ 2,
    not core, not pinned, not in a cluster, not younger than keep_recent — and not kept by
    an earlier night within the last half-life (unless it changed since)."""
    out = []
    for r in corpus.values():
        hl = half_life_of(r.kind, config)
        if (r.id in clustered or r.kind is Kind.CORE or r.pinned or r.importance > 2
                or r.access_count > 0 or now - r.recalled_at <= 2 * hl
                or now - r.created_at < keep_recent):
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
        cands = forgetting_candidates(mem.config, corpus, clustered,
                                      ctx.config.keep_recent_seconds,
                                      ctx.store.marks(MARK_FORGET), now)
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
            ctx.journal(PhaseLog(STAGE, "forgetting", "skipped", elapsed(), 0,
                                 [{"held": held}] if held else [], [], note))
            return
        if ctx.planner is None or ctx.calls_left == 0:
            why = "no planner model is available" if ctx.planner is None else "max_calls reached"
            ctx.journal(PhaseLog(STAGE, "forgetting", "skipped", elapsed(), 0, [], [],
                                 f"{len(cands)} candidate(s); {why}"))
            return
        room = ctx.budget.max_forget - ctx.budget.forgotten  # resolved contradictions count
        if decide and room <= 0:  # nothing more may be forgotten tonight: ask nothing (measured
            # on the 130-memory corpus: 12 questions asked whose answers the cap then refused)
            ctx.journal(PhaseLog(STAGE, "forgetting", "skipped", elapsed(), 0, [], [],
                                 f"{len(cands)} candidate(s) wait for the next night "
                                 f"(max_forget {ctx.budget.max_forget} reached)"))
            return
        batches = [cands[i: i + MAX_FORGET_LIST] for i in range(0, len(cands), MAX_FORGET_LIST)]
        batches = batches[: ctx.calls_left]
        c0 = ctx.calls
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
                    shown, now, ctx.decide, tally, limit=room - len(proposals))
                plans.append({"candidates": ids, "decisions": entries})
                if not got:
                    continue
                answered.extend(got)
                proposals.extend(Proposal({"op": "forget", "id": i, "why": "faded trivia: "
                                           "old, never recalled, unimportant"},
                                          frozenset(ids), versions, unit) for i in forget_ids)
                continue
            res = ctx.call(forget_messages(ctx.persona, shown, now), forget_tool(ids))
            plans.append(_plan_log(res, candidates=ids))
            if res.plan is None:
                continue
            answered.extend(ids)
            proposals.extend(Proposal(raw, frozenset(ids), versions, unit)
                             for raw in res.plan.ops)
        ctx.progress("forgetting", len(batches), len(batches), "applying")
        shown_n = sum(len(b) for b in batches)
        note = f"{len(cands)} candidate(s), {shown_n} shown in {len(batches)} call(s)"
        failed_calls = len(batches) - len(plans) + sum("error" in p for p in plans)
        if failed_calls:
            note += f"; {failed_calls} call(s) failed (nothing forgotten from them)"
        if held:
            note += (f"; {len(held)} faded record(s) held back (money, a promise, a date or a "
                     f"person)")
            plans.append({"held": held})
        if shown_n < len(cands):
            note += f"; {len(cands) - shown_n} wait for the next night (max_calls)"

        def mark(tx: SleepTxn, result: Applied) -> None:
            keep = set(answered) - result.forgotten - _transient_ids(result)
            journal.set_marks(tx.conn, MARK_FORGET, sorted(keep), tx.now)

        guard = Safeguards(mem, ctx.config, ctx.budget, "forgetting", corpus, now)
        _apply(ctx, guard, proposals, "forgetting", plans, elapsed, ctx.calls - c0, note,
               failed=not answered, after=mark)


# ---------------------------------------------------------------------------- 5. calibrate


def fingerprint(corpus: dict[int, Record]) -> str:
    h = hashlib.sha256()
    for rid in sorted(corpus):
        r = corpus[rid]
        h.update(repr((rid, r.kind.value, r.importance, r.private, r.pinned, r.scope,
                       r.updated_at, r.access_count, r.content)).encode())
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
    pool.sort(key=lambda r: (r.kind is not Kind.CORE, r.importance < 4, -r.access_count,
                             -r.updated_at, r.id))
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


def calibrate_proposals(corpus: dict[int, Record], config: MemoryConfig, now: float,
                        core_chars: int, core_budget: int) -> list[tuple[Record, str]]:
    """What phase 5 could change, by arithmetic (``review = "decide"``: the call shows only
    these, and is not made when there are none): a non-core record recalled at least
    ``PROMOTE_RECALLS`` times and within its half-life (promote?); every core record when core
    outgrew its budget (demote or shrink?); when importance 4–5 is more than ``CREPT_SHARE`` of
    the corpus, the important records never recalled for two half-lives (lower?). Pinned
    records are the owner's: never shown."""
    pool = [r for r in corpus.values() if not r.pinned]
    out = {r.id: (r, decisions.PROMOTE) for r in pool if r.kind is not Kind.CORE
           and r.access_count >= PROMOTE_RECALLS
           and now - r.recalled_at <= half_life_of(r.kind, config)}
    if core_chars > core_budget:
        out.update((r.id, (r, decisions.DEMOTE)) for r in pool if r.kind is Kind.CORE)
    high = [r for r in pool if r.importance >= 4 and r.kind is not Kind.CORE]
    if corpus and len(high) > CREPT_SHARE * len(corpus):
        out.update((r.id, (r, decisions.LOWER)) for r in high if r.access_count == 0
                   and now - r.recalled_at > 2 * half_life_of(r.kind, config)
                   and r.id not in out)
    return [out[i] for i in sorted(out)]


def calibrate(ctx: StageContext) -> None:
    mem = ctx.memory
    with ctx.phase("calibrate") as elapsed:
        now = mem.clock.now()
        corpus = ctx.read_corpus().records
        fp = fingerprint(corpus)
        if ctx.store.meta_get(CALIBRATE_META) == fp:
            ctx.journal(PhaseLog(STAGE, "calibrate", "skipped", elapsed(), 0, [], [],
                                 "nothing changed since the last review: no model call"))
            return
        if ctx.planner is None or ctx.calls_left == 0:
            why = "no planner model is available" if ctx.planner is None else "max_calls reached"
            ctx.journal(PhaseLog(STAGE, "calibrate", "skipped", elapsed(), 0, [], [], why))
            return
        core_chars = core_usage(corpus, now)
        core_budget = int(mem.config.prompt_budget * mem.config.core_share)
        if ctx.config.review == "decide":
            # arithmetic proposes (issue 17): the call sees only what it could change — the
            # open-ended call over 12 000 characters took 536 s of a 30-minute first night
            # (1.5B, load ~9) and changed nothing
            proposed = calibrate_proposals(corpus, mem.config, now, core_chars, core_budget)
            if not proposed:
                ctx.journal(PhaseLog(STAGE, "calibrate", "skipped", elapsed(), 0, [], [],
                                     "no record to promote, demote or recalibrate by "
                                     "arithmetic: no model call"))
                if not ctx.dry_run:
                    ctx.store.meta_set(CALIBRATE_META, fp)
                return
            calibrate_decide(ctx, corpus, proposed[: ctx.calls_left], elapsed, core_chars,
                             core_budget)
            return
        shown = compact_selection(corpus, ctx.config.calibrate_chars)
        if not shown:
            ctx.journal(PhaseLog(STAGE, "calibrate", "skipped", elapsed(), 0, [], [],
                                 "nothing to review (every record is pinned)"))
            return
        ids = [r.id for r in shown]
        versions = {r.id: ops.version_of(r) for r in shown}
        hist = Counter(r.importance for r in corpus.values())
        ctx.progress("calibrate", 0, 1, f"{len(shown)} of {len(corpus)} record(s)")
        c0 = ctx.calls
        res = ctx.call(
            calibrate_messages(ctx.persona, shown, now, total=len(corpus),
                               omitted=len(corpus) - len(shown), core_chars=core_chars,
                               core_budget=core_budget, importance_hist=hist),
            calibrate_tool(ids))
        ctx.progress("calibrate", 1, 1, "applying")
        plans = [_plan_log(res, shown=len(shown), core_chars=core_chars,
                           core_budget=core_budget)]
        proposals = ([Proposal(raw, frozenset(ids), versions) for raw in res.plan.ops]
                     if res.plan is not None else [])
        note = (f"{len(shown)} of {len(corpus)} record(s) shown; core uses {core_chars} of "
                f"{core_budget} characters")
        if res.plan is None:
            note += f"; the call failed ({res.error}): nothing changed"
        guard = Safeguards(mem, ctx.config, ctx.budget, "calibrate", corpus, now,
                           core_chars=core_chars, core_budget=core_budget)
        result = _apply(ctx, guard, proposals, "calibrate", plans, elapsed, ctx.calls - c0, note,
                        failed=res.plan is None)
        if res.plan is not None and not ctx.dry_run and not _transient_ids(result):
            ctx.store.meta_set(CALIBRATE_META, fingerprint(ctx.read_corpus().records))


def calibrate_decide(ctx: StageContext, corpus: dict[int, Record],
                     proposed: list[tuple[Record, str]], elapsed: Callable[[], float],
                     core_chars: int, core_budget: int) -> None:
    """Phase 5 with ``review = "decide"``: one small question per record the arithmetic
    proposed (:func:`calibrate_proposals`), applied through the same safeguards. Measured on
    dev (1.5B, load ~5): the open-ended call took over 3 minutes for 2 records."""
    mem = ctx.memory
    now = mem.clock.now()
    ids = [r.id for r, _ in proposed]
    versions = {r.id: ops.version_of(r) for r, _ in proposed}
    ctx.progress("calibrate", 0, len(proposed), f"{len(proposed)} of {len(corpus)} record(s)")
    c0 = ctx.calls
    tally = decisions.Tally()
    raw, log, failed = decisions.decide_calibration(proposed, now, ctx.decide, tally)
    ctx.progress("calibrate", len(proposed), len(proposed), "applying")
    note = (f"{len(proposed)} record(s) proposed by arithmetic; core uses {core_chars} of "
            f"{core_budget} characters")
    if failed:
        note += f"; {failed} question(s) failed (nothing changed for them)"
    plans = [{"decisions": log, "core_chars": core_chars, "core_budget": core_budget}]
    proposals = [Proposal(op, frozenset(ids), versions) for op in raw]
    guard = Safeguards(mem, ctx.config, ctx.budget, "calibrate", corpus, now,
                       core_chars=core_chars, core_budget=core_budget)
    result = _apply(ctx, guard, proposals, "calibrate", plans, elapsed, ctx.calls - c0, note,
                    failed=failed == len(proposed))
    if not failed and not ctx.dry_run and not _transient_ids(result):
        ctx.store.meta_set(CALIBRATE_META, fingerprint(ctx.read_corpus().records))

