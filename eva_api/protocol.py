"""What the server uses of the runtime, and nothing more: the shape of
:class:`eva_runtime.services.Services` the endpoints and the chat hub rely on. Tests may hand
the server anything of this shape."""

from __future__ import annotations

from typing import Protocol

from core.chat.conversation import Conversation
from core.chat.conversation_config import ConversationConfig
from core.clock import Clock
from core.llm import ChatModel
from core.memory.facade import Memory
from eva_runtime.config import ChatSettings, EvaConfig
from eva_runtime.services import Component, ExtraTools, SleeperLike


class ApiServices(Protocol):
    config: EvaConfig
    clock: Clock
    memory: Memory | None  # None until the store is open: the endpoints answer 503
    sleeper: SleeperLike | None  # None: sleep is not available (503)
    conversation: Conversation | None  # the TUI's chat: its persona and settings are the base
    model: Component  # the chat model's state ("pending", "loading": /v1/chat says so)

    @property
    def chat_model(self) -> ChatModel | None: ...

    def conversation_config(self, chat: ChatSettings) -> ConversationConfig:
        """The settings of a new conversation."""
        ...

    def sleep_tools(self) -> ExtraTools:
        """The tools an owner's turn gets for sleep (``memory_consolidate``)."""
        ...

    def persona_file_text(self) -> str:
        """The persona of ``[chat] persona_file`` (the default one when it cannot be read)."""
        ...
