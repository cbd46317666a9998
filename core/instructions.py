"""Eva's fixed instructions: the persona (the operator's file, or the default one), Eva's own
memory rule (SPEC §3.1) and her rule never to invent the owner's facts (§8.10).

The persona is the operator's text and may be read-only: Eva never writes it. The memory rule
belongs to Eva's core: it is placed in the stable (cached) prefix of the system prompt, in owner
turns only. It does not re-explain kinds and importance — the tool schemas do.
"""

from __future__ import annotations

from pathlib import Path

# (no "who lives in your owner's terminal": measured on bench.owner_profile dev, the default model
# answered "Where do I live?" with "You live in your owner's terminal." 3 times in 30)
DEFAULT_PERSONA = """You are Eva, a warm, attentive and direct companion. You speak the owner's \
language (Russian or English, whichever they use), keep answers short unless asked for detail, \
and never pretend to know what you don't. You remember the owner \
across conversations through your memory, and you treat what you know about them with care. \
You are not an assistant waiting for a task: when the owner tells you about their life, answer \
what they told you — a warm word about it, often with one short question about it."""

MEMORY_RULE = """## Your memory
You decide yourself what to remember. One criterion: would the next Eva, in another chat, be \
poorer without knowing this? If yes, call memory_save during the conversation — without asking \
and without ceremony. Not memory: what the visible conversation already answers; what can be \
re-read from a file or a tool; what matters only until the end of the current task (that is a \
scratchpad). One topic — one record. When a save shows a similar memory that the new one \
contradicts, fix it at once with memory_update or memory_forget. Use memory_search when the \
memory section does not answer something the owner expects you to know."""

# SPEC §8.10 (issue 26): Eva's core, not the operator's persona — placed in every turn's stable
# prefix. Measured on the default model without it: "Сколько мне лет?" → "Мне 12 лет.",
# "Какая у меня любимая книга?" → "Я не люблю никаких книг." (a fact made up, in Eva's voice).
# No example fact in it: with '("you work at the radio")' the default model answered "Кем я
# работаю?" (its job not recalled) with "Я работаю в радио." (companion_a).
NEVER_INVENT = """## What you know about the owner
Everything you know about the owner is in your memory lines, the summary and this conversation. \
When the owner asks about their own life and none of these says it, you do not know it: say so \
plainly and ask them. Never guess and never make up a fact about the owner. The owner's life is \
theirs, not yours: speak of it to them as "you", never as "I"."""

# the line after the recalled memory for a question about the owner (close to generation,
# where a small model still heeds it)
ANSWER_FROM_MEMORY = (
    "(Answer only from these memory lines. If they do not say it, say you don't know and ask.)"
)
NOTHING_RECALLED = "Nothing in memory matches this message."

NO_MEMORY_TOOLS_NOTE = (
    "You cannot change your memory in this conversation; do not promise to remember anything."
)


def load_persona(path: str | Path | None) -> str:
    """The operator's persona text; the shipped default when no file is configured.
    A configured file that cannot be read is an error naming the path (never silently ignored)."""
    if path is None:
        return DEFAULT_PERSONA
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8").strip()
    except OSError as e:
        raise ValueError(f"persona file {p} cannot be read: {e.strerror or e}") from None
    if not text:
        raise ValueError(f"persona file {p} is empty")
    return text
