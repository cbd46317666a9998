"""Memories the model drafts for the owner to confirm (SPEC §8.5): save from dialogue (up to 20
selected messages → up to 5 drafts, saved pinned with source ``dialogue``) and initialize from a
description (up to 1,000 characters → drafts the owner confirms one by one, source ``init``).

One grammar-forced JSON call (:meth:`core.llm.ChatModel.generate_json`, the same structured
protocol as the memory-writing step): the schema admits only ``{"memories": [...]}`` with at most
``max_drafts`` items of content, kind, importance and private. The owner decides what is saved;
the drafts are checked like any memory argument (:mod:`core.memory.validation`) and a draft that fails
the check is dropped, never saved.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import MemoryOpError
from core.learned import Embed
from core.llm import ChatModel, Message
from core.memory import validation as valid
from core.sensitivity import sensitive

MAX_MESSAGES = 20  # save from dialogue: at most this many selected messages
MAX_DRAFTS = 5  # … and at most this many drafts
MAX_DESCRIPTION = 1000  # initialize from a description: at most this many characters
MAX_INIT_DRAFTS = 8
MAX_DRAFT_CHARS = 300  # a draft is a short sentence (the record limit still applies)
MIN_IMPORTANCE = 3  # a draft the owner keeps is at least "normal"


@dataclass(frozen=True)
class Draft:
    content: str
    kind: str = "fact"
    importance: int = 3
    private: bool = False


def drafts_schema(max_drafts: int = MAX_DRAFTS) -> dict[str, Any]:
    """The JSON schema of a drafting answer (the grammar made from it is the first guard).
    Orders put the usual value first: a small model takes the first option it is shown."""
    item = {
        "type": "object",
        "properties": {
            "content": {"type": "string", "minLength": 3, "maxLength": MAX_DRAFT_CHARS},
            "kind": {"enum": ["fact", "event", "core"]},
            "importance": {"enum": [3, 4, 2, 5, 1]},
            "private": {"type": "boolean"},
        },
        "required": ["content", "kind", "importance", "private"],
    }
    return {
        "type": "object",
        "properties": {"memories": {"type": "array", "items": item, "maxItems": max_drafts}},
        "required": ["memories"],
    }


RULES = """Each memory is one short sentence about the owner, in the owner's language and, as \
far as possible, in the owner's own words ("I", "my" mean the owner). One topic per memory. \
Keep what the next conversation would be poorer without: the owner's facts, people, \
preferences, plans, promises, rules for you. Leave out greetings, small talk and what matters \
only for the moment. kind: "fact" for what stays true, "event" for something that happened \
once, "core" only for who the owner is or how to address them. importance: 1 trivia … 5 \
essential. private: true for body, health, money, location, documents, other people's names."""


def dialogue_messages(
    selected: Sequence[tuple[str, str]], max_drafts: int = MAX_DRAFTS
) -> list[Message]:
    """The drafting prompt for messages the owner selected: (role, text) pairs, role ``user``
    (the owner) or ``assistant`` (Eva)."""
    lines = "\n".join(
        f"{'Owner' if role == 'user' else 'Eva'}: {text.strip()}" for role, text in selected
    )
    return [
        {
            "role": "system",
            "content": (
                "The owner selected part of a conversation with you, Eva, to keep in your memory. "
                f"Write at most {max_drafts} memories from it.\n{RULES}\nAnswer with JSON only."
            ),
        },
        {"role": "user", "content": f"The selected messages:\n{lines}"},
    ]


def description_messages(description: str, max_drafts: int = MAX_INIT_DRAFTS) -> list[Message]:
    """The drafting prompt for the owner's description of themselves (initialize memories)."""
    return [
        {
            "role": "system",
            "content": (
                "The owner wrote a description of themselves so that you, Eva, know them from the "
                f"start. What should you remember? Write at most {max_drafts} memories from it.\n"
                f"{RULES}\nAnswer with JSON only."
            ),
        },
        {"role": "user", "content": description.strip()},
    ]


def clean(
    answer: object, max_chars: int, max_drafts: int, embed: Embed | None = None
) -> list[Draft]:
    """The drafts of a model's answer that pass the memory checks, without repeats. A draft
    whose words are private (:mod:`core.sensitivity`, given ``embed``: the USE vectors) comes
    marked private whatever the model said; the owner may unmark it before keeping it."""
    items = answer.get("memories") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        return []
    out: list[Draft] = []
    seen: set[str] = set()
    for it in items:
        if not isinstance(it, dict):
            continue
        try:
            content = valid.content(it.get("content"), max_chars)
            kind = valid.kind(it.get("kind", "fact"))
            imp = valid.importance(it.get("importance", 3))
            private = valid.flag(it.get("private", False), "private")
        except MemoryOpError:
            continue
        key = " ".join(content.casefold().split())
        if key in seen:
            continue
        seen.add(key)
        # the owner confirms each draft as worth keeping: never below "normal" (measured: the
        # default 1.5B model gave every draft of a description importance 1, which sleep's
        # forgetting would take as trivia)
        private = private or sensitive(content, embed)
        out.append(Draft(content, kind.value, max(imp, MIN_IMPORTANCE), private))
        if len(out) >= max_drafts:
            break
    return out


def draft_from_dialogue(
    model: ChatModel,
    selected: Sequence[tuple[str, str]],
    max_chars: int,
    *,
    timeout: float | None = 180.0,
    max_tokens: int = 600,
    cancel: threading.Event | None = None,
    embed: Embed | None = None,
) -> list[Draft]:
    """Up to 5 drafts from up to 20 selected messages (raises MemoryOpError on a bad
    selection, ModelError when the model fails)."""
    selected = [(r, t) for r, t in selected if t and t.strip()]
    if not selected:
        raise MemoryOpError("select at least one message")
    if len(selected) > MAX_MESSAGES:
        raise MemoryOpError(f"{len(selected)} messages are selected; the limit is {MAX_MESSAGES}")
    return _drafts(
        model,
        dialogue_messages(selected),
        MAX_DRAFTS,
        max_chars,
        timeout,
        max_tokens,
        cancel,
        embed,
    )


def check_description(description: object) -> str:
    if not isinstance(description, str) or not description.strip():
        raise MemoryOpError("write a few sentences about yourself first")
    description = description.strip()
    if len(description) > MAX_DESCRIPTION:
        raise MemoryOpError(
            f"the description is {len(description)} characters; the limit is {MAX_DESCRIPTION}"
        )
    return description


def draft_from_description(
    model: ChatModel,
    description: str,
    max_chars: int,
    *,
    timeout: float | None = 180.0,
    max_tokens: int = 800,
    cancel: threading.Event | None = None,
    embed: Embed | None = None,
) -> list[Draft]:
    """Drafts from the owner's description of themselves (at most 1,000 characters)."""
    description = check_description(description)
    return _drafts(
        model,
        description_messages(description),
        MAX_INIT_DRAFTS,
        max_chars,
        timeout,
        max_tokens,
        cancel,
        embed,
    )


def _drafts(
    model: ChatModel,
    messages: list[Message],
    most: int,
    max_chars: int,
    timeout: float | None,
    max_tokens: int,
    cancel: threading.Event | None,
    embed: Embed | None = None,
) -> list[Draft]:
    """Up to ``most`` drafts the model writes from ``messages``, cleaned: one way of asking
    whatever the drafts are drawn from (a dialogue, a description)."""
    answer = model.generate_json(
        messages, drafts_schema(most), timeout=timeout, max_tokens=max_tokens, cancel=cancel
    )
    return clean(answer, max_chars, most, embed)
