"""The base retrievers as retrieval methods: ``bm25``, ``dense`` and ``hybrid`` over passages or a pool."""

from __future__ import annotations

from gearag.results import Result
from gearag.retrieve.config import RetrieverConfig
from gearag.retrieve.factory import make_retriever
from gearag.retrieve.pool import pool_collection
from gearag.store.index import Index


class BaseMethod:
    """One base retriever over the passages (GEAR §6.1's single-step baselines) or a pool's nodes.

    With ``pool`` other than ``chunks`` the hits are rows of that pool's
    collection (SiReRAG's collapsed-tree retrieval, §4.3): summaries and
    aggregates as well as passages, each with the passages it covers.
    """

    def __init__(self, index: Index, config: RetrieverConfig, retriever: str) -> None:
        self.retriever = make_retriever(index, retriever, pool_collection(index, config.pool), config)

    def __call__(self, question: str, k: int) -> Result:
        return Result(self.retriever.retrieve(question, k))

    @classmethod
    def bm25(cls, index: Index, config: RetrieverConfig) -> BaseMethod:
        return cls(index, config, "bm25")

    @classmethod
    def dense(cls, index: Index, config: RetrieverConfig) -> BaseMethod:
        return cls(index, config, "dense")

    @classmethod
    def hybrid(cls, index: Index, config: RetrieverConfig) -> BaseMethod:
        return cls(index, config, "hybrid")
