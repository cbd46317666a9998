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

from core.chat import search as chat_search
from core.chat.chats import UNTITLED
from core.chat.search import SearchHit
from core.chat.summaries import invalidate_covering
from core.store.storage import Storage


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
    chat_id: int | None = None


@dataclass(frozen=True)
class Window:
    """The earlier messages the next prompt carries, and the id it starts at (after sliding)."""

    messages: list[StoredMessage]
    start: int | None

    @property
    def recalled(self) -> set[int]:
        """Records already recalled in the window's messages (not repeated)."""
        return {i for m in self.messages for i in m.meta.get("recalled", ())}


def live_window(
    history: list[StoredMessage],
    start: int | None,
    max_tokens: int,
    max_messages: int,
    slide_keep: float,
) -> Window:
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
    """The ``messages`` table. A message belongs to a chat (:mod:`core.chat.chats`: one persona in
    one channel — the TUI, a group, a DM bridge…); ``private_ok`` records whether a message's
    turn could see private memory. Editing, discarding or deleting a message invalidates the
    summaries covering it (SPEC §8.3), in the same transaction."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def add(
        self,
        persona: str,
        channel: str,
        turn_id: str,
        role: str,
        content: str,
        *,
        private_ok: bool,
        status: str,
        tokens: int,
        at: float,
        meta: dict,
        chat_id: int | None = None,
    ) -> int:
        with self._storage.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO messages (persona, channel, private_ok, turn_id, role, content, "
                "status, tokens, created_at, meta, chat_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    persona,
                    channel,
                    int(private_ok),
                    turn_id,
                    role,
                    content,
                    status,
                    tokens,
                    at,
                    json.dumps(meta),
                    chat_id,
                ),
            )
            if chat_id is not None:
                conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (at, chat_id))
            assert cur.lastrowid is not None  # an INSERT sets it
            return cur.lastrowid

    def history(
        self, persona: str, channel: str, limit: int = 200, sees_private: bool = True
    ) -> list[StoredMessage]:
        """Messages of one conversation, oldest first, discarded ones excluded; with
        ``sees_private=False`` only those written where private memory was hidden."""
        return self._latest("persona = ? AND channel = ?", (persona, channel), limit, sees_private)

    def chat_history(
        self, chat_id: int, limit: int = 200, sees_private: bool = True
    ) -> list[StoredMessage]:
        """Messages of one chat, oldest first, discarded and archived ones excluded; with
        ``sees_private=False`` only those written where private memory was hidden."""
        return self._latest("chat_id = ?", (chat_id,), limit, sees_private)

    def _latest(
        self, where: str, params: tuple[object, ...], limit: int, sees_private: bool
    ) -> list[StoredMessage]:
        """The last ``limit`` live messages matching ``where``, oldest first: what a
        conversation's and a chat's history both are, read by one query."""
        rows = self._storage.query(
            f"SELECT * FROM messages WHERE {where} AND status != 'discarded' "
            "AND archived_at IS NULL "
            + ("" if sees_private else "AND private_ok = 0 ")
            + "ORDER BY id DESC LIMIT ?",
            (*params, limit),
        )
        return [_message(r) for r in reversed(rows)]

    def message(self, message_id: object, chat_id: int | None = None) -> StoredMessage | None:
        """One live message (not archived, not discarded), of ``chat_id`` when given; None
        when there is no such message."""
        if isinstance(message_id, bool) or not isinstance(message_id, int):
            return None
        rows = self._storage.query(
            "SELECT * FROM messages WHERE id = ? AND archived_at IS NULL "
            "AND status != 'discarded'" + (" AND chat_id = ?" if chat_id is not None else ""),
            (message_id, chat_id) if chat_id is not None else (message_id,),
        )
        return _message(rows[0]) if rows else None

    def page(
        self,
        chat_id: int,
        *,
        before: int | None = None,
        after: int | None = None,
        upto: int | None = None,
        limit: int = 100,
        sees_private: bool = True,
    ) -> list[StoredMessage]:
        """Scrolling through a chat (issue 28 item 6): up to ``limit`` live messages, oldest
        first — the ones just older than ``before`` (scrolling up), or just newer than
        ``after`` and not past ``upto`` (scrolling down towards what was on screen), or from
        ``after`` on when neither bound is given."""
        where = ["chat_id = ?", "status != 'discarded'", "archived_at IS NULL"]
        params: list[object] = [chat_id]
        if not sees_private:
            where.append("private_ok = 0")
        if before is not None:
            where.append("id < ?")
            params.append(before)
        if after is not None:
            where.append("id > ?")
            params.append(after)
        if upto is not None:
            where.append("id <= ?")
            params.append(upto)
        newest_first = after is None
        rows = self._storage.query(
            "SELECT * FROM messages WHERE "
            + " AND ".join(where)
            + f" ORDER BY id {'DESC' if newest_first else 'ASC'} LIMIT ?",
            (*params, max(1, int(limit))),
        )
        out = [_message(r) for r in rows]
        return out[::-1] if newest_first else out

    def around(
        self,
        chat_id: int,
        message_id: int,
        context: int = 10,
        most: int = 500,
        sees_private: bool = True,
    ) -> tuple[list[StoredMessage], bool]:
        """A chat opened at a search hit (issue 28 item 6): ``context`` messages before the
        hit, the hit and what follows it to the end of the chat — at most ``most`` messages
        after the first. Returns them (oldest first) and whether the chat goes on past them."""
        earlier = self.page(chat_id, before=message_id, limit=context, sees_private=sees_private)
        first = earlier[0].id if earlier else message_id
        rest = self.page(chat_id, after=first - 1, limit=most + 1, sees_private=sees_private)
        return rest[:most], len(rest) > most

    def search(
        self,
        query: str,
        *,
        sees_private: bool = True,
        limit: int = chat_search.LIMIT,
        chat_id: int | None = None,
    ) -> list[SearchHit]:
        """Every live chat's live messages matching ``query`` (:mod:`core.chat.search`): the
        exact words first, then other forms of them, then words that only start like them;
        newest first within each.
        A trusted-surface read (the messages are the owner's): with ``sees_private=False``
        only messages written where private memory was hidden are searched."""
        built = chat_search.queries(query)
        if built is None:
            return []
        limit = max(1, min(int(limit), 500))
        # ids first (newest first), snippets only for the ids kept: a common word matches
        # thousands of messages, and a snippet of each would cost more than the search
        find = (
            "SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
            "JOIN chats c ON c.id = m.chat_id "
            "WHERE messages_fts MATCH ? AND m.archived_at IS NULL "
            "AND m.status != 'discarded' AND c.archived_at IS NULL"
            + ("" if sees_private else " AND m.private_ok = 0")
            + (" AND m.chat_id = ?" if chat_id is not None else "")
            + " ORDER BY messages_fts.rowid DESC LIMIT ?"
        )
        found: dict[int, tuple[str, bool]] = {}  # id → (the expression it matched, exact)
        with self._storage.reading() as conn:
            for expr, exact in zip(built, (True, False), strict=True):
                if not exact and (expr == built[0] or len(found) >= limit):
                    break
                # the widened pass looks further: its hits are ordered by how well they match
                pool = limit if exact else 3 * limit
                params = (expr, *((chat_id,) if chat_id is not None else ()), pool)
                for (mid,) in conn.execute(find, params):
                    found.setdefault(mid, (expr, exact))
            if not found:
                return []
            marks = ",".join("?" * len(found))
            rows = {
                r["id"]: r
                for r in conn.execute(
                    "SELECT m.id, m.chat_id, m.role, m.created_at, m.content, c.persona "
                    f"FROM messages m JOIN chats c ON c.id = m.chat_id WHERE m.id IN ({marks})",
                    list(found),
                )
            }
            stems = chat_search.query_stems(query)
            ordered = sorted(
                (m for m in found if m in rows),
                key=lambda m: (chat_search.tier(rows[m]["content"], found[m][1], stems), -m),
            )[:limit]
            snips: dict[int, str] = {}  # only for the hits returned
            for expr in {found[m][0] for m in ordered}:
                ids = [m for m in ordered if found[m][0] == expr]
                marks = ",".join("?" * len(ids))
                for r in conn.execute(
                    "SELECT rowid, snippet(messages_fts, 0, ?, ?, '…', 14) FROM "
                    f"messages_fts WHERE messages_fts MATCH ? AND rowid IN ({marks})",
                    (chat_search.MARK_START, chat_search.MARK_END, expr, *ids),
                ):
                    snips[r[0]] = r[1] or ""
            chats = sorted({rows[m]["chat_id"] for m in ordered})
            marks = ",".join("?" * len(chats))
            labels = {
                r["id"]: _label(r["title"], r["first"])
                for r in conn.execute(
                    "SELECT c.id, c.title, (SELECT f.content FROM messages f WHERE "
                    "f.chat_id = c.id AND f.role = 'user' ORDER BY f.id LIMIT 1) AS first "
                    f"FROM chats c WHERE c.id IN ({marks})",
                    chats,
                )
            }
        return [
            SearchHit(
                m,
                rows[m]["chat_id"],
                labels.get(rows[m]["chat_id"], ""),
                rows[m]["persona"],
                rows[m]["role"],
                rows[m]["created_at"],
                snips.get(m, ""),
                found[m][1],
            )
            for m in ordered
        ]

    def exported(self, chat_ids: list[int], private: bool = False) -> tuple[list[dict], int]:
        """The live messages of these chats for an export (issue 28 item 7), oldest first, as
        plain dicts (id, chat_id, role, content, status, created_at, private_ok); those written
        where private memory was visible only with ``private``. Returns them and how many were
        left out. One consistent read."""
        if not chat_ids:
            return [], 0
        marks = ",".join("?" * len(chat_ids))
        where = (
            f"chat_id IN ({marks}) AND archived_at IS NULL AND status != 'discarded' "
            "AND content != ''"
        )
        with self._storage.reading() as conn:
            rows = [
                dict(r)
                for r in conn.execute(
                    "SELECT id, chat_id, role, content, status, created_at, private_ok FROM "
                    f"messages WHERE {where}"
                    + ("" if private else " AND private_ok = 0")
                    + " ORDER BY chat_id, id",
                    chat_ids,
                )
            ]
            left = (
                0
                if private
                else conn.execute(
                    f"SELECT COUNT(*) FROM messages WHERE {where} AND private_ok = 1", chat_ids
                ).fetchone()[0]
            )
        return rows, left

    def discard_answers(self, turn_id: str, at: float = 0.0, keep: int | None = None) -> None:
        """Regenerate: the turn's answers leave the conversation (kept in the table as its
        alternatives, issue 28 item 5: ``meta.status`` keeps what each was, ``meta.undone``
        says its memory writes were rolled back), and the summaries covering them are no longer
        valid. ``keep``: one answer of the turn that stays (or comes back) as the chosen one."""
        with self._storage.transaction() as conn:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM messages WHERE turn_id = ? AND role = 'assistant' AND "
                    "status != 'discarded' AND id IS NOT ?",
                    (turn_id, keep),
                )
            ]
            conn.executemany(
                "UPDATE messages SET meta = json_set(coalesce(meta, '{}'), '$.status', status, "
                "'$.undone', json('true')), status = 'discarded' WHERE id = ?",
                [(i,) for i in ids],
            )
            if keep is not None:
                conn.execute(
                    "UPDATE messages SET status = coalesce(json_extract(meta, '$.status'), "
                    "'ok') WHERE id = ? AND turn_id = ? AND role = 'assistant' AND "
                    "status = 'discarded'",
                    (keep, turn_id),
                )
                ids.append(keep)
            invalidate_covering(conn, ids, at)

    def alternatives(self, turn_id: str) -> list[StoredMessage]:
        """Every answer of one turn still in its chat (the chosen one and the discarded ones),
        oldest first (issue 28 item 5)."""
        rows = self._storage.query(
            "SELECT * FROM messages WHERE turn_id = ? AND role = 'assistant' AND "
            "archived_at IS NULL ORDER BY id",
            (turn_id,),
        )
        return [_message(r) for r in rows]

    def alternative_counts(self, chat_id: int) -> dict[str, int]:
        """turn id → how many answers it has, for the turns of one chat with more than one."""
        rows = self._storage.query(
            "SELECT turn_id, count(*) AS n FROM messages WHERE chat_id = ? AND "
            "role = 'assistant' AND archived_at IS NULL GROUP BY turn_id HAVING n > 1",
            (chat_id,),
        )
        return {r["turn_id"]: int(r["n"]) for r in rows}

    def get(self, message_id: int, chat_id: int | None = None) -> StoredMessage | None:
        """One message still in its chat (of ``chat_id`` when given), or None."""
        rows = self._storage.query(
            "SELECT * FROM messages WHERE id = ? AND archived_at IS NULL"
            + ("" if chat_id is None else " AND chat_id = ?"),
            (message_id,) if chat_id is None else (message_id, chat_id),
        )
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
            conn.execute(
                "UPDATE messages SET content = ?, meta = ? WHERE id = ?",
                (content.strip(), json.dumps(meta), message_id),
            )
            invalidate_covering(conn, [message_id], at)

    def delete(self, message_id: int, at: float) -> None:
        """A message leaves its chat for the archive; the summaries covering it are no longer
        valid."""
        with self._storage.transaction() as conn:
            conn.execute(
                "UPDATE messages SET archived_at = ? WHERE id = ? AND archived_at IS NULL",
                (at, message_id),
            )
            invalidate_covering(conn, [message_id], at)

    def set_meta(self, message_id: int, meta: dict) -> None:
        with self._storage.transaction() as conn:
            conn.execute(
                "UPDATE messages SET meta = ? WHERE id = ?", (json.dumps(meta), message_id)
            )


def _message(r: sqlite3.Row) -> StoredMessage:
    return StoredMessage(
        r["id"],
        r["turn_id"],
        r["role"],
        r["content"],
        r["status"],
        r["tokens"] or 0,
        r["created_at"],
        json.loads(r["meta"] or "{}"),
        r["chat_id"],
    )


def _label(title: str | None, first: str | None) -> str:
    """A chat's name as :attr:`core.chat.chats.Chat.label` gives it."""
    if title:
        return title
    words = " ".join((first or "").split())
    return (words[:40] + "…" if len(words) > 40 else words) or UNTITLED
