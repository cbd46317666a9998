"""What a conversation holds outside a turn (SPEC §8.1, §8.2, §8.6, §8.9, §8.12):
:class:`ChatSession` — its place (memory, model, persona, channel), its chats (the current one is
:class:`core.chat.switching.CurrentChat`'s), its messages stored and read, the live window, and
the owner's hands on the messages. :class:`core.chat.conversation.Conversation` extends it with
the summaries, the prompt and the turns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from core.chat import summaries as rolling
from core.chat.chats import Chat, Chats
from core.chat.conversation_config import DETAIL_LEVELS, ConversationConfig, window_budget
from core.chat.memory_writer import MemoryWriter
from core.chat.summarizer import Summarizer
from core.chat.switching import CurrentChat
from core.chat.transcript import StoredMessage, Transcript, Window, live_window
from core.clock import Clock, SystemClock
from core.errors import MemoryOpError
from core.instructions import DEFAULT_PERSONA
from core.llm import ChatModel
from core.memory.facade import Memory
from core.privacy import TurnContext
from core.store.turn_rollback import Rollback


class SleepGate(Protocol):
    """What a turn needs from sleep (SPEC §7): is she asleep, and wait until she wakes."""

    def is_sleeping(self) -> bool: ...

    def wait_awake(self, cancel: threading.Event | None) -> bool:
        """Block until awake; False if cancelled first."""
        ...


class ChatSession:
    """One place's conversation outside a turn: what it was made with, its chats, its messages
    and the live window."""

    def __init__(
        self,
        memory: Memory,
        model: ChatModel,
        persona: str = DEFAULT_PERSONA,
        config: ConversationConfig | None = None,
        clock: Clock | None = None,
        sleep: SleepGate | None = None,
        channel: str = "tui",
        extra_tools: dict[str, tuple[dict[str, Any], Callable[[TurnContext], Any]]] | None = None,
        chat_id: int | None = None,
    ) -> None:
        self.memory = memory
        self.model = model
        self.persona = persona
        self.config = config or ConversationConfig()
        self.clock = clock or memory.clock or SystemClock()
        self.sleep = sleep
        self.channel = channel  # one conversation per place (the TUI, a group, a DM bridge…)
        # tools of later layers, e.g. {"memory_consolidate": (schema, handler(ctx) -> ToolResult)};
        # offered under the same rules as the memory tools (SPEC §1)
        self.extra_tools = dict(extra_tools or {})
        self._transcript = memory.attach(Transcript)
        self.chats = memory.attach(Chats)
        self.summaries = memory.attach(rolling.SummaryStore)
        self._busy = threading.Lock()
        self.writer = MemoryWriter(memory, model)
        self._last_lang: str | None = None  # a message with no letters keeps the last language
        self._summarizer: Summarizer | None = None
        self._last_ctx: TurnContext | None = None  # whose prefix a new summary warms up
        self._warmed_start: int | None = None  # the slid window's start warm_up_next read
        self._core_read = ""  # the core part of the system prompt the model last read
        self._current = CurrentChat.open(
            self.chats, self.clock, self.config.persona_id, channel, self._busy, chat_id
        )

    # ------------------------------------------------------------------ chats (§8.9)
    @property
    def chat_id(self) -> int:
        return self._current.id

    @property
    def _window_start(self) -> int | None:
        """First message id of the live window (a turn moves it when the window slides;
        reading the window never does)."""
        return self._current.window_start

    @_window_start.setter
    def _window_start(self, start: int | None) -> None:
        self._current.window_start = start

    @property
    def chat(self) -> Chat:
        return self._current.chat

    def switch_chat(self, chat_id: int) -> Chat:
        """Continue another live chat (its window starts where it was left)."""
        return self._current.switch(chat_id)

    def new_chat(self, title: str = "") -> Chat:
        """Start a new chat of this persona and channel and switch to it."""
        return self._current.new(self.config.persona_id, title)

    def clear_chat(self) -> int:
        """Clear this chat's history (messages and summaries to the archive)."""
        return self._current.clear()

    def delete_chat(self, chat_id: int) -> Chat:
        """Delete a chat (to the archive). Deleting the current one switches to the most
        recent other chat, or a new one."""
        return self._current.delete(chat_id, self.config.persona_id)

    def use_persona(
        self, persona_id: str, persona_text: str, detail_level: str, learning: bool
    ) -> None:
        """Run the next turns as this persona (SPEC §8.6): its text, detail level (§8.2) and
        learning toggle (§8.7), and its own chats: a change of persona continues its most recent
        chat (or starts one). The caller's turn context carries ``persona=persona_id`` so recall
        sees its memories plus global ones."""
        if persona_id != self.config.persona_id:  # its own chats: the most recent one, or new
            self._current.follow(persona_id)
        self.persona = persona_text
        self.config = replace(
            self.config, persona_id=persona_id, detail_level=detail_level, learning=learning
        )

    # ------------------------------------------------------------------ messages
    def _persist(
        self,
        turn_id: str,
        role: str,
        content: str,
        ctx: TurnContext,
        status: str = "ok",
        meta: dict | None = None,
    ) -> int:
        """Store one message. ``private_ok`` records whether the turn could see private memory:
        such a message (its recalled lines, the owner's words) never enters the window of a turn
        that cannot."""
        meta = meta or {}
        tokens = self.model.count_tokens(meta.get("prompt", content)) if content else 0
        if role == "user":
            meta = {**meta, "owner": ctx.is_owner}
        return self._transcript.add(
            self.config.persona_id,
            self.channel,
            turn_id,
            role,
            content,
            private_ok=ctx.sees_private,
            status=status,
            tokens=tokens,
            at=self.clock.now(),
            meta=meta,
            chat_id=self.chat_id,
        )

    def history(self, limit: int = 200, sees_private: bool = True) -> list[StoredMessage]:
        """Messages of the current chat, oldest first, discarded and archived ones excluded;
        with ``sees_private=False`` only those written where private memory was hidden."""
        return self._transcript.chat_history(self.chat_id, limit, sees_private)

    # ------------------------------------------------------------------ the owner's hands (§8.12)
    def message(self, message_id: int) -> StoredMessage:
        """A message of the current chat, or MemoryOpError."""
        m = self._transcript.get(message_id, self.chat_id)
        if m is None:
            raise MemoryOpError(f"there is no message #{message_id} in this chat")
        return m

    def edit_message(self, message_id: int, content: str) -> StoredMessage:
        """The owner edits a message of this chat, hers or Eva's (SPEC §8.12): the window and
        the next summaries use the new words; the summaries covering it are invalidated."""
        with self._busy:
            self.message(message_id)
            try:
                self._transcript.edit(message_id, content, self.clock.now())
            except ValueError as e:
                raise MemoryOpError(str(e)) from None
            return self.message(message_id)

    def delete_message(self, message_id: int) -> None:
        """A message of this chat goes to the archive (SPEC §8.12); the summaries covering it
        are invalidated."""
        with self._busy:
            self.message(message_id)
            self._transcript.delete(message_id, self.clock.now())

    def alternatives(self, turn_id: str) -> list[StoredMessage]:
        """The answers of one turn of this chat, oldest first: regenerate keeps the earlier
        ones (SPEC §8.12); the one whose status is not ``discarded`` is the chosen one."""
        return self._transcript.alternatives(turn_id)

    def alternative_counts(self) -> dict[str, int]:
        """turn id → number of answers, for this chat's turns with more than one."""
        return self._transcript.alternative_counts(self.chat_id)

    def choose_alternative(self, turn_id: str, message_id: int) -> Rollback:
        """Make another answer of a turn the chosen one (the window and the summaries use it).
        The memory writes of the answer it replaces are rolled back, as regenerate does (SPEC
        §8.4), in the same transaction as the switch; the chosen one's own writes were rolled
        back when it was discarded and are not redone."""
        with self._busy:
            alts = {m.id: m for m in self._transcript.alternatives(turn_id)}
            if message_id not in alts:
                raise MemoryOpError(f"message #{message_id} is not an answer of that turn")
            return self.memory.rollback_turn(
                turn_id,
                also=lambda: self._transcript.discard_answers(
                    turn_id, self.clock.now(), keep=message_id
                ),
            )

    def window(self, ctx: TurnContext | None = None) -> Window:
        """The live window the next prompt carries (§8.1, §8.2), without moving it: a turn
        computes it once and keeps its start (see :func:`core.chat.transcript.live_window`)."""
        level = DETAIL_LEVELS[self.config.detail_level]
        max_tokens, max_msgs = window_budget(level, self.model.context_size)
        sees_private = ctx.sees_private if ctx is not None else True
        return live_window(
            self.history(max_msgs * 2 + 2, sees_private),
            self._window_start,
            max_tokens,
            max_msgs,
            self.config.slide_keep,
        )

    def live_window(self, ctx: TurnContext | None = None) -> list[StoredMessage]:
        """The earlier messages the next prompt carries."""
        return self.window(ctx).messages
