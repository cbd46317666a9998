"""bench.never_invent (issue 26, SPEC §8.10): the never-invent judge over true answers. A right
answer held as made up becomes "I don't know" in the app, so the bench counts every one — and a
made-up answer must still be held, or the count would say nothing."""

from __future__ import annotations

import json

from bench import never_invent

SAMPLE = {
    "sample_id": "conv-tiny",
    "conversation": {
        "speaker_a": "Alice",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 27 August, 2023",
        "session_1": [
            {
                "speaker": "Alice",
                "dia_id": "D1:1",
                "text": "I went to the park with my kids today.",
            },
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I baked bread."},
            {
                "speaker": "Alice",
                "dia_id": "D1:3",
                "text": "A friend made my bowl for my 18th birthday ten years ago.",
            },
        ],
    },
    "qa": [
        # true answers, each held before cba0c75: a month written in full, the owner's own number
        {
            "question": "When did Alice go to the park?",
            "answer": "27 August 2023",
            "evidence": ["D1:1"],
            "category": 2,
        },
        {
            "question": "When was Alice's 18th birthday?",
            "answer": "Alice's 18th birthday was ten years ago",
            "evidence": ["D1:3"],
            "category": 2,
        },
        # a made-up place: held
        {
            "question": "Where did Alice go with her kids?",
            "answer": "To Lisbon",
            "evidence": ["D1:1"],
            "category": 4,
        },
    ],
}


def test_true_answers_pass_and_a_made_up_one_is_held(tmp_path):
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    out = never_invent.run(data, "memory", others=2, seed=1, examples=10)
    assert out["n"] == 6  # three answers, bare and as a sentence
    assert out["held"] == 2, out["examples"]
    assert {e["question"] for e in out["examples"]} == {"Where did Alice go with her kids?"}
    assert out["by_check"] == {"unsupported": 2}
