"""A prepared passage graph as a base and a delta, found by comparing two full ones (docs/delta.md, issue 14).

:func:`delta_of` takes the prepared graph of a base generation and that of
the union after an add (both as a build makes them) and returns the graph a
reader would combine from the base's arrays and a delta's: the base's ids
kept, new entities and passages numbered after them (:class:`NodeLayout`),
and only the columns, about rows, names and triples that differ stored
again. It is the reference the add's own delta computation is checked
against, and the slow way to write a delta: it needs the union's arrays.

The union's graph and the layered one are the same graph with other node
ids, entry for entry (tested), so a push over either gives the same
estimates up to the order its float sums are taken in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gearag.graph.layered import LayeredCsr, LayeredNames, NodeLayout
from gearag.graph.prepared import PreparedGraph
from gearag.graph.ranges import ranges
from gearag.graph.transition import Csr
from gearag.graph.trie import HashedNames


@dataclass(frozen=True)
class AppendedRows:
    """A base array's rows followed by a delta's (each triple's entity ends: an add appends triples)."""

    base: np.ndarray
    tail: np.ndarray

    def __len__(self) -> int:
        return len(self.base) + len(self.tail)

    def __getitem__(self, row: int) -> np.ndarray:
        n = len(self.base)
        return self.base[row] if row < n else self.tail[row - n]

    def whole(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.base), np.asarray(self.tail)])


def entity_map(base_keys: Sequence[str], union_keys: Sequence[str]) -> np.ndarray | None:
    """The union id of each base entity (by key); None when a base key is not in the union."""
    ids = {k: i for i, k in enumerate(union_keys)}
    out = np.fromiter((ids.get(k, -1) for k in base_keys), dtype=np.int64, count=len(base_keys))
    return None if len(out) and int(out.min()) < 0 else out


def _sorted_rows(m: Csr, order: np.ndarray, relabel: np.ndarray | None) -> Csr:
    """Rows ``order`` of ``m`` one after the other, their indices mapped through ``relabel`` and sorted."""
    counts, indices, data = m.gather(order)
    indices = np.asarray(indices, dtype=np.int64)
    if relabel is not None:
        indices = relabel[indices]
    row = np.repeat(np.arange(len(order), dtype=np.int64), counts)
    by = np.lexsort((indices, row))
    indptr = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Csr(indptr, indices[by].astype(np.int32), np.asarray(data)[by])


def _changed(base: Csr, new: Csr) -> np.ndarray:
    """Per row of ``base``: whether ``new``'s row of the same id (``new`` has at least as many) differs."""
    n = len(base.indptr) - 1
    b_counts, n_counts = np.diff(base.indptr), np.diff(new.indptr[: n + 1])
    out = b_counts != n_counts
    same = np.flatnonzero(~out)
    if not len(same):
        return out
    b_at, n_at = ranges(base.indptr[same], b_counts[same]), ranges(new.indptr[same], n_counts[same])
    differs = (np.asarray(base.indices)[b_at] != new.indices[n_at]) | (np.asarray(base.data)[b_at] != new.data[n_at])
    bad = np.repeat(same, b_counts[same])[differs]
    out[bad] = True
    return out


def _overlay(base: Csr, new: Csr, n_rows: int) -> LayeredCsr:
    """``new`` (rows in the layered ids, ``n_rows`` of them) as ``base`` plus the rows that differ."""
    n_base = len(base.indptr) - 1
    changed = np.concatenate([_changed(base, new), np.ones(n_rows - n_base, dtype=bool)])
    rows = np.flatnonzero(changed)
    where = np.full(n_rows, -1, dtype=np.int32)
    where[rows] = np.arange(len(rows), dtype=np.int32)
    counts, indices, data = new.gather(rows)
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return LayeredCsr(base, Csr(indptr, indices, data), where)


def _names(base: HashedNames, union: HashedNames, did: np.ndarray) -> HashedNames | None:
    """The union's names (ids mapped to the layered ones) that the base does not hold; None when the base holds
    a name the union does not, or one under another id (a full generation then decides)."""
    u_hashes, u_ids = np.asarray(union.name_hashes), did[np.asarray(union.name_ids)]
    b_hashes, b_ids = np.asarray(base.name_hashes), np.asarray(base.name_ids)
    at = np.searchsorted(u_hashes, b_hashes)
    ok = at < len(u_hashes)
    if not ok.all() or np.any(u_hashes[at] != b_hashes) or np.any(u_ids[at] != b_ids):
        return None
    fresh = np.ones(len(u_hashes), dtype=bool)
    fresh[at] = False
    nodes = np.asarray(union.nodes)
    new_nodes = nodes[~np.isin(nodes, np.asarray(base.nodes))]
    return HashedNames.from_arrays(new_nodes, u_hashes[fresh], u_ids[fresh])


def delta_of(base: PreparedGraph, union: PreparedGraph, entity_of: np.ndarray) -> PreparedGraph | None:
    """The union's prepared graph as ``base`` plus a delta (module docstring); None where a delta cannot say it.

    ``entity_of[e]``: the union id of base entity ``e``. The union's first
    ``base.n_passages`` passages must be the base's, in order, and its first
    triples the base's. Declined (None): settings differ, a base name or
    triple end changed, or either holds entities only NER found.
    """
    p_b, e_b, p_u, e_u = base.n_passages, base.n_entities, union.n_passages, union.n_entities
    b_cols, b_about, u_cols, u_about = base.columns, base.about, union.columns, union.about
    if not (isinstance(b_cols, Csr) and isinstance(b_about, Csr) and isinstance(u_cols, Csr)
            and isinstance(u_about, Csr)):
        return None  # a layered graph is not a base (a delta is always relative to a full generation)
    if (base.settings != union.settings or p_u < p_b or len(entity_of) != e_b
            or base.n_mention_keys != e_b or union.n_mention_keys != e_u):
        return None
    did = np.full(e_u, -1, dtype=np.int64)  # the layered id of each union entity
    did[entity_of] = np.arange(e_b, dtype=np.int64)
    new = np.flatnonzero(did < 0)
    did[new] = e_b + np.arange(len(new), dtype=np.int64)
    layout = NodeLayout(p_u, e_u, p_b, e_b)
    node_of = np.concatenate([layout.passage_nodes(np.arange(p_u)), layout.entity_nodes(did)])  # union → layered
    union_node = np.empty_like(node_of)
    union_node[node_of] = np.arange(len(node_of))
    t_b = len(base.triple_ends)
    ends = np.asarray(union.triple_ends)
    mapped_ends = np.where(ends >= 0, did[np.maximum(ends, 0)], -1).astype(np.int32)
    if len(ends) < t_b or not np.array_equal(mapped_ends[:t_b], np.asarray(base.triple_ends)):
        return None
    names = _names(base.names, union.names, did)
    if names is None:
        return None
    entity_row = np.empty(e_u, dtype=np.int64)
    entity_row[did] = np.arange(e_u)  # layered id → union id
    columns = _overlay(b_cols, _sorted_rows(u_cols, union_node, node_of), layout.n_nodes)
    about = _overlay(b_about, _sorted_rows(u_about, entity_row, None), e_u)
    dangling = np.empty(layout.n_nodes, dtype=bool)
    dangling[node_of] = np.asarray(union.dangling)
    specificity = np.empty(e_u, dtype=np.float64)
    specificity[did] = np.asarray(union.specificity)
    return PreparedGraph(p_u, e_u, dict(union.settings), columns, dangling, specificity, about,
                         AppendedRows(np.asarray(base.triple_ends), mapped_ends[t_b:]),  # type: ignore[arg-type]
                         LayeredNames(base.names, names), e_u, union.n_usable, delta_layout=layout)
