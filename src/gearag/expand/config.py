"""Settings of graph expansion (GEAR §4) and of the NaiveGE / SyncGE methods; defaults follow App. B.2."""

from __future__ import annotations

from dataclasses import dataclass

from gearag.engine import EngineConfig
from gearag.expand.beam import BeamConfig
from gearag.expand.scoring import SCORING_MODES
from gearag.options import setting
from gearag.retrieve.config import RetrieverConfig


@dataclass(frozen=True)
class ExpansionConfig:
    """One round of graph expansion: base retrieval, beams, path scoring, tripleLink, Eq. 3's fusion."""

    #: Base retriever ``h_base`` over passages.
    base: str = setting("bm25", "Base retriever under graph expansion / the agent: bm25 | dense | hybrid.",
                        choices="retriever")
    #: Base retriever settings (``rrf_k`` also fuses Eq. 3).
    retriever: RetrieverConfig = setting(RetrieverConfig, "")
    beam: BeamConfig = setting(BeamConfig, "")
    #: Path scoring with a neural embedder: ``exact`` encodes every candidate
    #: path, ``sum`` approximates it from the triples' vectors (expand.scoring).
    scoring: str = setting("exact", "Path scoring with a neural embedder: exact | sum.", choices=SCORING_MODES)
    #: Retriever over triples used by tripleLink (Eq. 2).
    link: str = setting("bm25", "Retriever over triples for tripleLink (Eq. 2).", choices="retriever")


@dataclass(frozen=True)
class NaiveGEConfig:
    """NaiveGE (§6.2): expansion from every triple of the base passages."""

    expansion: ExpansionConfig = setting(ExpansionConfig, "")
    #: Passages the base retriever returns; ``None`` = the requested top-k
    #: (the paper matches it to the recall threshold for single-step runs).
    base_k: int | None = setting(None, "Passages from the base retriever (default: --top-k).", min=1)


@dataclass(frozen=True)
class SyncGEConfig(NaiveGEConfig):
    """SyncGE (§4): a reader picks proximal triples, tripleLink maps them to index triples."""

    engine: EngineConfig = setting(EngineConfig, "")
