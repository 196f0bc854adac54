"""The resolve half of an add: its :class:`~gearag.graph.delta_apply.ResolutionDelta` over a base, in the appending
numbering, made source by source without resolving the union (docs/delta.md, "Numbering" and "The resolution").
The reference is the tests' oracle ``resolution_delta_of`` (``tests/delta_oracles.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from gearag import setops
from gearag.arrays import ascending, ranges, row_offsets
from gearag.data.jsonstrings import strings_at
from gearag.derive.delta_scan import TextScan, scan_texts
from gearag.derive.endpoints import union_ends
from gearag.derive.text_mentions import end_mentions, merged_mentions
from gearag.derive.union_resolve import (
    GrownLexicon,
    NameStats,
    ResolveInputs,
    ResolveState,
    endpoint_name_stats,
    grown_lexicon,
)
from gearag.derive.union_vocab import UnionVocab
from gearag.graph.delta_apply import ResolutionDelta, net_weights
from gearag.graph.layered import LayeredCsr, NodeLayout
from gearag.graph.prepared import PreparedGraph, names_beside
from gearag.graph.scaled import ABOUT_SOURCE, TermsByName
from gearag.graph.transition import Csr, relation_pairs
from gearag.graph.trie import HashedNames, NameLookup


class Entries:
    """Entries of a delta being made, as lists of arrays per column: layered row, target and scale id (int32:
    every id the graph stores is) and raw weight (float64, summed exactly). Kept narrow and each column let go
    once joined: a build's ~23M about terms at 1M passages are every entry of the source at once."""

    def __init__(self) -> None:
        self.columns: tuple[list[np.ndarray], ...] = ([], [], [], [])  #: row, target, scale id, weight

    def add(self, row: np.ndarray, target: np.ndarray, data: np.ndarray, sid: np.ndarray | int = 0) -> None:
        row = np.asarray(row, dtype=np.int32)
        sids = np.broadcast_to(np.asarray(sid, dtype=np.int32), row.shape)
        # Typed as one tuple of arrays: mypy's join of the four array types is otherwise not always an array.
        values: tuple[np.ndarray, ...] = (row, np.asarray(target, dtype=np.int32), sids,
                                          np.asarray(data, dtype=np.float64))
        for column, value in zip(self.columns, values, strict=True):
            column.append(value)

    def layered(self, base: Csr, n_rows: int, replaced: np.ndarray,
                single: tuple[np.ndarray, ...] | None = None) -> LayeredCsr:
        """The base's rows plus these entries (summed per row, target and scale id): rows ``replaced`` replace
        the base's, the other base rows are appended to, rows past the base's are new. ``single``: more entries
        (row, target, weight, scale id), one per key already and in rows these have none of (not summed: a
        sort of millions of a delete's kept term entries at 1M)."""
        joined = [self._joined(c) for c in range(4)]
        row, target, sid, data = net_weights(*joined)
        del joined
        if single is not None:
            row, target, data, sid = (np.concatenate([a, np.asarray(b, dtype=a.dtype)]) for a, b in
                                      zip((row, target, data, sid), single, strict=True))
        return LayeredCsr.over(base, n_rows, replaced, row, target, data, sid)

    def _joined(self, c: int) -> np.ndarray:
        """Column ``c``'s arrays as one, the parts let go."""
        parts = self.columns[c]
        joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64 if c == 3 else np.int32)
        parts.clear()
        return joined


def _own_pages(terms: Csr, entities: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each base lexicon name's own pages (its terms read with its own scale id): (position in ``entities``,
    passage, tier weight)."""
    counts, idx, data, sids = terms.gather(np.asarray(entities, dtype=np.int64))
    at = np.repeat(np.arange(len(entities), dtype=np.int64), counts)
    assert sids is not None
    own = np.asarray(sids, dtype=np.int64) == 1 + np.asarray(entities, dtype=np.int64)[at]
    return at[own], np.asarray(idx, dtype=np.int64)[own], np.asarray(data, dtype=np.float64)[own]


def _pages_by_name(names: np.ndarray, n_prior: int, base_terms: Csr | None,
                   added: tuple[np.ndarray, np.ndarray, np.ndarray],
                   lex_entity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every page of the lexicon names ``names`` (sorted, distinct) after the change, grouped by name: (offsets
    over ``names``, passage, tier weight). A name's pages are the base's (its own terms in ``base_terms``; None:
    none read) and the new ``added`` entries; ``lex_entity``: each lexicon name's entity id."""
    old = names[names < n_prior] if base_terms is not None else names[:0]
    at, rows, weights = _own_pages(base_terms, lex_entity[old]) if base_terms is not None else (old, old,
                                                                                                old.astype(np.float64))
    pos_old = np.searchsorted(names, old)[at]
    k, r, w = added
    mine = setops.isin(k, names)
    pos = np.concatenate([pos_old, np.searchsorted(names, k[mine].astype(np.int64))])
    by = np.argsort(pos, kind="stable")
    return row_offsets(pos, len(names)), np.concatenate([rows, r[mine]])[by], np.concatenate([weights, w[mine]])[by]


def contained_terms(terms: Entries, owners: np.ndarray, contained: np.ndarray, shares: np.ndarray, n_prior: int,
                    base_terms: Csr | None, added: tuple[np.ndarray, np.ndarray, np.ndarray],
                    lex_entity: np.ndarray) -> None:
    """Add to ``terms`` the about terms of (owner, contained lexicon name, share) triples: an endpoint-only name
    is about the pages of the lexicon names it contains (:func:`_pages_by_name`), a term over each page of the
    name, in that order, raw weight ``share · w`` rounded as it is stored."""
    via = contained.astype(np.int64)
    names = setops.unique(via)
    ptr, page_rows, page_weights = _pages_by_name(names, n_prior, base_terms, added, lex_entity)
    at = np.searchsorted(names, via)
    spans = ptr[at + 1] - ptr[at]
    pos = ranges(ptr[at], spans)
    raw = np.repeat(np.asarray(shares, dtype=np.float64), spans) * page_weights[pos]
    terms.add(np.repeat(owners, spans), page_rows[pos], raw.astype(np.float32).astype(np.float64),
              1 + lex_entity[np.repeat(via, spans)])


def _same_cont(a: NameStats, b: NameStats, rows: np.ndarray) -> np.ndarray:
    """Whether each of ``rows`` holds the same contained names and shares in ``a`` and ``b``."""
    same = (a.cont_ptr[rows + 1] - a.cont_ptr[rows]) == (b.cont_ptr[rows + 1] - b.cont_ptr[rows])
    check = rows[same]
    ra, na, sa = a.contained(check)
    _, nb, sb = b.contained(check)
    differs = setops.unique(ra[(na != nb) | (sa != sb)])
    same[np.flatnonzero(same)[setops.isin(check, differs)]] = False
    return same


class _Numbering(NamedTuple):
    """The appending numbering of an add's entities (docs/delta.md, "Numbering")."""

    lex_entity: np.ndarray  #: the entity id of each lexicon name
    entity: np.ndarray  #: the entity id of each endpoint name (-1: not live), and -1 last (read for -1)
    base_entity: np.ndarray  #: the base's entity id of each of the base's endpoint names
    fresh: np.ndarray  #: per lexicon name new to the lexicon: a new entity (else a base endpoint-only name's)
    new_ep: np.ndarray  #: the new endpoint-only names, in the order of their ids
    layout: NodeLayout


def base_entities(base_stats: NameStats, base_lex: np.ndarray | None, n_prior: int,
                  e_base: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The entity ids of the base's ``n_prior`` lexicon names (``base_lex``; None: their lexicon ids, as a full
    generation from the union numbers them) and of its endpoint names (kept by ``base_stats``, or ordered again
    over a union-numbered base). None: ``base_stats`` do not number ``e_base`` entities."""
    lex_entity = np.asarray(base_lex, dtype=np.int64) if base_lex is not None else np.arange(n_prior, dtype=np.int64)
    if base_stats.entity is not None:  # kept by the base
        base_entity = np.asarray(base_stats.entity, dtype=np.int64)
        if max(int(base_entity.max(initial=-1)), int(lex_entity.max(initial=-1))) >= e_base:
            return None  # (below it: a delete left the last entities with no edge, their ids kept)
    elif base_lex is None:
        base_entity = base_stats.entities(n_prior)[:-1]  # ordered again
        if n_prior + int(np.count_nonzero(base_entity >= n_prior)) != e_base:
            return None
    else:
        return None
    return lex_entity, base_entity


def _numbering(stats: NameStats, base_stats: NameStats, vocab: UnionVocab, names: list[str], n_prior: int,
               base_lex: np.ndarray | None, e_base: int, n_passages: int, new_from: int) -> _Numbering | None:
    """Base entities keep their ids (:func:`base_entities`); new lexicon names come next in lexicon order (a
    base endpoint-only name that gained a page keeps its id), then new endpoint-only names by first
    appearance. None: ``base_stats`` do not number ``e_base`` entities."""
    n_known = len(base_stats.lex)
    numbered = base_entities(base_stats, base_lex, n_prior, e_base)
    if numbered is None:
        return None
    lex_entity = np.arange(len(names), dtype=np.int64)
    lex_entity[:n_prior], base_entity = numbered
    held = vocab.find(names[n_prior:])
    was = np.full(len(held), -1, dtype=np.int64)
    known = (held >= 0) & (held < n_known)
    was[known] = base_entity[held[known]]
    fresh = was < 0
    lex_entity[n_prior:] = was
    lex_entity[n_prior + np.flatnonzero(fresh)] = e_base + np.arange(int(fresh.sum()), dtype=np.int64)
    live = stats.live()
    entity = np.full(len(vocab.items) + 1, -1, dtype=np.int64)
    entity[:n_known] = base_entity
    named = np.flatnonzero(live & (stats.lex >= 0))
    entity[named] = lex_entity[stats.lex[named]]
    new_ep = stats.endpoint_only(entity[:-1] < 0)
    e_new = e_base + int(fresh.sum())
    entity[new_ep] = e_new + np.arange(len(new_ep), dtype=np.int64)
    return _Numbering(lex_entity, entity, base_entity, fresh, new_ep,
                      NodeLayout(n_passages, e_new + len(new_ep), new_from, e_base))


class ResolvedDelta(NamedTuple):
    """What :func:`resolve_delta` gives: the resolution's delta, the text scan it made, and what
    :meth:`state` makes of them."""

    delta: ResolutionDelta
    scan: TextScan
    lexicon: GrownLexicon
    stats: NameStats  #: the endpoint names' statistics after the add, with their entity ids
    ids: _Numbering
    prior: ResolveState
    longest: dict[str, int]
    #: With NER mentions: how many (passage, entity) pairs the union's spans make (None: the index keeps none).
    ner_mentions: int | None = None

    def state(self) -> ResolveState:
        """The resolve state after the add, in the appending numbering: what a generation that keeps the add
        whole keeps for the next one (the base's entries and text mentions, the rows scanned again replaced)."""
        old, scan = self.prior, self.scan
        tr, tn = (np.asarray(a, dtype=np.int64) for a in old.text)
        kept = ~setops.isin(tr, scan.again)
        rows, names = merged_mentions(tr[kept], tn[kept], scan.match_rows, scan.match_names)
        entity = self.ids.lex_entity
        rebuilt = np.array_equal(entity, np.arange(len(entity)))
        return ResolveState(self.lexicon.names, self.lexicon.entries(old), (rows, names.astype(np.int32)),
                            self.longest, None if rebuilt else entity)


def entity_keys(state: ResolveState, stats: NameStats, items: Sequence[str], n_entities: int) -> list[str | None]:
    """Each entity's key after a change, by entity id: its lexicon name (``state``) or its endpoint name
    (``items``, the names vocabulary, through ``stats.entity``); None for an id a delete left with no edge."""
    keys: list[str | None] = [None] * n_entities
    lex_entity = state.lex_entity if state.lex_entity is not None else np.arange(len(state.names))
    assert stats.entity is not None, "statistics that number the entities"
    endpoint = np.asarray(stats.entity, dtype=np.int64)
    named = np.flatnonzero(endpoint >= 0)
    for e, key in zip(endpoint[named].tolist(), strings_at(items, named), strict=True):
        keys[e] = key
    for e, key in zip(np.asarray(lex_entity).tolist(), state.names, strict=True):
        keys[e] = key  # a lexicon name's own spelling where an endpoint name is the same entity
    return keys


def resolve_delta(inputs: ResolveInputs, base: PreparedGraph,
                  previous_scan: TextScan | None = None) -> ResolvedDelta | None:
    """What the add of the passages after ``prior.new_from`` (and of the shards after ``prior.shards``) changed
    in the resolution, over ``base`` (the prior's prepared graph), with the text scan it made (kept for the
    next delta add: :mod:`gearag.derive.delta_scan`). ``inputs.indices`` are every shard's (the base's and
    those since: a previous delta add's ``previous_scan`` is updated where a name gained since it occurs).

    None where a delta cannot say it (a full generation decides): no prior endpoint-name statistics, a
    delete, a base that is not a full generation's graph kept as its sources, or a new name whose hash
    another name has.
    """
    passages, (tables, triple_keep, owner, _), vocab, prior = inputs.passages, inputs.live, inputs.vocab, inputs.prior
    src, base_scale, n_usable = base.whole_sources(), base.scale, base.n_usable
    if (prior.names is None or prior.removal is not None or src is None or base_scale is None
            or n_usable is None or base.n_passages != prior.new_from):
        return None
    base_ends = np.asarray(base.triple_ends)  # one array (whole_sources)
    b_mentions, b_terms, b_relations = src.get("mentions"), src.get(ABOUT_SOURCE), src.get("relations")
    if b_mentions is None or b_terms is None or b_relations is None:
        return None
    old = prior.state
    since = previous_scan.lexicon(len(old.names), prior.new_from, len(passages)) if previous_scan else None
    lexicon = grown_lexicon(passages, old, prior.new_from, since)
    if len(lexicon.ids) != len(lexicon.names):  # a kept lexicon that repeats a base name: not this base's
        lexicon, previous_scan = grown_lexicon(passages, old, prior.new_from), None
    names, n_prior = lexicon.names, lexicon.n_prior
    matcher = NameLookup(names, lexicon.ids, (old.longest, n_prior) if old.longest is not None else None)
    touched = names[n_prior:]  # names new to the lexicon: what they occur in is scanned again
    name_ends = [t.name_ends for t in tables]
    stats, rescanned = endpoint_name_stats(inputs, lexicon, matcher, touched, np.zeros(0, dtype=np.int64))
    ids = _numbering(stats, prior.names, vocab, names, n_prior, old.lex_entity, base.n_entities, len(passages),
                     prior.new_from)
    if ids is None:
        return None
    layout = ids.layout
    # The new triples' ends, and their relations both ways.
    p = prior.shards
    ends_tail = union_ends(vocab.remaps[p:], name_ends[p:], triple_keep[p:], through=ids.entity.astype(np.int32))
    rel = Entries()
    rel_rows, rel_cols = relation_pairs(ends_tail)
    rel.add(rel_rows, rel_cols, np.ones(len(rel_rows)))
    relations = rel.layered(b_relations, layout.n_entities, np.zeros(0, dtype=np.int64))
    del rel, rel_rows, rel_cols  # a build's pairs are every triple's: not kept through the scan
    scan = scan_texts(passages, prior.new_from, inputs.indices, lexicon, matcher, previous_scan)
    spans = span_mentions(inputs, stats, ids.entity, layout.n_entities)
    mentions = _mentions(owner, len(base_ends), ends_tail, b_mentions, base_ends, scan, ids.lex_entity, layout,
                         spans)
    terms, scale = _terms(ids, stats, prior.names, rescanned, lexicon.added, n_prior, b_terms, base_scale)
    new_names = _new_names(base, names, vocab, ids, n_prior)
    if new_names is None:
        return None
    by_name = base_terms_by_name(b_terms, prior.names, ids.lex_entity[:n_prior], ids.base_entity, scale, base_scale)
    stats.entity = ids.entity[:-1].astype(np.int32)
    delta = ResolutionDelta(layout, mentions, terms, relations, scale, ends_tail.astype(np.int32), new_names[0],
                            n_usable + new_names[1], by_name, ner_keys=ner_keys(stats, ids.entity))
    return ResolvedDelta(delta, scan, lexicon, stats, ids, old, matcher.longest,
                         None if spans is None else len(setops.unique(spans)))


def span_mentions(inputs: ResolveInputs, stats: NameStats, entity: np.ndarray, n: int) -> np.ndarray | None:
    """The union's NER span mentions as ``passage * n + entity`` (``entity``: each union name's, -1 last), one per
    live span (repeats kept); None where the index keeps no NER mentions."""
    if stats.first_span is None:
        return None
    rows, names, _ = inputs.live.spans(inputs.vocab.remaps)
    return rows * n + entity[names]


def ner_keys(stats: NameStats, entity: np.ndarray) -> np.ndarray | None:
    """The entities only NER spans name (sorted; :attr:`~gearag.graph.prepared.PreparedGraph.ner_keys`), from
    the names' statistics and entity ids; None where the index keeps no NER mentions."""
    if stats.first_span is None:
        return None
    return np.sort(entity[:-1][stats.span_only()])


def base_terms_by_name(b_terms: Csr, base_stats: NameStats, lex_entity: np.ndarray, base_entity: np.ndarray,
                       scale: np.ndarray, base_scale: np.ndarray) -> TermsByName:
    """The base's terms read with the scales the change moved (the entities whose ``scale[1 + x]`` differs from
    ``base_scale``'s: lexicon names), as :class:`TermsByName` with the other scale ids empty: each name's own
    terms and those of the base's endpoint names containing it (its containment rows searched for them), without
    regrouping every term (~1 s at a million passages). ``lex_entity``: the base's lexicon names' entity ids;
    ``base_entity``: its endpoint names'."""
    n_scales = len(base_scale)
    moved = np.flatnonzero(scale[:n_scales] != base_scale) - 1
    moved_lex = np.flatnonzero(setops.isin(lex_entity, moved))  # the base lexicon names among them
    hit = np.flatnonzero(setops.isin(np.asarray(base_stats.cont_name), moved_lex))
    containing = base_entity[np.searchsorted(base_stats.cont_ptr, hit, side="right") - 1]
    owners = setops.unique(np.concatenate([moved, containing[containing >= 0]]))
    counts, idx, data, sids = b_terms.gather(owners)
    assert sids is not None
    sid = np.asarray(sids, dtype=np.int64)
    read = np.zeros(n_scales, dtype=bool)
    read[1 + moved] = True
    keep = read[sid]
    entity = np.repeat(owners, counts)[keep]
    sid, passages, raw = sid[keep], np.asarray(idx)[keep], np.asarray(data)[keep]
    by = np.argsort(sid, kind="stable")
    indptr = row_offsets(sid, n_scales)
    return TermsByName(indptr, entity[by].astype(np.int32), passages[by].astype(np.int32),
                       raw[by].astype(np.float32))


def _terms(ids: _Numbering, stats: NameStats, base_stats: NameStats, rescanned: np.ndarray,
           added: tuple[np.ndarray, np.ndarray, np.ndarray], n_prior: int, b_terms: Csr,
           base_scale: np.ndarray) -> tuple[LayeredCsr, np.ndarray]:
    """The about-term rows the add changed, and the scale after it (docs/delta.md, "The resolution")."""
    lex_entity, entity = ids.lex_entity, ids.entity
    k, r, w = added
    k = k.astype(np.int64)
    gained = setops.unique(k)
    terms = Entries()
    ent_k = lex_entity[k]
    terms.add(ent_k, r, w, 1 + ent_k)  # every lexicon name's new pages
    # Totals: the base's own pages' weights (tier weights: exact sums) and the new ones.
    old_gained = gained[gained < n_prior]
    at, _, own_w = _own_pages(b_terms, lex_entity[old_gained])
    totals = np.bincount(np.searchsorted(gained, old_gained)[at], weights=own_w, minlength=len(gained)) \
        + np.bincount(np.searchsorted(gained, k), weights=w, minlength=len(gained))  # float64 even when empty
    scale = np.zeros(1 + ids.layout.n_entities)
    scale[: len(base_scale)] = base_scale
    scale[1 + lex_entity[gained]] = 1.0 / totals
    # Endpoint-only names: new ones, and base ones whose containment changed, get whole rows; the others gain a
    # term over each new page of a name they contain.
    n_known = len(base_stats.lex)
    base_ep = np.flatnonzero(stats.live()[:n_known] & (stats.lex[:n_known] < 0) & (ids.base_entity >= 0)
                             & (base_stats.lex < 0))
    scanned = rescanned[rescanned < n_known]
    scanned = scanned[setops.isin(scanned, base_ep)]
    changed = scanned[~_same_cont(base_stats, stats, scanned)]
    w_rows, w_names, w_shares = stats.contained(np.concatenate([changed, ids.new_ep]).astype(np.int64))
    contained_terms(terms, entity[w_rows], w_names, w_shares, n_prior, b_terms, added, lex_entity)
    hit = np.flatnonzero(setops.isin(np.asarray(stats.cont_name), old_gained))  # the one union-size search
    h_rows = np.searchsorted(stats.cont_ptr, hit, side="right") - 1
    grows = setops.isin(h_rows, base_ep) & ~setops.isin(h_rows, changed)
    hit, h_rows = hit[grows], h_rows[grows]
    h_names = np.asarray(stats.cont_name)[hit].astype(np.int64)
    contained_terms(terms, entity[h_rows], h_names, np.asarray(stats.cont_share)[hit], n_prior, None, added,
                    lex_entity)
    kind_changed = lex_entity[n_prior + np.flatnonzero(~ids.fresh)]  # base endpoint-only names, lexicon names now
    replaced = np.concatenate([entity[changed], kind_changed]).astype(np.int64)
    return terms.layered(b_terms, ids.layout.n_entities, replaced), scale


def _mentions(owner: np.ndarray, t_base: int, ends_tail: np.ndarray, b_mentions: Csr, base_ends: np.ndarray,
              scan: TextScan, lex_entity: np.ndarray, layout: NodeLayout, spans: np.ndarray | None) -> LayeredCsr:
    """The mention rows the add changed: the new passages' (triple ends, text matches and NER ``spans``:
    :func:`span_mentions`); a base passage holding every token of a name new since the base (``scan.again``),
    scanned again, gains its new matches, or is replaced where its row lost one (a base row is its triple ends,
    its text matches and its spans)."""
    new_from, n = layout.base_passages, layout.n_entities  # pairs below are ``passage * n + entity``
    owner = np.asarray(owner, dtype=np.int64)
    pairs = [end_mentions(owner[t_base:], ends_tail, n)]
    found = scan.match_rows * n + lex_entity[scan.match_names]
    if spans is not None:  # a span mention is one more found pair: the new rows' and the rows scanned again
        spans = spans[(spans >= new_from * n) | setops.isin(spans // n, scan.again)]
        found = np.concatenate([found, spans])
    pairs.append(found[found >= new_from * n])
    replaced = np.zeros(0, dtype=np.int64)
    if len(scan.again):
        rows = scan.again
        # Each scanned base row as it is now: its triples' ends and its new text matches.
        base_owner = owner[:t_base]
        if ascending(base_owner):  # as extraction writes them: the rows' triples found by bisection
            lo, hi = np.searchsorted(base_owner, rows), np.searchsorted(base_owner, rows, side="right")
            tri = ranges(lo, hi - lo)
        else:
            tri = np.flatnonzero(setops.isin(base_owner, rows))
        now = setops.unique(np.concatenate([end_mentions(base_owner[tri], base_ends[tri], n),
                                            found[found < new_from * n]]))
        counts, idx, _, _ = b_mentions.gather(rows)
        before = setops.unique(np.repeat(rows, counts) * n + np.asarray(idx, dtype=np.int64))
        replaced = setops.unique(setops.setdiff(before, now) // n)  # a row that lost a pair is replaced whole
        whole = setops.isin(now // n, replaced)
        pairs += [now[whole], setops.setdiff(now[~whole], before)]  # the others gain what they did not have
    unique = setops.unique(np.concatenate(pairs))  # a pair once, sorted: an incidence, with nothing to sum
    del pairs
    if not b_mentions.n_rows:  # a build's (over nothing): the incidence's rows as they are
        return LayeredCsr.of_delta(b_mentions, Csr.incidence(unique, layout.n_passages, n))
    return Entries().layered(b_mentions, layout.n_passages, replaced,
                             single=(unique // n, unique % n, np.ones(len(unique)), np.zeros(len(unique), np.int64)))


def _new_names(base: PreparedGraph, names: list[str], vocab: UnionVocab, ids: _Numbering,
               n_prior: int) -> tuple[HashedNames, int] | None:
    """The usable keys of the new entities, hashed beside the base's names
    (:func:`~gearag.graph.prepared.names_beside`), with how many there are; None where a new key's hash is
    another's."""
    fresh = n_prior + np.flatnonzero(ids.fresh)
    keys = [names[i] for i in fresh.tolist()] + strings_at(vocab.items, ids.new_ep)
    return names_beside(base.names, keys, np.concatenate([ids.lex_entity[fresh], ids.entity[ids.new_ep]]))
