"""Hybrid retrieval: RRF of a lexical and a dense ranking (GEAR §6.1, "Hybrid")."""

from __future__ import annotations

from collections.abc import Sequence

from gearag.model import Hit
from gearag.retrieve.base import Retriever, RetrieverBase
from gearag.retrieve.fusion import RRF_K, rrf


class HybridRetriever(RetrieverBase):
    """Fuses the top ``depth`` of each child retriever with reciprocal rank fusion.

    Scores are RRF scores. ``depth`` (default 100) is how far down each list
    is read; items outside every child's top ``depth`` cannot be returned.
    """

    def __init__(self, retrievers: Sequence[Retriever], rrf_k: int = RRF_K, depth: int = 100) -> None:
        self.retrievers = list(retrievers)
        self.rrf_k = rrf_k
        self.depth = depth

    def _fuse(self, rankings: list[list[Hit]], k: int) -> list[Hit]:
        fused = rrf(([h.idx for h in r] for r in rankings), k=self.rrf_k)
        return [Hit(i, s) for i, s in fused[:k]]

    def retrieve(self, query: str, k: int) -> list[Hit]:
        depth = max(k, self.depth)
        return self._fuse([r.retrieve(query, depth) for r in self.retrievers], k)

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        depth = max(k, self.depth)
        per_child = [r.retrieve_many(queries, depth) for r in self.retrievers]
        return [self._fuse([child[i] for child in per_child], k) for i in range(len(queries))]
