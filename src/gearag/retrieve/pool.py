"""Retrieval over a pool (SiReRAG §4.3) and from pool nodes back to passages.

A pool is a collection of the index: ``chunks`` is the passages collection;
``raptor``, ``sirerag`` and the Table-5 ablation pools are the collections
the trees stage adds (:mod:`gearag.indexing.trees`), whose rows are tree
nodes (passages, summaries, proposition aggregates, propositions) with the
passages each covers.

* :func:`pool_collection` names the collection of a pool (a clear error when
  the index was built without it);
* :func:`base_retriever` is the base retriever ``h_base`` of the methods that
  read passages (SyncGE, NaiveGE, GEAR): over ``chunks`` it is the plain
  passage retriever; over another pool it is a :class:`SourcePassages`, which
  retrieves nodes and returns their source passages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gearag.errors import ConfigError
from gearag.model import Hit
from gearag.retrieve.base import Retriever, RetrieverBase
from gearag.retrieve.config import RetrieverConfig
from gearag.retrieve.factory import make_retriever
from gearag.store.collection import PASSAGES

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore

CHUNKS = "chunks"


def pool_collection(index: IndexStore, pool: str) -> str:
    """The collection holding ``pool``; a ConfigError says how to build it when the index lacks it."""
    if pool == CHUNKS:
        return PASSAGES
    if pool not in index.collections:
        built = [p for p in index.collections if p not in (PASSAGES, "triples")]
        have = ", ".join([CHUNKS, *built])
        raise ConfigError(f"{index.path}: no {pool!r} pool in this index (it has {have}); "
                          f"build it with `gearag index ... --sirerag`"
                          + (" --sirerag-ablations" if pool not in ("raptor", "sirerag") else ""))
    return pool


class SourcePassages(RetrieverBase):
    """Passages by way of a pool: the top nodes, each expanded to its source passages.

    Passages come in the nodes' rank order, each at its first occurrence,
    with its node's score. A node covering several passages (a summary, an
    aggregate) lists them in the order the same retriever ranks them over
    the passages (read ``passage_depth`` deep), unranked ones after, by row.
    Nodes are read deeper until ``k`` distinct passages are found or the pool
    is exhausted.
    """

    def __init__(self, index: IndexStore, nodes: Retriever, passages: Retriever, collection: str,
                 *, passage_depth: int = 100) -> None:
        self.coll = index.collection(collection)
        self.nodes = nodes
        self.passages = passages
        self.passage_depth = passage_depth

    def retrieve(self, query: str, k: int) -> list[Hit]:
        if k <= 0:
            return []
        rank: dict[int, int] | None = None
        depth = max(k, 20)
        while True:
            nodes = self.nodes.retrieve(query, depth)
            out: list[Hit] = []
            seen: set[int] = set()
            for node in nodes:
                sources = self.coll.sources(node.idx)
                if len(sources) > 1:
                    if rank is None:
                        ranked = self.passages.retrieve(query, max(self.passage_depth, k))
                        rank = {h.idx: i for i, h in enumerate(ranked)}
                    order = rank
                    sources = sorted(sources, key=lambda r: (order.get(r, len(order)), r))
                for row in sources:
                    if row not in seen:
                        seen.add(row)
                        out.append(Hit(row, node.score, PASSAGES))
                if len(out) >= k:
                    return out[:k]
            if len(nodes) < depth:
                return out
            depth *= 4

    def retrieve_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.retrieve(q, k) for q in queries]


def base_retriever(index: IndexStore, method: str, config: RetrieverConfig) -> Retriever:
    """``h_base`` over passages: the retriever ``method`` over ``config.pool``, nodes mapped to passages."""
    if config.pool == CHUNKS:
        return make_retriever(index, method, PASSAGES, config)
    collection = pool_collection(index, config.pool)

    def build() -> Retriever:
        return SourcePassages(index, make_retriever(index, method, collection, config),
                              make_retriever(index, method, PASSAGES, config), collection)

    return index.cached(f"pool-passages:{method}:{collection}", build, variant=repr(config))
