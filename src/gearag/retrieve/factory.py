"""Base retrievers over any collection of an index, by registry name, built once per index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gearag.registry import REGISTRY
from gearag.retrieve.base import Retriever
from gearag.retrieve.config import RetrieverConfig
from gearag.store.collection import PASSAGES

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore


def make_retriever(
    index: IndexStore, method: str = "bm25", collection: str = PASSAGES, config: RetrieverConfig | None = None
) -> Retriever:
    """The registered retriever ``method`` (``bm25``, ``dense``, ``hybrid``, ...) over ``collection``.

    Built once per (method, collection, config) and index; thread-safe.
    """
    config = config or RetrieverConfig()
    entry = REGISTRY.entry("retriever", method)
    coll = index.collection(collection)
    return index.cached(f"retriever:{entry.name}:{coll.name}", lambda: entry.load()(index, coll.name, config),
                        variant=repr(config))
