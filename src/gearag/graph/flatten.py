"""A base's and a delta's prepared graph as one plain prepared graph, in the delta's (appending) entity numbering
(docs/delta.md, "Written whole"): :func:`flattened`. A push reads the same edges with the same weights from
either.
"""

from __future__ import annotations

import numpy as np

from gearag import setops
from gearag.arrays import offsets, ranges
from gearag.graph.delta_apply import Deletion
from gearag.graph.layered import AppendedRows, LayeredCsr, LayeredNames, NodeLayout
from gearag.graph.prepared import PreparedGraph
from gearag.graph.scaled import ABOUT_SOURCE, Scaled
from gearag.graph.transition import Csr
from gearag.graph.trie import HashedNames


def flat_rows(rows: Csr | LayeredCsr, by_target: bool) -> Csr:
    """Every row of ``rows`` (a base's and a delta's, or plain) as one plain matrix: the rows the delta left
    alone as the base has them, copied in bulk; each row it touched as a push reads it (the base's entries,
    then the delta's), ordered by target where ``by_target`` (a row whose targets are entities: an add's
    degree count bisects them, :func:`~gearag.graph.delta_apply.in_sorted_rows`)."""
    if isinstance(rows, Csr):
        return rows
    base, n = rows.base, rows.n_rows
    whole = rows.delta_only
    if whole is not None and (not by_target or _ascending_rows(whole)):
        return whole  # every row the delta's, in order, as stored (an add onto nothing: a build)
    touched = np.flatnonzero(np.asarray(rows.where) >= 0)
    counts, idx, data, sids = rows.gather(touched)
    target = np.asarray(idx, dtype=np.int64)
    if by_target:  # a stable sort of the touched rows' entries by (row, target): one int64 key
        order = np.argsort(np.repeat(np.arange(len(touched), dtype=np.int64), counts) * (int(target.max(initial=0)) + 1)
                           + target, kind="stable")
        target, data = target[order], np.asarray(data)[order]
        sids = np.asarray(sids)[order] if sids is not None else None
    size = np.zeros(n, dtype=np.int64)
    size[: base.n_rows] = np.diff(np.asarray(base.indptr))
    size[touched] = counts
    indptr = offsets(size)
    lone = np.ones(base.n_rows, dtype=bool)  # base rows the delta left alone: their entries as they are
    lone[touched[touched < base.n_rows]] = False
    kept = np.repeat(lone, np.diff(np.asarray(base.indptr)))
    new = np.zeros(int(indptr[-1]), dtype=bool)
    new[ranges(indptr[touched], counts)] = True

    def spliced(old: np.ndarray, fresh: np.ndarray, dtype: type) -> np.ndarray:
        out: np.ndarray = np.empty(len(new), dtype=dtype)
        out[~new] = np.asarray(old)[kept]
        out[new] = fresh
        return out

    return Csr(indptr, spliced(base.indices, target, np.int32), spliced(base.data, np.asarray(data), np.float32),
               spliced(base.sids, np.asarray(sids), np.int32) if base.sids is not None and sids is not None else None)


def _ascending_rows(m: Csr) -> bool:
    """Whether every row of ``m`` has its targets in ascending order."""
    indices = np.asarray(m.indices)
    down = np.flatnonzero(indices[1:] < indices[:-1]) + 1  # positions where a target is below the one before
    return not len(down) or bool(np.all(np.isin(down, np.asarray(m.indptr))))  # each at a row's start


def merged_names(names: HashedNames) -> HashedNames:
    """Two layers of hashed names (:class:`~gearag.graph.layered.LayeredNames`) as one; plain ones as they are.
    Where both layers hold a hash, the delta's id is kept, as a lookup in the two layers gives."""
    if not isinstance(names, LayeredNames):
        return names
    base, delta = names.base, names.delta
    if not len(delta.name_hashes):  # a delete's: no name added
        return base
    b_hashes, b_ids = np.asarray(base.name_hashes), np.asarray(base.name_ids)
    d_hashes, d_ids = np.asarray(delta.name_hashes), np.asarray(delta.name_ids)
    kept = ~setops.isin(b_hashes, d_hashes)
    b_hashes, b_ids = b_hashes[kept], b_ids[kept]
    at = np.searchsorted(b_hashes, d_hashes)
    nodes = setops.union(np.asarray(base.nodes), np.asarray(delta.nodes))
    return HashedNames.from_arrays(nodes, np.insert(b_hashes, at, d_hashes), np.insert(b_ids, at, d_ids))


def flattened(g: PreparedGraph, deletion: Deletion | None = None) -> PreparedGraph:
    """``g`` (a base's and a delta's, kept as its sources) as one plain prepared graph in the same entity
    numbering (module docstring); ``g`` itself when it is plain already. ``deletion``: the delete ``g``'s delta
    says (its passages' rows are empty in ``g``): their rows are dropped and the passage targets renumbered
    source by source, the deleted triples' ends dropped, and the names of the entities left with no edge
    taken out. Entity ids stay (such an entity keeps its id, with no edge)."""
    cols = g.columns
    if g.delta_layout is None or not isinstance(cols, Scaled):
        return g
    layout = g.layout
    node = np.concatenate([layout.passage_nodes(np.arange(layout.n_passages)),
                           layout.entity_nodes(np.arange(layout.n_entities))])  # plain node → layered node
    keep = np.asarray(deletion.rows) >= 0 if deletion is not None else np.ones(layout.n_passages, dtype=bool)
    to_row = np.asarray(deletion.rows, dtype=np.int32) if deletion is not None else None  # a passage's row after

    def plain(rows: Csr | LayeredCsr, of_passages: bool, to_passages: bool) -> Csr:
        out = flat_rows(rows, not to_passages)
        if to_row is None:
            return out
        if to_passages:
            target = to_row[np.asarray(out.indices)]
            assert not len(target) or int(target.min()) >= 0, "a target among the deleted passages"
            out = out._replace(indices=target)
        return _kept_rows(out, keep) if of_passages else out

    # One source at a time: a delete's rows are dropped before the next source is gathered.
    sources = tuple(src._replace(rows=plain(src.rows, src.of_passages, src.to_passages)) for src in cols.sources)
    about = next(src.rows for src in sources if src.name == ABOUT_SOURCE)  # the about edges: gathered once
    live = np.concatenate([keep, np.ones(layout.n_entities, dtype=bool)])
    sums, degree = np.asarray(cols.sums)[node][live], np.asarray(cols.degree)[node][live]
    ends = np.asarray(g.triple_ends.whole() if isinstance(g.triple_ends, AppendedRows) else g.triple_ends)
    names = merged_names(g.names)
    if deletion is not None:
        sums[degree == 0] = 0.0  # a node left with no edge: its sum's float residue is no out-edge
        ends = ends[np.asarray(deletion.triples) >= 0]
        named = ~setops.isin(np.asarray(names.name_ids, dtype=np.int64), deletion.unnamed)
        names = HashedNames.from_arrays(np.asarray(names.nodes), np.asarray(names.name_hashes)[named],
                                        np.asarray(names.name_ids)[named])
    n_passages = int(keep.sum())
    columns = Scaled(NodeLayout.plain(n_passages, layout.n_entities), sources, np.asarray(cols.scale), sums, degree)
    return PreparedGraph(n_passages, g.n_entities, dict(g.settings), columns,
                         np.asarray(g.specificity), about,
                         ends, names, g.ner_keys, g.n_usable, holds_ner=g.holds_ner)


def _kept_rows(m: Csr, keep: np.ndarray) -> Csr:
    """The rows of ``m`` where ``keep`` (bool per row), in order."""
    counts = np.diff(np.asarray(m.indptr))
    indptr = offsets(counts[keep])
    mine = np.repeat(keep, counts)
    return Csr(indptr, np.asarray(m.indices)[mine], np.asarray(m.data)[mine],
               np.asarray(m.sids)[mine] if m.sids is not None else None)
