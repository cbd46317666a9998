"""What the core needs from a language model: the chat/planning protocol (SPEC §7, §8).

``models/`` implements :class:`ChatModel` on llama.cpp; tests use scripted fakes. The core never
imports a concrete model.

A chat call streams :class:`TextDelta` events, then zero or more :class:`ToolCall` events (the
adapter recognises its model's tool-call format and never shows it as text), then one
:class:`Done`. Cancelling (setting the ``cancel`` event) ends the stream early with
``Done(stopped=True)``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]  # {"role": "system"|"user"|"assistant"|"tool", "content": str, ...}


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | str  # a str when the model's JSON could not be parsed
    id: str = ""


@dataclass(frozen=True)
class Done:
    prompt_tokens: int = 0
    evaluated_tokens: int = 0  # prompt tokens actually run (the rest came from the KV cache)
    completion_tokens: int = 0
    stopped: bool = False  # cancelled mid-stream
    seconds: float = 0.0
    first_token_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


ChatEvent = TextDelta | ToolCall | Done


class ModelError(RuntimeError):
    """The model could not run (not loaded, crashed, timed out). Safe to show the owner.
    ``partial`` is what a structured call wrote before it was cut at its token budget (the
    caller may keep the whole items in it: :func:`core.chat.step_schema.whole_ops`)."""

    def __init__(self, message: str = "", *, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial


@runtime_checkable
class ChatModel(Protocol):
    name: str
    context_size: int

    def count_tokens(self, text: str) -> int: ...

    def stream_chat(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None = None,
        cancel: threading.Event | None = None,
        max_tokens: int | None = None,
        temperature: float = 0.7,
    ) -> Iterator[ChatEvent]: ...

    def warm_up(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> bool | None:
        """Evaluate these messages into the KV cache now (no generation), so a later prompt that
        starts with them pays only for the rest. A model without a cache does nothing."""
        ...

    def force_tool_call(
        self,
        messages: list[Message],
        tool: dict[str, Any],
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> ToolCall:
        """Make the model call exactly this tool; arguments are grammar-constrained to the
        tool's JSON schema (sleep's ``sleep_finish(plan)``)."""
        ...

    def generate_json(
        self,
        messages: list[Message],
        schema: dict[str, Any],
        timeout: float | None = None,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        """Schema-constrained JSON (raises ModelError on timeout or unparsable output)."""
        ...


@runtime_checkable
class ChoiceModel(Protocol):
    """A model that can say how sure it is of a closed choice (issue 27 item 3: "the answer is
    read with its probability"). Optional: a model without it is asked with
    :meth:`ChatModel.generate_json` and its answer taken as given."""

    def choice_probabilities(
        self,
        messages: list[Message],
        key: str,
        options: list[str],
        timeout: float | None = None,
        cancel: threading.Event | None = None,
    ) -> dict[str, float]:
        """The probability of each option as the value of ``key`` in the one-key JSON answer
        ``{"key": "<option>"}`` to these messages (they sum to 1 over ``options``). Raises
        ModelError on timeout or cancel."""
        ...
