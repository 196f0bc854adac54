"""Dense retrieval: cosine similarity between unit-length query and item embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gearag.embed.base import Embedder, index_embedder
from gearag.model import Hit
from gearag.retrieve.base import RetrieverBase, top_k
from gearag.store.collection import CollectionStore, SearchingCollection

if TYPE_CHECKING:
    from gearag.retrieve.config import RetrieverConfig
    from gearag.store.interface import IndexStore


def search_dense(coll: CollectionStore, queries: np.ndarray, k: int) -> list[list[Hit]]:
    """The top ``k`` rows of ``coll`` by inner product with each unit query vector (rows of ``queries``), best
    first: exact over its vectors, or the backend's own vector search (:class:`SearchingCollection`)."""
    if isinstance(coll, SearchingCollection):
        return coll.search_dense(queries, k)
    out: list[list[Hit]] = []
    for start in range(0, len(queries), 256):
        # rows @ queries.T: memory maps and a sharded index's stacked shards alike (never materialised).
        block = np.asarray(coll.vectors @ queries[start : start + 256].T).T
        out.extend(top_k(row, k, collection=coll.name) for row in block)
    return out


class DenseRetriever(RetrieverBase):
    """Inner-product search over a collection's unit rows (:func:`search_dense`: exact over a memory-mapped
    matrix in the embedded backend; flat or ANN in the Lance backend)."""

    def __init__(self, embedder: Embedder, collection: CollectionStore) -> None:
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
        return search_dense(self.coll, self.embedder.encode(list(queries)), k)


def dense_retriever(index: IndexStore, collection: str, config: RetrieverConfig) -> DenseRetriever:
    """Registry factory: cosine over one collection's vectors with the index's embedder."""
    return DenseRetriever(index_embedder(index), index.collection(collection))
