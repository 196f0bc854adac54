"""The base retrievers as retrieval methods: ``bm25``, ``dense`` and ``hybrid`` over passages or a pool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gearag.model import Hit
from gearag.results import RANK, Result, rank_scores
from gearag.retrieve.config import RetrieverConfig
from gearag.retrieve.factory import make_retriever
from gearag.retrieve.pool import pool_collection
from gearag.store.interface import IndexStore

if TYPE_CHECKING:
    from gearag.baselines.qa import BaseMethodConfig


class BaseMethod:
    """One base retriever over the passages (GEAR §6.1's single-step baselines) or a pool's nodes.

    With ``pool`` other than ``chunks`` the hits are rows of that pool's
    collection (SiReRAG's collapsed-tree retrieval, §4.3): summaries and
    aggregates as well as passages, each with the passages it covers. With
    ``answer`` on, the method also answers from its top ``qa_passages``
    results (SiReRAG §5's QA protocol, :mod:`gearag.baselines.qa`).
    """

    def __init__(self, index: IndexStore, config: BaseMethodConfig | RetrieverConfig, retriever: str,
                 llm_roles: object | None = None) -> None:
        from gearag.baselines.qa import BaseMethodConfig, PoolAnswerer

        if isinstance(config, RetrieverConfig):
            config = BaseMethodConfig(retrieval=config)
        self.config = config
        retrieval = config.retrieval
        self.retriever = make_retriever(index, retriever, pool_collection(index, retrieval.pool), retrieval)
        self.fused = retriever == "hybrid"
        self.answerer = PoolAnswerer(index, config, llm_roles) if config.answer else None

    def __call__(self, question: str, k: int) -> Result:
        hits = self.retriever.retrieve(question, k if self.answerer is None else max(k, self.config.qa_passages))
        answer, trace = self.answerer.answer(question, hits) if self.answerer is not None else (None, None)
        if self.fused:  # hybrid's scores are reciprocal-rank sums (all near 1 / rrf_k): only the order means something
            ranked = rank_scores([h.idx for h in hits[:k]])
            hits = [Hit(h.idx, r.score, h.collection) for h, r in zip(hits, ranked, strict=False)]
            return Result(hits, trace, answer, score_kind=RANK)
        return Result(hits[:k], trace, answer)

    @classmethod
    def bm25(cls, index: IndexStore, config: BaseMethodConfig | RetrieverConfig,
             llm_roles: object | None = None) -> BaseMethod:
        return cls(index, config, "bm25", llm_roles)

    @classmethod
    def dense(cls, index: IndexStore, config: BaseMethodConfig | RetrieverConfig,
              llm_roles: object | None = None) -> BaseMethod:
        return cls(index, config, "dense", llm_roles)

    @classmethod
    def hybrid(cls, index: IndexStore, config: BaseMethodConfig | RetrieverConfig,
               llm_roles: object | None = None) -> BaseMethod:
        return cls(index, config, "hybrid", llm_roles)
