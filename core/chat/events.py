"""What a chat turn yields (SPEC §1, §3, §8): a stream of typed events a surface (the TUI, the
HTTP API) shows as they come. :meth:`core.chat.conversation.Conversation.turn` is the source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.memory import tools as memory_tools
from core.memory.prompt_section import PromptSection


@dataclass(frozen=True)
class Sleeping:
    """Eva is asleep: the turn is queued until she wakes (the stream opens with this)."""


@dataclass(frozen=True)
class MemoryUsed:
    section: PromptSection


@dataclass(frozen=True)
class Token:
    text: str


@dataclass(frozen=True)
class ToolStarted:
    name: str
    arguments: Any


@dataclass(frozen=True)
class ToolFinished:
    name: str
    result: memory_tools.ToolResult


@dataclass(frozen=True)
class Remembering:
    """The reply is complete; the structured memory-writing step runs now (§3.1). Its ops follow
    as :class:`ToolFinished` events, then :class:`TurnDone`."""


@dataclass(frozen=True)
class Notice:
    """A calm remark for the owner that does not end the turn."""

    text: str


def capped_notice(cap: int) -> str:
    """Said once in a turn whose model tried to change more memories than one turn may."""
    return (
        f"Eva tried to change or forget more than {cap} memories in one message; only the "
        f"first {cap} were changed (the rest are untouched). To change more, use the "
        "memories screen, or raise [memory] model_changes_per_turn."
    )


@dataclass(frozen=True)
class CallFigures:
    """One model call of a turn's reply."""

    purpose: str  # "reply", "tools" (after tool results), "nudge", or "retry:<verdict>"
    prompt_tokens: int | None
    evaluated_tokens: int | None

    @property
    def reuse(self) -> float | None:
        """The share of the prompt that came from the KV cache."""
        if not self.prompt_tokens or self.evaluated_tokens is None:
            return None
        return round(1 - self.evaluated_tokens / self.prompt_tokens, 3)


@dataclass(frozen=True)
class TurnDone:
    turn_id: str
    text: str
    stopped: bool
    prompt_tokens: int
    evaluated_tokens: int
    completion_tokens: int
    first_token_seconds: float | None
    seconds: float
    model_calls: int
    message_id: int | None = None  # the stored answer (issue 28 item 5: edit, alternatives)
    user_message_id: int | None = None  # the owner's stored message
    # each model call of the reply, in order (issue 32 item 5; bench.chat prints them)
    calls: tuple[CallFigures, ...] = ()


@dataclass(frozen=True)
class TurnError:
    turn_id: str
    message: str  # calm, safe to show the owner


TurnEvent = (
    Sleeping
    | MemoryUsed
    | Token
    | ToolStarted
    | ToolFinished
    | Remembering
    | Notice
    | TurnDone
    | TurnError
)
