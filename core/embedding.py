"""Embeddings in recall (SPEC §4, §6): the protocol the core needs, and the vector space it keeps.

The core knows no concrete model. ``models/`` implements :class:`Embedder`; the app passes one
to :class:`core.memory.facade.Memory`. Cosine is taken only against vectors of the active model, and a
raw cosine is calibrated against the model's background ``b``: semantic = clamp((cos − b)/(1 − b)).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

Progress = Callable[[int, int], None]  # (texts done, texts in all), after each batch


@runtime_checkable
class Embedder(Protocol):
    name: str  # identifies the vector space; vectors of another name are never compared
    dim: int
    # An embedder may also carry ``background: float | None`` — its background cosine b as
    # measured by its maker; a value calibrated on the owner's corpus takes precedence.
    # It may carry ``lexical_weight`` (BM25's share of hybrid relevance) and
    # ``cross_language_offset`` (how much lower b is for a record in another language than the
    # query), both measured beside its b; and ``compute(fn)``, which runs recall's cosine over
    # every vector the way the model's runtime wants numpy run (models.embedders: one BLAS
    # thread).
    # An embedder made of two models may carry ``english_part: int``: its rows are then
    # [multilingual ‖ English-only] / √2, each half unit-length, the English half starting at
    # that column — or zero for a text not in English (core.language.detect), which it is
    # never compared by. Recall compares an English question with an English record by the
    # English half (its own ``english_background`` and ``english_lexical_weight``) and every
    # other pair by the multilingual half, and keeps English halves only for English records
    # (core.recall.vectors); clustering and calibration see the multilingual half only.

    def embed(self, texts: list[str]) -> np.ndarray:
        """A float32 matrix, one L2-normalised row per text (a query, a save: a few texts)."""
        ...

    def embed_many(
        self, texts: list[str], batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        """:meth:`embed` for many texts (an import, a re-embed after a model change, a
        backfill): ``batch_size`` at a time (None: the model's own), each batch one forward
        pass of every model, ``progress(done, total)`` after each. The same rows as
        :meth:`embed` gives one text at a time, within float tolerance."""
        ...


def embed_many(
    embedder: Embedder,
    texts: list[str],
    batch_size: int | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """``embedder.embed_many`` — or, for an embedder that only has :meth:`Embedder.embed` (a
    test's stand-in), ``embed`` of ``batch_size`` texts at a time (all at once for None), with
    the same progress."""
    many = getattr(embedder, "embed_many", None)
    if many is not None:
        return many(texts, batch_size, progress)
    return embed_batches(embedder.embed, embedder.dim, texts, batch_size, progress)


def embed_batches(
    embed: Callable[[list[str]], np.ndarray],
    dim: int,
    texts: list[str],
    batch_size: int | None = None,
    progress: Progress | None = None,
) -> np.ndarray:
    """``embed`` of ``batch_size`` texts at a time (all at once for None), ``progress(done,
    total)`` after each: :meth:`Embedder.embed_many` of a model that has no batching of its own
    (a test's or a bench's stand-in)."""
    step = batch_size or max(1, len(texts))
    parts = []
    for start in range(0, len(texts), step):
        parts.append(np.asarray(embed(texts[start : start + step]), dtype=np.float32))
        if progress is not None:
            progress(min(start + step, len(texts)), len(texts))
    return np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)


def normalise_rows(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def cosines_of(
    embedder: object, vectors: VectorSpace, query: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``vectors.cosines(query)``, run through the embedder's ``compute`` when it has one (the
    way its runtime wants numpy run: one BLAS thread for USE)."""
    compute = getattr(embedder, "compute", None)
    if compute is None:
        return vectors.cosines(query)
    return compute(lambda: vectors.cosines(query))


def english_part(embedder: object) -> int | None:
    """The column where an embedder's English-only half starts, or None for one model."""
    split = getattr(embedder, "english_part", None)
    return int(split) if split else None


def primary_rows(embedder: object, m: np.ndarray) -> np.ndarray:
    """Rows as the multilingual model alone made them (unit length): the whole row for an
    embedder of one model, its first half for one of two (see :class:`Embedder`)."""
    split = english_part(embedder)
    if split is None:
        return m
    return normalise_rows(np.asarray(m, dtype=np.float32)[:, :split])


def calibrated(cos: np.ndarray, background: float | np.ndarray) -> np.ndarray:
    """Map raw cosine to 0..1 with the model's background cosine as zero (one ``b``, or one
    per cosine)."""
    return np.clip((cos - background) / (1.0 - background), 0.0, 1.0)


def to_blob(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype=np.float32).tobytes()


# rows of the int8 matrix made float at a time for a product (1 MB at 512 dimensions)
_CHUNK = 512


def quantized(v: np.ndarray) -> tuple[np.ndarray, float]:
    """A unit row as int8 codes and the scale that makes them a unit row again: codes × scale
    is the row to ±half a step of its largest value (/127), normalised, so a cosine read from
    them is the cosine of that row. Measured on 100k random unit rows of 512 dimensions:
    cosines off by 0.00026 on average, 0.0017 at most."""
    v = np.asarray(v, dtype=np.float32).ravel()
    peak = float(np.max(np.abs(v))) if v.size else 0.0
    if peak == 0.0:
        return np.zeros(v.shape, dtype=np.int8), 0.0
    codes = np.rint(v * (127.0 / peak)).astype(np.int8)
    norm = float(np.linalg.norm(codes.astype(np.float32)))
    return codes, (1.0 / norm if norm else 0.0)


class VectorSpace:
    """The active model's vectors, in one growable matrix addressed by record id.

    Rows are kept as int8 codes with one float scale each (:func:`quantized`; the store's
    ``vectors`` table keeps the model's float32 rows): a quarter of the memory, which is what
    100k records' vectors spent most of the serving process's 600 MB on (issue 32: 512 × 4
    bytes a record for USE, 384 × 4 more for an English one). A product makes 512 rows float
    at a time and multiplies them with one BLAS call; at 100k rows it took as long as the
    float32 matrix did (12.4 against 13.3 ms): the product is bound by reading the matrix, a
    quarter as long now."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._mat = np.zeros((0, dim), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self._keys = np.zeros(0, dtype=np.int64)
        self._alive = np.zeros(0, dtype=bool)
        # the row of each live key, by key (keys are record ids: dense), -1 for none — an
        # array, not a dict: a dict of 100k ints holds ~10 MB
        self._pos = np.zeros(0, dtype=np.int32)
        self._live = 0
        self._n = 0

    def _row(self, key: int) -> int:
        return int(self._pos[key]) if 0 <= key < len(self._pos) else -1

    def __len__(self) -> int:
        return self._live

    def __contains__(self, key: int) -> bool:
        return self._row(key) >= 0

    def set(self, key: int, vec: np.ndarray) -> None:
        codes, scale = quantized(normalise_rows(vec)[0])
        pos = self._row(key)
        if pos < 0:
            if not 0 <= key < 2**31:
                raise ValueError(f"a vector's key is a record id, not {key}")
            if self._n == len(self._keys):
                cap = self._n + self.room(self._n)
                mat = np.empty((cap, self.dim), dtype=np.int8)  # np.resize would tile it
                mat[: self._n] = self._mat[: self._n]
                self._mat = mat
                grown_scale = np.zeros(cap, dtype=np.float32)
                grown_scale[: self._n] = self._scale[: self._n]
                self._scale = grown_scale
                keys = np.zeros(cap, dtype=np.int64)
                keys[: self._n] = self._keys[: self._n]
                alive = np.zeros(cap, dtype=bool)
                alive[: self._n] = self._alive[: self._n]
                self._keys, self._alive = keys, alive
            if key >= len(self._pos):
                grown = np.full(
                    max(key + 1, len(self._pos) + self.room(len(self._pos))), -1, dtype=np.int32
                )
                grown[: len(self._pos)] = self._pos
                self._pos = grown
            pos = self._n
            self._n += 1
            self._pos[key] = pos
            self._keys[pos] = key
            self._live += 1
        self._mat[pos] = codes
        self._scale[pos] = scale
        self._alive[pos] = True

    def state(self) -> dict[str, np.ndarray]:
        """The filled rows (dead ones too: no copy of the matrix) — see :meth:`restore`."""
        n = self._n
        return {
            "vec_keys": self._keys[:n],
            "vec_alive": self._alive[:n],
            "vec_mat": self._mat[:n],
            "vec_scale": self._scale[:n],
        }

    @staticmethod
    def room(n: int) -> int:
        """Rows added when a space of ``n`` rows is full: a quarter (a doubling of 100k × 512
        would hold 600 MB while it copies)."""
        return max(64, n // 4)

    @classmethod
    def restore(cls, dim: int, st: dict[str, np.ndarray]) -> VectorSpace:
        """A space from a :meth:`state` (its matrix is taken as it is, not copied; rows past
        the keys are room to grow)."""
        keys, alive, mat, scale = (
            st["vec_keys"].astype(np.int64),
            st["vec_alive"].astype(bool),
            st["vec_mat"],
            st["vec_scale"],
        )
        n = len(keys)
        if (
            mat.dtype != np.int8
            or mat.ndim != 2
            or mat.shape[1] != dim
            or mat.shape[0] < n
            or len(alive) != n
            or not mat.flags.c_contiguous
            or scale.dtype != np.float32
            or scale.shape != (n,)
            or not bool(np.all(np.isfinite(scale)))
        ):
            raise ValueError("persisted vectors are inconsistent")
        space = cls(dim)
        cap = mat.shape[0]
        space._mat = mat
        space._scale = np.zeros(cap, dtype=np.float32)
        space._scale[:n] = scale
        space._keys = np.zeros(cap, dtype=np.int64)
        space._keys[:n] = keys
        space._alive = np.zeros(cap, dtype=bool)
        space._alive[:n] = alive
        space._n = n
        keys, alive = space._keys[:n], space._alive[:n]
        live_keys, rows = keys[alive], np.flatnonzero(alive)
        if len(live_keys) and not 0 <= int(live_keys.min()) <= int(live_keys.max()) < 2**31:
            raise ValueError("persisted vectors of keys that are not record ids")
        space._pos = np.full(int(live_keys.max()) + 1 if len(live_keys) else 0, -1, dtype=np.int32)
        space._pos[live_keys] = rows
        space._live = len(live_keys)
        if int(np.count_nonzero(space._pos >= 0)) != space._live:
            raise ValueError("persisted vectors repeat a record")
        return space

    def remove(self, key: int) -> None:
        pos = self._row(key)
        if pos >= 0:
            self._pos[key] = -1
            self._alive[pos] = False
            self._live -= 1

    def get(self, key: int) -> np.ndarray | None:
        """The record's row (unit length, as its codes hold it), or None."""
        pos = self._row(key)
        if pos < 0:
            return None
        return self._mat[pos].astype(np.float32) * self._scale[pos]

    def keys(self) -> np.ndarray:
        """The keys of every live vector."""
        n = self._n
        return self._keys[:n][self._alive[:n]]

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, unit-length rows) of every live vector — a copy."""
        n = self._n
        alive = self._alive[:n]
        rows = self._mat[:n][alive].astype(np.float32)
        rows *= self._scale[:n][alive][:, None]
        return self._keys[:n][alive].copy(), rows

    def _product(self, columns: np.ndarray) -> np.ndarray:
        """Every filled row (dead ones too) × ``columns`` (dim × k, float32): the codes made
        float :data:`_CHUNK` rows at a time, then scaled."""
        n = self._n
        out = np.empty((n, columns.shape[1]), dtype=np.float32)
        buf = np.empty((min(_CHUNK, n), self.dim), dtype=np.float32)
        for start in range(0, n, _CHUNK):
            stop = min(start + _CHUNK, n)
            part = buf[: stop - start]
            np.copyto(part, self._mat[start:stop], casting="unsafe")
            np.dot(part, columns, out=out[start:stop])
        out *= self._scale[:n, None]
        return out

    def products(self, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(keys, rows × ``columns``) of every live vector: one product for several queries."""
        if not self._live:
            return np.zeros(0, dtype=np.int64), np.zeros((0, columns.shape[1]), dtype=np.float32)
        n = self._n
        out = self._product(np.ascontiguousarray(columns, dtype=np.float32))
        alive = self._alive[:n]
        return self._keys[:n][alive], out[alive]

    def cosines(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(keys, cosine) of every live vector against one normalised query vector."""
        if not self._live:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        n = self._n
        cos = self._product(normalise_rows(query)[0][:, None])[:, 0]
        alive = self._alive[:n]
        return self._keys[:n][alive], cos[alive]
