"""The reply of one turn (SPEC §3, §8.10, issue 9): model calls until the reply stands.

Each call streams through the filters (:mod:`core.chat.filters`) and the judge
(:mod:`core.chat.judge`) before the owner sees a word; tool calls run between calls (tools
mode, §3.2); when the reply is whole, the judge's verdict decides whether to ask once more
(:func:`core.chat.retry.decide`) and then what stands (:func:`core.chat.retry.settle`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from typing import Protocol

from core.chat import answerable, prompt, retry
from core.chat.events import (
    CallFigures,
    Notice,
    Token,
    ToolFinished,
    ToolStarted,
    TurnEvent,
    capped_notice,
)
from core.chat.filters import ReplyFilters
from core.chat.invention import admits_not_knowing
from core.chat.judge import ReplyJudge, Verdict, answer_part
from core.chat.retry import REPLY_NUDGE, Outcome, Retry
from core.chat.turn import Turn
from core.llm import ChatModel, Done, TextDelta, ToolCall
from core.memory import tools as memory_tools

# Small models tend to read a tool result as the owner's words and answer it (or echo it):
# every result says whom it is for.
TOOL_RESULT_TRAILER = (
    "(Memory tool result, for you only: the owner does not see it. Do not "
    "repeat it; continue your reply to the owner's message.)"
)

ToolRunner = Callable[[ToolCall, Turn], memory_tools.ToolResult]


class ReplySettings(Protocol):
    """What the reply reads of :class:`core.chat.conversation_config.ConversationConfig`."""

    @property
    def max_tool_rounds(self) -> int: ...
    @property
    def max_answer_tokens(self) -> int | None: ...
    @property
    def temperature(self) -> float: ...
    @property
    def question_temperature(self) -> float: ...
    @property
    def retry_temperature(self) -> float: ...


class Reply:
    """Writes one turn's reply with ``model``; ``run_tool`` runs a tool call of it."""

    def __init__(self, model: ChatModel, settings: ReplySettings, run_tool: ToolRunner) -> None:
        self.model = model
        self.settings = settings
        self.run_tool = run_tool

    def run(self, turn: Turn, cancel: threading.Event | None) -> Iterator[TurnEvent]:
        """Model calls until the reply stands: tool rounds, a nudge when tool calls left it
        empty, one retry when the judge finds it wanting — or none, when the question asks
        about someone nothing shown names (:attr:`ReplyJudge.unanswerable`): Eva says she does
        not know at once. Measured on bench.companion (an unseen scenario, default model): such
        a question took two calls, the answer held as made up and its retry, before the same
        line, 3.4-4.4 s to its first word."""
        if turn.retry is None and not turn.rounds and turn.judge.unanswerable:
            yield Token(turn.own_line(retry.own_line(Outcome.DONT_KNOW, turn.lang)))
            return
        while True:
            turn.rounds += 1
            last_round = turn.rounds > self.settings.max_tool_rounds
            # The same tools every round: the prompt prefix (tools sit in the system block)
            # stays identical, so the KV cache holds across rounds and turns.
            text, calls = yield from self._round(turn, cancel)
            turn.answer.append(text)
            if turn.stats.stopped:
                yield from _stopped(turn)
                return
            if calls and last_round:
                yield Notice(
                    f"Eva asked for {len(calls)} more memory operation(s) after "
                    f"{self.settings.max_tool_rounds} rounds; they were not run."
                )
                return
            if calls:
                yield from self._run_tools(turn, text, calls)
                continue
            if turn.ops and not turn.reply_nudged and not turn.reply and not last_round:
                # small models sometimes fall silent after a tool call: ask once more
                turn.reply_nudged = True
                turn.messages.append({"role": "system", "content": REPLY_NUDGE})
                continue
            verdict = turn.judge.verdict(turn.reply)
            again = retry.decide(verdict, turn.attempt, turn.text, turn.lang)
            if again is None:
                yield from _settle(turn, verdict, _Checks(self, turn, cancel))
                return
            _ask_again(turn, again)

    def _stands(self, turn: Turn, answer: str, cancel: threading.Event | None) -> answerable.Check:
        """Whether an answer about the owner that made up nothing may be shown: the record it
        drew on answers the question (:func:`core.chat.answerable.check`)."""
        found = answerable.check(
            self.model, answer, turn.text, _records(turn), turn.judge.asks_what, cancel
        )
        _count_check(turn, found)
        return found

    def _rescued(self, turn: Turn, tried: str, cancel: threading.Event | None) -> str:
        """The line recall put first, when it answers the owner's question that got "I don't
        know" or an answer that did not stand (:func:`core.chat.answerable.rescue`), or ""."""
        if turn.section is None or not turn.judge.checks_answer:
            return ""
        found = answerable.rescue(
            self.model,
            turn.text,
            turn.section.recalled_contents,
            tried,
            cancel,
            turn.section.core_contents,
        )
        _count_check(turn, found)
        return found.record if found.stands else ""

    def _round(
        self, turn: Turn, cancel: threading.Event | None
    ) -> Generator[TurnEvent, None, tuple[str, list[ToolCall]]]:
        """One model call: its text goes through the filters and the judge before the owner
        sees it. Returns the text (as filtered) and the tool calls."""
        st = turn.stats
        st.calls += 1
        purpose = _purpose(turn)
        counted = len(st.per_call)
        filters = ReplyFilters()
        text: list[str] = []
        seen: list[str] = []  # what the owner was shown
        calls: list[ToolCall] = []

        def show(piece: str) -> Iterator[TurnEvent]:
            if not piece:
                return
            text.append(piece)
            out = turn.judge.feed(piece)
            if out:
                st.shown()
                seen.append(out)
                yield Token(out)

        halt = _Halt(cancel)
        after_halt = 0
        for ev in self.model.stream_chat(
            turn.messages,
            turn.tools or None,
            halt,
            self.settings.max_answer_tokens,
            self._temperature(turn),
        ):
            if isinstance(ev, Done):
                # the judge's own stop is not the owner's: the turn goes on (a retry)
                st.count(replace(ev, stopped=False) if halt.own else ev, purpose)
            elif halt.own:
                # asked to stop: what still comes is not shown; its figures are waited for a
                # few events (a model that ignores the stop is closed)
                after_halt += 1
                if after_halt > _DRAIN:
                    break
            elif isinstance(ev, TextDelta):
                yield from show(filters.feed(ev.text))
                if turn.judge.stops:
                    halt.set()  # unseen, in the other language, a refusal or made up: ask again
            elif isinstance(ev, ToolCall):
                calls.append(ev)
        if len(st.per_call) == counted:  # cut off in flight: its figures never came
            st.per_call.append(CallFigures(purpose, None, None))
        yield from show(filters.finish())
        rest = turn.judge.flush()
        if rest:
            st.shown()
            seen.append(rest)
            yield Token(rest)
        # a reply cut short by the judge is what the owner saw of it
        return "".join(seen if turn.judge.cut else text), calls

    def _temperature(self, turn: Turn) -> float:
        """A retry samples carefully; so does the answer to a question (measured on the default
        model at 0.7, "Моё дрессирейт на 14 марта", "она работает как панистка" — words garbled
        in flight)."""
        if turn.retry is not None:
            return self.settings.retry_temperature
        if turn.judge.question:
            return self.settings.question_temperature
        return self.settings.temperature

    def _run_tools(self, turn: Turn, text: str, calls: list[ToolCall]) -> Iterator[TurnEvent]:
        """Run a round's tool calls; their results go into the prompt for the next round."""
        turn.messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in calls],
            }
        )
        for c in calls:
            yield ToolStarted(c.name, c.arguments)
            result = self.run_tool(c, turn)
            cap = turn.add_op(c.name, result.ok, result.data)
            yield ToolFinished(c.name, result)
            if cap is not None:
                yield Notice(capped_notice(cap))
            turn.messages.append(
                {"role": "tool", "name": c.name, "content": f"{result.text}\n{TOOL_RESULT_TRAILER}"}
            )


# events read after the judge stopped a reply, waiting for the model's figures (Done); a model
# honouring the stop sends them after at most one more token
_DRAIN = 8


class _Halt(threading.Event):
    """The cancel a reply's model call watches: the owner's (Esc), or the judge's own stop of a
    reply it will ask again. Stopping through it, not by closing the stream, lets the model
    report what it evaluated (issue 32 item 5: cut-off calls had no figures)."""

    def __init__(self, owner: threading.Event | None) -> None:
        super().__init__()
        self.owner = owner

    def is_set(self) -> bool:
        return super().is_set() or (self.owner is not None and self.owner.is_set())

    @property
    def own(self) -> bool:
        """Stopped by the judge, not by the owner."""
        return super().is_set() and not (self.owner is not None and self.owner.is_set())


def _purpose(turn: Turn) -> str:
    """What the next model call of ``turn`` is asked for (its :class:`CallFigures`)."""
    last = turn.messages[-1] if turn.messages else {}
    if last.get("role") == "tool":
        return "tools"
    if turn.reply_nudged and last.get("content") == REPLY_NUDGE:
        return "nudge"
    if turn.retry is not None:
        return f"retry:{turn.retry.verdict.kind.value}:{turn.retry.form.value}"
    return "reply"


def _records(turn: Turn) -> list[str]:
    """What an answer about the owner may draw on: the memory section's records (recalled
    first) and the owner's statements in the live window."""
    out: list[str] = []
    if turn.section is not None:
        out += [*turn.section.recalled_contents, *turn.section.core_contents]
    return out + prompt.owner_statements(turn.window.messages)


def _ask_again(turn: Turn, again: Retry) -> None:
    """The reply is asked once more, unseen: the note in the prompt, a new judge. A small model
    may read the note back as its answer: that is an echo too. After a reply in the other
    language the language is watched again."""
    turn.retry = again
    turn.answer.clear()
    turn.messages = again.messages(turn.messages, turn.text)
    turn.judge = ReplyJudge(
        turn.text,
        turn.lang if again.watches_language or again.watches_admissions else None,
        also=[again.note, *turn.asked],
        support=turn.support,
        earlier=turn.earlier,
        admissions_only=again.watches_admissions,
        whose=turn.whose,
        checks_answer=turn.judge.checks_answer,
    )


def _count_check(turn: Turn, found: answerable.Check) -> None:
    if found.p_yes is not None:
        turn.stats.calls += found.asked
        turn.stats.per_call.extend(CallFigures("check", None, None) for _ in range(found.asked))


class _Checks:
    """The answer check of one turn's settling (:mod:`core.chat.answerable`), on the reply's
    model."""

    def __init__(self, reply: Reply, turn: Turn, cancel: threading.Event | None) -> None:
        self.reply, self.turn, self.cancel = reply, turn, cancel

    def stands(self, answer: str) -> answerable.Check:
        return self.reply._stands(self.turn, answer, self.cancel)

    def rescued(self, tried: str = "") -> str:
        return self.reply._rescued(self.turn, tried, self.cancel)


def _settle(turn: Turn, verdict: Verdict, checks: _Checks) -> Iterator[TurnEvent]:
    """What stands of the last reply (:func:`core.chat.retry.settle`). An answer to a question
    about the owner that was held, not shown, is shown only when its check says the record it
    drew on answers the question (its first sentence, when the judge stopped the reply there
    for the check); else Eva says she does not know — or, when the line recall put first
    answers the question (``checks.rescued``), she is not sure and quotes it. So too when the
    reply itself said it does not know."""
    outcome = retry.settle(verdict, turn.retry)
    if (
        outcome in (Outcome.SHOW_HELD, Outcome.ADDRESSED)
        and turn.judge.checks_answer
        and not verdict.shown
    ):
        if outcome is Outcome.ADDRESSED:
            answer = verdict.addressed
        else:
            answer = answer_part(verdict.held)[0] if verdict.to_check else verdict.held.strip()
        if admits_not_knowing(answer):
            quote = checks.rescued()
            yield Token(turn.own_line(_quoted(turn, quote) if quote else answer))
            return
        found = checks.stands(answer)
        if not found.stands:
            quote = checks.rescued(found.record)
            yield Token(turn.own_line(_quoted(turn, quote)))
            return
        yield Token(turn.own_line(answer))
        return
    records = (
        (*turn.section.recalled_contents, *turn.section.core_contents)
        if turn.section is not None
        else ()
    )
    if outcome in (Outcome.DONT_KNOW, Outcome.NO_REPLY):
        # a question left unanswered twice: the line holding its words, when one does
        asked = retry.asked_about(verdict, turn.text, records)
        if asked:
            yield Token(turn.own_line(retry.own_line(Outcome.DONT_KNOW, turn.lang, quote=asked)))
            return
    if outcome in (Outcome.DONT_KNOW, Outcome.ACKNOWLEDGE, Outcome.GREET):
        drew = ""
        if outcome is Outcome.DONT_KNOW:
            drew = retry.drawn_on(verdict, turn.retry, turn.text, records) or checks.rescued()
        yield Token(turn.own_line(retry.own_line(outcome, turn.lang, verdict.name, drew)))
    elif outcome is Outcome.SHOW_HELD:
        turn.stats.shown()
        yield Token(verdict.held)
    elif outcome is Outcome.ADDRESSED:
        yield Token(turn.own_line(verdict.addressed))
    elif outcome is Outcome.NO_REPLY:
        turn.answer.clear()
        yield Notice(retry.NO_REPLY_NOTICE)


def _quoted(turn: Turn, quote: str) -> str:
    """Her "not sure, here is what I remember" with ``quote``, or her "I don't know" when there
    is none."""
    return retry.own_line(Outcome.DONT_KNOW, turn.lang, quote=quote)


def _stopped(turn: Turn) -> Iterator[TurnEvent]:
    """The owner stopped the reply (:func:`core.chat.retry.on_stop`)."""
    verdict = turn.judge.verdict(turn.reply)
    outcome = retry.on_stop(verdict)
    if outcome is Outcome.SHOW_HELD:
        yield Token(verdict.held)  # Esc keeps the partial answer, as shown
    elif outcome is Outcome.DROP:
        turn.answer.clear()
