"""The chat model the conversation runs on, swappable between turns (issue 31 item 3).

The conversation, its memory writer and summariser, and the drafts hold one
:class:`ModelSlot`; switching the model replaces what the slot points at. A call already under
way finishes on the model it started with; the next call (the next turn) uses the new one, and
the chat, its window and the memory stay as they are.

:class:`LazyModel` is a model loaded on its first call — sleep's own model
(``sleep.memory.model``), loaded in the sleeper's worker when a night needs it, not at start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from core.llm import ChatEvent, ChatModel, Message, ModelError, ToolCall


class ModelSlot:
    """A :class:`core.llm.ChatModel` that delegates to ``current``."""

    def __init__(self, current: ChatModel | None = None) -> None:
        self.current = current

    def _m(self) -> ChatModel:
        m = self.current
        if m is None:
            raise ModelError("no chat model is loaded")
        return m

    @property
    def name(self) -> str:
        return getattr(self.current, "name", "model")

    @property
    def context_size(self) -> int:
        return self._m().context_size

    def count_tokens(self, text: str) -> int:
        return self._m().count_tokens(text)

    def stream_chat(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        cancel: threading.Event | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.7,
    ) -> Iterator[ChatEvent]:
        return self._m().stream_chat(messages, tools, cancel, max_tokens, temperature)

    def warm_up(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Any:
        return self._m().warm_up(messages, tools)

    def force_tool_call(
        self,
        messages: list[Message],
        tool: dict[str, Any],
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> ToolCall:
        return self._m().force_tool_call(messages, tool, timeout=timeout, cancel=cancel)

    def generate_json(
        self,
        messages: list[Message],
        schema: dict[str, Any],
        timeout: float | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        return self._m().generate_json(
            messages, schema, timeout=timeout, max_tokens=max_tokens, cancel=cancel
        )

    def __getattr__(self, attr: str) -> Any:  # last_done, snapshots, … of the model in use
        if attr.startswith("__") or attr == "current":
            raise AttributeError(attr)
        return getattr(self._m(), attr)


class LazyModel(ModelSlot):
    """A model loaded by ``load()`` on first use (once; a failure is a ModelError each time,
    so sleep falls back to its next attempt, not to a crash)."""

    def __init__(self, name: str, load: Callable[[], ChatModel]) -> None:
        super().__init__(None)
        self._name, self._load = name, load
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def _m(self) -> ChatModel:
        with self._lock:
            if self.current is None:
                try:
                    self.current = self._load()
                except Exception as e:
                    raise ModelError(f"sleep's model {self._name!r} cannot load: {e}") from None
            return self.current

    def close(self) -> None:
        close = getattr(self.current, "close", None)
        if callable(close):
            close()
