"""Dense retrieval: cosine similarity between unit-length query and item embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gearag.embed.base import Embedder
from gearag.model import Hit
from gearag.retrieve.base import RetrieverBase, top_k

if TYPE_CHECKING:
    from gearag.retrieve.config import RetrieverConfig
    from gearag.store.index import Index


class DenseRetriever(RetrieverBase):
    """Exact inner-product search over a (memory-mapped) matrix of unit rows."""

    def __init__(self, embedder: Embedder, vectors: np.ndarray, collection: str = "passages") -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.collection = collection

    def scores(self, query: str) -> np.ndarray:
        q = self.embedder.encode([query])[0]
        return self.vectors @ q

    def retrieve(self, query: str, k: int) -> list[Hit]:
        return top_k(self.scores(query), k, collection=self.collection)

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        q = self.embedder.encode(list(queries))
        out: list[list[Hit]] = []
        for start in range(0, len(queries), 256):
            block = q[start : start + 256] @ np.asarray(self.vectors).T
            out.extend(top_k(row, k, collection=self.collection) for row in block)
        return out


def dense_retriever(index: Index, collection: str, config: RetrieverConfig) -> DenseRetriever:
    """Registry factory: cosine over one collection's vectors with the index's embedder."""
    return DenseRetriever(index.embedder, index.collection(collection).vectors, collection)
