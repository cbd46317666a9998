"""The sleep benchmarks run and score what they claim (SPEC §7: "a second night on an unchanged
corpus costs zero model calls"; the quality bench's scores are checked with a planner that
plans exactly the labelled answer, and with one that changes nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import sleep as bench_sleep
from bench import sleep_quality

CORPUS = Path(__file__).resolve().parent.parent / "bench" / "data" / "sleep_corpus.json"


def test_scale_bench_second_night_costs_no_calls():
    """§7.3 at a few hundred synthetic records: clustering finds clusters, the first night
    calls the (no-op) planner, the second night on the unchanged corpus calls it zero times."""
    r = bench_sleep.bench_size(400, seed=3, dim=64)
    assert r["clustering"]["clusters"] > 0 and r["night1"]["model_calls"] > 0
    assert r["night2"]["model_calls"] == 0 and r["second_night_zero_calls"]


def test_quality_bench_scores_the_oracle_at_the_ceiling(capsys):
    """The quality bench's metrics: a planner doing exactly what the corpus expects merges
    every duplicate, resolves every contradiction, derives every run, forgets every trivia
    and loses nothing; the no-op baseline does none of it and loses nothing either."""
    assert sleep_quality.main(["--data", str(CORPUS), "--model", "oracle"]) == 0
    oracle = json.loads(capsys.readouterr().out)
    assert (oracle["duplicates_merged"], oracle["contradictions_resolved"],
            oracle["events_derived"], oracle["trivia_forgotten"]) == (1.0, 1.0, 1.0, 1.0)
    assert oracle["wrongly_lost"] == 0 and oracle["model_calls"] > 0
    assert sleep_quality.main(["--data", str(CORPUS)]) == 0
    noop = json.loads(capsys.readouterr().out)
    assert noop["duplicates_merged"] == 0 and noop["wrongly_lost"] == 0
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    langs = {any("а" <= ch <= "я" for ch in m["content"].lower()) for m in data["memories"]}
    assert langs == {True, False} and 30 <= len(data["memories"]) <= 60
