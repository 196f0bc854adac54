"""HippoRAG's graph parts against values computed independently here: PPR, specificity, synonym edges."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from gearag.baselines.hipporag_method import min_max
from gearag.baselines.phrases import normalise_phrase, phrase_table, synonym_edges
from gearag.graph.ppr import PageRankOperator


def dense_ppr(adj: np.ndarray, seeds: np.ndarray, d: float) -> np.ndarray:
    """PPR by a direct linear solve: p = (1-d)s + d(Mp + (Σ_dangling p)s), with Σp = 1."""
    n = adj.shape[0]
    out = adj.sum(axis=0)
    m = np.divide(adj, out, out=np.zeros_like(adj), where=out > 0)
    s = seeds / seeds.sum()
    dangling = (out == 0).astype(float)
    a = np.eye(n) - d * m - d * np.outer(s, dangling)
    return np.linalg.solve(a, (1 - d) * s)


# A weighted undirected graph of 6 nodes; node 5 has no edges (dangling).
EDGES = [(0, 1, 2.0), (1, 2, 1.0), (2, 3, 0.5), (0, 3, 1.0), (3, 4, 3.0), (1, 4, 0.8)]


def hand_graph() -> np.ndarray:
    a = np.zeros((6, 6))
    for i, j, w in EDGES:
        a[i, j] = a[j, i] = w
    return a


@pytest.mark.parametrize("damping", [0.5, 0.85])
@pytest.mark.parametrize("seeds", [[1, 0, 0, 0, 0, 0], [0.2, 0, 0, 0.7, 0, 0.1], [0, 0, 0, 0, 0, 1]])
def test_ppr_matches_a_linear_solve(damping: float, seeds: list[float]) -> None:
    adj = hand_graph()
    s = np.asarray(seeds, dtype=float)
    got = PageRankOperator(sparse.csr_matrix(adj)).run(s, damping=damping, tol=1e-12, max_iter=500)
    want = dense_ppr(adj, s, damping)
    assert got.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_ppr_matches_plain_power_iteration() -> None:
    """Independently: iterate the walk on the dense matrix until it stops changing."""
    adj = hand_graph()[:5, :5]  # no dangling node
    m = adj / adj.sum(axis=0)
    s = np.array([0.0, 1.0, 0.0, 0.0, 0.0])
    p = s.copy()
    for _ in range(2000):
        p = 0.5 * m @ p + 0.5 * s
    got = PageRankOperator(sparse.csr_matrix(adj)).run(s, damping=0.5, tol=1e-13, max_iter=500)
    np.testing.assert_allclose(got, p, atol=1e-10)


def test_phrase_nodes_specificity_and_passage_counts() -> None:
    # (subject, object, passage): "The Beatles" and "the  beatles" are one phrase; "Liverpool" is in 3 passages.
    triples = [("The Beatles", "Liverpool", 0), ("the  beatles", "John Lennon", 0), ("Liverpool", "River Mersey", 1),
               ("Liverpool F.C.", "Liverpool", 2), ("Liverpool", "Liverpool", 2), ("!!", "England", 1)]
    subjects, objects, passage = zip(*triples, strict=True)
    table = phrase_table(list(subjects), list(objects), np.asarray(passage), 4)
    assert sorted(table.phrases) == sorted(["the beatles", "liverpool", "john lennon", "river mersey", "liverpool f c",
                                            "england"])
    idx = {p: i for i, p in enumerate(table.phrases)}
    assert table.subject[5] == -1 and normalise_phrase("!!") == ""
    counts = dict(zip(table.phrases, table.passages_per_phrase().tolist(), strict=True))
    assert counts == {"the beatles": 1, "liverpool": 3, "john lennon": 1, "river mersey": 1, "liverpool f c": 1,
                      "england": 1}
    spec = table.specificity()
    assert spec[idx["liverpool"]] == pytest.approx(1 / 3) and spec[idx["the beatles"]] == 1.0
    dense = table.passage_phrase.toarray()
    # Passage 0: "the beatles" in two triples, "liverpool" and "john lennon" in one each; passage 3 has none.
    assert dense[0, idx["the beatles"]] == 2 and dense[0, idx["liverpool"]] == 1 and dense[3].sum() == 0
    # Passage 2: the self-triple (liverpool, liverpool) counts once.
    assert dense[2, idx["liverpool"]] == 2
    rel = table.relation_edges().toarray()
    assert rel[idx["the beatles"], idx["liverpool"]] == 1 == rel[idx["liverpool"], idx["the beatles"]]
    assert rel[idx["liverpool"], idx["liverpool"]] == 0  # no self-loops
    assert (rel == rel.T).all()


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_synonym_edges_on_hand_built_vectors() -> None:
    # Cosines: a·b = 0.95, a·c ≈ 0.86, b·c ≈ 0.67, d orthogonal to all.
    vectors = np.stack([unit([1, 0, 0]), unit([0.95, 0.3122, 0]), unit([0.86, -0.5103, 0]), unit([0, 0, 1])])
    edges = synonym_edges(vectors, threshold=0.8, max_neighbours=10).toarray()
    assert edges[0, 1] == pytest.approx(0.95, abs=1e-3) and edges[0, 2] == pytest.approx(0.86, abs=1e-3)
    assert edges[1, 2] == 0 and edges[3].sum() == 0 and np.diag(edges).sum() == 0
    assert (edges == edges.T).all()
    # One neighbour per phrase: a keeps b; c's best is a, so (a, c) survives through c's list.
    one = synonym_edges(vectors, threshold=0.8, max_neighbours=1).toarray()
    assert one[0, 1] > 0 and one[0, 2] > 0 and one[1, 2] == 0


def test_synonym_edges_blockwise_equal_brute_force() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=(12, 8))
    vectors = np.concatenate([base, base + rng.normal(scale=0.3, size=base.shape)]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    k, thr = 2, 0.5
    want = np.zeros_like(sims)
    for i in range(len(sims)):
        for j in np.argsort(-sims[i], kind="stable")[:k]:
            if sims[i, j] >= thr:
                want[i, j] = sims[i, j]
    want = np.maximum(want, want.T)
    got = synonym_edges(vectors, threshold=thr, max_neighbours=k, block=5).toarray()
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_min_max() -> None:
    np.testing.assert_allclose(min_max(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(min_max(np.array([5.0, 5.0])), [1.0, 1.0])
