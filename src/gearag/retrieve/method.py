"""The base retrievers as retrieval methods: ``bm25``, ``dense`` and ``hybrid`` over passages."""

from __future__ import annotations

from gearag.results import Result
from gearag.retrieve.config import RetrieverConfig
from gearag.retrieve.factory import make_retriever
from gearag.store.index import Index


class BaseMethod:
    """One base retriever over the passages collection (GEAR §6.1's single-step baselines)."""

    def __init__(self, index: Index, config: RetrieverConfig, retriever: str) -> None:
        self.retriever = make_retriever(index, retriever, config=config)

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
