"""The apply half of an add's or a delete's delta (docs/delta.md, "The apply half"): :func:`apply_delta` turns
what the resolution changed (:class:`ResolutionDelta`) into the prepared graph's delta over its base, reading
only what the change touched; with the entry netting the resolve halves share (:func:`net_weights`).
"""

from __future__ import annotations

from typing import NamedTuple, cast

import numpy as np

from gearag import setops
from gearag.graph.edge_kinds import transition_sources
from gearag.graph.layered import AppendedRows, LayeredCsr, LayeredNames, NodeLayout
from gearag.graph.prepared import PreparedGraph
from gearag.graph.scaled import ABOUT_SOURCE, Scaled, TermsByName, source_degrees, transposed, updated_sums
from gearag.graph.transition import Csr
from gearag.graph.trie import HashedNames


class Deletion(NamedTuple):
    """What a delete takes away from its base (:mod:`gearag.derive.delta_delete`): the flatten drops the rows."""

    rows: np.ndarray  #: per base passage row, its row after the delete (-1: deleted)
    triples: np.ndarray  #: per live triple of the base, its index after the delete (-1: deleted)
    unnamed: np.ndarray  #: the entities left with no edge whose keys the base's names held (taken out of them)


class ResolutionDelta(NamedTuple):
    """What an add changed in the resolution, in the appending numbering (docs/delta.md, "Numbering"), or a delete in
    the base's (:attr:`deletion`)."""

    layout: NodeLayout  #: the base's passages and entities, and all of them after the add
    mentions: LayeredCsr  #: passage × entity, 1.0 a pair, over the base's mentions source
    terms: LayeredCsr  #: entity × passage about terms (raw, scale ids), over the base's terms
    relations: LayeredCsr  #: entity × entity triple counts, over the base's relations
    scale: np.ndarray  #: float64 per scale id (``1 +`` a lexicon name's entity id), after the add
    ends_tail: np.ndarray  #: int32 (T_new, 2): the appended triples' entity ends
    names: HashedNames  #: the usable, counted keys the base's names do not hold (ids: the entities')
    n_usable: int | None  #: how many names the union has in all
    #: The base's terms read with each scale the add changed (the others' empty), when the resolve half found
    #: them: what :func:`apply_delta` reads of :class:`TermsByName` (None: it must be given the base's whole).
    by_name: TermsByName | None = None
    #: Set for a delete (its rows empty in the base's numbering until the flatten drops them).
    deletion: Deletion | None = None
    #: The optional kinds' sources, derived again over the keys after the change (:func:`rows_that_differ`), by
    #: name (:attr:`~gearag.graph.edge_kinds.EdgeKind.over_keys`).
    edges: dict[str, LayeredCsr] | None = None
    #: With NER mentions: every entity only NER spans name after the change
    #: (:attr:`~gearag.graph.prepared.PreparedGraph.ner_keys`); None: the index keeps none.
    ner_keys: np.ndarray | None = None


def rows_that_differ(base: Csr, new: Csr) -> LayeredCsr:
    """``new`` (a whole matrix over at least ``base``'s rows) as ``base`` and a delta of the rows that differ
    from it (an entry, a target or a weight), and of the rows past it: a source derived again whole keeps
    only what the change moved."""
    n_base, n = base.n_rows, len(new.indptr) - 1
    old_counts = base.counts(np.arange(n_base, dtype=np.int64))
    new_counts = np.diff(np.asarray(new.indptr))
    differ = old_counts != new_counts[:n_base]
    same = np.flatnonzero(~differ & (old_counts > 0))
    _, old_idx, old_data, _ = base.gather(same)
    _, new_idx, new_data, _ = new.gather(same)
    moved = (np.asarray(old_idx) != np.asarray(new_idx)) | (np.asarray(old_data) != np.asarray(new_data))
    differ[same[np.repeat(np.arange(len(same)), old_counts[same])[moved]]] = True
    listed = np.concatenate([np.flatnonzero(differ), np.arange(n_base, n)]).astype(np.int64)
    counts, idx, data, _ = new.gather(listed)
    return LayeredCsr.from_entries(base, n, listed, np.zeros(0, dtype=np.int64), np.repeat(listed, counts),
                                   np.asarray(idx, dtype=np.int64), np.asarray(data), np.zeros(len(idx), np.int64))


def entries_of(m: Csr, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``rows`` of ``m`` flat: (row, target, float64 weight, scale id) per entry."""
    counts, idx, data, sids = m.gather(np.asarray(rows, dtype=np.int64))
    sid = np.zeros(len(idx), dtype=np.int64) if sids is None else np.asarray(sids, dtype=np.int64)
    return (np.repeat(np.asarray(rows, dtype=np.int64), counts), np.asarray(idx, dtype=np.int64),
            np.asarray(data, dtype=np.float64), sid)


def net_weights(row: np.ndarray, target: np.ndarray, sid: np.ndarray,
                signed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entries summed per (row, target, scale id): each key once, in that order, with its total weight (float64).
    Each column is let go as its sorted copy is made, where the caller holds it no longer (a build's about terms
    at 1M passages are ~23M entries)."""
    cols = [row, target, sid, signed]
    del row, target, sid, signed
    by = _by_key(cols[0], cols[1], cols[2])
    for c in range(4):
        cols[c] = cols[c][by]
    del by
    again = np.ones(len(cols[0]), dtype=bool)  # a key the entry before has
    again[:1] = False
    for c in range(3):
        again[1:] &= cols[c][1:] == cols[c][:-1]
    if not again.any():  # no key twice (a build's entries): the weights as they are
        return cols[0], cols[1], cols[2], cols[3].astype(np.float64, copy=False)
    first = ~again
    group = np.cumsum(first) - 1
    return cols[0][first], cols[1][first], cols[2][first], np.bincount(group, weights=cols[3])


def _by_key(row: np.ndarray, target: np.ndarray, sid: np.ndarray) -> np.ndarray:
    """``np.lexsort((sid, target, row))``: a stable sort of one int64 key (row, target) where it fits, with the
    few entries sharing a pair ordered by scale id after it (a three-key lexsort of an add's or a delete's
    replaced term rows took ~7 s at 1M passages; the one-key sort about a fifth of that)."""
    span = int(target.max(initial=0)) + 1
    if not len(row) or (int(row.max()) + 1) * span >= 1 << 62:
        return np.lexsort((sid, target, row))
    key = row.astype(np.int64)
    key *= span
    key += target
    by = np.argsort(key, kind="stable")
    key = key[by]
    repeats = key[1:] == key[:-1]
    if repeats.any():  # the entries of a pair held more than once, ordered by scale id
        shared_at = np.zeros(len(key), dtype=bool)
        shared_at[1:] = repeats
        shared_at[:-1] |= repeats
        shared = np.flatnonzero(shared_at)
        by[shared] = by[shared][np.lexsort((sid[by[shared]], key[shared]))]
    return by


def _changes(m: LayeredCsr) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What ``m``'s delta changed, as entries it gained and lost against its base: (row, target, weight, scale id,
    and whether gained, else lost) per entry. Appended and new rows gain their delta entries; a replaced row gains
    and loses the difference, per (target, scale id), between its delta row and its base row."""
    where = np.asarray(m.where)
    listed = np.flatnonzero(where >= 0)
    appends = np.asarray(m.appends)[listed] if m.appends is not None else np.zeros(len(listed), dtype=bool)
    replaced = listed[(listed < m.base.n_rows) & ~appends]
    kept = listed[~setops.isin(listed, replaced)]
    _, t, d, s = entries_of(m.delta, where[kept])
    parts = [(np.repeat(kept, m.delta.counts(where[kept])), t, d, s)]  # delta rows named as the layered rows
    if len(replaced):
        br, bt, bd, bs = entries_of(m.base, replaced)
        _, dt, dd, ds = entries_of(m.delta, where[replaced])
        dr = np.repeat(replaced, m.delta.counts(where[replaced]))
        row, target, sid, net = net_weights(np.concatenate([br, dr]), np.concatenate([bt, dt]),
                                            np.concatenate([bs, ds]), np.concatenate([-bd, dd]))
        moved = net != 0
        parts.append((row[moved], target[moved], net[moved], sid[moved]))
    row, target, data, sid = (np.concatenate(p) for p in zip(*parts, strict=True))
    return row, target, np.abs(data), sid, data > 0


def _transposed(base_t: Csr, m: LayeredCsr, n_rows: int) -> LayeredCsr:
    """The transpose of ``m`` over the base's transpose ``base_t``: a row gains what ``m`` gained the other way
    (appended), and a row that lost an entry is replaced."""
    n_base = base_t.n_rows
    target, row, data, sid, up = _changes(m)  # transposed
    lost_rows = setops.unique(row[~up])
    replaced = lost_rows[lost_rows < n_base]
    gained = up & ~setops.isin(row, replaced)
    g_row, g_target, g_data, g_sid = row[gained], target[gained], data[gained], sid[gained]
    parts = [(g_row, g_target, g_data, g_sid)]
    if len(replaced):  # the base row, with the changes' weights added and taken away, per (target, scale id)
        br, bt, bd, bs = entries_of(base_t, replaced)
        mine = setops.isin(row, replaced)
        signs = np.where(up[mine], 1.0, -1.0)
        r2, t2, s2, net = net_weights(np.concatenate([br, row[mine]]), np.concatenate([bt, target[mine]]),
                                      np.concatenate([bs, sid[mine]]),
                                      np.concatenate([bd, signs * data[mine]]))
        keep = net > 0
        parts.append((r2[keep], t2[keep], net[keep], s2[keep]))
    row, target, data, sid = (np.concatenate(p) for p in zip(*parts, strict=True))
    return LayeredCsr.over(base_t, n_rows, replaced, row, target, data, sid)


def in_sorted_rows(m: Csr, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether ``values[i]`` is in row ``rows[i]`` of ``m``, whose rows are sorted: a bisection of every row at
    once, reading ~log2(row length) entries per value."""
    rows = np.asarray(rows, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    n_base = m.n_rows
    inside = rows < n_base  # rows past the base's hold nothing of it
    lo = np.zeros(len(rows), dtype=np.int64)
    hi = np.zeros(len(rows), dtype=np.int64)
    lo[inside] = np.asarray(m.indptr)[rows[inside]]
    hi[inside] = np.asarray(m.indptr)[rows[inside] + 1]
    end = hi.copy()
    indices = m.indices
    while True:
        active = np.flatnonzero(lo < hi)
        if not len(active):
            break
        mid = (lo[active] + hi[active]) // 2
        right = np.asarray(indices[mid], dtype=np.int64) < values[active]
        lo[active[right]] = mid[right] + 1
        hi[active[~right]] = mid[~right]
    found = lo < end
    found[found] = np.asarray(indices[lo[found]], dtype=np.int64) == values[found]
    return found


def _new_degrees(base: Scaled, layered: Scaled) -> np.ndarray:
    """The layered graph's degrees from the base's: each node's delta entries add the targets its base rows
    (any source) did not reach; a node with a replaced row, or a new node, is counted whole."""
    layout = layered.layout
    n_base = layout.base_passages + layout.base_entities
    # A (passage, entity) pair, either way, was in the base when a passage → entity source had it (each entity →
    # passage source is the transpose of one: the registry's transpose_of); an (entity, entity) pair when an
    # entity → entity source had it.
    held = [s for s in base.sources if not s.to_passages]
    assert all(isinstance(s.rows, Csr) for s in held)  # a full generation's sources
    by_passage = [cast(Csr, s.rows) for s in held if s.of_passages]
    between = [cast(Csr, s.rows) for s in held if not s.of_passages]
    degree = np.zeros(layout.n_nodes, dtype=np.int32)
    degree[:n_base] = base.degree
    recount, found_nodes, found_keys = [np.arange(n_base, layout.n_nodes, dtype=np.int64)], [], []
    for src in layered.sources:
        rows = src.rows
        assert isinstance(rows, LayeredCsr)
        where = np.asarray(rows.where)
        listed = np.flatnonzero(where[: rows.base.n_rows] >= 0)  # base rows the delta touched
        appends = np.asarray(rows.appends)[listed] if rows.appends is not None else np.zeros(len(listed), bool)
        node_of = layout.passage_nodes if src.of_passages else layout.entity_nodes
        recount.append(node_of(listed[~appends]))
        grown = listed[appends]
        counts, gained, _, _ = rows.delta.gather(where[grown])
        owners, targets = np.repeat(grown, counts), np.asarray(gained, dtype=np.int64)
        if src.of_passages or src.to_passages:  # a (passage, entity) pair, either way
            old = ~_in_any(by_passage, *((owners, targets) if src.of_passages else (targets, owners)))
        else:
            old = ~_in_any(between, owners, targets)
        found_nodes.append(node_of(owners[old]))
        found_keys.append((layout.passage_nodes if src.to_passages else layout.entity_nodes)(targets[old]))
    whole = setops.unique(np.concatenate(recount))
    nodes, keys = np.concatenate(found_nodes), np.concatenate(found_keys)
    keep = ~setops.isin(nodes, whole)
    pairs = setops.unique(nodes[keep] * layout.n_nodes + keys[keep])  # a target two sources gained counts once
    np.add.at(degree, pairs // layout.n_nodes, 1)
    degree[whole] = source_degrees(layered, whole)  # the nodes whose rows were replaced, and new ones
    return degree


def _in_any(sources: list[Csr], rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether any of ``sources`` (rows sorted) holds each pair (``rows[i]``, ``values[i]``)."""
    found = np.zeros(len(rows), dtype=bool)
    for m in sources:
        found |= in_sorted_rows(m, rows, values)
    return found


def apply_delta(base: PreparedGraph, d: ResolutionDelta) -> PreparedGraph | None:
    """The prepared graph after the add ``d`` describes, as ``base`` (a full generation's, kept as its sources)
    plus a delta; None where this cannot say it (another base, a source the base left out, no backlinks)."""
    if d.by_name is None:
        raise ValueError("apply_delta needs the base's terms by scale id")
    cols = base.columns
    if not isinstance(cols, Scaled) or not cols.layout.plain_layout:
        return None
    layout = d.layout
    by_source = {s.name: s for s in cols.sources}
    grown = {"mentions": d.mentions, ABOUT_SOURCE: d.terms, "relations": d.relations, **(d.edges or {})}
    rows: dict[str, LayeredCsr] = {}
    for kind in transition_sources():  # a transpose after its source, whose changes it gains the other way
        src = by_source.get(kind.name)
        if (kind.transpose_of or kind.name) not in grown:  # a kind the delta does not grow must be absent
            if src is not None:
                return None
            continue
        if src is None:
            return None  # the base left it out (a weight of 0): not kept as deltas
        if kind.transpose_of is None:
            if grown[kind.name].base is not src.rows:
                return None  # another base
            rows[kind.name] = grown[kind.name]
        else:
            base_t = src.rows
            assert isinstance(base_t, Csr)
            n_rows = layout.n_passages if kind.of_passages else layout.n_entities
            whole = rows[kind.transpose_of].delta_only
            # A build's: its source transposed at once (a counting sort, not a list of every entry's change).
            rows[kind.name] = LayeredCsr.of_delta(base_t, transposed(whole, n_rows)) \
                if whole is not None and not base_t.n_rows else _transposed(base_t, rows[kind.transpose_of], n_rows)
    if set(by_source) != set(rows):
        return None
    sources = tuple(s._replace(rows=rows[s.name]) for s in cols.sources)
    n_nodes = layout.n_nodes
    layered = Scaled(layout, sources, np.asarray(d.scale, dtype=np.float64), np.zeros(n_nodes),
                     np.zeros(n_nodes, dtype=np.int32))
    layered.sums = updated_sums(cols, layered, d.by_name)
    layered.degree = _new_degrees(cols, layered)
    # Specificity: one over the passages mentioning an entity, counted again where its backlinks changed.
    specificity = np.ones(layout.n_entities)
    specificity[: layout.base_entities] = base.specificity
    back = rows["backlinks"]
    changed = np.flatnonzero(np.asarray(back.where) >= 0)
    specificity[changed] = 1.0 / np.maximum(back.counts(changed), 1)
    about = rows[ABOUT_SOURCE]
    return PreparedGraph(layout.n_passages, layout.n_entities, dict(base.settings), layered,
                         specificity, about, AppendedRows(np.asarray(base.triple_ends), d.ends_tail),
                         LayeredNames(base.names, d.names),
                         base.ner_keys if d.ner_keys is None else d.ner_keys, d.n_usable,
                         delta_layout=layout, base_meta=base.meta(),
                         holds_ner=base.holds_ner if d.ner_keys is None else True)
