"""Dense retrieval: cosine similarity between unit-length query and item embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gearag.embed.base import Embedder
from gearag.model import Hit
from gearag.retrieve.base import RetrieverBase

if TYPE_CHECKING:
    from gearag.retrieve.config import RetrieverConfig
    from gearag.store.collection import Collection
    from gearag.store.index import Index


class DenseRetriever(RetrieverBase):
    """Inner-product search over a collection's unit rows (its :meth:`~Collection.search_dense`:
    exact over a memory-mapped matrix in the embedded backend; flat or ANN in the Lance backend)."""

    def __init__(self, embedder: Embedder, collection: Collection) -> None:
        self.embedder = embedder
        self.coll = collection
        self.collection = collection.name

    def scores(self, query: str) -> np.ndarray:
        """Cosine of ``query`` with every row (reads every vector: for analysis, not for search)."""
        q = self.embedder.encode([query])[0]
        return np.asarray(self.coll.vectors @ q)

    def retrieve(self, query: str, k: int) -> list[Hit]:
        return self.retrieve_many([query], k)[0]

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if not queries:
            return []
        hits: list[list[Hit]] = self.coll.search_dense(self.embedder.encode(list(queries)), k)
        return hits


def dense_retriever(index: Index, collection: str, config: RetrieverConfig) -> DenseRetriever:
    """Registry factory: cosine over one collection's vectors with the index's embedder."""
    return DenseRetriever(index.embedder, index.collection(collection))
