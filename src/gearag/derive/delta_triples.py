"""The triple graph of an add as its base's plus a delta, from the base's kept key statistics (docs/delta.md).

:func:`triples_delta` gives what the tests' oracle (``triple_graph_delta``)
finds by comparing two full triple graphs (GEAR's beam search, §4.2), from
the add's own triples: the base's entity ids kept, new keys numbered after
them in the union's first-appearance order, the new triples appended, each
entity's new triples appended to its postings. It counts the new triples'
passages per key into the base's :class:`~gearag.derive.union_graph.KeyStats`
as :func:`~gearag.derive.union_graph.union_triple_graph` does; where that
moves the hub cut over the base's keys (a key crossing ``max_entity_share``
of the passages either way, which relinks or unlinks base triples) or flips
the "few capitalised endpoints" fallback, no delta can say the union and
None is returned: a full generation decides.
"""

from __future__ import annotations

import numpy as np

from gearag import setops
from gearag.config import GraphConfig
from gearag.data.jsonstrings import taken
from gearag.derive.union_graph import (
    KeyStats,
    TripleInputs,
    count_keys,
    entity_order,
    hub_keys,
    links_all,
    named_ends,
    union_ends,
)
from gearag.graph.layered import AppendedRows, LayeredCsr
from gearag.store.graph import AppendedStrings, LayeredTripleGraph, TripleGraph, triple_edges


def triples_delta(config: GraphConfig, inputs: TripleInputs, base: TripleGraph,
                  base_passages: int) -> tuple[LayeredTripleGraph, KeyStats] | None:
    """The union's triple graph as ``base``'s plus a delta (module docstring), with the key statistics after
    the add (their entity ids the appending ones): ``inputs.prior`` are the base's key statistics over its
    ``inputs.counted`` shards, ``base_passages`` its passage count. None: a full generation decides."""
    (tables, triple_keep, owner), vocab, prior, counted = inputs.live, inputs.keys, inputs.prior, inputs.counted
    if prior is None or inputs.removal is not None:
        return None
    named_all = links_all(config, tables, triple_keep)
    if named_all != prior.named_all:
        return None
    n_keys, n_known = len(vocab.items), len(prior.passages)
    t_base = len(base.head)
    new = union_ends(vocab.remaps[counted:], [t.ends for t in tables[counted:]], triple_keep[counted:])
    if inputs.live.live_before(counted) != t_base:
        return None  # the statistics are not those of this base's triples
    stats = KeyStats.grown(prior, n_keys, named_all)
    ok = count_keys(stats, new, named_ends(tables[counted:], triple_keep[counted:], named_all),
                    np.asarray(owner)[t_base:], t_base)
    hub = hub_keys(config, stats.passages, inputs.n_passages)
    if np.any(hub[:n_known] != hub_keys(config, np.asarray(prior.passages), base_passages)):
        return None  # the cut moved over the base's keys: its triples would link otherwise
    entity = np.full(n_keys + 1, -1, dtype=np.int64)  # per key, the last: -1 for -1
    if prior.entity is not None:  # kept by the base: its keys need not be ordered again
        entity[:n_known] = prior.entity
        if int(prior.entity.max(initial=-1)) + 1 != base.n_entities:
            return None
    else:
        base_order = entity_order(np.asarray(prior.first), hub[:n_known], t_base)
        if len(base_order) != base.n_entities:
            return None
        entity[base_order] = np.arange(len(base_order), dtype=np.int64)
    positions = np.arange(t_base, t_base + len(new), dtype=np.int64)
    # New entities: keys of the new triples that are not the base's, in the union's order (only their places).
    ends_keys = setops.unique(new[ok])
    fresh = entity_order(stats.first, hub, t_base + len(new), ends_keys[entity[ends_keys] < 0])
    entity[fresh] = base.n_entities + np.arange(len(fresh), dtype=np.int64)
    linkable = ok & ~hub[np.maximum(new, 0)]
    ids = entity[np.where(linkable, new, n_keys)].astype(np.int32)
    # Postings: each new triple under its ends (a self-loop once), appended to the base's rows.
    n_entities = base.n_entities + len(fresh)
    rows, triples = triple_edges(ids.astype(np.int64), positions)
    by = np.lexsort((triples, rows))
    rows, triples = rows[by], triples[by]
    postings = LayeredCsr.over(base.postings_csr(), n_entities, np.zeros(0, dtype=np.int64), rows, triples,
                               np.ones(len(rows), dtype=np.float32), np.zeros(len(rows), dtype=np.int64))
    stats.entity = entity[:-1].astype(np.int32)
    return LayeredTripleGraph(AppendedStrings(base.entities, taken(vocab.items, fresh)),
                              AppendedRows(np.asarray(base.head), ids[:, 0]),
                              AppendedRows(np.asarray(base.tail), ids[:, 1]), postings), stats
