"""bench.memory_step (issue 26): the labelled set is well-formed, the gate-only mode runs, and the
metrics compute on a scripted model (no real model here)."""

from __future__ import annotations

import json
import re

import pytest

from bench import memory_step as ms
from tests.fake_llm import ScriptedLLM

PER_LANGUAGE = 260
KEYS = (
    "recall",
    "small_talk_kept",
    "facts_kept",
    "importance_agreement",
    "wrong_forgets",
    "corrections_applied",
    "seconds_per_message",
)


def _file(lang: str):
    path = ms.DATA_DIR / f"memory_step_{lang}.json"
    if not path.exists():
        pytest.skip(f"{path.name} is not here yet")
    return path


@pytest.mark.parametrize("lang", ms.LANGS)
def test_data_file_is_well_formed(lang):
    data = json.loads(_file(lang).read_text(encoding="utf-8"))
    assert isinstance(data.get("about"), str) and len(data["about"]) > 200
    items = data["items"]
    assert len(items) >= PER_LANGUAGE
    for it in items:
        assert ms.check_item(it) == [], it["id"]
        assert it["lang"] == lang
    ids = [it["id"] for it in items]
    assert len(set(ids)) == len(ids)
    for split in ms.SPLITS:
        cats = {it["category"] for it in items if it["split"] == split}
        assert cats == set(ms.CATEGORIES), (split, set(ms.CATEGORIES) - cats)
    # what the set is for: facts, nothing-to-keep, corrections and forgets with decoys
    assert sum(1 for it in items if not it["keep"] and not it.get("forget")) >= 60
    for it in items:
        if it["category"] == "forget":
            assert len(it["before"]) >= 3 and it.get("forget")
        if it["category"] == "correction":
            assert it.get("corrects") is not None


def test_all_items_together():
    items = ms.load_items()
    ids = [it["id"] for it in items]
    assert len(set(ids)) == len(ids)
    langs = {it["lang"] for it in items}
    assert len(items) >= PER_LANGUAGE * len(langs)
    if langs == set(ms.LANGS):
        assert len(items) >= 500


def test_check_item_catches_mistakes():
    good = {
        "id": "x",
        "lang": "en",
        "split": "dev",
        "category": "forget",
        "before": [{"content": "a", "kind": "fact", "importance": 3}],
        "say": "forget a",
        "keep": [],
        "importance": None,
        "forget": [0],
    }
    assert ms.check_item(good) == []
    assert ms.check_item(good | {"forget": [1]})
    assert ms.check_item(good | {"category": "chit-chat"})
    assert ms.check_item(good | {"split": "train"})
    assert ms.check_item(good | {"keep": [["Tbilisi"]], "importance": 4})  # not lowercase
    assert ms.check_item(good | {"keep": [[]], "importance": 4})
    assert ms.check_item(good | {"keep": [["x"]], "importance": None})
    assert ms.check_item(good | {"corrects": 0})  # a correction that keeps nothing


def test_limit_is_per_split_and_round_robin_over_categories():
    items = [
        {"id": f"{s}{c}{k}", "split": s, "lang": "en", "category": c}
        for s in ms.SPLITS
        for c in ("a", "b", "c")
        for k in range(3)
    ]
    got = ms.select(items, "all", "all", 4)
    assert [it["id"] for it in got] == [
        "deva0",
        "devb0",
        "devc0",
        "deva1",
        "testa0",
        "testb0",
        "testc0",
        "testa1",
    ]
    assert {it["split"] for it in ms.select(items, "test", "all", 2)} == {"test"}


def test_gate_only_prints_the_keys(capsys):
    assert ms.main(["--gate-only", "--lang", "en"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "gate-only" and out["gate_name"] == "app"
    for block in ("dev", "test", "overall"):
        g = out[block]
        for key in ("gate_recall", "gate_small_talk_pass", "entry_recall", "entry_small_talk_pass"):
            assert 0.0 <= g[key] <= 1.0
        assert set(g["by_category"]) == set(ms.CATEGORIES)
    assert out["dev"]["n"] + out["test"]["n"] == out["overall"]["n"] == out["items_total"]
    assert all(it["gate"] != it["fact"] for it in out["items"])  # misses only
    # the "all" gate lets every message through: the ceiling of gate recall
    assert ms.main(["--gate-only", "--gate", "all", "--items", "none"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["overall"]["gate_recall"] == out["overall"]["gate_small_talk_pass"] == 1.0


def test_gates_are_pluggable():
    ms.register_gate("never", lambda ctx: lambda text: False)
    try:
        gate = ms.make_gate("never", ms.GateContext("none"))
        assert gate("My name is Tom.") is False
        assert ms.entry(gate, "Please remember that I'm left-handed.")  # a request passes
    finally:
        del ms.GATES["never"]
    with pytest.raises(ValueError):
        ms.make_gate("nope", ms.GateContext("none"))


class SavingLLM(ScriptedLLM):
    """The memory step's model, scripted to keep the owner's whole message: it saves it, or
    updates / forgets the first memory it is offered when that is the op the schema allows."""

    def generate_json(self, messages, schema, timeout=None, max_tokens=None, cancel=None):
        self.json_calls.append({"schema": schema})
        said = re.search(r"«(.*?)»", messages[-1]["content"], re.S).group(1)
        items = schema["properties"]["ops"]["items"]
        variants = {v["properties"]["op"]["const"]: v for v in items.get("anyOf", [items])}
        if "update" in variants:
            rid = variants["update"]["properties"]["id"]["enum"][0]
            return {"ops": [{"op": "update", "id": rid, "content": said}]}
        if "forget" in variants:
            rid = variants["forget"]["properties"]["id"]["enum"][0]
            return {"ops": [{"op": "forget", "id": rid, "why": "asked"}]}
        return {
            "ops": [
                {"op": "save", "content": said, "kind": "fact", "importance": 4, "private": False}
            ]
        }


ITEMS = [
    {
        "id": "t-1",
        "lang": "en",
        "split": "dev",
        "category": "family_friend_pet",
        "before": [],
        "say": "My brother Pete is a firefighter in Denver.",
        "keep": [["pete"], ["denver"]],
        "importance": 4,
    },
    {
        "id": "t-2",
        "lang": "en",
        "split": "dev",
        "category": "small_talk",
        "before": [],
        "say": "good morning :)",
        "keep": [],
        "importance": None,
    },
    {
        "id": "t-3",
        "lang": "en",
        "split": "test",
        "category": "correction",
        "before": [{"content": "I live in Leeds.", "kind": "fact", "importance": 4}],
        "say": "I moved, I live in Sheffield now.",
        "keep": [["sheffield"]],
        "importance": 5,
        "corrects": 0,
    },
    {
        "id": "t-4",
        "lang": "en",
        "split": "test",
        "category": "forget",
        "before": [
            {"content": "I bought a road bike, a Trek.", "kind": "event", "importance": 3},
            {"content": "My grandmother turns 90 on Saturday.", "kind": "event", "importance": 5},
            {"content": "I walk to work along the river.", "kind": "fact", "importance": 3},
        ],
        "say": "Forget the bike thing, I returned it.",
        "keep": [],
        "importance": None,
        "forget": [0],
    },
]


def test_step_metrics_on_a_scripted_model():
    for it in ITEMS:
        assert ms.check_item(it) == []
    llm = SavingLLM()
    out = ms.run(ITEMS, gate_name="all", model=llm, embedder_spec="none")
    assert out["mode"] == "step"
    dev, test = out["dev"], out["test"]
    for block in (dev, test, out["overall"]):
        assert set(KEYS) <= set(block)
        assert block["seconds_per_message"] > 0
    # dev: the fact is kept whole, and the small talk is kept too (the gate lets all through)
    assert dev["recall"] == dev["facts_kept"] == 1.0
    assert dev["small_talk_kept"] == 1.0
    assert dev["importance_agreement"] == 1.0  # 4 against 4
    assert dev["by_category"]["small_talk"]["small_talk_kept"] == 1.0
    # test: the correction updated the old record in place; the forget took only the bike
    assert test["corrections_applied"] == 1.0 and test["recall"] == 1.0
    assert test["wrong_forgets"] == 0 and test["forgets_applied"] == 1.0
    assert test["small_talk_kept"] == 0.0  # the forget item saved nothing
    assert out["overall"]["step_calls"] == 1.0  # one JSON call per message
    rows = {r["id"]: r for r in out["items"]}
    assert rows["t-3"]["updated"] and rows["t-3"]["correction_applied"] is True
    assert rows["t-4"]["archived"] == [0]


def test_step_with_the_app_gate_saves_no_small_talk():
    out = ms.run(ITEMS[:2], model=SavingLLM(), embedder_spec="none")
    assert out["dev"]["recall"] == 1.0 and out["dev"]["small_talk_kept"] == 0.0
    assert out["dev"]["step_calls"] == 0.5  # "good morning" asks no model


def test_judge_counts_wrong_forgets_and_parallel_corrections():
    item = ITEMS[3]
    row = {
        "saved": [],
        "updated": [],
        "archived": [0, 1],
        "live": ["I walk to work."],
        "before_live_unchanged": [2],
    }
    j = ms.judge(item, row)
    assert j["wrong_forgets"] == 1 and j["forgets_applied"] == 1
    corr = ITEMS[2]
    parallel = {
        "saved": [{"content": "I live in Sheffield now.", "importance": 5}],
        "updated": [],
        "archived": [],
        "before_live_unchanged": [0],
        "live": ["I live in Leeds.", "I live in Sheffield now."],
    }
    j = ms.judge(corr, parallel)
    assert j["recalled"] is True and j["correction_applied"] is False


def test_judge_counts_a_private_message_kept_public_as_a_leak():
    """SPEC §2 (private: health, money, a secret …): a private item is marked only when every
    record kept from it is private; a public item saved private is counted as over-marking."""
    item = {**ITEMS[0], "keep": [["nurse"]], "private": True}
    leak = {"saved": [{"content": "I'm a nurse.", "importance": 4, "private": False}]}
    row = {"updated": [], "archived": [], "live": [], "before_live_unchanged": [], **leak}
    assert ms.judge(item, row)["private_ok"] is False
    kept = {**row, "saved": [{"content": "I'm a nurse.", "importance": 4, "private": True}]}
    assert ms.judge(item, kept)["private_ok"] is True
    public = {**item, "private": False}
    assert ms.judge(public, kept)["private_over"] is True
    assert ms.judge(public, row)["private_over"] is False
    rows = [
        {
            "judge": ms.judge(item, row),
            "seconds": 1,
            "step_seconds": 1,
            "model_calls": 1,
            "step_calls": 1,
        },
        {
            "judge": ms.judge(item, kept),
            "seconds": 1,
            "step_seconds": 1,
            "model_calls": 1,
            "step_calls": 1,
        },
    ]
    assert ms.step_metrics(rows)["private_marked"] == 0.5
    assert ms.check_item({**item, "private": "yes"}) == ["private 'yes' is not true/false"]
