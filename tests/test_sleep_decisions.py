"""Sleep's review as small decisions (SPEC §7.3–7.4, issue 17 item 1: "arithmetic proposes, the
model decides"). The model is a fake that answers each grammar-forced question from rules about
the quoted records (tests.decide_kit.DecidingLLM): these tests check the orchestration — what is
asked, with which schema and dates, and what the core does with each answer — not how well a
model answers. By rule: tests/test_sleep_supersede.py, test_sleep_duplicates.py,
test_sleep_forgetting.py."""

from __future__ import annotations

import re

from core.privacy import OWNER_TRUSTED
from core.store.records import Kind
from tests.decide_kit import DecidingLLM, _rec, live, night, text_of
from tests.sleep_kit import ANCIENT, DAY, OLD, load, open_memory, sleeper


def test_each_answer_becomes_the_op_it_implies(tmp_path, clock):
    """Same fact → merged; the newer replaces the older → the older archived; both true →
    both kept; a run of events → one derived fact; faded trivia → forgotten except what the
    model keeps (it can only shorten the arithmetic's list)."""
    llm = DecidingLLM(
        same=[(text_of("cat_a"), text_of("cat_b"))],
        replaces=[(text_of("city_old"), text_of("city_new"))],
        fact="The owner swims at the Olymp pool every Sunday morning",
        keep=[text_of("trivia_2")],
    )
    mem, ids, s, run = night(tmp_path, clock, llm)
    now = live(mem)
    assert run.status == "done"
    assert (ids["cat_a"] in now) != (ids["cat_b"] in now)  # merged into one
    assert ids["city_old"] not in now and ids["city_new"] in now
    assert ids["anna_sis"] in now and ids["anna_mgr"] in now  # the decoy kept apart
    derived = [r for r in now.values() if "every Sunday" in r.content]
    assert len(derived) == 1 and derived[0].kind is Kind.FACT
    assert all(ids[k] in now for k in ("swim_1", "swim_2", "swim_3"))  # events stay
    assert ids["trivia_1"] not in now and ids["trivia_2"] in now
    # what was asked: one question per candidate, grammar-forced to a short answer
    assert {tuple(q["schema"]["properties"]["same"]["enum"]) for q in llm.asked("same")} == {
        ("same fact", "different facts")
    }
    assert llm.asked("old")[0]["schema"]["properties"]["old"]["enum"] == [
        "still true",
        "no longer true",
    ]  # asked about the older record only
    assert len(llm.asked("fact")) == 1
    # the newer cat record already holds every word of the older: its text, no merge call
    assert not llm.asked("text")
    assert [r.content for r in now.values() if "Murka" in r.content] == [text_of("cat_b")]
    assert len(llm.asked("fate")) == 2  # one question per faded record
    # the sister and the manager are different people by arithmetic (different roles): not
    # asked at all
    assert not [q for q in llm.questions if q["key"] != "plan" and "Anna" in q["user"]]


def test_every_question_shows_dates_and_how_long_ago_and_no_ids(tmp_path, clock):
    llm = DecidingLLM(replaces=[(text_of("city_old"), text_of("city_new"))])
    mem, ids, s, run = night(tmp_path, clock, llm)
    q = llm.asked("old")[0]["user"]
    assert "months ago" in q and re.search(r"\d{4}-\d\d-\d\d", q)
    assert q.index(text_of("city_old")) < q.index(text_of("city_new"))  # the older first
    for asked in llm.questions:
        if asked["key"] != "plan":
            assert not re.search(r"#\d", asked["user"])  # the model never names an id


def test_a_failed_question_applies_nothing_for_its_cluster_and_is_asked_again(tmp_path, clock):
    llm = DecidingLLM(same=[(text_of("cat_a"), text_of("cat_b"))], fail="old")
    mem, ids, s, run = night(tmp_path, clock, llm)
    now = live(mem)
    assert ids["city_old"] in now and ids["city_new"] in now
    assert (ids["cat_a"] in now) != (ids["cat_b"] in now)  # other clusters went on
    review = next(p for p in run.phases if p.name == "review")
    assert "failed question" in review.note
    llm.fail = None
    clock.advance(DAY)
    s.run()
    assert len(llm.asked("old")) == 2  # the failed cluster is asked about again
    assert ids["city_old"] not in live(mem) or ids["city_new"] in live(mem)


def test_an_unchanged_second_night_asks_nothing(tmp_path, clock):
    """§7.3 / issue 17: "0 calls on an unchanged second night" — every unit answered is
    settled, and the records an op named are not re-offered for forgetting."""
    llm = DecidingLLM(
        same=[(text_of("cat_a"), text_of("cat_b"))],
        replaces=[(text_of("city_old"), text_of("city_new"))],
        fact="The owner swims at the Olymp pool every Sunday morning",
    )
    mem, ids, s, first = night(tmp_path, clock, llm)
    assert first.calls >= 4  # events, same, now, two fates
    clock.advance(DAY)
    second = s.run()
    assert second.calls == 0, [(p.name, p.calls, p.note) for p in second.phases]


def test_a_new_record_linked_to_a_settled_cluster_does_not_reask_its_old_questions(tmp_path, clock):
    """§7.3 / issue 27 item 4, measured at 10k records: a second night on a store where only a
    new record appeared asked its neighbours' duplicate question again. A question about
    records all reviewed since they last changed was answered then; only what involves the new
    record may be asked."""
    llm = DecidingLLM()  # every pair: different facts, both still true
    mem, ids, s, first = night(tmp_path, clock, llm)
    cats = {text_of("cat_a"), text_of("cat_b")}
    assert any(set(q["quoted"][:2]) == cats for q in llm.asked("same"))
    clock.advance(DAY)
    mem.save("The owner's cat Murka likes fish and sleeps on the radiator", OWNER_TRUSTED)
    llm.questions.clear()
    # the next night: the new record is younger than keep_recent, its merge could not be
    # applied — nothing is asked about it yet (asked tonight, it would be asked again)
    second = s.run()
    assert second.calls == 0, [(p.name, p.calls, p.note) for p in second.phases]
    assert any("wait until their newest record" in p.note for p in second.phases)
    clock.advance(3 * DAY)
    third = s.run()
    assert third.calls >= 1  # now old enough: the new record is asked about
    assert not any(set(q["quoted"][:2]) == cats for q in llm.questions if q.get("quoted"))


def test_a_dry_run_asks_and_journals_but_changes_nothing(tmp_path, clock):
    llm = DecidingLLM(same=[(text_of("cat_a"), text_of("cat_b"))])
    mem, ids, s, run = night(tmp_path, clock, llm, dry_run=True)
    assert set(live(mem)) == set(ids.values())
    merges = [o for o in run.ops if o.op == "merge"]
    assert merges and not merges[0].applied and merges[0].refused_reason is None


def test_a_closed_choice_is_read_with_the_models_probabilities(tmp_path, clock):
    """Issue 27 item 3: a model that can say how sure it is (core.llm.ChoiceModel) answers
    sleep's closed questions through choice_probabilities — the likelier option is the answer,
    and the journal keeps every option's probability; a model without it is asked as before."""
    from core.sleep.questions import one_choice

    class ChoosingLLM(DecidingLLM):
        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **k)
            self.choices: list[tuple[str, list[str]]] = []

        def choice_probabilities(self, messages, key, options, timeout=None, cancel=None):
            self.choices.append((key, list(options)))
            schema = {"type": "object", "properties": {key: {"type": "string", "enum": options}}}
            picked = DecidingLLM.generate_json(self, messages, schema)[key]
            return {o: (0.9 if o == picked else 0.1 / (len(options) - 1)) for o in options}

    llm = ChoosingLLM(
        same=[(text_of("cat_a"), text_of("cat_b"))],
        replaces=[(text_of("city_old"), text_of("city_new"))],
    )
    mem, ids, _s, run = night(tmp_path, clock, llm)
    assert ("same", ["same fact", "different facts"]) in llm.choices
    now = live(mem)
    assert ids["city_new"] in now and ids["city_old"] not in now  # 0.9: the likelier option
    assert len([i for i in (ids["cat_a"], ids["cat_b"]) if i in now]) == 1  # merged
    logged = [d for ph in run.phases for p in ph.plans for d in p.get("decisions") or []]
    probs = [d["probabilities"] for d in logged if d.get("kind") == "duplicate"]
    assert probs and all(abs(sum(p.values()) - 1.0) < 1e-6 for p in probs)
    assert one_choice({"type": "object", "properties": {"text": {"type": "string"}}}) is None


def test_calibrate_is_asked_only_about_what_arithmetic_proposes(tmp_path, clock):
    """Issue 17 (first-night time; SPEC §7.5 under "arithmetic proposes"): with review="decide"
    the kinds/importance call shows only the records it could change — one recalled constantly
    (promote?), core when it outgrew its budget, important records never recalled when
    importance crept up — and is not made at all when there are none."""
    from core.config import MemoryConfig
    from core.sleep.calibrate_phase import calibrate_proposals

    now = OLD
    cfg = MemoryConfig()
    corpus = {
        1: _rec(1, "Takes 5 mg of bisoprolol every morning", recalls=6, recalled_at=now - DAY),
        2: _rec(2, "Likes green tea", recalls=1, recalled_at=now - DAY),
        3: _rec(3, "The owner is Dmitry", kind=Kind.CORE),
        4: _rec(4, "Pinned and recalled", recalls=9, recalled_at=now - DAY, pinned=True),
        5: _rec(5, "Recalled often, long ago", recalls=9, recalled_at=ANCIENT),
    }
    assert [r.id for r, _why in calibrate_proposals(corpus, cfg, now, 100, 4800)] == [1]
    assert [r.id for r, _why in calibrate_proposals(corpus, cfg, now, 5000, 4800)] == [1, 3]
    crept = {i: _rec(i, f"important thing {i}", importance=5) for i in range(10, 14)}
    crept[14] = _rec(14, "a normal thing")
    assert [r.id for r, _why in calibrate_proposals(crept, cfg, now, 0, 4800)] == [10, 11, 12, 13]
    # a decide night on a corpus where nothing is recalled: no calibrate call at all
    llm = DecidingLLM()
    mem, ids, s, run = night(tmp_path, clock, llm)
    assert not llm.asked("plan")
    phase = next(p for p in run.phases if p.name == "calibrate")
    assert phase.calls == 0 and "no model call" in phase.note


def test_a_record_recalled_constantly_is_asked_about_and_promoted_by_a_small_question(
    tmp_path, clock
):
    """Phase 5 with review="decide": one grammar-forced question per proposed record (no
    open-ended call); "make core" becomes set_kind core through the safeguards; an unchanged
    second night asks nothing."""
    pill = "Takes 5 mg of bisoprolol every morning"
    mem = open_memory(tmp_path, clock)
    ids = load(
        mem,
        {
            "pill": {"content": pill, "created_at": OLD - 100 * DAY},
            "tea": {"content": "Likes green tea in the evening"},
        },
    )
    with mem.transaction() as w:
        w.conn.execute(
            "UPDATE memories SET access_count = 6, last_access_at = ? WHERE id = ?",
            (clock.now() - DAY, ids["pill"]),
        )
    mem.close()
    mem = open_memory(tmp_path, clock)
    llm = DecidingLLM()
    llm.core = {pill}
    s = sleeper(mem, llm, clock, review="decide")
    run = s.run()
    asked = llm.asked("core")
    assert len(asked) == 1 and "recalled 6 times" in asked[0]["user"]
    assert asked[0]["schema"]["properties"]["core"]["enum"] == ["make core", "leave as is"]
    assert not llm.asked("plan")
    assert live(mem)[ids["pill"]].kind is Kind.CORE
    phase = next(p for p in run.phases if p.name == "calibrate")
    assert phase.calls == 1 and any(o.op == "set_kind" and o.applied for o in run.ops)
    clock.advance(DAY)
    assert s.run().calls == 0
