"""The active embedder's vectors in recall (SPEC §4, §6): the ``vectors`` table and the vector
spaces of the live records that :class:`core.recall.index.RecallIndex` keeps in memory.

An embedder of one model has one space, a row for every record. An embedder of two models
(:class:`core.embedding.Embedder`'s ``english_part``: [multilingual ‖ English-only]) has two:
the **primary** space, the multilingual half of every record, and the **English** space, the
English-only half of the records written in English (:func:`core.recall.score.language_code`, the
way recall tells a record's language) — the only ones it is ever compared for: an English
question and an English record. So the memory the vectors take grows with the English share
of the store, not with two models for every record (issue 32: at 100k records, 45 % English,
357 → 274 MB). A record whose language changes with its wording moves between the spaces.

The ``vectors`` table holds one row per record under the embedder's name: the whole row for a
record in English, the primary half alone (``dim`` = ``english_part``) for any other — what
the spaces are read back from. A full row of a record not (or no longer) in English is read
as its primary half.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from core.embedding import (
    Embedder,
    VectorSpace,
    cosines_of,
    english_part,
    normalise_rows,
    to_blob,
)


def stored_dims(embedder: Embedder) -> tuple[int, ...]:
    """The lengths a stored row of this embedder may have: its whole row, and for one of two
    models also the primary half alone."""
    dim = int(embedder.dim)
    split = english_part(embedder)
    return (dim,) if split is None else (dim, split)


def primary_query(embedder: Embedder, query: np.ndarray) -> np.ndarray:
    """The part of a query row the primary space is compared with (unit length)."""
    split = english_part(embedder)
    q = np.asarray(query, dtype=np.float32).ravel()
    return normalise_rows(q if split is None else q[:split])[0]


class Vectors:
    """The live records' vectors of one embedder: the primary space (every record) and, for an
    embedder of two models, the English space (English records only)."""

    def __init__(self, embedder: Embedder) -> None:
        dim = int(embedder.dim)
        self.split = english_part(embedder)
        self.primary = VectorSpace(self.split or dim)
        self.english = VectorSpace(dim - self.split) if self.split else None

    def __len__(self) -> int:
        return len(self.primary)

    def __contains__(self, key: int) -> bool:
        return key in self.primary

    def keys(self) -> np.ndarray:
        """The record ids that have a vector."""
        return self.primary.keys()

    def get(self, key: int) -> np.ndarray | None:
        """The record's primary row (unit length)."""
        return self.primary.get(key)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, unit-length primary rows) of every live vector — a copy."""
        return self.primary.rows()

    def set(self, key: int, row: np.ndarray, english: bool) -> None:
        """A record's row, as the embedder made it or as it is stored (the primary half alone
        for a record not in English); ``english``: the record is written in English — its
        English half is kept then (when it has one), and dropped otherwise."""
        row = np.asarray(row, dtype=np.float32).ravel()
        if self.english is None or self.split is None:
            self.primary.set(key, row)
            return
        self.primary.set(key, row[: self.split])
        tail = row[self.split :]
        if english and len(tail) == self.english.dim and bool(np.any(tail)):
            self.english.set(key, tail)
        else:
            self.english.remove(key)

    def remove(self, key: int) -> None:
        self.primary.remove(key)
        if self.english is not None:
            self.english.remove(key)

    def cosines(
        self, embedder: Embedder, query: np.ndarray, english: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(keys, primary cosine, English cosine | None) of every live vector against a query
        row. The English cosine (only with ``english``: an English question) is aligned with
        the keys, NaN for a record with no English row. Run through the embedder's
        ``compute`` (the way its runtime wants numpy run)."""
        qp = primary_query(embedder, query)
        if self.english is None or self.split is None or not english or not len(self.english):
            keys, cos = cosines_of(embedder, self.primary, qp)
            return keys, cos, None
        qe = np.asarray(query, dtype=np.float32).ravel()[self.split :]
        space = self.english

        def both():
            return self.primary.cosines(qp), space.cosines(qe)

        compute = getattr(embedder, "compute", None)
        (keys, cos), (en_keys, en_cos) = both() if compute is None else compute(both)
        top = int(max(keys.max(initial=-1), en_keys.max(initial=-1))) + 1
        by_id = np.full(top, np.nan, dtype=np.float32)
        by_id[en_keys] = en_cos
        return keys, cos, by_id[keys]

    # ------------------------------------------------------------------ the persisted index
    def state(self) -> dict[str, np.ndarray]:
        """The spaces' arrays (:meth:`VectorSpace.state`): the primary one's under ``vec_``,
        the English one's under ``en_``."""
        out = dict(self.primary.state())
        if self.english is not None:
            out.update({"en_" + k[len("vec_") :]: v for k, v in self.english.state().items()})
        return out

    @classmethod
    def restore(cls, embedder: Embedder, get) -> Vectors:
        """The spaces from a :meth:`state`, read through ``get(name, spare_rows)`` (the
        persisted file's reader)."""
        out = cls(embedder)
        spaces = [("vec_", "primary")]
        if out.english is not None:
            spaces.append(("en_", "english"))
        for prefix, attr in spaces:
            space = getattr(out, attr)
            keys = get(prefix + "keys", 0)
            setattr(
                out,
                attr,
                VectorSpace.restore(
                    space.dim,
                    {
                        "vec_keys": keys,
                        "vec_alive": get(prefix + "alive", 0),
                        "vec_mat": get(prefix + "mat", VectorSpace.room(len(keys))),
                        "vec_scale": get(prefix + "scale", 0),
                    },
                ),
            )
        if out.english is not None and not np.isin(out.english.keys(), out.primary.keys()).all():
            raise ValueError("persisted English vectors of records with no vector")
        return out


# ---------------------------------------------------------------------- the vectors table
def row_of(blob: bytes, dim: int, embedder: Embedder) -> np.ndarray:
    """A stored row, checked against its ``dim`` and the lengths this embedder stores."""
    v = np.frombuffer(blob, dtype=np.float32)
    if v.shape[0] != dim or dim not in stored_dims(embedder):
        raise ValueError(f"stored vector has {v.shape[0]} values, expected {dim}")
    return v


def read_all(
    conn: sqlite3.Connection, embedder: Embedder, is_english: Callable[[int], bool]
) -> Vectors:
    """The live records' stored vectors of this embedder; ``is_english(id)``: whether that
    record is written in English (the index's language column). Read row by row: the rows of
    100k records never sit in memory at once."""
    dims = stored_dims(embedder)
    marks = ",".join("?" * len(dims))
    cur = conn.cursor()
    cur.row_factory = None
    out = Vectors(embedder)
    for rid, dim, blob in cur.execute(
        "SELECT v.memory_id, v.dim, v.vec FROM vectors v JOIN memories m ON "
        f"m.id = v.memory_id WHERE m.archived_at IS NULL AND v.model = ? "
        f"AND v.dim IN ({marks})",
        (embedder.name, *dims),
    ):
        out.set(rid, row_of(blob, dim, embedder), is_english(rid))
    return out


def stored(conn: sqlite3.Connection, embedder: Embedder, record_id: int) -> np.ndarray | None:
    """The record's stored row if it is this embedder's."""
    r = conn.execute(
        "SELECT model, dim, vec FROM vectors WHERE memory_id = ?", (record_id,)
    ).fetchone()
    if r is None or r[0] != embedder.name or r[1] not in stored_dims(embedder):
        return None
    return row_of(r[2], r[1], embedder)


def write(
    conn: sqlite3.Connection, embedder: Embedder, record_id: int, vec: np.ndarray, english: bool
) -> None:
    """Store a record's row: the whole row for a record in English, else its primary half."""
    split = english_part(embedder)
    row = np.asarray(vec, dtype=np.float32).ravel()
    if split is not None and not english:
        row = row[:split]
    conn.execute(
        "INSERT INTO vectors (memory_id, model, dim, vec) VALUES (?,?,?,?) "
        "ON CONFLICT(memory_id) DO UPDATE SET model = excluded.model, dim = excluded.dim, "
        "vec = excluded.vec",
        (record_id, embedder.name, len(row), to_blob(row)),
    )


def drop(conn: sqlite3.Connection, record_id: int) -> None:
    conn.execute("DELETE FROM vectors WHERE memory_id = ?", (record_id,))


def missing(conn: sqlite3.Connection, embedder: Embedder) -> list[int]:
    """Live records with no vector of this embedder, oldest first."""
    dims = stored_dims(embedder)
    marks = ",".join("?" * len(dims))
    return [
        r[0]
        for r in conn.execute(
            "SELECT m.id FROM memories m LEFT JOIN vectors v ON v.memory_id = m.id "
            "WHERE m.archived_at IS NULL AND (v.model IS NULL OR v.model != ? "
            f"OR v.dim NOT IN ({marks})) ORDER BY m.id",
            (embedder.name, *dims),
        )
    ]


def stored_ids(conn: sqlite3.Connection, embedder: Embedder) -> np.ndarray:
    """The live records that have a stored vector of this embedder."""
    dims = stored_dims(embedder)
    marks = ",".join("?" * len(dims))
    cur = conn.cursor()
    cur.row_factory = None
    return np.fromiter(
        (
            r[0]
            for r in cur.execute(
                "SELECT v.memory_id FROM vectors v JOIN memories m ON m.id = v.memory_id "
                f"WHERE m.archived_at IS NULL AND v.model = ? AND v.dim IN ({marks})",
                (embedder.name, *dims),
            )
        ),
        np.int64,
    )
