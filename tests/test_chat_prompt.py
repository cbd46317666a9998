"""The chat prompt built from its inputs alone (issue 30): no store, no model. SPEC §3.1 (the
memory rule, owner turns only, in the stable prefix), §5 (the memory section), §8.1–§8.3 (the
summary after the stable prefix, then the live window), §8.10 (never invent), §8.11 (the day's
reminder)."""

from __future__ import annotations

from datetime import date

import pytest

from core.chat import prompt
from core.chat.memory_writer import STEP_RULE
from core.chat.retry import DONT_KNOW, REFRAME, noted, reframed
from core.chat.transcript import StoredMessage
from core.instructions import (
    ANSWER_FROM_MEMORY,
    MEMORY_RULE,
    NEVER_INVENT,
    NO_MEMORY_TOOLS_NOTE,
    NOTHING_RECALLED,
)
from core.memory.prompt_section import RECALLED_HEADER, REMINDER_HEADER, PromptSection
from core.reminders.schedule import Reminder

PERSONA = "You are Eva."
SAY_RU = "(Ответь по-русски.)"


def section(core: str = "", recalled: str = "") -> PromptSection:
    return PromptSection(core, recalled, (), (), 0, False)


def said(role: str, content: str, i: int = 1, **meta) -> StoredMessage:
    return StoredMessage(i, f"t{i}", role, content, "ok", len(content.split()), 0.0, meta)


@pytest.mark.parametrize(
    "learning, can_mutate, structured, rule",
    [
        (True, True, True, STEP_RULE),
        (True, True, False, MEMORY_RULE),
        (True, False, True, NO_MEMORY_TOOLS_NOTE),
        (True, False, False, NO_MEMORY_TOOLS_NOTE),
        (False, True, True, None),
        (False, False, False, None),
    ],
)
def test_the_memory_rule_is_for_turns_that_may_write(learning, can_mutate, structured, rule):
    """§3.1: the writing rule only where the turn may write (the step's or the tools'); a turn
    that may not is told so; learning off (§8.7) carries neither."""
    assert prompt.memory_rule(learning, can_mutate, structured) == rule


def test_the_system_prompt_is_persona_rule_never_invent_then_core_memory():
    """§3.1, §8.10: the stable prefix, in this order (the rule first made the default model
    take itself for a memory tool)."""
    s = prompt.system_prompt(PERSONA, MEMORY_RULE, section(core="# Memory\n1 | core"))
    assert s == "\n\n".join([PERSONA, MEMORY_RULE, NEVER_INVENT, "# Memory\n1 | core"])
    assert prompt.system_prompt(PERSONA, None, None) == f"{PERSONA}\n\n{NEVER_INVENT}"


def test_the_summary_sits_after_the_system_prompt_and_before_the_window():
    """§8.3, §8.9: the summary block follows the stable prefix; window messages are shown as the
    model saw them (their stored prompt form)."""
    window = [said("user", "hi", 1, prompt="recalled\n\nhi"), said("assistant", "Hello!", 2)]
    msgs = prompt.prefix_messages("SYS", "## Summary\nearlier", window)
    assert msgs == [
        {"role": "system", "content": "SYS"},
        {"role": "system", "content": "## Summary\nearlier", "summary": True},
        {"role": "user", "content": "recalled\n\nhi"},
        {"role": "assistant", "content": "Hello!"},
    ]
    assert prompt.prefix_messages("SYS", "", window)[1]["role"] == "user"  # no empty block


def test_evas_fixed_dont_know_and_its_question_are_not_shown_again():
    """§8.10: the canned "I don't know" (and the question it answered) leaves the window, or
    the model copies it as the answer to every later question."""
    window = [
        said("user", "Сколько мне лет?", 1),
        said("assistant", DONT_KNOW["ru"], 2),
        said("user", "Я Тимур.", 3),
        said("assistant", "Привет, Тимур!", 4),
    ]
    msgs = prompt.prefix_messages("SYS", "", window)
    assert [m["content"] for m in msgs] == ["SYS", "Я Тимур.", "Привет, Тимур!"]


@pytest.mark.parametrize(
    "text, sec, expected",
    [
        ("Я Тимур.", None, f"Я Тимур.\n\n{SAY_RU}"),
        (
            "Я Тимур.",
            section(recalled="## Recalled\n1 | x"),
            f"## Recalled\n1 | x\n\n## Message\nЯ Тимур.\n\n{SAY_RU}",
        ),
        ("Я Тимур.", section(), f"Я Тимур.\n\n{SAY_RU}"),
        (
            "Сколько мне лет?",
            section(),
            f"{RECALLED_HEADER}\n{NOTHING_RECALLED}\n{ANSWER_FROM_MEMORY}\n\n## Message\n"
            f"Сколько мне лет?\n\n{SAY_RU}",
        ),
    ],
)
def test_the_owners_message_as_the_model_sees_it(text, sec, expected):
    """§5, §8.10: recalled lines first, the message, the language line last; a question about
    the owner with nothing recalled is told so plainly."""
    assert prompt.user_prompt(text, sec, "ru") == expected


def test_the_days_reminder_comes_before_the_message():
    """§8.11: the first owner turn of the day carries the reminder, marked as one."""
    item = Reminder(7, "Позвонить маме", date(2026, 5, 23), None, 0, False, 3)
    m = prompt.user_message("Привет!", None, "ru", item)
    assert m == {
        "role": "user",
        "content": f"{REMINDER_HEADER}\ntoday: Позвонить маме\n\nПривет!\n\n{SAY_RU}",
    }


def test_build_messages_is_the_prefix_then_the_message():
    window = [said("user", "hi", 1), said("assistant", "Hello!", 2)]
    msgs = prompt.build_messages(
        persona=PERSONA,
        rule=None,
        section=None,
        summary="",
        window=window,
        user_text="How are you?",
        lang="en",
    )
    assert msgs == [
        *prompt.prefix_messages(prompt.system_prompt(PERSONA, None, None), "", window),
        {"role": "user", "content": "How are you?\n\n(Reply in English.)"},
    ]


def test_regenerate_keeps_the_stored_message_in_place():
    """§8.4: on regenerate the owner's message is already the window's last one; the fresh copy
    is dropped so the prompt is the one the first answer had."""
    msgs = [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "stored"},
        {"role": "user", "content": "fresh"},
    ]
    assert prompt.drop_current_user(msgs) == msgs[:2]
    first = [{"role": "system", "content": "SYS"}, {"role": "user", "content": "fresh"}]
    assert prompt.drop_current_user(first) == first


def test_the_memory_step_sees_the_prompt_without_retry_notes():
    """§3.1: the step continues the prompt as the next turn will carry it: a retry's notes
    dropped, the owner's message in its original form."""
    base = [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": f"Я Тимур.\n\n{SAY_RU}"},
    ]
    again = reframed(base, "Я Тимур.")
    assert REFRAME.format(text="Я Тимур.") in again[-1]["content"]
    assert prompt.for_writer(again) == base
    noted_twice = noted(noted(base, "note one"), "note two")
    assert prompt.for_writer(noted_twice) == base
    with_note = [
        *base,
        {"role": "assistant", "content": "echo", "retry": True},
        {"role": "system", "retry": True, "content": "note"},
    ]
    assert prompt.for_writer(with_note) == base


def test_never_invent_support_is_what_the_turn_was_shown_about_the_owner():
    """§8.10: memory, summaries, the reminder, the owner's own messages — not Eva's replies."""
    item = Reminder(7, "Позвонить маме", date(2026, 5, 23), None, 0, False, 3)
    window = [said("user", "Мне 34 года.", 1), said("assistant", "Тебе 40 лет!", 2)]
    s = prompt.support(
        "Сколько мне лет?",
        section(core="core line", recalled="recalled line"),
        "summary line",
        item,
        window,
    )
    for shown in (
        "core line",
        "recalled line",
        "summary line",
        "Позвонить маме",
        "Мне 34 года.",
        "Сколько мне лет?",
    ):
        assert shown in s
    assert "40" not in s
