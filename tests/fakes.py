"""Deterministic test embedders (SPEC §6): no model files, no network, same vectors every run.

:class:`HashEmbedder` hashes the stems of a text (``core.text.stems``, so Russian and English are
both handled) into a fixed number of buckets and L2-normalises the counts: texts sharing stems
have a positive cosine, texts sharing none have cosine 0 (barring a bucket collision, which a
large ``dim`` makes rare and which tests avoid by checking their own texts). The hash is
``zlib.crc32``, not Python's salted ``hash``.

:class:`FailingEmbedder` raises on every call (a model that cannot load or crashes)."""

from __future__ import annotations

import zlib

import numpy as np

from core import text


def bucket(stem: str, dim: int) -> int:
    return zlib.crc32(stem.encode("utf-8")) % dim


class HashEmbedder:
    """A bag of stems hashed into ``dim`` buckets, L2-normalised; records its calls."""

    def __init__(
        self, name: str = "fake-hash-v1", dim: int = 512, synonyms: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.dim = dim
        # stem → stem it means the same as: a "semantic" match that shares no lexical stem
        self.synonyms = dict(synonyms or {})
        self.calls: list[int] = []  # batch sizes, in call order

    def vector(self, content: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for s in text.stems(content):
            v[bucket(self.synonyms.get(s, s), self.dim)] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n > 0 else v

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts]).astype(np.float32)

    def cosine(self, a: str, b: str) -> float:
        return float(np.dot(self.vector(a), self.vector(b)))


class FailingEmbedder:
    """An embedder whose model cannot run: every call raises."""

    def __init__(
        self, name: str = "broken-model", dim: int = 512, message: str = "model file not found"
    ) -> None:
        self.name = name
        self.dim = dim
        self.message = message
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        raise RuntimeError(self.message)


class FlakyEmbedder(HashEmbedder):
    """Works for the first ``ok_calls`` calls, then raises (a model that dies mid-backfill)."""

    def __init__(self, ok_calls: int, name: str = "fake-hash-v1", dim: int = 512) -> None:
        super().__init__(name, dim)
        self.ok_calls = ok_calls

    def embed(self, texts: list[str]) -> np.ndarray:
        if len(self.calls) >= self.ok_calls:
            self.calls.append(-len(texts))
            raise RuntimeError("out of memory")
        return super().embed(texts)


# ---------------------------------------------------------------------------------------------
# An independent reference of the lexical score (SPEC §4), written from the formula rather than
# from core/recall/lexical.py: Lucene BM25 with k1 = 1.5, b = 0.75 over core.text.stems.
K1 = 1.5
B = 0.2  # core.recall.lexical.B (chosen on LoCoMo dev: short turns are not diluted documents)


def reference_bm25(docs: dict[int, list[str]], query: list[str]) -> dict[int, float]:
    """Raw BM25 of every document sharing a stem with the query (query repeats count again)."""
    from collections import Counter
    from math import log

    n = len(docs)
    if n == 0:
        return {}
    avgdl = sum(len(d) for d in docs.values()) / n
    df = Counter(t for d in docs.values() for t in set(d))
    out: dict[int, float] = {}
    for key, d in docs.items():
        tf = Counter(d)
        s = 0.0
        hit = False
        for t in query:
            if tf[t] == 0:
                continue
            hit = True
            idf = log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            s += idf * tf[t] / (tf[t] + K1 * (1 - B + B * len(d) / avgdl))
        if hit:
            out[key] = s
    return out


class TwoPartEmbedder:
    """Two fake models as one (core.embedding's ``english_part``): rows [primary ‖ english] / √2,
    the way models.embedders.DualEmbedder joins USE and MiniLM."""

    def __init__(
        self,
        primary: HashEmbedder,
        english: HashEmbedder,
        english_background: float = 0.2,
        english_lexical_weight: float = 0.6,
    ) -> None:
        self.primary, self.english = primary, english
        self.name = f"{primary.name}+{english.name}"
        self.dim = primary.dim + english.dim
        self.english_part = primary.dim
        self.english_background = english_background
        self.english_lexical_weight = english_lexical_weight

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return (
            np.hstack([self.primary.embed(texts), self.english.embed(texts)]) / np.sqrt(2.0)
        ).astype(np.float32)
