"""The in-memory side of recall (SPEC §4, §6): the lexical index, the score columns and the
active embedder's vectors of every live record, kept in step with the store, and the §4
selection over them.

Its parts live beside it: the vector spaces and the ``vectors`` table (:mod:`core.recall.vectors`),
the persisted index file (:mod:`core.recall.file`), hybrid relevance (:mod:`core.recall.scores`),
the score columns and the selection (:mod:`core.recall.score`) and clause vectors
(:mod:`core.recall.parts`).

:class:`RecallIndex` is not thread-safe on its own: :class:`core.memory.facade.Memory` calls it under
the store's lock, and applies a write's :class:`IndexChanges` only after its transaction
committed, so the index never runs ahead of the file.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path

import numpy as np

from core import text
from core.config import MemoryConfig
from core.embedding import Embedder, Progress, embed_many, english_part, primary_rows
from core.privacy import TurnContext
from core.recall import file as recall_file
from core.recall import vectors as recall_vectors
from core.recall.lexical import LexicalIndex
from core.recall.parts import PartVectors
from core.recall.score import Columns, Hit, hits_of, language_code, select
from core.recall.scores import ENGLISH, HybridScores
from core.recall.vectors import Vectors, primary_query
from core.store import records
from core.store.records import Record

log = logging.getLogger("eva.memory")


def _guarded(method):
    """An index update that fails leaves the index unknown: it is never persisted then."""

    @wraps(method)
    def run(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.broken = True
            raise

    return run


@dataclass(frozen=True)
class RecallStatus:
    """What recall runs on — for the status bar ("lexical only" when no vectors)."""

    embedder: str | None
    background: float | None
    vectors: int
    missing_vectors: int
    error: str | None

    @property
    def lexical_only(self) -> bool:
        return self.embedder is None or self.error is not None


@dataclass
class IndexChanges:
    """Index updates to apply once the transaction that made them has committed."""

    upserts: list[Record] = field(default_factory=list)
    removals: list[int] = field(default_factory=list)
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    vector_drops: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Scored:
    """A text's stems and their raw BM25 scores (:meth:`LexicalIndex.scores`)."""

    stems: list[str]
    ids: np.ndarray
    raw: np.ndarray


class RecallIndex(HybridScores):
    def __init__(
        self,
        config: MemoryConfig,
        embedder: Embedder | None,
        stored_background: Callable[[str], str | None],
        snapshot: Path | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self._stored_background = stored_background  # the store's meta, by key
        self.lexical = LexicalIndex()
        self.columns = Columns()
        self.vectors: Vectors | None = None  # core.recall.vectors: one space or two
        self.embed_error: str | None = None
        self.snapshot = snapshot
        self._snapshot_header: dict | None = None  # what the file holds, as far as we know
        self.loaded_from: str | None = None  # "snapshot" | "store"
        self.broken = False  # an index update failed: never persist this index
        self.parts = PartVectors()  # clause vectors made on demand (core.recall.parts)

    # ------------------------------------------------------------------ loading and upkeep
    def load(self, conn: sqlite3.Connection, stamp: tuple[str, int] | None = None) -> None:
        """Fill the index from the store; from the persisted index when it is stamped with this
        store and this ``stamp`` (store id, index generation — read in the same read
        transaction as ``conn`` sees), else by rebuilding it from the rows."""
        self.broken = False
        self.parts.clear()
        if stamp is not None and self.snapshot is not None:
            try:
                if self._load_snapshot(conn, stamp):
                    self.loaded_from = "snapshot"
                    return
            except Exception as e:  # corrupt, truncated, inconsistent: rebuild from the rows
                log.warning("persisted recall index %s unusable, rebuilding: %s", self.snapshot, e)
            self.lexical = LexicalIndex()
            self.columns = Columns()
            self._snapshot_header = None
        self._rebuild(conn)
        self.loaded_from = "store"

    def _rebuild(self, conn: sqlite3.Connection) -> None:
        items = []
        for r in records.live_rows(conn):
            self.columns.put(records.from_row(r), self.config)
            items.append((r["id"], r["stems"].split()))
        self.lexical.bulk_load(items)
        self.vectors = None
        if self.embedder is None:
            return
        self.vectors = self._vectors_from_store(conn)

    def _vectors_from_store(self, conn: sqlite3.Connection) -> Vectors:
        assert self.embedder is not None
        return recall_vectors.read_all(conn, self.embedder, self._is_english)

    def _is_english(self, record_id: int) -> bool:
        """Whether the record is written in English, as its language column says (a record
        the index does not know yet: no)."""
        lang = self.columns.language
        return 0 <= record_id < len(lang) and int(lang[record_id]) == ENGLISH

    def _load_snapshot(self, conn: sqlite3.Connection, stamp: tuple[str, int]) -> bool:
        header = recall_file.read_into(self, conn, stamp)
        if header is None:
            return False
        self._snapshot_header = header
        return True

    def persist(self, stamp: tuple[str, int]) -> bool:
        """Write the index to its file, stamped with ``stamp`` (the caller vouches that the
        index matches the store at that generation), unless the file already holds it.
        Written to a temporary file and renamed: a crash leaves the old file or the new one."""
        if self.snapshot is None or self.broken:
            return False
        header = recall_file.write_from(self, stamp, self._snapshot_header)
        if header is None:
            return False
        self._snapshot_header = header
        return True

    @_guarded
    def apply(self, changes: IndexChanges) -> None:
        for rid in changes.removals:
            self.lexical.remove(rid)
            self.columns.drop(rid)
            self.parts.drop(rid)
            if self.vectors is not None:
                self.vectors.remove(rid)
        for r in changes.upserts:
            self.columns.put(r, self.config)
            stems = text.stems(r.content)
            if self.lexical.docs.get(r.id) != stems:  # new or changed wording only
                self.lexical.upsert(r.id, stems)
                self.parts.drop(r.id)
        if self.vectors is not None:
            for rid in changes.vector_drops:
                self.vectors.remove(rid)
            for rid, vec in changes.vectors.items():
                # by the language of the record as it is now: one whose wording changed
                # language moves between the spaces (core.recall.vectors)
                self.vectors.set(rid, vec, self._is_english(rid))
                self.parts.drop(rid)

    @_guarded
    def reinforced(self, ids: Iterable[int], now: float) -> None:
        """Records reinforced at ``now`` whose access rows are yet to be written
        (core.memory.reinforcement): their columns move as the rows will."""
        self.columns.reinforce(np.fromiter(ids, np.int64), now)

    @_guarded
    def reindex(self, conn: sqlite3.Connection, ids: Iterable[int]) -> None:
        """Bring these records' index entries in line with the store."""
        self.apply(self.collect(conn, ids))

    def collect(self, conn: sqlite3.Connection, ids: Iterable[int]) -> IndexChanges:
        """The index updates that bring these records in line with the store, read now (inside
        the writing transaction, so nothing is read after its COMMIT) and applied later."""
        ids = set(ids)
        recs = records.fetch_many(conn, ids)
        changes = IndexChanges()
        for rid in ids:
            r = recs.get(rid)
            if r is None or records.is_archived(conn, rid):
                changes.removals.append(rid)
            else:
                changes.upserts.append(r)
        if self.vectors is not None:
            for r in changes.upserts:
                vec = self.stored_vector(conn, r.id)
                if vec is not None:
                    changes.vectors[r.id] = vec
                else:
                    changes.vector_drops.append(r.id)
        return changes

    @_guarded
    def add_imported(self, recs: list[Record], vectors: dict[int, np.ndarray]) -> None:
        """Index a bulk import at once (one rebuild of the lexical index when it is large)."""
        for r in recs:
            self.columns.put(r, self.config)
        if len(recs) > self.lexical.min_merge:
            self.lexical.bulk_load(
                list(self.lexical.docs.items()) + [(r.id, text.stems(r.content)) for r in recs]
            )
        else:
            for r in recs:
                self.lexical.upsert(r.id, text.stems(r.content))
        if self.vectors is not None:
            for rid, vec in vectors.items():
                self.vectors.set(rid, vec, self._is_english(rid))

    # ------------------------------------------------------------------ vectors
    def embed(
        self,
        contents: list[str],
        *,
        many: bool = False,
        batch: int | None = None,
        progress: Progress | None = None,
    ) -> np.ndarray | None:
        """Vectors of these texts, or None without an embedder or when it fails (best effort,
        SPEC §6: recall goes on lexically; the failure shows in ``status``). ``many``: a bulk
        path's texts, embedded in batches (:func:`core.embedding.embed_many`)."""
        if self.embedder is None or not contents:
            return None
        try:
            m = np.asarray(
                embed_many(self.embedder, contents, batch, progress)
                if many
                else self.embedder.embed(contents),
                dtype=np.float32,
            )
            if m.shape != (len(contents), self.embedder.dim):
                raise ValueError(f"embedder returned shape {m.shape}")
            self.embed_error = None
            return m
        except Exception as e:  # best effort (SPEC §6): recall goes on lexically
            self.embed_error = f"{type(e).__name__}: {e}"
            log.warning("embedding failed, recall runs lexically: %s", self.embed_error)
            return None

    def embed_one(self, content: str) -> np.ndarray | None:
        m = self.embed([content])
        return None if m is None else m[0]

    def write_vector(
        self,
        conn: sqlite3.Connection,
        record_id: int,
        vec: np.ndarray | None,
        changes: IndexChanges,
    ) -> None:
        """Store a record's vector (made from its content as the row now holds it) in the
        writing transaction; applied to the spaces with ``changes`` after the commit."""
        if vec is None or self.embedder is None:
            # the content changed and no fresh vector could be made: a stale one would lie
            recall_vectors.drop(conn, record_id)
            changes.vector_drops.append(record_id)
            return
        english = False
        if english_part(self.embedder) is not None:  # the English half is kept for English
            content = records.contents(conn, [record_id]).get(record_id)
            english = content is not None and language_code(content) == ENGLISH
        recall_vectors.write(conn, self.embedder, record_id, vec, english)
        changes.vectors[record_id] = vec

    def stored_vector(self, conn: sqlite3.Connection, record_id: int) -> np.ndarray | None:
        """The record's stored vector if it is the active model's."""
        if self.embedder is None:
            return None
        return recall_vectors.stored(conn, self.embedder, record_id)

    def missing_vectors(self, conn: sqlite3.Connection) -> list[int]:
        """Live records with no vector of the active model, oldest first."""
        return recall_vectors.missing(conn, self.embedder) if self.embedder else []

    def vector_rows(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """(ids, unit-length rows, background cosine b) of the live records' vectors of the
        primary space (the multilingual half of a two-model embedder) — a copy, for
        clustering; None without an embedder or vectors."""
        if self.vectors is None or len(self.vectors) == 0:
            return None
        ids, mat = self.vectors.rows()
        return ids, mat, self.background()

    def _embed_primary(self, contents: list[str]) -> np.ndarray | None:
        """:meth:`embed`, the primary part of each row (what clauses are compared by)."""
        m = self.embed(contents)
        return None if m is None else primary_rows(self.embedder, m)

    def stem_sets(self) -> dict[int, frozenset[str]]:
        """The stem set of every live record."""
        return {rid: frozenset(s) for rid, s in self.lexical.docs.items()}

    # ------------------------------------------------------------------ relevance and scores
    def relevance(
        self,
        query: str,
        qvec: np.ndarray | None = None,
        use_vectors: bool = True,
        scored: Scored | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(ids, relevance, lexical, semantic|None) of every record related to the query;
        ``scored``: its stems' BM25 scores, when the caller has them already."""
        return self._relevance(query, qvec, use_vectors, scored)[:4]

    def _relevance(
        self,
        query: str,
        qvec: np.ndarray | None = None,
        use_vectors: bool = True,
        scored: Scored | None = None,
        near: int = 0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """:meth:`relevance`, and with ``near`` the ids of the ``near`` records whose whole
        vector is closest to the query — among the ids even when their cosine is below the
        background (relevance 0 unless BM25 finds them): a record of several facts can sit
        there and still hold the answer in one clause (:meth:`_by_parts`)."""
        none = np.zeros(0, dtype=np.int64)
        scored = scored or self.scored(text.stems(query))
        lk, lv = self.lexical.relevance(scored.stems, (scored.ids, scored.raw))
        if qvec is None and use_vectors and self.vectors is not None and len(self.vectors) > 0:
            qvec = self.embed_one(query)
        if not use_vectors or qvec is None or self.vectors is None or self.embedder is None:
            lv = lv.astype(np.float64)
            return lk, lv, lv, None, none  # lexical only: relevance is BM25 (one array)
        qcode = language_code(query)
        vk, cos, cos_en = self.vectors.cosines(self.embedder, qvec, english=qcode == ENGLISH)
        share = self._share(qcode)
        sem = self._semantic(vk, cos, cos_en, qcode, share)
        nz = sem > 0
        closest = none
        if near > 0 and len(vk):
            at = np.arange(len(vk)) if len(vk) <= near else np.argpartition(-cos, near - 1)[:near]
            closest = vk[at]
            nz[at] = True
        vk, sem = vk[nz], sem[nz]
        # ids are dense (AUTOINCREMENT): the union is a mask over them, not a sort
        top = int(max(lk.max(initial=-1), vk.max(initial=-1))) + 1
        lex_by_id = np.zeros(top)
        lex_by_id[lk] = lv
        sem_by_id = np.zeros(top)
        sem_by_id[vk] = sem
        present = np.zeros(top, dtype=bool)
        present[lk] = True
        present[vk] = True
        ids = np.flatnonzero(present)
        lex, semantic = lex_by_id[ids], sem_by_id[ids]
        return ids, self._fuse(ids, lex, semantic, qcode, share), lex, semantic, closest

    def _by_parts(
        self,
        query: str,
        qvec: np.ndarray,
        ids: np.ndarray,
        rel: np.ndarray,
        lex: np.ndarray,
        sem: np.ndarray,
        closest: np.ndarray,
        contents: Callable[[list[int]], dict[int, str]],
    ) -> tuple[np.ndarray, np.ndarray]:
        """(relevance, semantic) with the best ``part_candidates`` by relevance and the
        ``part_candidates`` closest by whole vector (``closest``) scored again by their best
        clause (:mod:`core.recall.parts`): semantic = max(whole, best clause)."""
        m = self.config.part_candidates
        if m <= 0 or len(ids) == 0 or self.embedder is None:
            return rel, sem
        pos = np.arange(len(ids)) if len(ids) <= m else np.argpartition(-rel, m - 1)[:m]
        if len(closest):
            pos = np.union1d(pos, np.flatnonzero(np.isin(ids, closest)))
        qcode = language_code(query)
        if english_part(self.embedder) is not None and qcode == ENGLISH:
            # an English question and an English record are scored by the English model,
            # whose whole-record cosine clauses do not improve (LoCoMo: R@5 0.682 -> 0.674)
            pos = pos[self.columns.language[ids[pos]] != ENGLISH]
            if len(pos) == 0:
                return rel, sem
        cand = ids[pos].tolist()
        need = [rid for rid in cand if rid not in self.parts]
        if need:
            self.parts.fill(
                contents(need), self.vectors.primary.dim if self.vectors else 0, self._embed_primary
            )
        where, rows = self.parts.rows(cand)
        if len(where) == 0:
            return rel, sem
        # clauses are compared by the primary model alone: an English question's English
        # records were left out above, and every other pair is the primary model's anyway
        cos = rows @ primary_query(self.embedder, qvec)
        share = self._share(qcode)
        psem = self._semantic(ids[pos][where], cos, None, qcode, share)
        best = np.zeros(len(pos))
        np.maximum.at(best, where, psem)
        better = best > sem[pos]
        if not better.any():
            return rel, sem
        pos = pos[better]
        sem = sem.copy()
        sem[pos] = best[better]
        rel = np.array(rel, dtype=np.float64)  # never the lexical index's own array
        rel[pos] = self._fuse(ids[pos], lex[pos], sem[pos], qcode, share)
        return rel, sem

    def recall(
        self,
        query: str,
        ctx: TurnContext,
        k: int,
        now: float,
        use_vectors: bool = True,
        contents: Callable[[list[int]], dict[int, str]] | None = None,
    ) -> list[Hit]:
        """The §4 selection for a query among what this turn may see, core excluded.
        ``contents`` reads records' contents by id: with it, the best candidates are scored by
        their clauses too (:mod:`core.recall.parts`)."""
        qvec = None
        if use_vectors and self.vectors is not None and len(self.vectors) > 0:
            qvec = self.embed_one(query)
        by_parts = contents is not None and self.config.part_candidates > 0
        ids, rel, lex, sem, closest = self._relevance(
            query,
            qvec=qvec,
            use_vectors=use_vectors,
            near=self.config.part_candidates if by_parts else 0,
        )
        if len(ids) == 0:
            return []
        ok = self.columns.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core=False)
        if not ok.all():
            lexical_only = lex is rel  # one array: filtered once
            ids, rel = ids[ok], rel[ok]
            lex = rel if lexical_only else lex[ok]
            sem = sem[ok] if sem is not None else None
        if by_parts and contents is not None and sem is not None and qvec is not None:
            rel, sem = self._by_parts(query, qvec, ids, rel, lex, sem, closest, contents)
        c = self.columns
        rel = self._named_time(query, now, ids, rel)
        fresh_floor = self.config.freshness_floor
        if k > 0 and len(ids) > 4 * k and fresh_floor > 0:
            # Freshness lies in [floor, 1], so a record's score lies between its score without
            # freshness times the floor and that score itself: one that cannot reach the k-th
            # best lower bound cannot be selected and is not scored (the freshness's power is
            # most of a query's cost at 100k candidates). The rest are scored exactly as before,
            # so the selection is the same; the margin covers rounding.
            bound = rel * c.weight[ids]
            cut = np.partition(bound, len(bound) - k)[len(bound) - k] * fresh_floor
            maybe = np.flatnonzero(bound >= cut * (1 - 1e-9))
            lexical_only = lex is rel
            ids, rel = ids[maybe], rel[maybe]
            lex = rel if lexical_only else lex[maybe]
            sem = sem[maybe] if sem is not None else None
        s = c.score(ids, rel, now, fresh_floor)
        keep = select(ids, s, k, self.config.recall_floor)
        sems = sem[keep].tolist() if sem is not None else [None] * len(keep)
        rels = rel[keep].tolist()
        return hits_of(
            ids[keep].tolist(),
            s[keep].tolist(),
            rels,
            rels if lex is rel else lex[keep].tolist(),
            sems,
        )

    def similar(
        self,
        content: str,
        ctx: TurnContext,
        exclude: int,
        qvec: np.ndarray | None,
        scored: Scored | None = None,
    ) -> list[int]:
        """The records this turn may see that are most related to a text just saved
        (``scored``: its BM25 scores as :meth:`scored` read them before the save)."""
        ids, rel, _lex, _sem = self.relevance(content, qvec=qvec, scored=scored)
        if len(ids) == 0:
            return []
        ok = self.columns.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core=True)
        ok &= ids != exclude
        ids, rel = ids[ok], rel[ok]
        keep = select(ids, rel, self.config.similar_on_save, self.config.recall_floor)
        return [int(ids[i]) for i in keep]

    def scored(self, stems: list[str]) -> Scored:
        """A text's BM25 scores, read once for a save: its duplicate and its similar records
        are found from them (the similar ones with the store's statistics of just before the
        save: one record more moves them by a hair, and the new record is left out anyway)."""
        ids, raw = self.lexical.scores(stems)
        return Scored(stems, ids, raw)

    def duplicate(
        self, new_stems: list[str], ctx: TurnContext, scope: str, scored: Scored | None = None
    ) -> int | None:
        """The record a save would reinforce instead of adding (§3.2): stem-set Jaccard ≥
        ``dedup_jaccard`` and compatible numbers, among what this turn may see."""
        scored = scored or self.scored(new_stems)
        ids, raw = scored.ids, scored.raw
        if len(ids) == 0:
            return None
        ok = self.columns.visible_mask(ids, ctx.scopes() + (scope,), ctx.sees_private, True)
        ids, raw = ids[ok], raw[ok]
        new_set = frozenset(new_stems)
        best, best_j = None, 0.0
        for i in np.argsort(-raw)[:50]:
            rid = int(ids[i])
            old = frozenset(self.lexical.docs[rid])
            j = text.jaccard(new_set, old)
            if j < self.config.dedup_jaccard or j <= best_j:
                continue
            if not text.numbers_compatible(new_set, old):
                continue  # "3 pm" and "5 pm" are different memories
            best, best_j = rid, j
        return best

    def more_detailed(self, new_stems: list[str], record_id: int) -> bool:
        return len(set(new_stems)) > len(set(self.lexical.docs[record_id]))

    def named(
        self, groups: list[frozenset[str]], ctx: TurnContext, exclude: set[int], k: int
    ) -> list[int]:
        """Up to ``k`` records this turn may see (core excluded) that name someone or something
        of ``groups`` (:func:`text.name_stems`), the most recently used or written first."""
        if k <= 0 or not groups:
            return []
        found: set[int] = set()
        for group in groups:
            ids, rel = self.lexical.relevance(sorted(group))
            found.update(int(i) for i in ids[rel > 0])
        found -= exclude
        if not found:
            return []
        ids = np.array(sorted(found), dtype=np.int64)
        ids = ids[
            self.columns.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core=False)
        ]
        order = np.lexsort((-ids, -self.columns.recalled_at[ids]))  # ties: the newer id
        return [int(i) for i in ids[order][:k]]

    def core_ids(self, ctx: TurnContext) -> np.ndarray:
        """Core and pinned records this turn may see (found without a scan of the store)."""
        c = self.columns
        ids = np.flatnonzero(c.alive & (c.core | c.pinned))
        return ids[c.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core=True)]

    def status(self) -> RecallStatus:
        n_live = len(self.lexical)
        n_vec = len(self.vectors) if self.vectors is not None else 0
        return RecallStatus(
            embedder=self.embedder.name if self.embedder else None,
            background=self.background() if self.embedder else None,
            vectors=n_vec,
            missing_vectors=(n_live - n_vec) if self.embedder else n_live,
            error=self.embed_error,
        )
