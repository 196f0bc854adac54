"""Dot products and principal axes that come out bit for bit the same on every machine.

Why this module exists: a tree level is a chain of discrete
decisions — which rows are a row's nearest neighbours, which sentence has the
highest score, which axis a set is cut along — and each was taken on floats
whose last bits depend on the CPU. A float32 or float64 matrix product is
summed in an order that the BLAS kernel chooses (OpenBLAS picks a different
kernel on a Zen, a Haswell and a SkylakeX core, with and without FMA), so two
machines disagreed in the last bit of a similarity; UMAP's stochastic layout
then amplified that bit into different clusters, a different number of tree
levels and a different pool size.

The remedy here is fixed-point arithmetic carried out by the BLAS: values are
scaled by ``2**bits`` and rounded to integers (stored as float64), and
``bits`` is chosen so that every partial sum of every product stays below
``2**53``. Such sums are exact in float64, so **any** summation order, blocking
or FMA use gives the same result, and the BLAS keeps its speed. Everything else
in this module is elementwise (IEEE-exact on every CPU) or a numpy reduction
over a fixed axis (numpy sums in a fixed order whatever the SIMD width; checked
with ``NPY_DISABLE_CPU_FEATURES``). Transcendental functions (``np.exp``,
``np.log``, ``np.power``) are avoided: numpy dispatches them to different
implementations on AVX-512 and AVX2 machines.

Rounding to ``2**-20`` (about 1e-6) changes a cosine by at most ~2e-6, far
below anything that separates neighbours in practice; ties that the rounding
creates are broken by row order.
"""

from __future__ import annotations

import math

import numpy as np

#: Largest fixed-point precision used (2**-20 ~ 1e-6 of a unit vector's component).
MAX_BITS = 20


def exact_bits(terms: int) -> int:
    """Fixed-point bits for exact sums of ``terms`` products of two values scaled to ``[-1, 1]``.

    With ``q = rint(x * 2**b)``, ``|q| ≤ 2**b`` and every partial sum of
    ``terms`` products is at most ``terms * 2**(2b)``; ``b`` is the largest value
    (at most :data:`MAX_BITS`) keeping that below ``2**53``.
    """
    need = math.ceil(math.log2(max(int(terms), 1)))
    return max(1, min(MAX_BITS, (53 - need) // 2))


def quantise(x: np.ndarray, bits: int, bound: float = 1.0) -> np.ndarray:
    """``x / bound`` as integers in units of ``2**-bits`` (float64), clipped to ``±2**bits``.

    The clip only matters for values a rounding error above ``bound`` (a unit
    vector's component of 1.0000001); it keeps the exactness bound honest.
    """
    scale = float(2**bits)
    q = np.rint(np.asarray(x, dtype=np.float64) * (scale / bound))
    return np.clip(q, -scale, scale, out=q)


def unit_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` for rows of length ≤ 1 (unit embeddings), identical on every machine.

    The products of the quantised rows are integers and their partial sums
    are bounded by ``|a_i| |b_j| 2**(2 bits)`` (Cauchy–Schwarz), so the BLAS sums
    them exactly whatever its order; the result is scaled back by a power of two.
    """
    bits = MAX_BITS
    qa, qb = quantise(a, bits), quantise(b, bits)
    return (qa @ qb.T) * float(2.0 ** (-2 * bits))


def exact_knn(x: np.ndarray, k: int, block_entries: int = 12_500_000) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``k`` nearest neighbours of unit rows by cosine distance, self first.

    Similarities are fixed-point and exact (:func:`unit_dots`), so the same
    neighbours and distances come out on every machine; among equal
    similarities the lower row comes first. Selection uses a key that is
    unique per entry (similarity, then row), so neither the partition nor the
    sort algorithm numpy picks for the CPU can order ties differently.
    Computed in row blocks of about ``block_entries`` entries (100 MB per
    array), so memory stays bounded whatever ``n``. Passed to UMAP as its k-NN graph: on
    6k-11k points this is ~1 s, against ~50 CPU seconds for UMAP's own
    NN-descent — and exact.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    k = min(k, n)
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k), dtype=np.float32)
    if n == 0 or k == 0:
        return idx, dist
    bits = MAX_BITS
    q = quantise(x, bits)
    # Exact similarities of unit rows lie in (-2**(2*bits + 1), 2**(2*bits + 1)): shifted by that, they take
    # the top 2*bits + 2 bits of a non-negative int64 key, and the reversed column number the bits below.
    sim_bits = 2 * bits + 2
    row_bits = max(1, math.ceil(math.log2(n)))
    if sim_bits + row_bits > 62:  # pragma: no cover - more than 2**19 rows
        raise ValueError(f"exact_knn supports at most 2**{62 - sim_bits} rows, got {n}")
    offset = np.int64(1) << np.int64(2 * bits + 1)
    cols = (np.int64(n - 1) - np.arange(n, dtype=np.int64))  # lower row = larger key among equals
    self_key = np.iinfo(np.int64).max
    block = max(1, block_entries // n)
    for s in range(0, n, block):
        sim = q[s : s + block] @ q.T  # exact integers
        key = ((sim.astype(np.int64) + offset) << np.int64(row_bits)) | cols[None, :]
        rows = np.arange(key.shape[0])
        key[rows, s + rows] = self_key  # self first, even among duplicates
        part = np.argpartition(-key, k - 1, axis=1)[:, :k] if k < n else np.broadcast_to(
            np.arange(n), key.shape).copy()
        order = np.argsort(-np.take_along_axis(key, part, axis=1), axis=1)
        top = np.take_along_axis(part, order, axis=1)
        idx[s : s + block] = top
        d = 1.0 - np.take_along_axis(sim, top, axis=1) * float(2.0 ** (-2 * bits))
        d[:, 0] = 0.0
        dist[s : s + block] = np.clip(d, 0.0, 2.0)
    return idx, dist


def _orthonormal_columns(w: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the columns of ``w`` (Cholesky QR), computed the same way on every machine.

    The columns' Gram matrix is an exact fixed-point product; its Cholesky
    factor and that factor's inverse are computed in Python floats (IEEE
    double, one operation at a time, in a fixed order); the basis combines
    the columns with a fixed-axis sum. A column that depends on the ones
    before it (an input of lower rank) comes out as zeros. A few numpy calls
    per step instead of a Gram–Schmidt loop's dozens: this runs once per
    iteration of :func:`principal_axes`, for every UMAP of a tree build.
    """
    d, m = w.shape
    peak = np.abs(w).max(axis=0)
    live = peak > 0
    q = quantise(np.divide(w, peak, out=np.zeros((d, m)), where=live[None, :]), exact_bits(d))
    g = (q.T @ q).tolist()  # exact
    r = [[0.0] * m for _ in range(m)]
    kept: list[int] = []
    for j in range(m):
        pivot = g[j][j] - math.fsum(r[i][j] * r[i][j] for i in kept)
        if not live[j] or pivot <= 1e-9 * g[j][j]:
            continue
        r[j][j] = math.sqrt(pivot)
        for k in range(j + 1, m):
            r[j][k] = (g[j][k] - math.fsum(r[i][j] * r[i][k] for i in kept)) / r[j][j]
        kept.append(j)
    inv = [[0.0] * m for _ in range(m)]  # R^-1 on the kept columns, by back substitution
    for j in kept:
        inv[j][j] = 1.0 / r[j][j]
        for i in reversed([i for i in kept if i < j]):
            inv[i][j] = -math.fsum(r[i][k] * inv[k][j] for k in kept if i < k <= j) / r[i][i]
    return np.add.reduce(q[:, :, None] * np.asarray(inv)[None, :, :], axis=1)


def principal_axes(x: np.ndarray, dim: int, iterations: int = 20) -> np.ndarray:
    """Approximately the top ``dim`` principal axes of the rows of ``x`` (``d × dim``), machine-independent.

    LAPACK's SVD differs in the last bits between BLAS kernels; this is
    subspace iteration on the covariance in fixed point instead: the
    covariance from exact integer products, each step an exact integer
    product and a Gram–Schmidt in fixed order, and the result rounded back
    to fixed point before the next step. ``iterations`` steps from a fixed
    start are enough for an initialisation or a cutting axis, which need
    directions of large spread, not exact eigenvectors: on HotpotQA passage
    embeddings 20 steps capture 99.5-100% of the variance of the exact top 10
    axes (5 steps: 98.5-99%). Columns of a rank-deficient input beyond its
    rank are zero.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    dim = max(0, min(dim, d))
    if n == 0 or dim == 0:
        return np.zeros((d, dim))
    peak = float(np.abs(x).max())
    if peak == 0:
        return np.zeros((d, dim))
    bits = exact_bits(n)
    q = quantise(x, bits, peak)
    gram = q.T @ q  # exact: n products of at most 2**(2 bits)
    mean = q.sum(axis=0) / n
    cov = gram / n - np.multiply.outer(mean, mean)
    top = float(np.abs(cov).max())
    if top == 0:
        return np.zeros((d, dim))
    cbits = exact_bits(d)
    cq = quantise(cov, cbits, top)
    # A fixed start drawn as integers (integer draws are the same on every machine).
    start = np.random.default_rng(0).integers(-(2**cbits), 2**cbits, size=(d, dim), endpoint=True)
    v = quantise(_orthonormal_columns(start.astype(np.float64)), cbits)
    for _ in range(iterations):
        v = quantise(_orthonormal_columns(cq @ v), cbits)  # exact product, fixed-order orthonormalisation
    return v * float(2.0 ** (-cbits))


def principal_coords(x: np.ndarray, dim: int) -> np.ndarray:
    """Centred coordinates of the rows of ``x`` on :func:`principal_axes` (``n × dim``), machine-independent."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    axes = principal_axes(x, dim)
    if axes.shape[1] == 0 or n == 0:
        return np.zeros((n, axes.shape[1]))
    peak = float(np.abs(x).max()) or 1.0
    bits = exact_bits(d)
    proj = quantise(x, bits, peak) @ quantise(axes, bits)  # exact
    proj = proj - proj.mean(axis=0, keepdims=True)
    return proj * (peak * float(2.0 ** (-2 * bits)))
