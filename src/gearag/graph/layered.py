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

from gearag import setops
from gearag.graph.ranges import ranges
from gearag.graph.transition import Csr, rows_matrix
from gearag.graph.trie import HashedNames


@dataclass(frozen=True)
class LayeredCsr:
    """Rows of ``base``, and of ``delta`` where ``where`` (int32 per row, -1: none) points into it.

    A delta row *replaces* the base's row, or with ``appends`` (bool per row)
    set for it, *follows* it: the row is then the base's entries and the
    delta's (an add that only adds edges stores only those). Rows past the
    base's are the delta's alone.
    """

    base: Csr
    delta: Csr
    where: np.ndarray
    appends: np.ndarray | None = None

    def __post_init__(self) -> None:
        n_base, n_delta = len(self.base.indptr) - 1, len(self.delta.indptr) - 1
        if len(self.where) < n_base:
            raise ValueError(f"a layered matrix maps {len(self.where)} rows over a base of {n_base}")
        beyond = np.asarray(self.where[n_base:])
        if len(beyond) and int(beyond.min()) < 0:
            raise ValueError("a row past the base must be the delta's")
        if len(self.where) and int(np.max(self.where, initial=-1)) >= n_delta:
            raise ValueError(f"a layered matrix points past its delta's {n_delta} rows")
        if (self.base.sids is None) != (self.delta.sids is None):
            raise ValueError("a base and a delta with and without scale ids")
        if self.appends is not None and (len(self.appends) != len(self.where) or np.any(self.appends[n_base:])):
            raise ValueError("only a base row can be appended to")

    @classmethod
    def from_entries(cls, base: Csr, n_rows: int, listed: np.ndarray, appended: np.ndarray, row: np.ndarray,
                     target: np.ndarray, data: np.ndarray, sid: np.ndarray) -> LayeredCsr:
        """``base`` with delta rows ``listed`` (in delta order; ``appended``: those that follow the base's row,
        the others replace it or are new), made of the entries (``row``: a layered row, each in ``listed``;
        ``target``; ``data``; ``sid``, kept only where ``base`` has scale ids), each row's in the order given."""
        where = np.full(n_rows, -1, dtype=np.int32)
        where[listed] = np.arange(len(listed), dtype=np.int32)
        entry_row = where[row].astype(np.int64)
        by = np.argsort(entry_row, kind="stable")
        indptr = np.zeros(len(listed) + 1, dtype=np.int64)
        np.cumsum(np.bincount(entry_row, minlength=len(listed)), out=indptr[1:])
        delta = Csr(indptr, target[by].astype(np.int32), data[by].astype(np.float32),
                    sid[by].astype(np.int32) if base.sids is not None else None)
        appends = np.zeros(n_rows, dtype=bool)
        appends[appended] = True
        return cls(base, delta, where, appends)

    @classmethod
    def over(cls, base: Csr, n_rows: int, replaced: np.ndarray, row: np.ndarray, target: np.ndarray,
             data: np.ndarray, sid: np.ndarray) -> LayeredCsr:
        """``base`` with the entries given (by layered row) appended to its rows, except rows ``replaced``,
        whose base row they replace; every row past the base's is the delta's (empty where no entry names it)."""
        replaced = np.asarray(replaced, dtype=np.int64)
        listed = setops.union(setops.union(row, replaced), np.arange(base.n_rows, n_rows, dtype=np.int64))
        appended = listed[(listed < base.n_rows) & ~setops.isin(listed, replaced)]
        return cls.from_entries(base, n_rows, listed, appended, row, target, data, sid)

    @property
    def n_rows(self) -> int:
        return len(self.where)

    @property
    def sids(self) -> np.ndarray | None:
        """Whether the entries have scale ids (as :attr:`Csr.sids`; the arrays are the layers')."""
        return self.delta.sids

    def _split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: its row in the delta (-1: none), and masks of the rows read from the base and the delta."""
        at = np.asarray(self.where[rows], dtype=np.int64)
        in_delta = at >= 0
        in_base = ~in_delta
        if self.appends is not None:
            in_base |= np.asarray(self.appends[rows], dtype=bool)
        return at, in_base, in_delta

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Stored entries of each of ``rows`` (int64)."""
        rows = np.asarray(rows, dtype=np.int64)
        at, in_base, in_delta = self._split(rows)
        out = np.zeros(len(rows), dtype=np.int64)
        out[in_base] = self.base.counts(rows[in_base])
        out[in_delta] += self.delta.counts(at[in_delta])
        return out

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """The entries of ``rows``, row after row in the order given (a row's base entries before its delta's):
        (entries per row, indices, data, scale ids or None)."""
        rows = np.asarray(rows, dtype=np.int64)
        at, in_base, in_delta = self._split(rows)
        if not in_delta.any():
            return self.base.gather(rows)
        if not in_base.any():
            return self.delta.gather(at)
        b_counts, *b_parts = self.base.gather(rows[in_base])
        d_counts, *d_parts = self.delta.gather(at[in_delta])
        counts = np.zeros(len(rows), dtype=np.int64)
        counts[in_base] = b_counts
        starts = np.zeros(len(rows), dtype=np.int64)
        d_after = counts.copy()  # a row's delta entries come after its base entries
        counts[in_delta] += d_counts
        np.cumsum(counts[:-1], out=starts[1:])
        b_to = ranges(starts[in_base], b_counts)
        d_to = ranges((starts + d_after)[in_delta], d_counts)
        total = int(counts.sum())
        out: list[np.ndarray | None] = []
        for b, d in zip(b_parts, d_parts, strict=True):
            if b is None or d is None:
                out.append(None)
                continue
            both = np.empty(total, dtype=np.result_type(b, d))
            both[b_to], both[d_to] = b, d
            out.append(both)
        indices, data, sids = out
        assert indices is not None and data is not None
        return counts, indices, data, sids

    def rows(self, rows: np.ndarray, n_columns: int) -> sparse.csr_matrix:
        """Rows ``rows`` as a scipy matrix of the stored weights (what ``matrix[rows]`` gives)."""
        counts, indices, data, _ = self.gather(np.asarray(rows, dtype=np.int64))
        return rows_matrix(counts, indices, data, n_columns)

    def to_csr(self, n_columns: int) -> sparse.csr_matrix:
        """The whole matrix in memory (power iteration, an export): every row gathered once."""
        return self.rows(np.arange(self.n_rows, dtype=np.int64), n_columns)


@dataclass(frozen=True)
class AppendedRows:
    """A base array's rows followed by a delta's (each triple's entity ends: an add appends triples)."""

    base: np.ndarray
    tail: np.ndarray

    def __len__(self) -> int:
        return len(self.base) + len(self.tail)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self.base.shape[1:])

    def __getitem__(self, rows: int | np.ndarray) -> np.ndarray:
        """Row ``rows`` (an int) or rows (an array of ints), from whichever layer holds each."""
        n = len(self.base)
        if isinstance(rows, (int, np.integer)):
            return self.base[rows] if rows < n else self.tail[rows - n]
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), *self.base.shape[1:]), dtype=self.base.dtype)
        low = rows < n
        out[low] = self.base[rows[low]]
        out[~low] = self.tail[rows[~low] - n]
        return out

    def whole(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.base), np.asarray(self.tail)])


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

    def entities_of(self, nodes: np.ndarray) -> np.ndarray:
        """The entity id of each node, -1 for passage nodes (int64)."""
        n = np.asarray(nodes, dtype=np.int64)
        first_delta = self.base_passages + self.base_entities
        out = np.full(len(n), -1, dtype=np.int64)
        base = (n >= self.base_passages) & (n < first_delta)
        out[base] = n[base] - self.base_passages
        delta = n >= first_delta + self.n_passages - self.base_passages
        out[delta] = n[delta] - self.n_passages
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
        shared = setops.isin(np.asarray(self.delta.name_hashes), np.asarray(self.base.name_hashes)).sum()
        return self.base.size + self.delta.size - int(shared)

    def _has_node(self, h: int) -> bool:
        return self.delta._has_node(h) or self.base._has_node(h)

    def _id_of(self, h: int) -> int | None:
        found = self.delta._id_of(h)
        return found if found is not None else self.base._id_of(h)

