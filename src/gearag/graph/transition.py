"""Compressed sparse rows as the prepared graph stores them, and the entity relations."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from gearag.arrays import Csr as Csr
from gearag.arrays import rows_matrix as rows_matrix

if TYPE_CHECKING:
    from gearag.graph.config import PassageGraphConfig
    from gearag.graph.graph_arrays import GraphArrays


def relations(arrays: GraphArrays, config: PassageGraphConfig) -> sparse.csr_matrix:
    """Entity–entity edge weights: triple counts, plus the synonym edges times their weight."""
    return weighted_relations(arrays.relations, arrays.synonyms, config.synonym_weight)


def weighted_relations(counts: sparse.spmatrix, synonyms: sparse.spmatrix | None,
                       synonym_weight: float) -> sparse.csr_matrix:
    """:func:`relations` of the relation counts and the synonym edges (None: none) themselves (float64)."""
    rel = counts.astype(np.float64)
    if synonyms is not None and synonym_weight > 0:
        rel = (rel + synonym_weight * synonyms.astype(np.float64)).tocsr()
    return rel
