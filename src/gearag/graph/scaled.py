"""The PPR transition kept as its sources, normalised as a push reads it (docs/delta.md, "The transition kept as
its sources").

This module owns :class:`Scaled`: one :class:`Source` per registered transition source the graph weighs, the about
terms' scale, each column's sum and each node's distinct targets; a push reads entry ``(i, j)`` of a source as
``data · weight · scale[sid] / sums[j]``. Also what a query derives from it (:func:`reweighted`,
:func:`source_degrees`) and what an add moves in it (:class:`TermsByName`, :func:`updated_sums`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy import sparse

from gearag import setops
from gearag.arrays import ranges
from gearag.graph.edge_kinds import transition_sources
from gearag.graph.layered import LayeredCsr, NodeLayout
from gearag.graph.transition import Csr

#: Entries whose float64 weights are summed at a time (a column's sum): bounds the transient.
CHUNK = 1 << 23
#: The source that is the about terms by entity (the prepared graph's ``about`` itself, stored once).
ABOUT_SOURCE = "terms"
#: The sources whose entries have scale ids (about terms), from the edge-kind registry.
SCALED_SOURCES = tuple(src.name for src in transition_sources() if src.scaled)


class Source(NamedTuple):
    """Out-edges of one kind: rows are passage rows or entity ids, targets passage rows or entity ids."""

    name: str
    rows: Csr | LayeredCsr  #: scaled (an about term per entry) when it has scale ids
    of_passages: bool  #: the rows are passages' (else entities')
    to_passages: bool  #: the targets are passages (else entities)
    weight: float  #: every entry's weight times this

    def meta(self) -> dict[str, Any]:
        return {"name": self.name, "of_passages": self.of_passages, "to_passages": self.to_passages,
                "weight": self.weight}


@dataclass
class Scaled:
    """A passage-node transition by columns, as its sources (module docstring)."""

    layout: NodeLayout
    sources: tuple[Source, ...]
    scale: np.ndarray  #: float64 per scale id: 1 for id 0, one over a lexicon name's total for ``1 + x``
    #: float64 per node: its column's sum, ``Σ data · weight · scale[sid]`` over its out-edges (0: none). Kept as a
    #: sum, not its inverse, so that an add can add to it (docs/delta.md).
    sums: np.ndarray
    degree: np.ndarray  #: int32 per node: distinct targets of its out-edges
    #: A power iteration over it runs in float64 (its weights are normalised as they are read).
    dtype: ClassVar[type] = np.float64

    @property
    def n_rows(self) -> int:
        return self.layout.n_nodes

    @property
    def dangling(self) -> np.ndarray:
        return self.sums <= 0

    def degrees(self, nodes: np.ndarray) -> np.ndarray:
        """Distinct out-edge targets of ``nodes``, at least 1 (float64: the push's threshold)."""
        return np.maximum(self.degree[nodes], 1).astype(np.float64)

    def edges(self, nodes: np.ndarray, mass: np.ndarray,
              positions: bool = False) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """The out-edges of ``nodes``, each node's normalised weights times its ``mass``: (with ``positions``,
        the position of its node in ``nodes``; target node; weight) per edge, source after source."""
        nodes = np.asarray(nodes, dtype=np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):  # a node without out-edges has none to weigh
            factor = mass / self.sums[nodes]
        out: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for src, sel, counts, targets, data, sids in self._gathered(nodes):
            w = np.asarray(data, dtype=np.float64)
            if src.weight != 1.0:
                w = w * src.weight
            if sids is not None:
                w = w * self.scale[sids]
            w *= np.repeat(factor[sel], counts)
            out.append((np.repeat(sel, counts) if positions else sel[:0], targets, w))
        if not out:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        at, targets, weights = (np.concatenate(part) for part in zip(*out, strict=True))
        return at if positions else None, targets, weights

    def distinct_targets(self, nodes: np.ndarray) -> np.ndarray:
        """Distinct out-edge targets of ``nodes`` (int32), counted from their whole rows as a push reads them (a
        target reached through two sources, or split over a base row and its delta, counts once)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        n = self.layout.n_nodes
        pairs = [np.repeat(sel, counts) * n + targets for _, sel, counts, targets, _, _ in self._gathered(nodes)]
        if not pairs:
            return np.zeros(len(nodes), dtype=np.int32)
        distinct = setops.unique(np.concatenate(pairs))
        return np.bincount(distinct // n, minlength=len(nodes)).astype(np.int32)

    def _gathered(self, nodes: np.ndarray) -> Iterator[tuple[Source, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                              np.ndarray | None]]:
        """Per source holding rows of some of ``nodes`` (int64): the source, those nodes' positions in ``nodes``,
        their entries each, and the entries' targets (as nodes), raw weights and scale ids (or None)."""
        layout = self.layout
        rows = layout.passages_of(nodes)
        of_passage = rows >= 0
        entities = layout.entities_of(nodes) if not of_passage.all() else rows
        for src in self.sources:
            sel = np.flatnonzero(of_passage if src.of_passages else ~of_passage)
            if not len(sel):
                continue
            counts, idx, data, sids = src.rows.gather(rows[sel] if src.of_passages else entities[sel])
            if layout.plain_layout:
                targets = idx.astype(np.int64) if src.to_passages else idx.astype(np.int64) + layout.n_passages
            else:
                targets = layout.passage_nodes(idx) if src.to_passages else layout.entity_nodes(idx)
            yield src, sel, counts, targets, data, sids

    def to_csr(self) -> sparse.csr_matrix:
        """The normalised transition with column ``j`` as row ``j`` (power iteration, tests): every edge once,
        a target's weights summed."""
        nodes = np.arange(self.n_rows, dtype=np.int64)
        at, targets, weights = self.edges(nodes, np.ones(self.n_rows), positions=True)
        m = sparse.csr_matrix((weights, (at, targets)), shape=(self.n_rows, self.n_rows))
        m.sum_duplicates()
        return m


def regrouped(m: Csr, keys: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``m``'s entries grouped by ``keys`` (one per entry, below ``n_keys``), stably: the groups' ``indptr``,
    each entry's position in ``m`` and its row there. A counting sort of the positions (scipy's transpose,
    which keeps repeated keys), not a sort of the entries."""
    n = len(m.indptr) - 1
    positions = np.arange(len(keys), dtype=np.int32 if len(keys) < 2**31 else np.int64)  # half the bytes, mostly
    at = sparse.csr_matrix((positions, np.asarray(keys), m.indptr),
                           shape=(n, n_keys)).T.tocsr()
    owner = np.repeat(np.arange(n, dtype=np.int32), np.diff(m.indptr))
    return at.indptr.astype(np.int64), at.data, owner[at.data]


def _csr(m: sparse.csr_matrix) -> Csr:
    """``m``'s arrays as stored (int64 offsets, int32 targets, float32 weights; views where already so)."""
    return Csr(np.asarray(m.indptr, dtype=np.int64), np.asarray(m.indices, dtype=np.int32),
               np.asarray(m.data, dtype=np.float32))


#: The query-time setting (:class:`~gearag.graph.passage_graph.PassageGraphConfig`) that weighs each source whose
#: weight is one (the edge-kind registry's); the others weigh 1.
WEIGHT_SETTINGS = {src.name: src.weight for src in transition_sources() if src.weight is not None}


def reweighted(columns: Scaled, weights: dict[str, float]) -> Scaled:
    """``columns`` with its sources weighed by ``weights`` (by setting name, :data:`WEIGHT_SETTINGS`) and its
    column sums made again, source after source in their (the registry's) order, as a build adds them: one pass
    over the entries (seconds at 1M) instead of a graph built. A weight of 0 drops its sources, as a build leaves
    them out: the degrees are then counted again over the sources kept (:func:`source_degrees`)."""
    sources = tuple(src._replace(weight=float(weights[WEIGHT_SETTINGS[src.name]]))
                    if src.name in WEIGHT_SETTINGS else src for src in columns.sources)
    kept = tuple(src for src in sources if src.weight > 0)
    layout = columns.layout
    sums = np.zeros(layout.n_nodes)
    for src in kept:  # a node's sources in their order, as a build adds them (passages' and entities' apart)
        rows = np.arange(src.rows.n_rows, dtype=np.int64)
        nodes = layout.passage_nodes(rows) if src.of_passages else layout.entity_nodes(rows)
        sums[nodes] += src.weight * _source_row_sums(src.rows, columns.scale)
    out = Scaled(layout, kept, columns.scale, sums, columns.degree)
    if len(kept) != len(sources):
        out.degree = source_degrees(out)
    return out


#: Nodes whose targets :func:`source_degrees` counts (or whose row weights :func:`updated_sums` adds) at a time
#: (bounds their transients).
DEGREE_NODES = 1 << 17


def source_degrees(columns: Scaled, nodes: np.ndarray | None = None) -> np.ndarray:
    """:meth:`Scaled.distinct_targets` of ``nodes`` (default: every node), :data:`DEGREE_NODES` at a time:
    ``degree`` as a build counts it, from any sources (a base's and a delta's included)."""
    n = columns.layout.n_nodes if nodes is None else len(nodes)
    out = np.zeros(n, dtype=np.int32)
    for first in range(0, n, DEGREE_NODES):
        last = min(first + DEGREE_NODES, n)
        out[first:last] = columns.distinct_targets(np.arange(first, last, dtype=np.int64) if nodes is None
                                                   else nodes[first:last])
    return out


def _source_row_sums(rows: Csr | LayeredCsr, scale: np.ndarray) -> np.ndarray:
    """Each row's sum of its weights times their scales: a base's and a delta's rows as a push reads them (a
    delta row appended to its base row, or replacing it)."""
    if isinstance(rows, Csr):
        return _row_sums(rows, scale)
    out = np.zeros(rows.n_rows)
    n_base = rows.base.n_rows
    out[:n_base] = _row_sums(rows.base, scale)
    where = np.asarray(rows.where)
    listed = np.flatnonzero(where >= 0)
    delta = _row_sums(rows.delta, scale)[where[listed]]
    appends = np.asarray(rows.appends)[listed] if rows.appends is not None else np.zeros(len(listed), dtype=bool)
    out[listed] = np.where(appends, out[listed] + delta, delta)
    return out


def _row_sums(m: Csr, scale: np.ndarray | None = None) -> np.ndarray:
    """Each row's sum of its weights (times their scales), float64, in chunks of about :data:`CHUNK` entries."""
    indptr = np.asarray(m.indptr)
    n = len(indptr) - 1
    sums = np.zeros(n)
    first = 0
    while first < n:
        last = min(max(int(np.searchsorted(indptr, indptr[first] + CHUNK, side="right")) - 1, first + 1), n)
        lo, hi = int(indptr[first]), int(indptr[last])
        w = np.asarray(m.data[lo:hi], dtype=np.float64)
        if scale is not None and m.sids is not None:
            w = w * scale[np.asarray(m.sids[lo:hi])]
        counts = np.diff(indptr[first : last + 1])
        sums[first:last] = np.bincount(np.repeat(np.arange(last - first), counts), weights=w, minlength=last - first)
        first = last
    return sums


def transposed(rows: Csr, n_targets: int) -> Csr:
    """``rows`` by target (each target's entries in row order), with their scale ids where they have them: a
    counting sort of their positions then, else scipy's transpose (its C loop runs without the GIL, beside the
    writes of an add's other thread)."""
    if rows.sids is None:
        n_rows = len(rows.indptr) - 1
        return _csr(sparse.csr_matrix((rows.data, rows.indices, rows.indptr), shape=(n_rows, n_targets)).T.tocsr())
    indptr, pos, owner = regrouped(rows, rows.indices, n_targets)
    return Csr(indptr, owner, np.asarray(rows.data)[pos], rows.sids[pos])


class TermsByName(NamedTuple):
    """The about terms by the scale id they are read with (``1 +`` the title name they go through): for each id,
    its terms' entity, passage and raw weight. What an add reads to move the column sums a new scale changes."""

    indptr: np.ndarray  #: int64 per scale id + 1
    entities: np.ndarray  #: int32 per term
    passages: np.ndarray  #: int32 per term
    raw: np.ndarray  #: float32 per term

    @classmethod
    def of(cls, terms: Csr, n_scales: int) -> TermsByName:
        """``terms`` (by entity, with scale ids) regrouped by scale id: a stable counting sort of positions."""
        assert terms.sids is not None
        indptr, pos, owner = regrouped(terms, terms.sids, n_scales)
        return cls(indptr, owner, np.asarray(terms.indices, dtype=np.int32)[pos],
                   np.asarray(terms.data, dtype=np.float32)[pos])


def _row_weights(rows: Csr, ids: np.ndarray, weight: float, scale: np.ndarray) -> np.ndarray:
    """Each of rows ``ids``'s sum of ``data · weight · scale[sid]``, :data:`DEGREE_NODES` rows at a time (every
    row of a build's sources: their entries' copies at once were its graph stage's peak at 1M)."""
    out = np.zeros(len(ids))
    for first in range(0, len(ids), DEGREE_NODES):
        part = ids[first : first + DEGREE_NODES]
        counts, _, data, sids = rows.gather(part)
        w = np.asarray(data, dtype=np.float64) * weight
        if sids is not None:
            w *= scale[sids]
        out[first : first + len(part)] = np.bincount(np.repeat(np.arange(len(part)), counts), weights=w,
                                                     minlength=len(part))
    return out


def updated_sums(base: Scaled, layered: Scaled, by_name: TermsByName) -> np.ndarray:
    """The column sums of ``layered`` (a base's and a delta's) from the base's sums, without summing any column
    the delta left alone: each base term read with a scale that changed moves its two columns by ``raw ·
    weight · (new - old)``; a row the delta replaced gives back the base row's weight and adds its own; new and
    appended entries add theirs. ``by_name``: the base's terms by scale id."""
    layout = layered.layout
    out = np.zeros(layout.n_nodes)
    n_base = layout.base_passages + layout.base_entities
    out[:n_base] = base.sums  # base nodes keep their ids
    old, new = np.asarray(base.scale), np.asarray(layered.scale)
    changed = np.flatnonzero(old != new[: len(old)])
    terms = [s for s in layered.sources if s.name == ABOUT_SOURCE]
    if len(changed) and terms:
        spans = by_name.indptr[changed + 1] - by_name.indptr[changed]
        at = ranges(by_name.indptr[changed], spans)
        moved = by_name.raw[at].astype(np.float64) * terms[0].weight * np.repeat(new[changed] - old[changed], spans)
        np.add.at(out, layout.entity_nodes(by_name.entities[at]), moved)
        np.add.at(out, layout.passage_nodes(by_name.passages[at]), moved)
    for src in layered.sources:
        rows = src.rows
        assert isinstance(rows, LayeredCsr)  # a base's and a delta's
        listed = np.flatnonzero(np.asarray(rows.where) >= 0)
        nodes = layout.passage_nodes(listed) if src.of_passages else layout.entity_nodes(listed)
        in_base = listed < rows.base.n_rows
        appends = np.asarray(rows.appends)[listed] if rows.appends is not None else np.zeros(len(listed), bool)
        replaced = in_base & ~appends
        if replaced.any():  # the base row's weight, at the new scale (the terms above moved it there)
            np.subtract.at(out, nodes[replaced], _row_weights(rows.base, listed[replaced], src.weight, new))
        delta_rows = np.asarray(rows.where)[listed].astype(np.int64)
        np.add.at(out, nodes, _row_weights(rows.delta, delta_rows, src.weight, new))
    return out
