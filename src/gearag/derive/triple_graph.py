"""The triple graph's one derivation (docs/delta.md, "One derivation per artifact"): the hub cut and entity ids as
array work over the per-shard endpoint tables (:mod:`gearag.derive.endpoints`), keys numbered by the union's
vocabulary (:mod:`gearag.derive.union_vocab`), from nothing or onto a base.

It equals the whole-corpus reference, ``linkable_for`` + ``reference_triple_graph`` in ``tests/oracles.py`` (the
``named`` fallback, the hub cut, entities by first appearance: every subject, then every object).
:class:`KeyStats` is what a generation keeps so that an add counts its own triples alone; onto the base's graph the
result is the base's plus a delta (:class:`~gearag.store.graph.LayeredTripleGraph`), and where the add moves the
hub cut over a base key or flips the fallback, the whole graph, numbered as a build numbers it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gearag import setops
from gearag.config import GraphConfig
from gearag.data.jsonstrings import taken
from gearag.derive.endpoints import EndpointTable, UnionTriples, first_seen, passages_per_key, union_ends
from gearag.derive.union_vocab import UNION_DIR, UnionVocab
from gearag.graph.hubs import NAMED_SAMPLE, hub_cap, too_few_named
from gearag.graph.layered import AppendedRows, LayeredCsr
from gearag.store.graph import AppendedStrings, LayeredTripleGraph, TripleGraph, triple_edges
from gearag.store.npy import kept_arrays
from gearag.store.writer import IndexWriter

#: Each union key's entity id in the triple graph (:class:`KeyStats`).
KEY_ENTITY = "key_entity.npy"
log = logging.getLogger(__name__)


class KeyStats:
    """Per union key, over the live triples of the shards it covers: where the key first appears as a linkable
    subject and object (live triple index, -1: never) and in how many distinct passages (the hub cut's count).

    A generation keeps it (``union/key_*.npy``) for the next: when that one
    only appends shards (same leading shards, same tombstones) it counts the
    new shards' triples alone, which start after every counted one.
    """

    def __init__(self, first: np.ndarray, passages: np.ndarray, named_all: bool,
                 entity: np.ndarray | None = None) -> None:
        self.first = first  #: int64 (K, 2)
        self.passages = passages  #: int64 (K,)
        self.named_all = named_all  #: whether every endpoint counted as a name (linkable_for's fallback)
        #: int32 (K,): each key's entity id in the triple graph (-1: none), when known: what an add onto the
        #: graph reads instead of ordering every key again (docs/delta.md)
        self.entity = entity

    @classmethod
    def grown(cls, prior: KeyStats | None, n_keys: int, named_all: bool) -> KeyStats:
        """``prior`` (or nothing) with rows for keys up to ``n_keys`` (new rows: never seen, no passages)."""
        stats = cls(np.full((n_keys, 2), -1, dtype=np.int64), np.zeros(n_keys, dtype=np.int64), named_all)
        if prior is not None:
            stats.first[: len(prior.first)] = prior.first
            stats.passages[: len(prior.passages)] = prior.passages
        return stats

    def taken(self, rows: np.ndarray) -> KeyStats:
        """The statistics of keys ``rows`` (per new key id, its id here), in that order."""
        return KeyStats(self.first[rows], self.passages[rows], self.named_all,
                        np.asarray(self.entity)[rows] if self.entity is not None else None)

    def write(self, w: IndexWriter) -> None:
        w.write_array(f"{UNION_DIR}/key_first.npy", self.first)
        w.write_array(f"{UNION_DIR}/key_passages.npy", self.passages)
        w.write_json(f"{UNION_DIR}/key_meta.json", {"named_all": self.named_all})
        if self.entity is not None:
            w.write_array(f"{UNION_DIR}/{KEY_ENTITY}", self.entity)

    @classmethod
    def read(cls, directory: Path, n_keys: int) -> KeyStats | None:
        try:
            meta = json.loads((directory / UNION_DIR / "key_meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        arrays = kept_arrays(directory, f"{UNION_DIR}/key_first.npy", f"{UNION_DIR}/key_passages.npy")
        if arrays is None or not isinstance(meta, dict):
            return None
        first, passages = arrays
        if first.shape != (n_keys, 2) or passages.shape != (n_keys,):
            return None
        entity = kept_arrays(directory, f"{UNION_DIR}/{KEY_ENTITY}")  # optional: an older generation has none
        return cls(first, passages, bool(meta.get("named_all")),
                   entity[0] if entity is not None and entity[0].shape == (n_keys,) else None)


def links_all(config: GraphConfig, tables: Sequence[EndpointTable], triple_keep: Sequence[np.ndarray]) -> bool:
    """Whether every endpoint links: ``link_entities=all``, or ``linkable_for``'s fallback
    (:func:`gearag.graph.hubs.too_few_named`) over the union's first ``NAMED_SAMPLE`` live subjects and objects
    (read from the leading shards only)."""
    if config.link_entities == "all":
        return True
    parts, have = [], 0
    for table, keep in zip(tables, triple_keep, strict=True):
        if have >= NAMED_SAMPLE:
            break
        # The live rows among the first ones: a shard's leading rows hold its first live ones (no whole-shard mask).
        n = min(len(keep), NAMED_SAMPLE - have)
        while int(np.count_nonzero(keep[:n])) < NAMED_SAMPLE - have and n < len(keep):
            n = min(len(keep), 2 * n)
        parts.append(table.named[:n][keep[:n]][: NAMED_SAMPLE - have])
        have += len(parts[-1])
    named = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=bool)
    sample = np.concatenate([named[:, 0], named[:, 1]])
    return too_few_named(int(sample.sum()), len(sample))


def hub_keys(config: GraphConfig, passages: np.ndarray, n_passages: int) -> np.ndarray:
    """Keys in more than ``max_entity_share`` of the passages (and 20): hubs, which link nothing (none when the
    cut is off)."""
    if config.max_entity_share >= 1.0:
        return np.zeros(len(passages), dtype=bool)
    return passages > hub_cap(config.max_entity_share, n_passages)


def entity_order(first: np.ndarray, hub: np.ndarray, n_triples: int,
                 keys: np.ndarray | None = None) -> np.ndarray:
    """The keys that are entities, in ``reference_triple_graph``'s order: by first appearance over every subject,
    then every object (``first``: (K, 2) live-triple positions, -1: never; ``n_triples`` live triples).
    ``keys``: only those (seen keys), in that order among themselves."""
    order = np.flatnonzero((first >= 0).any(axis=1) & ~hub) if keys is None else keys[~hub[keys]]
    where = np.where(first[order, 0] >= 0, first[order, 0], n_triples + first[order, 1])
    return order[np.argsort(where, kind="stable")]


class TripleInputs(NamedTuple):
    """What the triple graph reads of the union (:func:`triple_graph`)."""

    live: UnionTriples
    n_passages: int
    keys: UnionVocab  #: the union's vocabulary of keys
    prior: KeyStats | None = None  #: the statistics of the first ``counted`` shards (None: nothing counted)
    counted: int = 0


def named_ends(tables: Sequence[EndpointTable], keep: Sequence[np.ndarray], named_all: bool) -> np.ndarray:
    """(T, 2) per live triple of ``tables``: whether each end counts as a name (every end under the fallback)."""
    parts = [t.named[k] for t, k in zip(tables, keep, strict=True)]
    named = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=bool)
    return np.ones_like(named) if named_all else named


class KeyCount(NamedTuple):
    """The add's triples counted into the key statistics (:func:`count_keys`): what decides whether the base's
    graph can be appended to (:attr:`moved`) before either graph is made."""

    stats: KeyStats  #: the statistics after the add (entity ids set by :func:`triple_graph`)
    hub: np.ndarray  #: per key, whether it is a hub after the add
    new: np.ndarray  #: (T, 2) the counted triples' key ends
    ok: np.ndarray  #: (T, 2) which of those ends counted (names, or every end under the fallback)
    start: int  #: the live index of the first counted triple
    counted: int  #: how many leading shards ``prior`` had counted (0: every triple was counted here)
    prior: KeyStats | None  #: the statistics it started from (None: none were given, or the fallback flipped)
    named_all: bool  #: whether every endpoint counts as a name (``linkable_for``'s fallback)
    #: Why no delta over the base can say the add, in one clause for the user; None: it can.
    moved: str | None


def _moved(config: GraphConfig, hub: np.ndarray, prior: KeyStats | None, flipped: bool,
           base_passages: int) -> str | None:
    """:attr:`KeyCount.moved`: the capitalisation fallback flipped, no statistics to count into, or the hub cut
    (``hub``, after the add) moved over a key of the base (the first ``base_passages`` passages, which ``prior``
    describes)."""
    if prior is None:
        return ("the add flipped the capitalisation fallback (every triple endpoint links when few are "
                "capitalised)" if flipped else "the base keeps no key statistics")
    n_known = len(prior.passages)
    moved = int(np.count_nonzero(hub[:n_known] != hub_keys(config, np.asarray(prior.passages), base_passages)))
    return (f"the add moved the hub cut (--max-entity-share {config.max_entity_share:g}) over {moved:,} of "
            f"the base's entity names") if moved else None


def count_keys(config: GraphConfig, inputs: TripleInputs, base_passages: int = 0) -> KeyCount:
    """The triples after ``inputs.counted`` shards counted into ``inputs.prior`` (all of them where it is None or
    the capitalisation fallback flipped): each key's first appearances and passages, and the hub cut after;
    ``base_passages``: the passages of the counted shards (:attr:`KeyCount.moved` compares the cut with theirs)."""
    (tables, triple_keep, owner, _), vocab = inputs.live, inputs.keys
    named_all = links_all(config, tables, triple_keep)
    prior, counted = inputs.prior, inputs.counted
    flipped = prior is not None and prior.named_all != named_all
    if prior is None or flipped:
        prior, counted = None, 0
    start = inputs.live.live_before(counted)
    new = union_ends(vocab.remaps[counted:], [t.ends for t in tables[counted:]], triple_keep[counted:])
    named = named_ends(tables[counted:], triple_keep[counted:], named_all)
    stats = KeyStats.grown(prior, len(vocab.items), named_all)
    # The new triples counted into the statistics: the keys' first appearances and their passages (in no counted
    # shard, so their pairs add to the counts); ``ok``: which ends counted.
    ok = named & (new >= 0)
    positions = np.arange(start, start + len(new), dtype=np.int64)
    for side in (0, 1):
        first_seen(stats.first[:, side], new[:, side][ok[:, side]], positions[ok[:, side]])
    stats.passages += passages_per_key(new, np.asarray(owner)[start:], ok, len(stats.passages))
    hub = hub_keys(config, stats.passages, inputs.n_passages)
    return KeyCount(stats, hub, new, ok, start, counted, prior, named_all,
                    _moved(config, hub, prior, flipped, base_passages))


def triple_graph(config: GraphConfig, inputs: TripleInputs, base: TripleGraph | None = None, base_passages: int = 0,
                 whole: bool = True, count: KeyCount | None = None) -> tuple[TripleGraph | LayeredTripleGraph,
                                                                            KeyStats] | None:
    """The union's triple graph (module docstring), with the key statistics after it (their entity ids the
    graph's). Only the triples after ``inputs.counted`` shards are counted into ``inputs.prior`` (``count``: when
    the caller counted them already, :func:`count_keys`).

    ``base``: the triple graph of the counted shards (``base_passages`` passages), which ``inputs.prior``
    describes: the result is ``base`` plus a delta wherever the add keeps its hub cut and fallback
    (:attr:`KeyCount.moved`). Else, or without a base, the whole graph; None where ``whole`` is off (a delta
    generation cannot hold it).
    """
    (tables, triple_keep, _, _), vocab = inputs.live, inputs.keys
    count = count if count is not None else count_keys(config, inputs, base_passages)
    stats, hub, new, ok = count.stats, count.hub, count.new, count.ok
    if base is not None and count.prior is not None and count.moved is None:
        appended = _appended(base, count.prior, count, vocab)
        if appended is not None:
            return appended, stats
    if not whole:
        return None
    if count.named_all and config.link_entities != "all":
        log.warning("few capitalised triple endpoints: linking every endpoint (link_entities=all)")
    if count.counted:  # the counted shards' ends too: every live triple is numbered
        new = union_ends(vocab.remaps, [t.ends for t in tables], triple_keep)
        ok = named_ends(tables, triple_keep, count.named_all) & (new >= 0)
    linkable = ok & ~hub[np.maximum(new, 0)]
    order = entity_order(stats.first, hub, len(new))
    entity = np.full(len(vocab.items) + 1, -1, dtype=np.int64)
    entity[order] = np.arange(len(order))
    ids = entity[np.where(linkable, new, len(vocab.items))].astype(np.int32)
    stats.entity = entity[:-1].astype(np.int32)
    # The keys in entity order: gathered as JSON text from a stored vocabulary (entities.json is written as it is).
    return TripleGraph.from_ids(taken(vocab.items, order), ids[:, 0], ids[:, 1]), stats


def _appended(base: TripleGraph, prior: KeyStats, count: KeyCount, vocab: UnionVocab) -> LayeredTripleGraph | None:
    """``base`` with the counted triples appended (the add kept the hub cut over the base's keys), their new keys
    numbered after the base's entities (``count.stats.entity`` set); None where the statistics are not the
    base's."""
    stats, hub, new, ok, start = count.stats, count.hub, count.new, count.ok, count.start
    n_keys, n_known, t_base = len(vocab.items), len(prior.passages), len(base.head)
    if start != t_base:
        return None
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
                              AppendedRows(np.asarray(base.tail), ids[:, 1]), postings)


def corpus_triple_graph(config: GraphConfig, subjects: Sequence[str], objects: Sequence[str], owner: np.ndarray,
                        n_passages: int) -> TripleGraph:
    """The triple graph of one corpus (a shard's own): :func:`triple_graph` over it as the one shard, from
    nothing."""
    table = EndpointTable.compute(subjects, objects)
    vocab = UnionVocab.extend(None, [table.keys])
    live = UnionTriples([table], [np.ones(len(subjects), dtype=bool)], np.asarray(owner))
    out = triple_graph(config, TripleInputs(live, n_passages, vocab))
    assert out is not None and isinstance(out[0], TripleGraph)  # from nothing: whole
    return out[0]
