"""The tests' oracle for deltas: a prepared passage graph as a base and a delta, found by comparing two full ones
(docs/delta.md).

:func:`delta_of` takes the prepared graph of a base generation and that of
the union after an add (both as a build makes them, with raw weights:
:mod:`gearag.graph.scaled`) and returns the graph a reader combines from the
base's arrays and a delta's: the base's ids kept, new entities and passages
numbered after them (:class:`NodeLayout`), and per column only what differs:
the weight a target gained, appended to the base's column, or the whole
column where one lost weight. The scale (one per title name), column sums,
degrees and other per-node vectors are the union's, renumbered. It is the
reference the add's own delta (:mod:`gearag.derive.delta_resolve`,
:mod:`gearag.graph.delta_apply`) is checked against; it reads both graphs whole.

The layered graph and the union's are the same graph with other ids (a
target's weight may be split over two entries, which the push adds), so a
push over either gives the same estimates up to the order of float sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from gearag import setops
from gearag.graph.delta_apply import ResolutionDelta, net_weights
from gearag.graph.layered import AppendedRows, LayeredCsr, LayeredNames, NodeLayout
from gearag.graph.prepared import PreparedGraph
from gearag.graph.scaled import ABOUT_SOURCE, Scaled, Source
from gearag.graph.transition import Csr
from gearag.graph.trie import HashedNames
from gearag.store.graph import AppendedStrings, LayeredTripleGraph, TripleGraph

_MIX = np.uint64(0x9E3779B97F4A7C15)


def entity_map(base_keys: Sequence[str], union_keys: Sequence[str]) -> np.ndarray | None:
    """The union id of each base entity (by key); None when a base key is not in the union."""
    ids = {k: i for i, k in enumerate(union_keys)}
    out = np.fromiter((ids.get(k, -1) for k in base_keys), dtype=np.int64, count=len(base_keys))
    return None if len(out) and int(out.min()) < 0 else out


class _Entries:
    """Rows' entries as flat arrays: each entry's row, target, scale id and raw weight."""

    def __init__(self, counts: np.ndarray, indices: np.ndarray, data: np.ndarray, sids: np.ndarray,
                 rows: np.ndarray) -> None:
        self.counts = counts
        self.row = np.repeat(np.asarray(rows, dtype=np.int64), counts)
        self.target, self.data, self.sid = indices.astype(np.int64), data, sids.astype(np.int64)

    @classmethod
    def of(cls, m: Csr, rows: np.ndarray, as_rows: np.ndarray, relabel: np.ndarray | None = None,
           sid_map: np.ndarray | None = None) -> _Entries:
        """Rows ``rows`` of ``m``, called ``as_rows``, targets through ``relabel`` and scale ids through
        ``sid_map`` where given."""
        counts, indices, data, sids = m.gather(np.asarray(rows, dtype=np.int64))
        if sids is None:  # an unscaled source: every entry scale id 0
            sids = np.zeros(len(indices), dtype=np.int64)
        elif sid_map is not None:
            sids = sid_map[sids]
        out = cls(counts, indices, data, sids, as_rows)
        if relabel is not None:
            out.target = relabel[out.target]
        return out

    def hashes(self, n_rows: int) -> np.ndarray:
        """Per row, an order-free hash of its entries (equal multisets of entries, equal hashes)."""
        key: np.ndarray = (self.target.astype(np.uint64) * _MIX) ^ (self.sid.astype(np.uint64) << np.uint64(40)) \
            ^ np.asarray(self.data, dtype=np.float32).view(np.uint32).astype(np.uint64)
        key = key ^ (key >> np.uint64(31))
        key = key * _MIX
        key = key ^ (key >> np.uint64(29))
        out = np.zeros(n_rows, dtype=np.uint64)
        np.add.at(out, self.row, key)
        return out


def layered_rows(base: Csr, union: Csr, order: np.ndarray, relabel: np.ndarray | None,
                 sid_map: np.ndarray | None) -> LayeredCsr:
    """The union's rows ``order`` (the layered rows, in order) as ``base`` plus a delta: per base row, the
    weight each (target, scale id) gained appended, or the whole row where one lost weight."""
    n_base, n_rows = base.n_rows, len(order)
    b_rows = np.arange(n_base, dtype=np.int64)
    b_all = _Entries.of(base, b_rows, b_rows)
    u_old = _Entries.of(union, order[:n_base], b_rows, relabel, sid_map)
    changed = np.flatnonzero((b_all.counts != u_old.counts) | (b_all.hashes(n_base) != u_old.hashes(n_base)))
    b = _Entries.of(base, changed, changed)
    u = _Entries.of(union, order[changed], changed, relabel, sid_map)
    # Per (row, target, scale id): the union's weight less the base's.
    g_row, g_target, g_sid, gained = net_weights(
        np.concatenate([b.row, u.row]), np.concatenate([b.target, u.target]), np.concatenate([b.sid, u.sid]),
        np.concatenate([-np.asarray(b.data, dtype=np.float64), np.asarray(u.data, dtype=np.float64)]))
    replaced = setops.unique(g_row[gained < 0])
    appended = setops.setdiff(changed, replaced)
    extra = (gained > 0) & setops.isin(g_row, appended)
    # Delta rows: appended ones (their gains), replaced ones (the union's row), then the union's new rows.
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    parts.append((g_row[extra], g_target[extra], gained[extra].astype(np.float32), g_sid[extra], appended))
    rep = _Entries.of(union, order[replaced], replaced, relabel, sid_map)
    parts.append((rep.row, rep.target, np.asarray(rep.data), rep.sid, replaced))
    fresh_rows = np.arange(n_base, n_rows, dtype=np.int64)
    new = _Entries.of(union, order[n_base:], fresh_rows, relabel, sid_map)
    parts.append((new.row, new.target, np.asarray(new.data), new.sid, fresh_rows))
    row, target, data, sid, listed = (np.concatenate(p) for p in zip(*parts, strict=True))
    return LayeredCsr.from_entries(base, n_rows, listed, appended, row, target, data, sid)


def _names(base: HashedNames, union: HashedNames, did: np.ndarray) -> HashedNames | None:
    """The union's names (ids mapped to the layered ones) that the base does not hold; None when the base holds
    a name the union does not, or one under another id (a full generation then decides)."""
    u_hashes, u_ids = np.asarray(union.name_hashes), did[np.asarray(union.name_ids)]
    b_hashes, b_ids = np.asarray(base.name_hashes), np.asarray(base.name_ids)
    at = np.searchsorted(u_hashes, b_hashes)
    if np.any(at >= len(u_hashes)) or np.any(u_hashes[np.minimum(at, len(u_hashes) - 1)] != b_hashes):
        return None
    if np.any(u_ids[at] != b_ids):
        return None
    fresh = np.ones(len(u_hashes), dtype=bool)
    fresh[at] = False
    nodes = np.asarray(union.nodes)
    new_nodes = nodes[~setops.isin(nodes, np.asarray(base.nodes))]
    return HashedNames.from_arrays(new_nodes, u_hashes[fresh], u_ids[fresh])


class _Renumbering(NamedTuple):
    """How a union's ids become a base's and a delta's (base ids kept, the union's others after them)."""

    did: np.ndarray  #: the layered id of each union entity
    entity_row: np.ndarray  #: the union id of each layered entity
    layout: NodeLayout
    node_of: np.ndarray  #: the layered node of each union node
    sid_map: np.ndarray  #: the layered scale id of each union scale id
    scale: np.ndarray  #: the union's scale, by layered scale id
    ends_tail: np.ndarray  #: the union's appended triples' ends, layered
    names: HashedNames  #: the union's names the base lacks, layered


def _renumbering(base: PreparedGraph, union: PreparedGraph, entity_of: np.ndarray) -> _Renumbering | None:
    """The renumbering of ``union`` onto ``base`` (None where a delta cannot say the union: see :func:`delta_of`)."""
    p_b, e_b, p_u, e_u = base.n_passages, base.n_entities, union.n_passages, union.n_entities
    b_cols, u_cols = base.columns, union.columns
    if not (isinstance(b_cols, Scaled) and isinstance(u_cols, Scaled) and b_cols.layout.plain_layout
            and u_cols.layout.plain_layout):
        return None  # a delta is relative to a full generation's graph, kept as its sources
    if (base.settings != union.settings or p_u < p_b or len(entity_of) != e_b
            or [s.name for s in b_cols.sources] != [s.name for s in u_cols.sources]
            or len(base.ner_keys) or len(union.ner_keys)):
        return None
    did = np.full(e_u, -1, dtype=np.int64)
    did[entity_of] = np.arange(e_b, dtype=np.int64)
    new = np.flatnonzero(did < 0)
    did[new] = e_b + np.arange(len(new), dtype=np.int64)
    layout = NodeLayout(p_u, e_u, p_b, e_b)
    node_of = np.concatenate([layout.passage_nodes(np.arange(p_u)), layout.entity_nodes(did)])
    t_b = len(base.triple_ends)
    ends = np.asarray(union.triple_ends)
    mapped_ends = np.where(ends >= 0, did[np.maximum(ends, 0)], -1).astype(np.int32)
    if len(ends) < t_b or not np.array_equal(mapped_ends[:t_b], np.asarray(base.triple_ends)):
        return None
    names = _names(base.names, union.names, did)
    if names is None:
        return None
    # Scale ids are 1 + a lexicon name's entity id: renumbered with the entities.
    sid_map = np.concatenate([[0], 1 + did[: len(u_cols.scale) - 1]]).astype(np.int64)
    scale = np.zeros(1 + e_u)
    scale[sid_map] = np.asarray(u_cols.scale)
    entity_row = np.empty(e_u, dtype=np.int64)
    entity_row[did] = np.arange(e_u)
    return _Renumbering(did, entity_row, layout, node_of, sid_map, scale, mapped_ends[t_b:], names)


def _source_rows(b_rows: Csr | LayeredCsr, u_src: Source, r: _Renumbering) -> LayeredCsr | None:
    """The union's source ``u_src`` as the base's rows ``b_rows`` plus a delta, in the layered ids."""
    u_rows = u_src.rows
    if not (isinstance(b_rows, Csr) and isinstance(u_rows, Csr)):
        return None
    order = np.arange(r.layout.n_passages, dtype=np.int64) if u_src.of_passages else r.entity_row
    return layered_rows(b_rows, u_rows, order, None if u_src.to_passages else r.did,
                        r.sid_map if u_rows.sids is not None else None)


def resolution_delta_of(base: PreparedGraph, union: PreparedGraph, entity_of: np.ndarray) -> ResolutionDelta | None:
    """What the add from ``base`` to ``union`` changed in the resolution (the resolve half's reference): the
    mentions, about terms and relations as the base's plus a delta, the new scale, triples and names."""
    r = _renumbering(base, union, entity_of)
    if r is None:
        return None
    assert isinstance(base.columns, Scaled) and isinstance(union.columns, Scaled)
    b_src = {s.name: s for s in base.columns.sources}
    u_src = {s.name: s for s in union.columns.sources}
    if not {"mentions", ABOUT_SOURCE, "relations"} <= set(u_src):
        return None
    parts = [_source_rows(b_src[name].rows, u_src[name], r) for name in ("mentions", ABOUT_SOURCE, "relations")]
    if any(p is None for p in parts):
        return None
    mentions, terms, relations = parts
    assert mentions is not None and terms is not None and relations is not None
    return ResolutionDelta(r.layout, mentions, terms, relations, r.scale, r.ends_tail, r.names, union.n_usable)


def delta_of(base: PreparedGraph, union: PreparedGraph, entity_of: np.ndarray) -> PreparedGraph | None:
    """The union's prepared graph as ``base`` plus a delta (module docstring); None where a delta cannot say it.

    ``entity_of[e]``: the union id of base entity ``e``. The union's first
    ``base.n_passages`` passages must be the base's, in order, and its first
    triples the base's. Declined (None): either is not a full generation's
    graph kept as its sources, settings differ, a base name or triple end
    changed, or either holds entities only NER found.
    """
    r = _renumbering(base, union, entity_of)
    if r is None:
        return None
    b_cols, u_cols = base.columns, union.columns
    assert isinstance(b_cols, Scaled) and isinstance(u_cols, Scaled)
    layout, did, e_u = r.layout, r.did, union.n_entities
    sources = []
    about: LayeredCsr | None = None
    for b_src, u_src in zip(b_cols.sources, u_cols.sources, strict=True):
        rows = _source_rows(b_src.rows, u_src, r)
        if rows is None:
            return None
        sources.append(u_src._replace(rows=rows))
        if u_src.rows is union.about:
            about = rows
    if about is None:  # about weights off: the terms are no source, the seeds still read them
        b_about, u_about = base.about, union.about
        if not (isinstance(b_about, Csr) and isinstance(u_about, Csr)):
            return None
        about = layered_rows(b_about, u_about, r.entity_row, None, r.sid_map)
    per_node = {}
    for name in ("sums", "degree"):
        values = np.asarray(getattr(u_cols, name))
        per_node[name] = np.empty(layout.n_nodes, dtype=values.dtype)
        per_node[name][r.node_of] = values
    columns = Scaled(layout, tuple(sources), r.scale, per_node["sums"], per_node["degree"])
    specificity = np.empty(e_u, dtype=np.float64)
    specificity[did] = np.asarray(union.specificity)
    return PreparedGraph(layout.n_passages, e_u, dict(union.settings), columns, specificity,
                         about, AppendedRows(np.asarray(base.triple_ends), r.ends_tail),
                         LayeredNames(base.names, r.names), np.zeros(0, np.int64), union.n_usable, delta_layout=layout,
                         base_meta=base.meta(), holds_ner=base.holds_ner)


def triple_graph_delta(base: TripleGraph, union: TripleGraph) -> LayeredTripleGraph | None:
    """The union's triple graph (GEAR's beam search) as ``base``'s plus a delta: the base's entity ids kept (by
    key), the union's other entities after them, each entity's new triples appended to its row. None where
    the union changed a base triple's ends (the hub cut moved: a full generation decides)."""
    ids = {k: i for i, k in enumerate(union.entities)}
    entity_of = np.fromiter((ids.get(k, -1) for k in base.entities), dtype=np.int64, count=len(base.entities))
    if len(entity_of) and int(entity_of.min()) < 0:
        return None
    n_b, n_u = base.n_entities, union.n_entities
    did = np.full(n_u + 1, -1, dtype=np.int64)  # the last slot maps -1 (no entity) to itself
    did[entity_of] = np.arange(n_b, dtype=np.int64)
    new = np.flatnonzero(did[:n_u] < 0)
    did[new] = n_b + np.arange(len(new), dtype=np.int64)
    t_b = len(base.head)
    head, tail = did[np.asarray(union.head)].astype(np.int32), did[np.asarray(union.tail)].astype(np.int32)
    if len(head) < t_b or not (np.array_equal(head[:t_b], base.head) and np.array_equal(tail[:t_b], base.tail)):
        return None
    entity_row = np.empty(n_u, dtype=np.int64)
    entity_row[did[:n_u]] = np.arange(n_u)
    # Triple ids: appended, not renumbered.
    postings = layered_rows(base.postings_csr(), union.postings_csr(), entity_row, None, None)
    keys = [union.entities[int(u)] for u in entity_row[n_b:].tolist()]
    return LayeredTripleGraph(AppendedStrings(base.entities, keys), AppendedRows(np.asarray(base.head), head[t_b:]),
                              AppendedRows(np.asarray(base.tail), tail[t_b:]), postings)
