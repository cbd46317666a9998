"""SQLite storage (SPEC §2, §11): WAL, versioned migrations, one transaction per change.

The store is opened through sqlite-utils; every multi-step write runs inside
:meth:`Storage.transaction` (``BEGIN IMMEDIATE`` … ``COMMIT``), so a crash at any statement
leaves either the whole change or none of it. Only :mod:`core` touches these tables; every other
layer goes through :class:`core.memory.facade.Memory`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from core import ownership
from core.errors import StoreError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Storage", "StoreError", "connect", "migrate"]

# The text the message search index (v7) is given for a message: "ё" as "е" (see v7).
_FTS_TEXT = "replace(replace({0}, 'ё', 'е'), 'Ё', 'Е')"

# Each migration moves the schema from version i to i+1; never edit a released one, append.
MIGRATIONS: list[list[str]] = [
    # v1: records, access history, archive (as state of a record), vectors, change log, meta
    [
        """CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            content TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('core', 'fact', 'event')),
            importance INTEGER NOT NULL CHECK (importance BETWEEN 1 AND 5),
            private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1)),
            pinned INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
            scope TEXT NOT NULL DEFAULT 'global',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            last_access_at REAL,
            access_count INTEGER NOT NULL DEFAULT 0,
            consolidated_at REAL,
            source TEXT NOT NULL,
            source_turn TEXT,
            stems TEXT NOT NULL,
            archived_at REAL,
            archived_by TEXT,
            archived_why TEXT
        )""",
        "CREATE INDEX memories_live ON memories (archived_at, scope)",
        """CREATE TABLE accesses (
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            at REAL NOT NULL
        )""",
        "CREATE INDEX accesses_memory ON accesses (memory_id, at)",
        """CREATE TABLE vectors (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vec BLOB NOT NULL
        )""",
        """CREATE TABLE changes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            actor TEXT NOT NULL,
            turn_id TEXT,
            op TEXT NOT NULL,
            memory_id INTEGER NOT NULL,
            before TEXT
        )""",
        "CREATE INDEX changes_turn ON changes (turn_id)",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
    # v2: the conversation's messages (SPEC §8.1 live window, §8.4 regenerate)
    [
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            persona TEXT NOT NULL DEFAULT 'default',
            channel TEXT NOT NULL DEFAULT 'tui',
            private_ok INTEGER NOT NULL DEFAULT 0 CHECK (private_ok IN (0, 1)),
            turn_id TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'ok'
                CHECK (status IN ('ok', 'stopped', 'error', 'discarded')),
            tokens INTEGER,
            created_at REAL NOT NULL,
            meta TEXT
        )""",
        "CREATE INDEX messages_channel ON messages (persona, channel, status, id)",
        "CREATE INDEX messages_turn ON messages (turn_id)",
    ],
    # v3: the journal of nights (SPEC §7): runs, their phases with plans, and every op applied
    # or refused with its why; and per-record review marks of sleep's phases
    [
        """CREATE TABLE sleep_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            started_at REAL NOT NULL,
            finished_at REAL,
            status TEXT NOT NULL
                CHECK (status IN ('running', 'done', 'woken', 'failed', 'skipped')),
            dry_run INTEGER NOT NULL DEFAULT 0 CHECK (dry_run IN (0, 1)),
            reason TEXT NOT NULL,
            model TEXT,
            stages TEXT NOT NULL DEFAULT '{}',
            notable INTEGER NOT NULL DEFAULT 0 CHECK (notable IN (0, 1)),
            seen INTEGER NOT NULL DEFAULT 0 CHECK (seen IN (0, 1)),
            summary TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX sleep_runs_status ON sleep_runs (status, started_at)",
        """CREATE TABLE sleep_phases (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id INTEGER NOT NULL REFERENCES sleep_runs(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            stage TEXT NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('applied', 'planned', 'skipped', 'failed', 'discarded')),
            seconds REAL NOT NULL DEFAULT 0,
            calls INTEGER NOT NULL DEFAULT 0,
            plans TEXT NOT NULL DEFAULT '[]',
            note TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX sleep_phases_run ON sleep_phases (run_id, seq)",
        """CREATE TABLE sleep_ops (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            phase_id INTEGER NOT NULL REFERENCES sleep_phases(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            op TEXT NOT NULL,
            ids TEXT NOT NULL DEFAULT '[]',
            applied INTEGER NOT NULL DEFAULT 0 CHECK (applied IN (0, 1)),
            why TEXT NOT NULL DEFAULT '',
            refused_reason TEXT,
            detail TEXT NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX sleep_ops_phase ON sleep_ops (phase_id, seq)",
        """CREATE TABLE sleep_marks (
            memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            phase TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (memory_id, phase)
        )""",
    ],
    # v4: a change counter of what the recall index is built from (live records' stems and
    # content, the archive mark, vectors), bumped by triggers inside the writing transaction
    # itself, so a persisted index stamped with it is known to be current or stale
    [
        """CREATE TABLE index_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            store TEXT NOT NULL,
            generation INTEGER NOT NULL
        )""",
        "INSERT INTO index_state (id, store, generation) VALUES (1, lower(hex(randomblob(16))), 0)",
        *[
            f"""CREATE TRIGGER index_state_{table}_{event.split()[0].lower()} AFTER {event} ON {table}
            BEGIN UPDATE index_state SET generation = generation + 1 WHERE id = 1; END"""
            for table, event in (
                ("memories", "INSERT"),
                ("memories", "DELETE"),
                ("memories", "UPDATE OF content, stems, archived_at"),
                ("vectors", "INSERT"),
                ("vectors", "DELETE"),
                ("vectors", "UPDATE"),
            )
        ],
    ],
    # v5: chats (SPEC §8.9: each belongs to a persona and a channel; deleted ones wait in the
    # archive), the chat of every message (the old single conversation of each persona and
    # channel becomes one chat), a message's archive mark (clear history, retention), and the
    # rolling summaries of §8.3 with the message ids each covers
    [
        """CREATE TABLE chats (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            persona TEXT NOT NULL DEFAULT 'default',
            channel TEXT NOT NULL DEFAULT 'tui',
            title TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            window_start INTEGER,
            archived_at REAL,
            archived_why TEXT
        )""",
        "CREATE INDEX chats_live ON chats (persona, channel, archived_at, updated_at)",
        """INSERT INTO chats (persona, channel, title, created_at, updated_at)
            SELECT persona, channel, 'Chat', MIN(created_at), MAX(created_at) FROM messages
            GROUP BY persona, channel ORDER BY MIN(id)""",
        "ALTER TABLE messages ADD COLUMN chat_id INTEGER REFERENCES chats(id)",
        "ALTER TABLE messages ADD COLUMN archived_at REAL",
        """UPDATE messages SET chat_id = (SELECT c.id FROM chats c
            WHERE c.persona = messages.persona AND c.channel = messages.channel)""",
        "CREATE INDEX messages_chat ON messages (chat_id, archived_at, status, id)",
        """CREATE TABLE summaries (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id INTEGER NOT NULL REFERENCES chats(id),
            tier INTEGER NOT NULL CHECK (tier IN (1, 2, 3)),
            private INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1)),
            prose TEXT NOT NULL,
            verbatim TEXT NOT NULL DEFAULT '[]',
            first_id INTEGER NOT NULL,
            last_id INTEGER NOT NULL,
            status TEXT NOT NULL DEFAULT 'ok'
                CHECK (status IN ('ok', 'fallback', 'edited', 'invalid')),
            parent_id INTEGER REFERENCES summaries(id),
            detail_level TEXT NOT NULL DEFAULT 'balanced',
            tokens INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            archived_at REAL
        )""",
        "CREATE INDEX summaries_chat ON summaries (chat_id, status, tier, first_id)",
        """CREATE TABLE summary_covers (
            summary_id INTEGER NOT NULL REFERENCES summaries(id) ON DELETE CASCADE,
            message_id INTEGER NOT NULL,
            PRIMARY KEY (summary_id, message_id)
        )""",
        "CREATE INDEX summary_covers_message ON summary_covers (message_id)",
    ],
    # v6: personas (SPEC §8.6, §8.2, §8.7). A persona's id is the
    # scope of its memories (memories.scope) and the persona of its messages (messages.persona);
    # it never changes, so renaming touches neither. NULL text / detail level / learning: the
    # configured defaults ([chat] persona_file, detail_level, learning). The default persona
    # exists from the start and cannot be deleted.
    [
        """CREATE TABLE personas (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            persona_text TEXT,
            detail_level TEXT CHECK (detail_level IS NULL
                                     OR detail_level IN ('key', 'balanced', 'detailed')),
            learning INTEGER CHECK (learning IS NULL OR learning IN (0, 1)),
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""",
        "INSERT INTO personas (id, name, created_at, updated_at) VALUES ('default', 'Eva', 0, 0)",
    ],
    # v7: full-text search over every chat's messages (SPEC §8.12, issue 28 item 6). An FTS5
    # index of the messages' text (external content: the text itself is not stored twice),
    # case-folded for Russian and English alike (unicode61; remove_diacritics 2 folds Latin
    # accents). unicode61 leaves "ё" as it is, so the index is given the text with "ё" written
    # "е", as core.text and every query write it. Triggers keep the index in step with every
    # insert, edit and delete, in the writing transaction; the step indexes the messages that
    # exist. Archived and discarded messages stay indexed; the query leaves them out.
    # And chats brought in from elsewhere (issue 28 item 7): where a chat came from, and the
    # first of its messages the owner has not yet been offered to draft memories from.
    [
        "ALTER TABLE chats ADD COLUMN imported_from TEXT",
        "ALTER TABLE chats ADD COLUMN review_from INTEGER",
        """CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages',
            content_rowid='id', tokenize='unicode61 remove_diacritics 2')""",
        f"""INSERT INTO messages_fts (rowid, content) SELECT id, {_FTS_TEXT.format("content")}
            FROM messages""",
        f"""CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts (rowid, content)
                VALUES (new.id, {_FTS_TEXT.format("new.content")}); END""",
        f"""CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, content)
                VALUES ('delete', old.id, {_FTS_TEXT.format("old.content")}); END""",
        f"""CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, content)
                VALUES ('delete', old.id, {_FTS_TEXT.format("old.content")});
            INSERT INTO messages_fts (rowid, content)
                VALUES (new.id, {_FTS_TEXT.format("new.content")}); END""",
    ],
    # v8: reminders (SPEC §8.11, issue 29). The day a memory points to, read from its words
    # against when they were said (core.reminders): the first or only occurrence (ISO date),
    # the recurrence (week, month, year; NULL: once) and how it was read (JSON: the words, the
    # rule, the day they were said). And the owner's answer to it: done or dismissed (a one-off
    # is then never shown again), or not before a moment (a snooze; for a recurrence, the end of
    # the occurrence done). Records older than v8 carry no day: reading them now would be a
    # migration's guess about when they were said.
    [
        "ALTER TABLE memories ADD COLUMN due_on TEXT",
        """ALTER TABLE memories ADD COLUMN due_every TEXT
            CHECK (due_every IS NULL OR due_every IN ('week', 'month', 'year'))""",
        "ALTER TABLE memories ADD COLUMN due_read TEXT",
        """ALTER TABLE memories ADD COLUMN remind_state TEXT
            CHECK (remind_state IS NULL OR remind_state IN ('done', 'dismissed'))""",
        "ALTER TABLE memories ADD COLUMN remind_after REAL",
        "CREATE INDEX memories_due ON memories (due_on) WHERE due_on IS NOT NULL",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, upto: int = SCHEMA_VERSION) -> int:
    """Bring the schema to version ``upto``, one transaction per step. Returns the version."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"this store has schema v{current}, newer than this Eva understands "
            f"(v{SCHEMA_VERSION}); upgrade Eva"
        )
    for version in range(current, upto):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return max(current, upto)


def connect(path: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class Storage:
    """A connection with migrations applied, WAL on, and a transaction helper.

    ``connection_factory`` exists for crash tests (a connection that fails at statement N)."""

    def __init__(
        self,
        path: str | Path,
        connection_factory: Callable[[str | Path], sqlite3.Connection] = connect,
    ) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            # the owner's only (core.ownership): the file is made 0600 before SQLite opens it,
            # and SQLite gives the -wal, -shm and -journal it makes the same bits
            ownership.private_dir(self.path.parent, claim=False)
            ownership.create_private(self.path)
        self.conn = connection_factory(path)
        self.db = sqlite_utils.Database(self.conn)
        if str(path) != ":memory:":
            self.db.enable_wal()
        self.conn.execute("PRAGMA synchronous = NORMAL")
        try:
            migrate(self.conn)
        except BaseException:
            self.conn.close()  # a refused store (newer schema, failed step) keeps no connection
            raise
        # held by every transaction and query; a table owner holds it across a read-then-write
        self.lock = threading.RLock()
        self._depth = 0
        # the index generation (v4's counter) the in-memory index was loaded at, moved along by
        # this connection's own transactions; None once another connection wrote in between
        # (then the in-memory index may not match the file, and must not be persisted)
        self.index_generation: int | None = None
        # each is called right after every write transaction's BEGIN, with the connection;
        # what it returns is called when that transaction ends (True: committed). Memory's
        # waiting reinforcements are written so (core.memory.reinforcement)
        self.write_hooks: list[Callable[[sqlite3.Connection], Callable[[bool], None]]] = []

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic change. Nested use joins the outer transaction."""
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            ended: list[Callable[[bool], None]] = []
            committed = False
            try:
                before = self._generation()
                for hook in self.write_hooks:
                    ended.append(hook(self.conn))
                yield self.conn
            except BaseException:
                self._depth = 0
                try:
                    self.conn.execute("ROLLBACK")
                finally:
                    for end in ended:
                        end(False)
                self._moved(None)
                raise
            else:
                self._depth = 0
                try:
                    after = self._generation()
                    self.conn.execute("COMMIT")
                    committed = True
                except BaseException:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    self._moved(None)
                    raise
                finally:
                    for end in ended:
                        end(committed)
                self._moved(before, after)

    def _generation(self) -> int:
        return self.conn.execute("SELECT generation FROM index_state WHERE id = 1").fetchone()[0]

    def _moved(self, before: int | None, after: int | None = None) -> None:
        """Follow the index generation through one of this connection's transactions: it moves
        with our own writes; a jump before ours (another connection) or a failed transaction
        whose outcome is unsure forgets it."""
        if self.index_generation is None:
            return
        if before is None:
            try:  # a rollback: the generation is what it was, unless someone else moved it
                self.index_generation = (
                    self.index_generation if self._generation() == self.index_generation else None
                )
            except sqlite3.Error:
                self.index_generation = None
            return
        self.index_generation = after if before == self.index_generation else None

    def note_moved(self) -> None:
        """Inside a transaction: move the index generation on, so other processes reindex
        (a write the generation's triggers do not see, such as a rollback of reinforcements
        alone, says so itself)."""
        self.conn.execute("UPDATE index_state SET generation = generation + 1 WHERE id = 1")

    def index_stamp(self) -> tuple[str, int]:
        """(this store's random id, its index generation now)."""
        with self.lock:
            r = self.conn.execute(
                "SELECT store, generation FROM index_state WHERE id = 1"
            ).fetchone()
        return r[0], r[1]

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One consistent read (a deferred transaction: every query sees the same state of the
        file, even if another connection writes meanwhile)."""
        with self.lock:
            if self._depth:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            self._depth = 1
            try:
                yield self.conn
            finally:
                self._depth = 0
                self.conn.execute("COMMIT")

    def query(self, sql: str, params: tuple | dict = ()) -> list[sqlite3.Row]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def meta_get(self, key: str) -> str | None:
        rows = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def meta_set(self, key: str, value: str) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def schema_version(self) -> int:
        return self.query("PRAGMA user_version")[0][0]

    def backup(self, dest: str | Path) -> Path:
        """A consistent copy of the whole store (memories, archive, messages, journal) at
        ``dest`` through SQLite's online backup API (SPEC §11): read on a connection of its own,
        so Eva keeps running meanwhile. Written beside ``dest`` first, checked
        (``integrity_check``), then moved into place: a failed backup leaves no file that looks
        like one. Returns ``dest``."""
        dest = Path(dest)
        if dest.exists():
            raise FileExistsError(f"{dest} already exists")
        tmp = dest.with_name(dest.name + ".part")
        tmp.unlink(missing_ok=True)
        ownership.create_private(tmp)  # 0600 before a page is written (and its journal too)
        if str(self.path) == ":memory:":
            with self.lock:
                src = self.conn
                target = sqlite3.connect(str(tmp))
                try:
                    src.backup(target)
                finally:
                    target.close()
        else:
            src = sqlite3.connect(str(self.path), timeout=30.0)
            try:
                target = sqlite3.connect(str(tmp))
                try:
                    src.backup(target, pages=1024)
                finally:
                    target.close()
            finally:
                src.close()
        check = sqlite3.connect(str(tmp))
        try:
            check.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            ok = check.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            check.close()
        if ok != "ok":
            tmp.unlink(missing_ok=True)
            raise StoreError(f"the backup failed its integrity check: {ok}")
        os.chmod(tmp, 0o600)  # it holds private memories: the owner's eyes only
        tmp.rename(dest)
        return dest

    def close(self) -> None:
        with self.lock:
            self.conn.close()
