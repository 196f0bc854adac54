"""A sparse matrix as a base and the rows a delta replaces or adds (docs/delta.md, issue 14).

A generation written as a delta keeps the base generation's union arrays as
they are (hard-linked, memory-mapped) and stores only the rows that differ:
:class:`LayeredCsr` reads row ``i`` from the delta when ``where[i] >= 0`` and
from the base otherwise; rows past the base's are always the delta's. It
answers what the readers ask of a :class:`~gearag.graph.transition.Csr`
(:meth:`counts`, :meth:`gather`, :meth:`rows`), so forward push, seeding and
beam search read either without knowing which.

:class:`NodeLayout` is the passage graph's node numbering in such a
generation: base passages, base entities, then the delta's passages and
entities (a delta appends ids and never moves a base one). Without a delta
it is the build's numbering, passages then entities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from gearag.graph.ranges import ranges
from gearag.graph.transition import Csr
from gearag.graph.trie import HashedNames


@dataclass(frozen=True)
class LayeredCsr:
    """Rows of ``base`` except where ``where`` (int32 per row, -1: the base's row) points into ``delta``."""

    base: Csr
    delta: Csr
    where: np.ndarray

    def __post_init__(self) -> None:
        n_base, n_delta = len(self.base.indptr) - 1, len(self.delta.indptr) - 1
        if len(self.where) < n_base:
            raise ValueError(f"a layered matrix maps {len(self.where)} rows over a base of {n_base}")
        beyond = np.asarray(self.where[n_base:])
        if len(beyond) and int(beyond.min()) < 0:
            raise ValueError("a row past the base must be the delta's")
        if len(self.where) and int(np.max(self.where, initial=-1)) >= n_delta:
            raise ValueError(f"a layered matrix points past its delta's {n_delta} rows")

    @property
    def n_rows(self) -> int:
        return len(self.where)

    def _split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: its row in the delta (-1: in the base) and a mask of the delta's."""
        at = np.asarray(self.where[rows], dtype=np.int64)
        return at, at >= 0

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Stored entries of each of ``rows`` (int64)."""
        rows = np.asarray(rows, dtype=np.int64)
        at, in_delta = self._split(rows)
        out = np.empty(len(rows), dtype=np.int64)
        b = rows[~in_delta]
        out[~in_delta] = self.base.indptr[b + 1] - self.base.indptr[b]
        d = at[in_delta]
        out[in_delta] = self.delta.indptr[d + 1] - self.delta.indptr[d]
        return out

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries of ``rows``, row after row in the order given: (entries per row, indices, data)."""
        rows = np.asarray(rows, dtype=np.int64)
        at, in_delta = self._split(rows)
        if not in_delta.any():
            return self.base.gather(rows)
        if in_delta.all():
            return self.delta.gather(at)
        counts = self.counts(rows)
        b_counts, b_idx, b_data = self.base.gather(rows[~in_delta])
        d_counts, d_idx, d_data = self.delta.gather(at[in_delta])
        # Each row's entries where the rows' order puts them: the base's and the delta's interleaved.
        starts = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        b_to = ranges(starts[~in_delta], b_counts)
        d_to = ranges(starts[in_delta], d_counts)
        total = int(counts.sum())
        indices = np.empty(total, dtype=np.result_type(b_idx, d_idx))
        data = np.empty(total, dtype=np.result_type(b_data, d_data))
        indices[b_to], indices[d_to] = b_idx, d_idx
        data[b_to], data[d_to] = b_data, d_data
        return counts, indices, data

    def rows(self, rows: np.ndarray, n_columns: int) -> sparse.csr_matrix:
        """Rows ``rows`` as a scipy matrix (what ``matrix[rows]`` gives)."""
        counts, indices, data = self.gather(np.asarray(rows, dtype=np.int64))
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return sparse.csr_matrix((data, indices, indptr), shape=(len(counts), n_columns))

    def to_csr(self, n_columns: int) -> sparse.csr_matrix:
        """The whole matrix in memory (power iteration, an export): every row gathered once."""
        return self.rows(np.arange(self.n_rows, dtype=np.int64), n_columns)


@dataclass(frozen=True)
class NodeLayout:
    """Node ids of the passage graph: base passages, base entities, delta passages, delta entities.

    ``n_passages``/``n_entities`` count all of them; the ``base_*`` counts
    are the base generation's (equal to the totals without a delta, where
    the layout is the build's: passages ``0..P``, entities ``P..P+E``).
    """

    n_passages: int
    n_entities: int
    base_passages: int
    base_entities: int

    @classmethod
    def plain(cls, n_passages: int, n_entities: int) -> NodeLayout:
        return cls(n_passages, n_entities, n_passages, n_entities)

    def __post_init__(self) -> None:
        if not (0 <= self.base_passages <= self.n_passages and 0 <= self.base_entities <= self.n_entities):
            raise ValueError(f"a base of {self.base_passages} passages and {self.base_entities} entities cannot "
                             f"grow to {self.n_passages} and {self.n_entities}")

    @property
    def n_nodes(self) -> int:
        return self.n_passages + self.n_entities

    @property
    def plain_layout(self) -> bool:
        """No delta: entity ``e`` is node ``n_passages + e``."""
        return self.base_passages == self.n_passages and self.base_entities == self.n_entities

    def entity_node(self, entity: int) -> int:
        """The node of one entity id."""
        return (self.base_passages if entity < self.base_entities else self.n_passages) + entity

    def entity_nodes(self, entities: np.ndarray) -> np.ndarray:
        """The node of each entity id (int64)."""
        e = np.asarray(entities, dtype=np.int64)
        return np.where(e < self.base_entities, self.base_passages + e, self.n_passages + e)

    def passage_nodes(self, rows: np.ndarray) -> np.ndarray:
        """The node of each passage row (int64)."""
        r = np.asarray(rows, dtype=np.int64)
        return np.where(r < self.base_passages, r, self.base_entities + r)

    def passages_of(self, nodes: np.ndarray) -> np.ndarray:
        """The passage row of each node, -1 for entity nodes (int64)."""
        n = np.asarray(nodes, dtype=np.int64)
        first_delta = self.base_passages + self.base_entities
        out = np.full(len(n), -1, dtype=np.int64)
        base = n < self.base_passages
        out[base] = n[base]
        delta = (n >= first_delta) & (n < first_delta + self.n_passages - self.base_passages)
        out[delta] = n[delta] - self.base_entities
        return out


class LayeredNames(HashedNames):
    """A base's hashed names and a delta's: a name is the delta's when both hold its hash (the delta's id is
    the current one), and a scan walks the prefixes of either. Scans exactly as one
    :class:`~gearag.graph.trie.HashedNames` of both would."""

    def __init__(self, base: HashedNames, delta: HashedNames) -> None:
        super().__init__(base.case_sensitive)
        self.base, self.delta = base, delta

    @property
    def size(self) -> int:
        """Names in either layer (a name in both counts once)."""
        shared = np.isin(np.asarray(self.delta.name_hashes), np.asarray(self.base.name_hashes)).sum()
        return self.base.size + self.delta.size - int(shared)

    def _has_node(self, h: int) -> bool:
        return self.delta._has_node(h) or self.base._has_node(h)

    def _id_of(self, h: int) -> int | None:
        found = self.delta._id_of(h)
        return found if found is not None else self.base._id_of(h)
