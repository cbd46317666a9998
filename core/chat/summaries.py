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

:class:`SummaryStore` (this module) owns the ``summaries`` and ``summary_covers`` tables and
renders the prompt block; :class:`core.chat.summarizer.Summarizer` does the work, one step at a time
(resumable: all its state is in the store); :mod:`core.chat.summary_fidelity` checks what a summary
keeps.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

from core.errors import MemoryOpError, StoreError
from core.store.storage import Storage

RECENT, MERGED, LONG_TERM = 1, 2, 3
TIER_NAMES = {RECENT: "recent", MERGED: "merged", LONG_TERM: "long-term"}
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


# ---------------------------------------------------------------------------- the store
def invalidate_covering(
    conn: sqlite3.Connection, message_ids: Iterable[int], now: float
) -> list[int]:
    """Inside the caller's transaction: every summary covering one of ``message_ids`` becomes
    invalid (a merged summary covers its parts' messages, so it goes too); the summaries an
    invalid one had absorbed come back into use. Returns the invalidated ids."""
    ids = list(message_ids)
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    bad = [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT s.id FROM summaries s JOIN summary_covers c ON c.summary_id = s.id "
            f"WHERE c.message_id IN ({marks}) AND s.status != 'invalid'",
            ids,
        )
    ]
    if not bad:
        return []
    bmarks = ",".join("?" * len(bad))
    conn.execute(
        f"UPDATE summaries SET status = 'invalid', parent_id = NULL, updated_at = ? "
        f"WHERE id IN ({bmarks})",
        (now, *bad),
    )
    conn.execute(
        f"UPDATE summaries SET parent_id = NULL, updated_at = ? WHERE parent_id IN "
        f"({bmarks}) AND status != 'invalid'",
        (now, *bad),
    )
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
            + "ORDER BY first_id, tier DESC",
            (chat_id,),
        )
        return [_summary(r) for r in rows]

    def for_prompt(self, chat_id: int, sees_private: bool) -> list[Summary]:
        """What a turn's prompt may carry: private-only summaries only where private memory is
        visible (SPEC §8.9)."""
        return self.active(chat_id, sees_private)

    def all(self, chat_id: int) -> list[Summary]:
        """Every summary of a chat not in the archive (invalid and merged ones included)."""
        rows = self._storage.query(
            "SELECT * FROM summaries WHERE chat_id = ? AND archived_at IS NULL "
            "ORDER BY first_id, tier DESC, id",
            (chat_id,),
        )
        return [_summary(r) for r in rows]

    def covers(self, summary_id: int) -> list[int]:
        return [
            r[0]
            for r in self._storage.query(
                "SELECT message_id FROM summary_covers WHERE summary_id = ? ORDER BY message_id",
                (summary_id,),
            )
        ]

    def left_window(self, chat_id: int, before: int | None) -> list[SourceMessage]:
        """Messages of a chat that have left its live window (id < ``before``), oldest first,
        live only (not discarded, not archived, not empty)."""
        if before is None:
            return []
        return self._live(chat_id, "id < ?", before)

    def in_window(self, chat_id: int, start: int | None) -> list[SourceMessage]:
        """Messages of a chat's live window (id ≥ ``start``; every one for None), oldest first,
        live only (not discarded, not archived, not empty)."""
        return self._live(chat_id, "id >= ?", 0 if start is None else start)

    def _live(self, chat_id: int, where: str, bound: int) -> list[SourceMessage]:
        """A chat's live messages (not discarded, not archived, not empty) on one side of a
        message id (``where``: "id < ?" or "id >= ?"), oldest first."""
        rows = self._storage.query(
            f"SELECT * FROM messages WHERE chat_id = ? AND {where} AND status != 'discarded' "
            "AND archived_at IS NULL AND content != '' ORDER BY id",
            (chat_id, bound),
        )
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
            "ORDER BY m.id",
            (chat_id, before),
        )
        return [_source(r) for r in rows]

    # ------------------------------------------------------------------ writing
    def add(
        self,
        chat_id: int,
        tier: int,
        private: bool,
        prose: str,
        verbatim: list[str],
        covers: Iterable[int],
        *,
        status: str,
        detail_level: str,
        tokens: int,
        now: float,
        absorbs: Iterable[int] = (),
        expect: dict[int, str] | None = None,
    ) -> Summary:
        """One summary with its coverage; the summaries it ``absorbs`` (merged into it) point to
        it — one transaction. Raises :class:`Stale` (nothing written) when what it was made from
        changed meanwhile: a covered message edited (``expect``: id → the content summarised),
        discarded or archived, or an absorbed summary no longer in use."""
        covers = sorted(set(covers))
        absorbs = list(absorbs)
        with self._storage.transaction() as conn:
            if expect is not None:
                marks = ",".join("?" * len(expect))
                rows = {
                    r[0]: r[1]
                    for r in conn.execute(
                        f"SELECT id, content FROM messages WHERE id IN ({marks}) AND status != "
                        f"'discarded' AND archived_at IS NULL",
                        list(expect),
                    )
                }
                if rows != expect:
                    raise Stale("a message of the chunk changed while it was summarised")
            if absorbs:
                marks = ",".join("?" * len(absorbs))
                live = conn.execute(
                    f"SELECT COUNT(*) FROM summaries WHERE id IN ({marks}) AND status != "
                    f"'invalid' AND parent_id IS NULL AND archived_at IS NULL",
                    absorbs,
                ).fetchone()[0]
                if live != len(absorbs):
                    raise Stale("a summary being merged changed meanwhile")
            cur = conn.execute(
                "INSERT INTO summaries (chat_id, tier, private, prose, verbatim, first_id, "
                "last_id, status, detail_level, tokens, created_at, updated_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    chat_id,
                    tier,
                    int(private),
                    prose,
                    json.dumps(list(verbatim), ensure_ascii=False),
                    covers[0],
                    covers[-1],
                    status,
                    detail_level,
                    tokens,
                    now,
                    now,
                ),
            )
            sid = cur.lastrowid
            if sid is None:  # an INSERT always sets it
                raise StoreError("the store gave the new summary no id")
            conn.executemany(
                "INSERT INTO summary_covers (summary_id, message_id) VALUES (?, ?)",
                [(sid, m) for m in covers],
            )
            for child in absorbs:
                conn.execute(
                    "UPDATE summaries SET parent_id = ?, updated_at = ? WHERE id = ?",
                    (sid, now, child),
                )
        return self.get(sid)

    def edit(
        self, summary_id: int, prose: str, verbatim: list[str], now: float, tokens: int = 0
    ) -> Summary:
        """The owner's edit: kept as written (no fidelity check), marked ``edited``."""
        if not isinstance(prose, str) or not prose.strip():
            raise MemoryOpError("a summary cannot be empty")
        items = [" ".join(v.split()) for v in verbatim if isinstance(v, str) and v.strip()]
        with self._storage.transaction() as conn:
            n = conn.execute(
                "UPDATE summaries SET prose = ?, verbatim = ?, status = 'edited', tokens = ?, "
                "updated_at = ? WHERE id = ? AND status != 'invalid' AND archived_at IS NULL",
                (prose.strip(), json.dumps(items, ensure_ascii=False), tokens, now, summary_id),
            ).rowcount
        if not n:
            raise MemoryOpError(f"summary #{summary_id} is not in use (rebuilt or archived)")
        return self.get(summary_id)

    def rebuild(self, chat_id: int, now: float) -> int:
        """Start over: every summary of the chat becomes invalid (kept, not deleted); the worker
        then summarises the whole left-window history again. Returns how many were dropped."""
        with self._storage.transaction() as conn:
            return conn.execute(
                "UPDATE summaries SET status = 'invalid', parent_id = NULL, updated_at = ? "
                "WHERE chat_id = ? AND status != 'invalid' AND archived_at IS NULL",
                (now, chat_id),
            ).rowcount

    def span(self, s: Summary) -> tuple[float, float]:
        """When the first and the last message a summary covers were written (the summary's
        own creation when they are gone)."""
        rows = self._storage.query(
            "SELECT MIN(created_at), MAX(created_at) FROM messages WHERE id IN (?, ?)",
            (s.first_id, s.last_id),
        )
        if rows and rows[0][0] is not None:
            return rows[0][0], rows[0][1]
        return s.created_at, s.created_at


def _summary(r: sqlite3.Row) -> Summary:
    return Summary(
        r["id"],
        r["chat_id"],
        r["tier"],
        bool(r["private"]),
        r["prose"],
        tuple(json.loads(r["verbatim"] or "[]")),
        r["first_id"],
        r["last_id"],
        r["status"],
        r["parent_id"],
        r["detail_level"],
        r["tokens"],
        r["created_at"],
        r["updated_at"],
        r["archived_at"],
    )


def _source(r: sqlite3.Row) -> SourceMessage:
    return SourceMessage(
        r["id"],
        r["turn_id"],
        r["role"],
        r["content"],
        bool(r["private_ok"]),
        r["created_at"],
        json.loads(r["meta"] or "{}"),
    )


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
