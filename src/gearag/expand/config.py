"""Settings of graph expansion (GEAR §4) and of the NaiveGE / SyncGE methods; defaults follow App. B.2."""

from __future__ import annotations

from dataclasses import dataclass, field

from gearag.engine import EngineConfig
from gearag.expand.beam import BeamConfig
from gearag.expand.scoring import SCORING_MODES
from gearag.graph.passage_graph import PassageGraphConfig
from gearag.options import QUESTION, option, setting, upto
from gearag.retrieve.config import RetrieverConfig

#: What expands the base passages (see :attr:`ExpansionConfig.graph`).
GRAPH_MODES = ("ppr", "beams", "both")


@dataclass(frozen=True)
class ExpansionConfig:
    """One round of graph expansion: base retrieval, beams, path scoring, tripleLink, Eq. 3's fusion."""

    #: Base retriever ``h_base`` over passages.
    base: str = setting("bm25", "Base retriever under graph expansion / the agent: bm25 | dense | hybrid.",
                        choices="retriever", request=QUESTION)
    #: Base retriever settings (``rrf_k`` also fuses Eq. 3).
    retriever: RetrieverConfig = setting(RetrieverConfig, "")
    beam: BeamConfig = setting(BeamConfig, "")
    #: Path scoring with a neural embedder: ``exact`` encodes every candidate
    #: path, ``sum`` approximates it from the triples' vectors (expand.scoring).
    scoring: str = setting("exact", "Path scoring with a neural embedder: exact | sum.", choices=SCORING_MODES,
                           request=QUESTION)
    #: Retriever over triples used by tripleLink (Eq. 2).
    link: str = setting("bm25", "Retriever over triples for tripleLink (Eq. 2).", choices="retriever", request=QUESTION)
    #: What expands the base passages: ``ppr`` (Personalized PageRank over the
    #: passage-aware graph seeded by the question's entities, the proximal
    #: triples and the base passages; :mod:`gearag.graph.passage_graph`),
    #: ``beams`` (Algorithm 1 as printed, then Eq. 3) or ``both`` (RRF of the
    #: two). PPR is our extension (docs/benchmarks-log.md: 2Wiki SyncGE R@5
    #: 76.1 → 89.8); ``beams`` is the paper.
    graph: str = setting("ppr", "Expansion: ppr (passage graph) | beams (Algorithm 1 as printed) | both.",
                         choices=GRAPH_MODES, request=QUESTION)
    #: Settings of the passage graph (``graph`` = ppr | both).
    passage_graph: PassageGraphConfig = setting(PassageGraphConfig, "")


@dataclass(frozen=True)
class NaiveGEConfig:
    """NaiveGE (§6.2): expansion from every triple of the base passages, by Algorithm 1 unless asked otherwise."""

    expansion: ExpansionConfig = field(default_factory=lambda: ExpansionConfig(graph="beams"),
                                       metadata=option(""))
    #: Passages the base retriever returns; ``None`` = the requested top-k
    #: (the paper matches it to the recall threshold for single-step runs).
    base_k: int | None = setting(None, "Passages from the base retriever (default: --top-k).", min=1,
                                 request=upto(1000))


@dataclass(frozen=True)
class SyncGEConfig:
    """SyncGE (§4): a reader picks proximal triples, tripleLink maps them to index triples."""

    expansion: ExpansionConfig = setting(ExpansionConfig, "")
    #: Passages the base retriever returns; ``None`` = the requested top-k.
    base_k: int | None = setting(None, "Passages from the base retriever (default: --top-k).", min=1,
                                 request=upto(1000))
    engine: EngineConfig = setting(EngineConfig, "")
