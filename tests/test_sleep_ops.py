"""Sleep's ops (SPEC §7): what the core does with each op of a scripted plan
(tests.sleep_kit.PlannerLLM) — merge, resolve, rewrite, split, derive — and the rules each
obeys: the most reinforced id survives a merge, a merge with a private member is private, the
fresher record wins a contradiction."""

from __future__ import annotations

from core import ManualClock
from core.privacy import OWNER_TRUSTED, PUBLIC
from core.store.records import Kind
from tests.sleep_kit import (
    CORPUS,
    DAY,
    OLD,
    PlannerLLM,
    derive,
    load,
    merge,
    phase,
    plan,
    resolve,
    rewrite,
    sleeper,
    split,
)


def reinforce(mem, rid: int, times: int, clock: ManualClock) -> None:
    """Reinforce a record as a dedup hit would (the same wording saved again)."""
    content = mem.get(rid).content
    for _ in range(times):
        clock.advance(60)
        res = mem.save(content, OWNER_TRUSTED, kind="fact", importance=3)
        assert res.id == rid and res.status == "reinforced"


def test_merge_keeps_most_reinforced_id_and_sums_histories(mem, clock):
    """§7: "A merge keeps the id of the most reinforced member and sums the access histories
    (spaced repetition is not reset)"; §2: the merged-away member goes to the archive with why
    and is restorable with its id."""
    ids = load(mem)
    a, b = ids["cat_a"], ids["cat_b"]
    reinforce(mem, a, 1, clock)
    reinforce(mem, b, 3, clock)
    clock.advance(DAY)
    planner = PlannerLLM(review=[plan(merge([a, b], "The owner's cat Murka likes fish a lot"))])
    run = sleeper(mem, planner, clock).run()
    # the two clusters (cat, city) were reviewed; only the cat one had a plan
    assert planner.count("review") == 2
    survivor = mem.get(b)
    assert survivor.content == "The owner's cat Murka likes fish a lot"
    assert survivor.access_count == 4 and len(survivor.accesses) == 4
    assert survivor.created_at == OLD
    archived = {x.record.id: x for x in mem.archived(OWNER_TRUSTED)}
    assert archived[a].archived_by == "sleep" and f"merged into #{b}" in archived[a].why
    op = phase(run, "review").ops[0]
    assert (op.op, op.applied, op.refused_reason, op.detail["survivor"]) == ("merge", True, None, b)
    mem.restore(a)
    assert mem.get(a).content == CORPUS["cat_a"]["content"]


def test_merge_with_a_private_member_is_private(mem, clock):
    """§7: "a merge with any private member is private" — and a plan that says otherwise
    (an extra "private": false) cannot clear the flag."""
    ids = load(
        mem,
        {
            "a": {"content": "Anna's phone number is 555 0100, home line"},
            "b": {"content": "Anna home line phone number 555 0100", "private": True},
        },
    )
    bad = merge([ids["a"], ids["b"]], "Anna's home phone number is 555 0100")
    bad["private"] = False
    run = sleeper(mem, PlannerLLM(review=[plan(bad)]), clock).run()
    op = phase(run, "review").ops[0]
    assert op.applied and op.detail["private"] is True and op.detail["ignored"] == ["private"]
    survivor = op.detail["survivor"]
    assert mem.get(survivor).private
    assert mem.search("Anna phone", PUBLIC, reinforce=False) == []


def test_resolve_keeps_the_fresher_record(mem, clock):
    """§7: "resolve a contradiction in favour of the fresher record" — the older one goes to
    the archive with why."""
    ids = load(mem)
    old, new = ids["city_old"], ids["city_new"]
    planner = PlannerLLM(review=[plan(resolve(new, [old], "moved to Moscow"))])
    run = sleeper(mem, planner, clock).run()
    assert old not in {r.id for r in mem.list(OWNER_TRUSTED)}
    arch = {x.record.id: x for x in mem.archived(OWNER_TRUSTED)}
    assert "contradicted by" in arch[old].why and "moved to Moscow" in arch[old].why
    assert phase(run, "review").ops[0].applied


def test_resolve_against_the_fresher_record_is_refused(mem, clock):
    """§7: a contradiction is resolved for the fresher record; keeping the older one and
    dropping the newer is refused and journaled."""
    ids = load(mem)
    planner = PlannerLLM(review=[plan(resolve(ids["city_old"], [ids["city_new"]]))])
    run = sleeper(mem, planner, clock).run()
    op = phase(run, "review").ops[0]
    assert not op.applied and "fresher" in op.refused_reason
    assert {ids["city_old"], ids["city_new"]} <= {r.id for r in mem.list(OWNER_TRUSTED)}


def test_rewrite_with_a_date(mem, clock):
    """§7: "or rewrite with a date when the old state still matters" — same id, kind, flags,
    history; the knowledge keeps its age."""
    ids = load(mem)
    rid = ids["city_old"]
    before = mem.get(rid)
    planner = PlannerLLM(review=[plan(rewrite(rid, "The owner lived in Kazan until 2024"))])
    run = sleeper(mem, planner, clock).run()
    after = mem.get(rid)
    assert after.content == "The owner lived in Kazan until 2024"
    assert (after.kind, after.importance, after.private, after.updated_at) == (
        before.kind,
        before.importance,
        before.private,
        before.updated_at,
    )
    assert after.consolidated_at == clock.now()
    assert phase(run, "review").ops[0].detail["before"] == before.content
    # the new wording is what recall finds
    assert mem.search("lived until 2024", reinforce=False)[0].record.id == rid


def test_split_a_glued_record(mem, clock):
    """§7: "split a glued record" — the first part keeps the id; each further part is a new
    record with the same kind, importance, flags and history."""
    ids = load(
        mem,
        {
            "glued": {
                "content": "Sister Olga lives in Riga; the owner's car is a red Skoda",
                "private": True,
                "importance": 4,
            },
            "near": {"content": "Sister Olga lives in Riga; the owner drives a red car"},
        },
    )
    rid = ids["glued"]
    reinforce(mem, rid, 2, clock)
    planner = PlannerLLM(
        review=[plan(split(rid, ["Sister Olga lives in Riga", "The owner's car is a red Skoda"]))]
    )
    run = sleeper(mem, planner, clock).run()
    op = phase(run, "review").ops[0]
    assert op.applied
    first, second = op.detail["ids"]
    assert first == rid and mem.get(rid).content == "Sister Olga lives in Riga"
    part = mem.get(second)
    assert part.content == "The owner's car is a red Skoda"
    assert (part.private, part.importance, part.kind, part.access_count) == (True, 4, Kind.FACT, 2)


def test_derive_a_fact_from_a_run_of_events(mem, clock):
    """§7: "derive a fact from a run of similar events" — a new fact; the events stay (they
    fade on their own)."""
    ids = load(
        mem,
        {
            f"e{i}": {"content": f"Went swimming at the Olymp pool on Sunday {d}", "kind": "event"}
            for i, d in enumerate(("May 3", "May 10", "May 17"))
        },
    )
    events = list(ids.values())
    planner = PlannerLLM(
        review=[plan(derive(events, "The owner swims at the Olymp pool on Sundays", importance=3))]
    )
    run = sleeper(mem, planner, clock).run()
    op = phase(run, "review").ops[0]
    assert op.applied
    fact = mem.get(op.detail["id"])
    assert fact.kind is Kind.FACT and fact.source.value == "sleep"
    assert all(mem.get(e).content for e in events)  # still there


def test_resolve_keeps_who_someone_is(mem, clock):
    """§7 + nothing lost (issue 26): a night that resolves a contradiction archives the older
    record — and with it the only line saying who Anna is. Who she is stays live as a record of
    its own, derived from the dropped one (private if it was), and the journal says so."""
    ids = load(
        mem,
        {
            "old": {
                "content": "The owner's sister Anna lives in Tbilisi, in a flat near the river",
                "created_at": OLD - 30 * DAY,
                "private": True,
            },
            "new": {"content": "Anna lives in Yerevan now, in a flat near the river"},
        },
    )
    planner = PlannerLLM(review=[plan(resolve(ids["new"], [ids["old"]], "Anna moved"))])
    run = sleeper(mem, planner, clock).run()
    op = phase(run, "review").ops[0]
    assert op.applied and [k["content"] for k in op.detail["kept"]] == [
        "Anna is the owner's sister."
    ]
    kept = [r for r in mem.list(OWNER_TRUSTED) if r.content == "Anna is the owner's sister."]
    assert len(kept) == 1 and kept[0].private and kept[0].kind is Kind.FACT
    assert ids["old"] not in {r.id for r in mem.list(OWNER_TRUSTED)}


def test_resolve_keeps_nothing_another_record_says(mem, clock):
    """The relation is derived only when no other live record (as public as the dropped one)
    says it."""
    ids = load(
        mem,
        {
            "old": {
                "content": "The owner's sister Anna lives in Tbilisi, in a flat near the river",
                "created_at": OLD - 30 * DAY,
            },
            "new": {"content": "Anna lives in Yerevan now, in a flat near the river"},
            "who": {"content": "Anna is the owner's sister, two years older"},
        },
    )
    planner = PlannerLLM(review=[plan(resolve(ids["new"], [ids["old"]], "Anna moved"))])
    op = phase(sleeper(mem, planner, clock).run(), "review").ops[0]
    assert op.applied and "kept" not in op.detail
    assert len(mem.list(OWNER_TRUSTED)) == 2
