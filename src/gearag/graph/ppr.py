"""Weighted Personalized PageRank over a sparse graph (power iteration).

The stationary distribution of a walk that, at every step, follows an edge
with probability ``damping`` (chosen in proportion to the edge weights) and
otherwise jumps back to a node drawn from the seed distribution ``s``::

    p = (1 - d) · s + d · (M p + m(p) · s)

``M`` is the column-normalised adjacency (``M[i, j] = A[i, j] / Σ_i A[i, j]``)
and ``m(p)`` the mass on dangling nodes (no out-edges), which restarts at the
seeds, as in igraph's PRPACK personalised PageRank that HippoRAG calls.

Constants and their sources:

* ``DAMPING = 0.5`` — HippoRAG (Gutiérrez et al., 2024, §3.2 and App. B) and
  HippoRAG 2 use 0.5 (igraph's ``damping``); LinearRAG keeps it.
* ``TOL = 1e-7`` (L1 change per iteration) and ``MAX_ITER = 100``: with
  d = 0.5 the error shrinks by at least half per iteration, so ~24
  iterations reach 1e-7; the cap only guards against misuse.

Two solvers (``SOLVERS``):

* ``power`` — :meth:`PageRankOperator.run`, power iteration. Every iteration
  is a product with the whole matrix, so a query costs O(edges × iterations)
  however local its seeds: 87% of a SyncGE query at 100k passages
  (docs/benchmarks-log.md, "Scale").
* ``push`` — :meth:`PageRankOperator.run_push`, forward push (Andersen,
  Chung & Lang, FOCS 2006, "Local graph partitioning using PageRank
  vectors", Algorithm *ApproximatePageRank*), in synchronous rounds: every
  node ``u`` whose residual exceeds ``eps × deg(u)`` keeps ``1 - d`` of it
  and passes ``d`` of it along its out-edges in proportion to their weights
  (a dangling node's share restarts at the seeds, as above). The degree in
  the threshold is the paper's: it is what bounds the total work by
  ``1 / (eps (1 - d))`` edge visits whatever the graph's size, so a query
  costs the seeds' neighbourhood, not the corpus. The estimate lies below the
  exact vector node by node; their L1 distance is the residual mass left.
  ``PUSH_EPS = 1e-6``: on the 30k and 100k synthetic corpora its top-15
  passages agree with the exact vector as often as power iteration at the
  ranking tolerance does (docs/benchmarks-log.md, "Local PPR"). A threshold without
  the degree (tried before) keeps pushing hub nodes and lost to power
  iteration.

This module knows nothing about passages or entities; it is shared by the
passage-aware graph and the HippoRAG baselines.
"""

from __future__ import annotations

import threading

import numpy as np
from scipy import sparse

from gearag import deadline as call_deadline
from gearag import setops
from gearag.graph.config import DAMPING as DAMPING
from gearag.graph.config import PUSH_EPS as PUSH_EPS
from gearag.graph.config import SOLVERS as SOLVERS
from gearag.graph.transition import Csr, Normalised, Transition, column_normalised

TOL = 1e-7
MAX_ITER = 100
#: Forward push keeps each thread's estimate and residual in two dense float64 arrays (16 bytes a node, kept
#: between queries, so a query neither allocates nor clears node-sized vectors) on graphs of at most this
#: many nodes: 256 MB a thread. Larger graphs hold only the nodes a query touches, so the memory a query
#: process keeps does not grow with the corpus. Both give the same estimates, bit for bit (tested).
DENSE_WORKSPACE_NODES = 1 << 24


class PageRankOperator:
    """A graph's column-normalised transition matrix, prepared once, run per seed vector."""

    def __init__(self, adjacency: sparse.spmatrix, dtype: type = np.float64, *, columns: bool = False,
                 dense_nodes: int | None = None) -> None:
        """``columns``: keep the matrix by columns (what :meth:`run_push` reads) rather than by rows
        (what :meth:`run` multiplies with); either is converted on first use of the other solver.
        ``dense_nodes``: up to how many nodes push keeps dense work arrays (None: :data:`DENSE_WORKSPACE_NODES`)."""
        adj = sparse.csr_matrix(adjacency, dtype=np.float64)
        if adj.shape[0] != adj.shape[1]:
            raise ValueError(f"adjacency must be square, got {adj.shape}")
        if adj.nnz and adj.data.min() < 0:
            raise ValueError("edge weights must be non-negative")
        self._rows: sparse.csr_matrix | None = None
        self._columns: Transition | None = None
        if columns:
            self._columns = Normalised.of(adj, dtype)
            self.dangling = self._columns.dangling
        else:
            transition, self.dangling = column_normalised(adj, dtype)
            self._rows = transition.tocsr()
        self.dtype = dtype
        self.n = adj.shape[0]
        self.dense_nodes = DENSE_WORKSPACE_NODES if dense_nodes is None else dense_nodes
        self._local = threading.local()  # per-thread push work arrays (run_push_sparse)

    @classmethod
    def from_columns(cls, columns: Transition, dense_nodes: int | None = None) -> PageRankOperator:
        """An operator over a transition kept by columns: stored normalised (memory-mapped arrays are read, never
        copied, by push), or as its sources, normalised as they are read (:mod:`gearag.graph.scaled`)."""
        op = cls.__new__(cls)
        op._rows, op._columns, op.dtype, op.dangling = None, columns, columns.dtype, columns.dangling
        op.n = columns.n_rows
        op.dense_nodes = DENSE_WORKSPACE_NODES if dense_nodes is None else dense_nodes
        op._local = threading.local()
        return op

    @property
    def columns(self) -> Transition:
        """The column-normalised transition by columns (node j's out-edges are column j)."""
        if self._columns is None:
            self._columns = Normalised(Csr.of(self.transition.tocsc()), self.dangling, self.dtype)
        return self._columns

    @property
    def transition(self) -> sparse.csr_matrix:
        """The column-normalised transition matrix, by rows."""
        if self._rows is None:
            assert self._columns is not None
            self._rows = self._columns.to_csr().T.tocsr()  # column j is its row j: the transition is the transpose
        return self._rows

    def _seed_distribution(self, seeds: np.ndarray, damping: float, size: int | None = None) -> np.ndarray | None:
        """``seeds`` normalised to sum 1 (float64), None when all zero; checks the arguments.

        ``size``: the length of the seed vector when ``seeds`` holds only its non-zero entries.
        """
        s = np.asarray(seeds, dtype=np.float64).ravel()
        size = s.shape[0] if size is None else size
        if size != self.n:
            raise ValueError(f"seeds has {size} entries for a graph of {self.n} nodes")
        if (s < 0).any():
            raise ValueError("seed weights must be non-negative")
        if not 0.0 <= damping < 1.0:
            raise ValueError("damping must be in [0, 1)")
        total = s.sum()
        return s / total if total > 0 else None

    def run(
        self, seeds: np.ndarray, damping: float = DAMPING, tol: float = TOL, max_iter: int = MAX_ITER
    ) -> np.ndarray:
        """PPR probabilities (sum 1) for non-negative ``seeds`` (any scale; all-zero → zeros)."""
        dist = self._seed_distribution(seeds, damping)
        if dist is None:
            return np.zeros(self.n)
        s: np.ndarray = dist.astype(self.dtype)
        p = s.copy()
        has_dangling = bool(self.dangling.any())
        for _ in range(max_iter):
            call_deadline.check()
            nxt = self.transition @ p
            if has_dangling:
                nxt += p[self.dangling].sum() * s
            nxt = damping * nxt + (1.0 - damping) * s
            delta = np.abs(nxt - p).sum()
            p = nxt
            if delta < tol:
                break
        return p

    def run_push(
        self, seeds: np.ndarray, damping: float = DAMPING, eps: float = PUSH_EPS
    ) -> tuple[np.ndarray, float]:
        """Forward-push PPR of ``seeds``: (estimate, residual mass left = its L1 distance to the exact vector).

        Local: the rounds visit only the pushed nodes' out-edges (module docstring).
        """
        dense = np.asarray(seeds).ravel()
        seeds_at = np.flatnonzero(dense)
        if dense.shape[0] != self.n:
            raise ValueError(f"seeds has {dense.shape[0]} entries for a graph of {self.n} nodes")
        nodes, values, residual = self.run_push_sparse(seeds_at, dense[seeds_at], damping, eps, residual=True)
        p = np.zeros(self.n)
        p[nodes] = values
        return p, residual

    def _workspace(self) -> _Dense | _Touched:
        """Work arrays for one push: this thread's dense ones (zero between runs: a run resets what it
        touched) on a graph of at most :attr:`dense_nodes` nodes, else new ones over the nodes it touches."""
        if self.n > self.dense_nodes:
            return _Touched()
        ws = getattr(self._local, "arrays", None)
        if ws is None:
            ws = self._local.arrays = _Dense(self.n)
        return ws

    def run_push_sparse(
        self, nodes: np.ndarray, values: np.ndarray, damping: float = DAMPING, eps: float = PUSH_EPS,
        *, residual: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Forward push from the seeds ``values`` at ``nodes`` (ascending, distinct, non-zero):
        the nodes with an estimate (those pushed at least once, ascending), their estimates, and with
        ``residual`` the residual mass left (else NaN: summing it needs every touched node once).

        No step costs the graph's size: the estimate and residual live in
        per-thread arrays allocated once and reset where a run touched them, so a
        query on a million-passage graph does not allocate, scan or sum node-sized
        vectors (they were three quarters of a SyncGE query there); above
        :attr:`dense_nodes` nodes, in arrays over the nodes the run touches
        (:data:`DENSE_WORKSPACE_NODES`). The estimates are those :meth:`run_push`
        returns for the dense seed vector, either way.
        """
        if eps <= 0:
            raise ValueError("eps must be positive")
        seeds_at = np.asarray(nodes, dtype=np.int64)
        s = self._seed_distribution(values, damping, size=self.n)
        if s is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0), 0.0
        cols = self.columns  # out-edges of node j = column j
        degree = cols.degrees  # read per node: no node-sized array is made or kept

        ws = self._workspace()
        reached = [seeds_at]
        pushed = []
        try:
            at = ws.positions(seeds_at)  # positions in the work arrays (a new node moves the others: taken anew)
            ws.r[at] = s
            active = seeds_at[ws.r[at] > eps * degree(seeds_at)]
            while active.size:
                call_deadline.check()  # a service request past its limit stops here (gearag.deadline)
                pushed.append(active)
                at = ws.positions(active)
                mass = ws.r[at]
                ws.r[at] = 0.0
                ws.p[at] += (1.0 - damping) * mass
                push = damping * mass
                dangling = self.dangling[active]
                touched = []
                if dangling.any():  # a walk that cannot leave a node restarts at the seeds
                    at = ws.positions(seeds_at)
                    ws.r[at] += push[dangling].sum() * s
                    touched.append(seeds_at)
                live = active[~dangling]
                if live.size:
                    _, targets, weights = cols.edges(live, push[~dangling])
                    at = ws.positions(targets)
                    np.add.at(ws.r, at, weights)
                    touched.append(targets)
                    reached.append(targets)
                if not touched:
                    break
                candidates = np.concatenate(touched)  # threshold first: most touched nodes stay below it
                at = ws.positions(candidates)  # each one reached already: nothing moves from here on
                active = setops.unique(candidates[ws.r[at] > eps * degree(candidates)])
            out = setops.unique(np.concatenate(pushed)) if pushed else np.zeros(0, dtype=np.int64)
            at = ws.positions(out)
            estimates = ws.p[at].copy()
            left = float("nan")
            if residual:
                at = ws.positions(setops.unique(np.concatenate(reached)))
                left = float(ws.r[at].sum())
        finally:  # leave the work arrays zero for the next run, even after an error
            ws.reset(np.concatenate(reached))
        return out, estimates, left


class _Dense:
    """Push work arrays over every node, indexed by node id (kept per thread, zeroed where a run went)."""

    def __init__(self, n: int) -> None:
        self.p, self.r = np.zeros(n), np.zeros(n)

    @staticmethod
    def positions(nodes: np.ndarray) -> np.ndarray:
        return nodes

    def reset(self, nodes: np.ndarray) -> None:
        self.p[nodes] = 0.0
        self.r[nodes] = 0.0


class _Touched:
    """Push work arrays over the nodes one run touched, in node order (``nodes``, sorted)."""

    def __init__(self) -> None:
        self.nodes = np.zeros(0, dtype=np.int64)
        self.p, self.r = np.zeros(0), np.zeros(0)

    def positions(self, nodes: np.ndarray) -> np.ndarray:
        """Where ``nodes`` are in the arrays; nodes not there yet are added, with zeros."""
        at = np.searchsorted(self.nodes, nodes)
        known = at < len(self.nodes)
        known[known] = self.nodes[at[known]] == nodes[known]
        if known.all():
            return at
        new = setops.unique(nodes[~known])
        where = np.searchsorted(self.nodes, new)
        self.nodes = np.insert(self.nodes, where, new)
        self.p, self.r = np.insert(self.p, where, 0.0), np.insert(self.r, where, 0.0)
        return np.searchsorted(self.nodes, nodes)

    def reset(self, nodes: np.ndarray) -> None:
        """Nothing to clear: the arrays belong to one run."""


def personalized_pagerank(
    adjacency: sparse.spmatrix,
    seeds: np.ndarray,
    damping: float = DAMPING,
    tol: float = TOL,
    max_iter: int = MAX_ITER,
) -> np.ndarray:
    """PPR of ``seeds`` over ``adjacency`` (``A[i, j]`` = weight of the edge j → i; symmetric for
    an undirected graph). Prepare a :class:`PageRankOperator` to run many seed vectors on one graph."""
    return PageRankOperator(adjacency).run(seeds, damping, tol, max_iter)
