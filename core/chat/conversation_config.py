"""A conversation's settings (SPEC §3.1, §8.2, §8.3, §8.7, §8.11): the detail levels — how much
the live window may hold — and :class:`ConversationConfig`, what
:class:`core.chat.conversation.Conversation` runs with."""

from __future__ import annotations

from dataclasses import dataclass

from core.chat.memory_writer import MEMORY_WRITES, STRUCTURED


@dataclass(frozen=True)
class DetailLevel:
    name: str
    window_tokens: int
    window_messages: int


DETAIL_LEVELS = {
    "key": DetailLevel("key", 6_000, 30),
    "balanced": DetailLevel("balanced", 10_000, 50),
    "detailed": DetailLevel("detailed", 16_000, 80),
}
MAX_CONTEXT_SHARE = 0.25


@dataclass(frozen=True)
class ConversationConfig:
    detail_level: str = "balanced"
    learning: bool = True  # per persona: off → no memory section and no memory tools (§8.7)
    max_tool_rounds: int = 4
    max_answer_tokens: int | None = None
    temperature: float = 0.7
    persona_id: str = "default"
    slide_keep: float = 0.75  # when the window overflows it drops to this share (cache-friendly)
    # §3.1: "structured" — the reply has no tool schemas and one grammar-forced JSON step after
    # it writes memory; "tools" — the model calls the memory tools in the loop (capable models)
    memory_writes: str = STRUCTURED
    retry_temperature: float = 0.3  # an empty or echoing reply is tried once more with this
    # a question is answered from memory with careful sampling: measured on the default model at
    # 0.7, "Моё дрессирейт на 14 марта", "она работает как панистка" — words garbled in flight
    question_temperature: float = 0.3
    summaries: bool = True  # §8.3: what leaves the window is summarised (in the background)
    # §8.11: the day's first owner turn carries the most urgent reminder (0 days: off)
    reminder_days: int = 3
    # §8.10 never invent: an answer about the owner stands only when the memory line it drew on
    # answers the question (core.chat.answerable; off: the judge's other checks alone)
    answer_check: bool = True

    def __post_init__(self) -> None:
        if self.memory_writes not in MEMORY_WRITES:
            raise ValueError(
                f"memory_writes must be one of {', '.join(MEMORY_WRITES)} "
                f"(got {self.memory_writes!r})"
            )
        if self.detail_level not in DETAIL_LEVELS:
            raise ValueError(
                f"detail_level must be one of {', '.join(DETAIL_LEVELS)} (got {self.detail_level!r})"
            )
        if not 1 <= self.max_tool_rounds <= 16:
            raise ValueError("max_tool_rounds must be 1..16")
        if not 0.1 <= self.slide_keep <= 1.0:
            raise ValueError("slide_keep must be in [0.1, 1]")


def window_budget(level: DetailLevel, context_size: int) -> tuple[int, int]:
    """(tokens, messages) the live window may hold with this model."""
    return min(level.window_tokens, int(context_size * MAX_CONTEXT_SHARE)), level.window_messages
