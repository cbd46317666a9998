"""The conversation's messages (SPEC §8.1, §8.2, §8.4): the ``messages`` table and the live
window computed from it.

:class:`Transcript` owns the table, on the memory's database (``memory.attach(Transcript)``).
:func:`live_window` is pure: it computes the window from the stored messages and where the
window started last; the caller (one turn) keeps the new start.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from core.storage import Storage
from core.summaries import invalidate_covering


@dataclass
class StoredMessage:
    id: int
    turn_id: str
    role: str
    content: str
    status: str
    tokens: int
    created_at: float
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Window:
    """The earlier messages the next prompt carries, and the id it starts at (after sliding)."""

    messages: list[StoredMessage]
    start: int | None

    @property
    def recalled(self) -> set[int]:
        """Records already recalled in the window's messages (not repeated)."""
        return {i for m in self.messages for i in m.meta.get("recalled", ())}


def live_window(history: list[StoredMessage], start: int | None, max_tokens: int,
                max_messages: int, slide_keep: float) -> Window:
    """The window over ``history`` (oldest first) from ``start``. It slides in chunks: when it
    overflows it drops to ``slide_keep`` of its budget and starts at a user message, so the
    prompt prefix stays the same for many turns and the model's KV cache keeps working."""
    msgs = [m for m in history if m.content]
    if start is not None:
        msgs = [m for m in msgs if m.id >= start]

    def fits(ms: list[StoredMessage], tok: int, n: int) -> bool:
        return len(ms) <= n and sum(m.tokens for m in ms) <= tok

    if not fits(msgs, max_tokens, max_messages):
        keep_tok = int(max_tokens * slide_keep)
        keep_n = max(2, int(max_messages * slide_keep))
        while msgs and not fits(msgs, keep_tok, keep_n):
            msgs.pop(0)
        while msgs and msgs[0].role != "user":  # start at a user message
            msgs.pop(0)
        start = msgs[0].id if msgs else None
    return Window(msgs, start)


class Transcript:
    """The ``messages`` table. A message belongs to a chat (:mod:`core.chats`: one persona in
    one channel — the TUI, a group, a DM bridge…); ``private_ok`` records whether a message's
    turn could see private memory. Editing, discarding or deleting a message invalidates the
    summaries covering it (SPEC §8.3), in the same transaction."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def add(self, persona: str, channel: str, turn_id: str, role: str, content: str, *,
            private_ok: bool, status: str, tokens: int, at: float, meta: dict,
            chat_id: int | None = None) -> int:
        with self._storage.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO messages (persona, channel, private_ok, turn_id, role, content, "
                "status, tokens, created_at, meta, chat_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (persona, channel, int(private_ok), turn_id, role, content, status, tokens, at,
                 json.dumps(meta), chat_id))
            if chat_id is not None:
                conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (at, chat_id))
            return int(cur.lastrowid)

    def history(self, persona: str, channel: str, limit: int = 200,
                sees_private: bool = True) -> list[StoredMessage]:
        """Messages of one conversation, oldest first, discarded ones excluded; with
        ``sees_private=False`` only those written where private memory was hidden."""
        rows = self._storage.query(
            "SELECT * FROM messages WHERE persona = ? AND channel = ? AND status != 'discarded' "
            "AND archived_at IS NULL "
            + ("" if sees_private else "AND private_ok = 0 ")
            + "ORDER BY id DESC LIMIT ?", (persona, channel, limit))
        return [_message(r) for r in reversed(rows)]

    def chat_history(self, chat_id: int, limit: int = 200, sees_private: bool = True
                     ) -> list[StoredMessage]:
        """Messages of one chat, oldest first, discarded and archived ones excluded; with
        ``sees_private=False`` only those written where private memory was hidden."""
        rows = self._storage.query(
            "SELECT * FROM messages WHERE chat_id = ? AND status != 'discarded' "
            "AND archived_at IS NULL "
            + ("" if sees_private else "AND private_ok = 0 ")
            + "ORDER BY id DESC LIMIT ?", (chat_id, limit))
        return [_message(r) for r in reversed(rows)]

    def discard_answers(self, turn_id: str, at: float = 0.0, keep: int | None = None) -> None:
        """Regenerate: the turn's answers leave the conversation (kept in the table as its
        alternatives, issue 28 item 5: ``meta.status`` keeps what each was, ``meta.undone``
        says its memory writes were rolled back), and the summaries covering them are no longer
        valid. ``keep``: one answer of the turn that stays (or comes back) as the chosen one."""
        with self._storage.transaction() as conn:
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM messages WHERE turn_id = ? AND role = 'assistant' AND "
                "status != 'discarded' AND id IS NOT ?", (turn_id, keep))]
            conn.executemany(
                "UPDATE messages SET meta = json_set(coalesce(meta, '{}'), '$.status', status, "
                "'$.undone', json('true')), status = 'discarded' WHERE id = ?",
                [(i,) for i in ids])
            if keep is not None:
                conn.execute(
                    "UPDATE messages SET status = coalesce(json_extract(meta, '$.status'), "
                    "'ok') WHERE id = ? AND turn_id = ? AND role = 'assistant' AND "
                    "status = 'discarded'", (keep, turn_id))
                ids.append(keep)
            invalidate_covering(conn, ids, at)

    def alternatives(self, turn_id: str) -> list[StoredMessage]:
        """Every answer of one turn still in its chat (the chosen one and the discarded ones),
        oldest first (issue 28 item 5)."""
        rows = self._storage.query(
            "SELECT * FROM messages WHERE turn_id = ? AND role = 'assistant' AND "
            "archived_at IS NULL ORDER BY id", (turn_id,))
        return [_message(r) for r in rows]

    def alternative_counts(self, chat_id: int) -> dict[str, int]:
        """turn id → how many answers it has, for the turns of one chat with more than one."""
        rows = self._storage.query(
            "SELECT turn_id, count(*) AS n FROM messages WHERE chat_id = ? AND "
            "role = 'assistant' AND archived_at IS NULL GROUP BY turn_id HAVING n > 1",
            (chat_id,))
        return {r["turn_id"]: int(r["n"]) for r in rows}

    def get(self, message_id: int, chat_id: int | None = None) -> StoredMessage | None:
        """One message still in its chat (of ``chat_id`` when given), or None."""
        rows = self._storage.query(
            "SELECT * FROM messages WHERE id = ? AND archived_at IS NULL"
            + ("" if chat_id is None else " AND chat_id = ?"),
            (message_id,) if chat_id is None else (message_id, chat_id))
        return _message(rows[0]) if rows else None

    def edit(self, message_id: int, content: str, at: float) -> None:
        """The owner edits a stored message: its text (and the form the model saw) changes, and
        the summaries covering it are no longer valid."""
        if not isinstance(content, str) or not content.strip():
            raise ValueError("a message cannot be empty")
        with self._storage.transaction() as conn:
            row = conn.execute("SELECT meta FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise ValueError(f"there is no message #{message_id}")
            meta = json.loads(row["meta"] or "{}")
            meta.pop("prompt", None)
            meta["edited"] = at  # the chat marks it edited (issue 28 item 5)
            conn.execute("UPDATE messages SET content = ?, meta = ? WHERE id = ?",
                         (content.strip(), json.dumps(meta), message_id))
            invalidate_covering(conn, [message_id], at)

    def delete(self, message_id: int, at: float) -> None:
        """A message leaves its chat for the archive; the summaries covering it are no longer
        valid."""
        with self._storage.transaction() as conn:
            conn.execute("UPDATE messages SET archived_at = ? WHERE id = ? AND archived_at IS "
                         "NULL", (at, message_id))
            invalidate_covering(conn, [message_id], at)

    def set_meta(self, message_id: int, meta: dict) -> None:
        with self._storage.transaction() as conn:
            conn.execute("UPDATE messages SET meta = ? WHERE id = ?",
                         (json.dumps(meta), message_id))


def _message(r: sqlite3.Row) -> StoredMessage:
    return StoredMessage(r["id"], r["turn_id"], r["role"], r["content"], r["status"],
                         r["tokens"] or 0, r["created_at"], json.loads(r["meta"] or "{}"))
