"""Settings of the base retrievers (GEAR's ``h_base``)."""

from __future__ import annotations

from dataclasses import dataclass

from gearag.options import QUESTION, setting, upto
from gearag.retrieve.fusion import RRF_K

#: Retrieval pools (SiReRAG §4.3): ``chunks`` is the passages collection; the others are the
#: collections ``gearag index --sirerag`` (``--raptor``, ``--sirerag-ablations``) adds.
POOLS = ("chunks", "raptor", "sirerag", "no_relatedness_summaries", "plus_propositions",
         "propositions_no_aggregates", "propositions_only")


@dataclass(frozen=True)
class RetrieverConfig:
    """BM25, dense and hybrid retrieval over one collection of an index."""

    #: RRF constant for every fusion step (Cormack et al.; GEAR keeps 60).
    rrf_k: int = setting(RRF_K, "RRF constant for every fusion step.", min=1, request=QUESTION)
    #: How deep each side of the hybrid retriever is read before fusion.
    hybrid_depth: int = setting(100, "Hybrid: how deep BM25 and dense are each read before fusion.", min=1,
                                request=upto(1000))
    #: Which pool a method's base retrieval searches: the passages (``chunks``) or
    #: a SiReRAG pool of the index. The base methods return the pool's nodes;
    #: methods that read passages (SyncGE, GEAR, ...) expand each node to its
    #: source passages (:mod:`gearag.retrieve.pool`).
    pool: str = setting("chunks", "Retrieval pool: chunks (passages) | raptor | sirerag | a Table-5 ablation pool.",
                        choices=POOLS, request=QUESTION)
