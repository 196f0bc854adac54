"""Compressed sparse rows as the prepared graph stores them, and the entity relations."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from gearag.arrays import Csr as Csr
from gearag.arrays import rows_matrix as rows_matrix
from gearag.graph.edge_kinds import transition_sources

if TYPE_CHECKING:
    from gearag.graph.config import PassageGraphConfig
    from gearag.graph.graph_arrays import GraphArrays


def relations(arrays: GraphArrays, config: PassageGraphConfig) -> sparse.csr_matrix:
    """Entity–entity edge weights (float64): every registered entity → entity source's stored matrix times its
    weight, summed in registry order (the triple counts first, weight 1; then the synonym edges, …)."""
    rel: sparse.csr_matrix | None = None
    for src in transition_sources():
        m = None if src.of_passages or src.to_passages else arrays.matrix(src.name)
        weight = 1.0 if src.weight is None else float(getattr(config, src.weight))
        if m is None or weight <= 0:
            continue
        m = m.astype(np.float64)
        rel = m if rel is None else (rel + (m if src.weight is None else weight * m)).tocsr()
    assert rel is not None  # the relations: weight 1, always stored
    return rel
