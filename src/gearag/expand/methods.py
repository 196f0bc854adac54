"""NaiveGE and SyncGE as retrieval methods (GEAR §4, §6.2).

Both run the base retriever for ``C'_q``, pick initial triples, run diverse
triple beam search, map the flattened beams to passages ``~C_q`` and return
``RRF(~C_q, C'_q)`` (Eq. 3).

* NaiveGE: the initial triples are all triples of ``C'_q``.
* SyncGE: a reader (the engine's) extracts proximal triples from ``C'_q``
  (Eq. 1) and tripleLink maps each to an index triple (Eq. 2).
"""

from __future__ import annotations

import time

from gearag.engine import make_engine
from gearag.expand.config import NaiveGEConfig, SyncGEConfig
from gearag.expand.expansion import GraphExpander, triples_of_passages
from gearag.expand.link import TripleLinker
from gearag.expand.reader import Reader
from gearag.model import Hit
from gearag.results import Result
from gearag.retrieve.fusion import rrf
from gearag.retrieve.pool import base_retriever
from gearag.store.index import Index
from gearag.trace import ExpansionTrace


class GraphExpansionMethod:
    """NaiveGE when ``reader`` is None, SyncGE otherwise."""

    def __init__(self, index: Index, config: NaiveGEConfig, reader: Reader | None = None) -> None:
        self.index = index
        self.config = config
        self.reader = reader
        exp = config.expansion
        self.base = base_retriever(index, exp.base, exp.retriever)  # passages, or a pool's nodes' sources
        self.expander = GraphExpander(index, exp.beam, exp.scoring)
        self.linker = TripleLinker(index, exp.link, config=exp.retriever) if reader is not None else None

    def __call__(self, question: str, k: int) -> Result:
        started = time.perf_counter()
        base_rows = [h.idx for h in self.base.retrieve(question, self.config.base_k or k)]
        proximal = None
        if self.reader is None or self.linker is None:
            initial = triples_of_passages(self.index, base_rows).tolist()
        else:
            found = self.reader.read(question, base_rows)
            proximal = [list(t.as_tuple()) for t in found]
            initial = self.linker.link(found)
        expansion = self.expander.expand(question, initial)
        fused = rrf([expansion.passages, base_rows], k=self.config.expansion.retriever.rrf_k)
        trace = ExpansionTrace(
            paths=self.expander.describe(expansion.beams),
            expanded_passages=[self.index.passages[p].title for p in expansion.passages[:k]],
            proximal=proximal,
            seconds=round(time.perf_counter() - started, 4),
        )
        return Result([Hit(i, s) for i, s in fused[:k]], trace)


def NaiveGE(index: Index, config: NaiveGEConfig) -> GraphExpansionMethod:  # noqa: N802 - registry factory
    """NaiveGE (§6.2): beams from every triple of the base passages."""
    return GraphExpansionMethod(index, config)


def SyncGE(index: Index, config: SyncGEConfig, llm_roles: object | None = None) -> GraphExpansionMethod:  # noqa: N802
    """SyncGE (§4): the engine's reader picks proximal triples, tripleLink maps them to the index."""
    return GraphExpansionMethod(index, config, make_engine(index, config.engine, llm_roles).reader)
