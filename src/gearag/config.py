"""How an index is built: one typed config per build stage, composed into :class:`IndexConfig`.

An index records its config in its manifest (``IndexConfig.to_dict``);
manifests of format 1 stored the same settings flat and still load.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

from gearag.options import setting

#: Which triple endpoints become graph nodes (see :class:`GraphConfig`).
LINK_MODES = ("named", "all")


@dataclass(frozen=True)
class ExtractConfig:
    """Stage 1: triples from passages (GEAR §3)."""

    #: Triple extractor spec: ``spacy`` (offline rules), ``openie:FILE``
    #: (HippoRAG OpenIE JSON) or ``llm``.
    extractor: str = setting("spacy", "Triple extractor: spacy | openie:FILE | llm[:MODEL].")


@dataclass(frozen=True)
class GraphConfig:
    """Stage 2: tie triples to passages and build the entity → triples graph (§4.2)."""

    #: Which triple endpoints become graph nodes: ``named`` (proper names,
    #: not lower-case common nouns or bare dates/numbers; see
    #: :func:`gearag.text.is_named`) or ``all`` (every endpoint).
    link_entities: str = setting("named", "Graph nodes: named entities only, or all endpoints.", choices=LINK_MODES)
    #: Hub cut-off: an entity found in more than this share of passages (and
    #: in more than 20) links nothing. Such hubs ("United States", "English")
    #: join unrelated passages and crowd real bridges out of the beams.
    #: ``1.0`` turns the cut-off off.
    max_entity_share: float = setting(0.005, "Entities in more than this share of passages link nothing.",
                                      positive=True)
    #: Keep what ``gearag add`` and ``gearag delete`` extend (per-shard endpoint
    #: tables and token indices, the union's key and name vocabularies and
    #: statistics, the resolution's lexicon and mentions: ~9% of the index on
    #: disk at 1M passages). The graph stage then makes its graph and
    #: resolution the way a generation of a sharded index does (the same
    #: arrays), so the index's first add is as fast as later ones instead of
    #: computing this state for the whole corpus (~7 min at 1M). Not kept for
    #: indices an add cannot extend (tree pools).
    growable: bool = setting(True, "Keep the state gearag add extends, so the index's first add is as fast as "
                                   "later ones (--no-growable: ~9% less disk; the first add computes it).")


#: Engines of the SiReRAG trees (see :class:`TreesConfig`).
TREE_ENGINES = ("offline", "openai", "local")


#: Which proposition aggregates a SiReRAG pool indexes (:attr:`TreesConfig.pool_aggregates`).
POOL_AGGREGATES = ("all", "cross-passage")
#: How a proposition aggregate's text is written (:attr:`TreesConfig.aggregate_text`).
AGGREGATE_TEXTS = ("titled", "facts")


@dataclass(frozen=True)
class TreesConfig:
    """Stage 3 (off by default): SiReRAG's similarity and relatedness trees as retrieval pools (SiReRAG §4).

    ``--sirerag`` adds the pools ``raptor`` (passages + similarity-tree
    summaries, the paper's RAPTOR baseline) and ``sirerag`` (+ proposition
    aggregates + relatedness-tree summaries); ``--raptor`` adds ``raptor``
    alone. The passages collection is the ``chunks`` pool. Each pool is a
    collection of the index (text, level, tree, kind and source passages per
    node), indexed by the BM25 and embedding stages like the passages.
    """

    #: Build both trees (pools ``raptor`` and ``sirerag``).
    sirerag: bool = setting(False, "Add SiReRAG's similarity and relatedness trees (pools raptor and sirerag).")
    #: Build the similarity tree alone (pool ``raptor``).
    raptor: bool = setting(False, "Add RAPTOR's similarity tree alone (pool raptor).")
    #: ``offline``: sentence propositions from spaCy and extractive summaries;
    #: ``openai``: the SiReRAG prompts through an OpenAI-compatible endpoint;
    #: ``local``: the same prompts through a GGUF model in process (``--llm-gguf``).
    engine: str = setting("offline", "Engine of the trees' propositions and summaries: offline | openai | local.",
                          choices=TREE_ENGINES)
    #: Also build the Table-5 ablation pools (A) ``no_relatedness_summaries``,
    #: (B) ``plus_propositions``, (C) ``propositions_no_aggregates``, (D) ``propositions_only``.
    ablations: bool = setting(False, "SiReRAG: also build the Table-5 ablation pools (A)-(D).",
                              name="sirerag_ablations")
    #: Appendix A: one tree clustering both trees' nodes above the leaves (the paper found no gain).
    cross_tree: bool = setting(False, "SiReRAG: cluster both trees' nodes together (Appendix A).",
                               name="sirerag_cross_tree")
    #: Levels per tree, leaves included (SiReRAG §4.1: 4).
    levels: int = setting(4, "Tree levels in total, leaves included (SiReRAG: 4).", name="tree_levels", min=1)
    #: Word budget of an offline (extractive) summary; LLM summaries are not capped, as released.
    summary_words: int = setting(120, "Offline engine: word budget of an extractive summary.", min=10)
    #: Which proposition aggregates the pools index. ``all`` as released. ``cross-passage``: only
    #: aggregates whose facts come from two or more passages — an aggregate of one passage's facts
    #: repeats part of that passage (which is in the pool) and relates nothing across documents
    #: (SiReRAG §4.2's motivation); the relatedness tree is still built over all aggregates.
    #: Measured in docs/benchmarks-log.md ("SiReRAG"): off by default, as released.
    pool_aggregates: str = setting("all", "SiReRAG pools: index all aggregates (as released) or only"
                                   " cross-passage ones.", choices=POOL_AGGREGATES, name="sirerag_pool_aggregates")
    #: The text of a proposition aggregate. ``facts``: its facts joined by newlines, as released.
    #: ``titled`` (default; a deviation): the same facts, each passage's run of facts headed by the
    #: passage's title (``title\\nfact\\nfact``, the form of the leaves), so that a fact the offline
    #: rewrite left ambiguous still names its source (SiReRAG §4.2, Figures 6 and 8: facts must be
    #: unambiguous); :class:`gearag.sirerag.aggregates.AggregateConfig`. Measured in docs/benchmarks-log.md
    #: ("SiReRAG offline pool, 2Wiki (branch sire4)").
    aggregate_text: str = setting("titled", "SiReRAG aggregates: facts under their passage's title (titled) or"
                                  " the facts alone, as released (facts).", choices=AGGREGATE_TEXTS,
                                  name="sirerag_aggregate_text")

    @property
    def enabled(self) -> bool:
        return self.sirerag or self.raptor


@dataclass(frozen=True)
class ResolveConfig:
    """Stage 2b: entity resolution and the passage-aware graph's arrays (:mod:`gearag.graph`)."""

    #: Build the passage-aware graph (mentions resolved to the passages about
    #: them, entity relations) under ``graph/``. Off: it is built in memory on
    #: first use instead (a few seconds on 6k passages).
    entity_graph: bool = setting(True, "Store the passage-aware entity graph in the index (--no-entity-graph: "
                                       "build it in memory on first use).")
    #: Synonym edges between entity names whose embeddings (the index's
    #: embedder) have cosine ≥ ``synonym_threshold`` among each name's
    #: ``synonym_neighbours`` nearest (HippoRAG §3.2). Stored under ``graph/``;
    #: the query-time ``synonym_weight`` scales them (0: unused).
    synonyms: bool = setting(False, "Store synonym edges between similar entity names (HippoRAG's KNN).")
    synonym_threshold: float = setting(0.8, "Cosine for a synonym edge between entity names (HippoRAG: 0.8).",
                                       name="entity_synonym_threshold", min=-1.0)
    synonym_neighbours: int = setting(100, "Most synonym edges per entity name (KNN depth; HippoRAG: 100).",
                                      name="entity_synonym_neighbours", min=1)
    #: Mentions from spaCy's named-entity spans of the passage text, resolved
    #: like triple endpoints (LinearRAG's mention source). Costs one more spaCy
    #: pass (NER only) at index time; the query-time ``ner_mentions`` uses them.
    ner_mentions: bool = setting(False, "Store mentions from spaCy NER spans of the passages (one more spaCy pass).",
                                 name="index_ner_mentions")
    #: Store the passage graph prepared for the default query settings under
    #: ``graph/prepared/`` (:mod:`gearag.graph.prepared`): query processes
    #: memory-map it instead of each deriving it. Off, the index stores the
    #: triple graph alone (as with ``entity_graph`` off) and each query process
    #: derives the passage graph as a build derives it, on first use
    #: (:mod:`gearag.derive.graph_for`); NER mentions, which only the build
    #: reads, are then not available.
    prepared_graph: bool = setting(True, "Store the passage graph prepared for queries (memory-mapped at query "
                                         "time; --no-prepared-graph: each process derives it in memory).")


@dataclass(frozen=True)
class BM25Config:
    """Stage 4: BM25 over every collection (Lucene variant, bm25s)."""

    #: Term-frequency saturation.
    k1: float = setting(1.5, "BM25 k1 (term-frequency saturation).", name="bm25_k1", positive=True)
    #: Length normalisation.
    b: float = setting(0.75, "BM25 b (length normalisation).", name="bm25_b", min=0.0)


@dataclass(frozen=True)
class EmbedConfig:
    """Stage 5: unit-length embeddings of every collection."""

    #: Dense embedder: ``wordllama`` (static, no torch) or ``minilm``
    #: (all-MiniLM-L6-v2, extra ``neural``).
    embedder: str = setting("wordllama", "Dense embedder: wordllama | minilm.", choices="embedder")
    #: Texts per embedding batch; bounds memory for long passages.
    batch: int = setting(4096, "Texts per embedding batch.", name="embed_batch", min=1)


@dataclass(frozen=True)
class IndexConfig:
    """Every build stage's settings."""

    extract: ExtractConfig = field(default_factory=ExtractConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    resolve: ResolveConfig = field(default_factory=ResolveConfig)
    trees: TreesConfig = field(default_factory=TreesConfig)
    bm25: BM25Config = field(default_factory=BM25Config)
    embed: EmbedConfig = field(default_factory=EmbedConfig)

    @classmethod
    def of(cls, extractor: str = "spacy", embedder: str = "wordllama") -> IndexConfig:
        """The default config with the two settings people change most."""
        return cls(ExtractConfig(extractor), embed=EmbedConfig(embedder))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexConfig:
        """Read a manifest's config: nested (format 2) or flat (format 1: extractor, embedder, bm25_k1, ...)."""
        parts: dict[str, Any] = {}
        for f in fields(cls):
            sub = f.default_factory
            if not (isinstance(sub, type) and is_dataclass(sub)):  # every field is a section with a default
                raise TypeError(f"{cls.__name__}.{f.name} is not a config section")
            section = data.get(f.name)
            known = {g.name for g in fields(sub)}
            if isinstance(section, dict):
                values = {k: v for k, v in section.items() if k in known}
            else:  # format 1: flat keys, BM25's prefixed
                flat = {k.removeprefix("bm25_") if f.name == "bm25" else k: v for k, v in data.items()}
                values = {k: v for k, v in flat.items() if k in known}
            parts[f.name] = sub(**values)
        return cls(**parts)
