"""Build a base retriever over an index's passages or triples by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gearag.errors import ConfigError
from gearag.retrieve.base import Retriever
from gearag.retrieve.fusion import RRF_K

if TYPE_CHECKING:
    from gearag.store.index import Index

BASE_METHODS = ("bm25", "dense", "hybrid")
TARGETS = ("passages", "triples")


def make_retriever(
    index: Index, method: str = "bm25", target: str = "passages", *, rrf_k: int = RRF_K, hybrid_depth: int = 100
) -> Retriever:
    """``bm25``, ``dense`` or ``hybrid`` over ``passages`` (C) or ``triples`` (T); cached per index."""
    if method not in BASE_METHODS:
        raise ConfigError(f"unknown base retriever {method!r} (choose from {', '.join(BASE_METHODS)})")
    if target not in TARGETS:
        raise ConfigError(f"unknown retrieval target {target!r} (choose from {', '.join(TARGETS)})")
    key = f"retriever:{method}:{target}:{rrf_k}:{hybrid_depth}"
    cache = index._cache
    if key in cache:
        return cache[key]
    if method == "bm25":
        from gearag.retrieve.bm25 import BM25Retriever

        retriever: Retriever = BM25Retriever(index.bm25(target))
    elif method == "dense":
        from gearag.retrieve.dense import DenseRetriever

        retriever = DenseRetriever(index.embedder, index.vectors(target))
    else:
        from gearag.retrieve.hybrid import HybridRetriever

        retriever = HybridRetriever(
            [make_retriever(index, "bm25", target), make_retriever(index, "dense", target)],
            rrf_k=rrf_k,
            depth=hybrid_depth,
        )
    cache[key] = retriever
    return retriever
