"""Sleep's forgetting as small decisions (issue 17: "wrongly lost 0"; §7 max_forget): only
the arithmetic's faded candidates are asked about, one at a time, forget or keep; a debt,
a promise, a date or a person is never offered; no question past the night's budget.
The model is tests.decide_kit.DecidingLLM."""

from __future__ import annotations

from tests.decide_kit import DecidingLLM, live, night, text_of
from tests.sleep_kit import ANCIENT, DAY, load, open_memory, sleeper

MATTERS = {
    "debt": "Owes his friend Kolya 20 000 roubles until July",
    "promise": "Хозяин дал обещание дочери сходить с ней в зоопарк летом",
    "grave": "Grandmother's grave is in row 14 of the old cemetery",
    "date": "The plumber said the pipes must be checked before 12 March",
    "person": "Had a long talk with Sergey about kayaks",
}


def test_a_faded_debt_promise_date_or_person_is_never_offered_for_forgetting(tmp_path, clock):
    """Issue 17: "wrongly lost 0 — never lose a debt/promise/date/person record". Faded records
    (old, never recalled, importance ≤ 2) that name money, a promise, a grave, a date or a
    person are held back by arithmetic: not asked, not forgotten, journaled as held; plain
    trivia beside them is still asked about and forgotten."""
    corpus = {k: {"content": v, "importance": 2, "created_at": ANCIENT} for k, v in MATTERS.items()}
    corpus["trivia"] = {
        "content": "Saw a yellow umbrella at the bus stop",
        "importance": 1,
        "created_at": ANCIENT,
    }
    llm = DecidingLLM()  # answers "forget" to every question it gets
    mem = open_memory(tmp_path, clock)
    ids = load(mem, corpus)
    run = sleeper(mem, llm, clock, review="decide").run()
    now = live(mem)
    assert [q["quoted"][0] for q in llm.asked("fate")] == [corpus["trivia"]["content"]]
    assert ids["trivia"] not in now
    assert all(ids[k] in now for k in MATTERS)
    phase = next(p for p in run.phases if p.name == "forgetting")
    held = next(p["held"] for p in phase.plans if "held" in p)
    assert {int(i) for i in held} == {ids[k] for k in MATTERS}
    assert "held back" in phase.note


def test_the_model_cannot_add_to_the_forgetting_list(tmp_path, clock):
    """The model is asked only about the arithmetic's candidates, one at a time, and can only
    answer forget or keep: nothing else can be forgotten (never a recalled or important
    record)."""
    llm = DecidingLLM()
    mem, ids, s, run = night(tmp_path, clock, llm)
    asked = llm.asked("fate")
    assert {q["schema"]["properties"]["fate"]["enum"][0] for q in asked} == {"forget"}
    assert {q["quoted"][0] for q in asked} == {text_of("trivia_1"), text_of("trivia_2")}
    forgotten = {i for o in run.ops if o.op == "forget" and o.applied for i in o.ids}
    assert forgotten == {ids["trivia_1"], ids["trivia_2"]}


def test_no_forgetting_question_is_asked_past_what_the_night_may_forget(tmp_path, clock):
    """§7 max_forget per night: once the night may forget nothing more, the faded records are
    not asked about (their answers would be refused); they wait, unasked, for the next night,
    which forgets them (measured on the 130-memory corpus: 12 questions asked, then refused)."""
    llm = DecidingLLM()
    mem, ids, s, first = night(tmp_path, clock, llm, max_forget=1)
    assert len(llm.asked("fate")) == 1  # the first answer "forget" used the night's budget
    gone = {i for o in first.ops if o.op == "forget" and o.applied for i in o.ids}
    assert len(gone) == 1 and gone < {ids["trivia_1"], ids["trivia_2"]}
    assert not [o for o in first.ops if o.op == "forget" and not o.applied]
    clock.advance(DAY)
    second = s.run()
    gone |= {i for o in second.ops if o.op == "forget" and o.applied for i in o.ids}
    assert gone == {ids["trivia_1"], ids["trivia_2"]}
    assert len(llm.asked("fate")) == 2
