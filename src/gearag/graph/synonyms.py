"""Synonym edges: names whose embeddings are similar (HippoRAG's KNN synonym edges).

HippoRAG (Gutiérrez et al., 2024, §3.2) adds an edge between two phrase
nodes whose retrieval-encoder embeddings have cosine similarity ≥ 0.8
(among each node's nearest neighbours), weighted by the similarity, so that
a walk can cross between spellings of one entity ("Dell Curry" / "Wardell
Curry"). One implementation serves the HippoRAG baseline's phrase graph
(:mod:`gearag.baselines.phrases`) and gearag's passage-aware graph
(:mod:`gearag.graph.passage_graph`, computed at index time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import sparse

#: Rows of the name matrix compared at once: a block is ``SYNONYM_BLOCK × names``
#: float32 (512 × 60k ≈ 120 MB at 2Wiki's size).
SYNONYM_BLOCK = 512


def synonym_edges(vectors: np.ndarray, threshold: float, max_neighbours: int,
                  block: int = SYNONYM_BLOCK) -> sparse.csr_matrix:
    """Symmetric phrase×phrase synonym weights: cosine ≥ ``threshold`` among each phrase's
    ``max_neighbours`` most similar others (HippoRAG's KNN synonym edges, weight = similarity).

    ``vectors`` are unit rows. Works block by block (memory ``block × n``), never ``n × n``.
    """
    n = vectors.shape[0]
    if n < 2 or max_neighbours <= 0:
        return sparse.csr_matrix((n, n), dtype=np.float64)
    mat = np.ascontiguousarray(vectors, dtype=np.float32)
    rows_out: list[np.ndarray] = []
    cols_out: list[np.ndarray] = []
    vals_out: list[np.ndarray] = []
    for start in range(0, n, block):
        sims = mat[start : start + block] @ mat.T
        local = np.arange(sims.shape[0])
        sims[local, start + local] = -np.inf  # no self-edges
        r, c = np.nonzero(sims >= threshold)
        if r.size == 0:
            continue
        v = sims[r, c]
        # Keep each row's max_neighbours best: order by (row, -similarity, column), rank within row.
        order = np.lexsort((c, -v, r))
        r, c, v = r[order], c[order], v[order]
        first = np.searchsorted(r, r, side="left")
        rank = np.arange(r.size) - first
        keep = rank < max_neighbours
        rows_out.append(r[keep] + start)
        cols_out.append(c[keep])
        vals_out.append(v[keep].astype(np.float64))
    if not rows_out:
        return sparse.csr_matrix((n, n), dtype=np.float64)
    m = sparse.coo_matrix((np.concatenate(vals_out), (np.concatenate(rows_out), np.concatenate(cols_out))),
                          shape=(n, n)).tocsr()
    return m.maximum(m.T).tocsr()


def synonym_matrix(keys: Sequence[str | None], embed: Callable[[list[str]], np.ndarray], threshold: float,
                   max_neighbours: int) -> sparse.csr_matrix:
    """:func:`synonym_edges` between the entities ``keys`` name (None: an entity without a name, which has none),
    as float32, ``len(keys)`` square.

    The names are embedded and compared in the order of their keys, not of their ids, so the same names give
    the same edges bit for bit whatever ids they have: a neighbour's rank among equally similar ones, the
    embedder's batches and the matrix product's blocks follow the keys. That is what lets an add or a delete
    derive them again over its own numbering and equal a rebuild (:mod:`gearag.graph.edge_kinds`).
    """
    ids = np.asarray([i for i, k in enumerate(keys) if k is not None], dtype=np.int64)
    named = [keys[i] for i in ids.tolist()]
    order = np.asarray(sorted(range(len(named)), key=named.__getitem__), dtype=np.int64)
    n = len(keys)
    if not len(order):
        return sparse.csr_matrix((n, n), dtype=np.float32)
    edges = synonym_edges(np.asarray(embed([named[i] for i in order.tolist()]), dtype=np.float32), threshold,
                          max_neighbours).tocoo()
    at = ids[order]  # key order → entity id
    out = sparse.csr_matrix((edges.data.astype(np.float32), (at[edges.row], at[edges.col])), shape=(n, n))
    out.sort_indices()
    return out
