"""The persisted recall index (``<store>.index``, SPEC §4, §11): written at close, read at open
instead of a rebuild from the rows.

One file of named numpy arrays (:func:`write_arrays`, :class:`ArrayFile`): the lexical index,
the language code of every live record and the vector spaces (:mod:`core.recall.vectors`). It
is valid only for the store and index generation it is stamped with (core.store.storage: a counter
the triggers of every write to stems, content, archive marks and vectors move in the writing
transaction) and for the code that derived it — this format, the BM25 constants and the
language detection its per-record language codes (and the English vector space) came from
(:func:`fingerprint`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from core import language, ownership
from core.recall import lexical
from core.recall.vectors import Vectors
from core.store import records

log = logging.getLogger("eva.memory")

# 4: the vector spaces' rows as int8 codes with a scale each (core.embedding.VectorSpace);
# 3: the English-only model's rows in a space of their own, for English records only
# (core.recall.vectors); 2 held one [multilingual ‖ English] row per record
SNAPSHOT_FORMAT = 4

_MAGIC = b"EVA-RECALL-INDEX\n"


def fingerprint() -> str:
    src = Path(language.__file__).read_bytes()
    return f"{SNAPSHOT_FORMAT}:{lexical.K1}:{lexical.B}:{hashlib.sha256(src).hexdigest()[:16]}"


def snapshot_path(store: str | Path) -> Path | None:
    """Where the persisted index of a store file lives (None for an in-memory store)."""
    return None if str(store) == ":memory:" else Path(f"{store}.index")


def write_arrays(path: Path, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """One file: magic, header length, a JSON header (the caller's, plus each array's dtype,
    shape, offset and CRC-32), then the arrays' raw bytes. Written to a temporary file, synced
    and renamed over ``path``: a crash leaves the old file or the new one, never a mix."""
    meta: dict[str, list] = {}
    blobs = []
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        buf = a.data.cast("B") if a.size else memoryview(b"")
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


class ArrayFile:
    """A file of :func:`write_arrays`, read array by array (each checked against its CRC)."""

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
            got = self._f.readinto(a.data.cast("B")) if count else 0
            ok = got == nbytes
        else:
            out = a = np.fromfile(self._f, dtype=dt, count=count)
            ok = len(a) == count
        if not ok or zlib.crc32(a.data.cast("B") if count else b"") != crc:
            raise ValueError(f"{name}: damaged (short or CRC mismatch)")
        return out if spare_rows else a.reshape(shape)

    def __contains__(self, name: str) -> bool:
        return name in self._meta

    def names(self) -> list[str]:
        return list(self._meta)

    def close(self) -> None:
        self._f.close()


# ---------------------------------------------------------------------- a recall index's file
def read_into(index: Any, conn: sqlite3.Connection, stamp: tuple[str, int]) -> dict | None:
    """Fill ``index`` (a :class:`core.recall.index.RecallIndex`, empty) from its persisted file
    when that is stamped with this store and ``stamp`` (store id, index generation) and this
    code: returns the file's header, or None to rebuild from the rows. Raises ValueError (and
    friends) on a damaged or inconsistent file: the caller rebuilds then too."""
    path = index.snapshot
    if path is None or not path.exists():
        return None
    z = ArrayFile(path)
    try:
        header = z.header
        if (
            header.get("format") != fingerprint()
            or header.get("store") != stamp[0]
            or header.get("generation") != stamp[1]
        ):
            return None  # stale, another store's, or another code's: rebuild
        rows = records.score_rows(conn)
        ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        codes = z["lang_codes"]
        if not np.array_equal(ids, z["lang_ids"]) or len(codes) != len(ids):
            raise ValueError("the live records differ from the persisted index's")
        index.lexical.restore_with_docs(
            ids, {k: z[k] for k in z.names() if k.startswith(("lex_", "df_", "doc_"))}
        )
        index.columns.put_rows(rows, codes.astype(np.int8), index.config)
        index.vectors = None
        emb = index.embedder
        if emb is not None:
            if header.get("embedder") == [emb.name, emb.dim]:
                space = Vectors.restore(emb, z.get)
                if not np.isin(space.keys(), ids).all():
                    raise ValueError("persisted vectors of records that are not live")
                index.vectors = space
            else:  # saved by a session with another embedder (or none): vectors from rows
                index.vectors = index._vectors_from_store(conn)
    finally:
        z.close()
    return header


def write_from(index: Any, stamp: tuple[str, int], known: dict | None) -> dict | None:
    """Write ``index`` to its file stamped with ``stamp``, unless the file already holds it
    (``known``: the header of what it holds, as far as the index knows). Returns the header
    written, or None."""
    emb = index.embedder
    header = {
        "format": fingerprint(),
        "store": stamp[0],
        "generation": stamp[1],
        "embedder": (None if index.vectors is None or emb is None else [emb.name, emb.dim]),
    }
    if (
        known is not None
        and all(known.get(k) == header[k] for k in ("format", "store", "generation"))
        and (header["embedder"] is None or known.get("embedder") == header["embedder"])
    ):
        return None  # the file already holds this index
    cols, lex = index.columns, index.lexical
    ids = np.flatnonzero(cols.alive[: len(cols.alive)]).astype(np.int64)
    if len(ids) != len(lex) or any(int(i) not in lex for i in ids[:1000]):
        log.warning("recall index columns and lexical index disagree; not persisted")
        return None
    arrays = {
        "lang_ids": ids,
        "lang_codes": cols.language[ids],
        **lex.state(),
        **lex.docs_state(ids),
    }
    if header["embedder"] is not None and index.vectors is not None:
        arrays.update(index.vectors.state())
    write_arrays(index.snapshot, header, arrays)
    return header
