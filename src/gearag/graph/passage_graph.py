"""The passage-aware graph: entity and passage nodes, ranked by Personalized PageRank.

Nodes are the corpus's passages (rows ``0 … P-1``) and its entities (name
keys, rows ``P …``; :mod:`gearag.graph.resolve`). Edges, all undirected and
weighted (HippoRAG 2, Gutiérrez et al., 2025, §3):

* **mention** passage — entity, weight 1: the entity is a named endpoint of
  one of the passage's triples or a name found in its text (HippoRAG's
  passage–phrase "context" edges);
* **about** entity — passage, weight ``about_weight × w``: the resolution
  (``w`` from :mod:`gearag.graph.resolve`). This is the edge GEAR's triple
  graph lacks: from a fact's object to the page about it;
* **relation** entity — entity, weight = number of triples joining them
  (HippoRAG's subject–object edges);
* **synonym** entity — entity, weight ``synonym_weight × cosine``: names whose
  embeddings (the index's embedder) are similar above a threshold
  (HippoRAG §3.2; :mod:`gearag.graph.synonyms`), computed at index time
  when ``ResolveConfig.synonyms`` is on;
* **NER mention** passage — entity, weight 1, like a mention edge: the
  passage's named-entity spans (:mod:`gearag.graph.ner`), stored when
  ``ResolveConfig.ner_mentions`` is on and used when ``ner_mentions`` is.

A query is answered by PPR (:mod:`gearag.graph.ppr`, damping 0.5) seeded with

* the question's entities (names found in it by the token trie), each
  weighted by its node specificity ``1 / |passages mentioning it|``
  (HippoRAG §3.2), normalised to total 1;
* the proximal triples' named endpoints (the reader's facts, GEAR Eq. 1),
  weight ``1 / (rank + 1)``, normalised to total ``proximal_weight``;
* the base passages at ``passage_weight × min-max score`` (HippoRAG 2 seeds
  every passage at 0.05 × its normalised dense score; we seed the base
  retriever's top passages).

Passages are ranked by their own PPR probability. ``passage_nodes=False``
is HippoRAG 1's scheme (entities only; a passage scores the sum of its
entities' probabilities), kept for the ablation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

from gearag.graph.config import RANK_TOL
from gearag.graph.config import PassageGraphConfig as PassageGraphConfig
from gearag.graph.ppr import PageRankOperator
from gearag.graph.prepared import PreparedGraph, settings_of
from gearag.graph.resolve import stop_words
from gearag.graph.trie import tokens
from gearag.store.index import GRAPH_DIR as GRAPH_DIR


class PassageGraph:
    """PPR ranking of passages over an index's prepared graph (see the module docstring)."""

    def __init__(self, prepared: PreparedGraph, config: PassageGraphConfig = PassageGraphConfig()) -> None:
        """``prepared``: a prepared graph that :meth:`PreparedGraph.serves` ``config`` (e.g. the index's stored
        one, memory-mapped; :func:`gearag.derive.graph_for.passage_graph_for` gives the one for ``config``)."""
        self.config = config
        if not prepared.serves(config):
            raise ValueError(f"a graph prepared for {prepared.settings} cannot serve {settings_of(config)}")
        self.prepared = prepared
        self.n_passages, self.n_entities = prepared.n_passages, prepared.n_entities
        self.layout = prepared.layout  # node ids: passages then entities, or a base's and a delta's
        #: Node specificity 1/|P(e)| (HippoRAG §3.2); entities in no passage count as in one.
        self.specificity = prepared.specificity
        # Hashed, not a dict trie: ~16 bytes per entity key instead of ~0.5 KB (3 GB at a million passages).
        self.trie = prepared.names
        self.operator = PageRankOperator.from_columns(prepared.columns)

    # -- seeds ---------------------------------------------------------------
    def question_entities(self, question: str) -> list[int]:
        """Entity ids named in the question (leftmost-longest, written as names).

        A match made only of stop words ("What is" at the start of a question
        matching a title "What Is") is not a name mention.
        """
        toks = tokens(question)
        out: dict[int, None] = {}
        for m in self.trie.scan(toks, require_capital=True):
            if all(t.casefold() in stop_words() for t in toks[m.start : m.end]):
                continue
            out.setdefault(m.name, None)
        return list(out)

    def seeds(
        self,
        question: str,
        base: Sequence[tuple[int, float]] = (),
        proximal: Sequence[int] = (),
        ranked: bool = True,
        proximal_weight: float | None = None,
    ) -> np.ndarray:
        """Seed vector over the graph's nodes (:meth:`seed_items` as a dense vector)."""
        nodes, values = self.seed_items(question, base, proximal, ranked, proximal_weight)
        size = self.layout.n_nodes if self.config.passage_nodes else self.n_entities
        s = np.zeros(size)
        s[nodes] = values
        return s

    def seed_items(
        self,
        question: str,
        base: Sequence[tuple[int, float]] = (),
        proximal: Sequence[int] = (),
        ranked: bool = True,
        proximal_weight: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The seeds' nodes (ascending) and non-zero weights.

        ``base``: (passage row, retrieval score) pairs; ``proximal``: index
        triple ids found by the reader, best first (``ranked``: weight
        ``1/(rank+1)``; otherwise all alike, e.g. a gist memory), total weight
        ``proximal_weight`` (default: the config's).
        """
        cfg = self.config
        prox_weight = cfg.proximal_weight if proximal_weight is None else proximal_weight
        layout = self.layout

        def node(entity: int) -> int:
            return layout.entity_node(entity) if cfg.passage_nodes else entity

        # Each node's weight is the sum of its parts in this order (as a dense vector's += would add them).
        s: dict[int, float] = {}

        def add(node: int, weight: float) -> None:
            s[node] = s.get(node, 0.0) + weight

        ents = self.question_entities(question)
        if ents:
            w = self.specificity[ents]
            share = w / w.sum()
            if cfg.question_page_weight > 0 and cfg.passage_nodes:
                # Each entity passes question_page_weight of its share on to the pages about it
                # (if any), so the question's seeds still total 1 against the memory's.
                about = self.prepared.about_rows(np.asarray(ents, dtype=np.int64))
                passed = cfg.question_page_weight * share * np.asarray(about.sum(axis=1)).ravel()
                pages = sparse.csr_matrix((cfg.question_page_weight * share)[None, :]) @ about
                page_nodes = layout.passage_nodes(pages.indices)
                for at, weight in zip(page_nodes.tolist(), pages.data.tolist(), strict=True):
                    add(at, weight)
                share = share - passed
            for e, weight in zip(ents, share.tolist(), strict=True):
                add(node(int(e)), weight)
        if proximal and prox_weight > 0:
            ends = self.prepared.triple_ends
            acc: dict[int, float] = {}
            for rank, t in enumerate(proximal):
                for e in ends[int(t)]:
                    if e >= 0:
                        acc[int(e)] = acc.get(int(e), 0.0) + self.specificity[e] / (rank + 1 if ranked else 1)
            if acc:
                total = sum(acc.values())
                for e, v in acc.items():
                    add(node(e), prox_weight * v / total)
        if base and cfg.passage_weight > 0 and cfg.passage_nodes:
            rows = np.asarray([r for r, _ in base], dtype=np.int64)
            scores = np.asarray([sc for _, sc in base], dtype=np.float64)
            lo, hi = scores.min(), scores.max()
            norm = (scores - lo) / (hi - lo) if hi > lo else np.ones_like(scores)
            nodes = layout.passage_nodes(rows)
            for at, weight in zip(nodes.tolist(), (cfg.passage_weight * norm).tolist(), strict=True):
                add(at, weight)
        nodes = np.asarray(sorted(k for k, v in s.items() if v != 0.0), dtype=np.int64)
        return nodes, np.asarray([s[int(n)] for n in nodes], dtype=np.float64)

    def scores(self, seeds: np.ndarray) -> np.ndarray:
        """Passage scores: their PPR probability (entity-only graph: sum over mentioned entities)."""
        cfg = self.config
        if cfg.solver == "push":
            p, _ = self.operator.run_push(seeds, damping=cfg.damping, eps=cfg.push_eps)
        else:
            p = self.operator.run(seeds, damping=cfg.damping, tol=RANK_TOL)
        if self.config.passage_nodes:
            layout = self.layout
            return p[: self.n_passages] if layout.plain_layout else p[layout.passage_nodes(np.arange(self.n_passages))]
        assert self.prepared.mentions is not None  # prepared in memory for the entity-only graph
        return np.asarray(self.prepared.mentions @ p).ravel()

    def rank(
        self,
        question: str,
        base: Sequence[tuple[int, float]] = (),
        proximal: Sequence[int] = (),
        k: int = 15,
        ranked: bool = True,
        proximal_weight: float | None = None,
    ) -> list[int]:
        """Top ``k`` passage rows by PPR (passages with zero probability are not returned)."""
        cfg = self.config
        if cfg.solver == "push" and cfg.passage_nodes:
            # Sparse end to end: seeds, push and ranking touch the seeds' neighbourhood only.
            nodes, values = self.seed_items(question, base, proximal, ranked, proximal_weight)
            if not len(nodes):
                return []
            idx, est, _ = self.operator.run_push_sparse(nodes, values, damping=cfg.damping, eps=cfg.push_eps)
            rows = self.layout.passages_of(idx)  # ascending where they are passages: a delta's come last
            keep = (rows >= 0) & (est > 0)
            reached, vals = rows[keep], est[keep]  # ascending rows, as flatnonzero gives them
        else:
            seeds = self.seeds(question, base, proximal, ranked, proximal_weight)
            if not seeds.any():
                return []
            sc = self.scores(seeds)
            reached = np.flatnonzero(sc > 0)
            vals = sc[reached]
        pos = np.argpartition(-vals, k)[:k] if len(reached) > k else np.arange(len(reached))
        top, top_vals = reached[pos], vals[pos]
        return [int(r) for r in top[np.lexsort((top, -top_vals))]]
