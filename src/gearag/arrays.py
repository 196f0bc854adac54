"""Integer-array containers the storage and the graph both read: CSR rows, a base with a delta's rows.

This module owns :func:`ranges` (the gather positions of CSR rows, without a
Python loop), :class:`Csr` (a compressed sparse matrix as its arrays, read
row by row), :class:`LayeredCsr` (a base's rows and the rows a delta
replaces or adds, docs/delta.md) and :class:`AppendedRows` (a base array's
rows followed by a delta's). They are plain NumPy containers: the triple
graph of :mod:`gearag.store.graph` and the prepared passage graph of
:mod:`gearag.graph` use them alike, so they live below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import sparse

from gearag import setops


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` as int64, without the loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    out = np.repeat(np.asarray(starts, dtype=np.int64) - (np.cumsum(lengths) - lengths), lengths)
    out += np.arange(total, dtype=np.int64)
    return out


def ascending(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease (an empty or one-item array does not)."""
    return bool(np.all(values[1:] >= values[:-1]))


def offsets(counts: np.ndarray | list[int]) -> np.ndarray:
    """The int64 start of each run of ``counts`` entries, and the end of the last: a CSR ``indptr``."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def row_offsets(rows: np.ndarray, n_rows: int) -> np.ndarray:
    """The ``indptr`` of entries in rows ``rows`` (row order, ``n_rows`` rows): :func:`offsets` of their counts."""
    return offsets(np.bincount(rows, minlength=n_rows))


class Csr(NamedTuple):
    """A compressed sparse matrix as its arrays (scipy would copy memory-mapped ones on construction)."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    #: int32 per entry: the scale id of a raw weight (:mod:`gearag.graph.scaled`); None: weights as they are.
    sids: np.ndarray | None = None

    @classmethod
    def incidence(cls, pairs: np.ndarray, n_rows: int, n_targets: int) -> Csr:
        """The 0/1 matrix of ``pairs`` (``row * n_targets + target``, each once, ascending), its rows as they
        are: no entry to sort or sum."""
        indptr = row_offsets(pairs // n_targets, n_rows)
        return cls(indptr, (pairs % n_targets).astype(np.int32), np.ones(len(pairs), dtype=np.float32))

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
    indptr = offsets(counts)
    return sparse.csr_matrix((data, indices, indptr), shape=(len(counts), n_columns))


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
        indptr = row_offsets(entry_row, len(listed))
        if ascending(entry_row):  # in row order already (netted entries): no copy to sort
            del entry_row
            delta = Csr(indptr, target.astype(np.int32, copy=False), data.astype(np.float32, copy=False),
                        sid.astype(np.int32, copy=False) if base.sids is not None else None)
        else:
            by = np.argsort(entry_row, kind="stable")
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
        listed = setops.union(setops.union(setops.unique(row), replaced),  # rows first: narrower, many fewer
                              np.arange(base.n_rows, n_rows, dtype=np.int64))
        appended = listed[(listed < base.n_rows) & ~setops.isin(listed, replaced)]
        return cls.from_entries(base, n_rows, listed, appended, row, target, data, sid)

    @classmethod
    def of_delta(cls, base: Csr, delta: Csr) -> LayeredCsr:
        """``delta``'s rows, each the layered row of its number, over an empty ``base`` (an add onto nothing)."""
        n = len(delta.indptr) - 1
        return cls(base, delta, np.arange(n, dtype=np.int32))

    @property
    def delta_only(self) -> Csr | None:
        """The rows as one plain matrix where they are all the delta's, in order, over an empty base (an add onto
        nothing): the delta itself; else None."""
        if self.base.n_rows:  # an add's or a delete's: not read through the where map at all
            return None
        where = np.asarray(self.where)
        in_order = not len(where) or (int(where[0]) == 0 and bool(np.all(np.diff(where) == 1)))
        return self.delta if in_order else None

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
