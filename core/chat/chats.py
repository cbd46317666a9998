"""Chats (SPEC §8.9, issue 12): the owner starts new chats, switches, renames and deletes them.

A chat belongs to one persona (a name) and one channel (the TUI, a group, a DM bridge…); its
messages live in the ``messages`` table (:mod:`core.chat.transcript`), its rolling summaries in
``summaries`` (:mod:`core.chat.summaries`). Nothing the owner removes is gone at once (SPEC §11):

- deleting a chat moves it, with its messages and summaries, to the archive; it is restorable
  until the archive TTL (``memory.archive_ttl_days``), then :meth:`Chats.purge` deletes it;
- clearing a chat's history moves its messages and summaries to the archive the same way;
- ``chat.keep_days`` (retention, default: keep) moves messages older than that to the archive.

:class:`Chats` owns the ``chats`` table and the archive marks of a chat's messages and
summaries, so each of these moves is one transaction.
"""

from __future__ import annotations

import builtins  # Chats.list() shadows the type in the class's later annotations
import json
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import MemoryOpError
from core.store.storage import Storage

DEFAULT_PERSONA = "default"
DEFAULT_CHANNEL = "tui"
MAX_TITLE = 80
UNTITLED = "New chat"


class ChatNotFound(MemoryOpError):
    def __init__(self, chat_id: object) -> None:
        super().__init__(f"there is no chat #{chat_id}", code="not_found")


@dataclass(frozen=True)
class Chat:
    id: int
    persona: str
    channel: str
    title: str  # the owner's name for it; "" until named (see ``label``)
    created_at: float
    updated_at: float
    window_start: int | None  # first message id of the live window (kept by the chat's turns)
    archived_at: float | None
    messages: int = 0  # live (not archived, not discarded) messages
    first_words: str = ""  # the first user message, for an unnamed chat's label
    imported_from: str | None = None  # the app it was imported from (issue 28 item 7)
    review_from: int | None = None  # the first message not yet offered for drafting

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def label(self) -> str:
        if self.title:
            return self.title
        words = " ".join(self.first_words.split())
        return (words[:40] + "…" if len(words) > 40 else words) or UNTITLED


def valid_title(title: object) -> str:
    if not isinstance(title, str):
        raise MemoryOpError("a chat's title must be text")
    title = " ".join(title.split())
    if len(title) > MAX_TITLE:
        raise MemoryOpError(f"a chat's title is at most {MAX_TITLE} characters (got {len(title)})")
    return title


_SELECT = """SELECT c.*,
    (SELECT COUNT(*) FROM messages m WHERE m.chat_id = c.id AND m.archived_at IS NULL
        AND m.status != 'discarded') AS n,
    (SELECT m.content FROM messages m WHERE m.chat_id = c.id AND m.role = 'user'
        ORDER BY m.id LIMIT 1) AS first_words
    FROM chats c"""


class Chats:
    """The ``chats`` table (on the memory's database: ``memory.attach(Chats)``)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    # ------------------------------------------------------------------ reading
    def get(self, chat_id: object) -> Chat:
        if isinstance(chat_id, bool) or not isinstance(chat_id, int):
            raise ChatNotFound(chat_id)
        rows = self._storage.query(_SELECT + " WHERE c.id = ?", (chat_id,))
        if not rows:
            raise ChatNotFound(chat_id)
        return _chat(rows[0])

    def list(
        self, persona: str | None = None, channel: str | None = None, *, archived: bool = False
    ) -> list[Chat]:
        """Live chats (or, with ``archived``, the archived ones), most recently used first."""
        where = ["c.archived_at IS " + ("NOT NULL" if archived else "NULL")]
        params: list[object] = []
        if persona is not None:
            where.append("c.persona = ?")
            params.append(persona)
        if channel is not None:
            where.append("c.channel = ?")
            params.append(channel)
        rows = self._storage.query(
            _SELECT + " WHERE " + " AND ".join(where) + " ORDER BY c.updated_at DESC, c.id DESC",
            tuple(params),
        )
        return [_chat(r) for r in rows]

    def current(self, persona: str, channel: str, now: float) -> Chat:
        """The chat a surface opens on: the most recently used live chat of this persona and
        channel, or a new one."""
        with self._storage.lock:
            found = self.list(persona, channel)
            return found[0] if found else self.create(persona, channel, now)

    # ------------------------------------------------------------------ changes
    def create(self, persona: str, channel: str, now: float, title: str = "") -> Chat:
        title = valid_title(title)
        if not isinstance(persona, str) or not persona.strip():
            raise MemoryOpError("a chat belongs to a persona: give its name")
        if not isinstance(channel, str) or not channel.strip():
            raise MemoryOpError("a chat belongs to a channel: give its name")
        with self._storage.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO chats (persona, channel, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (persona, channel, title, now, now),
            )
            assert cur.lastrowid is not None  # an INSERT sets it
            chat_id = cur.lastrowid
        return self.get(chat_id)

    def rename(self, chat_id: int, title: object) -> Chat:
        title = valid_title(title)
        with self._storage.transaction() as conn:
            self._live(conn, chat_id)
            conn.execute("UPDATE chats SET title = ? WHERE id = ?", (title, chat_id))
        return self.get(chat_id)

    def touch(self, chat_id: int, now: float) -> None:
        with self._storage.transaction() as conn:
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (now, chat_id))

    def set_window_start(self, chat_id: int, start: int | None) -> None:
        with self._storage.transaction() as conn:
            conn.execute("UPDATE chats SET window_start = ? WHERE id = ?", (start, chat_id))

    def archive(self, chat_id: int, now: float, why: str = "deleted by the owner") -> Chat:
        """Delete a chat: it moves to the archive with its messages and summaries (one
        transaction), restorable until the archive TTL."""
        with self._storage.transaction() as conn:
            self._live(conn, chat_id)
            _archive_chat(conn, chat_id, now, why)
        return self.get(chat_id)

    @staticmethod
    def archive_of_persona(
        conn: sqlite3.Connection, persona_id: str, now: float, why: str = "its persona was deleted"
    ) -> int:
        """Inside the caller's transaction (deleting a persona, SPEC §8.6): every live chat of
        the persona moves to the archive with its summaries, as :meth:`archive` does one.
        Returns how many chats moved."""
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM chats WHERE persona = ? AND archived_at IS NULL", (persona_id,)
            )
        ]
        for chat_id in ids:
            _archive_chat(conn, chat_id, now, why)
        return len(ids)

    def restore(self, chat_id: int) -> Chat:
        """Bring an archived chat back, with the summaries its deletion archived."""
        with self._storage.transaction() as conn:
            row = conn.execute("SELECT archived_at FROM chats WHERE id = ?", (chat_id,)).fetchone()
            if row is None:
                raise ChatNotFound(chat_id)
            if row["archived_at"] is None:
                raise MemoryOpError(f"chat #{chat_id} is not in the archive")
            conn.execute(
                "UPDATE summaries SET archived_at = NULL WHERE chat_id = ? AND archived_at = ?",
                (chat_id, row["archived_at"]),
            )
            conn.execute(
                "UPDATE chats SET archived_at = NULL, archived_why = NULL WHERE id = ?", (chat_id,)
            )
        return self.get(chat_id)

    def clear(self, chat_id: int, now: float) -> int:
        """Clear a chat's history: its messages and summaries move to the archive (one
        transaction); the chat stays, empty. Returns how many messages moved."""
        with self._storage.transaction() as conn:
            self._live(conn, chat_id)
            n = conn.execute(
                "UPDATE messages SET archived_at = ? WHERE chat_id = ? AND archived_at IS NULL",
                (now, chat_id),
            ).rowcount
            conn.execute(
                "UPDATE summaries SET archived_at = ? WHERE chat_id = ? AND archived_at IS NULL",
                (now, chat_id),
            )
            conn.execute(
                "UPDATE chats SET window_start = NULL, updated_at = ? WHERE id = ?", (now, chat_id)
            )
        return n

    def restore_history(self, chat_id: int) -> int:
        """Undo :meth:`clear` (and retention) while the archive still holds the messages."""
        with self._storage.transaction() as conn:
            self._live(conn, chat_id)
            n = conn.execute(
                "UPDATE messages SET archived_at = NULL WHERE chat_id = ? AND "
                "archived_at IS NOT NULL",
                (chat_id,),
            ).rowcount
            conn.execute(
                "UPDATE summaries SET archived_at = NULL WHERE chat_id = ? AND "
                "archived_at IS NOT NULL",
                (chat_id,),
            )
        return n

    def apply_retention(self, now: float, keep_days: float | None) -> int:
        """``chat.keep_days``: messages older than that move to the archive (and the summaries
        covering only such messages with them). ``None`` keeps everything."""
        if keep_days is None:
            return 0
        cutoff = now - keep_days * 86_400.0
        with self._storage.transaction() as conn:
            n = conn.execute(
                "UPDATE messages SET archived_at = ? WHERE archived_at IS NULL AND created_at < ?",
                (now, cutoff),
            ).rowcount
            if n:
                conn.execute(
                    "UPDATE summaries SET archived_at = ? WHERE archived_at IS NULL AND NOT "
                    "EXISTS (SELECT 1 FROM summary_covers sc JOIN messages m ON "
                    "m.id = sc.message_id WHERE sc.summary_id = summaries.id AND "
                    "m.archived_at IS NULL)",
                    (now,),
                )
        return n

    def purge(self, now: float, ttl_seconds: float) -> int:
        """Delete what has waited in the archive longer than the TTL: archived chats with all
        their rows, and archived messages and summaries of live chats. Returns the number of
        messages deleted."""
        cutoff = now - ttl_seconds
        with self._storage.transaction() as conn:
            gone = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM chats WHERE archived_at IS NOT NULL AND archived_at < ?",
                    (cutoff,),
                )
            ]
            n = 0
            for chat_id in gone:
                n += conn.execute("DELETE FROM messages WHERE chat_id = ?", (chat_id,)).rowcount
                _delete_summaries(conn, "chat_id = ?", (chat_id,))
                conn.execute("DELETE FROM chats WHERE id = ?", (chat_id,))
            n += conn.execute(
                "DELETE FROM messages WHERE archived_at IS NOT NULL AND archived_at < ?", (cutoff,)
            ).rowcount
            _delete_summaries(conn, "archived_at IS NOT NULL AND archived_at < ?", (cutoff,))
        return n

    # ------------------------------------------------------------------ imports (issue 28)
    def import_chats(
        self, chats: Sequence[Any], source: str, now: float, channel: str = DEFAULT_CHANNEL
    ) -> tuple[builtins.list[int], int]:
        """Write checked chats (:func:`core.chat.imports.parse`: each with ``title``, ``persona``
        and ``messages`` of ``role``, ``content``, ``created_at``, ``private``, ``status``) as
        new chats of ``channel``, all in one transaction (or nothing). A persona this store
        does not have becomes the default one. Each chat is marked for review from its first
        message: the owner is offered drafts of memories from it, batch by batch, and nothing
        is saved unless she keeps it. Returns the new chat ids and how many chats changed
        persona."""
        made: list[int] = []
        moved = 0
        batch = uuid.uuid4().hex[:12]
        with self._storage.transaction() as conn:
            personas = {r[0] for r in conn.execute("SELECT id FROM personas")}
            for chat in chats:
                persona = chat.persona if chat.persona in personas else DEFAULT_PERSONA
                moved += persona != chat.persona
                times = [m.created_at for m in chat.messages] or [now]
                cur = conn.execute(
                    "INSERT INTO chats (persona, channel, title, created_at, updated_at, "
                    "imported_from) VALUES (?, ?, ?, ?, ?, ?)",
                    (persona, channel, valid_title(chat.title), min(times), max(times), source),
                )
                assert cur.lastrowid is not None  # an INSERT sets it
                chat_id = cur.lastrowid
                rows, turn = [], 0
                for k, m in enumerate(chat.messages):
                    if m.role == "user" or k == 0:
                        turn += 1
                    meta = {"imported": source, **({"owner": True} if m.role == "user" else {})}
                    rows.append(
                        (
                            persona,
                            channel,
                            int(m.private),
                            f"import:{batch}:{chat_id}:{turn}",
                            m.role,
                            m.content,
                            m.status,
                            max(1, len(m.content) // 3),
                            m.created_at,
                            json.dumps(meta),
                            chat_id,
                        )
                    )
                conn.executemany(
                    "INSERT INTO messages (persona, channel, private_ok, turn_id, role, "
                    "content, status, tokens, created_at, meta, chat_id) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    rows,
                )
                conn.execute(
                    "UPDATE chats SET review_from = (SELECT MIN(id) FROM messages "
                    "WHERE chat_id = ?) WHERE id = ?",
                    (chat_id, chat_id),
                )
                made.append(chat_id)
        return made, moved

    def to_review(self) -> builtins.list[Chat]:
        """Live imported chats with messages not yet offered for drafting, oldest first."""
        rows = self._storage.query(
            _SELECT + " WHERE c.archived_at IS NULL AND c.review_from IS NOT NULL ORDER BY c.id"
        )
        return [_chat(r) for r in rows]

    def reviewed(self, chat_id: int, upto: int) -> None:
        """The owner was offered drafts from this chat's messages up to ``upto``: the next
        offer starts after it (or none is left)."""
        with self._storage.transaction() as conn:
            nxt = conn.execute(
                "SELECT MIN(id) FROM messages WHERE chat_id = ? AND id > ? AND archived_at IS "
                "NULL AND status != 'discarded'",
                (chat_id, upto),
            ).fetchone()[0]
            conn.execute("UPDATE chats SET review_from = ? WHERE id = ?", (nxt, chat_id))

    def stop_review(self, chat_id: int) -> None:
        with self._storage.transaction() as conn:
            conn.execute("UPDATE chats SET review_from = NULL WHERE id = ?", (chat_id,))

    @staticmethod
    def _live(conn: sqlite3.Connection, chat_id: object) -> None:
        row = conn.execute("SELECT archived_at FROM chats WHERE id = ?", (chat_id,)).fetchone()
        if row is None:
            raise ChatNotFound(chat_id)
        if row["archived_at"] is not None:
            raise MemoryOpError(f"chat #{chat_id} is in the archive: restore it first")


def _delete_summaries(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    ids = [r[0] for r in conn.execute(f"SELECT id FROM summaries WHERE {where}", params)]
    for sid in ids:
        conn.execute("UPDATE summaries SET parent_id = NULL WHERE parent_id = ?", (sid,))
        conn.execute("DELETE FROM summary_covers WHERE summary_id = ?", (sid,))
        conn.execute("DELETE FROM summaries WHERE id = ?", (sid,))


def _chat(r: sqlite3.Row) -> Chat:
    return Chat(
        r["id"],
        r["persona"],
        r["channel"],
        r["title"],
        r["created_at"],
        r["updated_at"],
        r["window_start"],
        r["archived_at"],
        r["n"] or 0,
        r["first_words"] or "",
        r["imported_from"],
        r["review_from"],
    )


def _archive_chat(conn: sqlite3.Connection, chat_id: int, now: float, why: str) -> None:
    """One chat to the archive with its live summaries (inside the caller's transaction)."""
    conn.execute(
        "UPDATE chats SET archived_at = ?, archived_why = ? WHERE id = ?", (now, why, chat_id)
    )
    conn.execute(
        "UPDATE summaries SET archived_at = ? WHERE chat_id = ? AND archived_at IS NULL",
        (now, chat_id),
    )
