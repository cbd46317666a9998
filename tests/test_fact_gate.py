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
