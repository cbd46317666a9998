"""The HTTP conversations and the one model they share: turns run one at a time, a night waits
for the running turn, and ``eva serve`` keeps the sleep schedule (SPEC §7) when it is the only
process."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from core.chat.conversation import Conversation
from core.chat.events import Sleeping
from core.privacy import TurnContext
from eva_api.protocol import ApiServices
from eva_runtime.services import SleeperLike

log = logging.getLogger("eva.serve")

MAX_CONVERSATIONS = 256  # kept at once; the oldest is forgotten (its messages stay stored)


@dataclass
class ChatHub:
    """The HTTP conversations (one per kind of turn context, so windows never mix) and the one
    model they share: turns run one at a time."""

    services: ApiServices
    lock: threading.Lock = field(default_factory=threading.Lock)  # one turn at a time
    count_lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0
    last_turn: float = field(default_factory=time.monotonic)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    # held while a conversation's background work after a turn runs (one at a time)
    background: threading.Lock = field(default_factory=threading.Lock)

    def queue(self, delta: int) -> None:
        with self.count_lock:
            self.waiting += delta

    def sleep_in_background(self, sleeper: SleeperLike, dry_run: bool | None, reason: str) -> None:
        """A night in a thread, once the running turn (if any) has ended: the planner is the
        chat model, which runs one thing at a time. Turns that come meanwhile get
        ``sleeping`` and wait."""

        def night() -> None:
            with self.lock:
                try:
                    sleeper.run(dry_run=dry_run, reason=reason)
                except Exception as e:  # noqa: BLE001 - already asleep, or a broken store
                    log.warning("sleep did not run: %s", type(e).__name__)

        threading.Thread(target=night, name="eva-http-sleep", daemon=True).start()

    def after_turn(self, conv: Conversation) -> None:
        """What the chat screen starts after each turn (``screens.summary.start_summarising``):
        the conversation's background work — the memory step again over a message whose
        turn's step failed (issue 26), then the summaries of what left the window — in a
        thread. The next turn interrupts its model call (``Conversation._wanting_model``); one
        runs at a time, and a turn that ends meanwhile leaves its own to the next turn."""
        if not self.background.acquire(blocking=False):
            return

        def work() -> None:
            try:
                conv.summarise()
            except Exception as e:  # noqa: BLE001 - the next turn's work tries again
                log.warning("background work after a turn failed: %s", type(e).__name__)
            finally:
                self.background.release()

        threading.Thread(target=work, name="eva-http-after-turn", daemon=True).start()

    def tick(self) -> bool:
        """The schedule (SPEC §7) when ``eva serve`` is the only process: a night when one is
        due and no turn has run for ``idle_for``. Returns whether it slept."""
        sleeper = self.services.sleeper
        if sleeper is None or not self.lock.acquire(blocking=False):
            return False
        try:
            return bool(sleeper.tick(time.monotonic() - self.last_turn, self.waiting > 0))
        finally:
            self.lock.release()

    def conversation(self, ctx: TurnContext, channel: str = "api") -> Conversation | None:
        """The conversation of this kind of turn context and this caller's channel: windows
        never mix contexts, nor callers that name their own channels. None while there is no
        chat model or no memory."""
        s = self.services
        if s.chat_model is None or s.memory is None:
            return None
        key = f"http-{ctx.speaker}-{ctx.surface}-{ctx.audience}-{channel}"
        conv = self.conversations.get(key)
        if conv is None:
            if len(self.conversations) >= MAX_CONVERSATIONS:
                self.conversations.pop(next(iter(self.conversations)))
            base = s.conversation
            conv = Conversation(
                s.memory,
                s.chat_model,
                base.persona if base is not None else s.persona_file_text(),
                base.config if base is not None else s.conversation_config(s.config.chat),
                clock=s.clock,
                sleep=s.sleeper,
                channel=key,
                extra_tools=s.sleep_tools() if ctx.can_mutate else None,
            )
            self.conversations[key] = conv
        return conv

    async def turn(
        self, conv: Conversation, message: str, ctx: TurnContext
    ) -> AsyncGenerator[Any, None]:
        """One turn's events as they come (an exception that ended it, too), the turn run in a
        thread after the ones before it. A turn queued while Eva sleeps (here or in another
        process) says :class:`Sleeping` at once and waits. Closing this (the client went
        away) stops the turn at its next check."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        cancel = threading.Event()
        end = object()
        self.queue(+1)
        queued = [True]

        def put(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def dequeue() -> None:
            if queued[0]:
                queued[0] = False
                self.queue(-1)

        def work() -> None:
            try:
                sleeper = self.services.sleeper
                if sleeper is not None and sleeper.is_sleeping():
                    put(Sleeping())
                    if not sleeper.wait_awake(cancel):
                        return
                with self.lock:
                    dequeue()
                    try:
                        for ev in conv.turn(message, ctx, cancel):
                            put(ev)
                            if cancel.is_set():
                                break
                    finally:
                        self.last_turn = time.monotonic()
                self.after_turn(conv)
            except Exception as e:  # noqa: BLE001 - reported calmly; the log gets the type
                log.error("chat turn failed: %s", type(e).__name__)
                put(e)
            finally:
                dequeue()
                put(end)

        threading.Thread(target=work, name="eva-http-turn", daemon=True).start()
        try:
            while True:
                ev = await queue.get()
                if ev is end:
                    break
                yield ev
        finally:
            cancel.set()  # the client went away (or the turn ended): stop at the next check
