"""The ``memory`` stage of sleep (SPEC §7): five phases over the whole corpus.

1. **hygiene** (no model) — embed records whose vector is missing or from another model;
   purge archive entries older than ``archive_ttl``.
2. **clustering** (no model) — :mod:`core.sleep.clustering`; a cluster is *settled* when every
   member's ``consolidated_at`` is at or after its ``updated_at``; settled clusters are never
   sent to the model (a second night on an unchanged corpus costs zero calls).
3. **review** (:mod:`core.sleep.review_phase`) — with ``review = "decide"`` (the default,
   issue 17) the clusters' candidates, found by arithmetic, are asked about one small question
   at a time; with ``review = "plan"`` one open-ended planner call per unsettled cluster.
4. **forgetting** (:mod:`core.sleep.forgetting_phase`) — outside clusters: the arithmetic's
   list of faded records, which the model may only shorten.
5. **calibrate** (:mod:`core.sleep.calibrate_phase`) — promote, demote, recalibrate
   importance, shrink an outgrown core; skipped when nothing changed since it last ran.

The corpus is read once, when clustering starts, and kept up to date with the night's own
changes (:meth:`core.sleep.stage.StageContext.read_corpus`). Every model phase is applied in one
transaction with its journal (:mod:`core.sleep.apply` has the safeguards); a wake-up anywhere
before that transaction discards the phase (:func:`core.sleep.phase.apply_phase`). This module
runs the phases in order and holds the two without a model.
"""

from __future__ import annotations

from core.sleep import clustering
from core.sleep.calibrate_phase import calibrate
from core.sleep.forgetting_phase import forgetting
from core.sleep.journal import OpLog, PhaseLog
from core.sleep.phase import STAGE, ClusterState, settled
from core.sleep.review_phase import review
from core.sleep.stage import StageContext


def memory_stage(ctx: StageContext) -> str:
    mem = ctx.memory
    n = mem.count()
    if n < ctx.config.min_memories:
        ctx.journal(
            PhaseLog(
                STAGE,
                STAGE,
                "skipped",
                0.0,
                0,
                [],
                [],
                f"{n} memories, fewer than min_memories "
                f"({ctx.config.min_memories}): the memory stage is skipped",
            )
        )
        return "skipped"
    hygiene(ctx)
    state = cluster_phase(ctx)
    review(ctx, state)
    forgetting(ctx, state)
    calibrate(ctx)
    return "done"


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
            ops.append(
                OpLog("embed", [], True, "no vector of the active model", None, {"count": embedded})
            )
        if purged:
            ops.append(
                OpLog(
                    "purge_archive",
                    [],
                    not ctx.dry_run,
                    f"in the archive longer than {ttl:g} days",
                    None,
                    {"count": purged},
                )
            )
        verb = "would purge" if ctx.dry_run else "purged"
        note = f"embedded {embedded} record(s); {verb} {purged} archive entr" + (
            "y" if purged == 1 else "ies"
        )
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
            stems,
            jaccard=cfg.cluster_jaccard,
            cosine=cfg.cluster_cosine,
            max_cluster=cfg.max_cluster,
            vectors=vectors,
            groups={i: r.scope for i, r in corpus.items()},
            max_neighbours=cfg.max_neighbours,
            check=ctx.check,
        )
        unsettled = [c for c in result.clusters if not all(settled(corpus[i]) for i in c)]
        hist = result.histogram()
        note = (
            f"{len(result.clusters)} cluster(s) {hist or ''}, {len(unsettled)} unsettled; "
            f"{result.lexical_edges} lexical and {result.semantic_edges} semantic edges, "
            f"{result.cut_edges} cut; {result.seconds:.2f} s"
        ).replace("  ", " ")
        ctx.progress("clustering", 1, 1, note)
        plans = [
            {
                "histogram": {str(k): v for k, v in hist.items()},
                "unsettled": [list(c) for c in unsettled[:200]],
            }
        ]
        ctx.journal(
            PhaseLog(
                STAGE,
                "clustering",
                "planned" if ctx.dry_run else "applied",
                elapsed(),
                0,
                plans,
                [],
                note,
            )
        )
        return ClusterState(corpus, result, unsettled, vectors, stems)
