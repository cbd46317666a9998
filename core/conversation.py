"""Chat turns (SPEC §1, §3, §5, §8.1, §8.2, §8.4, §8.7): one call per user message, a stream of
typed events out. A surface (the TUI, later HTTP) drives it; the model is any
:class:`core.llm.ChatModel`.

Prompt layout, stable first so the model's KV cache is reused from turn to turn:

1. system — Eva's memory rule (owner turns only), the persona, the core/pinned part of the memory
   section, and the tools this turn is offered;
2. the rolling summary of what scrolled out of the window (§8.3, :mod:`core.summaries`): it
   changes only when a summary does, so the cache survives until then; private-only summaries
   only where private memory is visible;
3. the live window of earlier messages (detail level of §8.2, never more than 25 % of the model's
   context; it slides in chunks, so most turns keep the same prefix);
4. the recalled part of the memory section for this message (or the withheld footnote), then the
   user's message.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from core import language
from core import prompt_section as ps
from core import summaries as rolling
from core import tools as memory_tools
from core.chats import Chat, Chats
from core.clock import Clock, SystemClock
from core.errors import MemoryOpError
from core.llm import ChatModel, Done, Message, ModelError, TextDelta, ToolCall
from core.memory import Memory
from core.memory_writer import MEMORY_WRITES, STEP_RULE, STRUCTURED, MemoryWriter
from core.persona import (
    ANSWER_FROM_MEMORY,
    DEFAULT_PERSONA,
    MEMORY_RULE,
    NEVER_INVENT,
    NO_MEMORY_TOOLS_NOTE,
    NOTHING_RECALLED,
)
from core.privacy import TurnContext
from core.prompt_section import RECALLED_HEADER, PromptSection
from core.records import GLOBAL_SCOPE, Rollback
from core.reminders import Reminder
from core.reply_guard import (
    EchoHold,
    MarkupFilter,
    PreambleFilter,
    ScriptFixer,
    admits_not_knowing,
    asks_about_owner,
    brings_news,
    is_echo,
)
from core.summarizer import Progress as SummaryProgress
from core.summarizer import StepResult, Summarizer
from core.text import stem_set as text_stems
from core.transcript import StoredMessage, Transcript, Window, live_window
from core.window_saver import WindowSaver

log = logging.getLogger("eva.conversation")

__all__ = [  # StoredMessage is re-exported for the chat screen
    "DETAIL_LEVELS", "Conversation", "ConversationConfig", "DetailLevel", "MemoryUsed", "Notice",
    "Remembering", "SleepGate", "Sleeping", "StoredMessage", "Token", "ToolFinished",
    "ToolStarted", "TurnDone", "TurnError", "TurnEvent", "user_prompt", "window_budget",
]

# ---------------------------------------------------------------------------- detail levels


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
# Small models tend to read a tool result as the owner's words and answer it (or echo it):
# every result says whom it is for.
TOOL_RESULT_TRAILER = ("(Memory tool result, for you only: the owner does not see it. Do not "
                       "repeat it; continue your reply to the owner's message.)")
REPLY_NUDGE = "The memory operations are done. Now reply to the owner's message, in their language."
# An empty or echoing reply is tried once more with safer sampling and one of these notes (an
# echoed question is shown back to the model as its own attempt; a statement is quoted instead,
# REFRAME below).
RETRY_NUDGE = "Your reply was empty. Answer the owner's message now, briefly."
# not "The owner wrote in English: …": measured on the default model, that opening came back as
# the reply with the owner's question after it, and the next replies copied the pattern
LANGUAGE_NUDGE = "Your reply must be in {language}."
# for a question "a short warm comment or question" (the note statements had) was itself the
# failure: measured on the default model, an echoed "Куда я собираюсь поехать осенью?" came
# back as "Привет! Как дела?"
QUESTION_ECHO_NUDGE = ("You repeated the owner's question instead of answering it. You are Eva, "
                       "not the owner. Answer the question now, briefly, from what you remember "
                       "about the owner.")
# measured on the default model: after one generic reply ("Здравствуйте, Дима! Я рад, что у вас
# есть возможность знакомиться. Как дела?") it gave the same words to the next 4 statements, and
# "Как ты?" to 5 more — each copy in the window made the next one likelier
REPEAT_NUDGE = ("You already gave that same reply earlier in this chat. Now reply in new "
                "words: a short warm comment or question about what the owner just said.")
MAX_EARLIER = 10  # Eva's last replies in the window that a new reply must not copy
# The retry after an echoed or empty reply to a statement. Measured on the default model, the
# first reply forced to an echo on 16 first messages (8 RU/EN, twice): the echo kept in the
# prompt with a note after it ("You repeated the owner's words as if they were yours … reply in
# your own words: a short warm comment or question") gave 3 echoes or empty replies, and
# answers in the owner's voice ("о моем коте Барсике"); the message quoted as the owner's, 1,
# and most replies addressed the owner by name ("Привет, Оля!", "Hi Tom!").
REFRAME = ("The owner just told you: \u00ab{text}\u00bb\n\nThose are the owner's words about "
           "their own life, not yours. Reply to the owner as Eva, in your own words: a short warm "
           "comment or question about what they told you.")
# a reply to a question about the owner that stated what nothing the turn was shown holds, or
# spoke of the owner's life as Eva's own (core.reply_guard.invents): asked once more, unseen
INVENT_NUDGE = ("Your memory does not say that. Answer the owner only from the memory lines "
                "and the conversation, and speak of the owner as \"you\". If they do not "
                "answer the question, say plainly that you don't know and ask the owner.")
# … and when the second reply invents too, Eva says she does not know
DONT_KNOW = {
    language.RUSSIAN: "Этого я не знаю: в моей памяти об этом ничего нет. Расскажешь?",
    language.ENGLISH: "I don't know that: there is nothing about it in my memory. Will you "
                      "tell me?",
}
_CANNED_DONT_KNOW = frozenset(DONT_KNOW.values())


def reminder_line(item: Reminder, lang: str | None) -> str:
    """Eva's own line for the day's reminder (SPEC §8.11), added after her first reply of the
    day when the reply itself did not bring the item up: the owner's words quoted, with when
    they are due. Measured with the default model (tests/test_reminders_real.py): with the
    reminder in the prompt it answered "Доброе утро, Ева! Как дела?" and left it out, and a
    nudge after the message made it greet back twice; when it did mention it, it repeated the
    owner's words as its own ("Я обещал маме…"). Only for an item still ahead (today, tomorrow,
    in a few days): an overdue one may have been done without a word, and one read from a
    complaint ("Соседи сверлят, и это в субботу!", measured on an unseen scenario) came back as
    "срок был 06.06" in an answer about work — the card still lists it for the owner to dismiss."""
    quote = " ".join(item.content.split())
    if lang == language.RUSSIAN:
        when = {0: "на сегодня", 1: "на завтра"}.get(
            item.days, f"через {item.days} дн., {item.on:%d.%m}")
        return f"Кстати, напоминаю ({when}): «{quote}»"
    return f"By the way, a reminder ({item.when}): “{quote}”"


def mentions(reply: str, content: str) -> bool:
    """The reply already brings the item up: it shares two of its words (one when the item
    has only one), by stem."""
    theirs = text_stems(content)
    return len(text_stems(reply) & theirs) >= min(2, len(theirs))
REFUSAL_NUDGE = ("The owner is simply talking with you about their life; there is nothing to "
                 "refuse. Reply warmly and briefly to what they said.")
# … and when a statement's reply only echoed the owner twice, a short acknowledgement in Eva's
# voice instead of nothing (measured, issue 26: the default model echoed a correction twice on 7
# of 54 labelled statements — "Update: Anna moved again, she now lives in Yerevan." came back
# as "Anna moved again, she now lives in Yerevan." — and the owner saw only a notice)
ACKNOWLEDGE = {
    language.RUSSIAN: "Поняла, спасибо, что рассказываешь мне.",
    language.ENGLISH: "Got it, thank you for telling me.",
}
NO_REPLY_NOTICE = ("Eva could not find an answer to this message. Try saying it another way, "
                   "or press Ctrl+R to regenerate.")


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

    def __post_init__(self) -> None:
        if self.memory_writes not in MEMORY_WRITES:
            raise ValueError(f"memory_writes must be one of {', '.join(MEMORY_WRITES)} "
                             f"(got {self.memory_writes!r})")
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


# ---------------------------------------------------------------------------- events


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
    return (f"Eva tried to change or forget more than {cap} memories in one message; only the "
            f"first {cap} were changed (the rest are untouched). To change more, use the "
            "memories screen, or raise [memory] model_changes_per_turn.")


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


@dataclass(frozen=True)
class TurnError:
    turn_id: str
    message: str  # calm, safe to show the owner


TurnEvent = (Sleeping | MemoryUsed | Token | ToolStarted | ToolFinished | Remembering | Notice
             | TurnDone | TurnError)


class SleepGate(Protocol):
    """What a turn needs from sleep (SPEC §7): is she asleep, and wait until she wakes."""

    def is_sleeping(self) -> bool: ...

    def wait_awake(self, cancel: threading.Event | None) -> bool:
        """Block until awake; False if cancelled first."""
        ...


# ---------------------------------------------------------------------------- the engine


@dataclass
class _TurnStats:
    started: float
    prompt_tokens: int = 0
    evaluated: int = 0
    completion: int = 0
    calls: int = 0
    stopped: bool = False
    first: float | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Conversation:
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
        chat = (self.chats.get(chat_id) if chat_id is not None
                else self.chats.current(self.config.persona_id, channel, self.clock.now()))
        self.chat_id = chat.id
        self._window_start: int | None = chat.window_start  # first message id of the live
        # window (a turn moves it when the window slides; reading the window never does)

    # ------------------------------------------------------------------ chats (§8.9)
    @property
    def chat(self) -> Chat:
        return self.chats.get(self.chat_id)

    def switch_chat(self, chat_id: int) -> Chat:
        """Continue another live chat (its window starts where it was left)."""
        with self._busy:
            chat = self.chats.get(chat_id)
            if chat.archived:
                raise MemoryOpError(f"chat #{chat_id} is in the archive: restore it first")
            self.chat_id = chat.id
            self._window_start = chat.window_start
            return chat

    def new_chat(self, title: str = "") -> Chat:
        """Start a new chat of this persona and channel and switch to it."""
        chat = self.chats.create(self.config.persona_id, self.channel, self.clock.now(), title)
        return self.switch_chat(chat.id)

    def clear_chat(self) -> int:
        """Clear this chat's history (messages and summaries to the archive)."""
        with self._busy:
            n = self.chats.clear(self.chat_id, self.clock.now())
            self._window_start = None
            return n

    def delete_chat(self, chat_id: int) -> Chat:
        """Delete a chat (to the archive). Deleting the current one switches to the most
        recent other chat, or a new one."""
        archived = self.chats.archive(chat_id, self.clock.now())
        if chat_id == self.chat_id:
            nxt = self.chats.current(self.config.persona_id, self.channel, self.clock.now())
            self.switch_chat(nxt.id)
        return archived

    # ------------------------------------------------------------------ summaries (§8.3)
    @property
    def summarizer(self) -> Summarizer:
        """The background summariser of this conversation's chats (one per conversation; the
        structured memory step runs over each chunk first when learning is on)."""
        if self._summarizer is None:
            saver = WindowSaver(self.memory, self.writer, self._transcript.set_meta)
            self._summarizer = Summarizer(
                self.summaries, self.model, clock=self.clock,
                detail_level=self.config.detail_level, writer=saver)
        s = self._summarizer
        s.detail_level = self.config.detail_level
        if s.writer is not None and not (self.config.learning and self.structured):
            s.writer = None
        elif s.writer is None and self.config.learning and self.structured:
            s.writer = WindowSaver(self.memory, self.writer, self._transcript.set_meta)
        return s

    def summarise(self, cancel: threading.Event | None = None,
                  progress: Callable[[StepResult], None] | None = None,
                  chat_id: int | None = None) -> list[StepResult]:
        """Summarise what has left the window of a chat (this one by default), until there is
        nothing left, a turn wants the model (it interrupts), or ``cancel``. Blocking: run it
        in a background worker, never on the send path."""
        if not self.config.summaries:
            return []
        target = self.chat_id if chat_id is None else chat_id

        def start() -> int | None:
            return self._window_start if target == self.chat_id else (
                self.chats.get(target).window_start)

        results = self.summarizer.run(target, start, cancel, progress)
        if (target == self.chat_id and self._last_ctx is not None
                and any(r.summary is not None for r in results)
                and not self.summarizer.interrupt.is_set()
                and not (cancel is not None and cancel.is_set())):
            # A new summary changed the prompt's prefix: read it now, in the background, not
            # in the owner's next turn (measured: 25 s before a first token on the default
            # model); a turn that wants the model stops this at once (the model gives way).
            self.warm_up(self._last_ctx)
        return results

    def summary_progress(self, chat_id: int | None = None) -> SummaryProgress:
        target = self.chat_id if chat_id is None else chat_id
        start = self._window_start if target == self.chat_id else (
            self.chats.get(target).window_start)
        return self.summarizer.progress(target, start)

    def summary_block(self, ctx: TurnContext) -> str:
        """The summary block this turn's prompt carries ("" when none)."""
        return rolling.render(self.summaries.for_prompt(self.chat_id, ctx.sees_private))

    def use_persona(self, persona_id: str, persona_text: str, detail_level: str,
                    learning: bool) -> None:
        """Run the next turns as this persona (SPEC §8.6): its text, detail level (§8.2) and
        learning toggle (§8.7), and its own chats: a change of persona continues its most recent
        chat (or starts one). The caller's turn context carries ``persona=persona_id`` so recall
        sees its memories plus global ones."""
        if persona_id != self.config.persona_id:  # its own chats: the most recent one, or new
            with self._busy:
                chat = self.chats.current(persona_id, self.channel, self.clock.now())
                self.chat_id = chat.id
                self._window_start = chat.window_start
        self.persona = persona_text
        self.config = replace(self.config, persona_id=persona_id, detail_level=detail_level,
                              learning=learning)

    # ------------------------------------------------------------------ messages
    def _persist(self, turn_id: str, role: str, content: str, ctx: TurnContext,
                 status: str = "ok", meta: dict | None = None) -> int:
        """Store one message. ``private_ok`` records whether the turn could see private memory:
        such a message (its recalled lines, the owner's words) never enters the window of a turn
        that cannot."""
        meta = meta or {}
        tokens = self.model.count_tokens(meta.get("prompt", content)) if content else 0
        if role == "user":
            meta = {**meta, "owner": ctx.is_owner}
        return self._transcript.add(self.config.persona_id, self.channel, turn_id, role,
                                    content, private_ok=ctx.sees_private, status=status,
                                    tokens=tokens, at=self.clock.now(), meta=meta,
                                    chat_id=self.chat_id)

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
            return self.memory.rollback_turn(turn_id, also=lambda: self._transcript
                                             .discard_answers(turn_id, self.clock.now(),
                                                              keep=message_id))

    def window(self, ctx: TurnContext | None = None) -> Window:
        """The live window the next prompt carries (§8.1, §8.2), without moving it: a turn
        computes it once and keeps its start (see :func:`core.transcript.live_window`)."""
        level = DETAIL_LEVELS[self.config.detail_level]
        max_tokens, max_msgs = window_budget(level, self.model.context_size)
        sees_private = ctx.sees_private if ctx is not None else True
        return live_window(self.history(max_msgs * 2 + 2, sees_private), self._window_start,
                           max_tokens, max_msgs, self.config.slide_keep)

    def live_window(self, ctx: TurnContext | None = None) -> list[StoredMessage]:
        """The earlier messages the next prompt carries."""
        return self.window(ctx).messages

    # ------------------------------------------------------------------ prompt
    def system_prompt(self, ctx: TurnContext, section: PromptSection | None) -> str:
        """Persona first (who she is), then the memory rule (owner turns only), then core
        memory — all stable, the cached prefix. With the rule first, the small default model
        took itself for a memory tool and echoed the owner (tried in a real session)."""
        parts = [self.persona]
        learning = self.config.learning
        if learning and ctx.can_mutate:
            parts.append(STEP_RULE if self.structured else MEMORY_RULE)
        if learning and not ctx.can_mutate:
            parts.append(NO_MEMORY_TOOLS_NOTE)
        parts.append(NEVER_INVENT)
        if section is not None and section.core_text:
            parts.append(section.core_text)
        return "\n\n".join(parts)

    @property
    def structured(self) -> bool:
        """Memory is written by the structured step after the reply, not by tools (§3.1)."""
        return self.config.memory_writes == STRUCTURED

    def build_messages(self, user_text: str, ctx: TurnContext, section: PromptSection | None,
                       lang: str | None = None, window: Window | None = None, *,
                       reminder: Reminder | None = None) -> list[Message]:
        messages = self.prefix_messages(ctx, section, window)
        content = user_prompt(user_text, section, lang)
        if reminder is not None:
            content = f"{ps.reminder_block(reminder.content, reminder.when)}\n\n{content}"
        messages.append({"role": "user", "content": content})
        return messages

    def _day_reminder(self, ctx: TurnContext) -> Reminder | None:
        """SPEC §8.11: the most urgent item coming up, for the owner's first turn of the day
        (once a day, in whichever chat comes first; only what this audience may see, of the
        global memory and this persona's)."""
        if self.config.reminder_days <= 0 or not ctx.is_owner or not ctx.can_mutate:
            return None
        try:
            items = self.memory.coming_up(ctx, days=self.config.reminder_days,
                                          scopes=(GLOBAL_SCOPE, self.config.persona_id))
        except Exception as e:  # noqa: BLE001 - a reminder is a courtesy, never a failed turn
            log.warning("reminders unavailable: %s", type(e).__name__)
            return None
        day = datetime.fromtimestamp(self.clock.now()).date().isoformat()
        if not items or not self.memory.first_time(f"reminder:{day}"):
            return None
        return items[0]

    def prefix_messages(self, ctx: TurnContext, section: PromptSection | None,
                        window: Window | None = None) -> list[Message]:
        """The system prompt and the live window: the part of the next prompt that is already
        known before the owner writes."""
        messages: list[Message] = [{"role": "system", "content": self.system_prompt(ctx, section)}]
        block = self.summary_block(ctx)
        if block:
            messages.append({"role": "system", "content": block, "summary": True})
        for m in (window or self.window(ctx)).messages:
            if m.role == "assistant" and m.content.strip() in _CANNED_DONT_KNOW:
                # Eva's fixed "I don't know" is not shown to the model again, nor the question
                # it answered (measured on an unseen scenario: after one, the default model
                # copied it word for word as the answer to every later question, 0 of 10
                # known questions answered in that run)
                if messages[-1]["role"] == "user":
                    messages.pop()
                continue
            messages.append({"role": m.role, "content": m.meta.get("prompt", m.content)})
        return messages

    def warm_up(self, ctx: TurnContext) -> None:
        """Evaluate the known part of the next prompt now (at start-up, while the owner types),
        so the first message pays only for itself. Best effort: never raises."""
        section = None
        try:
            if self.config.learning:
                section = self.memory.prompt_section("", ctx)
            self.model.warm_up(self.prefix_messages(ctx, section), self.offered_tools(ctx) or None)
        except Exception:  # noqa: BLE001 - a warm-up is an optimisation, never a failure
            return

    def shown_recalled(self, ctx: TurnContext) -> set[int]:
        """Records already recalled in the live window's messages (not repeated)."""
        return self.window(ctx).recalled

    def offered_tools(self, ctx: TurnContext) -> list[dict[str, Any]]:
        if not self.config.learning or self.structured:
            return []
        extra = {name: schema for name, (schema, _handler) in self.extra_tools.items()}
        return memory_tools.tools_for(ctx, extra)

    # ------------------------------------------------------------------ turns
    def turn(self, text: str, ctx: TurnContext, cancel: threading.Event | None = None
             ) -> Iterator[TurnEvent]:
        """Run one turn. Yields events; never raises for model or tool failures."""
        turn_id = ctx.turn_id or uuid.uuid4().hex
        ctx = ctx.with_turn(turn_id)
        if not isinstance(text, str) or not text.strip():
            yield TurnError(turn_id, "The message is empty.")
            return
        if self.sleep is not None and self.sleep.is_sleeping():
            yield Sleeping()
            if not self.sleep.wait_awake(cancel):
                yield TurnError(turn_id, "Cancelled while Eva was sleeping; nothing was sent.")
                return
        with self._wanting_model(), self._busy:
            yield from self._answer(text.strip(), ctx, turn_id, cancel)

    @contextmanager
    def _wanting_model(self) -> Iterator[None]:
        """A turn interrupts the background summariser's model call (it resumes after)."""
        s = self._summarizer
        if s is not None:
            s.interrupt.set()
        try:
            yield
        finally:
            if s is not None:
                s.interrupt.clear()

    def regenerate(self, ctx: TurnContext, cancel: threading.Event | None = None
                   ) -> Iterator[TurnEvent]:
        """Discard the last answer, roll back the memory writes of its turn (pinned records
        and records changed since excepted, SPEC §8.4; what it created goes to the archive),
        and answer the same message again."""
        hist = self.history(limit=4)
        last_user = next((m for m in reversed(hist) if m.role == "user"), None)
        if last_user is None:
            yield TurnError("", "There is nothing to regenerate yet.")
            return
        if self.sleep is not None and self.sleep.is_sleeping():
            yield Sleeping()
            if not self.sleep.wait_awake(cancel):
                yield TurnError(last_user.turn_id, "Cancelled while Eva was sleeping.")
                return
        with self._wanting_model(), self._busy:
            turn = last_user.turn_id  # its answers leave with its memory writes, in one commit
            undone = self.memory.rollback_turn(
                turn, also=lambda: self._transcript.discard_answers(turn, self.clock.now()))
            if undone.kept:
                ids = ", ".join(f"#{i}" for i in undone.kept)
                yield Notice(f"Kept memory {ids} as it is: it changed after that answer "
                             "(an edit, a later turn or sleep), so regenerate left it alone.")
            yield from self._answer(last_user.content, ctx.with_turn(last_user.turn_id),
                                    last_user.turn_id, cancel, user_stored=True,
                                    user_id=last_user.id)

    def _answer(self, text: str, ctx: TurnContext, turn_id: str,
                cancel: threading.Event | None, user_stored: bool = False,
                user_id: int | None = None) -> Iterator[TurnEvent]:
        started = time.monotonic()
        self._last_ctx = ctx
        lang = self._last_lang = language.detect(text, self._last_lang)
        window = self.window(ctx)  # once per turn; the turn keeps where it starts
        if window.start != self._window_start:
            self.chats.set_window_start(self.chat_id, window.start)
        self._window_start = window.start
        section = None
        if self.config.learning:
            # A question gets its best records again even if the window recalled them before
            # (measured on bench.companion, default model: "Какой кофе я пью?" got no line — the
            # coffee record was recalled six questions earlier — and "Я пью кофе в morning").
            # A statement does not: repeating "Меня зовут Дима" under every later statement
            # made the model greet Dima again in 14 of 20 replies.
            section = self.memory.prompt_section(
                text, ctx, exclude=window.recalled,
                repeat_best=None if language.is_question(text) else 0)
            yield MemoryUsed(section)
        reminder = self._day_reminder(ctx) if section is not None else None
        messages = self.build_messages(text, ctx, section, lang, window, reminder=reminder)
        if user_stored:  # regenerate: the message is already in the window; drop that copy
            messages = self._drop_current_user(messages)
        else:
            # The user's message is stored as the model saw it (with its recalled lines), so
            # the next turn's prompt repeats this one token for token: the KV cache holds.
            user_id = self._persist(turn_id, "user", text, ctx, meta={
                "prompt": messages[-1]["content"],
                "recalled": list(section.recalled_ids) if section else [],
                **({"reminder": reminder.id} if reminder is not None else {})})
        tools = self.offered_tools(ctx)
        offered = {t["name"] for t in tools}
        st = _TurnStats(started)
        ops: list[dict] = []
        answer: list[str] = []

        def own_line(lines: dict[str, str]) -> Token:
            """One of Eva's fixed lines (DONT_KNOW, ACKNOWLEDGE) in the owner's language, as
            the whole answer."""
            answer[:] = [lines.get(lang or "", lines[language.ENGLISH])]
            st.first = st.first if st.first is not None else st.elapsed()
            return Token(answer[0])

        # never invent (§8.10): what this turn was shown is what Eva may say about the owner
        support = "\n".join([section.text if section else "", self.summary_block(ctx),
                             reminder.content if reminder is not None else "",
                             *(m.content for m in window.messages if m.role == "user"), text])
        echo = EchoHold(text, lang, earlier=self._earlier_replies(window, text), support=support)
        nudged = retried = capped = after_invention = False
        try:
            rounds = 0
            while True:
                rounds += 1
                last_round = rounds > self.config.max_tool_rounds
                temperature = (self.config.retry_temperature if retried
                               else self.config.question_temperature if echo.question
                               else self.config.temperature)
                pending: list[ToolCall] = []
                round_text: list[str] = []
                # The same tools every round: the prompt prefix (tools sit in the system block)
                # stays identical, so the KV cache holds across rounds and turns.
                yield from self._round(messages, tools, cancel, temperature, st, echo, pending,
                                      round_text)
                answer.append("".join(round_text))
                if st.stopped:
                    held = echo.finish()
                    if held and not echo.echoes("".join(answer).strip()):
                        yield Token(held)  # Esc keeps the partial answer, as shown
                    elif held:
                        answer.clear()
                    break
                if pending and last_round:
                    yield Notice(f"Eva asked for {len(pending)} more memory operation(s) after "
                                 f"{self.config.max_tool_rounds} rounds; they were not run.")
                    break
                if pending:
                    messages.append({"role": "assistant", "content": "".join(round_text),
                                     "tool_calls": [{"name": c.name, "arguments": c.arguments}
                                                    for c in pending]})
                    for c in pending:
                        yield ToolStarted(c.name, c.arguments)
                        result = self._run_tool(c, offered, ctx)
                        ops.append({"tool": c.name, "ok": result.ok, **result.data})
                        yield ToolFinished(c.name, result)
                        if "capped" in result.data and not capped:
                            capped = True
                            yield Notice(capped_notice(result.data["capped"]))
                        messages.append({"role": "tool", "name": c.name,
                                         "content": f"{result.text}\n{TOOL_RESULT_TRAILER}"})
                    continue
                sofar = "".join(answer).strip()
                if ops and not nudged and not sofar and not last_round:
                    # small models sometimes fall silent after a tool call: ask once more
                    nudged = True
                    messages.append({"role": "system", "content": REPLY_NUDGE})
                    continue
                held = echo.finish()  # "" once released
                wrong_language = echo.wrong_language
                refused = echo.refused
                invented = echo.invented
                echoed = bool(sofar) and echo.echoes(sofar)
                repeated = bool(sofar) and not echoed and echo.repeats(sofar)
                if not echo.released and not retried and (
                        not sofar or wrong_language or echoed or refused or repeated
                        or invented):
                    # nothing was shown: an empty reply, one in the other language, or one that
                    # only repeats the owner — ask once more (the language is not checked again)
                    retried = True
                    after_invention = invented
                    answer.clear()
                    say = language.reply_instruction(lang)
                    if wrong_language:
                        nudge = LANGUAGE_NUDGE.format(language=language.NAMES.get(lang, ""))
                    elif refused:
                        nudge = REFUSAL_NUDGE
                    elif invented:
                        nudge = INVENT_NUDGE
                    elif repeated:
                        nudge = REPEAT_NUDGE
                    elif not echo.question and (echoed or not sofar):
                        nudge = ""  # the owner's words quoted as theirs, no echo to copy
                    else:
                        nudge = RETRY_NUDGE if not sofar else QUESTION_ECHO_NUDGE
                    if not nudge:
                        messages = reframed(messages, text)
                        note = REFRAME.format(text=text)
                    elif invented:
                        # the note inside the owner's message, the prompt ending on the owner's
                        # turn: measured on companion_b with the default model, after a trailing
                        # system note the retry came back empty 5 times in 14 questions
                        note = f"{nudge} {say}"
                        messages = noted(messages, note)
                    else:
                        if sofar and not (wrong_language or refused or invented):  # its echo
                            messages.append({"role": "assistant", "content": sofar,
                                             "retry": True})
                        note = f"{nudge} {say}"
                        messages.append({"role": "system", "retry": True, "content": note})
                    # a small model may read the note back as its answer: that is an echo too.
                    # After a reply in the other language the language is watched again (held
                    # while wrong), so a second "I don't know" in it is said in the owner's
                    echo = EchoHold(text, lang if wrong_language else None, also=[note],
                                    support=support,
                                    earlier=self._earlier_replies(window, text))
                    continue
                if retried and repeated and not echo.released:
                    # asked again, it copied an earlier reply of the chat again (measured on an
                    # unseen scenario: after "Ваша жена Alesya из Минска", the next Russian
                    # questions — the dog, the mother, the repairs — got the same line): for a
                    # question she says she does not know, for a statement she acknowledges it
                    yield own_line(DONT_KNOW if echo.question else ACKNOWLEDGE)
                    break
                if (invented and echo.claims) or (after_invention and not echo.released
                                                  and not (held and not echoed)):
                    # asked again, it made a fact up again (or said nothing): she
                    # says she does not know (a reply only in the wrong voice is shown: its
                    # facts are the memory's, and an answer is not thrown away for grammar)
                    yield own_line(DONT_KNOW)
                    break
                if (retried and wrong_language and echo.question and held
                        and admits_not_knowing(held)):
                    # asked again in the owner's language, it said it does not know in the
                    # other one again (seen as the owner: "Какой у меня любимый фильм?" got
                    # "I don't know what your favorite movie is."): her own words, in hers
                    yield own_line(DONT_KNOW)
                    break
                if held and not echoed:
                    st.first = st.first if st.first is not None else st.elapsed()
                    yield Token(held)
                elif (held or not sofar) and retried and (
                        not echo.question or echo.support is not None):
                    # a statement asked twice and still only echoed: she acknowledges it; a
                    # question about the owner's life: she says she does not know (measured on
                    # the default model: "Сколько мне лет?" echoed, then empty — a notice only)
                    yield own_line(DONT_KNOW if echo.question else ACKNOWLEDGE)
                elif held or not sofar:
                    answer.clear()
                    yield Notice(NO_REPLY_NOTICE)
                break
        except ModelError as e:
            final = "".join(answer).strip()
            if final:
                self._persist(turn_id, "assistant", final, ctx, "error", {"ops": ops})
            yield TurnError(turn_id, f"The model failed: {e}")
            return
        final = "".join(answer).strip()
        if (reminder is not None and reminder.days >= 0 and not st.stopped
                and not mentions(final, reminder.content)):
            # the day's reminder, in Eva's own line, when her reply left it out (§8.11)
            line = reminder_line(reminder, lang)
            yield Token(f"\n\n{line}" if final else line)
            final = f"{final}\n\n{line}" if final else line
        meta = {"ops": ops, "prompt_tokens": st.prompt_tokens, "evaluated": st.evaluated}
        msg_id = self._persist(turn_id, "assistant", final, ctx,
                               "stopped" if st.stopped else "ok", meta)
        if (self.structured and self.config.learning and ctx.can_mutate and not st.stopped):
            yield Remembering()
            outcome = self.writer.run(
                [*self._for_writer(messages), {"role": "assistant", "content": final}], text,
                ctx, section.core_ids if section else (), cancel)
            st.calls += outcome.model_calls
            for r in outcome.results:
                ops.append({"tool": r.name, "ok": r.ok, **r.data})
                yield ToolFinished(r.name, r)
                if "capped" in r.data and not capped:
                    capped = True
                    yield Notice(capped_notice(r.data["capped"]))
            if outcome.error and not (cancel is not None and cancel.is_set()):
                yield Notice(f"Eva could not update her memory for this message "
                             f"({outcome.error}).")
            if ops:  # the step's notes join the answer's (shown again after a restart)
                self._set_meta(msg_id, meta)
        yield TurnDone(turn_id, final, st.stopped, st.prompt_tokens, st.evaluated, st.completion,
                       st.first, time.monotonic() - started, st.calls, msg_id, user_id)

    def _round(self, messages: list[Message], tools: list[dict[str, Any]],
               cancel: threading.Event | None, temperature: float, st: _TurnStats,
               echo: EchoHold, pending: list[ToolCall], round_text: list[str]
               ) -> Iterator[TurnEvent]:
        """One model call: text goes through the markup filter and the echo hold before the
        owner sees it; tool calls are collected in ``pending``."""
        st.calls += 1
        markup = MarkupFilter()
        script = ScriptFixer()
        preamble = PreambleFilter()

        def show(piece: str) -> Iterator[TurnEvent]:
            if not piece:
                return
            round_text.append(piece)
            out = echo.feed(piece)
            if out:
                if st.first is None:
                    st.first = st.elapsed()
                yield Token(out)

        for ev in self.model.stream_chat(messages, tools or None, cancel,
                                         self.config.max_answer_tokens, temperature):
            if isinstance(ev, TextDelta):
                yield from show(preamble.feed(script.feed(markup.feed(ev.text))))
                if echo.wrong_language or echo.refused or echo.invented:
                    break  # unseen, in the other language, a refusal or made up: ask again
            elif isinstance(ev, ToolCall):
                pending.append(ev)
            elif isinstance(ev, Done):
                st.prompt_tokens += ev.prompt_tokens
                st.evaluated += ev.evaluated_tokens
                st.completion += ev.completion_tokens
                st.stopped = st.stopped or ev.stopped
        yield from show(preamble.feed(script.feed(markup.finish()) + script.finish())
                        + preamble.finish())

    def _run_tool(self, c: ToolCall, offered: set[str], ctx: TurnContext
                  ) -> memory_tools.ToolResult:
        if c.name not in offered:
            return memory_tools.ToolResult(
                c.name, False, f"Error: tool {c.name!r} is not available here",
                {"error": "not offered"})
        if c.name in self.extra_tools:
            return self.extra_tools[c.name][1](ctx)
        return memory_tools.call(self.memory, c.name, c.arguments, ctx)

    @staticmethod
    def _earlier_replies(window: Window, text: str) -> list[str]:
        """Eva's last replies in the live window, which this reply must not copy — none when the
        owner repeats a message of the window (the same answer is then the right one)."""
        said = [m.content for m in window.messages if m.role == "user"]
        # the same message, not one a word away: "Как зовут мою маму?" after "Как зовут мою
        # жену?" is 0.8 similar, and its answer must not be the wife's again
        if any(is_echo(text, m) and not brings_news(text, m) for m in said):
            return []
        return [m.content for m in window.messages if m.role == "assistant"][-MAX_EARLIER:]

    @staticmethod
    def _for_writer(messages: list[Message]) -> list[Message]:
        """The reply's prompt as the writer continues it (retry notes dropped: the reply that
        stands was written to the owner's message, and the next turn will not carry them)."""
        return [{k: v for k, v in m.items() if k != "original"} | {"content": m["original"]}
                if "original" in m else m for m in messages if not m.get("retry")]

    def _set_meta(self, message_id: int, meta: dict) -> None:
        self._transcript.set_meta(message_id, meta)

    @staticmethod
    def _drop_current_user(messages: list[Message]) -> list[Message]:
        """On regenerate the stored user message is already the window's last message: keep it
        in place as it was (same prompt form) and drop the freshly built copy."""
        body = messages[1:-1]
        if body and body[-1]["role"] == "user":
            return [messages[0], *body]
        return messages


def reframed(messages: list[Message], text: str) -> list[Message]:
    """The prompt again with the owner's last message quoted as the owner's (REFRAME; the
    recalled lines and the language line stay): the retry after a statement the reply repeated
    or left unanswered. The message keeps its form under ``original``: the memory step
    continues the prompt as the owner's next turn will carry it."""

    def quote(content: str) -> str:
        head, sep, tail = content.rpartition(text)
        return f"{head}{REFRAME.format(text=text)}{tail}" if sep else \
            f"{content}\n\n{REFRAME.format(text=text)}"

    return _last_user_rewritten(messages, quote)


def noted(messages: list[Message], note: str) -> list[Message]:
    """The prompt again with ``note`` after the owner's last message, inside it (the message
    keeps its form under ``original``, as :func:`reframed` does)."""
    return _last_user_rewritten(messages, lambda content: f"{content}\n\n{note}")


def _last_user_rewritten(messages: list[Message], rewrite: Callable[[str], str]
                         ) -> list[Message]:
    """The prompt with its last user message's content rewritten; the form it had before any
    rewrite is kept under ``original``."""
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i]["role"] == "user":
            content = out[i]["content"]
            out[i] = {**out[i], "content": rewrite(content),
                      "original": out[i].get("original", content)}
            break
    return out


def user_prompt(user_text: str, section: PromptSection | None, lang: str | None = None) -> str:
    """The last user message as the model sees it: recalled memory first, then the message,
    then which language to answer in (close to the generation point, where a small model
    still heeds it)."""
    say = language.reply_instruction(lang)
    body = f"{user_text}\n\n{say}" if say else user_text
    if section is None:
        return body
    if section.recalled_text:
        return f"{section.recalled_text}\n\n## Message\n{body}"
    if not asks_about_owner(user_text):
        return body
    # a question about the owner and nothing recalled: said plainly (§8.10). Not after recalled
    # lines: measured on companion_a with the default model, "answer only from these lines"
    # after them made it say "не знаю" with the answer among them (known answers 7/8 → 4/8)
    return (f"{RECALLED_HEADER}\n{NOTHING_RECALLED}\n{ANSWER_FROM_MEMORY}\n\n"
            f"## Message\n{body}")
