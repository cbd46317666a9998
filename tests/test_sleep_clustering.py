"""Sleep's clustering phase (SPEC §7.2): "a similarity graph — lexical (stem Jaccard ≥
cluster_jaccard) and semantic (calibrated cosine ≥ cluster_cosine); connected components are
clusters; clusters larger than max_cluster are cut at their weakest edges. Core takes part like
everything else … Must not be O(n²) in Python: use an inverted index / blocking and vector
maths." The fast joins are checked against brute force."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from core import ManualClock, text
from core.sleep.clustering import (
    cluster,
    components,
    containment_edges,
    lexical_edges,
    semantic_edges,
    strongest,
)
from tests.sleep_kit import T0, PlannerLLM, load, open_memory, sleeper, tool_ids


def brute_lexical(stems, t, groups=None):
    out = {}
    for a, b in itertools.combinations(sorted(stems), 2):
        if groups and groups[a] != groups[b]:
            continue
        if not stems[a] or not stems[b]:
            continue
        j = text.jaccard(stems[a], stems[b])
        if j >= t - 1e-9:
            out[(a, b)] = round(j, 9)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_lexical_join_equals_brute_force(seed):
    """§7.2: the prefix-filtered inverted-index join finds exactly the pairs with stem
    Jaccard ≥ cluster_jaccard (same scope only), whatever the chunking."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.randint(10, 60))]
    n = rng.randint(2, 120)
    stems = {
        i: frozenset(rng.sample(words, rng.randint(0, min(9, len(words))))) for i in range(1, n + 1)
    }
    t = rng.choice([0.3, 0.5, 0.6, 0.75, 1.0])
    groups = {i: rng.choice("ab") for i in stems} if seed % 3 == 0 else None
    got = {
        (a, b): round(w, 9)
        for a, b, w in lexical_edges(stems, t, groups, chunk_pairs=rng.choice([1, 13, 10**6]))
    }
    assert got == brute_lexical(stems, t, groups)


@pytest.mark.parametrize("seed", range(6))
def test_semantic_join_equals_brute_force(seed):
    """§7.2: blocked matrix products find exactly the pairs with calibrated cosine ≥
    cluster_cosine, when no record has more neighbours than max_neighbours."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 300)), 16
    mat = rng.normal(size=(n, d)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    ids = np.arange(10, 10 + n)
    b, t = 0.2, 0.4
    got = {
        (a, c)
        for a, c, _w in semantic_edges(
            ids, mat, b, t, None, max_neighbours=n, block=int(rng.integers(1, 64))
        )
    }
    sims = mat @ mat.T
    want = {
        (int(ids[i]), int(ids[j]))
        for i, j in itertools.combinations(range(n), 2)
        if (sims[i, j] - b) / (1 - b) >= t - 1e-6
    }
    assert got == want


def test_max_neighbours_keeps_the_strongest_edges():
    """A record's edges are capped to its strongest few (a dense group does not flood the
    graph): an edge stays exactly when it is among the k strongest of one of its ends."""
    rng = random.Random(5)
    edges = [(a, b, rng.random()) for a, b in itertools.combinations(range(1, 9), 2)]
    k = 2
    kept = {(a, b) for a, b, _ in strongest(edges, k)}
    top: set[tuple[int, int]] = set()
    for node in range(1, 9):
        mine = sorted((e for e in edges if node in e[:2]), key=lambda e: -e[2])[:k]
        top.update((a, b) for a, b, _ in mine)
    assert kept == top and len(kept) < len(edges)


def test_components_are_cut_at_their_weakest_edges():
    """§7.2: "clusters larger than max_cluster are cut at their weakest edges" — a chain
    1-2-3-4-5-6 with one weak link splits there."""
    edges = [(1, 2, 0.9), (2, 3, 0.8), (3, 4, 0.2), (4, 5, 0.85), (5, 6, 0.95)]
    clusters, cut = components(edges, max_size=3)
    assert clusters == [(1, 2, 3), (4, 5, 6)] and cut == 1
    whole, cut = components(edges, max_size=6)
    assert whole == [(1, 2, 3, 4, 5, 6)] and cut == 0
    assert components([(7, 8, 0.5)], 2)[0] == [(7, 8)]


def test_cluster_merges_both_edge_kinds_and_respects_scopes():
    """§7.2: an edge is lexical or semantic; records of different scopes never cluster."""
    stems = {
        1: frozenset("ab"),
        2: frozenset("ab"),
        3: frozenset("xy"),
        4: frozenset("zw"),
        5: frozenset("ab"),
    }
    vec = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 0]], dtype=np.float32)
    res = cluster(
        stems,
        jaccard=0.5,
        cosine=0.5,
        max_cluster=8,
        vectors=(np.array([1, 2, 3, 4, 5]), vec, 0.0),
        groups={1: "global", 2: "global", 3: "global", 4: "global", 5: "p"},
    )
    assert sorted(res.clusters) == [(1, 2), (3, 4)]
    assert res.lexical_edges >= 1 and res.semantic_edges >= 1
    assert res.histogram() == {2: 2}


def test_core_takes_part_in_clusters(tmp_path):
    """§7.2: "Core takes part like everything else: 'core vs a fresh fact' contradictions are
    only caught this way" — a core record and a fresh fact contradicting it are reviewed
    together."""
    clock = ManualClock(T0)
    mem = open_memory(tmp_path, clock)
    ids = load(
        mem,
        {
            "core": {"content": "The owner works as a teacher at school 5", "kind": "core"},
            "fresh": {
                "content": "The owner no longer works as a teacher at school 5",
                "created_at": T0 - 3600,
            },
        },
    )
    planner = PlannerLLM()
    sleeper(mem, planner, clock).run()
    assert planner.count("review") == 1
    assert sorted(tool_ids(planner.tool_calls[0]["tool"])) == sorted(ids.values())
    mem.close()


@pytest.mark.parametrize("seed", range(8))
def test_containment_join_equals_brute_force(seed):
    """Issue 27 ("a duplicate that adds a detail"): every pair whose smaller stem set (≥ 2
    stems) lies inside the larger is linked, same scope only, each pair once, weighted by
    its Jaccard — as brute force finds them (no stem here is too common to look through)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(rng.randint(6, 20))]
    stems = {i: frozenset(rng.sample(words, rng.randint(0, 6))) for i in range(1, 60)}
    groups = {i: rng.choice("ab") for i in stems} if seed % 2 else None
    want = {}
    for a, b in itertools.combinations(sorted(stems), 2):
        sa, sb = stems[a], stems[b]
        small, big = (sa, sb) if len(sa) <= len(sb) else (sb, sa)
        if len(small) >= 2 and small <= big and (groups is None or groups[a] == groups[b]):
            want[(a, b)] = round(len(small) / len(big), 9)
    got = [(a, b, round(w, 9)) for a, b, w in containment_edges(stems, groups, max_postings=10**6)]
    assert len(got) == len({(a, b) for a, b, _ in got})  # each pair once
    assert {(a, b): w for a, b, w in got} == want
    assert want  # the random sets do hold some containments


def test_a_fact_said_again_with_a_long_detail_is_clustered_with_it():
    """A fact and the same fact with a long detail ("Хозяин занимается йогой" / "… дважды в
    неделю, в студии на Петроградке"): their Jaccard (3/7) is below cluster_jaccard and no
    vectors are given, yet they form one cluster; an unrelated record stays out."""
    contents = {
        1: "Хозяин занимается йогой",
        2: "Хозяин занимается йогой дважды в неделю, в студии на Петроградке",
        3: "Хозяин любит гречку с грибами",
    }
    stems = {i: text.stem_set(c) for i, c in contents.items()}
    assert text.jaccard(stems[1], stems[2]) < 0.5
    got = cluster(stems, jaccard=0.5, cosine=0.8, max_cluster=8)
    assert got.clusters == [(1, 2)]
