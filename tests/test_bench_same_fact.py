"""bench.same_fact (issue 27 item 3: "same fact?" measured on labelled pairs): its JSON keys,
and that a pair is merged only when the night's arithmetic asks it and the model's probability
reaches the bar. No model: the rows come scored."""

from __future__ import annotations

import json

from bench import same_fact
from core.sleep import decisions


def row(a: str, b: str, same: bool, p: float, part: str = "dev") -> dict:
    kind = "paraphrase" if same else "different_value"
    return {
        "a": a,
        "b": b,
        "same": same,
        "kind": kind,
        "part": part,
        "p": p,
        "p_swapped": p,
        "closeness": 0.7,
        "across": False,
    }


def test_a_pair_is_merged_only_when_asked_and_sure(tmp_path, capsys):
    rows = [
        row(
            "The owner's dog is a beagle named Toffee",
            "Owner has a beagle called Toffee",
            True,
            decisions.SAME_FACT + 0.1,
        ),
        row(
            "The owner is allergic to cats",
            "Owner has a cat allergy",
            True,
            decisions.SAME_FACT - 0.05,
        ),
        # another number: proposed as a change, never asked "same fact?" however sure the model
        row("The owner's gym is at 7 pm", "The owner's gym is at 8 pm", False, 0.9),
        row(
            "The owner drinks coffee",
            "The owner drinks tea",
            False,
            decisions.SAME_FACT + 0.2,
            "test",
        ),
    ]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"rows": rows}), encoding="utf-8")
    assert same_fact.main(["--rows", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 4 and out["rule"] == {"SAME_FACT": decisions.SAME_FACT}
    dev, test = out["parts"]["dev"], out["parts"]["test"]
    assert dev["same_found"] == 0.5 and dev["apart_kept"] == 1.0 and dev["precision"] == 1.0
    assert dev["question_only"]["apart_kept"] == 0.0  # the model alone would have merged it
    assert test["precision"] == 0.0 and test["apart_kept"] == 0.0
    assert [r["decided_same"] for r in out["rows"]] == [True, False, False, True]
