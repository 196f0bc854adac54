"""UMAP that gives the same layout on every machine.

``umap.UMAP(random_state=...)`` is repeatable on one machine but not across
machines. Measured on 300 HotpotQA passages (docs/benchmarks-log.md, "The same trees on
every machine"), the layout changed with

* the BLAS kernel (``OPENBLAS_CORETYPE``): the spectral initialisation is an
  ARPACK eigensolve whose last bits follow the kernel;
* numpy's SIMD level (AVX-512 or not): ``find_ab_params`` fits the curve
  ``1 / (1 + a d^2b)`` with ``np.power``, which numpy implements differently
  per instruction set, so ``a`` and ``b`` differ in the 10th digit;
* numba's target CPU (``NUMBA_CPU_NAME``): the SGD epochs are compiled with
  ``fastmath=True``, which lets LLVM reassociate and fuse the distance sums
  differently for each CPU.

The stochastic gradient descent then amplifies any of these last-bit
differences into different clusters. This module keeps UMAP's algorithm and
its fuzzy graph (``umap.umap_.fuzzy_simplicial_set``, which was identical
under every setting tried) and replaces the three machine-dependent parts:

* ``a`` and ``b`` are constants (UMAP's fit for ``min_dist=0.1, spread=1``);
* the initialisation is the data's principal axes computed in fixed point
  (:func:`gearag.sirerag.exact.principal_coords`; UMAP's own ``init="pca"``
  option, made exact), scaled and jittered as UMAP scales its initialisations;
* the epochs are UMAP's own loop (``optimize_layout_euclidean``, sequential,
  as UMAP runs it when seeded), compiled without ``fastmath``: LLVM may then
  neither reorder nor fuse float operations, so every x86-64 CPU computes the
  same bits (``pow`` comes from the C library, which picks the same FMA code
  path on every CPU with FMA).

Deviation from the released code: it uses UMAP's default spectral
initialisation; the PCA one is UMAP's documented alternative and keeps the
global arrangement similarly (Kobak & Linderman, 2021).
"""

from __future__ import annotations

import numba
import numpy as np

from gearag.sirerag.exact import exact_knn, principal_coords

#: UMAP's ``find_ab_params(spread=1.0, min_dist=0.1)``, fixed (numpy's np.power differs per SIMD level).
CURVE_A = 1.5769434603113077
CURVE_B = 0.8950608779109733
#: UMAP's defaults for the SGD (``learning_rate``, ``repulsion_strength``, ``negative_sample_rate``).
_ALPHA = 1.0
_GAMMA = 1.0
_NEGATIVE_RATE = 5.0
#: UMAP's ``DISCONNECTION_DISTANCES["cosine"]``: neighbours this far apart are cut from the graph.
_COSINE_DISCONNECTION = 2.0


@numba.njit(cache=True)
def _clip(val: float) -> float:
    if val > 4.0:
        return 4.0
    if val < -4.0:
        return -4.0
    return val


@numba.njit(cache=True)
def _rdist(x: np.ndarray, y: np.ndarray) -> np.float32:
    """Squared distance summed in float32 in index order (as UMAP's ``rdist``, but never reassociated)."""
    result = np.float32(0.0)
    for i in range(x.shape[0]):
        diff = np.float32(x[i] - y[i])
        result = np.float32(result + np.float32(diff * diff))
    return result


@numba.njit(cache=True)
def _tau_rand_int(state: np.ndarray) -> int:
    """UMAP's Tausworthe generator (``umap.utils.tau_rand_int``), integer-only."""
    state[0] = (((state[0] & 4294967294) << 12) & 0xFFFFFFFF) ^ ((((state[0] << 13) & 0xFFFFFFFF) ^ state[0]) >> 19)
    state[1] = (((state[1] & 4294967288) << 4) & 0xFFFFFFFF) ^ ((((state[1] << 2) & 0xFFFFFFFF) ^ state[1]) >> 25)
    state[2] = (((state[2] & 4294967280) << 17) & 0xFFFFFFFF) ^ ((((state[2] << 3) & 0xFFFFFFFF) ^ state[2]) >> 11)
    return state[0] ^ state[1] ^ state[2]


@numba.njit(cache=True)
def _optimise(emb, head, tail, epochs_per_sample, a, b, rng_state_per_sample, n_epochs):
    """UMAP's ``optimize_layout_euclidean`` with ``move_other=True``, no densMAP, one thread, no fastmath."""
    n_vertices = emb.shape[0]
    dim = emb.shape[1]
    epochs_per_negative_sample = epochs_per_sample / _NEGATIVE_RATE
    next_negative = epochs_per_negative_sample.copy()
    next_sample = epochs_per_sample.copy()
    alpha = _ALPHA
    for n in range(n_epochs):
        for i in range(epochs_per_sample.shape[0]):
            if next_sample[i] > n:
                continue
            j = head[i]
            k = tail[i]
            current = emb[j]
            other = emb[k]
            dist_squared = _rdist(current, other)
            if dist_squared > 0.0:
                grad_coeff = -2.0 * a * b * pow(dist_squared, b - 1.0)
                grad_coeff /= a * pow(dist_squared, b) + 1.0
            else:
                grad_coeff = 0.0
            for d in range(dim):
                grad_d = _clip(grad_coeff * (current[d] - other[d]))
                current[d] += grad_d * alpha
                other[d] += -grad_d * alpha
            next_sample[i] += epochs_per_sample[i]
            n_neg_samples = int((n - next_negative[i]) / epochs_per_negative_sample[i])
            for _p in range(n_neg_samples):
                k = _tau_rand_int(rng_state_per_sample[j]) % n_vertices
                other = emb[k]
                dist_squared = _rdist(current, other)
                if dist_squared > 0.0:
                    grad_coeff = 2.0 * _GAMMA * b
                    grad_coeff /= (0.001 + dist_squared) * (a * pow(dist_squared, b) + 1)
                elif j == k:
                    continue
                else:
                    grad_coeff = 0.0
                for d in range(dim):
                    if grad_coeff > 0.0:
                        grad_d = _clip(grad_coeff * (current[d] - other[d]))
                    else:
                        grad_d = 0.0
                    current[d] += grad_d * alpha
            next_negative[i] += n_neg_samples * epochs_per_negative_sample[i]
        alpha = _ALPHA * (1.0 - (float(n) / float(n_epochs)))
    return emb


def _initial(x: np.ndarray, dim: int, random_state: np.random.RandomState) -> np.ndarray:
    """Fixed-point PCA coordinates, scaled and jittered as UMAP's ``noisy_scale_coords`` does, then to [0, 10]."""
    coords = principal_coords(x, dim)
    if coords.shape[1] < dim:
        coords = np.concatenate([coords, np.zeros((coords.shape[0], dim - coords.shape[1]))], axis=1)
    flat = np.ptp(coords, axis=0) == 0
    if flat.any():  # an input of rank below dim: those axes start at random, as UMAP's init="random"
        coords[:, flat] = random_state.uniform(-10.0, 10.0, size=(coords.shape[0], int(flat.sum())))
    expansion = 10.0 / np.abs(coords).max()
    emb = (coords * expansion).astype(np.float32)
    emb = emb + random_state.normal(scale=0.0001, size=emb.shape).astype(np.float32)
    low, high = emb.min(axis=0), emb.max(axis=0)
    return (10.0 * (emb - low) / (high - low)).astype(np.float32, order="C")


def umap_layout(x: np.ndarray, n_neighbors: int, dim: int, seed: int, n_epochs: int | None) -> np.ndarray:
    """UMAP (cosine) of the unit rows ``x`` to ``dim`` dimensions, identical on every machine.

    ``n_epochs=None`` takes UMAP's default (500 up to 10,000 points, 200 above).
    """
    from umap.umap_ import fuzzy_simplicial_set, make_epochs_per_sample

    n = x.shape[0]
    random_state = np.random.RandomState(seed)
    idx, dist = exact_knn(x, n_neighbors)
    far = dist >= _COSINE_DISCONNECTION
    idx[far], dist[far] = -1, np.inf
    graph, _sigmas, _rhos = fuzzy_simplicial_set(x, n_neighbors, random_state, "cosine",
                                                 knn_indices=idx, knn_dists=dist)
    graph = graph.tocoo()
    graph.sum_duplicates()
    default_epochs = 500 if n <= 10_000 else 200
    epochs = int(n_epochs) if n_epochs is not None else default_epochs
    # UMAP drops edges too weak to be sampled once in the run.
    graph.data[graph.data < graph.data.max() / float(epochs if epochs > 10 else default_epochs)] = 0.0
    graph.eliminate_zeros()
    emb = _initial(x, dim, random_state)
    epochs_per_sample = make_epochs_per_sample(graph.data, epochs)
    rng_state = random_state.randint(np.iinfo(np.int32).min + 1, np.iinfo(np.int32).max - 1, 3).astype(np.int64)
    rng_per_sample = np.full((n, 3), rng_state, dtype=np.int64) + emb[:, 0].astype(np.float64).view(
        np.int64).reshape(-1, 1)
    out = _optimise(emb, graph.row.astype(np.int64), graph.col.astype(np.int64), epochs_per_sample,
                    CURVE_A, CURVE_B, rng_per_sample, epochs)
    return np.asarray(out, dtype=np.float64)
