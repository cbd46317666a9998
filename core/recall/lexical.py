"""Lexical relevance: BM25 (bm25s) over stems, kept in step with the store (SPEC §4).

A bm25s index is an immutable sparse matrix, so a write cannot touch it cheaply. The index here
is a **main** bm25s index plus a small **delta** (an inverted index of documents added or changed
since the main was built) and a set of dead main documents. Queries score both parts with the
same formula (bm25s's "lucene" BM25, k1 = 1.5, b = 0.2); the main is rebuilt lazily when the
delta outgrows ``max(min_merge, merge_ratio × size)``, so a write costs O(its own tokens).

Relevance is normalised per query by the score of a **full match**: a document of average length
that contains every query stem once, ``Σ idf(t) / (1 + k1)``. Relevance 1.0 therefore means
"all of the query's words are there", and a record that shares one common word with the query
gets that word's small share of the query's idf mass instead of full marks (which is what
dividing by the query's best score would give). The value is comparable with a calibrated
cosine in the hybrid; it is clipped to 1 for documents that repeat query words.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, MutableMapping

import bm25s
import numpy as np

K1 = 1.5
# Length normalisation is weak on purpose: a memory is one topic however long it is, so a
# longer record is not a diluted one. Measured on LoCoMo dev (turns, R@5, relevance only):
# b 0.75 -> 0.590, 0.5 -> 0.615, 0.3 -> 0.630, 0.2 -> 0.637, 0.1 -> 0.638, 0 -> 0.637.
B = 0.2


class LexicalIndex:
    def __init__(self, min_merge: int = 1000, merge_ratio: float = 0.05) -> None:
        self.min_merge = min_merge
        self.merge_ratio = merge_ratio
        # key -> stems (all live documents); as a persisted index held them: PackedDocs
        self.docs: MutableMapping[int, list[str]] = {}
        self.df: Counter[str] = Counter()
        self.total_len = 0
        # main (bm25s) part
        self._main: bm25s.BM25 | None = None
        self._main_keys = np.zeros(0, dtype=np.int64)
        self._main_alive = np.zeros(0, dtype=bool)
        self._main_dead = 0  # main documents removed since it was built (False in _main_alive)
        # each main document's position, by key (keys are record ids: dense), -1 for none
        self._main_pos = np.zeros(0, dtype=np.int32)
        # the main's documents' lengths, and their average when it was built (its postings are
        # scored with the current statistics, so a result never depends on when it was built)
        self._main_len = np.zeros(0, dtype=np.float64)
        self._main_len_b = self._main_len  # B × each length: a query's norms start from it
        self._main_avgdl = 1.0
        # each main posting's term frequency, recovered once from bm25s's stored scores when
        # the main is built (bm25s's own scores are dropped: a query rescores the postings)
        self._main_tf = np.zeros(0, dtype=np.float32)
        # delta part: inverted index over documents not (correctly) in the main
        self._delta_post: dict[str, dict[int, int]] = {}
        self._delta_docs: set[int] = set()
        # each delta document's length (a query scores its postings with it: reading it from
        # ``docs`` unpacked a persisted document's whole list of stems per posting)
        self._delta_len: dict[int, int] = {}
        self.rebuilds = 0

    # ---- size and stats -------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, key: int) -> bool:
        return key in self.docs

    @property
    def avgdl(self) -> float:
        return self.total_len / len(self.docs) if self.docs else 1.0

    def idf(self, term: str) -> float:
        n = len(self.docs)
        df = self.df.get(term, 0)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    # ---- writes -----------------------------------------------------------------------------
    def bulk_load(self, items: list[tuple[int, list[str]]]) -> None:
        """Replace the whole index (start-up); builds the main at once."""
        self.docs = {k: list(s) for k, s in items}
        self.df = Counter()
        self.total_len = 0
        for s in self.docs.values():
            self.df.update(set(s))
            self.total_len += len(s)
        self._rebuild_main()

    def upsert(self, key: int, doc_stems: list[str]) -> None:
        if key in self.docs:
            self.remove(key)
        self.docs[key] = list(doc_stems)
        self.df.update(set(doc_stems))
        self.total_len += len(doc_stems)
        self._delta_docs.add(key)
        self._delta_len[key] = len(doc_stems)
        for term, tf in Counter(doc_stems).items():
            self._delta_post.setdefault(term, {})[key] = tf
        self._maybe_merge()

    def remove(self, key: int) -> None:
        old = self.docs.pop(key, None)
        if old is None:
            return
        for term in set(old):
            self.df[term] -= 1
            if self.df[term] <= 0:
                del self.df[term]
        self.total_len -= len(old)
        if key in self._delta_docs:
            self._delta_docs.discard(key)
            self._delta_len.pop(key, None)
            for term in set(old):
                post = self._delta_post.get(term)
                if post is not None:
                    post.pop(key, None)
                    if not post:
                        del self._delta_post[term]
        pos = int(self._main_pos[key]) if 0 <= key < len(self._main_pos) else -1
        if pos >= 0 and self._main_alive[pos]:
            self._main_alive[pos] = False
            self._main_dead += 1

    def _pending(self) -> int:
        return len(self._delta_docs) + self._main_dead

    def _maybe_merge(self) -> None:
        if self._pending() > max(self.min_merge, self.merge_ratio * len(self.docs)):
            self._rebuild_main()

    def _rebuild_main(self) -> None:
        keys = list(self.docs)
        self._delta_post = {}
        self._delta_docs = set()
        self._delta_len = {}
        self._main_keys = np.asarray(keys, dtype=np.int64)
        self._main_pos = _positions(self._main_keys)
        self._main_alive = np.ones(len(keys), dtype=bool)
        self._main_dead = 0
        self._main_len = np.asarray([len(self.docs[k]) for k in keys], dtype=np.float64)
        self._main_len_b = B * self._main_len
        self._main_avgdl = self.avgdl
        self.rebuilds += 1
        if not keys:
            self._main = None
            return
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(t, len(vocab)) for t in self.docs[k]] for k in keys]
        if not vocab:
            self._main = None
            return
        retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
        self._main_tf = self._recover_tf(retriever, {t: self.idf(t) for t in vocab})
        self._main = retriever

    def _recover_tf(self, main: bm25s.BM25, idf: dict[str, float]) -> np.ndarray:
        """Every posting's term frequency, from the score bm25s stored for it with this main's
        build-time idf and avgdl: ``tf / (tf + norm)`` (× idf) solved for tf. The stored scores
        are then dropped (a query rescores each posting with the current statistics)."""
        sc = main.scores
        data, indices, indptr = sc.pop("data"), sc["indices"], sc["indptr"]
        n_cols = len(indptr) - 1
        idf_col = np.ones(n_cols, dtype=np.float64)
        for t, i in main.vocab_dict.items():
            if i < n_cols and t in idf:
                idf_col[i] = idf[t]
        x = data.astype(np.float64) / np.repeat(idf_col, np.diff(indptr))
        dl = self._main_len[indices]
        norm_then = K1 * (1 - B + B * dl / self._main_avgdl)
        return np.rint(x * norm_then / (1.0 - x)).astype(np.float32)

    # ---- a persisted index (core.recall.index: saved at close, restored at open) --------------
    def state(self) -> dict[str, np.ndarray]:
        """The built main, its statistics and the document frequencies as arrays — what
        :meth:`restore` needs besides the documents (which the store holds)."""
        main = self._main
        terms = [""] * (len(main.vocab_dict) if main is not None else 0)
        if main is not None:
            for t, i in main.vocab_dict.items():
                terms[i] = t
        sc = main.scores if main is not None else None
        return {
            "lex_terms": _pack(terms),
            "lex_tf": self._main_tf if sc else np.zeros(0, np.float32),
            "lex_indices": sc["indices"] if sc else np.zeros(0, np.int32),
            "lex_indptr": sc["indptr"] if sc else np.zeros(1, np.int64),
            "lex_keys": self._main_keys,
            "lex_alive": self._main_alive,
            "lex_len": self._main_len,
            "lex_stats": np.asarray(
                [self._main_avgdl, 1.0 if main is not None else 0.0, sc["num_docs"] if sc else 0],
                np.float64,
            ),
            "df_terms": _pack(list(self.df)),
            "df_counts": np.fromiter(self.df.values(), np.int64, len(self.df)),
        }

    def docs_state(self, keys: np.ndarray) -> dict[str, np.ndarray]:
        """The documents of ``keys`` (every live one) as indexes into the document-frequency
        terms of :meth:`state` — what :meth:`restore_with_docs` reads back."""
        index = {t: i for i, t in enumerate(self.df)}  # the order of state()'s df_terms
        docs = [self.docs[k] for k in keys.tolist()]
        lens = np.fromiter((len(d) for d in docs), np.int64, len(docs))
        offsets = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        terms = np.fromiter((index[t] for d in docs for t in d), np.int32, int(offsets[-1]))
        return {"doc_terms": terms, "doc_offsets": offsets}

    def restore_with_docs(self, keys: np.ndarray, st: dict[str, np.ndarray]) -> None:
        """:meth:`restore` with the documents of :meth:`docs_state` (their words are shared
        with the document frequencies: one string per distinct stem)."""
        words = _unpack(st["df_terms"])
        terms, offsets = st["doc_terms"], st["doc_offsets"]
        if not (
            len(offsets) == len(keys) + 1
            and (len(offsets) == 0 or int(offsets[0]) == 0)
            and int(offsets[-1]) == len(terms)
            and bool(np.all(np.diff(offsets) >= 0))
            and (len(terms) == 0 or 0 <= int(terms.min()) <= int(terms.max()) < len(words))
        ):
            raise ValueError("persisted documents are inconsistent")
        vocab = np.empty(len(words), dtype=object)
        vocab[:] = words
        docs = PackedDocs(keys.astype(np.int64), terms, offsets, vocab)
        self.restore(docs, st, df_words=words, doc_lens=(keys, np.diff(offsets)))

    def restore(
        self,
        docs: MutableMapping[int, list[str]],
        st: dict[str, np.ndarray],
        df_words: list[str] | None = None,
        doc_lens: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Take back a :meth:`state` saved over exactly these documents: the main as it was,
        every document it does not hold alive goes to the delta. Raises ValueError on anything
        inconsistent (the caller then rebuilds)."""
        terms = _unpack(st["lex_terms"])
        tf, indices, indptr = st["lex_tf"], st["lex_indices"], st["lex_indptr"]
        keys = st["lex_keys"].astype(np.int64)
        alive = st["lex_alive"].astype(bool)
        lens = st["lex_len"].astype(np.float64)
        avgdl, has_main, num_docs = (float(x) for x in st["lex_stats"])
        df_terms = df_words if df_words is not None else _unpack(st["df_terms"])
        df_counts = st["df_counts"]
        n_cols = len(indptr) - 1  # bm25s names one more term ("") than it has columns for
        if not (
            0 <= n_cols <= len(terms)
            and len(tf) == len(indices) == int(indptr[-1])
            and len(keys) == len(alive) == len(lens)
            and len(df_terms) == len(df_counts)
            and int(num_docs) == len(keys)
            and (len(indices) == 0 or 0 <= int(indices.min()) <= int(indices.max()) < len(keys))
            and bool(np.all(np.diff(indptr) >= 0))
        ):
            raise ValueError("persisted lexical index is inconsistent")
        live_main = keys[alive]
        if doc_lens is None:
            doc_keys = np.fromiter(docs, np.int64, len(docs))
            doc_len = np.fromiter((len(d) for d in docs.values()), np.int64, len(docs))
        else:
            doc_keys, doc_len = doc_lens
        order = np.argsort(doc_keys, kind="stable")
        at = np.searchsorted(doc_keys, live_main, sorter=order)
        at = order[np.minimum(at, len(order) - 1)] if len(order) else at
        if len(live_main) and (
            len(order) == 0
            or not np.array_equal(doc_keys[at], live_main)
            or not np.array_equal(doc_len[at], lens[alive])
        ):
            raise ValueError("persisted lexical index does not match the documents")
        live_main = live_main.tolist()
        self.docs = docs
        self.df = Counter(dict(zip(df_terms, df_counts.tolist(), strict=True)))
        self.total_len = (
            int(doc_lens[1].sum()) if doc_lens is not None else sum(len(s) for s in docs.values())
        )
        self._main_keys, self._main_alive, self._main_len = keys, alive, lens
        self._main_len_b = B * lens
        self._main_dead = len(alive) - int(np.count_nonzero(alive))
        self._main_pos = _positions(keys)
        self._main_avgdl = avgdl
        self._main = None
        self._main_tf = tf.astype(np.float32, copy=False)
        if has_main:
            main = bm25s.BM25(k1=K1, b=B, method="lucene")
            main.scores = {"indices": indices, "indptr": indptr, "num_docs": int(num_docs)}
            main.vocab_dict = {t: i for i, t in enumerate(terms) if i < n_cols}
            self._main = main
        self._delta_post = {}
        self._delta_docs = set()
        self._delta_len = {}
        for key in np.setdiff1d(doc_keys, np.asarray(live_main, np.int64)).tolist():
            self._delta_docs.add(key)
            doc = docs[key]
            self._delta_len[key] = len(doc)
            for term, n in Counter(doc).items():
                self._delta_post.setdefault(term, {})[key] = n

    # ---- queries ----------------------------------------------------------------------------
    def ceiling(self, query_stems: list[str]) -> float:
        """The BM25 score of a full match: an average-length document holding each query stem
        once. Unknown stems count with the idf of a term seen in no document, so a query that
        is mostly unknown words cannot reach full relevance through its one known word."""
        n = len(self.docs)
        unseen = math.log(1 + (n + 0.5) / 0.5)
        return sum(self.idf(t) if t in self.df else unseen for t in query_stems) / (1 + K1)

    def scores(self, query_stems: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Raw BM25 of every document sharing a stem with the query: (keys, scores)."""
        terms = [t for t in query_stems if t in self.df]
        if not terms:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        out_keys: list[np.ndarray] = []
        out_scores: list[np.ndarray] = []
        if self._main is not None:
            # Each posting of the query's terms (read straight from bm25s's sparse columns:
            # O(postings), not O(N)) is scored with its term frequency and the *current* idf
            # and avgdl (the delta's formula), so a result never depends on when the main was
            # last built; all terms at once, one vectorised pass.
            sc = self._main.scores
            indptr, indices = sc["indptr"], sc["indices"]
            vocab = self._main.vocab_dict
            spans: list[tuple[int, int]] = []
            idfs: list[float] = []
            for t in terms:
                tid = vocab.get(t)
                if tid is None:
                    continue
                lo, hi = int(indptr[tid]), int(indptr[tid + 1])
                if lo < hi:
                    spans.append((lo, hi))
                    idfs.append(self.idf(t))
            if spans:
                if len(spans) == 1:
                    lo, hi = spans[0]
                    pos, tf = indices[lo:hi], self._main_tf[lo:hi].astype(np.float64)
                else:
                    pos = np.concatenate([indices[lo:hi] for lo, hi in spans])
                    tf = np.concatenate([self._main_tf[lo:hi] for lo, hi in spans]).astype(
                        np.float64
                    )
                den = K1 * (1 - B + self._main_len_b[pos] / self.avgdl) + tf
                # idf × tf, term by term in place (the numerator of idf·tf / (norm + tf))
                at = 0
                for (lo, hi), w in zip(spans, idfs, strict=True):
                    tf[at : at + hi - lo] *= w
                    at += hi - lo
                val = np.divide(tf, den, out=tf)
                # a document's score sums its terms' (bincount adds in input order); its
                # documents in main order, as a dense pass or, for few postings, a sort
                n_main = len(self._main_keys)
                if len(pos) * 16 < n_main:
                    order = np.argsort(pos, kind="stable")
                    ordered = pos[order]
                    first = np.empty(len(pos), dtype=bool)
                    first[0] = True
                    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
                    group = np.cumsum(first) - 1
                    inv = np.empty(len(pos), dtype=np.intp)
                    inv[order] = group
                    uniq = ordered[first]
                    acc = np.bincount(inv, weights=val, minlength=len(uniq))
                    hit = (
                        np.flatnonzero(self._main_alive[uniq])
                        if self._main_dead
                        else np.arange(len(uniq))
                    )
                    out_keys.append(self._main_keys[uniq[hit]])
                else:
                    acc = np.bincount(pos, weights=val, minlength=n_main)
                    # the documents with a score (every posting scores > 0): the postings'
                    # distinct positions, sorted — a sort of the postings is much cheaper than
                    # a scan of every document's score at 100k
                    hit = np.sort(pos)
                    if len(hit) > 1:
                        hit = hit[np.concatenate(([True], hit[1:] != hit[:-1]))]
                    if self._main_dead:
                        hit = hit[self._main_alive[hit]]
                    out_keys.append(self._main_keys[hit])
                out_scores.append(acc[hit].astype(np.float32))
        if self._delta_docs:
            avgdl, lengths = self.avgdl, self._delta_len
            delta: dict[int, float] = {}
            for t in terms:
                post = self._delta_post.get(t)
                if not post:
                    continue
                idf = self.idf(t)
                for key, n in post.items():
                    norm = K1 * (1 - B + B * lengths[key] / avgdl)
                    delta[key] = delta.get(key, 0.0) + idf * n / (norm + n)
            if delta:
                out_keys.append(np.fromiter(delta.keys(), dtype=np.int64, count=len(delta)))
                out_scores.append(np.fromiter(delta.values(), dtype=np.float32, count=len(delta)))
        if not out_keys:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return np.concatenate(out_keys), np.concatenate(out_scores)

    def relevance(
        self, query_stems: list[str], scored: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """BM25 normalised by the query's ceiling, in 0..1: (keys, relevance); ``scored``: the
        query's :meth:`scores`, when the caller has them already."""
        keys, raw = self.scores(query_stems) if scored is None else scored
        ceiling = self.ceiling(query_stems)
        if ceiling <= 0 or len(keys) == 0:
            return keys, raw
        return keys, np.clip(raw / ceiling, 0.0, 1.0)


class PackedDocs(MutableMapping):
    """Documents as a persisted index holds them — each a run of numbers into one array of
    words — made into a list of stems only when one is asked for. Making 100k lists at open
    took 0.44 s and ~25 MB; most are never asked for (a query reads the postings; a save's
    dedup reads its 50 best candidates, 3 µs each). Documents set or removed afterwards live in
    a plain dict beside them. A list asked for is made anew and not kept: reading every
    document (bench.scale's bare BM25 floor, a store-wide comparison) leaves none behind."""

    def __init__(
        self, keys: np.ndarray, terms: np.ndarray, offsets: np.ndarray, words: np.ndarray
    ) -> None:
        self._keys, self._terms, self._offsets, self._words = keys, terms, offsets, words
        self._at = _positions(keys)  # by key: its run, -1 once set again or removed
        self._packed = len(keys)
        self._set: dict[int, list[str]] = {}

    def _run(self, key: int | np.integer) -> int:
        return int(self._at[key]) if 0 <= key < len(self._at) else -1

    def __getitem__(self, key: int) -> list[str]:
        doc = self._set.get(key)
        if doc is not None:
            return doc
        p = self._run(key)
        if p < 0:
            raise KeyError(key)
        return self._words[self._terms[self._offsets[p] : self._offsets[p + 1]]].tolist()

    def __contains__(self, key: object) -> bool:
        return key in self._set or (isinstance(key, int | np.integer) and self._run(key) >= 0)

    def __setitem__(self, key: int, doc: list[str]) -> None:
        self._unpack(key)
        self._set[key] = doc

    def __delitem__(self, key: int) -> None:
        if key in self._set:
            del self._set[key]
        elif not self._unpack(key):
            raise KeyError(key)

    def _unpack(self, key: int) -> bool:
        if self._run(key) < 0:
            return False
        self._at[key] = -1
        self._packed -= 1
        return True

    def __len__(self) -> int:
        return self._packed + len(self._set)

    def __iter__(self) -> Iterator[int]:
        yield from self._keys[self._at[self._keys] >= 0].tolist()
        yield from list(self._set)


def _positions(keys: np.ndarray) -> np.ndarray:
    """Position of each key in ``keys``, indexed by key (-1 where there is none)."""
    if len(keys) and not 0 <= int(keys.min()) <= int(keys.max()) < 2**31:
        raise ValueError("keys are record ids: from 0 to 2^31")
    pos = np.full(int(keys.max()) + 1 if len(keys) else 0, -1, dtype=np.int32)
    pos[keys] = np.arange(len(keys), dtype=np.int32)
    return pos


def _pack(words: list[str]) -> np.ndarray:
    """Words (stems: no whitespace) as one array of UTF-8 bytes, newline-separated."""
    return (
        np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8).copy()
        if words
        else np.zeros(0, np.uint8)
    )


def _unpack(packed: np.ndarray) -> list[str]:
    return packed.tobytes().decode("utf-8").split("\n") if len(packed) else []
