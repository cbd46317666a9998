"""Sleep's clustering phase (SPEC §7.2): a similarity graph of the live corpus, no model.

Two kinds of edges link records of the same scope:

* **lexical** — stem-set Jaccard ≥ ``cluster_jaccard``, found with a set-similarity join
  (prefix filtering over an inverted index: stems ordered rarest first, a record is indexed
  under its first ``|x| − ⌈t·|x|⌉ + 1`` stems only, and the length filter ``|y| ≥ t·|x|``
  prunes the rest), so only pairs that *can* reach the threshold are ever compared;
* **containment** — every stem of the smaller record is in the larger (a fact said again with a
  detail), through the postings of the smaller one's rarest stem (:func:`containment_edges`);
* **semantic** — calibrated cosine ``(cos − b)/(1 − b)`` ≥ ``cluster_cosine`` over the active
  model's vectors, as blocked matrix products (``block`` rows at a time against all rows), each
  record keeping at most ``max_neighbours`` strongest neighbours.

Connected components of the graph (union-find) are the clusters; a component larger than
``max_cluster`` is cut at its weakest edges (its edges are re-joined strongest first, and an
edge that would make a part larger than ``max_cluster`` is left cut). Singletons are not
clusters. Core records take part like every other record. ``check`` is called now and then so
a wake-up stops long work promptly.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from core import text

Edge = tuple[int, int, float]  # (a, b, weight) with a < b


@dataclass(frozen=True)
class Clustering:
    clusters: list[tuple[int, ...]]  # members sorted by id; biggest clusters first
    lexical_edges: int
    semantic_edges: int
    cut_edges: int  # edges left out to keep parts within max_cluster
    seconds: float
    weights: dict[tuple[int, int], float] = field(default_factory=dict, repr=False)

    def histogram(self) -> dict[int, int]:
        """Cluster size → how many clusters of that size."""
        return dict(sorted(Counter(len(c) for c in self.clusters).items()))


def _noop() -> None:
    return None


def _ragged_arange(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """concatenate(arange(s, s + c) for s, c in zip(starts, counts)), vectorised."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    offsets = np.repeat(ends - counts, counts)
    return np.arange(total, dtype=np.int64) - offsets + np.repeat(starts, counts)


def lexical_edges(
    stems: Mapping[int, frozenset[str]],
    threshold: float,
    groups: Mapping[int, str] | None = None,
    check: Callable[[], None] = _noop,
    max_neighbours: int | None = None,
    chunk_pairs: int = 4_000_000,
) -> list[Edge]:
    """Pairs with stem-set Jaccard ≥ ``threshold`` (and the same group, e.g. scope).

    A set-similarity join (prefix filtering, as in PPJoin), in numpy: stems are ranked
    rarest first; records are ordered by size; a record *probes* with its first
    ``|x| − ⌈t·|x|⌉ + 1`` stems and is *indexed* under its first ``|x| − ⌈2t/(1+t)·|x|⌉ + 1``,
    and a pair is a candidate only if a probe stem of the larger meets an index stem of the
    smaller (any pair reaching ``t`` does). Candidates then pass the length filter
    (``|y| ≥ t·|x|``) and the positional filter (shared prefix stems + what can still be
    shared after the last of them must reach the overlap ``⌈t/(1+t)·(|x|+|y|)⌉``), and only
    the survivors' overlaps are counted exactly (sorted-key lookups). ``max_neighbours`` keeps
    only each record's strongest edges."""
    t = float(threshold)
    eps = 1e-9
    items = [(len(s), rid, s) for rid, s in stems.items() if s]
    if len(items) < 2:
        return []
    df: Counter[str] = Counter()
    for _n, _rid, s in items:
        df.update(s)
    rank = {w: k for k, w in enumerate(sorted(df, key=lambda w: (df[w], w)))}
    vocab = len(rank)
    items.sort(key=lambda x: (x[0], x[1]))
    n = len(items)
    rids = np.fromiter((rid for _n, rid, _s in items), dtype=np.int64, count=n)
    lens = np.fromiter((ln for ln, _rid, _s in items), dtype=np.int64, count=n)
    tok = np.fromiter(
        (r for _n, _rid, s in items for r in sorted(rank[w] for w in s)),
        dtype=np.int64,
        count=int(lens.sum()),
    )
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    owner = np.repeat(np.arange(n, dtype=np.int64), lens)
    pos = np.arange(len(tok), dtype=np.int64) - np.repeat(starts, lens)
    ratio = t / (1.0 + t)
    probe_len = lens - np.ceil(t * lens - eps).astype(np.int64) + 1
    index_len = lens - np.ceil(2.0 * ratio * lens - eps).astype(np.int64) + 1
    gcode = None
    if groups is not None:
        codes: dict[str, int] = {}
        gcode = np.fromiter(
            (codes.setdefault(groups.get(int(r), ""), len(codes)) for r in rids),
            dtype=np.int64,
            count=n,
        )
    check()

    # probe and index entries, grouped by stem
    pm = pos < probe_len[owner]
    im = pos < index_len[owner]
    p_tok, p_own, p_pos = tok[pm], owner[pm], pos[pm]
    i_tok, i_own, i_pos = tok[im], owner[im], pos[im]
    po = np.argsort(p_tok, kind="stable")
    p_tok, p_own, p_pos = p_tok[po], p_own[po], p_pos[po]
    io = np.argsort(i_tok, kind="stable")
    i_tok, i_own, i_pos = i_tok[io], i_own[io], i_pos[io]
    i_start = np.searchsorted(i_tok, np.arange(vocab + 1))
    i_count = i_start[1:] - i_start[:-1]
    per_probe = i_count[p_tok]  # index entries each probe entry meets
    all_keys = owner * vocab + tok  # sorted: owner ascending, stems ascending within a record

    keys_out: list[np.ndarray] = []
    counts_out: list[np.ndarray] = []
    bounds = np.cumsum(per_probe)
    lo = 0
    while lo < len(p_tok):
        check()
        # a chunk of probe entries making at most ~chunk_pairs candidate occurrences
        hi = int(np.searchsorted(bounds, (bounds[lo - 1] if lo else 0) + chunk_pairs, "right"))
        hi = max(hi, lo + 1)
        cnt = per_probe[lo:hi]
        x = np.repeat(p_own[lo:hi], cnt)
        xi = np.repeat(p_pos[lo:hi], cnt)
        e = _ragged_arange(i_start[p_tok[lo:hi]], cnt)
        y, yj = i_own[e], i_pos[e]
        lo = hi
        keep = y < x  # the smaller (earlier) record is the indexed one
        keep &= lens[y] >= t * lens[x] - eps
        if gcode is not None:
            keep &= gcode[x] == gcode[y]
        x, y, xi, yj = x[keep], y[keep], xi[keep], yj[keep]
        if len(x) == 0:
            continue
        # positional filter per pair: shared prefix stems so far + what can still be shared
        key = x * n + y
        order = np.lexsort((xi, key))
        key, x, y, xi, yj = key[order], x[order], y[order], xi[order], yj[order]
        first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        last = np.concatenate((first[1:], [len(key)])) - 1
        shared = last - first + 1
        px, py = x[last], y[last]
        reach = shared + np.minimum(lens[px] - xi[last] - 1, lens[py] - yj[last] - 1)
        need = np.ceil(ratio * (lens[px] + lens[py]) - eps)
        ok = reach >= need
        px, py = px[ok], py[ok]
        if len(px) == 0:
            continue
        # exact overlap: look every stem of x up among y's stems
        ex = _ragged_arange(starts[px], lens[px])
        pair = np.repeat(np.arange(len(px)), lens[px])
        probe_keys = py[pair] * vocab + tok[ex]
        at = np.searchsorted(all_keys, probe_keys)
        at[at >= len(all_keys)] = 0
        hit = all_keys[at] == probe_keys
        inter = np.bincount(pair, weights=hit, minlength=len(px))
        jac = inter / (lens[px] + lens[py] - inter)
        good = jac >= t - eps
        keys_out.append(np.stack((rids[px[good]], rids[py[good]]), axis=1))
        counts_out.append(jac[good])
    if not keys_out:
        return []
    pairs = np.concatenate(keys_out)
    weights = np.concatenate(counts_out)
    a = np.minimum(pairs[:, 0], pairs[:, 1]).tolist()
    b = np.maximum(pairs[:, 0], pairs[:, 1]).tolist()
    edges = list(zip(a, b, weights.tolist(), strict=True))
    if max_neighbours is not None:
        edges = strongest(edges, max_neighbours)
    return edges


def containment_edges(
    stems: Mapping[int, frozenset[str]],
    groups: Mapping[int, str] | None = None,
    min_stems: int = 2,
    max_postings: int = 64,
    check: Callable[[], None] = _noop,
) -> list[Edge]:
    """Pairs where every stem of the smaller record (at least ``min_stems``) is in the larger:
    a fact said again with a detail ("Хозяин занимается йогой" / "… дважды в неделю, в студии
    на Петроградке"), whose Jaccard and cosine may both fall short when the detail is long.
    Weight: the Jaccard, |smaller| / |larger|. Found through the postings of each record's
    rarest stem; a stem on more than ``max_postings`` records is too common to look through.
    Measured on the dev parts of the four sleep corpora: 11 such pairs in one script, 7 of them
    labelled duplicates, 3 contradictions and 1 a run of events — none unrelated."""
    postings: dict[str, list[int]] = {}
    for rid, s in stems.items():
        for w in s:
            postings.setdefault(w, []).append(rid)
    edges: list[Edge] = []
    for n, (rid, s) in enumerate(stems.items()):
        if n % 2048 == 0:
            check()
        if len(s) < min_stems:
            continue
        rarest = min(s, key=lambda w: (len(postings[w]), w))
        holders = postings[rarest]
        if len(holders) > max_postings:
            continue
        for other in holders:
            big = stems[other]
            if other == rid or len(big) < len(s) or (len(big) == len(s) and other < rid):
                continue  # each pair once, from its smaller side (equal sizes: the lower id)
            if groups is not None and groups.get(rid, "") != groups.get(other, ""):
                continue
            if s <= big:
                edges.append((min(rid, other), max(rid, other), len(s) / len(big)))
    return edges


def strongest(edges: Sequence[Edge], k: int) -> list[Edge]:
    """Keep an edge if it is among the ``k`` strongest of either of its ends."""
    by_node: dict[int, list[tuple[float, int]]] = {}
    for n, (a, b, w) in enumerate(edges):
        by_node.setdefault(a, []).append((w, n))
        by_node.setdefault(b, []).append((w, n))
    keep: set[int] = set()
    for lst in by_node.values():
        if len(lst) > k:
            lst.sort(key=lambda x: (-x[0], x[1]))
            lst = lst[:k]
        keep.update(n for _w, n in lst)
    return [edges[n] for n in sorted(keep)]


def semantic_edges(
    ids: np.ndarray,
    vectors: np.ndarray,
    background: float,
    threshold: float,
    groups: Mapping[int, str] | None = None,
    max_neighbours: int = 16,
    block: int = 512,
    check: Callable[[], None] = _noop,
) -> list[Edge]:
    """Pairs with calibrated cosine ≥ ``threshold``: blocked ``rows @ all.T`` products, the
    upper triangle only, at most ``max_neighbours`` per row (strongest first)."""
    n = len(ids)
    if n < 2:
        return []
    mat = np.ascontiguousarray(vectors, dtype=np.float32)
    raw_min = background + threshold * (1.0 - background)  # calibrated ≥ t ⇔ cos ≥ this
    gcode = None
    if groups is not None:
        codes: dict[str, int] = {}
        gcode = np.array([codes.setdefault(groups.get(int(i), ""), len(codes)) for i in ids])
    edges: list[Edge] = []
    for start in range(0, n, block):
        check()
        stop = min(n, start + block)
        # upper triangle only: rows start..stop against columns start..n (each pair once)
        sims = mat[start:stop] @ mat[start:].T
        mask = sims >= raw_min - 1e-6
        mask &= np.arange(start, n)[None, :] > np.arange(start, stop)[:, None]
        if gcode is not None:
            mask &= gcode[start:stop, None] == gcode[None, start:]
        counts = mask.sum(axis=1)
        for r in np.flatnonzero(counts > max_neighbours):  # keep the strongest few
            cols = np.flatnonzero(mask[r])
            weak = np.argpartition(-sims[r, cols], max_neighbours - 1)[max_neighbours:]
            mask[r, cols[weak]] = False
        rr, cc = np.nonzero(mask)
        if len(rr) == 0:
            continue
        w = np.minimum(1.0, (sims[rr, cc] - background) / (1.0 - background))
        a, b = ids[start + rr], ids[start + cc]
        edges.extend(
            zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist(), w.tolist(), strict=True)
        )
    if len(edges) > 0:
        edges = strongest(edges, max_neighbours)
    return edges


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.size: dict[int, int] = {}

    def find(self, x: int) -> int:
        parent = self.parent
        if x not in parent:
            parent[x] = x
            self.size[x] = 1
            return x
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: int, b: int, cap: int | None = None) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if cap is not None and self.size[ra] + self.size[rb] > cap:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True


def components(edges: Sequence[Edge], max_size: int) -> tuple[list[tuple[int, ...]], int]:
    """Connected components (size ≥ 2) of the graph, components above ``max_size`` cut at
    their weakest edges. Returns (clusters, number of edges cut)."""
    uf = _UnionFind()
    for a, b, _w in edges:
        uf.union(a, b)
    groups: dict[int, list[int]] = {}
    for x in list(uf.parent):
        groups.setdefault(uf.find(x), []).append(x)
    big = {root for root, members in groups.items() if len(members) > max_size}
    clusters = [tuple(sorted(m)) for root, m in groups.items() if root not in big]
    cut = 0
    if big:
        inside: dict[int, list[Edge]] = {}
        for e in edges:
            root = uf.find(e[0])
            if root in big:
                inside.setdefault(root, []).append(e)
        for root, es in inside.items():
            part = _UnionFind()
            # strongest first; ties broken by ids so the result does not depend on input order
            for a, b, _w in sorted(es, key=lambda e: (-e[2], e[0], e[1])):
                if not part.union(a, b, cap=max_size):
                    cut += 1
            parts: dict[int, list[int]] = {}
            for x in groups[root]:
                parts.setdefault(part.find(x), []).append(x)
            clusters.extend(tuple(sorted(m)) for m in parts.values())
    clusters = [c for c in clusters if len(c) >= 2]
    clusters.sort(key=lambda c: (-len(c), c))
    return clusters, cut


def cluster(
    stems: Mapping[int, frozenset[str]],
    *,
    jaccard: float,
    cosine: float,
    max_cluster: int,
    vectors: tuple[np.ndarray, np.ndarray, float] | None = None,
    groups: Mapping[int, str] | None = None,
    max_neighbours: int = 16,
    check: Callable[[], None] = _noop,
) -> Clustering:
    """The whole phase: both edge sets, merged (an edge's weight is its stronger kind), then
    components cut to ``max_cluster``."""
    t0 = time.perf_counter()
    lex = lexical_edges(stems, jaccard, groups, check, max_neighbours)
    sem: list[Edge] = []
    if vectors is not None:
        ids, mat, background = vectors
        live = np.fromiter((int(i) in stems for i in ids), dtype=bool, count=len(ids))
        sem = semantic_edges(
            ids[live], mat[live], background, cosine, groups, max_neighbours, check=check
        )
    held = containment_edges(stems, groups, check=check)
    weights: dict[tuple[int, int], float] = {}
    for a, b, w in (*lex, *sem, *held):
        key = (a, b)
        if w > weights.get(key, -1.0):
            weights[key] = w
    check()
    clusters, cut = components([(a, b, w) for (a, b), w in weights.items()], max_cluster)
    return Clustering(clusters, len(lex), len(sem), cut, time.perf_counter() - t0, weights)


def stem_sets(contents: Mapping[int, str]) -> dict[int, frozenset[str]]:
    """Stem sets of raw texts (for callers without a lexical index, e.g. benchmarks)."""
    return {rid: text.stem_set(c) for rid, c in contents.items()}
