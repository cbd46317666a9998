"""One turn as a value (SPEC §8.1): what its prompt was built from, the prompt as it grows (tool
results, a retry's note), the answer so far, the memory operations and the figures.
:class:`core.chat.conversation.Conversation` fills it in as the turn runs; nothing here talks
to a model or a store."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from core.chat.events import CallFigures
from core.chat.judge import ReplyJudge
from core.chat.retry import Retry
from core.chat.transcript import Window
from core.llm import Done, Message
from core.memory.prompt_section import PromptSection
from core.privacy import TurnContext
from core.reminders.schedule import Reminder


@dataclass
class TurnStats:
    """The figures a turn reports in :class:`core.chat.events.TurnDone`."""

    started: float
    prompt_tokens: int = 0
    evaluated: int = 0
    completion: int = 0
    calls: int = 0
    stopped: bool = False
    first: float | None = None  # seconds to the first token the owner saw
    # one entry per model call of the reply, in order (issue 32 item 5: which call breaks the
    # KV cache): what it was asked for, its prompt tokens and how many were evaluated (None
    # when the call was cut off before its figures came — the judge stopped it in flight)
    per_call: list[CallFigures] = field(default_factory=list)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def shown(self) -> None:
        """The owner sees a first token now (kept if one was seen before)."""
        if self.first is None:
            self.first = self.elapsed()

    def count(self, done: Done, purpose: str = "reply") -> None:
        """Add one model call's figures."""
        self.per_call.append(CallFigures(purpose, done.prompt_tokens, done.evaluated_tokens))
        self.prompt_tokens += done.prompt_tokens
        self.evaluated += done.evaluated_tokens
        self.completion += done.completion_tokens
        self.stopped = self.stopped or done.stopped


@dataclass
class Turn:
    """One owner message being answered."""

    id: str
    text: str  # the owner's message, stripped
    ctx: TurnContext
    lang: str | None  # the language to answer in
    window: Window  # the live window, computed once (the turn keeps where it starts)
    section: PromptSection | None  # the memory section (None when learning is off)
    reminder: Reminder | None  # the day's reminder (§8.11), in the first owner turn of the day
    summary: str  # the summary block the prompt carries
    support: str  # never invent (§8.10): all the turn was shown about the owner
    earlier: list[str]  # Eva's earlier replies of the window, which the reply must not copy
    asked: list[str]  # the owner's earlier questions of the window, never read back as a reply
    whose: str  # live records saying who the support's people are (never invent: whose a name is)
    messages: list[Message]  # the prompt; tool rounds and a retry add to it
    tools: list[dict[str, Any]]  # offered every round (the prompt prefix stays the same)
    judge: ReplyJudge  # of the reply being written (a retry gets a new one)
    stats: TurnStats
    user_id: int | None = None  # the owner's stored message
    answer: list[str] = field(default_factory=list)  # the text of each round of this reply
    ops: list[dict[str, Any]] = field(default_factory=list)  # memory operations, as stored
    rounds: int = 0  # model calls for the reply (tool rounds, the reply nudge, a retry)
    retry: Retry | None = None  # the one retry, once asked
    reply_nudged: bool = False  # asked for a reply after tool calls left it empty

    @property
    def offered(self) -> set[str]:
        return {t["name"] for t in self.tools}

    @property
    def reply(self) -> str:
        """The answer so far, stripped."""
        return "".join(self.answer).strip()

    @property
    def attempt(self) -> int:
        """1 for the first reply, 2 for the retry."""
        return 1 if self.retry is None else 2

    def add_op(self, name: str, ok: bool, data: dict[str, Any]) -> int | None:
        """Record one memory operation; the turn's cap when this is the first one the cap on
        changes per turn cut short (a notice is said once per turn)."""
        first_cap = "capped" in data and not any("capped" in op for op in self.ops)
        self.ops.append({"tool": name, "ok": ok, **data})
        return data["capped"] if first_cap else None

    def own_line(self, line: str) -> str:
        """One of Eva's fixed lines as the whole answer."""
        self.answer[:] = [line]
        self.stats.shown()
        return line
