"""The flattened retrieval pool (SiReRAG §4.3, "collapsed tree"), with provenance.

Every node of both trees goes into one pool of parallel arrays: text, level,
tree, kind, embedding and the passage rows it covers (CSR ``sources_indptr`` /
``sources_indices``). Each passage (leaf of the similarity tree) is in the
pool exactly once, at level 0, with itself as its only source.

Variants (:data:`VARIANTS`):

=============================  ==========================================================
``chunks``                     the passages only
``raptor``                     passages + similarity-tree summaries (the paper's RAPTOR)
``sirerag``                    + proposition aggregates + relatedness-tree summaries
``no_relatedness_summaries``   Table 5 (A): ``sirerag`` without relatedness summaries
``plus_propositions``          Table 5 (B): ``sirerag`` + every single proposition
``propositions_no_aggregates`` Table 5 (C): (B) without the aggregates
``propositions_only``          Table 5 (D): (C) without the relatedness summaries
=============================  ==========================================================

With cross-tree clustering (Appendix A), pass the cross tree as
``relatedness``: its summaries replace both trees' summaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gearag.sirerag.tree import CROSS, RELATEDNESS, Tree

CHUNK, SUMMARY, AGGREGATE, PROPOSITION = "chunk", "summary", "aggregate", "proposition"

#: variant -> (similarity summaries, aggregates, relatedness summaries, single propositions)
VARIANTS: dict[str, tuple[bool, bool, bool, bool]] = {
    "chunks": (False, False, False, False),
    "raptor": (True, False, False, False),
    "sirerag": (True, True, True, False),
    "no_relatedness_summaries": (True, True, False, False),
    "plus_propositions": (True, True, True, True),
    "propositions_no_aggregates": (True, False, True, True),
    "propositions_only": (True, False, False, True),
}


@dataclass(frozen=True)
class Pool:
    """Retrieval candidates as parallel arrays; row ``i`` is one node."""

    texts: list[str]
    levels: np.ndarray  # int16
    trees: list[str]  # "similarity" | "relatedness" | "cross"
    kinds: list[str]  # "chunk" | "summary" | "aggregate" | "proposition"
    embeddings: np.ndarray  # float32 (n, dim), unit rows
    sources_indptr: np.ndarray  # int64 (n + 1,)
    sources_indices: np.ndarray  # int64, passage rows
    variant: str
    #: Identity of each row's node across the pools of one build: ``(tree, row)`` for a node of a
    #: tree (``tree`` = "similarity" or "relatedness", the argument it came from) or
    #: ``("proposition", i)``, so that pools can share one stored copy of each node.
    keys: list[tuple[str, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    def sources(self, row: int) -> np.ndarray:
        """Passage rows covered by node ``row``."""
        return self.sources_indices[self.sources_indptr[row] : self.sources_indptr[row + 1]]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for tree, kind in zip(self.trees, self.kinds, strict=True):
            key = kind if kind in (CHUNK, AGGREGATE, PROPOSITION) else f"{tree} summary"
            out[key] = out.get(key, 0) + 1
        return out


@dataclass(frozen=True)
class Propositions:
    """Single propositions for the Table-5 (B)-(D) ablations: text, passage row, embedding."""

    texts: list[str]
    rows: np.ndarray
    embeddings: np.ndarray


class _Builder:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.levels: list[int] = []
        self.trees: list[str] = []
        self.kinds: list[str] = []
        self.emb: list[np.ndarray] = []
        self.src: list[Sequence[int]] = []
        self.keys: list[tuple[str, int]] = []

    def add(self, tree: Tree, rows: np.ndarray, kind: str, side: str) -> None:
        for r in rows:
            r = int(r)
            self.keys.append((side, r))
            self.texts.append(tree.texts[r])
            self.levels.append(int(tree.levels[r]))
            self.trees.append(tree.trees[r])
            self.kinds.append(kind)
            self.src.append(tree.sources[r])
        if len(rows):
            self.emb.append(np.asarray(tree.embeddings[np.asarray(rows, dtype=np.int64)], dtype=np.float32))

    def pool(self, variant: str, dim: int) -> Pool:
        lengths = np.fromiter((len(s) for s in self.src), dtype=np.int64, count=len(self.src))
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        indices = np.fromiter((int(x) for s in self.src for x in s), dtype=np.int64, count=int(indptr[-1]))
        emb = np.concatenate(self.emb, axis=0) if self.emb else np.zeros((0, dim), dtype=np.float32)
        return Pool(self.texts, np.asarray(self.levels, dtype=np.int16), self.trees, self.kinds, emb,
                    indptr, indices, variant, self.keys)


def build_pool(
    similarity: Tree,
    relatedness: Tree | None = None,
    *,
    variant: str = "sirerag",
    propositions: Propositions | None = None,
    n_passages: int | None = None,
    cross_passage_aggregates: bool = False,
) -> Pool:
    """Flatten trees into one pool (see :data:`VARIANTS`).

    ``similarity`` is the similarity tree (its leaves are the passages, one
    per row, in corpus order); ``relatedness`` the relatedness tree (leaves =
    aggregates) or a cross tree from :func:`gearag.sirerag.tree.build_cross_tree`
    (then ``similarity`` supplies only the passages, and the cross summaries
    count as relatedness summaries). ``propositions`` are needed by the
    variants that index single propositions. ``cross_passage_aggregates``
    indexes only the aggregates that cover two or more passages (the
    relatedness tree above them is unchanged).
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown pool variant {variant!r}; choose from {', '.join(VARIANTS)}")
    sim_summaries, aggregates, rel_summaries, singles = VARIANTS[variant]
    n = similarity.n_leaves if n_passages is None else n_passages
    leaf_sources = similarity.sources[: similarity.n_leaves]
    if similarity.n_leaves != n or any(s != (i,) for i, s in enumerate(leaf_sources)):
        raise ValueError("the similarity tree's leaves must be the passages, one per row, in corpus order")
    if (aggregates or rel_summaries) and relatedness is None:
        raise ValueError(f"variant {variant!r} needs the relatedness tree")
    if singles and propositions is None:
        raise ValueError(f"variant {variant!r} needs the single propositions")
    cross = relatedness is not None and CROSS in relatedness.trees
    b = _Builder()
    b.add(similarity, np.arange(n), CHUNK, "similarity")
    if sim_summaries and not cross:
        b.add(similarity, similarity.summary_rows, SUMMARY, "similarity")
    if relatedness is not None:
        leaf_rows = np.arange(relatedness.n_leaves)
        if aggregates:
            agg = leaf_rows[[relatedness.trees[r] == RELATEDNESS for r in leaf_rows]] if cross else leaf_rows
            if cross_passage_aggregates:
                agg = agg[[len(relatedness.sources[int(r)]) > 1 for r in agg]]
            b.add(relatedness, agg, AGGREGATE, "relatedness")
        if rel_summaries or (cross and sim_summaries):
            b.add(relatedness, relatedness.summary_rows, SUMMARY, "relatedness")
    if singles and propositions is not None:
        for i, (text, row) in enumerate(zip(propositions.texts, propositions.rows, strict=True)):
            b.keys.append(("proposition", i))
            b.texts.append(text)
            b.levels.append(0)
            b.trees.append(RELATEDNESS)
            b.kinds.append(PROPOSITION)
            b.src.append((int(row),))
        if len(propositions.texts):
            b.emb.append(np.asarray(propositions.embeddings, dtype=np.float32))
    return b.pool(variant, int(similarity.embeddings.shape[1]))


def search(pool: Pool, query_embeddings: np.ndarray, k: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Dense collapsed-tree retrieval: top-``k`` pool rows by cosine per query (ties by row)."""
    q = np.asarray(query_embeddings, dtype=np.float32)
    scores = q @ pool.embeddings.T
    k = min(k, scores.shape[1])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < scores.shape[1] else np.tile(
        np.arange(scores.shape[1]), (scores.shape[0], 1))
    vals = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -vals), axis=1)
    rows = np.take_along_axis(part, order, axis=1)
    return rows, np.take_along_axis(scores, rows, axis=1)
