"""Measuring the background cosine ``b`` of the active embedder on the owner's own store (SPEC §4).

Raw cosine is not relevance: two unrelated texts of one language already share a model-specific
baseline (≈ 0.39 for bge-m3, ≈ 0.05 for USE multilingual). Semantic relevance is therefore
``clamp((cos − b) / (1 − b), 0, 1)``, and ``b`` must be re-measurable on the corpus it serves
(``eva calibrate``).

In a memory store almost every pair of records is about different things, so the **median
cosine over random pairs of distinct records** estimates the unrelated baseline robustly — the
few related pairs sit in the upper tail and barely move the median. Pure numpy; the texts are
embedded with the store's own embedder, through the public :class:`~core.memory.facade.Memory` API.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.embedding import normalise_rows, primary_rows
from core.errors import MemoryOpError
from core.privacy import OWNER_TRUSTED

MIN_RECORDS = 8  # fewer distinct texts than this give too few pairs to say anything
MAX_RECORDS = 600  # texts embedded at most (a sample of a big store)
PAIRS = 4000  # random pairs sampled at most
MAX_BACKGROUND = 0.9  # a b above this leaves no room for relatedness: the model is unusable


@dataclass(frozen=True)
class Calibration:
    model: str
    background: float  # the median cosine of random pairs: the ``b`` that is stored
    records: int  # distinct texts used
    pairs: int  # pairs measured
    p10: float
    p90: float
    applied: bool


def pair_cosines(vectors: np.ndarray, pairs: int = PAIRS, seed: int = 0) -> np.ndarray:
    """Cosines of up to ``pairs`` random pairs of distinct rows (all pairs when there are fewer)."""
    v = normalise_rows(vectors)
    n = len(v)
    if n < 2:
        return np.zeros(0, dtype=np.float32)
    total = n * (n - 1) // 2
    if total <= pairs:
        i, j = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n, size=pairs * 2)
        j = rng.integers(0, n, size=pairs * 2)
        keep = i != j
        i, j = i[keep][:pairs], j[keep][:pairs]
    return np.einsum("ij,ij->i", v[i], v[j])


def background_cosine(vectors: np.ndarray, pairs: int = PAIRS, seed: int = 0) -> float:
    """The median cosine of random pairs of rows: the unrelated baseline ``b``."""
    cos = pair_cosines(vectors, pairs, seed)
    if len(cos) == 0:
        raise ValueError("need at least two vectors")
    return float(np.median(cos))


def calibrate(
    memory, *, apply: bool = True, max_records: int = MAX_RECORDS, pairs: int = PAIRS, seed: int = 0
) -> Calibration:
    """Measure ``b`` of ``memory``'s embedder over its own live records and (``apply``) store it
    with :meth:`Memory.set_background`. Raises :class:`MemoryOpError` when there is no embedder,
    too few records, or the embedder fails."""
    embedder = memory.embedder
    if embedder is None:
        raise MemoryOpError("no embedding model is active: nothing to calibrate")
    texts: list[str] = []
    seen: set[str] = set()
    offset = 0
    while True:  # the owner's whole store, every scope, private included (never shown)
        batch = memory.list(OWNER_TRUSTED, order="id", limit=1000, offset=offset)
        for r in batch:
            t = r.content.strip()
            if t and t not in seen:
                seen.add(t)
                texts.append(t)
        if len(batch) < 1000:
            break
        offset += 1000
    if len(texts) < MIN_RECORDS:
        raise MemoryOpError(
            f"calibration needs at least {MIN_RECORDS} distinct memories; the store has "
            f"{len(texts)}"
        )
    if len(texts) > max_records:
        rng = np.random.default_rng(seed)
        texts = [texts[k] for k in sorted(rng.choice(len(texts), max_records, replace=False))]
    try:
        vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    except Exception as e:
        raise MemoryOpError(f"the embedder failed: {type(e).__name__}: {e}") from e
    if vecs.shape != (len(texts), embedder.dim):
        raise MemoryOpError(f"the embedder returned shape {vecs.shape}")
    # b is the multilingual model's (an English half keeps the background it declares)
    cos = pair_cosines(primary_rows(embedder, vecs), pairs, seed)
    b = float(np.median(cos))
    if not -1.0 <= b < MAX_BACKGROUND:
        raise MemoryOpError(f"measured background cosine {b:.3f} is unusable for {embedder.name}")
    if apply:
        memory.set_background(b)
    return Calibration(
        model=embedder.name,
        background=b,
        records=len(texts),
        pairs=len(cos),
        p10=float(np.quantile(cos, 0.1)),
        p90=float(np.quantile(cos, 0.9)),
        applied=apply,
    )
