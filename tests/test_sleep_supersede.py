"""Sleep's supersessions as small decisions (SPEC §7.3 "resolve a contradiction in favour of
the fresher record"; issue 27 item 3): what is asked about an older record a newer one may
replace, in which order, what the supersession gate holds back, and how an answer read with
its probabilities replaces the older record. The model is tests.decide_kit.DecidingLLM."""

from __future__ import annotations

import re

from tests.decide_kit import DecidingLLM, _rec, live, text_of, use_like_memory
from tests.sleep_kit import ANCIENT, DAY, OLD, load, open_memory, sleeper


def test_a_supersession_asks_whether_the_older_is_still_true_with_worked_examples(tmp_path, clock):
    """§7.3 "resolve a contradiction in favour of the fresher record": the question is about
    the OLD record only ("given NEW, is OLD still true today?"), a two-word option and not the
    text of NEW; its instruction carries worked examples of both outcomes, Russian among them,
    and a Russian pair gets the same question. "still true" keeps both."""
    mem = open_memory(tmp_path, clock)
    ids = load(
        mem,
        {
            "old": {"content": "Хозяин курит", "created_at": OLD - 200 * DAY},
            "new": {"content": "Хозяин бросил курить в январе"},
        },
    )
    llm = DecidingLLM()
    sleeper(mem, llm, clock, review="decide").run()
    (q,) = llm.asked("old")
    assert q["schema"]["properties"]["old"]["enum"] == ["still true", "no longer true"]
    assert q["quoted"] == ["Хозяин курит", "Хозяин бросил курить в январе"]
    from core.sleep.questions import STILL_TRUE

    examples = [line for line in STILL_TRUE.splitlines() if line.startswith("OLD «")]
    assert any(e.endswith("no longer true") for e in examples)
    assert any("→ still true" in e for e in examples)
    assert any(re.search("[а-я]", e) for e in examples)
    assert ids["old"] in live(mem) and ids["new"] in live(mem)  # "still true": both stay


def test_a_change_is_decided_before_the_older_record_is_merged_with_a_look_alike(tmp_path, clock):
    """§7.3 "resolve a contradiction in favour of the fresher record": supersessions are asked
    before duplicates. Asked the other way round, the two Kazan records were merged first and
    the move was never asked about (a merged record is not asked again): the merged Kazan
    record stayed beside the Moscow one."""
    old, dup, new = (
        text_of("city_old"),
        "Owner's flat is near the Kremlin, he lives in Kazan",
        text_of("city_new"),
    )
    mem = open_memory(tmp_path, clock)
    ids = load(
        mem,
        {
            "old": {"content": old, "created_at": OLD - 200 * DAY},
            "dup": {"content": dup, "created_at": OLD - 150 * DAY},
            "new": {"content": new},
        },
    )
    llm = DecidingLLM(same=[(old, dup)], replaces=[(old, new), (dup, new)])
    sleeper(mem, llm, clock, review="decide").run()
    now = live(mem)
    assert ids["new"] in now
    assert not [r for r in now.values() if "Kazan" in r.content and "until" not in r.content]


# ---------------------------------------------------------------------------- issue 27 item 3
# "Ask only what can be true, and trust only a confident answer": a night answered the
# supersession question "yes" 8 times of 8, dated a current fact and an event, took a duplicate
# for a supersession and never asked about a private/public twin.


def test_an_event_is_never_dated_or_archived_as_replaced(tmp_path, clock):
    """Issue 27 item 3, "an event is never dated as history" (a night rewrote "Хозяин пробежал
    5 km утром в понедельник" as "(до 2026-05-20) …"): an important event — a supersession
    would keep it as dated history — beside a newer fact that changes its number is not asked
    "is it still true?", though the model would answer "no longer true"; it stays as it was."""
    ran = "Хозяин бегает по утрам в парке Горького, пробежал 5 км"
    habit = "Хозяин теперь бегает по утрам в парке Горького по 10 км"
    mem = open_memory(tmp_path, clock)
    ids = load(
        mem,
        {
            "ran": {"content": ran, "kind": "event", "importance": 4, "created_at": OLD - 30 * DAY},
            "habit": {"content": habit},
        },
    )
    llm = DecidingLLM(replaces=[(ran, habit)])
    run = sleeper(mem, llm, clock, review="decide").run()
    review = next(p for p in run.phases if p.name == "review")
    assert review.plans, "the two records must be reviewed together (a cluster)"
    assert not llm.asked("old")
    now = live(mem)
    assert now[ids["ran"]].content == ran and now[ids["habit"]].content == habit
    assert not [o for o in run.ops if o.op in ("rewrite", "resolve")]


def test_a_supersession_below_the_gate_is_never_asked_nor_applied(tmp_path, clock, monkeypatch):
    """Issue 27 item 3, "a yes below a calibrated threshold does nothing": with USE vectors each
    supersession the arithmetic proposes is scored by the learned gate; below its threshold
    the model is not asked — nothing is dated or archived, whatever it would have answered —
    and the pair is journaled as not asked, with its probability. The same night with the
    threshold at 0 asks and applies it: the gate is what holds it back."""
    from core.sleep import gate

    old = "Хозяин играет в теннис по средам в клубе Динамо"
    new = "Хозяин играет в теннис по пятницам в клубе Динамо"
    for threshold, asked in ((1.0, False), (0.0, True)):
        monkeypatch.setattr(gate, "THRESHOLD", threshold)
        mem = use_like_memory(tmp_path, clock, f"gate{threshold}.db")
        ids = load(
            mem, {"old": {"content": old, "created_at": OLD - 100 * DAY}, "new": {"content": new}}
        )
        llm = DecidingLLM(replaces=[(old, new)])
        run = sleeper(mem, llm, clock, review="decide").run()
        review = next(p for p in run.phases if p.name == "review")
        assert bool(llm.asked("old")) is asked
        assert (ids["old"] in live(mem)) is not asked  # "no longer true" archives it
        if not asked:
            (gated,) = [g for p in review.plans for g in p.get("not_asked", [])]
            assert gated["ids"] == [ids["old"], ids["new"]] and gated["p"] < 1.0
            assert "below" in gated["not_asked"]
            assert not [o for o in run.ops if o.op in ("rewrite", "resolve")]
        else:
            (d,) = [d for p in review.plans for d in p["decisions"] if d["kind"] == "supersede"]
            assert d["answer"] == "yes" and 0.0 <= d["p"] <= 1.0
        mem.close()


def test_a_pair_the_duplicate_test_would_merge_is_asked_same_fact_first(tmp_path, clock):
    """Issue 27 item 3, "a pair that the duplicate test would merge is asked 'same fact?'
    first" (a night archived "Сестру хозяина зовут Марина, она ветеринар." as replaced by
    "Марина — сестра хозяина, работает ветеринаром в Казани."): a newer record that repeats
    the older with a detail and a change word ("now") is asked "same fact?" before "is the
    older still true?"; "same fact" merges them into the richer text and the supersession is
    never asked — nothing is dated or archived as replaced. Answered "different facts", the
    supersession question follows."""
    old = "The owner's son Timur plays hockey"
    new = "The owner's son Timur now plays hockey for the school team"
    for same in (True, False):
        mem = open_memory(tmp_path, clock, name=f"same{same}.db")
        ids = load(
            mem, {"old": {"content": old, "created_at": OLD - 100 * DAY}, "new": {"content": new}}
        )
        llm = DecidingLLM(same=[(old, new)] if same else [], replaces=[(old, new)])
        run = sleeper(mem, llm, clock, review="decide").run()
        keys = [q["key"] for q in llm.questions if q["key"] in ("same", "old")]
        if same:
            assert keys == ["same"]
            now = live(mem)
            assert [r.content for r in now.values()] == [new]
            assert [o.op for o in run.ops if o.applied] == ["merge"]
        else:
            assert keys == ["same", "old"]
            assert ids["old"] not in live(mem)  # "no longer true": archived as replaced
        mem.close()
    # the pair: the name the newer opens with is no changed name
    from core.sleep.candidates import DUPLICATE, propose
    from tests.test_sleep_candidates import edges, rec

    corpus = {
        1: rec(1, "Сестру хозяина зовут Марина, она ветеринар.", days_ago=200),
        2: rec(2, "Марина — сестра хозяина, работает ветеринаром в Казани.", days_ago=20),
    }
    assert [c.kind for c in propose([1, 2], corpus, edges((1, 2, 0.7)))] == [DUPLICATE]


def test_a_doubtful_supersession_counts_only_when_asked_in_the_other_order_too():
    """Issue 27 item 3 ("a yes below a calibrated threshold does nothing", by a second
    formulation): a supersession the gate scores below CONFIRM is asked again with its two lines
    in the other order, and only a second "no longer true" replaces the older record; above
    CONFIRM one answer is enough."""
    from core.sleep import decisions
    from core.sleep.candidates import SUPERSEDE, Candidate
    from core.sleep.gate import CONFIRM, THRESHOLD

    old = _rec(1, "The owner's sister Polina lives in Kazan")
    new = _rec(2, "Polina now works as a pharmacist")
    new = type(new)(
        **{**new.__dict__, "created_at": ANCIENT + 30 * DAY, "updated_at": ANCIENT + 30 * DAY}
    )
    corpus = {1: old, 2: new}
    asked: list[str] = []

    def ask(msgs, schema):
        user = msgs[-1]["content"]
        asked.append(user)
        first_line_old = user.startswith("OLD")
        return {"old": "no longer true" if first_line_old else "still true"}, None, 0.1

    def decide(p: float):
        asked.clear()
        c = Candidate(SUPERSEDE, (1, 2), 0.9, "the newer record says something changed", p=p)
        (got,) = decisions.decide_units(
            [[c]], corpus, ANCIENT + 31 * DAY, ask, decisions.Tally(), 500
        )
        return got.ops

    assert THRESHOLD <= (THRESHOLD + CONFIRM) / 2 < CONFIRM
    assert decide((THRESHOLD + CONFIRM) / 2) == []  # the other order disagreed: nothing
    assert len(asked) == 2 and asked[1].startswith("NEW")
    ops = decide(CONFIRM + 0.05)  # confident: one answer, applied
    assert len(asked) == 1 and [o["op"] for o in ops] in (["resolve"], ["rewrite"])


def test_a_supersession_read_with_probabilities_needs_a_sure_no_longer_true():
    """Issue 27 item 3 ("the answer is read with its probability … a yes below a calibrated
    threshold does nothing"): with a model that says how sure it is, a pair the gate doubts is
    read in both orders and replaced only when their mean reaches SURE_NO_LONGER — "no longer
    true" the likelier option in both orders (0.52, a "yes" to greedy decoding) does nothing;
    a pair the gate is sure of is read once and needs the likelier option. The decision
    journaled is the verdict; the model's option stays as "said"."""
    from core.sleep import decisions
    from core.sleep.candidates import SUPERSEDE, Candidate
    from core.sleep.gate import CONFIRM, THRESHOLD
    from core.sleep.questions import PROBABILITIES

    old = _rec(1, "The owner works at a bakery on Lenina street")
    new = _rec(2, "The owner now works at the central library")
    new = type(new)(
        **{**new.__dict__, "created_at": ANCIENT + 30 * DAY, "updated_at": ANCIENT + 30 * DAY}
    )
    corpus = {1: old, 2: new}
    asked: list[str] = []
    sure = {"OLD": 0.0, "NEW": 0.0}  # P("no longer true") by the line shown first

    def ask(msgs, schema):
        user = msgs[-1]["content"]
        asked.append(user)
        p = sure[user[:3]]
        best = "no longer true" if p > 0.5 else "still true"
        probs = {"still true": 1 - p, "no longer true": p}
        return {"old": best, PROBABILITIES: probs}, None, 0.1

    def decide(gate_p: float, first: float, swapped: float):
        asked.clear()
        sure.update(OLD=first, NEW=swapped)
        c = Candidate(SUPERSEDE, (1, 2), 0.9, "a name changed", p=gate_p)
        (got,) = decisions.decide_units(
            [[c]], corpus, ANCIENT + 31 * DAY, ask, decisions.Tally(), 500
        )
        return got

    def replaced(got) -> bool:
        return [o["op"] for o in got.ops] in (["resolve"], ["rewrite"])

    doubtful, confident = (THRESHOLD + CONFIRM) / 2, CONFIRM + 0.05
    assert decisions.SURE_NO_LONGER > 0.52
    got = decide(doubtful, 0.52, 0.52)  # "no longer true" in both orders, never sure enough
    assert got.ops == [] and len(asked) == 2 and asked[1].startswith("NEW")
    assert got.log[-1]["answer"] == "both true" and got.log[-1]["said"] == "yes"
    assert got.log[-1]["no_longer"] == 0.52
    got = decide(doubtful, 0.7, 0.3)  # sure in one order only: the mean falls short
    assert got.ops == [] and len(asked) == 2
    got = decide(doubtful, 0.6, 0.58)
    assert replaced(got) and len(asked) == 2 and got.log[-1]["answer"] == "yes"
    got = decide(confident, 0.48, 0.9)  # one order only, and it says still true
    assert got.ops == [] and len(asked) == 1
    got = decide(confident, 0.52, 0.0)
    assert replaced(got) and len(asked) == 1
