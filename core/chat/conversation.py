"""Chat turns (SPEC §1, §3, §5, §8.1, §8.2, §8.4, §8.7): one call per user message, a stream of
typed events out (:mod:`core.chat.events`). A surface (the TUI, the HTTP API) drives it; the
model is any :class:`core.llm.ChatModel`.

A turn, top to bottom (:meth:`Conversation._answer`):

1. :meth:`~Conversation._start` — the live window (computed once; the turn keeps where it
   starts), the memory section, the day's reminder, and the prompt, built by
   :mod:`core.chat.prompt` (its layout is there); the owner's message is stored as the model
   saw it. The result is a :class:`core.chat.turn.Turn`.
2. :meth:`~Conversation._reply` — model calls until the reply stands. Each call's text goes
   through the stream filters (:mod:`core.chat.filters`) and the judge
   (:mod:`core.chat.judge`) before the owner sees it; tool calls run between calls (tools
   mode); the judge's verdict on the whole reply goes to :func:`core.chat.retry.decide` (ask
   once more, with which note) and then :func:`core.chat.retry.settle` (what stands).
3. :meth:`~Conversation._finish` — the day's reminder line, the answer stored, the structured
   memory step (§3.1), :class:`TurnDone`.

The current chat and its window start are :class:`core.chat.switching.CurrentChat`'s; what the
conversation holds outside a turn (its chats, messages, live window and the owner's hands on
them) is :class:`core.chat.session.ChatSession`'s, which it extends; its settings are
:mod:`core.chat.conversation_config`'s.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

from core import language
from core.chat import prompt
from core.chat import summaries as rolling
from core.chat.events import (
    MemoryUsed,
    Notice,
    Remembering,
    Sleeping,
    Token,
    ToolFinished,
    TurnDone,
    TurnError,
    TurnEvent,
    capped_notice,
)
from core.chat.invention import asks_about_owner
from core.chat.judge import ReplyJudge, earlier_replies, questions_before
from core.chat.memory_writer import STRUCTURED
from core.chat.reminder import day_reminder, mentions, reminder_line
from core.chat.reply import Reply
from core.chat.session import ChatSession
from core.chat.summarizer import Progress as SummaryProgress
from core.chat.summarizer import StepResult, Summarizer
from core.chat.transcript import StoredMessage, Window
from core.chat.turn import Turn, TurnStats
from core.chat.window_saver import STEP_FAILED, WindowSaver
from core.llm import ChoiceModel, Message, ModelError, ToolCall
from core.memory import tools as memory_tools
from core.memory.prompt_section import PromptSection
from core.privacy import TurnContext
from core.reminders.schedule import Reminder
from core.sleep.candidates import relations
from core.text import name_words

# the people of the support whose roles a question's judge looks up in memory (at most)
_WHOSE_NAMES = 12

__all__ = ["Conversation", "StoredMessage"]  # StoredMessage is re-exported for the chat screen


class Conversation(ChatSession):
    """The turns of a :class:`ChatSession`, with its summaries and its prompt."""

    # ------------------------------------------------------------------ summaries (§8.3)
    @property
    def summarizer(self) -> Summarizer:
        """The background summariser of this conversation's chats (one per conversation; the
        structured memory step runs over each chunk first when learning is on)."""
        if self._summarizer is None:
            saver = WindowSaver(self.memory, self.writer, self._transcript.set_meta)
            self._summarizer = Summarizer(
                self.summaries,
                self.model,
                clock=self.clock,
                detail_level=self.config.detail_level,
                writer=saver,
            )
        s = self._summarizer
        s.detail_level = self.config.detail_level
        if s.writer is not None and not (self.config.learning and self.structured):
            s.writer = None
        elif s.writer is None and self.config.learning and self.structured:
            s.writer = WindowSaver(self.memory, self.writer, self._transcript.set_meta)
        return s

    def summarise(
        self,
        cancel: threading.Event | None = None,
        progress: Callable[[StepResult], None] | None = None,
        chat_id: int | None = None,
    ) -> list[StepResult]:
        """Summarise what has left the window of a chat (this one by default), until there is
        nothing left, a turn wants the model (it interrupts), or ``cancel``. Blocking: run it
        in a background worker, never on the send path."""
        target = self.chat_id if chat_id is None else chat_id
        if self.structured and self.config.learning:
            # first the owner's words whose turn's memory step failed (issue 26: nothing lost)
            self.summarizer.retry_failed(target, self._current.window_start_of(target), cancel)
        results = (
            self.summarizer.run(
                target, lambda: self._current.window_start_of(target), cancel, progress
            )
            if self.config.summaries
            else []
        )
        if (
            target == self.chat_id
            and self._last_ctx is not None
            and not self.summarizer.interrupt.is_set()
            and not (cancel is not None and cancel.is_set())
        ):
            # A new summary changed the prompt's prefix: read it now, in the background, not
            # in the owner's next turn (measured: 25 s before a first token on the default
            # model); a turn that wants the model stops this at once (the model gives way).
            # Without one, the window may have slid all the same.
            if any(r.summary is not None for r in results):
                self.warm_up(self._last_ctx)
            else:
                self.warm_up_next(self._last_ctx)
        return results

    def summary_progress(self, chat_id: int | None = None) -> SummaryProgress:
        target = self.chat_id if chat_id is None else chat_id
        return self.summarizer.progress(target, self._current.window_start_of(target))

    def summary_block(self, ctx: TurnContext) -> str:
        """The summary block this turn's prompt carries ("" when none)."""
        return rolling.render(self.summaries.for_prompt(self.chat_id, ctx.sees_private))

    # ------------------------------------------------------------------ prompt
    def system_prompt(self, ctx: TurnContext, section: PromptSection | None) -> str:
        """The first system message (:func:`core.chat.prompt.system_prompt`)."""
        return prompt.system_prompt(self.persona, self._rule(ctx), section)

    def _rule(self, ctx: TurnContext) -> str | None:
        return prompt.memory_rule(self.config.learning, ctx.can_mutate, self.structured)

    @property
    def structured(self) -> bool:
        """Memory is written by the structured step after the reply, not by tools (§3.1)."""
        return self.config.memory_writes == STRUCTURED

    def build_messages(
        self,
        user_text: str,
        ctx: TurnContext,
        section: PromptSection | None,
        lang: str | None = None,
        window: Window | None = None,
        *,
        reminder: Reminder | None = None,
    ) -> list[Message]:
        """The whole prompt for ``user_text`` (:func:`core.chat.prompt.build_messages`)."""
        return prompt.build_messages(
            persona=self.persona,
            rule=self._rule(ctx),
            section=section,
            summary=self.summary_block(ctx),
            window=(window or self.window(ctx)).messages,
            user_text=user_text,
            lang=lang,
            reminder=reminder,
        )

    def prefix_messages(
        self, ctx: TurnContext, section: PromptSection | None, window: Window | None = None
    ) -> list[Message]:
        """The system prompt and the live window: the part of the next prompt that is already
        known before the owner writes."""
        return prompt.prefix_messages(
            self.system_prompt(ctx, section),
            self.summary_block(ctx),
            (window or self.window(ctx)).messages,
        )

    def warm_up(
        self, ctx: TurnContext, window: Window | None = None, section: PromptSection | None = None
    ) -> None:
        """Evaluate the known part of the next prompt now (at start-up, while the owner types),
        so the first message pays only for itself (``window``: the next turn's, and
        ``section``: its core part, when the caller has read them). Best effort: never
        raises."""
        try:
            if section is None and self.config.learning:
                section = self.memory.prompt_section("", ctx)
            if section is not None:
                self._core_read = section.core_text
            self.model.warm_up(
                self.prefix_messages(ctx, section, window), self.offered_tools(ctx) or None
            )
        except Exception:  # noqa: BLE001 - a warm-up is an optimisation, never a failure
            return

    def warm_up_next(self, ctx: TurnContext) -> bool:
        """After a turn, while the owner types: when the window the next turn will carry no
        longer starts where this turn's did (it overflowed and slid, SPEC §8.2), read the new
        prefix now (:meth:`warm_up`) — else the next turn reads the whole window again before
        its first token: measured on bench.companion scenario e (default model, 2 threads),
        1164 tokens, 16 s, where 2-3 s is usual. So too when the core part of the system prompt
        changed (the owner's introduction saved as core). Returns whether it warmed up."""
        window = self.window(ctx)
        # the core part the next turn's system prompt carries, read once for both the test
        # and the warm-up (a turn that saved the owner's introduction as core changed it)
        section = None
        if self.config.learning:
            try:
                section = self.memory.prompt_section("", ctx)
            except Exception:  # noqa: BLE001 - a warm-up is an optimisation, never a failure
                return False
        core = section.core_text if section is not None else ""
        if window.start in (self._window_start, self._warmed_start) and core == self._core_read:
            return False  # the same prefix, or read already: the cache (or a snapshot) has it
        self.warm_up(ctx, window, section)  # read once, not again from the transcript or store
        self._warmed_start = window.start
        return True

    def offered_tools(self, ctx: TurnContext) -> list[dict[str, Any]]:
        if not self.config.learning or self.structured:
            return []
        extra = {name: schema for name, (schema, _handler) in self.extra_tools.items()}
        return memory_tools.tools_for(ctx, extra)

    # ------------------------------------------------------------------ turns
    def turn(
        self, text: str, ctx: TurnContext, cancel: threading.Event | None = None
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

    def regenerate(
        self, ctx: TurnContext, cancel: threading.Event | None = None
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
                turn, also=lambda: self._transcript.discard_answers(turn, self.clock.now())
            )
            if undone.kept:
                ids = ", ".join(f"#{i}" for i in undone.kept)
                yield Notice(
                    f"Kept memory {ids} as it is: it changed after that answer "
                    "(an edit, a later turn or sleep), so regenerate left it alone."
                )
            yield from self._answer(
                last_user.content,
                ctx.with_turn(last_user.turn_id),
                last_user.turn_id,
                cancel,
                user_stored=True,
                user_id=last_user.id,
            )

    def _answer(
        self,
        text: str,
        ctx: TurnContext,
        turn_id: str,
        cancel: threading.Event | None,
        user_stored: bool = False,
        user_id: int | None = None,
    ) -> Iterator[TurnEvent]:
        """One turn, top to bottom: its prompt, its reply, then what follows the reply."""
        stats = TurnStats(time.monotonic())
        turn = yield from self._start(text, ctx, turn_id, stats, user_stored, user_id)
        try:
            yield from Reply(self.model, self.config, self._run_tool).run(turn, cancel)
        except ModelError as e:
            if turn.reply:
                self._persist(turn_id, "assistant", turn.reply, ctx, "error", {"ops": turn.ops})
            yield TurnError(turn_id, f"The model failed: {e}")
            return
        yield from self._finish(turn, cancel)

    def _start(
        self,
        text: str,
        ctx: TurnContext,
        turn_id: str,
        stats: TurnStats,
        user_stored: bool,
        user_id: int | None,
    ) -> Generator[TurnEvent, None, Turn]:
        """The turn's window, memory section, day's reminder and prompt; the owner's message
        stored as the model saw it (on regenerate it is stored already)."""
        self._last_ctx = ctx
        lang = self._last_lang = language.detect(text, self._last_lang)
        window = self.window(ctx)  # once per turn; the turn keeps where it starts
        self._current.keep_window(window.start)
        section = None
        if self.config.learning:
            # A question gets its best records again even if the window recalled them before
            # (measured on bench.companion, default model: "Какой кофе я пью?" got no line — the
            # coffee record was recalled six questions earlier — and "Я пью кофе в morning").
            # A statement does not: repeating "Меня зовут Дима" under every later statement
            # made the model greet Dima again in 14 of 20 replies.
            section = self.memory.prompt_section(
                text,
                ctx,
                exclude=window.recalled,
                repeat_best=None if language.is_question(text) else 0,
            )
            self._core_read = section.core_text
            yield MemoryUsed(section)
        reminder = (
            None
            if section is None
            else day_reminder(
                self.memory, ctx, self.config.reminder_days, self.config.persona_id, self.clock
            )
        )
        summary = self.summary_block(ctx)
        messages = prompt.build_messages(
            persona=self.persona,
            rule=self._rule(ctx),
            section=section,
            summary=summary,
            window=window.messages,
            user_text=text,
            lang=lang,
            reminder=reminder,
        )
        if user_stored:  # regenerate: the message is already in the window; drop that copy
            messages = prompt.drop_current_user(messages)
        else:
            # The user's message is stored as the model saw it (with its recalled lines), so
            # the next turn's prompt repeats this one token for token: the KV cache holds.
            user_id = self._persist(
                turn_id,
                "user",
                text,
                ctx,
                meta={
                    "prompt": messages[-1]["content"],
                    "recalled": list(section.recalled_ids) if section else [],
                    **({"reminder": reminder.id} if reminder is not None else {}),
                },
            )
        support = prompt.support(text, section, summary, reminder, window.messages)
        earlier = earlier_replies(window.messages, text)
        asked = questions_before(window.messages, text)
        whose = self._whose(text, support, ctx)
        return Turn(
            id=turn_id,
            text=text,
            ctx=ctx,
            lang=lang,
            window=window,
            section=section,
            reminder=reminder,
            summary=summary,
            support=support,
            earlier=earlier,
            asked=asked,
            whose=whose,
            messages=messages,
            tools=self.offered_tools(ctx),
            judge=ReplyJudge(
                text,
                lang,
                also=asked,
                earlier=earlier,
                support=support,
                whose=whose,
                checks_answer=self.config.answer_check and isinstance(self.model, ChoiceModel),
            ),
            stats=stats,
            user_id=user_id,
        )

    def _whose(self, text: str, support: str, ctx: TurnContext) -> str:
        """For a question about the owner, the live records this turn may read that say who the
        people the support names are ("Матвей — мой парень."), though they were not recalled:
        the judge reads them only for whose a name is (:func:`core.chat.invention.misattributed`).
        Seen on an unseen scenario: "What's Liza's husband called?" got "Liza's husband is
        Matvey." — the owner's boyfriend, whose role no recalled line gave."""
        if not asks_about_owner(text, support):
            return ""
        people = [w for w, _ in name_words(support)][:_WHOSE_NAMES]
        if not people:
            return ""
        hits = self.memory.recall(" ".join(people), ctx, top_k=_WHOSE_NAMES, use_vectors=False)
        records = self.memory.visible([h.id for h in hits], ctx)
        return "\n".join(r.content for r in records if relations(r.content))

    def _run_tool(self, c: ToolCall, turn: Turn) -> memory_tools.ToolResult:
        """Run one tool call of the reply: only a tool this turn was offered."""
        ctx = turn.ctx
        if c.name not in turn.offered:
            return memory_tools.ToolResult(
                c.name,
                False,
                f"Error: tool {c.name!r} is not available here",
                {"error": "not offered"},
            )
        if c.name in self.extra_tools:
            return self.extra_tools[c.name][1](ctx)
        return memory_tools.call(self.memory, c.name, c.arguments, ctx)

    def _finish(self, turn: Turn, cancel: threading.Event | None) -> Iterator[TurnEvent]:
        """After the reply: the day's reminder line, the answer stored, the structured memory
        step (§3.1), then :class:`TurnDone`."""
        st, ctx = turn.stats, turn.ctx
        final = turn.reply
        reminder = turn.reminder
        if (
            reminder is not None
            and reminder.days >= 0
            and not st.stopped
            and not mentions(final, reminder.content)
        ):
            # the day's reminder, in Eva's own line, when her reply left it out (§8.11)
            line = reminder_line(reminder, turn.lang)
            yield Token(f"\n\n{line}" if final else line)
            final = f"{final}\n\n{line}" if final else line
        meta = {"ops": turn.ops, "prompt_tokens": st.prompt_tokens, "evaluated": st.evaluated}
        msg_id = self._persist(
            turn.id, "assistant", final, ctx, "stopped" if st.stopped else "ok", meta
        )
        if self.structured and self.config.learning and ctx.can_mutate and not st.stopped:
            yield Remembering()
            outcome = self.writer.run(
                [*prompt.for_writer(turn.messages), {"role": "assistant", "content": final}],
                turn.text,
                ctx,
                turn.section.core_ids if turn.section else (),
                cancel,
            )
            st.calls += outcome.model_calls
            for r in outcome.results:
                cap = turn.add_op(r.name, r.ok, r.data)
                yield ToolFinished(r.name, r)
                if cap is not None:
                    yield Notice(capped_notice(cap))
            if outcome.error and not (cancel is not None and cancel.is_set()):
                yield Notice(
                    f"Eva could not update her memory for this message ({outcome.error}); "
                    "she will read it again when she is free."
                )
            if outcome.error:  # tried again in the background (WindowSaver.retry_failed)
                meta[STEP_FAILED] = outcome.error
            if turn.ops or outcome.error:  # the step's notes join the answer's (shown again
                self._set_meta(msg_id, meta)  # after a restart)
        yield TurnDone(
            turn.id,
            final,
            st.stopped,
            st.prompt_tokens,
            st.evaluated,
            st.completion,
            st.first,
            time.monotonic() - st.started,
            st.calls,
            msg_id,
            turn.user_id,
            tuple(st.per_call),
        )

    def _set_meta(self, message_id: int, meta: dict) -> None:
        self._transcript.set_meta(message_id, meta)
