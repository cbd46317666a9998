"""Memory's bulk paths (SPEC §6, §8.5, §8.8, §11): the owner's pinned saves, imports, export and
clear all, and the re-embedding of many records — each on :meth:`core.memory.facade.Memory.transaction`
(one transaction; the records it adds are indexed at once when it commits) and through
:class:`core.memory.facade.Memory`'s public methods, so the facade stays the one door to the store.

Texts are embedded before the transaction, in batches (:meth:`core.memory.facade.Memory.embed_many`),
with ``progress(done, total)`` for the CLI and the TUI (the backfill's progress bar).
Rows are read and written by :mod:`core.store.records` and :mod:`core.store.record_export`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.embedding import Progress
from core.errors import MemoryOpError
from core.memory import validation as valid
from core.store import record_export, records, scopes
from core.store.records import Actor, Source

if TYPE_CHECKING:
    from core.memory.facade import Memory


@dataclass(frozen=True)
class ImportResult:
    """What :func:`import_exported` did: the records it made (their changes are logged under
    ``turn_id``, so ``rollback_turn(turn_id)`` takes the whole import back) and the lines it
    skipped as duplicates of records already in the store (line number, that record's id)."""

    turn_id: str
    created: tuple[int, ...]
    duplicates: tuple[tuple[int, int], ...]


def save_pinned(mem: Memory, items: Sequence[dict], scope: object, source: Source) -> list[int]:
    """Save from dialogue (§8.5): the owner's confirmed drafts, pinned, into ``scope``, in one
    transaction. Refused as a whole, naming the room left, when they do not fit among the
    scope's pinned records (at most max_pinned, §2)."""
    scope = valid.scope(scope)
    limit = mem.config.max_chars
    clean = [
        (
            valid.content(it.get("content"), limit),
            valid.kind(it.get("kind", "fact")),
            valid.importance(it.get("importance", 4)),
            valid.flag(it.get("private", False), "private"),
        )
        for it in items
    ]
    if not clean:
        raise MemoryOpError("nothing to save")
    vecs = mem.embed_many([c[0] for c in clean])
    with mem.transaction() as w:
        records.check_pin_room(
            w.conn, scope, mem.config.max_pinned, len(clean), then=" or save fewer"
        )
        for k, (content, kind, imp, private) in enumerate(clean):
            rid = records.insert(
                w.conn,
                content,
                kind,
                imp,
                private=private,
                pinned=True,
                scope=scope,
                created_at=w.now,
                updated_at=w.now,
                source=source,
                source_turn=None,
            )
            records.log_change(w.conn, w.now, Actor.OWNER, None, "create", rid, None)
            if vecs is not None:
                w.vector(rid, vecs[k])
            w.added.append(rid)
    return list(w.added)


def import_records(
    mem: Memory,
    items: Iterable[dict],
    *,
    source: Source = Source.INIT,
    batch: int | None = None,
    progress: Progress | None = None,
) -> list[int]:
    """The owner's bulk import (initial memories, migrations from another tool, benchmarks):
    no dedup, all or nothing — every item is checked first (a bad one is named by its
    position), then all are embedded (``batch`` at a time; default the embedder's own batch),
    then written in one transaction, and the indexes are updated once, after it committed.
    Each item has ``content`` and optionally kind, importance, private, pinned, scope,
    created_at."""
    checked: list[dict] = []
    for n, it in enumerate(items, 1):
        if not isinstance(it, dict):
            raise MemoryOpError(f"import item {n}: expected an object with 'content'")
        try:
            checked.append(valid.item(it, mem.config.max_chars, mem.clock.now))
        except MemoryOpError as e:
            raise MemoryOpError(f"import item {n}: {e}") from None
    vectors = mem.embed_many([c["content"] for c in checked], batch=batch, progress=progress)
    with mem.transaction() as w:
        for n, item in enumerate(checked):
            if item["pinned"]:
                records.check_pin_room(
                    w.conn,
                    item["scope"],
                    mem.config.max_pinned,
                    where=f"import item {n + 1}: ",
                    then="; nothing was imported",
                )
            rid = records.insert(
                w.conn, **item, updated_at=item["created_at"], source=source, source_turn=None
            )
            w.added.append(rid)
            if vectors is not None:
                w.vector(rid, vectors[n])
    return list(w.added)


def exported(
    mem: Memory, *, include_archive: bool = False, private: bool = False
) -> tuple[list[dict], int]:
    """The owner's export (SPEC §11): every live record (and archived ones with
    ``include_archive``) as a plain dict of its stored fields with its access history
    (``accesses``), oldest id first; private ones only with ``private``. Returns the rows and
    how many private records were left out. One consistent read."""
    mem.flush_reinforcements()  # the export carries every access
    with mem.reading() as conn:
        rows = [
            {**dict(r), "accesses": acc}
            for r, acc in record_export.exported(
                conn, include_archive=include_archive, private=private
            )
        ]
        left_out = (
            0 if private else record_export.count_private(conn, include_archive=include_archive)
        )
    return rows, left_out


def import_exported(
    mem: Memory, items: Sequence[dict], progress: Progress | None = None
) -> ImportResult:
    """Write an export's records back (``eva import``, SPEC §11), all or nothing: one
    transaction. Items are checked by :mod:`core.memory.portability` (every field clean, ``line``
    their line number). A line that is already in the store — the same content and creation
    time, or a live record a save of it would reinforce (§3.2 dedup) — is skipped and reported.
    A pinned record beyond its scope's room refuses the whole import, naming its line. Records
    keep kind, importance, flags, scope, dates, source and access history; archived ones land
    in the archive as they were."""
    turn_id = f"import:{uuid.uuid4().hex}"
    live = [it for it in items if it.get("archived") is None]
    vecs = mem.embed_many([it["content"] for it in live], progress=progress)
    vec_of = {id(it): vecs[k] for k, it in enumerate(live)} if vecs is not None else {}
    created: list[int] = []
    dups: list[tuple[int, int]] = []
    with mem.transaction() as w:
        for it in items:
            arch = it.get("archived")
            same = record_export.same_record(w.conn, it["content"], it["created_at"])
            if same is None and arch is None:
                found = mem.duplicate_of(it["content"], it["scope"])
                same = None if found is None else found.id
            if same is not None:
                dups.append((it["line"], same))
                continue
            if it["pinned"] and arch is None:
                records.check_pin_room(
                    w.conn,
                    it["scope"],
                    mem.config.max_pinned,
                    where=f"line {it['line']}: ",
                    then=" (or set pinned to false there); nothing was imported",
                )
            rid = records.insert(
                w.conn,
                it["content"],
                it["kind"],
                it["importance"],
                private=it["private"],
                pinned=it["pinned"],
                scope=it["scope"],
                created_at=it["created_at"],
                updated_at=it["updated_at"],
                consolidated_at=it.get("consolidated_at"),
                source=it["source"],
                source_turn=None,
                history=it.get("accesses", ()),
            )
            records.log_change(w.conn, w.now, Actor.OWNER, turn_id, "create", rid, None)
            record_export.log_imported_history(w.conn, rid, it.get("accesses", ()), turn_id)
            created.append(rid)
            if arch is not None:
                at, by, why = arch  # portability's (at, by, why)
                record_export.mark_archived(w.conn, rid, at, by, why, turn_id=turn_id)
                continue
            w.added.append(rid)
            if id(it) in vec_of:
                w.vector(rid, vec_of[id(it)])
    return ImportResult(turn_id, tuple(created), tuple(dups))


def clear_scope(mem: Memory, scope: object, *, pinned: bool, why: str) -> tuple[str, list[int]]:
    """Clear all (§8.8): every unpinned live record of ``scope`` moves to the archive, one
    transaction; with ``pinned`` (the owner's second, explicit confirmation) the pinned ones go
    too. Nothing is deleted: each is restorable with its id, flags and history, and
    ``rollback_turn`` of the returned turn id takes the whole clearing back. Returns (turn id,
    archived ids)."""
    scope = valid.scope(scope)
    why = valid.why(why)
    turn_id = f"clear:{uuid.uuid4().hex}"
    with mem.transaction() as w:
        ids = scopes.live_ids(w.conn, scope, pinned=None if pinned else False)
        for rid in ids:
            records.archive(w.conn, rid, w.now, Actor.OWNER, turn_id, why)
        w.touched.update(ids)
    return turn_id, ids


def reembed(mem: Memory, ids: Sequence[int], batch: int, progress: Progress | None = None) -> int:
    """The one re-embedding loop (a backfill after a model change, the wordings a rollback put
    back): ``batch`` records at a time, their contents embedded outside the store's lock, then
    written in one transaction each — only for records whose content is still what was
    embedded (one changed meanwhile waits for the next backfill). Best effort: stops at the
    first failure. Returns how many were done; ``progress(done, total)`` after each batch."""
    done = 0
    for start in range(0, len(ids), max(1, batch)):
        wording = mem.contents(ids[start : start + batch])
        part = list(wording)
        m = mem.embed_many([wording[i] for i in part])
        if m is None:
            break
        with mem.transaction() as w:
            now = records.contents(w.conn, part)
            for i, vec in zip(part, m, strict=True):
                if now.get(i) == wording[i]:
                    w.vector(i, vec)
                    w.touched.add(i)
        done += len(part)
        if progress:
            progress(done, len(ids))
    return done
