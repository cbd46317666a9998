"""Sleep (SPEC §7): once a day, when the conversation has been quiet, Eva consolidates memory.

The package's public API is :class:`Sleeper` (schedule, runs, wake, journal) and the chat's
``memory_consolidate`` tool; the rest is its machinery:

========================  =================================================================
``sleeper``               the scheduler (the only one) and the night's stages
``stage``                 what a stage works with (:class:`StageContext`), the night's corpus
``memory_stage``          the ``memory`` stage: hygiene, clustering, review, forgetting, calibrate
``phase``                 what the stage's phases share; applying a phase with its journal
``review_phase``          phase 3, the clusters' review (decide or plan)
``forgetting_phase``      phase 4, forgetting outside clusters
``calibrate_phase``       phase 5, kinds, importance, the core budget
``clustering``            the similarity graph and its clusters (no model)
``candidates``            what the review asks about, by arithmetic (duplicate, supersede, runs)
``gate``                  which supersessions are asked at all (a learned score, issue 27)
``questions``             the small grammar-forced questions: instruction, quoted records, schema
``decisions``             asking them over the candidates and what their answers become
``plan``                  planner prompts, tool schemas, reading a plan, the planner chain
``apply``                 the safeguards an op must pass, applying a phase op by op
``ops``                   the write primitives (one transaction a phase, a savepoint an op)
``journal``               the journal of nights and its tables
``corrections``           the learned pair model: does a new record correct an old one
                          (also the chat's memory step, at write time)
========================  =================================================================
"""

from core.sleep.journal import OpLog, PhaseLog, SleepProgress, SleepRun
from core.sleep.plan import resolve_planner
from core.sleep.sleeper import (
    CONSOLIDATE_TOOL,
    STAGES,
    AlreadySleeping,
    Sleeper,
    consolidate_tool,
    register_stage,
)
from core.sleep.stage import StageContext

__all__ = [
    "CONSOLIDATE_TOOL",
    "STAGES",
    "AlreadySleeping",
    "OpLog",
    "PhaseLog",
    "SleepProgress",
    "SleepRun",
    "Sleeper",
    "StageContext",
    "consolidate_tool",
    "register_stage",
    "resolve_planner",
]
