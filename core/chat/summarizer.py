"""The rolling summaries' background work (SPEC §8.1, §8.3; issue 12): :class:`Summarizer`
summarises what left a chat's live window in chunks that end at an assistant message (recent),
merges 4 recent into 1 (merged) and 4 merged into the long-term timeline, folding its oldest
lines past the cap. A summary that drops a name or number of its source
(:mod:`core.chat.summary_fidelity`) is tried once more, naming what it dropped, then replaced by the
extractive fallback. One step per call, all state in :class:`core.chat.summaries.SummaryStore`."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from core.chat.summaries import (
    FALLBACK,
    LONG_TERM,
    MERGED,
    OK,
    RECENT,
    SourceMessage,
    Stale,
    Summary,
    SummaryStore,
)
from core.chat.summary_fidelity import dropped, extractive, present, salient_terms
from core.llm import ChatModel, Message, ModelError

MERGE_EVERY = 4
# the long-term summary's cap by detail level (SPEC §8.3), in tokens
LONG_TERM_CAP = {"key": 4_000, "balanced": 8_000, "detailed": 16_000}
FOLD_LINE_CHARS = 240  # one folded per-period line
# The grammar bounds the answer so it always fits the call's max_tokens: measured on the default
# model (LoCoMo, 11 messages), an unbounded verbatim list ran past 400 tokens twice, the JSON was
# cut, and the chunk fell back to the extractive summary.
MAX_VERBATIM = 12  # items a chunk's summary may list
MAX_ITEM_CHARS = 80
MAX_SUMMARY_CHARS = 700


CHUNK_INSTRUCTION = """Summarise this part of a conversation between the owner and Eva for \
Eva's own later use. Answer as JSON {{"summary": "...", "verbatim": [...]}}:
- "summary": a few plain sentences, third person ("The owner said…", "Eva promised…"), in the \
language of the conversation: what happened, what was decided, what is still open.
- "verbatim": short exact items that must survive — a few words each, never whole messages: \
names, numbers, dates, open promises, the current state of things, and the owner's corrections \
and rules, copied exactly as written.{terms}

The conversation:
{transcript}"""
TERMS_LINE = "\nThese names and numbers of the conversation must all appear: {terms}."
RETRY_LINE = (
    "\nYour previous summary dropped: {missing}. Every one of them must appear in "
    "the summary or in the verbatim list."
)
MERGE_INSTRUCTION = """Merge these consecutive summaries of one conversation into one shorter \
summary, oldest first, for Eva's own later use. Keep every name, number and date, open \
promises, the current state and the owner's corrections. Answer as JSON {{"summary": "..."}}.{terms}

The summaries:
{summaries}"""


def summary_schema(with_verbatim: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "summary": {"type": "string", "minLength": 10, "maxLength": MAX_SUMMARY_CHARS}
    }
    if with_verbatim:
        props["verbatim"] = {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_ITEM_CHARS},
            "maxItems": MAX_VERBATIM,
        }
    return {"type": "object", "properties": props, "required": list(props)}


@dataclass(frozen=True)
class StepResult:
    """What one step of the worker did."""

    action: str  # "chunk" | "merge" | "long-term" | "fold" | "paused" | "stale" | "idle"
    summary: Summary | None = None
    seconds: float = 0.0
    model_calls: int = 0
    rejected: int = 0  # attempts the fidelity check rejected
    saved: int = 0  # memories the writing step saved from the chunk
    note: str = ""


@dataclass(frozen=True)
class Progress:
    """For the panel: how much of what left the window is summarised."""

    left_window: int
    unsummarised: int
    by_tier: dict[int, int]


def _line_date(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def _period(line: str, year_only: bool = False) -> str:
    """The period of a timeline line ("2026-11-03: …" → "2026-11", or "2026")."""
    m = re.match(r"^(\d{4})(-\d{2})?", line)
    if not m:
        return "earlier"
    return m.group(1) if year_only or not m.group(2) else m.group(1) + m.group(2)


def fold(lines: list[str], over: Callable[[list[str]], bool]) -> list[str]:
    """Fold the oldest timeline lines into one short line per period until ``over`` is false:
    first per month, then per year; a folded line starts with its period and is at most
    ``FOLD_LINE_CHARS`` long. If even one line per year is over, the oldest lines go (the
    newest one always stays)."""
    out = list(lines)
    for year_only in (False, True):
        while over(out):
            periods: dict[str, list[int]] = {}
            for i, ln in enumerate(out):
                periods.setdefault(_period(ln, year_only), []).append(i)
            target = next(
                (
                    p
                    for p, idx in periods.items()
                    if len(idx) > 1 or len(out[idx[0]]) > FOLD_LINE_CHARS
                ),
                None,
            )
            if target is None:
                break
            idx = periods[target]
            bodies = [
                re.sub(r"^\d{4}(-\d{2})?(-\d{2})?(\s*…\s*\d{4}-\d{2}-\d{2})?:\s*", "", out[i])
                for i in idx
            ]
            line = f"{target}: " + "; ".join(_first_clause(b) for b in bodies)
            if len(line) > FOLD_LINE_CHARS:
                line = line[: FOLD_LINE_CHARS - 1].rstrip() + "…"
            out = (
                out[: idx[0]]
                + [line]
                + [ln for k, ln in enumerate(out) if k > idx[0] and k not in idx]
            )
    while len(out) > 1 and over(out):
        out.pop(0)
    return out


def _first_clause(body: str) -> str:
    m = re.split(r"(?<=[.!?…;])\s", body.strip(), maxsplit=1)
    clause = m[0] if m else body
    return clause[:90].rstrip(" .;") if len(clause) > 90 else clause.rstrip(" .;")


class Summarizer:
    """The background work of §8.3 for one chat at a time: one step per call, all state in the
    store, so a rebuild is resumable and a step can be interrupted (``interrupt``: a turn wants
    the model) without losing anything but the step itself.

    ``writer`` is the structured memory-writing step (§3.1) run over each chunk before it is
    summarised (:class:`WindowKeeper` adapts it); ``None`` skips that."""

    def __init__(
        self,
        store: SummaryStore,
        model: ChatModel,
        *,
        clock: Any,
        detail_level: str = "balanced",
        chunk_messages: int = 16,
        chunk_tokens: int = 1_500,
        writer: Any = None,
        timeout: float = 1_200.0,
        max_tokens: int = 600,
    ) -> None:
        self.store = store
        self.model = model
        self.clock = clock
        self.detail_level = detail_level
        self.chunk_messages = chunk_messages
        self.chunk_tokens = chunk_tokens
        self.writer = writer
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.interrupt = threading.Event()  # set by a turn that wants the model now
        self.lock = threading.Lock()  # one step at a time

    # ------------------------------------------------------------------ planning
    def chunk(self, pending: list[SourceMessage]) -> list[SourceMessage]:
        """The first chunk of what is pending: up to ``chunk_messages`` / ``chunk_tokens``,
        ending at an assistant message, never mixing messages written where private memory was
        visible with others. Empty when no assistant message closes one yet."""
        if not pending:
            return []
        priv = pending[0].private_ok
        out: list[SourceMessage] = []
        end = 0
        tokens = 0
        for m in pending:
            if m.private_ok != priv:
                break
            out.append(m)
            tokens += max(1, len(m.content) // 4)
            if m.role == "assistant":
                end = len(out)
                if len(out) >= self.chunk_messages or tokens >= self.chunk_tokens:
                    break
        return out[:end]

    def progress(self, chat_id: int, window_start: int | None) -> Progress:
        left = self.store.left_window(chat_id, window_start)
        todo = self.store.unsummarised(chat_id, window_start)
        tiers: dict[int, int] = {RECENT: 0, MERGED: 0, LONG_TERM: 0}
        for s in self.store.active(chat_id):
            tiers[s.tier] += 1
        return Progress(len(left), len(todo), tiers)

    # ------------------------------------------------------------------ one step
    def step(self, chat_id: int, window_start: int | None) -> StepResult:
        """Do the next piece of work for a chat: summarise the first pending chunk, else merge 4
        recent summaries, else move 4 merged into the long-term summary. ``idle`` when there is
        nothing to do; ``paused`` when a turn interrupted a model call (nothing was written)."""
        with self.lock:
            t0 = time.monotonic()
            try:
                chunk = self.chunk(self.store.unsummarised(chat_id, window_start))
                if chunk:
                    return self._summarise_chunk(chat_id, chunk, t0)
                for priv in (False, True):
                    active = [s for s in self.store.active(chat_id) if s.private == priv]
                    recent = [s for s in active if s.tier == RECENT]
                    if len(recent) >= MERGE_EVERY:
                        return self._merge(chat_id, recent[:MERGE_EVERY], priv, t0)
                    merged = [s for s in active if s.tier == MERGED]
                    if len(merged) >= MERGE_EVERY:
                        longs = [s for s in active if s.tier == LONG_TERM]
                        return self._long_term(chat_id, longs, merged[:MERGE_EVERY], priv, t0)
            except _Interrupted as e:
                return StepResult("paused", seconds=time.monotonic() - t0, model_calls=e.calls)
            except Stale as e:  # nothing written; the next step reads the new state
                return StepResult("stale", seconds=time.monotonic() - t0, note=str(e))
            return StepResult("idle", seconds=time.monotonic() - t0)

    def retry_failed(
        self, chat_id: int, window_start: int | None, cancel: threading.Event | None = None
    ) -> int:
        """The memory step again over the messages of the chat's window whose turn's step
        failed (:meth:`core.chat.window_saver.WindowSaver.retry_failed`), giving way to a turn as
        a summary does. Returns how many memories it saved or updated."""
        if self.writer is None:
            return 0
        with self.lock:
            window = self.store.in_window(chat_id, window_start)
            if cancel is None:
                return self.writer.retry_failed(window, self.interrupt)
            return self.writer.retry_failed(window, _Either(self.interrupt, cancel))

    def run(
        self,
        chat_id: int,
        window_start: Callable[[], int | None] | int | None,
        cancel: threading.Event | None = None,
        progress: Callable[[StepResult], None] | None = None,
        max_steps: int = 1_000,
    ) -> list[StepResult]:
        """Steps until idle, paused or cancelled (``window_start`` may be a callable: the chat's
        current start)."""
        out: list[StepResult] = []
        for _ in range(max_steps):
            if cancel is not None and cancel.is_set():
                break
            start = window_start() if callable(window_start) else window_start
            r = self.step(chat_id, start)
            if r.action == "idle":
                break
            out.append(r)
            if progress is not None:
                progress(r)
            if r.action == "paused":
                break
        return out

    # ------------------------------------------------------------------ the three kinds
    def _ask(
        self, messages: list[Message], schema: dict[str, Any], calls: list[int]
    ) -> dict[str, Any]:
        if self.interrupt.is_set():
            raise _Interrupted(calls[0])
        calls[0] += 1
        try:
            out = self.model.generate_json(
                messages,
                schema,
                timeout=self.timeout,
                max_tokens=self.max_tokens,
                cancel=self.interrupt,
            )
        except ModelError:
            if self.interrupt.is_set():
                raise _Interrupted(calls[0]) from None
            raise
        if self.interrupt.is_set():
            raise _Interrupted(calls[0])
        return out

    def _write(
        self,
        instruction: Callable[[str], str],
        source: str,
        terms_line: str,
        calls: list[int],
        verbatim: list[str] | None = None,
    ) -> _Written:
        """A summary of ``source`` that drops none of its salient terms, in up to two attempts:
        the second is told what the first dropped. ``instruction`` makes the prompt around the
        terms line; the model writes the verbatim items too unless they are given (a merge keeps
        its parts' items). A chunk and a merge ask alike, so both go through here."""
        rejected = 0
        why: list[str] = []
        missing: list[str] = []
        for attempt in range(2):
            extra = RETRY_LINE.format(missing=", ".join(missing)) if attempt else ""
            prompt: list[Message] = [{"role": "user", "content": instruction(terms_line + extra)}]
            try:
                plan = self._ask(prompt, summary_schema(verbatim is None), calls)
            except ModelError as e:
                rejected += 1
                why.append(f"model: {e}")
                continue
            prose = " ".join(str(plan.get("summary", "")).split())
            items = _clean_items(plan.get("verbatim")) if verbatim is None else verbatim
            missing = dropped(source, prose + "\n" + "\n".join(items))
            if prose and not missing:
                return _Written(prose, items, rejected, why)
            rejected += 1
            why.append("dropped: " + ", ".join(missing) if missing else "empty summary")
        return _Written("", [], rejected, why)

    def _summarise_chunk(self, chat_id: int, chunk: list[SourceMessage], t0: float) -> StepResult:
        calls = [0]
        saved = 0
        if self.writer is not None:
            saved = self.writer.keep(chunk, cancel=self.interrupt)
            if self.interrupt.is_set():
                raise _Interrupted(calls[0])
        source = "\n".join(m.content for m in chunk)
        transcript = "\n".join(
            f"{'Owner' if m.role == 'user' else 'Eva'}: {m.content}" for m in chunk
        )
        terms = sorted(salient_terms(source))
        terms_line = TERMS_LINE.format(terms=", ".join(terms)) if terms else ""
        written = self._write(
            lambda line: CHUNK_INSTRUCTION.format(terms=line, transcript=transcript),
            source,
            terms_line,
            calls,
        )
        rejected, why = written.rejected, written.why
        if written.prose:
            prose, verbatim, status = written.prose, written.verbatim, OK
        else:
            prose, verbatim, status = extractive(chunk), sorted(terms), FALLBACK
        date = _line_date(chunk[0].created_at)
        s = self.store.add(
            chat_id,
            RECENT,
            any(m.private_ok for m in chunk),
            prose,
            verbatim,
            [m.id for m in chunk],
            status=status,
            detail_level=self.detail_level,
            tokens=self._tokens(prose, verbatim),
            now=self.clock.now(),
            expect={m.id: m.content for m in chunk},
        )
        return StepResult(
            "chunk",
            s,
            time.monotonic() - t0,
            calls[0],
            rejected,
            saved,
            f"{len(chunk)} messages from {date}"
            + (" · rejected: " + "; ".join(why) if why else ""),
        )

    def _merge(self, chat_id: int, parts: list[Summary], private: bool, t0: float) -> StepResult:
        calls = [0]
        source = "\n".join(p.prose for p in parts)
        verbatim = _union(v for p in parts for v in p.verbatim)
        terms = sorted(t for t in salient_terms(source) if not present(t, "\n".join(verbatim)))
        terms_line = TERMS_LINE.format(terms=", ".join(terms)) if terms else ""
        summaries = "\n\n".join(f"({i + 1}) {p.prose}" for i, p in enumerate(parts))
        written = self._write(
            lambda line: MERGE_INSTRUCTION.format(terms=line, summaries=summaries),
            source,
            terms_line,
            calls,
            verbatim,
        )
        rejected = written.rejected
        if written.prose:
            prose, status = written.prose, OK
        else:
            prose, status = " ".join(p.prose for p in parts), FALLBACK
        covers = [m for p in parts for m in self.store.covers(p.id)]
        s = self.store.add(
            chat_id,
            MERGED,
            private,
            prose,
            verbatim,
            covers,
            status=status,
            detail_level=self.detail_level,
            tokens=self._tokens(prose, verbatim),
            now=self.clock.now(),
            absorbs=[p.id for p in parts],
        )
        return StepResult("merge", s, time.monotonic() - t0, calls[0], rejected)

    def _long_term(
        self, chat_id: int, longs: list[Summary], parts: list[Summary], private: bool, t0: float
    ) -> StepResult:
        """4 merged summaries join the long-term summary as timeline lines (no model call: a
        merged summary is already short); past the cap the oldest lines fold."""
        lines = [ln for s in longs for ln in s.prose.splitlines() if ln.strip()]
        for p in parts:
            first, last = self._dates(p)
            span = first if first == last else f"{first} … {last}"
            lines.append(f"{span}: {p.prose}")
        verbatim = _union(
            [*(v for s in longs for v in s.verbatim), *(v for p in parts for v in p.verbatim)]
        )
        cap = LONG_TERM_CAP.get(self.detail_level, LONG_TERM_CAP["balanced"])
        folded = fold(lines, lambda ls: self._tokens("\n".join(ls), verbatim) > cap)
        # past the cap even fully folded: the oldest verbatim items go (newest state wins)
        while verbatim and self._tokens("\n".join(folded), verbatim) > cap:
            verbatim.pop(0)
        prose = "\n".join(folded)
        covers = [m for s in [*longs, *parts] for m in self.store.covers(s.id)]
        s = self.store.add(
            chat_id,
            LONG_TERM,
            private,
            prose,
            verbatim,
            covers,
            status=OK,
            detail_level=self.detail_level,
            tokens=self._tokens(prose, verbatim),
            now=self.clock.now(),
            absorbs=[x.id for x in [*longs, *parts]],
        )
        action = "fold" if len(folded) < len(lines) else "long-term"
        return StepResult(action, s, time.monotonic() - t0, 0, 0)

    def _dates(self, s: Summary) -> tuple[str, str]:
        lo, hi = self.store.span(s)
        return _line_date(lo), _line_date(hi)

    def _tokens(self, prose: str, verbatim: list[str]) -> int:
        return self.model.count_tokens(prose + "\n" + "\n".join(verbatim))


@dataclass(frozen=True)
class _Written:
    """What :meth:`Summarizer._write` came to: the prose and verbatim items of the attempt that
    kept every salient term (empty prose: none did, the caller falls back), how many attempts
    were rejected and why."""

    prose: str
    verbatim: list[str]
    rejected: int
    why: list[str]


class _Interrupted(Exception):
    def __init__(self, calls: int) -> None:
        super().__init__("a turn wants the model")
        self.calls = calls


def _clean_items(raw: object) -> list[str]:
    if not isinstance(raw, list):
        return []
    return _union(" ".join(str(v).split()) for v in raw if str(v).strip())


def _union(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for v in items:
        key = v.casefold()
        if v and key not in seen:
            seen.add(key)
            out.append(v)
    return out


class _Either(threading.Event):
    """Set when either event is (what the step's ``cancel`` reads: ``is_set``)."""

    def __init__(self, a: threading.Event, b: threading.Event) -> None:
        super().__init__()
        self._a, self._b = a, b

    def is_set(self) -> bool:
        return self._a.is_set() or self._b.is_set()
