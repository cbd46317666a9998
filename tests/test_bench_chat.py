"""bench.chat's per-call figures (issue 32 item 5: which model call of a turn breaks the KV
cache): each call's reuse, and the summary by kind of call from turn 3 on."""

from __future__ import annotations

from bench.chat import _by_purpose, _call
from core.chat.events import CallFigures


def test_a_call_reports_its_reuse_and_a_cut_off_call_none():
    assert _call(CallFigures("reply", 1000, 50))["reuse_share"] == 0.95
    assert _call(CallFigures("retry:echo:after", None, None))["reuse_share"] is None
    assert _call(CallFigures("reply", 0, 0))["reuse_share"] is None  # nothing measured is not 100 %


def test_reuse_by_call_counts_from_turn_3_by_kind_and_keeps_cut_off_calls():
    rows = [
        {"turn": 2, "calls": [_call(CallFigures("reply", 100, 100))]},  # before turn 3: not counted
        {
            "turn": 3,
            "calls": [
                _call(CallFigures("reply", 1000, 100)),
                _call(CallFigures("retry:echo:after", 1050, 60)),
            ],
        },
        {
            "turn": 4,
            "calls": [
                _call(CallFigures("reply", None, None)),
                _call(CallFigures("retry:invented:inside", 900, 9)),
            ],
        },
    ]
    out = _by_purpose(rows)
    assert out["reply"] == {"calls": 2, "cut_off": 1, "min_reuse": 0.9, "mean_reuse": 0.9}
    assert out["retry"]["calls"] == 2 and out["retry"]["min_reuse"] == 0.943
    assert out["retry"]["mean_reuse"] == round((0.943 + 0.99) / 2, 3)
