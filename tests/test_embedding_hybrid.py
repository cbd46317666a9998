"""Hybrid recall with embeddings (SPEC §4, §6), on the deterministic fake embedder of
tests/fakes.py: relevance = 0.5 × BM25 + 0.5 × calibrated cosine, the stored background, vectors
of one model only, best effort when the model fails, batched backfill with progress."""

from __future__ import annotations

import numpy as np
import pytest

from core import OWNER_TRUSTED, Memory, MemoryConfig, text
from core.embedding import calibrated
from tests.fakes import (
    FailingEmbedder,
    FlakyEmbedder,
    HashEmbedder,
    TwoPartEmbedder,
    reference_bm25,
)

SYN = {text.stem_token(w): "cat" for w in ("kitten", "feline", "котенок")}  # stem → stem

CONTENTS = [
    "The owner's cat is called Murka",
    "Murka the cat sleeps on the radiator",
    "The owner drinks green tea every morning",
    "The owner's brother Boris is a doctor",
    "The owner keeps a vegetable garden at the dacha",
]


def _open(tmp_path, clock, embedder=None, name: str = "m.db", **cfg) -> Memory:
    model = embedder.name if embedder is not None else None
    return Memory.open(tmp_path / name, MemoryConfig(embedding_model=model, **cfg), clock, embedder)


def _lexical(mem: Memory, query: str, rid: int) -> float:
    docs = {r.id: text.stems(r.content) for r in mem.list(limit=10_000)}
    raw = reference_bm25(docs, text.stems(query)).get(rid, 0.0)
    return min(1.0, raw / mem._index.lexical.ceiling(text.stems(query)))


def _semantic(emb: HashEmbedder, query: str, content: str, b: float) -> float:
    cos = float(np.dot(emb.vector(query), emb.vector(content)))
    return max(0.0, min(1.0, (cos - b) / (1 - b)))


def test_relevance_is_half_bm25_half_calibrated_cosine(tmp_path, clock):
    """SPEC §4: relevance = 0.5 × BM25 + 0.5 × semantic, semantic = clamp((cos − b)/(1 − b),
    0, 1) with the default background b = 0.4; the rest of the score is as in §4."""
    emb = HashEmbedder(synonyms=SYN)
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    ids = {c: mem.save(c).id for c in CONTENTS}
    q = "what is the cat called"
    hits = {h.id: h for h in mem.recall(q, OWNER_TRUSTED)}
    assert hits
    for content, rid in ids.items():
        sem = _semantic(emb, q, content, 0.4)
        lex = _lexical(mem, q, rid)
        if rid not in hits:
            assert sem == 0 and lex == 0
            continue
        h = hits[rid]
        assert h.semantic == pytest.approx(sem, abs=1e-6)
        assert h.lexical == pytest.approx(lex, rel=1e-5, abs=1e-7)
        assert h.relevance == pytest.approx(0.5 * lex + 0.5 * sem, rel=1e-5, abs=1e-7)
        assert h.score == pytest.approx(h.relevance, rel=1e-9)  # fresh, importance 3, n = 0
    top = hits[ids["The owner's cat is called Murka"]]
    assert top.semantic > 0 and top.lexical > 0
    mem.close()


def test_semantic_match_alone_counts_half(tmp_path, clock):
    """SPEC §4: a record that shares no word with the query but means the same is found by the
    vector half alone."""
    emb = HashEmbedder(synonyms=SYN)
    mem = _open(tmp_path, clock, emb)
    rid = mem.save("The owner adopted a kitten").id
    mem.save("The owner drinks green tea every morning")
    (h,) = [h for h in mem.recall("cat", OWNER_TRUSTED) if h.id == rid]
    assert h.lexical == 0 and h.semantic > 0
    assert h.relevance == pytest.approx(0.5 * h.semantic)
    assert h.semantic == pytest.approx(_semantic(emb, "cat", "The owner adopted a kitten", 0.4))
    # across languages too: a Russian question finds the English record by meaning
    assert rid in [h.id for h in mem.recall("котёнок", OWNER_TRUSTED)]
    mem.close()


def test_a_record_in_the_other_language_keeps_its_whole_semantic_score(tmp_path, clock):
    """SPEC §4 (hybrid never worse than its cosine half across Russian/English): a Russian record
    cannot share a word with an English question, so BM25's silence must not halve it — it keeps
    its whole calibrated cosine, while a same-language record without shared words still counts
    half. Without this, "Which city do I live in?" ranked "Живу в Новосибирске" under any
    English record that merely shared "live"."""
    city = text.stem_token("city")
    syn = {**SYN, text.stem_token("город"): city, text.stem_token("новосибирске"): city}
    emb = HashEmbedder(synonyms=syn)
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    ru = mem.save("Новосибирске, город").id
    en = mem.save("The owner adopted a kitten").id
    hits = {h.id: h for h in mem.recall("which city", OWNER_TRUSTED)}
    assert hits[ru].lexical == 0 and hits[ru].semantic > 0
    assert hits[ru].relevance == pytest.approx(hits[ru].semantic)
    same = {h.id: h for h in mem.recall("a feline", OWNER_TRUSTED)}[en]
    # BM25's weight (0.5) times the squared share of the store in the query's language (1 of 2)
    w = 0.5 * 0.5**2
    assert same.lexical == 0 and same.relevance == pytest.approx((1 - w) * same.semantic)
    mem.close()


def test_a_record_in_the_other_language_is_calibrated_against_a_lower_background(tmp_path, clock):
    """Issue 11 (cross-language recall): an embedder's declared ``cross_language_offset`` lowers
    its background b for records in another language than the query only — related pairs
    across languages share no surface and sit lower. A same-language record keeps the plain b."""
    city = text.stem_token("city")
    syn = {**SYN, text.stem_token("город"): city, text.stem_token("новосибирске"): city}
    emb = HashEmbedder(synonyms=syn)
    emb.background = 0.4
    emb.cross_language_offset = 0.25
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    ru = mem.save("Город, квартира, работа, друзья, погода, соседи, метро, парк").id
    en = mem.save("The city owner adopted a kitten near tea garden").id
    q = "which city"
    hits = {h.id: h for h in mem.recall(q, OWNER_TRUSTED)}
    cos_ru = emb.cosine(q, "Город, квартира, работа, друзья, погода, соседи, метро, парк")
    assert 0.15 < cos_ru < 0.4  # below the plain b: without the offset it would count nothing
    assert hits[ru].semantic == pytest.approx((cos_ru - 0.15) / (1 - 0.15), rel=1e-5)
    cos_en = emb.cosine(q, "The city owner adopted a kitten near tea garden")
    assert hits[en].semantic == pytest.approx(max(0.0, (cos_en - 0.4) / (1 - 0.4)), abs=1e-6)
    mem.close()
    emb.cross_language_offset = 0.0
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    assert ru not in {h.id for h in mem.recall(q, OWNER_TRUSTED)}
    mem.close()


def test_the_lexical_weight_is_the_embedders_unless_the_owner_sets_one(tmp_path, clock):
    """SPEC §4: fusion weights are per embedder (declared beside its background b); the owner's
    ``memory.lexical_weight`` overrides the declared one."""
    emb = HashEmbedder(synonyms=SYN)
    emb.lexical_weight = 0.8
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    rid = mem.save("The owner's cat is called Murka").id
    (h,) = [h for h in mem.recall("cat Murka kitten", OWNER_TRUSTED) if h.id == rid]
    assert 0 < h.semantic < 1 and h.lexical > 0
    assert h.relevance == pytest.approx(0.8 * h.lexical + 0.2 * h.semantic, rel=1e-9)
    mem.close()
    mem = _open(tmp_path, clock, emb, lexical_weight=0.3, recall_floor=0.0)
    (h,) = [h for h in mem.recall("cat Murka kitten", OWNER_TRUSTED) if h.id == rid]
    assert h.relevance == pytest.approx(0.3 * h.lexical + 0.7 * h.semantic, rel=1e-9)
    mem.close()


def test_cosine_below_the_background_counts_nothing():
    """SPEC §4: raw cosine would give half the score to "both texts are in Russian"; below the
    background b the semantic part is 0, at 1 it is 1."""
    cos = np.array([-0.2, 0.0, 0.39, 0.4, 0.7, 1.0])
    assert calibrated(cos, 0.4).tolist() == pytest.approx([0, 0, 0, 0, 0.5, 1.0])
    assert calibrated(np.array([0.55]), 0.1)[0] == pytest.approx(0.5)


def test_stored_background_is_used_and_persists(tmp_path, clock):
    """SPEC §4: b must be re-measurable on the owner's corpus — the calibrated value is stored
    per model, used by recall, and survives a restart."""
    emb = HashEmbedder(synonyms=SYN)
    mem = _open(tmp_path, clock, emb)
    rid = mem.save("The owner adopted a kitten").id
    assert mem.status().background == pytest.approx(0.4)
    before = {h.id: h.semantic for h in mem.recall("cat", OWNER_TRUSTED)}[rid]
    mem.set_background(0.1)
    assert mem.status().background == pytest.approx(0.1)
    after = {h.id: h.semantic for h in mem.recall("cat", OWNER_TRUSTED)}[rid]
    cos = emb.cosine("cat", "The owner adopted a kitten")
    assert before == pytest.approx((cos - 0.4) / 0.6, abs=1e-6)
    assert after == pytest.approx((cos - 0.1) / 0.9, abs=1e-6)
    mem.close()
    mem = _open(tmp_path, clock, emb)
    assert mem.status().background == pytest.approx(0.1)
    again = {h.id: h.semantic for h in mem.recall("cat", OWNER_TRUSTED)}[rid]
    assert again == pytest.approx(after)
    mem.close()


def test_background_of_another_model_is_not_used(tmp_path, clock):
    """SPEC §4: b is "the background cosine of the active model" — another model's stays its own."""
    a = HashEmbedder(name="model-a")
    mem = _open(tmp_path, clock, a)
    mem.set_background(0.2)
    mem.close()
    mem = _open(tmp_path, clock, HashEmbedder(name="model-b"))
    assert mem.status().background == pytest.approx(0.4)
    mem.close()


def test_bad_background_is_refused(tmp_path, clock):
    """SPEC §4: b is a cosine below 1 (the formula divides by 1 − b)."""
    from core import MemoryOpError

    mem = _open(tmp_path, clock, HashEmbedder())
    for bad in (1.0, 1.5, -2.0):
        with pytest.raises(MemoryOpError):
            mem.set_background(bad)
    mem.close()
    lexical = _open(tmp_path, clock, None, name="lex.db")
    with pytest.raises(MemoryOpError):
        lexical.set_background(0.3)
    lexical.close()


def test_vectors_of_another_model_are_not_compared(tmp_path, clock):
    """SPEC §6: spaces of different models are not comparable — reopening the store with an
    embedder of another name ignores the old vectors (even of the same dimension) until
    backfill_vectors re-embeds them."""
    a = HashEmbedder(name="model-a", synonyms=SYN)
    mem = _open(tmp_path, clock, a)
    rid = mem.save("The owner adopted a kitten").id
    mem.save("The owner drinks green tea every morning")
    assert mem.status().vectors == 2
    mem.close()

    b = HashEmbedder(name="model-b", synonyms=SYN)
    mem = _open(tmp_path, clock, b)
    st = mem.status()
    assert (st.embedder, st.vectors, st.missing_vectors) == ("model-b", 0, 2)
    assert mem.recall("cat", OWNER_TRUSTED) == []  # model-a's vectors are not compared
    calls = len(b.calls)
    assert mem.backfill_vectors() == 2
    assert len(b.calls) == calls + 1
    st = mem.status()
    assert (st.vectors, st.missing_vectors) == (2, 0)
    (h,) = mem.recall("cat", OWNER_TRUSTED)
    assert h.id == rid and h.semantic > 0
    rows = mem._storage.query("SELECT DISTINCT model FROM vectors")
    assert [r[0] for r in rows] == ["model-b"]
    mem.close()


def test_new_writes_use_the_active_model_alongside_old_vectors(tmp_path, clock):
    """SPEC §6: while old vectors await backfill, cosine is taken only against vectors of the
    active model (a new save of the active model is compared, the old ones are not)."""
    mem = _open(tmp_path, clock, HashEmbedder(name="model-a", synonyms=SYN))
    old = mem.save("The owner adopted a kitten").id
    mem.close()
    mem = _open(tmp_path, clock, HashEmbedder(name="model-b", synonyms=SYN))
    new = mem.save("A feline sleeps on the radiator").id
    hits = {h.id: h for h in mem.recall("cat", OWNER_TRUSTED)}
    assert set(hits) == {new}
    assert old not in hits
    assert mem.status().missing_vectors == 1
    mem.close()


def test_a_failing_embedder_leaves_recall_lexical_and_says_why(tmp_path, clock):
    """SPEC §6: best effort — if the model cannot run, saves and recall still work (lexically),
    status says lexical only and why; nothing fails."""
    broken = FailingEmbedder()
    mem = _open(tmp_path, clock, broken)
    rid = mem.save("The owner's cat is called Murka").id  # no exception
    assert mem.get(rid).vector_model is None
    st = mem.status()
    assert st.lexical_only and st.embedder == "broken-model"
    assert st.error and "model file not found" in st.error and "RuntimeError" in st.error
    assert st.vectors == 0 and st.missing_vectors == 1
    hits = mem.search("Murka")
    assert [h.record.id for h in hits] == [rid] and hits[0].semantic is None
    assert mem.prompt_section("Murka", OWNER_TRUSTED).recalled_ids == (rid,)
    assert mem.backfill_vectors() == 0
    mem.update(rid, OWNER_TRUSTED, content="The owner's cat is called Murka the Second")
    assert mem.status().lexical_only
    mem.close()


def test_an_embedder_failing_at_query_time_falls_back_to_lexical(tmp_path, clock):
    """SPEC §6: vectors exist (of this model) but the model dies — the query is scored
    lexically, and the status reports the error."""
    good = HashEmbedder(name="same-model")
    mem = _open(tmp_path, clock, good)
    rid = mem.save("The owner's cat is called Murka").id
    mem.close()
    broken = FailingEmbedder(name="same-model", dim=good.dim, message="CUDA out of memory")
    mem = _open(tmp_path, clock, broken)
    assert mem.status().vectors == 1 and not mem.status().lexical_only
    (h,) = mem.recall("Murka", OWNER_TRUSTED)
    assert h.id == rid and h.semantic is None and h.relevance == h.lexical
    st = mem.status()
    assert st.lexical_only and "CUDA out of memory" in st.error
    mem.close()


def test_status_without_embedder_is_lexical_only(mem):
    """SPEC §6: no model configured — recall is lexical and the status bar says so."""
    mem.save("The owner's cat is called Murka")
    st = mem.status()
    assert st.lexical_only and st.embedder is None and st.error is None
    assert st.vectors == 0 and st.missing_vectors == 1


def test_backfill_embeds_in_batches_and_reports_progress(tmp_path, clock):
    """SPEC §6: vectors are computed in batches for records that have none, with progress."""
    mem = _open(tmp_path, clock, None)
    for i in range(10):
        mem.save(f"Note {i}: the owner visited city number {i}")
    mem.close()
    emb = HashEmbedder()
    mem = _open(tmp_path, clock, emb)
    assert mem.status().missing_vectors == 10
    progress: list[tuple[int, int]] = []
    done = mem.backfill_vectors(batch=4, progress=lambda d, t: progress.append((d, t)))
    assert done == 10
    assert emb.calls == [4, 4, 2]
    assert progress == [(4, 10), (8, 10), (10, 10)]
    st = mem.status()
    assert (st.vectors, st.missing_vectors, st.error) == (10, 0, None)
    assert mem.backfill_vectors() == 0  # nothing left to do
    assert {r.vector_model for r in mem.list()} == {emb.name}
    mem.close()


def test_backfill_stops_at_a_failure_and_keeps_what_it_did(tmp_path, clock):
    """SPEC §6: best effort — a model dying mid-backfill keeps the batches done, reports the
    error, and the next backfill takes the rest."""
    mem = _open(tmp_path, clock, None)
    for i in range(10):
        mem.save(f"Note {i}: the owner visited city number {i}")
    mem.close()
    flaky = FlakyEmbedder(ok_calls=1)
    mem = _open(tmp_path, clock, flaky)
    assert mem.backfill_vectors(batch=4) == 4
    st = mem.status()
    assert (st.vectors, st.missing_vectors) == (4, 6)
    assert st.lexical_only and "out of memory" in st.error
    assert mem.recall("city", OWNER_TRUSTED)  # still answers
    mem.close()
    mem = _open(tmp_path, clock, HashEmbedder())
    assert mem.backfill_vectors(batch=4) == 6
    assert mem.status().missing_vectors == 0
    mem.close()


def test_update_re_embeds_and_a_failed_re_embed_drops_the_stale_vector(tmp_path, clock):
    """SPEC §6: a vector always belongs to the current content — an edit re-embeds it; when the
    model cannot, the stale vector is dropped rather than left lying."""
    emb = HashEmbedder(name="same-model", synonyms=SYN)
    mem = _open(tmp_path, clock, emb)
    rid = mem.save("The owner drinks green tea").id
    mem.update(rid, OWNER_TRUSTED, content="The owner adopted a kitten")
    (h,) = mem.recall("cat", OWNER_TRUSTED)
    assert h.id == rid and h.semantic > 0
    mem.close()
    mem = _open(tmp_path, clock, FailingEmbedder(name="same-model", dim=emb.dim))
    mem.update(rid, OWNER_TRUSTED, content="The owner adopted a puppy")
    assert mem.get(rid).vector_model is None
    assert mem.status().vectors == 0
    mem.close()


def test_dedup_replacement_re_embeds(tmp_path, clock):
    """SPEC §3.2, §6: a dedup hit with a more detailed wording replaces content and vector."""
    emb = HashEmbedder(synonyms=SYN)
    mem = _open(tmp_path, clock, emb)
    rid = mem.save("meeting at 3 pm").id
    res = mem.save("meeting on Friday at 3 pm")
    assert res.id == rid and res.status == "updated"
    stored = mem._storage.query("SELECT vec FROM vectors WHERE memory_id = ?", (rid,))[0][0]
    assert np.allclose(
        np.frombuffer(stored, dtype=np.float32), emb.vector("meeting on Friday at 3 pm")
    )
    mem.close()


def test_forgotten_records_leave_the_vector_space(tmp_path, clock):
    """SPEC §2, §6: an archived record is not recalled by its vector either."""
    emb = HashEmbedder(synonyms=SYN)
    mem = _open(tmp_path, clock, emb)
    rid = mem.save("The owner adopted a kitten").id
    mem.forget(rid, "given away", OWNER_TRUSTED)
    assert mem.recall("cat", OWNER_TRUSTED) == []
    assert mem.status().vectors == 0
    mem.close()


def test_background_order_calibrated_then_model_declared_then_config(tmp_path, clock):
    """§4: b must be the active model's: a value calibrated on the owner's corpus wins, then the
    b the embedder declares for itself, then the config default."""
    from core import Memory, MemoryConfig
    from tests.fakes import HashEmbedder

    emb = HashEmbedder()
    mem = Memory.open(tmp_path / "b.db", MemoryConfig(background_cosine=0.4), clock, emb)
    assert mem.status().background == 0.4
    emb.background = 0.25
    assert mem.status().background == 0.25
    mem.set_background(0.31)
    assert mem.status().background == 0.31
    mem.close()


def test_the_vector_space_finds_rows_through_an_array_by_record_id():
    """Issue 11 (100k records with vectors in ≤ 600 MB): the vector space finds a record's row
    through an array indexed by record id (4 bytes a record), not a dict of ints (~100 bytes
    a record); set, replace, remove, re-add and a persisted round trip keep it consistent, and
    a persisted space that repeats a record is refused."""
    from core.embedding import VectorSpace

    rng = np.random.default_rng(3)
    space = VectorSpace(8)
    for key in range(1, 20_001):
        space.set(key, rng.standard_normal(8).astype(np.float32))
    assert isinstance(space._pos, np.ndarray) and space._pos.nbytes <= 4 * 26_000
    space.remove(7)
    space.remove(7)  # twice: nothing more
    replaced = rng.standard_normal(8).astype(np.float32)
    space.set(9, replaced)
    space.set(7, replaced)  # re-added: a new row
    assert len(space) == 20_000 and 7 in space and 0 not in space and 30_000 not in space
    # int8 codes (issue 32: 100k records in 600 MB): a byte a dimension and a scale a row,
    # the row back to within a code's half step
    assert space._mat.nbytes + space._scale.nbytes <= (8 + 4) * len(space._keys)
    assert np.allclose(space.get(7), replaced / np.linalg.norm(replaced), atol=0.01)
    assert np.linalg.norm(space.get(7)) == pytest.approx(1.0, abs=1e-5)
    assert space.get(-1) is None and space.get(10**9) is None
    keys, cos = space.cosines(replaced)
    assert sorted(keys.tolist()) == list(range(1, 20_001))
    assert cos[keys == 7][0] == pytest.approx(1.0, abs=1e-3)
    assert cos[keys == 9][0] == pytest.approx(1.0, abs=1e-3)
    st = space.state()
    back = VectorSpace.restore(8, {k: v.copy() for k, v in st.items()})
    assert len(back) == len(space) and np.array_equal(back.get(7), space.get(7))
    assert np.array_equal(np.sort(back.keys()), np.sort(space.keys()))
    st["vec_keys"] = st["vec_keys"].copy()
    st["vec_keys"][1] = st["vec_keys"][2]  # two rows of one record
    with pytest.raises(ValueError):
        VectorSpace.restore(8, st)


def _two_part(**kw) -> TwoPartEmbedder:
    """The English half knows kitten = cat; the multilingual half knows город = city."""
    city = text.stem_token("city")
    multi = HashEmbedder("multi", 256, {text.stem_token("город"): city})
    english = HashEmbedder("english", 128, SYN)
    return TwoPartEmbedder(multi, english, **kw)


def test_an_english_question_and_an_english_record_are_compared_by_the_english_model(
    tmp_path, clock
):
    """Issue 11 (a second embedder for English): with a two-model embedder and an English
    store, an English question meets an English record through the English half — its cosine,
    its background and its BM25 weight (here the English half knows kitten = cat, the
    multilingual one does not). A Russian question never uses the English half."""
    emb = _two_part(english_background=0.2, english_lexical_weight=0.6)
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    en = mem.save("The owner adopted a kitten").id
    mem.save("The owner drinks green tea every morning")
    q = "which feline cat"
    hits = {h.id: h for h in mem.recall(q, OWNER_TRUSTED)}
    cos_en = emb.english.cosine(q, "The owner adopted a kitten")
    assert emb.primary.cosine(q, "The owner adopted a kitten") == 0  # the other half sees nothing
    assert hits[en].semantic == pytest.approx((cos_en - 0.2) / (1 - 0.2), rel=1e-5)
    assert hits[en].relevance == pytest.approx(
        0.6 * hits[en].lexical + 0.4 * hits[en].semantic, rel=1e-5
    )
    assert en not in {h.id for h in mem.recall("котенок кот", OWNER_TRUSTED)}
    mem.close()


def test_in_a_mixed_store_the_english_model_gives_way_to_the_shared_scale(tmp_path, clock):
    """Issue 11: the English model's cosines are on their own scale; where Russian records
    (scored on the multilingual scale) compete, they count share⁴ of the store in English and
    the multilingual half the rest — an English near-miss must not bury a Russian answer.
    Russian records keep the multilingual half whatever the share."""
    emb = _two_part(english_background=0.2, english_lexical_weight=0.6)
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    en = mem.save("The owner adopted a kitten").id
    mem.save("The owner drinks green tea every morning")
    ru = mem.save("Город у моря, квартира").id
    q = "which feline cat"
    hits = {h.id: h for h in mem.recall(q, OWNER_TRUSTED)}
    s = (2 / 3) ** 4
    sem_en = (emb.english.cosine(q, "The owner adopted a kitten") - 0.2) / 0.8
    sem_multi = max(0.0, (emb.primary.cosine(q, "The owner adopted a kitten") - 0.4) / 0.6)
    assert hits[en].semantic == pytest.approx(s * sem_en + (1 - s) * sem_multi, rel=1e-5)
    w = (s * 0.6 + (1 - s) * 0.5) * (2 / 3) ** 2  # blended weights, times the squared share
    assert hits[en].relevance == pytest.approx(
        w * hits[en].lexical + (1 - w) * hits[en].semantic, rel=1e-5
    )
    city = {h.id: h for h in mem.recall("which city", OWNER_TRUSTED)}
    cos_ru = emb.primary.cosine("which city", "Город у моря, квартира")
    assert cos_ru > 0.4 and city[ru].semantic == pytest.approx((cos_ru - 0.4) / 0.6, rel=1e-5)
    mem.close()


def test_clustering_and_calibration_see_the_multilingual_half_only(tmp_path, clock):
    """Sleep's similarity graph and `eva calibrate` keep the multilingual model's cosine (their
    thresholds were measured on it): vector_rows gives that half at unit length, and the
    calibrated b is the median of its random pairs."""
    from core.recall.calibration import PAIRS, calibrate, pair_cosines

    emb = _two_part()
    mem = _open(tmp_path, clock, emb)
    contents = [
        f"{w} memory number {i}"
        for i, w in enumerate(
            ["tea", "garden", "brother", "cat", "radiator", "doctor", "dacha", "morning"] * 5
        )
    ]
    for c in contents:
        mem.save(c)
    ids, rows, _b = mem.vector_rows()
    assert rows.shape[1] == emb.primary.dim
    expected = emb.primary.embed([mem.get(int(i)).content for i in ids])
    assert np.allclose(rows, expected, atol=0.01)  # int8 codes: within a half step
    result = calibrate(mem, apply=False)
    texts = [r.content for r in mem.list(OWNER_TRUSTED, order="id", limit=1000)]
    assert result.background == pytest.approx(
        float(np.median(pair_cosines(emb.primary.embed(texts), PAIRS, 0))), abs=1e-6
    )
    mem.close()


def test_the_english_model_keeps_rows_only_for_english_records(tmp_path, clock):
    """Issue 32 (100k memories in 600 MB; SPEC §4, §6): the English half of a two-model
    embedder is kept — in memory and in the ``vectors`` table — only for records written in
    English, the only ones it is compared for; a record whose wording changes language moves
    between the spaces; the persisted index and a rebuild from the rows hold the same spaces,
    and an English question still meets the English record through the English half."""
    from core.store.records import Actor

    emb = _two_part(english_background=0.2)
    mem = _open(tmp_path, clock, emb, recall_floor=0.0)
    en = mem.save("The owner adopted a kitten").id
    ru = mem.save("Город у моря, квартира").id

    def spaces(m: Memory) -> tuple[set, set, dict]:
        v = m._index.vectors
        dims = {r[0]: r[1] for r in m._storage.query("SELECT memory_id, dim FROM vectors")}
        return set(v.keys().tolist()), set(v.english.keys().tolist()), dims

    assert spaces(mem) == ({en, ru}, {en}, {en: emb.dim, ru: emb.primary.dim})
    mem.update(en, content="Владелец взял котёнка из приюта", actor=Actor.OWNER)
    mem.update(ru, content="The owner lives in a flat by the sea, a kitten too", actor=Actor.OWNER)
    assert spaces(mem) == ({en, ru}, {ru}, {en: emb.primary.dim, ru: emb.dim})
    hit = {h.id: h for h in mem.recall("which feline cat", OWNER_TRUSTED)}[ru]
    cos_en = emb.english.cosine(
        "which feline cat", "The owner lives in a flat by the sea, a kitten too"
    )
    sem_multi = max(
        0.0,
        (
            emb.primary.cosine(
                "which feline cat", "The owner lives in a flat by the sea, a kitten too"
            )
            - 0.4
        )
        / 0.6,
    )
    s = 0.5**4  # half the store is in English
    assert hit.semantic == pytest.approx(s * (cos_en - 0.2) / 0.8 + (1 - s) * sem_multi, rel=1e-5)
    mem.close()
    again = _open(tmp_path, clock, emb)
    assert again._index.loaded_from == "snapshot" and spaces(again)[:2] == ({en, ru}, {ru})
    again._storage.close()
    (tmp_path / "m.db.index").unlink()
    rebuilt = _open(tmp_path, clock, emb)
    assert rebuilt._index.loaded_from == "store" and spaces(rebuilt)[:2] == ({en, ru}, {ru})
    rebuilt._storage.close()


def test_a_store_with_full_rows_for_every_record_is_read_without_re_embedding(tmp_path, clock):
    """Issue 32: a store written before (the whole [multilingual ‖ English] row for every
    record) needs no backfill: a full row of a Russian record counts as its vector, and only
    its multilingual half is kept."""
    from core.recall import vectors as recall_vectors

    emb = _two_part()
    mem = _open(tmp_path, clock, emb)
    ru = mem.save("Город у моря, квартира").id
    with mem._storage.transaction() as conn:  # as the earlier code stored it
        recall_vectors.write(conn, emb, ru, emb.embed(["Город у моря, квартира"])[0], english=True)
    mem._storage.close()
    (tmp_path / "m.db.index").unlink(missing_ok=True)
    again = _open(tmp_path, clock, emb)
    assert again._storage.query("SELECT dim FROM vectors")[0][0] == emb.dim
    assert again.status().missing_vectors == 0 and again.backfill_vectors() == 0
    assert ru in again._index.vectors and len(again._index.vectors.english) == 0
    again.close()
