"""Hybrid retrieval: RRF of a lexical and a dense ranking (GEAR §6.1, "Hybrid")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gearag.model import Hit
from gearag.retrieve.base import Retriever, RetrieverBase
from gearag.retrieve.factory import make_retriever
from gearag.retrieve.fusion import RRF_K, rrf

if TYPE_CHECKING:
    from gearag.retrieve.config import RetrieverConfig
    from gearag.store.interface import IndexStore


class HybridRetriever(RetrieverBase):
    """Fuses the top ``depth`` of each child retriever with reciprocal rank fusion.

    Scores are RRF scores. ``depth`` (default 100) is how far down each list
    is read; items outside every child's top ``depth`` cannot be returned.
    """

    def __init__(
        self, retrievers: Sequence[Retriever], rrf_k: int = RRF_K, depth: int = 100, collection: str = "passages"
    ) -> None:
        self.retrievers = list(retrievers)
        self.rrf_k = rrf_k
        self.depth = depth
        self.collection = collection

    def _fuse(self, rankings: list[list[Hit]], k: int) -> list[Hit]:
        fused = rrf(([h.idx for h in r] for r in rankings), k=self.rrf_k)
        return [Hit(i, s, self.collection) for i, s in fused[:k]]

    def retrieve(self, query: str, k: int) -> list[Hit]:
        depth = max(k, self.depth)
        return self._fuse([r.retrieve(query, depth) for r in self.retrievers], k)

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        depth = max(k, self.depth)
        per_child = [r.retrieve_many(queries, depth) for r in self.retrievers]
        return [self._fuse([child[i] for child in per_child], k) for i in range(len(queries))]


def hybrid_retriever(index: IndexStore, collection: str, config: RetrieverConfig) -> HybridRetriever:
    """Registry factory: RRF of BM25 and dense over one collection (GEAR §6.1)."""
    children = [make_retriever(index, "bm25", collection, config), make_retriever(index, "dense", collection, config)]
    return HybridRetriever(children, rrf_k=config.rrf_k, depth=config.hybrid_depth, collection=collection)
