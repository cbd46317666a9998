"""bench.owner_questions (issue 26, never invent): its labelled set is well formed and split, and
its verdicts tell an answer, an honest "I don't know", a wrong answer and an invention apart."""

from __future__ import annotations

from bench.owner_questions import figures, load_owners, select, verdict


def test_the_set_is_labelled_and_split():
    """Every answer index names a line of its owner; an unknown question has no gold, a known
    one a lowercase group per fact; dev and test hold half the owners each, every language in
    both, and unknown questions are a third of each split at least."""
    owners = load_owners()
    assert len(owners) >= 40 and len({o["id"] for o in owners}) == len(owners)
    for o in owners:
        assert 8 <= len(o["memories"]) <= 16
        for q in o["questions"]:
            assert all(0 <= i < len(o["memories"]) for i in q["answers"])
            if q["answers"]:
                assert q["gold"] and all(g and all(a == a.lower() for a in g) for g in q["gold"])
            else:
                assert q["gold"] == []
    for split in ("dev", "test"):
        part = select(owners, split, None)
        assert len(part) == len(owners) // 2
        assert {o["lang"] for o in part} == {"en", "ru", "mixed"}
        questions = [q for o in part for q in o["questions"]]
        unknown = sum(not q["answers"] for q in questions)
        assert unknown >= len(questions) / 3


def test_the_verdicts():
    known = {"answers": [0], "gold": [["paramedic"], ["leeds"]]}
    unknown = {"answers": [], "gold": []}
    assert verdict("You're a paramedic in Leeds.", known) == "answered"
    assert verdict("You're a paramedic.", known) == "wrong"
    assert verdict("I don't know that. Will you tell me?", known) == "dont_know"
    assert verdict("Этого я не знаю: в моей памяти об этом ничего нет.", unknown) == "admitted"
    assert verdict("You drive trams in Edinburgh.", unknown) == "invented"


def test_the_figures_are_shares_of_their_kind():
    rows = [
        {
            "unknown": False,
            "verdict": "answered",
            "first_token_s": 1.0,
            "seconds": 2.0,
            "model_calls": 1,
        },
        {
            "unknown": False,
            "verdict": "wrong",
            "first_token_s": 3.0,
            "seconds": 4.0,
            "model_calls": 2,
        },
        {
            "unknown": True,
            "verdict": "invented",
            "first_token_s": None,
            "seconds": 1.0,
            "model_calls": 1,
        },
    ]
    out = figures(rows)
    assert out["known"] == {"n": 2, "answered": 0.5, "dont_know": 0.0, "wrong": 0.5}
    assert out["unknown"] == {"n": 1, "admitted": 0.0, "invented": 1.0}
    assert out["seconds_per_question"] == round(7 / 3, 3)
    assert out["first_token"]["n"] == 2
