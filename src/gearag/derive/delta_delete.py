"""The resolve half of a delete: its delta over the generation it deletes from, in that generation's numbering
(docs/delta.md, "A delete"), with the steps an add's delta shares (:mod:`gearag.derive.union_resolve`). An entity
left with no edge keeps its id (a *hole*; ``gearag compact`` renumbers); :func:`gearag.graph.flatten.flattened`
drops the deleted passages' rows (:class:`~gearag.graph.delta_apply.Deletion`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gearag import setops
from gearag.derive.delta_resolve import (
    Entries,
    base_entities,
    base_terms_by_name,
    contained_terms,
    ner_keys,
    span_mentions,
)
from gearag.derive.text_mentions import end_mentions, rows_holding, scanned_again
from gearag.derive.union_resolve import (
    NameStats,
    ResolveInputs,
    ResolveState,
    endpoint_name_stats,
    grown_lexicon,
    shrunk,
)
from gearag.graph.delta_apply import Deletion, ResolutionDelta, entries_of, net_weights
from gearag.graph.layered import NodeLayout
from gearag.graph.prepared import PreparedGraph
from gearag.graph.scaled import ABOUT_SOURCE
from gearag.graph.transition import relation_pairs
from gearag.graph.trie import HashedNames, NameLookup


class ResolvedDeletion(NamedTuple):
    """What :func:`resolve_deletion` gives: the delta, and the state after the delete (in the new passage rows),
    read as :class:`~gearag.derive.delta_resolve.ResolvedDelta`'s is (:meth:`state`)."""

    delta: ResolutionDelta
    after: ResolveState
    stats: NameStats  #: the endpoint names' statistics after the delete, with their entity ids
    #: With NER mentions: how many (passage, entity) pairs the union's spans make (None: the index keeps none).
    ner_mentions: int | None = None

    def state(self) -> ResolveState:
        """The resolve state after the delete: what the generation keeps for the next add."""
        return self.after


def resolve_deletion(inputs: ResolveInputs, base: PreparedGraph) -> ResolvedDeletion | None:
    """What the delete ``inputs.prior.removal`` says changed in the resolution of ``base`` (the prior's prepared
    graph, a full generation's kept as its sources), with the state after it (docs/delta.md, "A delete"). None where a
    delta cannot say it: no prior statistics, a base kept another way, or one whose statistics number other
    entities."""
    passages, prior = inputs.passages, inputs.prior
    src, base_scale, n_usable = base.whole_sources(), base.scale, base.n_usable
    if (prior.removal is None or prior.names is None or src is None or base_scale is None
            or n_usable is None or base.n_passages != len(prior.removal.rows)
            or len(base.triple_ends) != len(prior.removal.triples)):
        return None
    base_ends = np.asarray(base.triple_ends)  # one array (whole_sources)
    b_mentions, b_terms, b_relations = src.get("mentions"), src.get(ABOUT_SOURCE), src.get("relations")
    by_passage = src.get("terms_by_passage")
    if b_mentions is None or b_terms is None or b_relations is None or by_passage is None:
        return None
    removal, old, n_p, e = prior.removal, prior.state, base.n_passages, base.n_entities
    numbered = base_entities(prior.names, old.lex_entity, len(old.names), e)
    if numbered is None:
        return None
    old_lex_entity, base_entity = numbered
    small, vanished, lost, new_id = shrunk(prior, removal, passages)
    lexicon = grown_lexicon(passages, small.state, len(passages))
    names = lexicon.names
    matcher = NameLookup(names, lexicon.ids, (old.longest, len(names)) if old.longest is not None else None)
    stats, rescanned = endpoint_name_stats(inputs._replace(prior=small), lexicon, matcher, vanished, lost)
    # -- entity ids: the base's kept; a vanished lexicon name still an endpoint keeps its id ----------------
    alive = new_id[:-1] >= 0
    lex_entity = np.zeros(len(names), dtype=np.int64)
    lex_entity[new_id[:-1][alive]] = old_lex_entity[alive]
    live = stats.live()
    entity = np.full(len(stats.lex) + 1, -1, dtype=np.int64)
    named = live & (stats.lex >= 0)
    entity[:-1][named] = lex_entity[stats.lex[named]]
    ep = live & (stats.lex < 0)
    entity[:-1][ep] = base_entity[ep]
    if np.any(entity[:-1][ep] < 0):
        return None  # a live name the base did not number
    holes = np.ones(e, dtype=bool)
    holes[lex_entity] = False
    holes[entity[:-1][live]] = False
    holes = np.flatnonzero(holes)
    # -- mentions: deleted rows emptied, rows that held a vanished name's tokens made again ----------------
    dead_rows = np.flatnonzero(removal.rows < 0)
    old_row = np.flatnonzero(removal.rows >= 0)  # new passage row → base row
    again = rows_holding(inputs.indices, vanished) if vanished else set()
    text = scanned_again(passages, small.state.text, again, matcher)
    again_rows = np.fromiter(sorted(again), dtype=np.int64, count=len(again))
    live_triples = removal.triples >= 0
    owner = np.asarray(inputs.live.owner, dtype=np.int64)
    tri = np.flatnonzero(setops.isin(owner, again_rows))
    at = setops.isin(text[0], again_rows)
    spans = span_mentions(inputs, stats, entity, e)
    again_spans = spans[setops.isin(spans // e, again_rows)] if spans is not None else np.zeros(0, np.int64)
    pairs = setops.unique(np.concatenate([end_mentions(owner[tri], base_ends[live_triples][tri], e),
                                          text[0][at].astype(np.int64) * e + lex_entity[text[1][at]], again_spans]))
    mentions = Entries()
    mentions.add(old_row[pairs // e], pairs % e, np.ones(len(pairs)))
    # -- about terms: terms over deleted pages dropped; endpoint names scanned again made whole -------------
    k, r, w = small.state.lex
    scale = np.zeros(1 + e)
    scale[: len(base_scale)] = base_scale
    lost_pages = setops.unique(old.lex[0][removal.rows[old.lex[1]] < 0].astype(np.int64))
    shrinking = new_id[lost_pages]
    shrinking = shrinking[shrinking >= 0]
    totals = np.bincount(k, weights=w, minlength=len(names))
    scale[1 + lex_entity[shrinking]] = 1.0 / totals[shrinking]
    scale[1 + old_lex_entity[~alive]] = 0.0
    whole = rescanned  # live endpoint-only names whose contained names were found again
    _, idx, _, _ = by_passage.gather(dead_rows)
    touched = setops.unique(np.concatenate([np.asarray(idx, dtype=np.int64), holes]))
    cut = touched[~setops.isin(touched, entity[whole]) & ~setops.isin(touched, holes)]  # a hole's row: emptied
    keep = np.ones(n_p, dtype=bool)
    keep[dead_rows] = False
    terms = Entries()
    w_rows, w_names, w_shares = stats.contained(whole.astype(np.int64))
    contained_terms(terms, entity[w_rows], w_names, w_shares, len(names), None, (k.astype(np.int64), old_row[r], w),
                    lex_entity)
    # -- relations: the deleted triples' pairs taken away from their ends' rows -------------------------------
    gone_rows, gone_cols = relation_pairs(np.asarray(base_ends)[~live_triples])
    ends_of = setops.unique(gone_rows)
    row, target, weight, sid = entries_of(b_relations, ends_of)  # summed with the pairs taken away
    row, target, sid, weight = net_weights(*(np.concatenate(p) for p in (
        (row, gone_rows), (target, gone_cols), (sid, np.zeros(len(gone_rows), np.int64)),
        (weight, -np.ones(len(gone_rows))))))
    left = weight > 0  # a pair no triple holds now: dropped
    relations = Entries()
    relations.add(row[left], target[left], weight[left], sid[left])
    del row, target, weight, sid, left
    by_name = base_terms_by_name(b_terms, prior.names, old_lex_entity, base_entity, scale, base_scale)
    dropped = holes[setops.isin(holes, np.asarray(base.names.name_ids, dtype=np.int64))]
    mention_rows = mentions.layered(b_mentions, n_p, setops.union(dead_rows, old_row[again_rows]))
    # The rest of those rows: their terms over live pages (millions of entries at 1M: each copy let go at once).
    row, target, weight, sid = entries_of(b_terms, cut)
    kept = keep[target]
    rest = row[kept], target[kept], weight[kept], sid[kept]
    del row, target, weight, sid, kept
    term_rows = terms.layered(b_terms, e, setops.union(touched, entity[whole]), rest)
    del rest
    delta = ResolutionDelta(NodeLayout.plain(n_p, e), mention_rows, term_rows,
                            relations.layered(b_relations, e, ends_of), scale,
                            np.zeros((0, 2), dtype=np.int32), HashedNames.from_keys([], np.zeros(0, np.int64)),
                            n_usable - len(dropped), by_name,
                            Deletion(removal.rows, removal.triples, dropped), ner_keys=ner_keys(stats, entity))
    stats.entity = entity[:-1].astype(np.int32)
    state = ResolveState(names, small.state.lex, (text[0].astype(np.int64), text[1].astype(np.int32)), matcher.longest,
                         lex_entity)
    return ResolvedDeletion(delta, state, stats, None if spans is None else len(setops.unique(spans)))
