"""Lexical relevance: bm25s main + delta, kept in step with the store, normalised per query
(SPEC §4)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from core import OWNER_TRUSTED, Actor, Memory, MemoryConfig, text
from core.recall.file import snapshot_path
from core.recall.lexical import LexicalIndex
from tests.fakes import reference_bm25

WORDS = [
    "cat",
    "dog",
    "tea",
    "coffee",
    "kazan",
    "moscow",
    "sister",
    "brother",
    "garden",
    "tomato",
    "bicycle",
    "piano",
    "guitar",
    "doctor",
    "dentist",
    "friday",
    "monday",
    "birthday",
    "anna",
    "boris",
    "murka",
    "rex",
    "green",
    "black",
    "morning",
    "evening",
    "train",
    "flight",
    "hotel",
    "pizza",
    "soup",
    "violin",
]


def _corpus(n: int, seed: int = 7) -> dict[int, list[str]]:
    rng = random.Random(seed)
    return {
        k: text.stems(" ".join(rng.choices(WORDS, k=rng.randint(2, 9)))) for k in range(1, n + 1)
    }


def _as_dict(keys, values) -> dict[int, float]:
    return {int(k): float(v) for k, v in zip(keys, values, strict=True)}


def _assert_same(a: dict[int, float], b: dict[int, float], rel: float = 1e-5) -> None:
    assert set(a) == set(b)
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=rel, abs=1e-6), k


def _docs_of(mem: Memory) -> dict[int, list[str]]:
    return {r.id: text.stems(r.content) for r in mem.list(limit=10_000)}


QUERIES = [
    "cat tea",
    "kazan sister anna",
    "green tea morning",
    "dentist friday",
    "piano",
    "murka rex dog cat",
    "unknownword tea",
]


# ---------------------------------------------------------------------------------------------
# main + delta stay in step with the store


def test_scores_equal_reference_bm25_in_the_main_and_in_the_delta():
    """SPEC §4: BM25 (bm25s, lucene) over stems — the same numbers whichever part holds a doc."""
    docs = _corpus(60)
    main_only = LexicalIndex()
    main_only.bulk_load(list(docs.items()))
    delta_only = LexicalIndex()
    for k, s in docs.items():
        delta_only.upsert(k, s)
    assert main_only._main is not None and not main_only._delta_docs
    assert delta_only._main is None and len(delta_only._delta_docs) == 60
    for q in QUERIES:
        qs = text.stems(q)
        ref = reference_bm25(docs, qs)
        _assert_same(_as_dict(*main_only.scores(qs)), ref)
        _assert_same(_as_dict(*delta_only.scores(qs)), ref)


def test_the_main_keeps_term_frequencies_and_rescores_them_per_query():
    """SPEC §4: the main keeps each posting's term frequency (not bm25s's scores of its build)
    and a query rescores its postings with the current statistics — the reference BM25 whether
    a query's postings are few (summed through a sort) or many (summed densely)."""
    from collections import Counter

    docs = _corpus(400)
    docs[401] = text.stems("zebra zebra tea")  # a rare word, twice in one document
    docs[402] = text.stems("zebra cat")
    idx = LexicalIndex()
    idx.bulk_load(list(docs.items()))
    sc, vocab, keys = idx._main.scores, idx._main.vocab_dict, idx._main_keys
    assert "data" not in sc
    for term, col in vocab.items():
        if col >= len(sc["indptr"]) - 1:
            continue  # bm25s names one more term ("") than it has columns for
        lo, hi = int(sc["indptr"][col]), int(sc["indptr"][col + 1])
        for pos, tf in zip(sc["indices"][lo:hi], idx._main_tf[lo:hi], strict=True):
            assert tf == Counter(docs[int(keys[pos])])[term]
    idx.upsert(403, text.stems("zebra tea garden"))  # the statistics move after the build
    docs[403] = text.stems("zebra tea garden")
    for q in ("zebra", "zebra tea", "tea cat dog", "zebra unknownword"):
        qs = text.stems(q)
        _assert_same(_as_dict(*idx.scores(qs)), reference_bm25(docs, qs))


def test_main_positions_are_an_array_by_record_id():
    """Issue 11 (100k records in ≤ 600 MB): the main finds a document's position through an
    array indexed by key (4 bytes a record, not a dict of ints); removing a main document and
    adding it back (to the delta) scores it as the reference does."""
    docs = _corpus(3000)
    idx = LexicalIndex()
    idx.bulk_load(list(docs.items()))
    assert isinstance(idx._main_pos, np.ndarray) and idx._main_pos.nbytes <= 4 * 3001
    idx.remove(5)
    idx.remove(5)
    idx.remove(10**6)  # never there
    assert idx._main_dead == 1  # counted, not recounted over the whole main at every write
    docs[5] = text.stems("violin violin tea")
    idx.upsert(5, docs[5])
    for q in ("violin", "tea cat"):
        qs = text.stems(q)
        _assert_same(_as_dict(*idx.scores(qs)), reference_bm25(docs, qs))


def test_delta_merges_lazily_not_per_write():
    """SPEC §4 (index kept in step cheaply): writes go to the delta; the main is rebuilt only
    when the delta outgrows its threshold, not on every write."""
    idx = LexicalIndex(min_merge=10, merge_ratio=0.05)
    idx.bulk_load([])
    start = idx.rebuilds
    docs = _corpus(100)
    for k, s in docs.items():
        idx.upsert(k, s)
    merges = idx.rebuilds - start
    assert 1 <= merges <= 100 // 10  # merged, but far from once per write
    assert len(idx._delta_docs) <= 10


def test_memory_writes_do_not_rebuild_the_main_index(mem):
    """SPEC §4: save/update/forget/restore cost O(their own tokens) — no rebuild per write."""
    before = mem._index.lexical.rebuilds
    ids = [
        mem.save(f"note {i}: {w} and {WORDS[(i * 7) % len(WORDS)]}", OWNER_TRUSTED).id
        for i, w in enumerate(WORDS)
    ]
    mem.update(ids[0], OWNER_TRUSTED, content="a completely new wording about violins")
    mem.forget(ids[1], "outdated", OWNER_TRUSTED)
    mem.restore(ids[1])
    mem.search("violin", OWNER_TRUSTED)
    assert mem._index.lexical.rebuilds == before


def test_results_identical_before_and_after_a_merge():
    """SPEC §4: a merge of the delta into the main changes no score (within float tolerance),
    also after documents were added, changed and removed since the main was built."""
    docs = _corpus(40)
    idx = LexicalIndex()
    idx.bulk_load(list(docs.items()))
    rng = random.Random(3)
    for k in range(41, 71):  # added after the main was built
        docs[k] = text.stems(" ".join(rng.choices(WORDS, k=rng.randint(2, 9))))
        idx.upsert(k, docs[k])
    for k in (2, 5, 9, 11, 17):  # changed
        docs[k] = text.stems(" ".join(rng.choices(WORDS, k=rng.randint(2, 9))))
        idx.upsert(k, docs[k])
    for k in (3, 4, 20, 45):  # removed from the main and from the delta
        docs.pop(k)
        idx.remove(k)
    before = {q: _as_dict(*idx.relevance(text.stems(q))) for q in QUERIES}
    raw_before = {q: _as_dict(*idx.scores(text.stems(q))) for q in QUERIES}
    rebuilds = idx.rebuilds
    idx._rebuild_main()
    assert idx.rebuilds == rebuilds + 1 and not idx._delta_docs
    for q in QUERIES:
        _assert_same(_as_dict(*idx.relevance(text.stems(q))), before[q])
        _assert_same(raw_before[q], reference_bm25(docs, text.stems(q)))


def test_relevance_does_not_depend_on_when_the_store_was_opened(tmp_path, clock):
    """SPEC §4: records loaded into the main at start-up and records saved since (in the delta)
    are scored with the same, current statistics — reopening the store changes nothing."""
    path = tmp_path / "m.db"
    with Memory.open(path, MemoryConfig(), clock) as m:
        m.save("The owner's cat is called Murka", OWNER_TRUSTED)
        m.save("The owner drinks green tea every morning, green tea only", OWNER_TRUSTED)
    snapshot_path(path).unlink()  # rebuilt from the rows at open, not read back as it was
    with Memory.open(path, MemoryConfig(), clock) as m:
        assert m._index.lexical._main is not None
        for i in range(20):
            m.save(f"Note {i} about gardening: tomatoes and cucumbers, bed {i}", OWNER_TRUSTED)
        docs = _docs_of(m)
        q = "what green tea does the owner drink"
        live = {h.id: h.relevance for h in m.recall(q, OWNER_TRUSTED)}
        raw = _as_dict(*m._index.lexical.scores(text.stems(q)))
    snapshot_path(path).unlink()
    with Memory.open(path, MemoryConfig(), clock) as m:  # everything in the main now
        assert m._index.loaded_from == "store" and not m._index.lexical._delta_docs
        reopened = {h.id: h.relevance for h in m.recall(q, OWNER_TRUSTED)}
    _assert_same(live, reopened)
    _assert_same(raw, reference_bm25(docs, text.stems(q)))


def test_save_is_searchable_immediately(mem):
    """SPEC §4: the index is in step with the store — a save is found by the next query."""
    rid = mem.save("The owner's cat is called Murka", OWNER_TRUSTED).id
    assert [h.id for h in mem.recall("Murka", OWNER_TRUSTED)] == [rid]


def test_update_is_reflected_immediately(mem):
    """SPEC §4: after memory_update the old words no longer match and the new ones do."""
    rid = mem.save("The owner's cat is called Murka", OWNER_TRUSTED).id
    mem.update(rid, OWNER_TRUSTED, content="The owner's dog is called Rex")
    assert mem.recall("Murka", OWNER_TRUSTED) == []
    assert [h.id for h in mem.recall("Rex", OWNER_TRUSTED)] == [rid]


def test_forget_and_restore_are_reflected_immediately(mem):
    """SPEC §2, §4: a forgotten record leaves search at once; a restored one comes back."""
    rid = mem.save("The owner's cat is called Murka", OWNER_TRUSTED).id
    mem.forget(rid, "the cat was given away", OWNER_TRUSTED)
    assert mem.recall("Murka", OWNER_TRUSTED) == []
    mem.restore(rid)
    assert [h.id for h in mem.recall("Murka", OWNER_TRUSTED)] == [rid]


def test_index_in_step_after_writes_on_a_reopened_store(tmp_path, clock):
    """SPEC §4: updates and forgets of records that live in the main (loaded at start-up) hide
    their old text at once."""
    path = tmp_path / "m.db"
    with Memory.open(path, MemoryConfig(), clock) as m:
        a = m.save("The owner's cat is called Murka", OWNER_TRUSTED).id
        b = m.save("The owner plays the violin on Sundays", OWNER_TRUSTED).id
    with Memory.open(path, MemoryConfig(), clock) as m:
        m.update(a, OWNER_TRUSTED, content="The owner's parrot is called Kesha")
        m.forget(b, "stopped playing", OWNER_TRUSTED)
        assert m.recall("Murka", OWNER_TRUSTED) == []
        assert m.recall("violin", OWNER_TRUSTED) == []
        assert [h.id for h in m.recall("parrot Kesha", OWNER_TRUSTED)] == [a]


def test_owner_edits_are_indexed_like_model_edits(mem):
    """SPEC §4: every writer (model, owner) keeps the index in step."""
    rid = mem.save("Owner likes jazz", OWNER_TRUSTED, actor=Actor.OWNER).id
    mem.update(rid, OWNER_TRUSTED, content="Owner likes baroque music", actor=Actor.OWNER)
    assert mem.recall("jazz", OWNER_TRUSTED) == []
    assert [h.id for h in mem.recall("baroque", OWNER_TRUSTED)] == [rid]


# ---------------------------------------------------------------------------------------------
# normalisation


def _store(mem: Memory, contents: list[str]) -> list[int]:
    return [mem.save(c, OWNER_TRUSTED).id for c in contents]


FILLER = [
    "The owner likes pizza with mushrooms",
    "The owner's brother Boris is a doctor",
    "The owner jogs in the park on weekends",
    "The owner prefers trains to planes",
    "The owner's favourite colour is green",
    "The owner keeps a vegetable garden at the dacha",
]


def test_one_common_shared_word_scores_low_not_full_marks(mem):
    """SPEC §4: normalisation must not give a weak lexical match full marks — a record sharing
    one common word with the query scores low (dividing by the best score would give 1.0)."""
    ids = _store(mem, FILLER)
    q = "what does the owner think about markets in Kazan"
    rel = _as_dict(*mem._index.lexical.relevance(text.stems(q)))
    assert set(rel) == set(ids)  # every record shares just "owner"
    assert max(rel.values()) < 0.3
    hits = mem.recall(q, OWNER_TRUSTED)
    assert all(h.relevance < 0.3 for h in hits)


def test_exact_match_scores_higher_than_partial(mem):
    """SPEC §4: relevance grows with how much of the query a record holds."""
    _store(mem, FILLER)
    exact, partial, weak = _store(
        mem,
        [
            "Kazan markets sell the best chak-chak",
            "Kazan has a big river port",
            "Markets open early in the morning",
        ],
    )
    q = "Kazan markets chak-chak"
    rel = _as_dict(*mem._index.lexical.relevance(text.stems(q)))
    assert rel[exact] > rel[partial] > 0
    assert rel[exact] > rel[weak] > 0
    assert rel[exact] >= 0.8  # all the query's words are there
    assert all(0.0 <= v <= 1.0 for v in rel.values())
    hits = mem.recall(q, OWNER_TRUSTED)
    assert hits[0].id == exact


def test_relevance_is_between_zero_and_one_even_with_repeats(mem):
    """SPEC §4: relevance is normalised to 0..1 (a record repeating a query word is clipped)."""
    _store(mem, FILLER)
    rid = mem.save("tea tea tea tea tea tea tea tea", OWNER_TRUSTED).id
    rel = _as_dict(*mem._index.lexical.relevance(text.stems("tea")))
    assert 0 < rel[rid] <= 1.0


def test_query_of_unknown_words_matches_nothing(mem):
    """SPEC §4: no shared stem, no relevance (and no error)."""
    _store(mem, FILLER)
    keys, rel = mem._index.lexical.relevance(text.stems("xylophone quasar"))
    assert len(keys) == 0 and len(rel) == 0
    assert mem.recall("xylophone quasar", OWNER_TRUSTED) == []


def test_mostly_unknown_query_cannot_reach_full_relevance_through_one_word(mem):
    """SPEC §4: a query whose other words are absent from memory does not make its one known
    word a full match."""
    rid = mem.save("The owner's sister lives in Kazan", OWNER_TRUSTED).id
    _store(mem, FILLER)
    full = _as_dict(*mem._index.lexical.relevance(text.stems("sister Kazan")))[rid]
    partial = _as_dict(*mem._index.lexical.relevance(text.stems("sister quasar xylophone nebula")))[
        rid
    ]
    assert partial < full
    assert partial < 0.5


def test_mixed_language_query_matches_mixed_language_record(mem):
    """SPEC §4: mixed Russian/English text works — each token stemmed by its script."""
    rid = mem.save("Сестра Anna живёт в Казани и работает в bakery", OWNER_TRUSTED).id
    _store(mem, FILLER)
    hits = mem.recall("где живет сестра Anna", OWNER_TRUSTED)
    assert hits and hits[0].id == rid
    hits = mem.recall("Anna's bakeries", OWNER_TRUSTED)
    assert hits and hits[0].id == rid


def test_relevance_array_shapes_agree():
    """SPEC §4 (internal contract): keys and values come in matching, duplicate-free arrays."""
    idx = LexicalIndex()
    docs = _corpus(30)
    idx.bulk_load(list(docs.items())[:20])
    for k, s in list(docs.items())[20:]:
        idx.upsert(k, s)
    keys, rel = idx.relevance(text.stems("cat tea kazan"))
    assert len(keys) == len(rel) == len(np.unique(keys))
