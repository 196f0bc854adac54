"""Compressed sparse rows as the prepared graph stores them, and the entity relations (issue 14)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from scipy import sparse

from gearag.graph.ranges import ranges

if TYPE_CHECKING:
    from gearag.graph.passage_graph import GraphArrays, PassageGraphConfig


class Csr(NamedTuple):
    """A compressed sparse matrix as its arrays (scipy would copy memory-mapped ones on construction)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    #: int32 per entry: the scale id of a raw weight (:mod:`gearag.graph.scaled`); None: weights as they are.
    sids: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Stored entries of each of ``rows`` (int64)."""
        return (self.indptr[rows + 1] - self.indptr[rows]).astype(np.int64)

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """The entries of ``rows``, row after row in the order given: (entries per row, indices, data, scale
        ids or None)."""
        starts = self.indptr[rows]
        counts = (self.indptr[rows + 1] - starts).astype(np.int64)
        take = ranges(starts, counts)
        sids = None if self.sids is None else np.asarray(self.sids[take])
        return counts, np.asarray(self.indices[take]), np.asarray(self.data[take]), sids

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays by field name (``sids`` only when there are some)."""
        return {k: v for k, v in self._asdict().items() if v is not None}

    def rows(self, rows: np.ndarray, n_columns: int) -> sparse.csr_matrix:
        """Rows ``rows`` as a scipy matrix of the stored weights (what ``matrix[rows]`` gives, reading only those
        rows; repeated entries, where there are some, are summed by what the caller does with it)."""
        counts, indices, data, _ = self.gather(rows)
        return rows_matrix(counts, indices, data, n_columns)

    @classmethod
    def of(cls, m: sparse.spmatrix) -> Csr:
        return cls(m.indptr, m.indices, m.data)


def rows_matrix(counts: np.ndarray, indices: np.ndarray, data: np.ndarray, n_columns: int) -> sparse.csr_matrix:
    """Gathered rows (``counts`` entries each, then their ``indices`` and ``data``) as a scipy matrix."""
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return sparse.csr_matrix((data, indices, indptr), shape=(len(counts), n_columns))


def relations(arrays: GraphArrays, config: PassageGraphConfig) -> sparse.csr_matrix:
    """Entity–entity edge weights: triple counts, plus the synonym edges times their weight."""
    return weighted_relations(arrays.relations, arrays.synonyms, config.synonym_weight)


def weighted_relations(counts: sparse.spmatrix, synonyms: sparse.spmatrix | None,
                       synonym_weight: float) -> sparse.csr_matrix:
    """:func:`relations` of the relation counts and the synonym edges (None: none) themselves (float64)."""
    rel = counts.astype(np.float64)
    if synonyms is not None and synonym_weight > 0:
        rel = (rel + synonym_weight * synonyms.astype(np.float64)).tocsr()
    return rel
