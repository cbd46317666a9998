"""Rolling summaries (SPEC §8.1, §8.3, §8.9; issue 12): what fell out of the live window, kept
short, in tiers.

- **Recent** (tier 1): after a turn, the messages that left the live window are summarised in
  chunks that end at an assistant message — by a background worker, never on the send path.
- **Merged** (tier 2): 4 recent summaries → 1.
- **Long-term** (tier 3, one per chat and privacy): 4 merged summaries join it as timeline lines.
  It has a cap by detail level (≈ 4k / 8k / 16k tokens); past it, the oldest timeline lines fold
  into short per-period lines.
- Beside its prose, each summary keeps a **verbatim list** (exact names, numbers, dates, open
  promises, the current state, the owner's corrections and rules). Merging joins the lists as
  they are: nothing in them is ever reworded.
- **Fidelity**: a summary that drops a name or number of its source is rejected, tried once more
  (naming what it dropped), then replaced by an extractive fallback that keeps them all.
- **Coverage**: each summary records the message ids it covers (``summary_covers``). Editing,
  regenerating or deleting a covered message invalidates every summary covering it (its merged
  parents too); the summaries under an invalid one come back, and the worker summarises what is
  no longer covered.
- **Privacy**: a summary of messages written where private memory was visible is private-only
  (chunks and merges never mix the two kinds), and never enters a prompt that cannot see
  private memory (:meth:`SummaryStore.for_prompt`).
- **In the prompt**: one block after the stable prefix and before the live window
  (:func:`render`), so the KV cache survives until a summary changes.

:class:`SummaryStore` owns the ``summaries`` and ``summary_covers`` tables;
:class:`Summarizer` does the work, one step at a time (resumable: all its state is in the store).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core import text as core_text
from core.errors import MemoryOpError
from core.llm import ChatModel, Message, ModelError
from core.storage import Storage

RECENT, MERGED, LONG_TERM = 1, 2, 3
TIER_NAMES = {RECENT: "recent", MERGED: "merged", LONG_TERM: "long-term"}
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
OK, FALLBACK, EDITED, INVALID = "ok", "fallback", "edited", "invalid"
HEADER = "## Earlier in this conversation (a summary of what scrolled out)"


@dataclass(frozen=True)
class Summary:
    id: int
    chat_id: int
    tier: int
    private: bool
    prose: str
    verbatim: tuple[str, ...]
    first_id: int
    last_id: int
    status: str
    parent_id: int | None
    detail_level: str
    tokens: int
    created_at: float
    updated_at: float
    archived_at: float | None = None

    @property
    def tier_name(self) -> str:
        return TIER_NAMES[self.tier]

    @property
    def active(self) -> bool:
        """In use: not invalid, not archived, not merged into another."""
        return self.status != INVALID and self.archived_at is None and self.parent_id is None

    def text(self) -> str:
        """Prose and verbatim list, as the fidelity check and the prompt read them."""
        return self.prose + ("\n" + "\n".join(self.verbatim) if self.verbatim else "")


@dataclass(frozen=True)
class SourceMessage:
    """One message a summary is made from (what :class:`SummaryStore` reads of ``messages``)."""

    id: int
    turn_id: str
    role: str
    content: str
    private_ok: bool
    created_at: float
    meta: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------- salient terms
_NAME = re.compile(r"\b([A-ZА-ЯЁ][\w'’-]*[a-zа-яё][\w'’-]*)\b")
_OPENERS = frozenset(".!?…:;\n\"«“('-—*")
_NOT_NAMES = frozenset({"eva", "ева", "i", "i'm", "i've", "i'd", "i'll", "ok", "okay", "oh",
                        "yes", "no", "hi", "hey", "hello", "thanks", "привет", "да", "нет"})


def salient_terms(source: str) -> set[str]:
    """The names, numbers and dates of a text that a summary must keep: tokens with a digit, and
    capitalised words that do not open a sentence (a proper name in mid-sentence)."""
    terms = set(core_text.numbers(source))
    for m in _NAME.finditer(source):
        word = m.group(1)
        low = word.lower()
        if low in _NOT_NAMES or core_text.is_stopword(low):
            continue
        k = m.start() - 1
        while k >= 0 and source[k] in " \t":
            k -= 1
        if k < 0 or source[k] in _OPENERS:  # opens a sentence: any word is capitalised there
            continue
        terms.add(word.strip("'’-"))
    return {t for t in terms if t}


def present(term: str, summary_text: str) -> bool:
    """Whether a summary keeps ``term``: a number exactly (as a token), a name as a word, as the
    start of a word (a short form: "Mel" in "Melanie") or by its stem (a Russian name wears
    endings: "Лена" → "Лены")."""
    if any(ch.isdigit() for ch in term):
        return term in core_text.numbers(summary_text) or term in summary_text
    low = term.lower()
    hay = summary_text.lower()
    if re.search(r"(?<!\w)" + re.escape(low) + (r"" if len(low) >= 3 else r"(?!\w)"), hay):
        return True
    stem = core_text.stem_token(low)
    return len(stem) >= 3 and stem in set(core_text.stems(summary_text))


def dropped(source: str, summary_text: str) -> list[str]:
    """The names and numbers of ``source`` the summary does not keep (sorted)."""
    return sorted(t for t in salient_terms(source) if not present(t, summary_text))


def fidelity(source: str, summary_text: str) -> float:
    """Share of the source's names, numbers and dates the summary keeps (1.0 with none)."""
    terms = salient_terms(source)
    if not terms:
        return 1.0
    return sum(present(t, summary_text) for t in terms) / len(terms)


# ---------------------------------------------------------------------------- the store
def invalidate_covering(conn: sqlite3.Connection, message_ids: Iterable[int], now: float
                        ) -> list[int]:
    """Inside the caller's transaction: every summary covering one of ``message_ids`` becomes
    invalid (a merged summary covers its parts' messages, so it goes too); the summaries an
    invalid one had absorbed come back into use. Returns the invalidated ids."""
    ids = list(message_ids)
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    bad = [r[0] for r in conn.execute(
        f"SELECT DISTINCT s.id FROM summaries s JOIN summary_covers c ON c.summary_id = s.id "
        f"WHERE c.message_id IN ({marks}) AND s.status != 'invalid'", ids)]
    if not bad:
        return []
    bmarks = ",".join("?" * len(bad))
    conn.execute(f"UPDATE summaries SET status = 'invalid', parent_id = NULL, updated_at = ? "
                 f"WHERE id IN ({bmarks})", (now, *bad))
    conn.execute(f"UPDATE summaries SET parent_id = NULL, updated_at = ? WHERE parent_id IN "
                 f"({bmarks}) AND status != 'invalid'", (now, *bad))
    return bad


class Stale(RuntimeError):
    """What a summary was made from changed while it was made; the step is done again."""


class SummaryStore:
    """The ``summaries`` and ``summary_covers`` tables (``memory.attach(SummaryStore)``)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    # ------------------------------------------------------------------ reading
    def get(self, summary_id: int) -> Summary:
        rows = self._storage.query("SELECT * FROM summaries WHERE id = ?", (summary_id,))
        if not rows:
            raise MemoryOpError(f"there is no summary #{summary_id}", code="not_found")
        return _summary(rows[0])

    def active(self, chat_id: int, sees_private: bool = True) -> list[Summary]:
        """The summaries in use for a chat, oldest coverage first; with ``sees_private=False``
        only those of messages written where private memory was hidden."""
        rows = self._storage.query(
            "SELECT * FROM summaries WHERE chat_id = ? AND status != 'invalid' AND "
            "archived_at IS NULL AND parent_id IS NULL "
            + ("" if sees_private else "AND private = 0 ")
            + "ORDER BY first_id, tier DESC", (chat_id,))
        return [_summary(r) for r in rows]

    def for_prompt(self, chat_id: int, sees_private: bool) -> list[Summary]:
        """What a turn's prompt may carry: private-only summaries only where private memory is
        visible (SPEC §8.9)."""
        return self.active(chat_id, sees_private)

    def all(self, chat_id: int) -> list[Summary]:
        """Every summary of a chat not in the archive (invalid and merged ones included)."""
        rows = self._storage.query(
            "SELECT * FROM summaries WHERE chat_id = ? AND archived_at IS NULL "
            "ORDER BY first_id, tier DESC, id", (chat_id,))
        return [_summary(r) for r in rows]

    def covers(self, summary_id: int) -> list[int]:
        return [r[0] for r in self._storage.query(
            "SELECT message_id FROM summary_covers WHERE summary_id = ? ORDER BY message_id",
            (summary_id,))]

    def left_window(self, chat_id: int, before: int | None) -> list[SourceMessage]:
        """Messages of a chat that have left its live window (id < ``before``), oldest first,
        live only (not discarded, not archived, not empty)."""
        if before is None:
            return []
        rows = self._storage.query(
            "SELECT * FROM messages WHERE chat_id = ? AND id < ? AND status != 'discarded' "
            "AND archived_at IS NULL AND content != '' ORDER BY id", (chat_id, before))
        return [_source(r) for r in rows]

    def unsummarised(self, chat_id: int, before: int | None) -> list[SourceMessage]:
        """Messages that left the window and no summary in use (or absorbed) covers."""
        if before is None:
            return []
        rows = self._storage.query(
            "SELECT * FROM messages m WHERE m.chat_id = ? AND m.id < ? AND m.status != "
            "'discarded' AND m.archived_at IS NULL AND m.content != '' AND NOT EXISTS ("
            "SELECT 1 FROM summary_covers c JOIN summaries s ON s.id = c.summary_id WHERE "
            "c.message_id = m.id AND s.status != 'invalid' AND s.archived_at IS NULL) "
            "ORDER BY m.id", (chat_id, before))
        return [_source(r) for r in rows]

    # ------------------------------------------------------------------ writing
    def add(self, chat_id: int, tier: int, private: bool, prose: str, verbatim: list[str],
            covers: Iterable[int], *, status: str, detail_level: str, tokens: int, now: float,
            absorbs: Iterable[int] = (), expect: dict[int, str] | None = None) -> Summary:
        """One summary with its coverage; the summaries it ``absorbs`` (merged into it) point to
        it — one transaction. Raises :class:`Stale` (nothing written) when what it was made from
        changed meanwhile: a covered message edited (``expect``: id → the content summarised),
        discarded or archived, or an absorbed summary no longer in use."""
        covers = sorted(set(covers))
        absorbs = list(absorbs)
        with self._storage.transaction() as conn:
            if expect is not None:
                marks = ",".join("?" * len(expect))
                rows = {r[0]: r[1] for r in conn.execute(
                    f"SELECT id, content FROM messages WHERE id IN ({marks}) AND status != "
                    f"'discarded' AND archived_at IS NULL", list(expect))}
                if rows != expect:
                    raise Stale("a message of the chunk changed while it was summarised")
            if absorbs:
                marks = ",".join("?" * len(absorbs))
                live = conn.execute(
                    f"SELECT COUNT(*) FROM summaries WHERE id IN ({marks}) AND status != "
                    f"'invalid' AND parent_id IS NULL AND archived_at IS NULL",
                    absorbs).fetchone()[0]
                if live != len(absorbs):
                    raise Stale("a summary being merged changed meanwhile")
            cur = conn.execute(
                "INSERT INTO summaries (chat_id, tier, private, prose, verbatim, first_id, "
                "last_id, status, detail_level, tokens, created_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (chat_id, tier, int(private), prose, json.dumps(list(verbatim),
                                                                ensure_ascii=False),
                 covers[0], covers[-1], status, detail_level, tokens, now, now))
            sid = int(cur.lastrowid)
            conn.executemany("INSERT INTO summary_covers (summary_id, message_id) VALUES (?, ?)",
                             [(sid, m) for m in covers])
            for child in absorbs:
                conn.execute("UPDATE summaries SET parent_id = ?, updated_at = ? WHERE id = ?",
                             (sid, now, child))
        return self.get(sid)

    def edit(self, summary_id: int, prose: str, verbatim: list[str], now: float,
             tokens: int = 0) -> Summary:
        """The owner's edit: kept as written (no fidelity check), marked ``edited``."""
        if not isinstance(prose, str) or not prose.strip():
            raise MemoryOpError("a summary cannot be empty")
        items = [" ".join(v.split()) for v in verbatim if isinstance(v, str) and v.strip()]
        with self._storage.transaction() as conn:
            n = conn.execute(
                "UPDATE summaries SET prose = ?, verbatim = ?, status = 'edited', tokens = ?, "
                "updated_at = ? WHERE id = ? AND status != 'invalid' AND archived_at IS NULL",
                (prose.strip(), json.dumps(items, ensure_ascii=False), tokens, now,
                 summary_id)).rowcount
        if not n:
            raise MemoryOpError(f"summary #{summary_id} is not in use (rebuilt or archived)")
        return self.get(summary_id)

    def invalidate(self, message_ids: Iterable[int], now: float) -> list[int]:
        with self._storage.transaction() as conn:
            return invalidate_covering(conn, message_ids, now)

    def rebuild(self, chat_id: int, now: float) -> int:
        """Start over: every summary of the chat becomes invalid (kept, not deleted); the worker
        then summarises the whole left-window history again. Returns how many were dropped."""
        with self._storage.transaction() as conn:
            return conn.execute(
                "UPDATE summaries SET status = 'invalid', parent_id = NULL, updated_at = ? "
                "WHERE chat_id = ? AND status != 'invalid' AND archived_at IS NULL",
                (now, chat_id)).rowcount


def _summary(r: sqlite3.Row) -> Summary:
    return Summary(r["id"], r["chat_id"], r["tier"], bool(r["private"]), r["prose"],
                   tuple(json.loads(r["verbatim"] or "[]")), r["first_id"], r["last_id"],
                   r["status"], r["parent_id"], r["detail_level"], r["tokens"], r["created_at"],
                   r["updated_at"], r["archived_at"])


def _source(r: sqlite3.Row) -> SourceMessage:
    return SourceMessage(r["id"], r["turn_id"], r["role"], r["content"],
                         bool(r["private_ok"]), r["created_at"], json.loads(r["meta"] or "{}"))


# ---------------------------------------------------------------------------- the prompt block
def render(summaries: list[Summary]) -> str:
    """The block that sits after the stable prefix and before the live window ("" when there is
    nothing to say). Oldest first: the long-term timeline, merged, then recent summaries; the
    verbatim lists once, deduplicated, at the end."""
    if not summaries:
        return ""
    parts = [HEADER]
    kept: list[str] = []
    for s in summaries:
        parts.append(s.prose.strip())
        for v in s.verbatim:
            if v not in kept:
                kept.append(v)
    if kept:
        parts.append("Kept exactly: " + "; ".join(kept))
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------- the work
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
RETRY_LINE = ("\nYour previous summary dropped: {missing}. Every one of them must appear in "
              "the summary or in the verbatim list.")
MERGE_INSTRUCTION = """Merge these consecutive summaries of one conversation into one shorter \
summary, oldest first, for Eva's own later use. Keep every name, number and date, open \
promises, the current state and the owner's corrections. Answer as JSON {{"summary": "..."}}.{terms}

The summaries:
{summaries}"""


def summary_schema(with_verbatim: bool) -> dict[str, Any]:
    props: dict[str, Any] = {"summary": {"type": "string", "minLength": 10,
                                         "maxLength": MAX_SUMMARY_CHARS}}
    if with_verbatim:
        props["verbatim"] = {"type": "array", "items": {"type": "string", "minLength": 1,
                                                        "maxLength": MAX_ITEM_CHARS},
                             "maxItems": MAX_VERBATIM}
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
            target = next((p for p, idx in periods.items()
                           if len(idx) > 1 or len(out[idx[0]]) > FOLD_LINE_CHARS), None)
            if target is None:
                break
            idx = periods[target]
            bodies = [re.sub(r"^\d{4}(-\d{2})?(-\d{2})?(\s*…\s*\d{4}-\d{2}-\d{2})?:\s*", "",
                             out[i]) for i in idx]
            line = f"{target}: " + "; ".join(_first_clause(b) for b in bodies)
            if len(line) > FOLD_LINE_CHARS:
                line = line[: FOLD_LINE_CHARS - 1].rstrip() + "…"
            out = out[: idx[0]] + [line] + [ln for k, ln in enumerate(out)
                                            if k > idx[0] and k not in idx]
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

    def __init__(self, store: SummaryStore, model: ChatModel, *, clock: Any,
                 detail_level: str = "balanced", chunk_messages: int = 16,
                 chunk_tokens: int = 1_500, writer: Any = None, timeout: float = 1_200.0,
                 max_tokens: int = 600) -> None:
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
                return StepResult("paused", seconds=time.monotonic() - t0,
                                  model_calls=e.calls)
            except Stale as e:  # nothing written; the next step reads the new state
                return StepResult("stale", seconds=time.monotonic() - t0, note=str(e))
            return StepResult("idle", seconds=time.monotonic() - t0)

    def run(self, chat_id: int, window_start: Callable[[], int | None] | int | None,
            cancel: threading.Event | None = None,
            progress: Callable[[StepResult], None] | None = None, max_steps: int = 1_000
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
    def _ask(self, messages: list[Message], schema: dict[str, Any], calls: list[int]
             ) -> dict[str, Any]:
        if self.interrupt.is_set():
            raise _Interrupted(calls[0])
        calls[0] += 1
        try:
            out = self.model.generate_json(messages, schema, timeout=self.timeout,
                                           max_tokens=self.max_tokens, cancel=self.interrupt)
        except ModelError:
            if self.interrupt.is_set():
                raise _Interrupted(calls[0]) from None
            raise
        if self.interrupt.is_set():
            raise _Interrupted(calls[0])
        return out

    def _summarise_chunk(self, chat_id: int, chunk: list[SourceMessage], t0: float) -> StepResult:
        calls = [0]
        saved = 0
        if self.writer is not None:
            saved = self.writer.keep(chunk, cancel=self.interrupt)
            if self.interrupt.is_set():
                raise _Interrupted(calls[0])
        source = "\n".join(m.content for m in chunk)
        transcript = "\n".join(f"{'Owner' if m.role == 'user' else 'Eva'}: {m.content}"
                               for m in chunk)
        terms = sorted(salient_terms(source))
        terms_line = TERMS_LINE.format(terms=", ".join(terms)) if terms else ""
        rejected = 0
        prose, verbatim, status = "", [], OK
        missing: list[str] = []
        why: list[str] = []
        for attempt in range(2):
            extra = RETRY_LINE.format(missing=", ".join(missing)) if attempt else ""
            prompt: list[Message] = [{"role": "user", "content": CHUNK_INSTRUCTION.format(
                terms=terms_line + extra, transcript=transcript)}]
            try:
                plan = self._ask(prompt, summary_schema(True), calls)
            except ModelError as e:
                rejected += 1
                why.append(f"model: {e}")
                continue
            prose = " ".join(str(plan.get("summary", "")).split())
            verbatim = _clean_items(plan.get("verbatim"))
            missing = dropped(source, prose + "\n" + "\n".join(verbatim))
            if prose and not missing:
                break
            rejected += 1
            why.append("dropped: " + ", ".join(missing) if missing else "empty summary")
        else:
            prose, verbatim, status = extractive(chunk), sorted(terms), FALLBACK
        date = _line_date(chunk[0].created_at)
        s = self.store.add(chat_id, RECENT, any(m.private_ok for m in chunk), prose, verbatim,
                           [m.id for m in chunk], status=status, detail_level=self.detail_level,
                           tokens=self._tokens(prose, verbatim), now=self.clock.now(),
                           expect={m.id: m.content for m in chunk})
        return StepResult("chunk", s, time.monotonic() - t0, calls[0], rejected, saved,
                          f"{len(chunk)} messages from {date}"
                          + (" · rejected: " + "; ".join(why) if why else ""))

    def _merge(self, chat_id: int, parts: list[Summary], private: bool, t0: float
               ) -> StepResult:
        calls = [0]
        source = "\n".join(p.prose for p in parts)
        verbatim = _union(v for p in parts for v in p.verbatim)
        terms = sorted(t for t in salient_terms(source)
                       if not present(t, "\n".join(verbatim)))
        terms_line = TERMS_LINE.format(terms=", ".join(terms)) if terms else ""
        rejected = 0
        prose, status = "", OK
        missing: list[str] = []
        for attempt in range(2):
            extra = RETRY_LINE.format(missing=", ".join(missing)) if attempt else ""
            summaries = "\n\n".join(f"({i + 1}) {p.prose}" for i, p in enumerate(parts))
            prompt: list[Message] = [{"role": "user", "content": MERGE_INSTRUCTION.format(
                terms=terms_line + extra, summaries=summaries)}]
            try:
                plan = self._ask(prompt, summary_schema(False), calls)
            except ModelError:
                rejected += 1
                continue
            prose = " ".join(str(plan.get("summary", "")).split())
            missing = dropped(source, prose + "\n" + "\n".join(verbatim))
            if prose and not missing:
                break
            rejected += 1
        else:
            prose, status = " ".join(p.prose for p in parts), FALLBACK
        covers = [m for p in parts for m in self.store.covers(p.id)]
        s = self.store.add(chat_id, MERGED, private, prose, verbatim, covers, status=status,
                           detail_level=self.detail_level,
                           tokens=self._tokens(prose, verbatim), now=self.clock.now(),
                           absorbs=[p.id for p in parts])
        return StepResult("merge", s, time.monotonic() - t0, calls[0], rejected)

    def _long_term(self, chat_id: int, longs: list[Summary], parts: list[Summary],
                   private: bool, t0: float) -> StepResult:
        """4 merged summaries join the long-term summary as timeline lines (no model call: a
        merged summary is already short); past the cap the oldest lines fold."""
        lines = [ln for s in longs for ln in s.prose.splitlines() if ln.strip()]
        for p in parts:
            first, last = self._dates(p)
            span = first if first == last else f"{first} … {last}"
            lines.append(f"{span}: {p.prose}")
        verbatim = _union([*(v for s in longs for v in s.verbatim),
                           *(v for p in parts for v in p.verbatim)])
        cap = LONG_TERM_CAP.get(self.detail_level, LONG_TERM_CAP["balanced"])
        folded = fold(lines, lambda ls: self._tokens("\n".join(ls), verbatim) > cap)
        # past the cap even fully folded: the oldest verbatim items go (newest state wins)
        while verbatim and self._tokens("\n".join(folded), verbatim) > cap:
            verbatim.pop(0)
        prose = "\n".join(folded)
        covers = [m for s in [*longs, *parts] for m in self.store.covers(s.id)]
        s = self.store.add(chat_id, LONG_TERM, private, prose, verbatim, covers,
                           status=OK, detail_level=self.detail_level,
                           tokens=self._tokens(prose, verbatim), now=self.clock.now(),
                           absorbs=[x.id for x in [*longs, *parts]])
        action = "fold" if len(folded) < len(lines) else "long-term"
        return StepResult(action, s, time.monotonic() - t0, 0, 0)

    def _dates(self, s: Summary) -> tuple[str, str]:
        rows = self.store._storage.query(
            "SELECT MIN(created_at), MAX(created_at) FROM messages WHERE id IN (?, ?)",
            (s.first_id, s.last_id))
        lo, hi = rows[0] if rows and rows[0][0] is not None else (s.created_at, s.created_at)
        return _line_date(lo), _line_date(hi)

    def _tokens(self, prose: str, verbatim: list[str]) -> int:
        return self.model.count_tokens(prose + "\n" + "\n".join(verbatim))


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


def extractive(chunk: list[SourceMessage], per_message: int = 160) -> str:
    """The fallback summary: each message's sentences that carry a name or number (or its
    first sentence), clipped — the source's own words, so nothing is made up."""
    out = []
    for m in chunk:
        who = "The owner" if m.role == "user" else "Eva"
        sentences = [s.strip() for s in re.split(r"(?<=[.!?…])\s+|\n+", m.content) if s.strip()]
        keep = [s for s in sentences if salient_terms(s)] or sentences[:1]
        body = " ".join(keep)
        if len(body) > per_message:
            body = body[: per_message - 1].rstrip() + "…"
        out.append(f"{who}: {body}")
    return " ".join(out)
