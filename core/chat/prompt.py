"""The prompt of a chat turn (SPEC §1, §3.1, §5, §8.1–§8.3, §8.10, §8.11), built from its
inputs alone: no store, no model. Stable first, so the model's KV cache is reused from turn to
turn:

1. system — the persona, Eva's memory rule (owner turns only), the never-invent rule and the
   core/pinned part of the memory section (the tools this turn is offered sit here too, in the
   chat template);
2. the rolling summary of what scrolled out of the window (§8.3, :mod:`core.chat.summaries`): it
   changes only when a summary does, so the cache survives until then;
3. the live window of earlier messages, each as the model saw it;
4. the day's reminder (§8.11, the day's first owner turn), the recalled part of the memory
   section for this message (or the plain "nothing recalled" note), then the message and the
   language to answer in.
"""

from __future__ import annotations

from collections.abc import Sequence

from core import language
from core.chat.invention import asks_about_owner
from core.chat.memory_writer import STEP_RULE
from core.chat.retry import CANNED_ACKNOWLEDGE, is_dont_know
from core.chat.transcript import StoredMessage
from core.instructions import (
    ANSWER_FROM_MEMORY,
    MEMORY_RULE,
    NEVER_INVENT,
    NO_MEMORY_TOOLS_NOTE,
    NOTHING_RECALLED,
)
from core.llm import Message
from core.memory import prompt_section as ps
from core.memory.prompt_section import RECALLED_HEADER, PromptSection
from core.reminders.schedule import Reminder


def memory_rule(learning: bool, can_mutate: bool, structured: bool) -> str | None:
    """The memory part of the system prompt: how Eva writes memory when this turn may (the
    structured step's rule or the tools' rule), that she cannot when it may not, or nothing
    when learning is off (§8.7)."""
    if not learning:
        return None
    if can_mutate:
        return STEP_RULE if structured else MEMORY_RULE
    return NO_MEMORY_TOOLS_NOTE


def system_prompt(persona: str, rule: str | None, section: PromptSection | None) -> str:
    """Persona first (who she is), then the memory rule, then the never-invent rule and core
    memory — all stable, the cached prefix. With the rule first, the small default model took
    itself for a memory tool and echoed the owner (tried in a real session)."""
    parts = [persona]
    if rule is not None:
        parts.append(rule)
    parts.append(NEVER_INVENT)
    if section is not None and section.core_text:
        parts.append(section.core_text)
    return "\n\n".join(parts)


def prefix_messages(system: str, summary: str, window: Sequence[StoredMessage]) -> list[Message]:
    """The system prompt, the summary block (when there is one) and the live window: the part
    of the next prompt that is already known before the owner writes."""
    messages: list[Message] = [{"role": "system", "content": system}]
    if summary:
        messages.append({"role": "system", "content": summary, "summary": True})
    for m in window:
        if m.role == "assistant" and is_dont_know(m.content):
            # Eva's fixed "I don't know" (plain or quoting a record) is not shown to the model
            # again, nor the question it answered (measured on an unseen scenario: after one,
            # the default model copied it word for word as the answer to every later question,
            # 0 of 10 known questions answered in that run)
            if messages[-1]["role"] == "user":
                messages.pop()
            continue
        content = m.meta.get("prompt", m.content)
        # nor her fixed acknowledgement of a statement (the statement stays): the model copied
        # it as its reply to the next statements, each copy held as a repeat and asked again
        # (bench.companion, unseen scenario e, default model: after the first one, 3 of the
        # chat's next 4 statements)
        ack = next((a for a in CANNED_ACKNOWLEDGE if content.startswith(a)), None)
        if m.role == "assistant" and ack is not None:
            content = content[len(ack) :].strip()
            if not content:
                continue
        messages.append({"role": m.role, "content": content})
    return messages


def user_prompt(user_text: str, section: PromptSection | None, lang: str | None = None) -> str:
    """The last user message as the model sees it: recalled memory first, then the message,
    then which language to answer in (close to the generation point, where a small model
    still heeds it)."""
    say = language.reply_instruction(lang)
    body = f"{user_text}\n\n{say}" if say else user_text
    if section is None:
        return body
    if section.recalled_text:
        return f"{section.recalled_text}\n\n## Message\n{body}"
    if not asks_about_owner(user_text):
        return body
    # a question about the owner and nothing recalled: said plainly (§8.10). Not after recalled
    # lines: measured on companion_a with the default model, "answer only from these lines"
    # after them made it say "не знаю" with the answer among them (known answers 7/8 → 4/8)
    return f"{RECALLED_HEADER}\n{NOTHING_RECALLED}\n{ANSWER_FROM_MEMORY}\n\n## Message\n{body}"


def user_message(
    user_text: str,
    section: PromptSection | None,
    lang: str | None,
    reminder: Reminder | None = None,
) -> Message:
    """The owner's message as the model sees it, with the day's reminder before it (§8.11)."""
    content = user_prompt(user_text, section, lang)
    if reminder is not None:
        content = f"{ps.reminder_block(reminder.content, reminder.when)}\n\n{content}"
    return {"role": "user", "content": content}


def build_messages(
    *,
    persona: str,
    rule: str | None,
    section: PromptSection | None,
    summary: str,
    window: Sequence[StoredMessage],
    user_text: str,
    lang: str | None,
    reminder: Reminder | None = None,
) -> list[Message]:
    """The whole prompt of a turn, from its inputs."""
    messages = prefix_messages(system_prompt(persona, rule, section), summary, window)
    messages.append(user_message(user_text, section, lang, reminder))
    return messages


def support(
    user_text: str,
    section: PromptSection | None,
    summary: str,
    reminder: Reminder | None,
    window: Sequence[StoredMessage],
) -> str:
    """Never invent (§8.10): everything this turn was shown about the owner, which is what Eva
    may say about the owner — the memory section, the summaries, the reminder, the owner's
    messages in the window (but the questions that only ask) and this one. Of the memory
    section, only what its lines say (:func:`~core.memory.prompt_section.said_text`)."""
    return "\n".join(
        [
            ps.said_text(section.text) if section else "",
            summary,
            reminder.content if reminder is not None else "",
            *owner_statements(window),
            user_text,
        ]
    )


def owner_statements(window: Sequence[StoredMessage]) -> list[str]:
    """The owner's messages in the live window that state something: the questions that only
    ask state nothing (language.only_asks)."""
    return [m.content for m in window if m.role == "user" and not language.only_asks(m.content)]


def drop_current_user(messages: list[Message]) -> list[Message]:
    """On regenerate the stored user message is already the window's last message: keep it in
    place as it was (same prompt form) and drop the freshly built copy."""
    body = messages[1:-1]
    if body and body[-1]["role"] == "user":
        return [messages[0], *body]
    return messages


def for_writer(messages: list[Message]) -> list[Message]:
    """The reply's prompt as the memory step continues it (retry notes dropped: the reply that
    stands was written to the owner's message, and the next turn will not carry them)."""
    return [
        {k: v for k, v in m.items() if k != "original"} | {"content": m["original"]}
        if "original" in m
        else m
        for m in messages
        if not m.get("retry")
    ]
