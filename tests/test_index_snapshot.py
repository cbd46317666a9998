"""The persisted recall index (SPEC §11 crash safety, §4 recall unchanged): a store reopened reads
``<store>.index`` instead of rebuilding, and recalls exactly what a rebuild would; a persisted
index that is stale (written before the last change), corrupt, or another store's is never used,
and an index another connection wrote past is never persisted."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from core import OWNER_TRUSTED, PUBLIC, ManualClock, Memory, MemoryConfig
from core.config import DAY
from core.recall.file import ArrayFile, snapshot_path
from tests.fakes import HashEmbedder, TwoPartEmbedder

TEXTS = [
    "Sister Anna lives in Kazan and works at the bank",
    "Анна любит кофе с корицей по утрам",
    "The owner's dog Rex is afraid of thunder",
    "Встреча с врачом во вторник в 15:00",
    "Owner plays the piano on Sunday evenings",
    "Брат Олег переехал в Новосибирск в 2021 году",
    "The password hint is the name of the first cat",
    "Мама печёт пироги с капустой на выходных",
    "Owner's favourite film is Stalker by Tarkovsky",
    "Отпуск на море в августе, билеты уже куплены",
]
QUERIES = [
    "Anna Kazan",
    "кофе по утрам",
    "dog thunder",
    "врач вторник",
    "piano",
    "Олег",
    "password cat",
    "пироги",
    "film",
    "море август",
    "bank coffee Анна",
]


def _open(path, clock, embedder=None) -> Memory:
    return Memory.open(path, MemoryConfig(), clock, embedder)


def _populate(mem: Memory, clock: ManualClock) -> None:
    for i, t in enumerate(TEXTS):
        clock.advance(DAY)
        mem.save(
            t,
            OWNER_TRUSTED,
            kind="event" if i % 3 == 0 else "fact",
            importance=1 + i % 5,
            private=i % 4 == 1,
        )
    mem.save("Owner's name is Vera", OWNER_TRUSTED, kind="core", importance=5)


def _more_writes(mem: Memory, clock: ManualClock) -> None:
    """Writes that leave the index with a delta, dead main documents and moved columns."""
    clock.advance(DAY)
    mem.save("Anna's birthday is on the 3rd of May", OWNER_TRUSTED)
    mem.search("Anna Kazan", OWNER_TRUSTED)
    first = mem.list(OWNER_TRUSTED, order="id", limit=3)
    mem.update(first[2].id, OWNER_TRUSTED, content="The owner's dog Rex hides from thunder")
    mem.forget(first[1].id, "not true any more", OWNER_TRUSTED)
    mem.pin(first[0].id)


def state(mem: Memory) -> dict:
    """Everything recall answers from, through the public API and the index's own arrays."""
    idx = mem._index
    ids = np.flatnonzero(idx.columns.alive)
    out: dict = {
        "recall": [
            [(h.id, h.score, h.relevance, h.lexical, h.semantic) for h in mem.recall(q, ctx)]
            for q in QUERIES
            for ctx in (OWNER_TRUSTED, PUBLIC)
        ],
        "dup": [
            idx.duplicate(list(idx.lexical.docs[int(i)]), OWNER_TRUSTED, "global") for i in ids
        ],
        "core": mem.prompt_section("", OWNER_TRUSTED).text,
        "docs": dict(idx.lexical.docs),
        "df": dict(idx.lexical.df),
        "total_len": idx.lexical.total_len,
        "status": mem.status(),
    }
    for name in (
        "alive",
        "core",
        "private",
        "pinned",
        "importance",
        "half_life",
        "recalled_at",
        "reinforcements",
        "language",
    ):
        out[name] = getattr(idx.columns, name)[ids].tolist()
    out["scope"] = [idx.columns.scope[i] == idx.columns.scope_code("global") for i in ids]
    if idx.vectors is not None:
        keys, mat = idx.vectors.rows()
        order = np.argsort(keys)
        out["vectors"] = (keys[order].tolist(), mat[order].tobytes())
        if idx.vectors.english is not None:  # a two-model embedder's English space
            keys, mat = idx.vectors.english.rows()
            order = np.argsort(keys)
            out["english_vectors"] = (keys[order].tolist(), mat[order].tobytes())
    return out


def rebuilt_state(path, clock, embedder=None) -> dict:
    """The state of a store opened with no persisted index (a rebuild from the rows)."""
    side = snapshot_path(path)
    keep = side.with_name(side.name + ".keep")
    if side.exists():
        shutil.move(side, keep)
    mem = _open(path, clock, embedder)
    try:
        assert mem._index.loaded_from == "store"
        return state(mem)
    finally:
        mem._storage.close()  # no persisting: leave the file as the test had it
        if keep.exists():
            shutil.move(keep, side)


@pytest.mark.parametrize(
    "embedder",
    [
        None,
        HashEmbedder(),
        TwoPartEmbedder(HashEmbedder("multi", 256), HashEmbedder("english", 128)),
    ],
    ids=["lexical", "vectors", "two-models"],
)
def test_a_reopened_store_reads_its_persisted_index_and_recalls_exactly_as_a_rebuild(
    tmp_path, embedder
):
    """SPEC §4, §11: closing persists the index; opening reads it (no rebuild) and every
    recall, dedup decision, column and vector is the same as a rebuild from the rows gives."""
    path, clock = tmp_path / "m.db", ManualClock(1_780_000_000.0)
    mem = _open(path, clock, embedder)
    _populate(mem, clock)
    mem.close()
    mem = _open(path, clock, embedder)
    _more_writes(mem, clock)
    mem.close()
    assert snapshot_path(path).exists()
    mem = _open(path, clock, embedder)
    try:
        assert mem._index.loaded_from == "snapshot"
        assert len(mem._index.lexical._delta_docs) > 0  # the delta came back too
        got = state(mem)
    finally:
        mem.close()
    assert got == rebuilt_state(path, clock, embedder)


def test_a_stale_persisted_index_is_never_used(tmp_path):
    """SPEC §11: an index persisted before the last change (a crash after the commit, before
    the close that would have written it) is recognised as stale and rebuilt."""
    path, clock = tmp_path / "m.db", ManualClock(1_780_000_000.0)
    emb = HashEmbedder()
    mem = _open(path, clock, emb)
    _populate(mem, clock)
    mem.close()
    old = tmp_path / "old.index"
    shutil.copy(snapshot_path(path), old)
    mem = _open(path, clock, emb)
    _more_writes(mem, clock)
    mem.save("Кошка Мурка спит на подоконнике", OWNER_TRUSTED)
    mem.close()
    shutil.copy(old, snapshot_path(path))  # the persisted index as it was before the writes
    mem = _open(path, clock, emb)
    try:
        assert mem._index.loaded_from == "store"
        got = state(mem)
        assert [h.id for h in mem.recall("Мурка", OWNER_TRUSTED)]  # the new record is found
    finally:
        mem.close()
    assert got == rebuilt_state(path, clock, emb)
    assert _open(path, clock, emb)._index.loaded_from == "snapshot"  # rewritten at that close


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "flipped-postings",
        "flipped-documents",
        "flipped-vectors",
        "garbage",
        "other-store",
    ],
)
def test_a_corrupt_or_foreign_persisted_index_is_rebuilt(tmp_path, damage):
    """SPEC §11: a persisted index that is cut short, has a flipped byte, is not an index at
    all, or belongs to another store at the same generation never gives results: the index is
    rebuilt from the rows."""
    clock = ManualClock(1_780_000_000.0)
    path, other = tmp_path / "m.db", tmp_path / "other.db"
    for p in (path, other):
        mem = _open(p, clock, HashEmbedder())
        _populate(mem, clock)
        if p == other:  # same number of writes, different words
            mem.update(1, OWNER_TRUSTED, content="Совсем другая запись про поезд")
        else:
            mem.update(1, OWNER_TRUSTED, content="Sister Anna lives in Kazan, near the river")
        mem.close()
    side = snapshot_path(path)
    data = side.read_bytes()
    if damage == "truncated":
        side.write_bytes(data[: len(data) // 2])
    elif damage.startswith("flipped"):
        name = {"postings": "lex_tf", "documents": "doc_terms", "vectors": "vec_mat"}[
            damage.split("-")[1]
        ]
        f = ArrayFile(side)
        pos = f._meta[name][2] + 3  # inside that stored array
        f.close()
        side.write_bytes(data[:pos] + bytes([data[pos] ^ 0x01]) + data[pos + 1 :])
    elif damage == "garbage":
        side.write_bytes(b"not an index at all" * 100)
    else:
        assert (
            _open(other, clock)._storage.index_stamp()[1]
            == _open(path, clock)._storage.index_stamp()[1]
        )
        shutil.copy(snapshot_path(other), side)
    mem = _open(path, clock, HashEmbedder())
    try:
        assert mem._index.loaded_from == "store"
        got = state(mem)
    finally:
        mem.close()
    assert got == rebuilt_state(path, clock, HashEmbedder())


def test_an_index_another_connection_wrote_past_is_not_persisted(tmp_path):
    """SPEC §11: when another connection changed the store, this connection's in-memory index
    no longer matches the file, so its close must not persist it (the other one's may). Since
    issue 14 (SPEC §10) a connection that recalls or saves first catches up with the others'
    writes, and is then in step again."""
    path, clock = tmp_path / "m.db", ManualClock(1_780_000_000.0)
    mem = _open(path, clock)
    _populate(mem, clock)
    mem.close()
    a, b = _open(path, clock), _open(path, clock)
    b.save("Кошка Мурка спит на подоконнике", OWNER_TRUSTED)
    a.save("Owner bought a new bicycle", OWNER_TRUSTED)  # a notices b's write, then writes
    assert a._storage.index_generation == a._storage.index_stamp()[1]
    assert {h.id for h in a.recall("Мурка", OWNER_TRUSTED)}  # b's record is in a's index
    a_id = next(iter({h.id for h in a.recall("bicycle", OWNER_TRUSTED)}))
    b.update(a_id, OWNER_TRUSTED, content="Owner bought a new red bicycle")  # a is behind now
    a.forget(a_id, "sold", OWNER_TRUSTED)  # a writes without looking: out of step
    assert a._storage.index_generation is None
    before = snapshot_path(path).read_bytes()
    a.close()
    assert snapshot_path(path).read_bytes() == before  # a persisted nothing
    b.close()  # b is out of step too (a wrote after it): nothing persisted either
    mem = _open(path, clock)
    try:
        assert mem._index.loaded_from == "store"
        assert {h.id for h in mem.recall("Мурка", OWNER_TRUSTED)}
        assert not {h.id for h in mem.recall("bicycle", OWNER_TRUSTED)}
    finally:
        mem.close()
