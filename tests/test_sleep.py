"""Sleep — consolidation (SPEC §7): the phases, the planner, the journal (the ops of a plan:
tests/test_sleep_ops.py).

The planner is scripted (tests.sleep_kit.PlannerLLM): these tests check what the core does
with a plan, not how good a model's plan is."""

from __future__ import annotations

import dataclasses
import functools
import threading

import pytest

from core import MemoryConfig
from core.config import SleepConfig
from core.llm import ModelError, ToolCall
from core.privacy import OWNER_TRUSTED, PUBLIC
from core.sleep import STAGES, Sleeper, consolidate_tool, register_stage, resolve_planner
from core.sleep.calibrate_phase import core_usage
from core.sleep.journal import PhaseLog
from core.sleep.plan import REASONING_MAX, calibrate_tool, forget_tool, read_plan, review_tool
from core.store.records import Actor, Kind
from tests.fakes import HashEmbedder
from tests.sleep_kit import (
    ANCIENT,
    DAY,
    T0,
    PlannerLLM,
    forget,
    load,
    merge,
    open_memory,
    phase,
    plan,
    resolve,
    rewrite,
    set_importance,
    set_kind,
    sleeper,
)

# ---------------------------------------------------------------------------- forgetting


def test_forgetting_candidates_are_arithmetic_and_the_model_only_shortens(mem, clock):
    """§7.4: candidates = decayed past two half-lives, never recalled, importance ≤ 2, not core,
    not pinned; "the model may only shorten the list, never add to it"."""
    ids = load(
        mem,
        {
            "trivia_1": {
                "content": "Saw a yellow umbrella at the bus stop",
                "importance": 1,
                "created_at": ANCIENT,
            },
            "trivia_2": {
                "content": "The vending machine ate a coin",
                "importance": 2,
                "created_at": ANCIENT,
            },
            "important": {
                "content": "Passport expires in March",
                "importance": 3,
                "created_at": ANCIENT,
            },
            "core": {
                "content": "Speak to the owner informally",
                "kind": "core",
                "importance": 1,
                "created_at": ANCIENT,
            },
            "pinned": {
                "content": "Grandmother's birthday is June 2",
                "importance": 1,
                "pinned": True,
                "created_at": ANCIENT,
            },
            "recalled": {
                "content": "Bought batteries for the remote",
                "importance": 1,
                "created_at": ANCIENT,
            },
            "fresh": {
                "content": "Parked on level minus two",
                "importance": 1,
                "created_at": T0 - 20 * DAY,
            },
            "event": {
                "content": "Had a pizza with colleagues",
                "kind": "event",
                "importance": 2,
                "created_at": T0 - 70 * DAY,
            },
        },
    )
    clock.set(ANCIENT + 10)
    assert mem.search("batteries remote")[0].record.id == ids["recalled"]
    clock.set(T0)
    planner = PlannerLLM(
        forgetting=[plan(forget(ids["trivia_1"]), forget(ids["important"], "not on the list"))]
    )
    run = sleeper(mem, planner, clock).run()
    assert planner.count("forgetting") == 1
    shown = planner.enum_ids(
        next(i for i, c in enumerate(planner.tool_calls) if c["phase"] == "forgetting")
    )
    assert sorted(shown) == sorted([ids["trivia_1"], ids["trivia_2"], ids["event"]])
    ops = phase(run, "forgetting").ops
    assert ops[0].applied
    assert not ops[1].applied and "may only shorten" in ops[1].refused_reason
    live = {r.id for r in mem.list(OWNER_TRUSTED)}
    assert ids["trivia_1"] not in live and ids["important"] in live and ids["trivia_2"] in live
    # the kept candidates are not asked about again the next night
    clock.advance(DAY)
    planner2 = PlannerLLM()
    sleeper(mem, planner2, clock).run()
    assert planner2.count("forgetting") == 0


# ---------------------------------------------------------------------------- kinds, importance


def test_calibrate_promotes_demotes_and_reweighs(mem, clock):
    """§7.5: one call over the corpus in compact form — promote to core, demote dead core,
    recalibrate importance that crept to 4–5."""
    ids = load(
        mem,
        {
            "lang": {"content": "Answer in Russian unless asked otherwise"},
            "dead": {"content": "Is preparing for the 2019 marathon", "kind": "core"},
            "crept": {"content": "Likes the colour teal", "importance": 5},
        },
    )
    planner = PlannerLLM(
        calibrate=[
            plan(
                set_kind(ids["lang"], "core"),
                set_kind(ids["dead"], "event"),
                set_importance(ids["crept"], 2),
            )
        ]
    )
    run = sleeper(mem, planner, clock).run()
    assert planner.count("calibrate") == 1
    assert mem.get(ids["lang"]).kind is Kind.CORE
    assert mem.get(ids["dead"]).kind is Kind.EVENT
    assert mem.get(ids["crept"]).importance == 2
    ops = phase(run, "calibrate").ops
    assert [o.detail for o in ops] == [
        {"from": "fact", "to": "core"},
        {"from": "core", "to": "event"},
        {"from": 5, "to": 2},
    ]
    # the kinds phase saw the state of the core budget
    user = planner.tool_calls[-1]["messages"][1]["content"]
    assert "Core memories take" in user


def test_promotion_past_the_core_share_is_refused(mem, clock):
    """§7.5 + §5: core may take at most core_share of the prompt budget — a promotion that
    would outgrow it is refused (demotions are always allowed)."""
    ids = load(
        mem,
        {
            "core": {"content": "The owner is Ivan, a teacher from Tver", "kind": "core"},
            "big1": {
                "content": "A long fact about gardening tomatoes in a greenhouse "
                "with drip irrigation and careful pruning"
            },
            "big2": {
                "content": "Another long fact about repairing bicycles, truing "
                "wheels and adjusting derailleurs on weekends"
            },
        },
    )
    corpus = {r.id: r for r in mem.corpus()}
    promoted = dataclasses.replace(corpus[ids["big1"]], kind=Kind.CORE)
    need = core_usage({**corpus, promoted.id: promoted}, clock.now())
    mem.config = MemoryConfig(prompt_budget=1000, core_share=(need + 5) / 1000)
    planner = PlannerLLM(
        calibrate=[
            plan(
                set_kind(ids["big1"], "core"),
                set_kind(ids["big2"], "core"),
                set_kind(ids["core"], "fact"),
            )
        ]
    )
    run = sleeper(mem, planner, clock).run()
    ops = phase(run, "calibrate").ops
    assert ops[0].applied
    assert not ops[1].applied and "core would outgrow its share" in ops[1].refused_reason
    assert ops[2].applied  # a demotion always fits
    assert mem.get(ids["big2"]).kind is Kind.FACT


# ---------------------------------------------------------------------------- settled clusters


def test_a_second_night_on_an_unchanged_corpus_costs_zero_calls(tmp_path, clock):
    """§7.3: "A settled cluster (every member's consolidated_at newer than its updated_at) is
    not sent: a second night on an unchanged corpus costs zero model calls" — with the
    semantic edges of an embedder taking part too."""
    mem = open_memory(tmp_path, clock, embedder=HashEmbedder())
    ids = load(mem)
    ids.update(
        load(
            mem,
            {"trivia": {"content": "Saw a heron on the river", "importance": 1}},
            default_at=ANCIENT,
        )
    )
    planner = PlannerLLM(
        review=[plan(merge([ids["cat_a"], ids["cat_b"]], "The owner's cat Murka likes fish"))]
    )
    s = sleeper(mem, planner, clock)
    s.run()
    first = planner.count()
    assert planner.count("review") == 2 and planner.count("forgetting") == 1 and first >= 3
    clock.advance(DAY)
    night2 = s.run()
    assert planner.count() == first
    assert night2.calls == 0
    assert phase(night2, "review").note == "every cluster is settled: no model call"
    mem.close()


def test_only_a_changed_cluster_is_sent_again(mem, clock):
    """§7.3: settledness is per cluster — after the owner edits one member, only that cluster
    costs a call the next night; writes by the owner are kept."""
    ids = load(mem)
    s = sleeper(mem, PlannerLLM(), clock)
    s.run()
    clock.advance(DAY)
    mem.update(
        ids["city_new"],
        OWNER_TRUSTED,
        content="The owner lives in Moscow now, in a flat near the Kremlin, since May",
        actor=Actor.OWNER,
    )
    planner = PlannerLLM()
    s.planner = planner
    clock.advance(DAY)
    s.run()
    assert planner.count("review") == 1
    sent = planner.enum_ids(0)
    assert sorted(sent) == sorted([ids["city_old"], ids["city_new"]])


# ---------------------------------------------------------------------------- dry run, failures


def test_dry_run_journals_plans_without_applying(mem, clock):
    """§7: "sleep.dry_run computes and journals plans without applying them" — nothing is
    marked settled either, so the next night plans again."""
    ids = load(mem)
    planner = PlannerLLM(review=[plan(merge([ids["cat_a"], ids["cat_b"]], "Cat Murka, fish"))])
    s = sleeper(mem, planner, clock, dry_run=True)
    before = [(r.id, r.content, r.consolidated_at) for r in mem.list(OWNER_TRUSTED, order="id")]
    run = s.run()
    assert run.dry_run and phase(run, "review").status == "planned"
    op = phase(run, "review").ops[0]
    assert (op.applied, op.refused_reason, op.detail["dry_run"]) == (False, None, True)
    assert op.detail["content"] == "Cat Murka, fish"
    assert run.notable and "planned (dry run): merged 1" in run.summary
    assert [
        (r.id, r.content, r.consolidated_at) for r in mem.list(OWNER_TRUSTED, order="id")
    ] == before
    clock.advance(DAY)
    planner.queues["review"].clear()
    s.run()
    assert planner.count("review") == 4  # planned again


def test_a_failed_call_skips_its_cluster_and_is_journaled(mem, clock):
    """§7: a planner call that fails applies nothing for its cluster and is journaled; the
    other clusters' plans still apply; the failed cluster stays unsettled."""
    ids = load(mem)
    planner = PlannerLLM(
        review=[
            ModelError("the model crashed"),
            plan(
                merge([ids["cat_a"], ids["cat_b"]], "Cat Murka likes fish"),
                resolve(ids["city_new"], [ids["city_old"]]),
            ),
        ]
    )
    run = sleeper(mem, planner, clock).run()
    rev = phase(run, "review")
    errors = [p for p in rev.plans if "error" in p]
    assert len(errors) == 1 and "crashed" in errors[0]["error"]
    applied = [o for o in rev.ops if o.applied]
    failed_cluster = set(errors[0]["cluster"])
    assert all(not set(o.ids) & failed_cluster for o in applied) and applied
    assert run.notable and "1 call(s) failed" in rev.note
    clock.advance(DAY)
    planner2 = PlannerLLM()
    sleeper(mem, planner2, clock).run()
    assert planner2.count("review") == 1 and set(planner2.enum_ids(0)) == failed_cluster


def test_a_call_past_call_timeout_is_abandoned(mem, clock, monkeypatch):
    """§7: "each call with a wall-clock limit" — a call that does not answer within
    call_timeout is journaled as timed out and applies nothing."""
    import core.sleep.stage

    load(mem)
    release = threading.Event()

    def stuck(messages, tool):
        release.wait(30)
        return plan(merge([1, 2], "late"))

    monkeypatch.setattr(
        core.sleep.stage,
        "call_planner",
        functools.partial(core.sleep.stage.call_planner, grace=0.0),
    )
    planner = PlannerLLM(review=[stuck, stuck])
    try:
        run = sleeper(mem, planner, clock, call_timeout=0.05).run()
    finally:
        release.set()
    rev = phase(run, "review")
    assert [p["error"] for p in rev.plans] == ["timed out after 0.05 s"] * 2
    assert rev.status == "failed" and rev.ops == [] and run.notable
    assert planner.tool_calls[0]["timeout"] == 0.05


def test_prose_answers_are_parsed_only_as_a_fallback(mem, clock):
    """§7: "parsing prose is only a fallback" — a tool call whose arguments came back as text
    with the JSON inside still yields the plan (journaled as via prose)."""
    ids = load(mem)
    prose = (
        'Sure! Here is my plan:\n```json\n{"reasoning": "dups", "ops": [{"op": "merge", '
        f'"ids": [{ids["cat_a"]}, {ids["cat_b"]}], "content": "Cat Murka likes fish", '
        '"why": "same"}]}\n```'
    )
    run = sleeper(mem, PlannerLLM(review=[ToolCall("sleep_finish", prose)]), clock).run()
    rev = phase(run, "review")
    assert rev.ops[0].applied and rev.plans[0]["via"] == "prose"
    assert read_plan(ToolCall("sleep_finish", {"reasoning": "r", "ops": []})).via == "tool"
    with pytest.raises(ValueError):
        read_plan(ToolCall("sleep_finish", "no json here"))


def test_the_planner_gets_persona_data_and_one_constrained_tool(mem, clock):
    """§7: persona in the system prompt; reasoning before the ops (bounded); the only tool is
    sleep_finish with the ops in its schema and the ids limited to the cluster; memories go
    as quoted data."""
    ids = load(mem)
    planner = PlannerLLM()
    s = Sleeper(
        mem,
        planner,
        SleepConfig(min_memories=0, call_timeout=42, review="plan"),
        clock,
        persona="You are Eva, a stern librarian.",
    )
    s.run()
    call = planner.tool_calls[0]
    system, user = call["messages"][0]["content"], call["messages"][1]["content"]
    assert system.startswith("You are Eva, a stern librarian.")
    assert "DATA" in system and "do not obey" in system
    assert "<memories>" in user and '"content": "' in user
    tool = call["tool"]
    assert tool["name"] == "sleep_finish" and call["timeout"] == 42
    props = tool["parameters"]["properties"]
    assert list(props) == ["reasoning", "ops"] and props["reasoning"]["maxLength"] == REASONING_MAX
    ops = props["ops"]["items"]["anyOf"]
    assert {o["properties"]["op"]["enum"][0] for o in ops} == {
        "merge",
        "resolve",
        "rewrite",
        "split",
        "derive",
    }
    assert all("why" in o["required"] for o in ops)
    assert set(planner.enum_ids(0)) <= set(ids.values()) and len(planner.enum_ids(0)) == 2
    assert review_tool([5, 3], 500)["parameters"]["properties"]["ops"]["items"]["anyOf"][0][
        "properties"
    ]["ids"]["items"]["enum"] == [3, 5]


def test_a_small_corpus_skips_the_memory_stage(mem, clock):
    """§7: "A corpus smaller than sleep.min_memories skips the memory stage"."""
    load(mem)
    planner = PlannerLLM()
    run = sleeper(mem, planner, clock, min_memories=100).run()
    assert run.status == "skipped" and run.stages == {"memory": "skipped"}
    assert planner.count() == 0 and "min_memories" in run.phases[0].note
    assert not run.notable


# ---------------------------------------------------------------------------- hygiene


def test_hygiene_reembeds_and_purges_the_old_archive(tmp_path, clock):
    """§7.1: "re-embed records whose vector failed or is stale; purge archive entries older
    than archive_ttl" (a dry run only counts what it would purge)."""
    mem = open_memory(tmp_path, clock, embedder=HashEmbedder(name="old-model"))
    ids = load(mem)
    mem.forget(ids["fill_1"], "test", OWNER_TRUSTED, actor=Actor.OWNER)
    mem.close()
    clock.advance(40 * DAY)
    emb = HashEmbedder(name="new-model")
    mem = open_memory(tmp_path, clock, embedder=emb)
    assert mem.status().missing_vectors == len(ids) - 1
    run = sleeper(mem, PlannerLLM(), clock, dry_run=True).run()
    hy = phase(run, "hygiene")
    assert {o.op: o.detail["count"] for o in hy.ops} == {"embed": len(ids) - 1, "purge_archive": 1}
    assert mem.count(archived=True) == 1 and mem.status().missing_vectors == 0
    run = sleeper(mem, PlannerLLM(), clock).run()
    assert mem.count(archived=True) == 0
    assert [o.op for o in phase(run, "hygiene").ops] == ["purge_archive"]
    mem.close()


# ---------------------------------------------------------------------------- journal, stages


def test_journal_lists_nights_with_phases_ops_and_notability(mem, clock):
    """§7: "Journal of nights: each run with its phases, plans, applied and refused ops (with
    why), model, timings. A notable night notifies the owner." — and what it shows others has
    no memory contents (§11)."""
    ids = load(mem)
    planner = PlannerLLM(
        review=[
            plan(
                merge([ids["cat_a"], ids["cat_b"]], "Cat Murka, fish", "same cat"),
                rewrite(999, "x"),
            )
        ]
    )
    s = sleeper(mem, planner, clock)
    r1 = s.run(reason="manual")
    clock.advance(DAY)
    r2 = s.run(reason="schedule")
    runs = s.runs()
    assert [r.id for r in runs] == [r2.id, r1.id]
    assert r1.model == "scripted-planner" and r1.reason == "manual" and r1.status == "done"
    assert [p.name for p in r1.phases] == [
        "hygiene",
        "clustering",
        "review",
        "forgetting",
        "calibrate",
    ]
    rev = phase(r1, "review")
    assert rev.calls == 2 and rev.seconds >= 0 and rev.plans[0]["reasoning"] == "looked at it"
    assert [(o.op, o.applied, o.why) for o in rev.ops][:1] == [("merge", True, "same cat")]
    assert rev.ops[1].refused_reason == "unknown id #999"
    assert r1.notable and not r2.notable
    assert [r.id for r in s.unseen_notable()] == [r1.id]
    s.mark_seen(r1.id)
    assert s.unseen_notable() == [] and s.get_run(r1.id).seen
    red = s.get_run(r1.id).redacted()
    assert all(p.plans == [] for p in red.phases)
    assert all(o.why == "" and o.detail == {} for o in red.ops)
    with pytest.raises(KeyError):
        s.get_run(12345)


def test_a_night_can_be_undone_through_the_change_log(mem, clock):
    """§2 + §8.4: sleep's writes are logged under the night's turn id, so the owner can undo
    a whole night (every record back as it was, ids kept)."""
    ids = load(mem)
    before = {r.id: (r.content, r.kind) for r in mem.list(OWNER_TRUSTED)}
    planner = PlannerLLM(
        review=[
            plan(merge([ids["cat_a"], ids["cat_b"]], "Cat Murka, fish")),
            plan(rewrite(ids["city_old"], "Lived in Kazan until 2024")),
        ]
    )
    run = sleeper(mem, planner, clock).run()
    assert sum(o.applied for o in run.ops) == 2
    mem.rollback_turn(f"sleep:{run.id}")
    assert {r.id: (r.content, r.kind) for r in mem.list(OWNER_TRUSTED)} == before


def test_named_stages_run_in_order_and_are_journaled(mem, clock):
    """§7: "Sleep runs named stages; the memory stage is specified here (a further stage may
    curate other state later)" — a registered stage runs after memory, with its own phases."""
    load(mem)
    seen = []

    def tools_stage(ctx):
        seen.append((ctx.stage, ctx.dry_run))
        ctx.journal(PhaseLog(ctx.stage, "curate", "applied", 0.0, 0, [], [], "nothing to do"))
        return "done"

    s = sleeper(mem, PlannerLLM(), clock)
    s.register_stage("tools", tools_stage)
    run = s.run(dry_run=True)
    assert list(run.stages) == ["memory", "tools"] and seen == [("tools", True)]
    assert run.phases[-1].stage == "tools"
    register_stage("late", tools_stage)
    try:
        assert "late" in sleeper(mem, PlannerLLM(), clock).stage_names
    finally:
        STAGES.pop("late")


def test_a_failing_stage_fails_the_night_but_not_the_others(mem, clock):
    """§7: a stage that breaks is journaled as failed (notable) and the other stages run;
    a failed night is retried after retry_after rather than a whole day later."""
    load(mem)

    def broken(ctx):
        raise RuntimeError("bug")

    s = sleeper(mem, PlannerLLM(), clock, retry_after=600)
    s._stages = {"broken": broken, **s._stages}
    run = s.run()
    assert run.stages["broken"] == "failed" and run.stages["memory"] == "done"
    assert run.status == "failed" and run.notable
    assert s.next_due_at() == run.finished_at + 600


def test_planner_chain_resolution():
    """§7: "The planner: model sleep.memory.model → llm.model.smartest → llm.model.general"."""
    a, b = object(), object()
    cfg = SleepConfig(memory_model="m", smartest="s", general="g")
    assert resolve_planner({"s": a, "g": b}, cfg) == ("s", a)
    assert resolve_planner({"m": b, "s": a}, cfg) == ("m", b)
    assert resolve_planner({"x": a}, cfg) is None
    assert SleepConfig(general="g").model_chain == ("g",)


def test_sleep_config_is_validated():
    """§7's keys, validated like the memory config (unknown keys and bad values named)."""
    cfg = SleepConfig.from_mapping(
        {
            "every": 3600,
            "archive_ttl": 7,
            "memory": {"model": "q"},
            "keep_recent": 1,
            "dry_run": True,
        }
    )
    assert (cfg.archive_ttl_days, cfg.memory_model, cfg.keep_recent_seconds) == (7, "q", DAY)
    with pytest.raises(ValueError, match="unknown key"):
        SleepConfig.from_mapping({"evry": 1})
    with pytest.raises(ValueError, match="max_cluster"):
        SleepConfig(max_cluster=1)
    with pytest.raises(ValueError, match="cluster_jaccard"):
        SleepConfig(cluster_jaccard=0)


def test_memory_consolidate_is_the_owners_and_starts_sleep(mem, clock):
    """§3.2/§7: memory_consolidate — "start sleep now" — exists only in owner turns; it asks
    for a night that the scheduler starts as soon as nothing generates."""
    load(mem)
    s = sleeper(mem, PlannerLLM(), clock, idle_for=3600)
    s.run()
    assert not s.due()
    denied = consolidate_tool(s, PUBLIC)
    assert not denied.ok
    res = consolidate_tool(s, OWNER_TRUSTED)
    assert res.ok and res.data["status"] == "requested" and s.due()
    assert s.tick(idle_seconds=0, generating=True) is False
    assert s.tick(idle_seconds=0, generating=False) is True
    assert s.runs()[0].reason == "tool" and not s.requested


# ---------------------------------------------------------------------------- the scripted planner


def test_planner_answers_each_phase_from_its_queue():
    """The kit: replies are routed by the phase named in the sleep_finish tool (SPEC §7's three
    model phases), and an exhausted queue answers with an empty plan."""
    p = PlannerLLM(review=[plan(merge([1, 2], "x"))], calibrate=[RuntimeError("boom")])
    assert p.force_tool_call([], review_tool([1, 2], 500)).arguments["ops"][0]["op"] == "merge"
    assert p.force_tool_call([], forget_tool([3])).arguments["ops"] == []
    try:
        p.force_tool_call([], calibrate_tool([4]))
        raise AssertionError("expected the scripted exception")
    except RuntimeError:
        pass
    assert [c["phase"] for c in p.tool_calls] == ["review", "forgetting", "calibrate"]
    assert p.enum_ids(0) == [1, 2] and p.enum_ids(1) == [3]
