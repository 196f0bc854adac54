"""Compressed sparse rows as the prepared graph stores them, and the entity relations."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from gearag.arrays import Csr as Csr
from gearag.arrays import rows_matrix as rows_matrix
from gearag.graph.edge_kinds import transition_source, transition_sources

if TYPE_CHECKING:
    from gearag.graph.config import PassageGraphConfig
    from gearag.graph.graph_arrays import GraphArrays


def relations(arrays: GraphArrays, config: PassageGraphConfig) -> sparse.csr_matrix:
    """Entity–entity edge weights of ``arrays`` under ``config`` (:func:`entity_relations` of its stored
    matrices)."""
    return entity_relations((src.name for src in transition_sources()), arrays.matrix, config)


def entity_relations(names: Iterable[str], matrix_of: Callable[[str], sparse.spmatrix | None],
                     config: PassageGraphConfig) -> sparse.csr_matrix:
    """Entity–entity edge weights (float64): of the transition sources ``names`` (in registry order), every entity →
    entity one's matrix (``matrix_of(name)``, read only when weighed above 0; None: not held) times its weight
    under ``config``, summed in that order (the triple counts first, weight 1; then the synonym edges, …)."""
    rel: sparse.csr_matrix | None = None
    for name in names:
        src = transition_source(name)
        weight = src.weight_in(config)
        m = None if src.of_passages or src.to_passages or weight <= 0 else matrix_of(name)
        if m is None:
            continue
        m = m.astype(np.float64)
        rel = m if rel is None else (rel + (m if src.weight is None else weight * m)).tocsr()
    assert rel is not None  # the relations: weight 1, always held
    return rel
