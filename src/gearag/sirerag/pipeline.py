"""Both SiReRAG trees from passages, in one call (the seam the index and CLI wire in).

Order of work (all steps deterministic given the configs):

1. leaves: ``title + "\\n" + text`` per passage, embedded by the caller;
2. propositions per passage (offline spaCy engine or LLM roles, given as ``facts``);
3. proposition aggregates (:func:`gearag.sirerag.aggregates.build_aggregates`; by default each fact
   headed by its passage's title, :attr:`~gearag.sirerag.aggregates.AggregateConfig.titled`), embedded;
4. similarity tree over the leaves and relatedness tree over the aggregates
   (:func:`gearag.sirerag.tree.build_tree`), independently (§4.3) — or one
   cross tree (Appendix A) when :attr:`SiReRAGConfig.cross_tree` is set.

The released code builds the relatedness tree first; the order does not
matter here because the trees share nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gearag.model import Passage
from gearag.sirerag.aggregates import Aggregate, AggregateConfig, AggregateStats, Proposition, build_aggregates
from gearag.sirerag.levels import LevelStore
from gearag.sirerag.pool import Propositions
from gearag.sirerag.summarise import Summariser
from gearag.sirerag.tree import RELATEDNESS, SIMILARITY, Encode, Tree, TreeConfig, build_cross_tree, build_tree


@dataclass(frozen=True)
class SiReRAGConfig:
    similarity: TreeConfig = field(default_factory=TreeConfig)
    relatedness: TreeConfig = field(default_factory=TreeConfig)
    aggregates: AggregateConfig = field(default_factory=AggregateConfig)
    #: Appendix A: cluster both trees' nodes together above the leaves (paper: no gain; off).
    cross_tree: bool = False


@dataclass
class SiReRAGTrees:
    similarity: Tree
    #: The relatedness tree, or the cross tree when built with ``cross_tree``.
    relatedness: Tree
    aggregates: list[Aggregate]
    aggregate_stats: AggregateStats
    timings: dict[str, float] = field(default_factory=dict)


def leaf_texts(passages: Sequence[Passage]) -> list[str]:
    """The similarity tree's leaves, as released: ``title + "\\n" + text`` (the passages' retrieval text)."""
    return [p.content for p in passages]


def build_sirerag_trees(
    passages: Sequence[Passage],
    leaf_embeddings: np.ndarray,
    facts: Sequence[Sequence[Proposition]],
    *,
    encode: Encode,
    summariser: Summariser,
    config: SiReRAGConfig | None = None,
    build_relatedness: bool = True,
    store: LevelStore | None = None,
    salt: str = "",
) -> SiReRAGTrees:
    """Both trees; ``build_relatedness=False`` gives the RAPTOR baseline (similarity tree only).

    ``store`` checkpoints every finished tree level (an interrupted build resumes at the level it
    reached, :mod:`gearag.sirerag.levels`); ``salt`` is the summariser's and embedder's identity.
    """
    cfg = config or SiReRAGConfig()
    if len(facts) != len(passages):
        raise ValueError(f"need one fact list per passage ({len(passages)}), got {len(facts)}")
    timings: dict[str, float] = {}
    t = time.perf_counter()
    stats = AggregateStats()
    titles = [p.title for p in passages]
    aggs = build_aggregates(facts, cfg.aggregates, stats, titles=titles) if build_relatedness else []
    agg_texts = [a.text for a in aggs]
    agg_emb = np.asarray(encode(agg_texts), dtype=np.float32) if aggs else np.zeros(
        (0, leaf_embeddings.shape[1]), dtype=np.float32)
    timings["aggregates_s"] = time.perf_counter() - t
    leaves = leaf_texts(passages)
    sources = [(i,) for i in range(len(passages))]
    agg_sources = [a.sources for a in aggs]
    t = time.perf_counter()
    if cfg.cross_tree and build_relatedness:
        # Leaves only for the similarity side; the cross tree carries every summary.
        sim = build_tree(SIMILARITY, leaves, leaf_embeddings, sources, encode=encode, summariser=summariser,
                         config=TreeConfig(levels=1))
        rel = build_cross_tree((leaves, leaf_embeddings, sources), (agg_texts, agg_emb, agg_sources),
                               encode=encode, summariser=summariser, config=cfg.relatedness, store=store,
                               salt=salt)
        timings["cross_tree_s"] = time.perf_counter() - t
        return SiReRAGTrees(sim, rel, aggs, stats, timings)
    sim = build_tree(SIMILARITY, leaves, leaf_embeddings, sources, encode=encode, summariser=summariser,
                     config=cfg.similarity, store=store, salt=salt)
    timings["similarity_tree_s"] = time.perf_counter() - t
    t = time.perf_counter()
    rel_cfg = cfg.relatedness if build_relatedness else TreeConfig(levels=1)
    rel = build_tree(RELATEDNESS, agg_texts, agg_emb, agg_sources, encode=encode, summariser=summariser,
                     config=rel_cfg, store=store, salt=salt)
    timings["relatedness_tree_s"] = time.perf_counter() - t
    return SiReRAGTrees(sim, rel, aggs, stats, timings)


def single_propositions(facts: Sequence[Sequence[Proposition]], encode: Encode) -> Propositions:
    """Every fact with at least one entity, for the Table-5 (B)-(D) ablations (distinct texts)."""
    seen: dict[str, int] = {}
    for row, fs in enumerate(facts):
        for f in fs:
            if f.entities and f.text not in seen:
                seen[f.text] = row
    texts = list(seen)
    emb = np.asarray(encode(texts), dtype=np.float32) if texts else np.zeros((0, 1), dtype=np.float32)
    return Propositions(texts, np.asarray(list(seen.values()), dtype=np.int64), emb)
