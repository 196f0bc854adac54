"""Settings of the base retrievers (GEAR's ``h_base``)."""

from __future__ import annotations

from dataclasses import dataclass

from gearag.options import setting
from gearag.retrieve.fusion import RRF_K


@dataclass(frozen=True)
class RetrieverConfig:
    """BM25, dense and hybrid retrieval over one collection of an index."""

    #: RRF constant for every fusion step (Cormack et al.; GEAR keeps 60).
    rrf_k: int = setting(RRF_K, "RRF constant for every fusion step.", min=1)
    #: How deep each side of the hybrid retriever is read before fusion.
    hybrid_depth: int = setting(100, "Hybrid: how deep BM25 and dense are each read before fusion.", min=1)
