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

from core.chat.memory_writer import STEP_RULE, MemoryWriter, WriteOutcome
from core.chat.owner_message import may_carry_a_fact
from core.chat.summaries import SourceMessage
from core.memory.facade import Memory
from core.privacy import OWNER_TRUSTED, OWNER_UNTRUSTED
from core.store.records import Source

KEPT = "kept_on_leaving"  # a user message's meta flag: the step ran over it as it left
# a reply's meta: why its turn's memory step gave no answer (a timeout, a broken plan); the step
# is tried again over that message in the background (:meth:`WindowSaver.retry_failed`)
STEP_FAILED = "memory_step_failed"
TRIES = "memory_step_tries"  # how many times it was tried again and failed
RETRIES = 3
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

    def _step(
        self, m: SourceMessage, reply: SourceMessage | None, cancel: threading.Event | None
    ) -> WriteOutcome:
        """The step over one owner message (with Eva's reply, as the turn saw it); marks the
        message :data:`KEPT` when the model answered."""
        ctx = (OWNER_TRUSTED if m.private_ok else OWNER_UNTRUSTED).with_turn(m.turn_id)
        messages = [
            {"role": "system", "content": STEP_RULE},
            {"role": "user", "content": m.content},
        ]
        if reply is not None:
            messages.append({"role": "assistant", "content": reply.content})
        outcome = self.writer.run(messages, m.content, ctx, (), cancel)
        if outcome.error is None and self.mark is not None:
            self.mark(m.id, {**m.meta, KEPT: True})
        return outcome

    def keep(self, chunk: list[SourceMessage], cancel: threading.Event | None = None) -> int:
        """Run the step over the owner messages of ``chunk`` that need it. Returns how many
        memories it saved or updated. A message whose step failed is not marked: a later pass
        over it (a summary made again) reads it again."""
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
            outcome = self._step(m, reply, cancel)
            if cancel is not None and cancel.is_set() and outcome.error:
                break  # interrupted: the message is tried again next time
            saved += sum(1 for r in outcome.results if r.ok)
        return saved

    def retry_failed(
        self, window: list[SourceMessage], cancel: threading.Event | None = None
    ) -> int:
        """Run the step again over the owner messages of ``window`` whose turn's own step failed
        (their reply's meta holds :data:`STEP_FAILED`): the owner's words are read into memory
        once the model is free, instead of waiting until they leave the window (or never, in a
        short chat). Issue 26: under load the default model's step timed out and the turn kept
        nothing. At most :data:`RETRIES` times, each after a turn (the background work after a
        reply runs this); an interrupted try (``cancel``: a turn wants the model) does not
        count. After the last failed try the message still waits for the pass over what leaves
        the window (:meth:`keep`). Returns how many memories it saved or updated."""
        saved = 0
        for i, reply in enumerate(window):
            if reply.role != "assistant" or not reply.meta.get(STEP_FAILED):
                continue
            if cancel is not None and cancel.is_set():
                break
            user = next(
                (
                    m
                    for m in reversed(window[:i])
                    if m.role == "user" and m.turn_id == reply.turn_id
                ),
                None,
            )
            failed: str | None = None
            if user is not None and self.needs_step(user, reply):
                outcome = self._step(user, reply, cancel)
                if cancel is not None and cancel.is_set() and outcome.error:
                    break  # interrupted: not a try
                saved += sum(1 for r in outcome.results if r.ok)
                failed = outcome.error
            if self.mark is None:
                continue
            meta = {k: v for k, v in reply.meta.items() if k not in (STEP_FAILED, TRIES)}
            tries = int(reply.meta.get(TRIES, 0)) + 1
            if failed is not None and tries < RETRIES:
                meta.update({STEP_FAILED: failed, TRIES: tries})
            self.mark(reply.id, meta)
        return saved
