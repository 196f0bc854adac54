"""Settings of the peer baselines; every default names its source.

Sources: HippoRAG = Gutiérrez et al. 2024 (NeurIPS) and its code
(``OSU-NLP-Group/HippoRAG``, ``src/hipporag.py``); HippoRAG 2 = Gutiérrez et al.
2025 (ICML), ``src/hipporag/HippoRAG.py``; IRCoT = Trivedi et al. 2023 (ACL)
and HippoRAG's IRCoT driver (``src/ircot_hipporag.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from gearag.engine import EngineConfig
from gearag.options import QUESTION, setting, upto


def _damping() -> float:
    """The PPR damping of every HippoRAG variant: the probability of following an edge
    (HippoRAG App. B: 0.5, igraph's ``damping``)."""
    return setting(0.5, "HippoRAG: PPR damping (paper: 0.5).", min=0.0, request=upto(0.95))

@dataclass(frozen=True)
class PhraseGraphConfig:
    """How phrase nodes meet through synonym edges (both HippoRAG versions)."""

    #: Cosine at or above which two phrases get a synonym edge (HippoRAG §3.2 and its
    #: README's ``SYNONYM_THRESH=0.8``; HippoRAG 2 ``synonymy_edge_sim_threshold=0.8``).
    synonym_threshold: float = setting(0.8, "HippoRAG: cosine for a synonym edge between phrases (paper: 0.8).",
                                       min=-1.0)
    #: Nearest neighbours considered per phrase (HippoRAG 2's KNN keeps ~100 per node in practice).
    synonym_neighbours: int = setting(100, "HippoRAG: most synonym edges per phrase (KNN depth, ~100).", min=0)


@dataclass(frozen=True)
class HippoRAGConfig:
    """HippoRAG v1: query entities → phrase nodes (÷ specificity) → PPR → passages through their phrases."""

    damping: float = _damping()
    #: Seed each linked phrase with 1/(passages it occurs in) (HippoRAG §3.2 "node specificity";
    #: without it 2Wiki R@5 drops 89.1 → 88.8, Table 5).
    node_specificity: bool = setting(True, "HippoRAG: weight seeds by node specificity (1/#passages).",
                                     request=QUESTION)
    #: Where query entities come from offline: spaCy's NER on the question, or NER plus noun chunks.
    #: The LLM engine asks the model instead (HippoRAG's query NER prompt).
    query_entities: str = setting("ner", "HippoRAG offline query entities: ner | ner+nouns.",
                                  choices=("ner", "ner+nouns"), request=QUESTION)
    #: With no query entity (HippoRAG gives every passage the same score) we rank by dense retrieval.
    fallback: str = setting("dense", "HippoRAG: ranking when no entity links: dense | uniform.",
                            choices=("dense", "uniform"), request=QUESTION)
    graph: PhraseGraphConfig = setting(PhraseGraphConfig, "")
    engine: EngineConfig = setting(EngineConfig, "")


@dataclass(frozen=True)
class HippoRAG2Config:
    """HippoRAG 2: top facts → phrase seeds, every passage seeded by its dense score, PPR over both."""

    damping: float = _damping()
    #: Facts kept after scoring all facts against the query (HippoRAG 2 ``linking_top_k=5``);
    #: also how many phrase seeds are kept.
    fact_top_k: int = setting(5, "HippoRAG 2: top facts linked to the query, and phrase seeds kept (5).", min=1,
                              request=upto(100))
    #: Weight of the passages' dense seeds relative to phrases (HippoRAG 2 ``passage_node_weight=0.05``;
    #: 0.01–0.1 score alike on MuSiQue, §5.3).
    passage_weight: float = setting(0.05, "HippoRAG 2: weight of every passage's normalised dense seed (0.05).",
                                    min=0.0, request=QUESTION)
    #: The LLM recognition filter runs with the ``openai`` engine; ``false`` skips it there too
    #: (2Wiki R@5 90.7 without it vs 90.4 with it, HippoRAG 2 Table 5).
    recognition_filter: bool = setting(True, "HippoRAG 2: LLM fact filter with --engine openai or local.",
                                       request=QUESTION)
    graph: PhraseGraphConfig = setting(PhraseGraphConfig, "")
    engine: EngineConfig = setting(EngineConfig, "")


@dataclass(frozen=True)
class IRCoTLoopConfig:
    """The IRCoT loop's settings, shared by ``ircot`` and ``hipporag-ircot``."""

    #: Retrieval steps including the first (GEAR's agent default 4 = MuSiQue; 2 for 2Wiki/HotpotQA;
    #: the bench sets it per dataset, GEAR App. B.1).
    max_steps: int = setting(4, "IRCoT: maximum retrieval steps (GEAR: 4 MuSiQue, 2 2Wiki/HotpotQA).", min=1,
                             request=upto(10))
    #: Passages retrieved per step (GEAR App. B: 10, as IRCoT; HippoRAG's driver uses 8).
    per_step: int = setting(10, "IRCoT: passages retrieved per step (10).", min=1, request=upto(100))
    #: How steps' passages merge: each passage's best score, sorted (HippoRAG's IRCoT driver), or
    #: first-retrieved first.
    merge: str = setting("score", "IRCoT: merge steps by best score (score) or retrieval order (order).",
                         choices=("score", "order"), request=QUESTION)
    #: Offline only: the next query is the new reasoning sentence alone (IRCoT) or the question plus it.
    offline_query: str = setting("thought", "IRCoT offline: next query = thought | question+thought.",
                                 choices=("thought", "question+thought"), request=QUESTION)


@dataclass(frozen=True)
class IRCoTConfig(IRCoTLoopConfig):
    """IRCoT: retrieve, write one reasoning sentence, retrieve with it, until the answer or ``max_steps``."""

    #: Base retriever for ``ircot`` (HippoRAG's IRCoT baseline used BM25, Contriever or ColBERTv2).
    base: str = setting("bm25", "IRCoT: base retriever (ircot only).", choices="retriever", request=QUESTION)
    engine: EngineConfig = setting(EngineConfig, "")


@dataclass(frozen=True)
class HippoRAGIRCoTConfig(IRCoTLoopConfig):
    """HippoRAG w/ IRCoT: IRCoT's loop with HippoRAG (v1 by default, as in the HippoRAG paper) per step."""

    #: Which HippoRAG retrieves each step (the HippoRAG paper combines IRCoT with v1).
    variant: str = setting("hipporag", "HippoRAG w/ IRCoT: retriever per step: hipporag | hipporag2.",
                           choices=("hipporag", "hipporag2"), request=QUESTION)
    damping: float = _damping()
    graph: PhraseGraphConfig = setting(PhraseGraphConfig, "")
    engine: EngineConfig = setting(EngineConfig, "")
