"""RAPTOR clustering: known groups, tiny inputs, duplicates, collapse, size limit, determinism."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("umap")
pytest.importorskip("sklearn")

from gearag.sirerag.clustering import ClusterConfig, ClusterStats, candidate_ks, cluster, exact_knn


def _groups(n_groups: int, per: int, dim: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_groups, dim)) * 4
    labels = np.repeat(np.arange(n_groups), per)
    x = centres[labels] + rng.normal(size=(labels.size, dim)) * 0.3
    return x.astype(np.float32), labels


def _check_cover(clusters: list[np.ndarray], n: int) -> None:
    seen = np.zeros(n, dtype=bool)
    for c in clusters:
        assert c.dtype == np.int64 and c.size and np.all(np.diff(c) > 0)
        seen[c] = True
    assert seen.all(), "every row must be in at least one cluster"


def test_recovers_known_groups() -> None:
    x, labels = _groups(4, 40)
    clusters = cluster(x)
    _check_cover(clusters, len(x))
    # No cluster mixes groups. (Local clustering may split a group further,
    # as RAPTOR's does: UMAP finds sub-structure even in one Gaussian blob.)
    for c in clusters:
        counts = np.bincount(labels[c], minlength=4)
        assert counts.max() / counts.sum() >= 0.95
    assert len(clusters) <= 4 * 6


def test_global_level_alone_recovers_groups_exactly() -> None:
    x, labels = _groups(4, 40)
    # Clusters with at most n_components + 1 members stay whole locally: raise that bar via
    # single_cluster_max so the global GMM's clusters are returned as they are.
    clusters = cluster(x, config=ClusterConfig(single_cluster_max=11, n_components=40, max_clusters=8))
    found = sorted(tuple(labels[c].tolist()) for c in clusters)
    assert found == sorted(tuple([g] * 40) for g in range(4))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 12])
def test_tiny_inputs(n: int) -> None:
    x, _ = _groups(2, 6, seed=n)
    x = x[:n]
    clusters = cluster(x, tokens=[5] * n)
    if n == 0:
        assert clusters == []
    else:
        _check_cover(clusters, n)


def test_twelve_points_goes_through_umap_and_gmm() -> None:
    x, _ = _groups(2, 6)
    stats = ClusterStats()
    clusters = cluster(x, config=ClusterConfig(single_cluster_max=3), stats=stats)
    _check_cover(clusters, 12)
    assert stats.umap_runs >= 1 and stats.gmm_fits >= 1


def test_identical_vectors() -> None:
    x = np.tile(np.arange(1, 17, dtype=np.float32), (40, 1))
    clusters = cluster(x, tokens=[10] * 40)
    _check_cover(clusters, 40)
    assert len(clusters) == 1


def test_identical_vectors_over_the_token_limit_are_cut_not_recursed() -> None:
    x = np.tile(np.arange(1, 17, dtype=np.float32), (40, 1))
    stats = ClusterStats()
    clusters = cluster(x, tokens=[100] * 40, config=ClusterConfig(max_cluster_tokens=1_000), stats=stats)
    _check_cover(clusters, 40)
    assert all(c.size <= 10 for c in clusters)
    assert stats.forced_splits >= 1


def test_duplicates_among_distinct_points_keep_row_identity() -> None:
    x, _labels = _groups(3, 20)
    x = np.concatenate([x, x[:5]])  # rows 60..64 duplicate rows 0..4
    clusters = cluster(x)
    _check_cover(clusters, len(x))


def test_collapsing_covariance_does_not_crash() -> None:
    # Two tight blobs of exact duplicates plus a few zero rows: GMM covariances collapse without reg_covar.
    a = np.tile(np.eye(16, dtype=np.float32)[0], (30, 1))
    b = np.tile(np.eye(16, dtype=np.float32)[1], (30, 1))
    z = np.zeros((3, 16), dtype=np.float32)
    x = np.concatenate([a, b, z, np.eye(16, dtype=np.float32)[2:]])
    clusters = cluster(x, config=ClusterConfig(covariance_type="full", reg_covar=0.0, single_cluster_max=2))
    _check_cover(clusters, len(x))


def test_size_limit_reclusters_with_progress() -> None:
    x, _ = _groups(3, 30)
    cfg = ClusterConfig(max_cluster_tokens=200)
    clusters = cluster(x, tokens=[50] * len(x), config=cfg)
    _check_cover(clusters, len(x))
    assert all(c.size * 50 <= 200 or c.size == 1 for c in clusters)


def test_deterministic() -> None:
    x, _ = _groups(5, 25, seed=3)
    a = cluster(x, tokens=[30] * len(x))
    b = cluster(x, tokens=[30] * len(x))
    assert [c.tolist() for c in a] == [c.tolist() for c in b]


def test_bic_grid_is_bounded() -> None:
    ks = candidate_ks(49, 10)
    assert ks[0] == 1 and ks[-1] == 49 and len(ks) <= 10
    assert candidate_ks(5, 10) == [1, 2, 3, 4, 5]


def test_exact_knn_self_first() -> None:
    x = np.tile(np.eye(4, dtype=np.float32)[:2], (3, 1))  # duplicates
    idx, dist = exact_knn(x, 3)
    assert (idx[:, 0] == np.arange(6)).all() and (dist[:, 0] == 0).all()
