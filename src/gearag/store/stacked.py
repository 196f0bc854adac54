"""Rows of several arrays addressed as one, without copying them: a sharded index's vectors.

A sharded index's collection is the live rows of each shard's arrays in
shard order (:mod:`gearag.store.shards`). Concatenating the shards' vectors
would hold the union in memory: 1 KB per triple with 256-d float32, 17 GB
for a million passages. :class:`StackedRows` keeps each shard's
memory-mapped array and answers the operations retrieval uses — row
gathers (``a[rows]``, ``a[i]``, slices, ``a[rows, None]``) and products with
query vectors (``a @ q``) — part by part, so memory stays what one query
touches. Anything else (``np.asarray(a)``) materialises the union, as the
concatenation did.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from gearag import setops
from gearag.arrays import offsets
from gearag.store.npy import release_rows


class LiveParts:
    """The live rows of several parts numbered in order: a union row ↔ (part, stored row in that part).

    ``lengths[i]``: part i's stored rows; ``keeps[i]``: its live-row mask (None: every row). Shared by
    :class:`StackedRows` (arrays) and :class:`~gearag.store.rows.ConcatRows` (sequences).
    """

    def __init__(self, lengths: Sequence[int], keeps: Sequence[np.ndarray | None]) -> None:
        #: Per part: the stored rows that are live (None: every row, in order).
        self.live = [None if k is None or bool(np.all(k)) else np.flatnonzero(k) for k in keeps]
        counts = [n if lv is None else len(lv) for n, lv in zip(lengths, self.live, strict=True)]
        #: Union row of each part's first live row, and the total at the end.
        self.offsets = offsets(counts)

    @property
    def total(self) -> int:
        return int(self.offsets[-1])

    def locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The part of each union row (int64, in range) and its stored row there."""
        part = np.searchsorted(self.offsets, rows, side="right") - 1
        stored = rows - self.offsets[part]
        for j in setops.unique(part):
            live = self.live[int(j)]
            if live is not None:
                sel = part == j
                stored[sel] = live[stored[sel]]
        return part, stored

    def locate_one(self, i: int) -> tuple[int, int]:
        """:meth:`locate` for one union row."""
        part = int(np.searchsorted(self.offsets, i, side="right")) - 1
        local = i - int(self.offsets[part])
        live = self.live[part]
        return part, local if live is None else int(live[local])


class StackedRows:
    """The live rows of ``parts`` (each a 1-D or 2-D array; ``keeps[i]`` its live-row mask or None = all)."""

    def __init__(self, parts: Sequence[np.ndarray], keeps: Sequence[np.ndarray | None]) -> None:
        if not parts or len(parts) != len(keeps):
            raise ValueError("StackedRows needs one keep mask (or None) per part, and at least one part")
        tails = {tuple(p.shape[1:]) for p in parts}
        if len(tails) != 1:
            raise ValueError(f"parts disagree on their row shape: {sorted(tails)}")
        self.parts = list(parts)
        self.live_parts = LiveParts([len(p) for p in self.parts], keeps)
        self.dtype = np.result_type(*(p.dtype for p in self.parts))
        self.shape: tuple[int, ...] = (self.live_parts.total, *tails.pop())
        self.ndim = len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def _rows(self, key: Any) -> np.ndarray:
        if isinstance(key, slice):
            return np.arange(*key.indices(len(self)), dtype=np.int64)
        rows = np.asarray(key)
        if rows.dtype == bool:
            if rows.shape != (len(self),):
                raise IndexError(f"boolean index of shape {rows.shape} for {len(self)} rows")
            return np.flatnonzero(rows)
        if rows.dtype.kind not in "iu":
            raise IndexError(f"rows must be integers, not {rows.dtype}")
        rows = rows.astype(np.int64).reshape(-1)
        rows = np.where(rows < 0, rows + len(self), rows)
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(self)):
            raise IndexError(f"row index out of range for {len(self)} rows")
        return rows

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Rows ``rows`` (union row numbers, int64) in that order, gathered from their parts."""
        return self._gathered(*self.live_parts.locate(rows))

    def _gathered(self, part: np.ndarray, stored: np.ndarray) -> np.ndarray:
        """The rows at ``stored`` of parts ``part`` (:meth:`LiveParts.locate`), in that order."""
        out = np.empty((len(part), *self.shape[1:]), dtype=self.dtype)
        for j in setops.unique(part):
            sel = part == j
            out[sel] = self.parts[int(j)][stored[sel]]
        return out

    def __getitem__(self, key: Any) -> Any:
        rest: tuple[Any, ...] = ()
        if isinstance(key, tuple):
            key, rest = key[0], key[1:]
        if isinstance(key, (int, np.integer)):
            got = self.take(self._rows([key]))[0]
        else:
            got = self.take(self._rows(key))
            if rest:
                rest = (slice(None), *rest)
        return got[rest] if rest else got

    def __matmul__(self, other: Any) -> np.ndarray:
        """``rows @ other`` part by part (each part's product, its live rows)."""
        pieces = []
        for part, live in zip(self.parts, self.live_parts.live, strict=True):
            product = np.asarray(part @ other)
            pieces.append(product if live is None else product[live])
        return np.concatenate(pieces) if len(pieces) > 1 else pieces[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The union materialised (every live row in memory): avoid on large indices."""
        whole = self.take(np.arange(len(self), dtype=np.int64))
        return whole if dtype is None else whole.astype(dtype, copy=False)

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        """The union in blocks of at most ``rows`` rows, in order (for writing it out without holding it: the
        mapped pages each block read are let go once it is taken, :func:`~gearag.store.npy.release_rows`)."""
        for start in range(0, len(self), rows):
            part, stored = self.live_parts.locate(np.arange(start, min(start + rows, len(self)), dtype=np.int64))
            yield self._gathered(part, stored)
            for j in setops.unique(part).tolist():
                read = stored[part == j]
                release_rows(self.parts[j], int(read.min()), int(read.max()) + 1)
