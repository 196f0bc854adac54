"""The PPR transition of the passage-node graph by columns, as the prepared graph stores it (issue 14)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from scipy import sparse

from gearag.graph.ranges import ranges

if TYPE_CHECKING:
    from gearag.graph.passage_graph import GraphArrays, PassageGraphConfig


class Csr(NamedTuple):
    """A compressed sparse matrix as its three arrays (scipy would copy memory-mapped ones on construction)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Stored entries of each of ``rows`` (int64)."""
        return (self.indptr[rows + 1] - self.indptr[rows]).astype(np.int64)

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries of ``rows``, row after row in the order given: (entries per row, indices, data)."""
        starts = self.indptr[rows]
        counts = (self.indptr[rows + 1] - starts).astype(np.int64)
        take = ranges(starts, counts)
        return counts, np.asarray(self.indices[take]), np.asarray(self.data[take])

    def rows(self, rows: np.ndarray, n_columns: int) -> sparse.csr_matrix:
        """Rows ``rows`` as a scipy matrix (what ``matrix[rows]`` gives, reading only those rows)."""
        counts, indices, data = self.gather(rows)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        return sparse.csr_matrix((data, indices, indptr), shape=(len(rows), n_columns))

    @classmethod
    def of(cls, m: sparse.spmatrix) -> Csr:
        return cls(m.indptr, m.indices, m.data)


def relations(arrays: GraphArrays, config: PassageGraphConfig) -> sparse.csr_matrix:
    """Entity–entity edge weights: triple counts, plus the synonym edges times their weight."""
    rel = arrays.relations.astype(np.float64)
    if arrays.synonyms is not None and config.synonym_weight > 0:
        rel = (rel + config.synonym_weight * arrays.synonyms.astype(np.float64)).tocsr()
    return rel


def transition_columns(arrays: GraphArrays, config: PassageGraphConfig, mentions: sparse.csr_matrix,
                       about: sparse.csr_matrix, threads: int = 1) -> tuple[Csr, np.ndarray]:
    """The PPR transition matrix by columns, float32, and the dangling nodes, for the passage-node graph.

    The adjacency ``A[i, j]`` (weight of the step j → i; passages first, then
    entities) has passage → entity weights ``mention + about_weight × about``,
    entity → passage weights ``backlink_weight × mention + about_weight ×
    about`` and the entity relations (:mod:`gearag.graph.passage_graph`).
    Column j of the transition is column j of ``A`` over its sum. Made here
    as the rows of ``Aᵀ``, block by block (passages' rows, then entities'),
    each normalised and cast to float32 before the next: a
    :class:`PageRankOperator` of the whole adjacency held float64 copies of
    it at once (a 4 GB transient at a million passages). The values are the
    operator's bit for bit: the same float64 sums, each column summed in the
    same order, one product and one cast per entry (tested).

    ``threads=2`` makes the two blocks at once, the entities' on a second
    thread (an add or a delete, whose wall time counts): each block is then
    made from the arrays alone (:func:`_entity_rows`), with the same values.
    At a million passages that took 3.5–4.3 s instead of 4.7–5.1 s, with a
    peak 1 GB higher (BENCHMARKS.md, "Adds at 1M: the transition's two blocks
    at once").
    """
    p = mentions.shape[0]
    if threads > 1:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gearag-entities") as pool:
            entities = pool.submit(_entity_rows, arrays, config, mentions, about)
            top = (mentions.astype(np.float64) + _about_t(config, about)).tocsr()
            return _joined([normalised_rows(top, shift=p), entities.result()])
    mentions64, about_t = mentions.astype(np.float64), _about_t(config, about)  # passage × entity
    # Passages' out-edges go to entities (node ids shifted past the passages).
    top = (mentions64 + about_t).tocsr()
    # Entities' out-edges go to passages, then to entities: the rows of [Bᵀ | R], B the passage × entity
    # backlink weights and R the relations. With a backlink weight of 1 (the default) B is the sum above
    # (x * 1.0 == x exactly), so it is not summed twice. [Bᵀ | R] is made as the one transpose of B stacked
    # over Rᵀ (a copy of each, then one pass in C), not as Bᵀ and then a stack along rows (two more passes).
    backlinks = top if config.backlink_weight == 1.0 else (mentions64 * config.backlink_weight + about_t).tocsr()
    del mentions64, about_t
    stacked = sparse.vstack([backlinks, relations(arrays, config).T.tocsr()], format="csr")
    del backlinks
    blocks = [normalised_rows(top, shift=p)]  # scales top in place: stacked holds its own copy
    del top
    bottom = stacked.T.tocsr()  # entity × node: sorted columns, each once (a transpose of canonical rows)
    del stacked
    blocks.append(normalised_rows(bottom, shift=0))
    del bottom
    return _joined(blocks)


def _about_t(config: PassageGraphConfig, about: sparse.csr_matrix) -> sparse.spmatrix:
    """The about weights by passage (passage × entity), times their weight, float64."""
    return (about.T * config.about_weight).astype(np.float64)


def _entity_rows(arrays: GraphArrays, config: PassageGraphConfig, mentions: sparse.csr_matrix,
                 about: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entities' out-edges, normalised, made from the arrays alone: ``[backlink × mentionsᵀ + about_weight ×
    about | R]``. Each entry is the sum the passages' block makes for it (``m + a`` in float64, the same
    operands), so the values are those of the transposed backlinks."""
    backlinks = mentions.T.tocsr().astype(np.float64)
    if config.backlink_weight != 1.0:
        backlinks = backlinks * config.backlink_weight
    backlinks = backlinks + (about * config.about_weight).astype(np.float64)
    rows = sparse.hstack([backlinks, relations(arrays, config)], format="csr")
    del backlinks
    return normalised_rows(rows, shift=0)


def _joined(blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> tuple[Csr, np.ndarray]:
    """The normalised blocks' rows, one after the other, as one matrix by columns and the dangling nodes."""
    counts = np.concatenate([b[0] for b in blocks])
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    dangling = np.concatenate([b[3] for b in blocks])
    return Csr(indptr, np.concatenate([b[1] for b in blocks]), np.concatenate([b[2] for b in blocks])), dangling


def normalised_rows(m: sparse.csr_matrix, shift: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of ``m`` (columns of the adjacency) over their sums: (entries per row, column ids + ``shift`` as
    int32, float32 values, rows with no weight). Zero products are dropped, as a sparse product drops them."""
    m.sum_duplicates()  # canonical: sorted columns, each once (each row then sums in column order)
    total = m @ np.ones(m.shape[1])  # a sequential sum per row, as the adjacency's column sums are made
    inv = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
    counts = np.diff(m.indptr).astype(np.int64)
    values = m.data  # m is the caller's temporary: scaled in place
    values *= np.repeat(inv, counts)
    keep = values != 0
    if keep.all():  # the usual case: no copies through the mask
        return counts, (m.indices + shift).astype(np.int32), values.astype(np.float32), total <= 0
    rows = np.repeat(np.arange(m.shape[0], dtype=np.int32), counts)
    counts = np.bincount(rows[keep], minlength=m.shape[0]).astype(np.int64)
    return counts, (m.indices[keep] + shift).astype(np.int32), values[keep].astype(np.float32), total <= 0
