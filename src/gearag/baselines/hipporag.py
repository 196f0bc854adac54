"""The HippoRAG graphs over an index, built once per index (``index.cached``) and shared by every query.

* v1 (HippoRAG, 2024): nodes are phrases; edges join the subject and object
  of each triple (weight = number of triples joining them) and synonymous
  phrases (weight = cosine, see :func:`~gearag.graph.synonyms.synonym_edges`).
* v2 (HippoRAG 2, 2025): the same phrase nodes and edges plus one node per
  passage, with a context edge of weight 1.0 between a passage and every
  phrase its triples mention.

Both are undirected (igraph ``directed=False`` in both codebases): the
adjacency is symmetric, and PPR runs on the shared
:class:`~gearag.graph.ppr.PageRankOperator`. Where a pair of phrases has both
a relation and a synonym edge the weights add (HippoRAG 2 keeps one edge per
pair; this changes weights only for the rare pair that is both).

Build cost on 2Wiki's spaCy index (103k triples, ≈ 60k phrases, wordllama):
measured by :func:`hippo_graph` in ``graph.seconds``; small enough (tens of
seconds, dominated by the blockwise synonym KNN) to build at first use rather
than as an index stage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from gearag.baselines.config import PhraseGraphConfig
from gearag.baselines.phrases import PhraseTable, phrase_table
from gearag.embed import index_embedder
from gearag.graph.ppr import PageRankOperator
from gearag.graph.synonyms import synonym_edges
from gearag.store.interface import IndexStore


@dataclass
class HippoGraph:
    """Phrase nodes, their embeddings and edges, and the PPR operators of both versions."""

    table: PhraseTable
    #: Unit-length phrase embeddings (the index's embedder), one row per phrase node.
    vectors: np.ndarray
    relation: sparse.csr_matrix
    synonym: sparse.csr_matrix
    #: ``1/|P_i|`` per phrase (HippoRAG's node specificity).
    specificity: np.ndarray
    passages_per_phrase: np.ndarray
    n_passages: int
    seconds: dict[str, float] = field(default_factory=dict)
    _ops: dict[str, PageRankOperator] = field(default_factory=dict, repr=False)

    @property
    def n_phrases(self) -> int:
        return self.table.size

    def adjacency_v1(self) -> sparse.csr_matrix:
        """Phrase × phrase: relation + synonym edges."""
        return (self.relation + self.synonym).tocsr()

    def adjacency_v2(self) -> sparse.csr_matrix:
        """(phrases + passages)²: v1's edges plus passage–phrase context edges of weight 1.0."""
        context = self.table.passage_phrase.copy()
        context.data[:] = 1.0
        return sparse.bmat([[self.adjacency_v1(), context.T], [context, None]], format="csr")

    def operator(self, variant: str) -> PageRankOperator:
        """The PPR operator of ``"v1"`` or ``"v2"``, prepared on first use."""
        op = self._ops.get(variant)
        if op is None:
            t0 = time.perf_counter()
            op = PageRankOperator(self.adjacency_v1() if variant == "v1" else self.adjacency_v2())
            self._ops[variant] = op
            self.seconds[f"operator_{variant}"] = time.perf_counter() - t0
        return op

    def stats(self) -> dict[str, int]:
        return {"phrases": self.n_phrases, "relation_edges": int(self.relation.nnz // 2),
                "synonym_edges": int(self.synonym.nnz // 2),
                "context_edges": int(self.table.passage_phrase.nnz)}


def phrase_vectors(index: IndexStore, table: PhraseTable) -> np.ndarray:
    """Embeddings of the phrase nodes with the index's embedder (cached per index)."""
    def build() -> np.ndarray:
        return np.asarray(index_embedder(index).encode(table.phrases), dtype=np.float32)

    return index.cached("hipporag:phrase_vectors", build)


def phrases_of(index: IndexStore) -> PhraseTable:
    """The phrase table of ``index`` (cached per index)."""
    t = index.triples
    return index.cached(
        "hipporag:phrases",
        lambda: phrase_table(t.subjects, t.objects, np.asarray(t.passage), len(index.passages)),
    )


def hippo_graph(index: IndexStore, config: PhraseGraphConfig) -> HippoGraph:
    """The HippoRAG graph of ``index`` for one synonym setting, built once and shared (thread-safe)."""

    def build() -> HippoGraph:
        seconds = {}
        t0 = time.perf_counter()
        table = phrases_of(index)
        seconds["phrases"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        vectors = phrase_vectors(index, table)
        seconds["embed"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        synonym = synonym_edges(vectors, config.synonym_threshold, config.synonym_neighbours)
        seconds["synonyms"] = time.perf_counter() - t0
        counts = table.passages_per_phrase()
        return HippoGraph(table, vectors, table.relation_edges(), synonym, table.specificity(), counts,
                          len(index.passages), seconds)

    return index.cached(f"hipporag:graph:{config!r}", build)
