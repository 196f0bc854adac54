"""NaiveGE and SyncGE as retrieval methods (GEAR §4, §6.2).

Both run the base retriever for ``C'_q`` and pick initial triples. With
``graph="beams"`` (the paper; NaiveGE's default) they run diverse triple beam
search, map the flattened beams to passages ``~C_q`` and return
``RRF(~C_q, C'_q)`` (Eq. 3). With ``graph="ppr"`` (SyncGE's default, our
extension) they rank passages by Personalized PageRank over the
passage-aware graph (:mod:`gearag.graph.passage_graph`) seeded by the
question's entities, the linked proximal triples and the base passages;
``both`` fuses the two.

* NaiveGE: the initial triples are all triples of ``C'_q``.
* SyncGE: a reader (the engine's) extracts proximal triples from ``C'_q``
  (Eq. 1) and tripleLink maps each to an index triple (Eq. 2).
"""

from __future__ import annotations

import time

from gearag.derive.graph_for import passage_graph_for
from gearag.engine import make_engine
from gearag.expand.config import NaiveGEConfig, SyncGEConfig
from gearag.expand.expansion import GraphExpander, triples_of_passages
from gearag.expand.link import TripleLinker
from gearag.expand.reader import Reader
from gearag.llm.usage import UsageLedger, usage_scope
from gearag.results import RANK, Result, rank_scores
from gearag.retrieve.fusion import rrf
from gearag.retrieve.pool import base_retriever
from gearag.store.interface import IndexStore
from gearag.store.rows import rows_at
from gearag.trace import ExpansionTrace


class GraphExpansionMethod:
    """NaiveGE when ``reader`` is None, SyncGE otherwise."""

    def __init__(self, index: IndexStore, config: NaiveGEConfig | SyncGEConfig, reader: Reader | None = None,
                 ledger: UsageLedger | None = None) -> None:
        self.index = index
        self.config = config
        self.reader = reader
        #: The LLM engine's token ledger (None offline): the trace reports this question's tokens and fallbacks.
        self.ledger = ledger
        exp = config.expansion
        self.base = base_retriever(index, exp.base, exp.retriever)  # passages, or a pool's nodes' sources
        self.expander = GraphExpander(index, exp.beam, exp.scoring)
        self.linker = TripleLinker(index, exp.link, config=exp.retriever) if reader is not None else None
        self.graph = passage_graph_for(index, exp.passage_graph) if exp.graph != "beams" else None

    def __call__(self, question: str, k: int) -> Result:
        if self.ledger is None:
            return self._run(question, k)
        with usage_scope() as scope:  # this question's tokens only
            out = self._run(question, k)
            if isinstance(out.trace, ExpansionTrace):
                scope.stamp(out.trace)
        return out

    def _run(self, question: str, k: int) -> Result:
        started = time.perf_counter()
        exp = self.config.expansion
        base_hits = self.base.retrieve(question, self.config.base_k or k)
        base_rows = [h.idx for h in base_hits]
        proximal = None
        if self.reader is None or self.linker is None:
            initial = triples_of_passages(self.index, base_rows).tolist()
        else:
            found = self.reader.read(question, base_rows)
            proximal = [list(t.as_tuple()) for t in found]
            initial = self.linker.link(found)
        trace = ExpansionTrace(paths=[], expanded_passages=[], proximal=proximal)
        rankings: list[list[int]] = []
        if self.graph is not None:
            # PPR seeded by the question's entities, the linked proximal triples and the base passages.
            seeds = initial if self.reader is not None else []
            ppr = self.graph.rank(question, [(h.idx, h.score) for h in base_hits], seeds, max(k, len(base_rows)))
            rankings.append(ppr)
            trace.ppr_passages = [p.title for p in rows_at(self.index.passages, ppr[:k])]
        if exp.graph != "ppr":
            expansion = self.expander.expand(question, initial)
            # Eq. 3: RRF(expanded, base); with both, the PPR ranking joins the fusion.
            rankings.extend([expansion.passages, base_rows] if exp.graph == "beams" else [expansion.passages])
            trace.paths = self.expander.describe(expansion.beams)
            trace.expanded_passages = [p.title for p in rows_at(self.index.passages, expansion.passages[:k])]
        else:
            # PPR already weighs the base passages (they are seeds); they only fill the tail here.
            rankings = [list(dict.fromkeys([*rankings[0], *base_rows]))]
        fused = rrf(rankings, k=exp.retriever.rrf_k)
        trace.seconds = round(time.perf_counter() - started, 4)
        # The fused scores are reciprocal-rank sums (all near 1 / rrf_k): only the order means something.
        return Result(rank_scores([i for i, _ in fused[:k]]), trace, score_kind=RANK)


def NaiveGE(index: IndexStore, config: NaiveGEConfig) -> GraphExpansionMethod:  # noqa: N802 - registry factory
    """NaiveGE (§6.2): beams (Algorithm 1) from every triple of the base passages."""
    return GraphExpansionMethod(index, config)


def SyncGE(index: IndexStore, config: SyncGEConfig, llm_roles: object | None = None) -> GraphExpansionMethod:  # noqa: N802
    """SyncGE (§4): the engine's reader picks proximal triples, tripleLink maps them to the index."""
    engine = make_engine(index, config.engine, llm_roles)
    return GraphExpansionMethod(index, config, engine.reader, engine.ledger)
