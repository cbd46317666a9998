"""Personas (SPEC §8.6, §8.2, §8.7): who Eva is in a conversation, and the scope of memories.

A persona has a name, a persona text, a detail level and a learning toggle. Its id is the
``scope`` of the memories that belong to it (``memories.scope``) and the ``persona`` of its
messages; the id never changes, so a rename touches no record. A turn of a persona reads its
memories plus the global ones (``TurnContext(persona=id)``). The default persona (id
``default``) always exists; its text, detail level and learning are NULL until the owner sets
them, and NULL means "the configured default" ([chat] persona_file, detail_level, learning).

Deleting a persona turns its memories global (live and archived: a restore must not bring one
back into a scope that is gone) and archives its chats, in one transaction.

The table is this module's (v6 in :mod:`core.store.storage`); it shares the store through
``Memory.attach(Personas)`` and changes memories only through ``Memory.transaction()`` and
:mod:`core.store.records` (by scope: :mod:`core.store.scopes`), like sleep does.
"""

from __future__ import annotations

import builtins
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from core import text
from core.chat.chats import Chats
from core.errors import MemoryOpError, NotFound, Refused
from core.memory.facade import Memory
from core.privacy import TurnContext
from core.store import records, scopes
from core.store.records import GLOBAL_SCOPE, Actor

DEFAULT_ID = "default"
ACTIVE_KEY = "persona.active"
MODEL_KEY = "persona.model."  # + id: the chat model a persona names (issue 31), in ``meta``
MAX_MODEL = 500
DETAIL_LEVELS = ("key", "balanced", "detailed")  # = chat.conversation_config.DETAIL_LEVELS (tested)
MAX_NAME = 40
MAX_TEXT = 8000
RESERVED = frozenset({GLOBAL_SCOPE, "any", "all"})
UNCHANGED: Any = object()  # update(): leave this field as it is


class PersonaNotFound(NotFound):
    def __init__(self, persona_id: object) -> None:
        MemoryOpError.__init__(self, f"there is no persona {persona_id!r}", code="not_found")


@dataclass(frozen=True)
class Persona:
    id: str
    name: str
    text: str | None  # None: the configured persona file (or the shipped default)
    detail_level: str | None  # None: [chat] detail_level
    learning: bool | None  # None: [chat] learning
    created_at: float
    updated_at: float

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_ID

    def context(self, base: TurnContext | None = None) -> TurnContext:
        """A turn of this persona: it reads this persona's memories plus global ones."""
        return replace(base or TurnContext(), persona=self.id)


def _from_row(r: sqlite3.Row) -> Persona:
    return Persona(
        r["id"],
        r["name"],
        r["persona_text"],
        r["detail_level"],
        None if r["learning"] is None else bool(r["learning"]),
        r["created_at"],
        r["updated_at"],
    )


def _name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MemoryOpError("a persona needs a name")
    return _within(" ".join(value.split()), MAX_NAME, "the name")


def _text(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MemoryOpError("the persona text must be text")
    value = value.strip()
    if not value:
        return None  # empty: the configured default
    return _within(value, MAX_TEXT, "the persona text")


def _within(value: str, limit: int, what: str) -> str:
    """``value`` when it fits in ``limit`` characters; the refusal says by how much it does not,
    in the same words for a name and a text."""
    if len(value) > limit:
        raise MemoryOpError(f"{what} is {len(value)} characters; the limit is {limit}")
    return value


def _level(value: object) -> str | None:
    if value is None:
        return None
    if value not in DETAIL_LEVELS:
        raise MemoryOpError(
            f"detail level must be one of {', '.join(DETAIL_LEVELS)} (got {value!r})"
        )
    return str(value)


def _learning(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise MemoryOpError(f"learning must be true or false (got {value!r})")


def slug(name: str) -> str:
    """A readable scope id for a name: "Work" → "work", "Мама" → "mama"."""
    low = name.lower().replace("ё", "е")
    if re.search(r"[а-я]", low):
        low = text.transliterate(low)
    s = re.sub(r"[^a-z0-9]+", "-", low).strip("-")[:30]
    return s or "persona"


class Personas:
    """The personas table and the active persona (``meta`` key ``persona.active``)."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage
        # deleting a persona archives its chats (and their summaries) in the same transaction
        self.archive_chats: Callable[[sqlite3.Connection, str, float], int] = (
            Chats.archive_of_persona
        )

    # ------------------------------------------------------------------ reads
    def list(self) -> list[Persona]:
        """Every persona, the default first, then by name."""
        rows = self._storage.query("SELECT * FROM personas")
        return sorted(
            (_from_row(r) for r in rows), key=lambda p: (not p.is_default, p.name.casefold())
        )

    def get(self, persona_id: object) -> Persona:
        rows = self._storage.query("SELECT * FROM personas WHERE id = ?", (str(persona_id),))
        if not rows:
            raise PersonaNotFound(persona_id)
        return _from_row(rows[0])

    def find(self, name: str) -> Persona | None:
        """A persona by name (case-insensitive) or id."""
        key = " ".join(name.split()).casefold()
        return next((p for p in self.list() if p.name.casefold() == key or p.id == name), None)

    def active(self) -> Persona:
        """The persona the owner's turns run as (the default if none was chosen, or if the
        chosen one is gone)."""
        pid = self._storage.meta_get(ACTIVE_KEY) or DEFAULT_ID
        try:
            return self.get(pid)
        except PersonaNotFound:
            return self.get(DEFAULT_ID)

    def set_active(self, persona_id: str) -> Persona:
        p = self.get(persona_id)
        self._storage.meta_set(ACTIVE_KEY, p.id)
        return p

    def model_of(self, persona_id: str) -> str | None:
        """The chat model this persona names (a model spec as ``[llm.model] general`` takes);
        None: the default model. Kept in ``meta``: no migration (issue 31)."""
        return self._storage.meta_get(MODEL_KEY + persona_id) or None

    def set_model(self, persona_id: str, spec: object) -> None:
        """Name the persona's model (None or "" to use the default one)."""
        p = self.get(persona_id)
        if spec is None or (isinstance(spec, str) and not spec.strip()):
            with self._storage.transaction() as conn:
                conn.execute("DELETE FROM meta WHERE key = ?", (MODEL_KEY + p.id,))
            return
        if not isinstance(spec, str) or len(spec) > MAX_MODEL:
            raise MemoryOpError(f"a model is named by text of at most {MAX_MODEL} characters")
        self._storage.meta_set(MODEL_KEY + p.id, spec.strip())

    # ------------------------------------------------------------------ changes
    def create(
        self,
        name: object,
        now: float,
        *,
        persona_text: object = None,
        detail_level: object = None,
        learning: object = None,
    ) -> Persona:
        name = _name(name)
        body, level, learn = _text(persona_text), _level(detail_level), _learning(learning)
        with self._storage.transaction() as conn:
            self._check_unique(conn, name, None)
            base = slug(name)
            pid, k = base, 2
            # a scope whose records have no persona yet (an import from another store) is
            # adopted by the persona of that name: its memories are the new persona's
            taken = {r[0] for r in conn.execute("SELECT id FROM personas")}
            while pid in taken or pid in RESERVED or pid == DEFAULT_ID:
                pid, k = f"{base}-{k}", k + 1
            conn.execute(
                "INSERT INTO personas (id, name, persona_text, detail_level, learning, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (pid, name, body, level, None if learn is None else int(learn), now, now),
            )
        return self.get(pid)

    def _check_unique(self, conn: sqlite3.Connection, name: str, own_id: str | None) -> None:
        for pid, other in conn.execute("SELECT id, name FROM personas"):
            if pid != own_id and other.casefold() == name.casefold():
                raise Refused(f"there is already a persona named {other!r}")

    def update(
        self,
        persona_id: str,
        now: float,
        *,
        name: object = UNCHANGED,
        persona_text: object = UNCHANGED,
        detail_level: object = UNCHANGED,
        learning: object = UNCHANGED,
    ) -> Persona:
        """Rename, change the text, detail level or learning (None: back to the configured
        default). The id, and so every memory's scope, stays."""
        sets: dict[str, object] = {}
        if name is not UNCHANGED:
            sets["name"] = _name(name)
        if persona_text is not UNCHANGED:
            sets["persona_text"] = _text(persona_text)
        if detail_level is not UNCHANGED:
            sets["detail_level"] = _level(detail_level)
        if learning is not UNCHANGED:
            learn = _learning(learning)
            sets["learning"] = None if learn is None else int(learn)
        with self._storage.transaction() as conn:
            if not conn.execute("SELECT 1 FROM personas WHERE id = ?", (persona_id,)).fetchone():
                raise PersonaNotFound(persona_id)
            if "name" in sets:
                self._check_unique(conn, str(sets["name"]), persona_id)
            if sets:
                cols = ", ".join(f"{c} = ?" for c in sets)
                conn.execute(
                    f"UPDATE personas SET {cols}, updated_at = ? WHERE id = ?",
                    (*sets.values(), now, persona_id),
                )
        return self.get(persona_id)

    def delete(self, persona_id: str, memory: Memory) -> tuple[builtins.list[int], int]:
        """Delete a persona (never the default): its memories turn global — live and archived
        ones, each change logged — and its chats are archived, in one transaction. Refused,
        with nothing changed, when its pinned memories would not fit among the global pinned
        ones (§2: at most max_pinned per scope). Returns (the memories made global, the chats
        archived)."""
        if persona_id == DEFAULT_ID:
            raise Refused("the default persona cannot be deleted")
        self.get(persona_id)
        turn_id = f"persona-delete:{persona_id}"
        with memory.transaction() as w:
            conn = w.conn
            ids = scopes.all_ids(conn, persona_id)
            pinned = len(scopes.live_ids(conn, persona_id, pinned=True))
            records.check_pin_room(
                conn,
                GLOBAL_SCOPE,
                memory.config.max_pinned,
                pinned,
                where=f"its {pinned} pinned memories go global: ",
                then="; nothing was deleted",
            )
            for rid in ids:
                records.log_change(
                    conn, w.now, Actor.OWNER, turn_id, "scope", rid, records.snapshot(conn, rid)
                )
            scopes.set_scope(conn, ids, GLOBAL_SCOPE)
            w.touched.update(ids)
            chats = self.archive_chats(conn, persona_id, w.now)
            conn.execute("DELETE FROM personas WHERE id = ?", (persona_id,))
            if self._storage.meta_get(ACTIVE_KEY) == persona_id:
                conn.execute("DELETE FROM meta WHERE key = ?", (ACTIVE_KEY,))
            conn.execute("DELETE FROM meta WHERE key = ?", (MODEL_KEY + persona_id,))
        return ids, chats
