"""Saving what leaves the window (SPEC §8.9, the seed's "deep memory"; issue 12 item 3).

Before a chunk of messages is summarised, the structured memory-writing step (§3.1,
:class:`core.chat.memory_writer.MemoryWriter`) runs over each owner message of it whose own turn kept
nothing, so a durable fact the turn did not save is saved before its message scrolls out:
source ``dialogue``, dedup as always, the message's turn id kept (regenerating that turn rolls
it back like any write of the turn).

The step sees the owner's message and Eva's reply as the turn did; its context is the turn's
own: where private memory was visible (``private_ok``) the owner's trusted context, else the
owner's untrusted one (no private saves). Messages of other people are never read here: only
the owner's turns write memory (§1).
"""

from __future__ import annotations

import threading
from typing import Any

from core.chat.memory_writer import STEP_RULE, MemoryWriter
from core.chat.owner_message import may_carry_a_fact
from core.chat.summaries import SourceMessage
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED, OWNER_UNTRUSTED
from core.store.records import Source

KEPT = "kept_on_leaving"  # a user message's meta flag: the step ran over it as it left
# the tools whose success means the turn kept something of the message (a forget keeps
# nothing: the message may still tell a fact)
KEEPING_TOOLS = ("memory_save", "memory_update")


class _DialogueMemory:
    """The memory as the writer sees it here: every save is recorded as from ``dialogue``."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def save(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["source"] = Source.DIALOGUE
        return self._memory.save(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)


class WindowSaver:
    def __init__(self, memory: Memory, writer: MemoryWriter, mark: Any = None) -> None:
        """``mark(message_id, meta)`` stores a message's meta (the transcript's ``set_meta``)."""
        self.memory = memory
        self.writer = MemoryWriter(
            _DialogueMemory(memory),  # type: ignore[arg-type]
            writer.model,
            timeout=writer.timeout,
            max_tokens=writer.max_tokens,
        )
        self.mark = mark

    @staticmethod
    def needs_step(user: SourceMessage, reply: SourceMessage | None) -> bool:
        """An owner message that may tell a fact, whose turn saved nothing, and that was not
        already seen on its way out."""
        if user.role != "user" or user.meta.get(KEPT):
            return False
        if not user.meta.get("owner", user.private_ok):  # others' words never write memory
            return False
        if not may_carry_a_fact(user.content):
            return False
        ops = reply.meta.get("ops", []) if reply is not None else []
        return not any(op.get("ok") and op.get("tool") in KEEPING_TOOLS for op in ops)

    def keep(self, chunk: list[SourceMessage], cancel: threading.Event | None = None) -> int:
        """Run the step over the owner messages of ``chunk`` that need it. Returns how many
        memories it saved or updated."""
        saved = 0
        for i, m in enumerate(chunk):
            reply = next(
                (r for r in chunk[i + 1 :] if r.role == "assistant" and r.turn_id == m.turn_id),
                None,
            )
            if not self.needs_step(m, reply):
                continue
            if cancel is not None and cancel.is_set():
                break
            ctx = (OWNER_TRUSTED if m.private_ok else OWNER_UNTRUSTED).with_turn(m.turn_id)
            messages = [
                {"role": "system", "content": STEP_RULE},
                {"role": "user", "content": m.content},
            ]
            if reply is not None:
                messages.append({"role": "assistant", "content": reply.content})
            outcome = self.writer.run(messages, m.content, ctx, (), cancel)
            if cancel is not None and cancel.is_set() and outcome.error:
                break  # interrupted: the message is tried again next time
            saved += sum(1 for r in outcome.results if r.ok)
            if self.mark is not None:
                self.mark(m.id, {**m.meta, KEPT: True})
        return saved
