"""Set operations on integer arrays by sorting, in place of NumPy's hash-based ``np.unique``.

NumPy 2.3+ finds the distinct values of an integer array with a hash table
when no index, inverse or counts are asked for, and that path is far slower
than sorting wherever the values are many and spread (ids, ``row * n + col``
pairs): on this machine, numpy 2.4.6, 1M int64 take 0.84 s against 0.015 s
sorted, 10k take 1.7 ms against 0.08 ms, 100 take 69 µs against 5 µs; and
``np.union1d``, ``np.setdiff1d`` and ``np.isin`` call it (docs/benchmarks-log.md,
"Distinct values by sorting"). gearag's arrays are integer ids almost
everywhere, in the writer's passes over millions of entries and in every
query's push, so these helpers sort. Other dtypes go to NumPy (its float
path sorts already and merges NaNs, which a plain sort would not).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def unique(values: Any) -> np.ndarray:
    """``np.unique(values)``: the sorted distinct values (flattened), by a sort for integers."""
    a = np.asarray(values)
    if a.dtype.kind not in "iub":
        return np.unique(a)
    a = np.sort(a, axis=None)
    if len(a) < 2:
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def union(a: Any, b: Any) -> np.ndarray:
    """``np.union1d(a, b)``."""
    return unique(np.concatenate([np.ravel(a), np.ravel(b)]))


def isin(values: Any, among: Any) -> np.ndarray:
    """``np.isin(values, among)`` (bool, the shape of ``values``): a table of ``among``'s range where it is small
    (as NumPy chooses), else each value looked for among the sorted distinct ``among`` by bisection."""
    values = np.asarray(values)
    among = np.asarray(among)
    if values.dtype.kind not in "iub" or among.dtype.kind not in "iub" or not among.size:
        return np.isin(values, among)
    if int(among.max()) - int(among.min()) <= 6 * (values.size + among.size):  # NumPy's own rule for its table
        return np.isin(values, among, kind="table")  # one pass, no sort: faster still where the range is small
    keys = unique(among)
    flat = values.ravel()
    return present(keys, flat, np.searchsorted(keys, flat)).reshape(values.shape)


def present(sorted_values: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Which ``values`` are in ``sorted_values`` (``at``: their ``searchsorted`` positions there, which a caller
    inserting the others has made already)."""
    if not len(sorted_values):
        return np.zeros(len(values), dtype=bool)
    return (at < len(sorted_values)) & (sorted_values[np.minimum(at, len(sorted_values) - 1)] == values)


def setdiff(a: Any, b: Any) -> np.ndarray:
    """``np.setdiff1d(a, b)``: the sorted distinct values of ``a`` not in ``b``."""
    a = unique(a)
    return a[~isin(a, b)]
