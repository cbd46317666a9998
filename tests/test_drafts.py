"""Drafting memories for the owner (SPEC §8.5, issue 13 items 3–4): save from dialogue (≤ 20
messages → ≤ 5 drafts, one grammar-forced structured call) and initialize from a description
(≤ 1,000 characters). A scripted model for the orchestration, the packaged 0.5B model once for
the real call (marker real_model)."""

from __future__ import annotations

import pytest

from core import MemoryOpError
from core.chat import drafts as dr
from core.llm import ModelError
from tests.fake_llm import ScriptedLLM
from tests.model_kit import module_model

SELECTED = [
    ("user", "My sister Lena moved to Yerevan last month."),
    ("assistant", "Oh, how is she finding it?"),
    ("user", "She loves it. And remember: I'm allergic to penicillin."),
]


def test_one_structured_call_with_a_schema_of_at_most_five_drafts():
    """§8.5: one grammar-forced call whose schema admits at most 5 drafts of content, kind,
    importance and private; the selected messages are in its prompt, owner's and Eva's
    marked."""
    llm = ScriptedLLM(
        plans=[
            {
                "memories": [
                    {
                        "content": "Sister Lena moved to Yerevan",
                        "kind": "fact",
                        "importance": 4,
                        "private": True,
                    },
                    {
                        "content": "Allergic to penicillin",
                        "kind": "core",
                        "importance": 5,
                        "private": True,
                    },
                ]
            }
        ]
    )
    got = dr.draft_from_dialogue(llm, SELECTED, 500)
    assert got == [
        dr.Draft("Sister Lena moved to Yerevan", "fact", 4, True),
        dr.Draft("Allergic to penicillin", "core", 5, True),
    ]
    call = llm.json_calls[0]
    assert call["schema"]["properties"]["memories"]["maxItems"] == 5
    prompt = call["messages"][-1]["content"]
    assert "Owner: My sister Lena moved to Yerevan" in prompt and "Eva: Oh, how is" in prompt


def test_bad_drafts_are_dropped_never_saved():
    """§8.5 with §3.2's checks: a draft that is empty, too long, of an unknown kind or a repeat
    is dropped; at most five stay whatever the model says; importance is at least 3."""
    many = [
        {"content": f"Fact number {k}", "kind": "fact", "importance": 3, "private": False}
        for k in range(8)
    ]
    llm = ScriptedLLM(
        plans=[
            {
                "memories": [
                    {"content": "  ", "kind": "fact", "importance": 3, "private": False},
                    {"content": "x" * 501, "kind": "fact", "importance": 3, "private": False},
                    {"content": "Likes tea", "kind": "memo", "importance": 3, "private": False},
                    {"content": "Likes coffee", "kind": "fact", "importance": 1, "private": False},
                    {"content": "likes  COFFEE", "kind": "fact", "importance": 3, "private": False},
                    *many,
                ]
            }
        ]
    )
    got = dr.draft_from_dialogue(llm, SELECTED, 500)
    assert [d.content for d in got] == [
        "Likes coffee",
        "Fact number 0",
        "Fact number 1",
        "Fact number 2",
        "Fact number 3",
    ]
    assert got[0].importance == 3  # a kept draft is never trivia (sleep would forget it)


def test_selection_and_description_limits():
    """§8.5: at most 20 messages; a description of at most 1,000 characters; nothing selected
    or written is refused with the reason, before any model call."""
    llm = ScriptedLLM(plans=[])
    with pytest.raises(MemoryOpError, match="21 messages are selected; the limit is 20"):
        dr.draft_from_dialogue(llm, [("user", f"m{k}") for k in range(21)], 500)
    with pytest.raises(MemoryOpError, match="select at least one"):
        dr.draft_from_dialogue(llm, [("user", "  ")], 500)
    with pytest.raises(MemoryOpError, match="1001 characters; the limit is 1000"):
        dr.draft_from_description(llm, "a" * 1001, 500)
    assert llm.json_calls == []


def test_a_model_failure_reaches_the_caller():
    """The owner is told the drafting failed (the dialog says so), nothing is saved."""
    llm = ScriptedLLM(plans=[ModelError("timed out")])
    with pytest.raises(ModelError):
        dr.draft_from_description(llm, "I'm Sasha, a teacher in Kazan.", 500)


# ---------------------------------------------------------------------------- a real model


@pytest.fixture(scope="module")
def small_model():
    yield from module_model(n_ctx=2048)


@pytest.mark.real_model
def test_a_real_model_drafts_schema_valid_memories(small_model):
    """§8.5 on the packaged 0.5B model: the grammar-forced call returns JSON of the schema —
    at most 5 drafts, each a valid memory — for both flows. Asserts shape, not judgement."""
    got = dr.draft_from_dialogue(small_model, SELECTED, 500, timeout=600)
    assert len(got) <= 5
    assert all(
        isinstance(d, dr.Draft)
        and d.content
        and d.kind in ("fact", "event", "core")
        and 1 <= d.importance <= 5
        for d in got
    )
    init = dr.draft_from_description(
        small_model,
        "I'm Sasha, 34, a physics teacher in Kazan. I have a corgi named Bublik "
        "and I play chess on weekends.",
        500,
        timeout=600,
    )
    assert len(init) <= dr.MAX_INIT_DRAFTS
    assert all(d.content for d in init)
    # the model's own answer parsed (the schema guarantees it); print for the notes
    print("dialogue drafts:", got)
    print("init drafts:", init)
