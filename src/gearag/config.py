"""Typed configuration with documented defaults.

Each stage has one dataclass; the CLI maps its options onto these, and an
index records its :class:`IndexConfig` in its manifest.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class IndexConfig:
    """How an index is built."""

    #: Triple extractor spec: ``spacy`` (offline rules), ``openie:FILE``
    #: (HippoRAG OpenIE JSON) or ``llm``.
    extractor: str = "spacy"
    #: Dense embedder for passages and triples: ``wordllama`` (static, no
    #: torch) or ``minilm`` (all-MiniLM-L6-v2, extra ``neural``).
    embedder: str = "wordllama"
    #: Which triple endpoints become graph nodes: ``named`` (proper names,
    #: not lower-case common nouns or bare dates/numbers; see
    #: :func:`gearag.store.graph.is_named`) or ``all`` (every endpoint).
    link_entities: str = "named"
    #: Hub cut-off: an entity found in more than this share of passages (and
    #: in more than 20) links nothing. Such hubs ("United States", "English")
    #: join unrelated passages and crowd real bridges out of the beams.
    #: ``1.0`` turns the cut-off off.
    max_entity_share: float = 0.005
    #: Build the passage-aware graph (entity resolution, mention links;
    #: :mod:`gearag.graph`) under ``graph/``. Off: it is built in memory on
    #: first use instead (a few seconds on 6k passages).
    entity_graph: bool = True
    #: BM25 term-frequency saturation and length normalisation (Lucene variant).
    bm25_k1: float = 1.5
    bm25_b: float = 0.75

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class RetrievalConfig:
    """Base retrieval (GEAR's ``h_base``)."""

    #: ``bm25``, ``dense`` or ``hybrid`` (RRF of BM25 and dense).
    method: str = "bm25"
    #: RRF constant for the hybrid retriever (Cormack et al.).
    rrf_k: int = 60
    #: How deep each side of the hybrid retriever is read before fusion.
    hybrid_depth: int = 100
