"""RAPTOR-style soft clustering: UMAP reduction + Gaussian mixtures chosen by BIC.

What the released SiReRAG code does (LlamaIndex RaptorPack's clustering, which
SiReRAG builds on): at most 11 nodes form one cluster; otherwise a *global*
UMAP (10 components, cosine, ``n_neighbors = int(sqrt(n - 1))``) and a GMM whose
number of components minimises BIC over ``k = 1 … min(50, n) - 1`` give soft
clusters (membership probability > 0.1); each global cluster is then clustered
again *locally* (UMAP with ``n_neighbors = 10`` and the same GMM); clusters whose
texts exceed 10,000 tokens are clustered again.

Where this module deviates, and why (each fixes a failure reported by users of
that code path):

* ``n_neighbors`` is capped (:attr:`ClusterConfig.max_global_neighbors`): the
  uncapped square root grows with the corpus and ran out of memory near 100k
  chunks; beyond a few dozen neighbours UMAP's graph barely changes.
* Tiny inputs never reach UMAP with impossible parameters: ``n_components`` is
  at most ``n - 2``, ``n_neighbors`` at least 2, and inputs of at most
  :attr:`ClusterConfig.single_cluster_max` nodes (or with fewer distinct rows
  than that) form one cluster. If UMAP still fails, PCA reduces instead.
* Covariance collapse (duplicate or near-duplicate points) is prevented by
  fitting on standardised UMAP coordinates with diagonal covariance and
  ``reg_covar = 1e-2`` (RAGFlow's fix is diag + 1e-4 on raw coordinates; see
  :attr:`ClusterConfig.reg_covar` for why the floor must be higher for BIC to
  stay sane with diagonal covariance); should a fit still fail, a retry with a
  stronger regulariser, then a single cluster.
* The BIC sweep is bounded: candidate ``k`` on a coarse geometric grid, refined
  around the best grid point, fitted on a seeded subsample of at most
  :attr:`ClusterConfig.bic_sample` points; the chosen ``k`` is then fitted on
  all points. The exhaustive sweep over 49 values of ``k`` on 11k points is
  what makes the released code slow.
* Every node ends in at least one cluster: a node with no membership above the
  threshold joins its most probable component (the released code drops it).
* Reclustering an over-long cluster makes guaranteed progress: it recurses only
  on strictly smaller sets and at most :attr:`ClusterConfig.max_recluster_depth`
  deep; when clustering cannot split a set, the set is cut deterministically
  into token-bounded runs along its first principal axis.
* Clusters are lists of **row indices** into the input, never recovered by
  comparing embeddings (identical texts cannot swap clusters); duplicate
  clusters are merged, and the output order is canonical (sorted rows).
* The same clusters on every machine, not only on one: the k-NN
  graph, the PCA and the UMAP layout are computed so that no BLAS kernel,
  SIMD level, numba target or thread count changes a bit
  (:mod:`gearag.sirerag.exact`, :mod:`gearag.sirerag.layout`; UMAP starts from
  PCA rather than its spectral layout). The Gaussian mixtures stay
  scikit-learn's, on one BLAS thread: across kernels their probabilities
  differ by at most ~5e-13, while on HotpotQA the closest membership was
  6e-5 from the threshold and the closest BIC choice 0.27 apart
  (docs/benchmarks-log.md, "The same trees on every machine").
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gearag import setops
from gearag.sirerag.exact import exact_knn, principal_coords

__all__ = ["ClusterConfig", "ClusterStats", "candidate_ks", "choose_k", "cluster", "exact_knn"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """Parameters of :func:`cluster`; defaults follow the released code unless noted."""

    #: UMAP output dimension (released code: 10; RAPTOR: ``min(10, n - 2)``, applied here too).
    n_components: int = 10
    #: UMAP metric (released code: cosine).
    metric: str = "cosine"
    #: Cap on the global ``n_neighbors = int(sqrt(n - 1))`` (ours; the released code has none).
    #: 50 is reached at n = 2,501; the 2Wiki leaf level (6,119) would otherwise use 78.
    max_global_neighbors: int = 50
    #: Local UMAP ``n_neighbors`` (released code: 10).
    local_neighbors: int = 10
    #: UMAP epochs; ``None`` lets UMAP choose (500 below 10k points, 200 above). Ours: 200
    #: always, which moves clusters little and halves the local-clustering time.
    umap_epochs: int | None = 200
    #: Soft-membership probability threshold (released code and RAPTOR: 0.1).
    threshold: float = 0.1
    #: Largest ``k`` tried, exclusive as in the released ``range(1, min(50, n))``.
    max_clusters: int = 50
    #: At most this many nodes form a single cluster without any fitting (released code: 11).
    single_cluster_max: int = 11
    #: Coarse BIC grid size (ours): geometric grid over ``1 … max_k``.
    bic_grid: int = 10
    #: Extra ``k`` values tried between the best grid point and its grid neighbours (ours).
    bic_refine: int = 4
    #: Model selection uses at most this many points, a seeded subsample (ours).
    bic_sample: int = 1500
    #: GMM covariance. Released code: full. Ours: diagonal (RAGFlow's fix for covariance
    #: collapse); with k-means++ initialisation it fits 10-50x faster than full + k-means
    #: on 10-d UMAP output, which is what makes the BIC sweep affordable.
    covariance_type: str = "diag"
    #: GMM initialisation (sklearn's default is a full k-means; ours: k-means++ seeds only).
    gmm_init: str = "k-means++"
    #: GMM covariance regulariser, added to every variance of the *standardised* UMAP
    #: coordinates (ours: each dimension is scaled to unit variance before fitting).
    #: sklearn's default 1e-6 collapses on duplicates; RAGFlow uses 1e-4 on raw coordinates.
    #: With diagonal covariance, anything below ~1e-2 lets BIC prefer one component per
    #: point (a near-zero variance buys more likelihood than a component's 21 parameters
    #: cost), so the floor is a component spread of 0.1 standard deviations.
    reg_covar: float = 1e-2
    #: EM iterations per fit (sklearn's default 100).
    gmm_max_iter: int = 100
    #: Reclustering size limit in tokens (released code: 10,000; RAPTOR: 3,500).
    max_cluster_tokens: int = 10_000
    #: Reclustering depth bound (ours; the released recursion is unbounded).
    max_recluster_depth: int = 4
    #: Seed of UMAP, the GMMs and the BIC subsample (RAPTOR's RANDOM_SEED is 224).
    seed: int = 224


@dataclass
class ClusterStats:
    """What happened during one :func:`cluster` call (for benchmarks and logs)."""

    umap_runs: int = 0
    umap_seconds: float = 0.0
    gmm_fits: int = 0
    gmm_seconds: float = 0.0
    gmm_fallbacks: int = 0
    chosen_k: list[int] = field(default_factory=list)
    argmax_fallbacks: int = 0
    reclustered: int = 0
    forced_splits: int = 0


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; all-zero rows become a fixed unit vector (cosine needs a direction)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    zero = norms[:, 0] == 0
    if zero.any():
        out[zero, 0] = 1.0
    return out


def _distinct_rows(x: np.ndarray) -> int:
    return int(np.unique(np.round(x, 6), axis=0).shape[0])


def _require(module: str, package: str):
    """Import an optional dependency of the SiReRAG trees, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        from gearag.errors import ConfigError

        raise ConfigError(f"SiReRAG clustering needs {package}: pip install 'gearag[sirerag]'") from exc


def _reduce(x: np.ndarray, n_neighbors: int, cfg: ClusterConfig, stats: ClusterStats) -> np.ndarray:
    """UMAP to ``min(n_components, n - 2)`` dimensions, with PCA as the fallback; the same on every machine.

    Cosine (the released setting) goes through :func:`gearag.sirerag.layout.umap_layout`, whose
    neighbours, initialisation and epochs do not depend on the CPU; another metric uses umap-learn
    as it is, which is repeatable on one machine only.
    """
    n = x.shape[0]
    dim = max(1, min(cfg.n_components, n - 2))
    n_neighbors = int(max(2, min(n_neighbors, n - 1)))
    umap = _require("umap", "umap-learn")
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if cfg.metric == "cosine":
                from gearag.sirerag.layout import umap_layout

                out = umap_layout(x, n_neighbors, dim, cfg.seed, cfg.umap_epochs)
            else:
                reducer = umap.UMAP(n_neighbors=n_neighbors, n_components=dim, metric=cfg.metric,
                                    random_state=cfg.seed, n_epochs=cfg.umap_epochs,
                                    init="spectral" if n > dim + 2 else "random", low_memory=True, n_jobs=1)
                out = np.asarray(reducer.fit_transform(x), dtype=np.float64)
        if not np.isfinite(out).all():
            raise FloatingPointError("UMAP produced non-finite coordinates")
    except Exception as exc:
        log.warning("UMAP failed on %d points (%s); using PCA", n, exc)
        out = principal_coords(x, dim)
    stats.umap_runs += 1
    stats.umap_seconds += time.perf_counter() - start
    return out


def _fit_gmm(x: np.ndarray, k: int, cfg: ClusterConfig, stats: ClusterStats):
    """A fitted GaussianMixture, or ``None`` when even the regularised fallbacks fail."""
    GaussianMixture = _require("sklearn.mixture", "scikit-learn").GaussianMixture  # noqa: N806

    start = time.perf_counter()
    attempts = [(cfg.covariance_type, cfg.reg_covar), ("diag", max(cfg.reg_covar, 1e-2) * 10)]
    try:
        for i, (cov, reg) in enumerate(attempts):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    gmm = GaussianMixture(
                        n_components=k, covariance_type=cov, reg_covar=reg,
                        max_iter=cfg.gmm_max_iter, random_state=cfg.seed, init_params=cfg.gmm_init,
                    ).fit(x)
                stats.gmm_fits += 1
                if i:
                    stats.gmm_fallbacks += 1
                return gmm
            except (ValueError, np.linalg.LinAlgError) as exc:
                log.debug("GMM k=%d %s failed: %s", k, cov, exc)
        stats.gmm_fallbacks += 1
        return None
    finally:
        stats.gmm_seconds += time.perf_counter() - start


def candidate_ks(max_k: int, grid: int) -> list[int]:
    """The coarse BIC grid: about ``grid`` geometrically spaced values in ``1 … max_k``."""
    if max_k <= grid:
        return list(range(1, max_k + 1))
    values = setops.unique(np.round(np.geomspace(1, max_k, num=grid)).astype(int))
    return [int(v) for v in values]


def choose_k(x: np.ndarray, cfg: ClusterConfig, stats: ClusterStats) -> int:
    """Number of mixture components minimising BIC, over a bounded, refined grid on a subsample."""
    n = x.shape[0]
    max_k = max(1, min(cfg.max_clusters, n) - 1)
    if max_k == 1:
        return 1
    sample = x
    if n > cfg.bic_sample:
        rng = np.random.default_rng(cfg.seed)
        sample = x[np.sort(rng.choice(n, size=cfg.bic_sample, replace=False))]
        max_k = min(max_k, sample.shape[0] - 1)
    bics: dict[int, float] = {}

    def score(k: int) -> float:
        if k not in bics:
            gmm = _fit_gmm(sample, k, cfg, stats)
            bics[k] = math.inf if gmm is None else float(gmm.bic(sample))
        return bics[k]

    grid = candidate_ks(max_k, cfg.bic_grid)
    for k in grid:
        score(k)
    best = min(grid, key=lambda k: (bics[k], k))
    i = grid.index(best)
    lo = grid[i - 1] if i > 0 else best
    hi = grid[i + 1] if i + 1 < len(grid) else best
    between = [k for k in range(lo + 1, hi) if k != best]
    if between and cfg.bic_refine > 0:
        step = max(1, math.ceil(len(between) / cfg.bic_refine))
        for k in between[::step]:
            score(k)
    finite = [k for k, b in bics.items() if math.isfinite(b)]
    return min(finite, key=lambda k: (bics[k], k)) if finite else 1


def _standardise(x: np.ndarray) -> np.ndarray:
    centred = x - x.mean(axis=0, keepdims=True)
    std = centred.std(axis=0, keepdims=True)
    return np.divide(centred, std, out=np.zeros_like(centred), where=std > 1e-12)


def _soft_labels(x: np.ndarray, cfg: ClusterConfig, stats: ClusterStats) -> list[np.ndarray]:
    """Soft GMM clusters of ``x`` as lists of local indices; every point is in at least one."""
    n = x.shape[0]
    x = _standardise(x)
    k = choose_k(x, cfg, stats)
    stats.chosen_k.append(k)
    if k <= 1:
        return [np.arange(n)]
    gmm = _fit_gmm(x, k, cfg, stats)
    if gmm is None:
        return [np.arange(n)]
    probs = gmm.predict_proba(x)
    member = probs > cfg.threshold
    orphans = ~member.any(axis=1)
    if orphans.any():
        stats.argmax_fallbacks += int(orphans.sum())
        member[np.flatnonzero(orphans), probs[orphans].argmax(axis=1)] = True
    clusters = [np.flatnonzero(member[:, j]) for j in range(k)]
    return [c for c in clusters if c.size]


def _global_local(x: np.ndarray, cfg: ClusterConfig, stats: ClusterStats) -> list[np.ndarray]:
    """One round of global then local clustering; returns lists of local indices."""
    n = x.shape[0]
    if n <= cfg.single_cluster_max or _distinct_rows(x) <= cfg.single_cluster_max:
        return [np.arange(n)]
    neighbors = min(cfg.max_global_neighbors, int(math.sqrt(n - 1)))
    reduced = _reduce(x, neighbors, cfg, stats)
    out: list[np.ndarray] = []
    for members in _soft_labels(reduced, cfg, stats):
        # The released code keeps a global cluster whole when it has at most
        # n_components + 1 nodes; so do we (and for near-duplicates).
        sub = x[members]
        if members.size <= cfg.n_components + 1 or _distinct_rows(sub) <= cfg.single_cluster_max:
            out.append(members)
            continue
        local = _reduce(sub, cfg.local_neighbors, cfg, stats)
        out.extend(members[c] for c in _soft_labels(local, cfg, stats))
    return out


def _split_by_tokens(rows: np.ndarray, x: np.ndarray, tokens: np.ndarray, limit: int) -> list[np.ndarray]:
    """Cut ``rows`` into runs of at most ``limit`` tokens along the first principal axis (≥ 1 node each)."""
    if rows.size <= 1:
        return [rows]
    proj = principal_coords(x[rows], 1)[:, 0] if _distinct_rows(x[rows]) > 1 else np.zeros(rows.size)
    order = rows[np.lexsort((rows, proj))]  # exact coordinates (machine-independent), ties by row
    out: list[np.ndarray] = []
    current: list[int] = []
    used = 0
    for r in order:
        t = int(tokens[r])
        if current and used + t > limit:
            out.append(np.sort(np.asarray(current, dtype=np.int64)))
            current, used = [], 0
        current.append(int(r))
        used += t
    if current:
        out.append(np.sort(np.asarray(current, dtype=np.int64)))
    return out


def cluster(
    embeddings: np.ndarray,
    tokens: Sequence[int] | np.ndarray | None = None,
    config: ClusterConfig | None = None,
    stats: ClusterStats | None = None,
) -> list[np.ndarray]:
    """Soft-cluster the rows of ``embeddings``.

    ``tokens`` are the token counts of the rows' texts, for the reclustering
    size limit (``None``: no limit). Returns clusters as sorted ``int64``
    arrays of row indices, distinct, in canonical order (by their rows); every
    row is in at least one cluster. An empty input gives ``[]``.
    """
    cfg = config or ClusterConfig()
    stats = stats if stats is not None else ClusterStats()
    x = np.asarray(embeddings)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be a 2-d array, got shape {x.shape}")
    n = x.shape[0]
    if n == 0:
        return []
    x = _unit_rows(x)
    tok = np.zeros(n, dtype=np.int64) if tokens is None else np.asarray(tokens, dtype=np.int64)
    if tok.shape != (n,):
        raise ValueError(f"tokens must have one count per row ({n}), got shape {tok.shape}")
    limit = cfg.max_cluster_tokens if tokens is not None else None

    def run(rows: np.ndarray, depth: int) -> list[np.ndarray]:
        found: list[np.ndarray] = []
        for local in _global_local(x[rows], cfg, stats):
            sub = rows[local]
            if limit is None or sub.size <= 1 or int(tok[sub].sum()) <= limit:
                found.append(sub)
            elif sub.size < rows.size and depth < cfg.max_recluster_depth:
                stats.reclustered += 1
                found.extend(run(sub, depth + 1))
            else:  # no progress possible by clustering: cut deterministically
                stats.forced_splits += 1
                found.extend(_split_by_tokens(sub, x, tok, limit))
        return found

    # One BLAS thread while clustering. A threaded BLAS may split a long dot product into per-thread
    # partial sums, whose total then depends on the thread count; the mixtures' products are not
    # exact (the k-NN and PCA products are, gearag.sirerag.exact). And the products here are small
    # (n x 10 for the mixtures, d x 10 per PCA step), where OpenBLAS's threads cost more CPU than
    # they save: a 994-passage tree takes ~25% less CPU. The limit is process-wide while it lasts;
    # it slows other threads' BLAS calls, never changes their results.
    with _require("threadpoolctl", "scikit-learn").threadpool_limits(limits=1, user_api="blas"):
        clusters = run(np.arange(n, dtype=np.int64), 0)
    unique = {tuple(int(r) for r in np.sort(c)) for c in clusters if c.size}
    ordered = sorted(unique)
    covered = np.zeros(n, dtype=bool)
    for c in ordered:
        covered[list(c)] = True
    if not covered.all():  # pragma: no cover - guaranteed by construction
        raise AssertionError("clustering lost rows")
    return [np.asarray(c, dtype=np.int64) for c in ordered]
