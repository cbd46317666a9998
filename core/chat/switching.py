"""Which chat a conversation is in (SPEC §8.9): each chat is a persona's and a channel's, and
keeps where its live window starts, so switching back continues it where it was left. Only a
turn moves the start (:meth:`CurrentChat.keep_window`); switching or clearing a chat loads that
chat's own."""

from __future__ import annotations

import threading

from core.chat.chats import Chat, Chats
from core.clock import Clock
from core.errors import MemoryOpError


class CurrentChat:
    """The current chat of one conversation and its window start. ``lock`` is the
    conversation's: a switch never happens in the middle of a turn."""

    def __init__(
        self, chats: Chats, clock: Clock, channel: str, lock: threading.Lock, chat: Chat
    ) -> None:
        self.chats = chats
        self.clock = clock
        self.channel = channel
        self._lock = lock
        self.id = chat.id
        self.window_start: int | None = chat.window_start  # first message id of the live window

    @classmethod
    def open(
        cls,
        chats: Chats,
        clock: Clock,
        persona_id: str,
        channel: str,
        lock: threading.Lock,
        chat_id: int | None = None,
    ) -> CurrentChat:
        """``chat_id``, or the most recent chat of the persona and channel (a new one if none)."""
        chat = (
            chats.get(chat_id)
            if chat_id is not None
            else chats.current(persona_id, channel, clock.now())
        )
        return cls(chats, clock, channel, lock, chat)

    @property
    def chat(self) -> Chat:
        return self.chats.get(self.id)

    def _load(self, chat: Chat) -> Chat:
        self.id = chat.id
        self.window_start = chat.window_start
        return chat

    def switch(self, chat_id: int) -> Chat:
        """Continue another live chat (its window starts where it was left)."""
        with self._lock:
            chat = self.chats.get(chat_id)
            if chat.archived:
                raise MemoryOpError(f"chat #{chat_id} is in the archive: restore it first")
            return self._load(chat)

    def new(self, persona_id: str, title: str = "") -> Chat:
        """Start a new chat of this persona and channel and switch to it."""
        chat = self.chats.create(persona_id, self.channel, self.clock.now(), title)
        return self.switch(chat.id)

    def clear(self) -> int:
        """Clear this chat's history (messages and summaries to the archive)."""
        with self._lock:
            n = self.chats.clear(self.id, self.clock.now())
            self.window_start = None
            return n

    def delete(self, chat_id: int, persona_id: str) -> Chat:
        """Delete a chat (to the archive). Deleting the current one switches to the most
        recent other chat of the persona, or a new one."""
        archived = self.chats.archive(chat_id, self.clock.now())
        if chat_id == self.id:
            nxt = self.chats.current(persona_id, self.channel, self.clock.now())
            self.switch(nxt.id)
        return archived

    def follow(self, persona_id: str) -> None:
        """Another persona's turns come next: continue its most recent chat (or a new one)."""
        with self._lock:
            self._load(self.chats.current(persona_id, self.channel, self.clock.now()))

    def keep_window(self, start: int | None) -> None:
        """A turn's window starts at ``start``: stored on the chat when it moved."""
        if start != self.window_start:
            self.chats.set_window_start(self.id, start)
        self.window_start = start

    def window_start_of(self, chat_id: int) -> int | None:
        """Where ``chat_id``'s live window starts (this one's as the conversation holds it)."""
        return self.window_start if chat_id == self.id else self.chats.get(chat_id).window_start
