"""The retriever seam: ``retrieve(query, k)`` over one collection of an index (passages, triples, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from gearag.model import Hit


@runtime_checkable
class Retriever(Protocol):
    """The paper's ``h^k_base(q, R)``: the top ``k`` rows of an index for a query, best first."""

    def retrieve(self, query: str, k: int) -> list[Hit]: ...

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...


def top_k(scores: np.ndarray, k: int, *, keep_zero: bool = True, collection: str = "passages") -> list[Hit]:
    """The ``k`` best rows of a score vector, best first; ties broken by lower row.

    With ``keep_zero=False`` rows scoring 0 (no term overlap in BM25) are dropped.
    """
    if not keep_zero:
        # Only positive rows can be returned: the ranking is among them (a BM25 query touches a few of a
        # large collection's rows; partitioning all of them was most of a GEAR query at a million passages).
        rows = np.flatnonzero(scores > 0)
        return [Hit(int(rows[h.idx]), h.score, collection) for h in top_k(scores[rows], k)]
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return []
    if k < n:
        # Everything tied with the k-th best is a candidate, so ties break by row, not by partition order.
        kth = np.partition(-scores, k - 1)[k - 1]
        part = np.flatnonzero(-scores <= kth)
    else:
        part = np.arange(n)
    order = part[np.lexsort((part, -scores[part]))][:k]
    return [Hit(int(i), float(scores[i]), collection) for i in order]


class RetrieverBase:
    """Default ``retrieve_many`` for retrievers that only implement ``retrieve``."""

    def retrieve(self, query: str, k: int) -> list[Hit]:  # pragma: no cover - abstract
        raise NotImplementedError

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.retrieve(q, k) for q in queries]
