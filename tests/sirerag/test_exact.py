"""Machine-independent arithmetic of the trees: fixed-point products, PCA, UMAP layout, summaries.

A test process cannot switch its BLAS kernel or CPU, so these tests pin the properties that make the
results machine-independent: a product's bits do not depend on the order its terms are summed in
(permuting the dimensions or the rows changes the order), ties go to the lower row, the layout's
kernels are compiled without fastmath, and the fixed UMAP constants are UMAP's.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from gearag.sirerag.exact import exact_knn, principal_axes, principal_coords, quantise, unit_dots
from gearag.sirerag.summarise import ExtractiveSummariser


def _unit(n: int, d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_unit_dots_do_not_depend_on_the_summation_order() -> None:
    a, b = _unit(50, 300, 1), _unit(40, 300, 2)
    perm = np.random.default_rng(3).permutation(300)
    exact = unit_dots(a, b)
    assert exact.tobytes() == unit_dots(a[:, perm], b[:, perm]).tobytes()  # bit for bit
    np.testing.assert_allclose(exact, a @ b.T, atol=2e-6)


def test_quantise_clips_a_rounding_error_above_one() -> None:
    q = quantise(np.array([1.0000001, -1.0000001, 0.5]), 20)
    assert q.tolist() == [2.0**20, -(2.0**20), 2.0**19]


def test_exact_knn_ranks_like_floats_and_ignores_the_summation_order() -> None:
    x = _unit(300, 64, 4)
    idx, dist = exact_knn(x, 12)
    assert (idx[:, 0] == np.arange(300)).all() and (dist[:, 0] == 0).all()
    sim = x @ x.T
    np.fill_diagonal(sim, np.inf)
    want = np.argsort(-sim, axis=1, kind="stable")[:, :12]
    agree = (idx == want).mean()
    assert agree > 0.99, "fixed point may only reorder near-equal similarities"
    np.testing.assert_allclose(dist[:, 1:], 1 - np.take_along_axis(sim, idx[:, 1:], axis=1), atol=3e-6)
    perm = np.random.default_rng(5).permutation(64)
    idx2, dist2 = exact_knn(x[:, perm], 12)
    assert idx.tobytes() == idx2.tobytes() and dist.tobytes() == dist2.tobytes()
    idx3, dist3 = exact_knn(x, 12, block_entries=1_000)  # other blocks: same answer
    assert idx.tobytes() == idx3.tobytes() and dist.tobytes() == dist3.tobytes()


def test_exact_knn_breaks_ties_by_row() -> None:
    base = _unit(3, 8, 6)
    x = base[[0, 1, 0, 2, 0, 1]]  # rows 0, 2, 4 equal; rows 1, 5 equal
    idx, dist = exact_knn(x, 6)
    assert idx[0].tolist()[:3] == [0, 2, 4] and idx[4].tolist()[:3] == [4, 0, 2]
    assert idx[1].tolist()[:2] == [1, 5] and idx[5].tolist()[:2] == [5, 1]
    assert (dist[:, 0] == 0).all()


def test_principal_axes_span_the_top_variance_and_ignore_the_row_order() -> None:
    rng = np.random.default_rng(8)
    scales = np.r_[np.linspace(5, 1, 10), np.full(54, 0.1)]
    x = rng.normal(size=(400, 64)) * scales @ np.linalg.qr(rng.normal(size=(64, 64)))[0]
    axes = principal_axes(x, 10)
    np.testing.assert_allclose(axes.T @ axes, np.eye(10), atol=1e-5)
    centred = x - x.mean(axis=0)
    _, s, _ = np.linalg.svd(centred, full_matrices=False)
    assert ((centred @ axes) ** 2).sum() >= 0.99 * (s[:10] ** 2).sum()
    perm = rng.permutation(400)
    assert principal_axes(x[perm], 10).tobytes() == axes.tobytes()  # exact sums over rows
    coords = principal_coords(x, 3)
    assert coords.shape == (400, 3) and np.abs(coords.mean(axis=0)).max() < 1e-9


def test_principal_axes_of_a_low_rank_input_are_finite() -> None:
    x = _unit(5, 256, 9)
    axes = principal_axes(x, 10)
    assert axes.shape == (256, 10) and np.isfinite(axes).all()
    assert np.isfinite(principal_coords(x, 10)).all()
    assert not principal_axes(np.zeros((4, 8)), 2).any()


def test_layout_kernels_are_compiled_without_fastmath_and_use_umaps_curve() -> None:
    pytest.importorskip("umap")
    from umap.umap_ import find_ab_params

    from gearag.sirerag import layout

    for kernel in (layout._optimise, layout._rdist, layout._clip, layout._tau_rand_int):
        assert not kernel.targetoptions.get("fastmath"), "fastmath lets LLVM sum differently on each CPU"
    a, b = find_ab_params(1.0, 0.1)
    assert a == pytest.approx(layout.CURVE_A, rel=1e-8) and b == pytest.approx(layout.CURVE_B, rel=1e-8)


def test_layout_is_repeatable_and_keeps_groups_apart() -> None:
    pytest.importorskip("umap")
    from gearag.sirerag.layout import umap_layout

    rng = np.random.default_rng(10)
    centres = rng.normal(size=(3, 32)) * 4
    labels = np.repeat(np.arange(3), 40)
    x = centres[labels] + rng.normal(size=(120, 32)) * 0.3
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    first = umap_layout(x, 10, 5, 224, 100)
    assert first.tobytes() == umap_layout(x, 10, 5, 224, 100).tobytes()
    means = np.stack([first[labels == g].mean(axis=0) for g in range(3)])
    spread = max(np.linalg.norm(first[labels == g] - means[g], axis=1).max() for g in range(3))
    gaps = [np.linalg.norm(means[i] - means[j]) for i in range(3) for j in range(i)]
    assert min(gaps) > spread


def test_extractive_summaries_do_not_depend_on_the_summation_order() -> None:
    """Near-equal sentences: a float32 product ranks them by rounding noise, which the summation order
    (here: the order of the dimensions) changes; the fixed-point scores give the same summaries."""
    texts = [f"T{i}\n" + " ".join(f"Fact {i} number {j} holds." for j in range(4)) for i in range(12)]
    perm = np.random.default_rng(11).permutation(256)
    base = np.random.default_rng(0).normal(size=256)

    def encoder(permuted: bool):
        def encode(items):
            seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in items]
            out = np.stack([base + 1e-6 * np.random.default_rng(seed).normal(size=256) for seed in seeds])
            out = (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)
            return out[:, perm] if permuted else out
        return encode

    clusters = [list(range(i, i + 4)) for i in range(9)]
    plain, permuted = encoder(False), encoder(True)
    a = ExtractiveSummariser(plain).summarise(clusters, texts, plain(texts))
    b = ExtractiveSummariser(permuted).summarise(clusters, texts, permuted(texts))
    assert a == b and all(a)
