"""The PPR transition as a push reads it (one protocol, two forms), the compressed rows the prepared graph stores,
and the entity relations (the triples' relation pairs; the entity → entity weights of the entity-only graph).

A transition is read by columns: node ``j``'s out-edges, each weight over
their sum. The passage-node graph keeps it as its sources and normalises as
it reads (:class:`~gearag.graph.scaled.Scaled`); the entity-only graph
(HippoRAG 1), and a graph an older gearag stored, keep it normalised
(:class:`Normalised`). PPR, the passage graph and the tests read either
through :class:`Transition`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np
from scipy import sparse

from gearag.arrays import Csr as Csr
from gearag.arrays import rows_matrix as rows_matrix
from gearag.graph.edge_kinds import transition_source

if TYPE_CHECKING:
    from gearag.graph.config import PassageGraphConfig


class Transition(Protocol):
    """A column-normalised transition by columns (node ``j``'s out-edges are column ``j``), as a push reads it."""

    @property
    def dtype(self) -> type:
        """The float type a power iteration over it runs in."""
        ...

    @property
    def n_rows(self) -> int:
        """How many nodes (columns)."""
        ...

    @property
    def dangling(self) -> np.ndarray:
        """Bool per node: no out-edges (its walk restarts at the seeds)."""
        ...

    @property
    def scale(self) -> np.ndarray | None:
        """The about terms' scale, where the entries are raw (:mod:`gearag.graph.scaled`); None: normalised."""
        ...

    def degrees(self, nodes: np.ndarray) -> np.ndarray:
        """Distinct out-edge targets of ``nodes``, at least 1 (float64: the push's threshold)."""
        ...

    def edges(self, nodes: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The out-edges of ``nodes``, each node's normalised weights times its ``mass``: (None, target node,
        weight) per edge."""
        ...

    def to_csr(self) -> sparse.csr_matrix:
        """The whole transition in memory with column ``j`` as row ``j`` (power iteration, tests)."""
        ...


@dataclass(frozen=True)
class Normalised:
    """A transition stored normalised: row ``j`` of ``rows`` is node ``j``'s out-edge weights over their sum."""

    rows: Csr
    dangling: np.ndarray  #: bool per node: no out-edges
    dtype: type = np.float32  #: the weights' (a stored graph's: float32)
    scale: ClassVar[None] = None

    @classmethod
    def of(cls, adjacency: sparse.csr_matrix, dtype: type = np.float32) -> Normalised:
        """``adjacency`` (``A[i, j]``: the weight of edge j → i) column-normalised, kept by columns."""
        transition, dangling = column_normalised(adjacency, dtype)
        return cls(Csr.of(transition.tocsc()), dangling, dtype)

    @property
    def n_rows(self) -> int:
        return self.rows.n_rows

    def degrees(self, nodes: np.ndarray) -> np.ndarray:
        return np.maximum(self.rows.counts(nodes), 1).astype(np.float64)

    def edges(self, nodes: np.ndarray, mass: np.ndarray) -> tuple[None, np.ndarray, np.ndarray]:
        counts, targets, weights, _ = self.rows.gather(nodes)
        return None, targets, weights * np.repeat(mass, counts)

    def to_csr(self) -> sparse.csr_matrix:
        return self.rows.rows(np.arange(self.n_rows, dtype=np.int64), self.n_rows)


def column_normalised(adjacency: sparse.csr_matrix, dtype: type) -> tuple[sparse.csr_matrix, np.ndarray]:
    """``M[i, j] = A[i, j] / Σ_i A[i, j]`` as ``dtype``, and which nodes have no out-edge (a column sum of 0)."""
    out_weight = np.asarray(adjacency.sum(axis=0)).ravel()  # column sums: weight leaving each node
    inv = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    return (adjacency @ sparse.diags(inv)).astype(dtype), out_weight <= 0


def relation_pairs(triple_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) entity pairs of triples' relations, each both ways (``triple_ends``: each triple's
    subject and object entity, -1: none): self-loops and unlinked ends count not."""
    ends = triple_ends
    keep = (ends[:, 0] >= 0) & (ends[:, 1] >= 0) & (ends[:, 0] != ends[:, 1])
    h, t = ends[keep, 0].astype(np.int64), ends[keep, 1].astype(np.int64)
    return np.concatenate([h, t]), np.concatenate([t, h])


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
