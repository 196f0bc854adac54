"""The passage graph's node numbering (:class:`NodeLayout`) and names (:class:`LayeredNames`) in a generation
written as a delta (docs/delta.md, "Numbering"); its rows are :class:`~gearag.arrays.LayeredCsr` (re-exported).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gearag import setops
from gearag.arrays import AppendedRows as AppendedRows
from gearag.arrays import LayeredCsr as LayeredCsr
from gearag.graph.trie import HashedNames


@dataclass(frozen=True)
class NodeLayout:
    """Node ids of the passage graph: base passages, base entities, delta passages, delta entities.

    ``n_passages``/``n_entities`` count all of them; the ``base_*`` counts
    are the base generation's (equal to the totals without a delta, where
    the layout is the build's: passages ``0..P``, entities ``P..P+E``).
    """

    n_passages: int
    n_entities: int
    base_passages: int
    base_entities: int

    @classmethod
    def plain(cls, n_passages: int, n_entities: int) -> NodeLayout:
        return cls(n_passages, n_entities, n_passages, n_entities)

    def __post_init__(self) -> None:
        if not (0 <= self.base_passages <= self.n_passages and 0 <= self.base_entities <= self.n_entities):
            raise ValueError(f"a base of {self.base_passages} passages and {self.base_entities} entities cannot "
                             f"grow to {self.n_passages} and {self.n_entities}")

    @property
    def n_nodes(self) -> int:
        return self.n_passages + self.n_entities

    @property
    def plain_layout(self) -> bool:
        """No delta: entity ``e`` is node ``n_passages + e``."""
        return self.base_passages == self.n_passages and self.base_entities == self.n_entities

    def entity_node(self, entity: int) -> int:
        """The node of one entity id."""
        return (self.base_passages if entity < self.base_entities else self.n_passages) + entity

    def entity_nodes(self, entities: np.ndarray) -> np.ndarray:
        """The node of each entity id (int64)."""
        e = np.asarray(entities, dtype=np.int64)
        return np.where(e < self.base_entities, self.base_passages + e, self.n_passages + e)

    def passage_nodes(self, rows: np.ndarray) -> np.ndarray:
        """The node of each passage row (int64)."""
        r = np.asarray(rows, dtype=np.int64)
        return np.where(r < self.base_passages, r, self.base_entities + r)

    def passages_of(self, nodes: np.ndarray) -> np.ndarray:
        """The passage row of each node, -1 for entity nodes (int64)."""
        n = np.asarray(nodes, dtype=np.int64)
        first_delta = self.base_passages + self.base_entities
        out = np.full(len(n), -1, dtype=np.int64)
        base = n < self.base_passages
        out[base] = n[base]
        delta = (n >= first_delta) & (n < first_delta + self.n_passages - self.base_passages)
        out[delta] = n[delta] - self.base_entities
        return out

    def entities_of(self, nodes: np.ndarray) -> np.ndarray:
        """The entity id of each node, -1 for passage nodes (int64)."""
        n = np.asarray(nodes, dtype=np.int64)
        first_delta = self.base_passages + self.base_entities
        out = np.full(len(n), -1, dtype=np.int64)
        base = (n >= self.base_passages) & (n < first_delta)
        out[base] = n[base] - self.base_passages
        delta = n >= first_delta + self.n_passages - self.base_passages
        out[delta] = n[delta] - self.n_passages
        return out


class LayeredNames(HashedNames):
    """A base's hashed names and a delta's: a name is the delta's when both hold its hash (the delta's id is
    the current one), and a scan walks the prefixes of either. Scans exactly as one
    :class:`~gearag.graph.trie.HashedNames` of both would."""

    def __init__(self, base: HashedNames, delta: HashedNames) -> None:
        super().__init__(base.case_sensitive)
        self.base, self.delta = base, delta

    @property
    def size(self) -> int:
        """Names in either layer (a name in both counts once)."""
        shared = setops.isin(np.asarray(self.delta.name_hashes), np.asarray(self.base.name_hashes)).sum()
        return self.base.size + self.delta.size - int(shared)

    def _has_node(self, h: int) -> bool:
        return self.delta._has_node(h) or self.base._has_node(h)

    def _id_of(self, h: int) -> int | None:
        found = self.delta._id_of(h)
        return found if found is not None else self.base._id_of(h)

