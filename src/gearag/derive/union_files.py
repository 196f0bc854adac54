"""A generation's union-size files, and the state the next ``gearag add`` extends (docs/delta.md).

:func:`union_delta` runs the derivations (the triple graph, the resolution,
the optional edge kinds) for an add or a delete over the last generation
written whole, from the state it kept, and writes that state for the next;
:func:`write_from_nothing` runs it over an empty index, for a build and for a
generation the delta cannot say over its base, and writes it whole. An index
that stores no passage graph (``--no-entity-graph``, ``--no-prepared-graph``)
keeps its triple graph alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse

from gearag.config import IndexConfig
from gearag.derive.endpoints import ENDPOINTS_DIR, EndpointTable, UnionTriples, shard_table
from gearag.derive.token_index import RESOLVE_DIR, shard_name_index, shard_token_index
from gearag.derive.triple_graph import KeyCount, KeyStats, TripleInputs, count_keys, triple_graph
from gearag.derive.union_resolve import NameStats, Prior, ResolveInputs
from gearag.derive.union_vocab import UNION_DIR, UnionVocab, common_prefix
from gearag.embed.base import Embedder, make_embedder
from gearag.graph.delta_apply import Deletion, ResolutionDelta, apply_delta, rows_that_differ
from gearag.graph.edge_kinds import EdgeInputs, stored_kinds
from gearag.graph.flatten import flattened
from gearag.graph.passage_graph import GRAPH_DIR
from gearag.graph.prepared import PREPARED, PreparedGraph, empty_prepared
from gearag.graph.transition import Csr
from gearag.model import Passage
from gearag.store.graph import LayeredTripleGraph, TripleGraph, triple_graph_files
from gearag.store.rows import Mapped
from gearag.store.shards import UNION_VERSION
from gearag.store.writer import IndexWriter

#: Where a generation (or a growable plain index) keeps that state: per-shard endpoint tables, the
#: resolution's state and per-shard token indices, the union's vocabularies and statistics.
STATE_DIRS = (ENDPOINTS_DIR, RESOLVE_DIR, UNION_DIR)


def is_state_file(rel: str) -> bool:
    """Whether the index file at ``rel`` is part of that state."""
    return rel.split("/", 1)[0] in STATE_DIRS


def cannot_grow(config: IndexConfig) -> str | None:
    """Why ``gearag add`` cannot extend an index built with ``config`` exactly (None: it can).

    The trees cluster the whole corpus: an add would silently drop them. Every
    edge kind of the passage graph grows (:mod:`gearag.graph.edge_kinds`).
    """
    if config.trees.enabled:
        return "SiReRAG/RAPTOR tree pools (a clustering of the whole corpus)"
    return None


@dataclass(frozen=True)
class ShardColumns:
    """What a generation's derivation reads of one shard (every row, deleted ones included)."""

    name: str
    subjects: Sequence[str]
    objects: Sequence[str]
    #: The passages' texts (for the shard's token index).
    texts: Sequence[str]
    #: Shard passage row → union row (-1: deleted).
    union_rows: np.ndarray
    #: The shard's passages' named-entity spans, read when an edge kind asks (:mod:`gearag.indexing.ner`).
    ner_spans: Callable[[], Sequence[Sequence[str]]]


@dataclass(frozen=True)
class UnionRows:
    """The live rows of the union, in shard order."""

    passages: Sequence[Passage]
    #: Per shard: which of its triples are live.
    triple_keep: Sequence[np.ndarray]
    #: Each live triple's union passage row.
    owner: np.ndarray


def corpus_as_shard(name: str, passages: Sequence[Passage], subjects: Sequence[str], objects: Sequence[str],
                    owner: np.ndarray,
                    ner_spans: Callable[[], Sequence[Sequence[str]]]) -> tuple[list[ShardColumns], UnionRows]:
    """A corpus as the one shard of its union, every passage and triple live (a plain build; the graph a query
    derives for an index that stores none): ``owner``, each triple's passage row."""
    shard = ShardColumns(name, subjects, objects, Mapped(passages, attrgetter("text")), np.arange(len(passages)),
                         ner_spans)
    return [shard], UnionRows(passages, [np.ones(len(owner), dtype=bool)], owner)


def name_encoder(embedder: Callable[[], Embedder], batch: int) -> Callable[[list[str]], np.ndarray]:
    """Entity names → unit rows with ``embedder()`` (loaded on the first call), ``batch`` names per call, as
    the synonym edges are encoded."""

    def encode(keys: list[str]) -> np.ndarray:
        model = embedder()
        return np.concatenate([model.encode(keys[i : i + batch]) for i in range(0, len(keys), batch)] or
                              [np.zeros((0, model.dim), dtype=np.float32)])

    return encode


def edge_counts(entity_edges: dict[str, sparse.csr_matrix], ner: int | None) -> dict[str, int | None]:
    """What a manifest records of the optional edge kinds (None: not stored): the symmetric synonym pairs of
    ``entity_edges`` and the NER mention pairs ``ner``."""
    synonyms = entity_edges.get("synonyms")
    return {"synonym_edges": int(synonyms.nnz // 2) if synonyms is not None else None, "ner_mentions": ner}


def _resolution_inputs(w: IndexWriter, shards: Sequence[ShardColumns], union: UnionRows, triples: UnionTriples,
                       tables_from: Path | None, before: Path | None, done_shards: list[str], prior: Prior,
                       keep_state: bool) -> ResolveInputs:
    """What :func:`~gearag.derive.delta_resolve.resolve_delta` reads: besides the union's passages and triples,
    its vocabulary of endpoint names (``prior.names`` read from ``before`` when there is one), every shard's token
    index of texts and, for the prior's shards, their token indices of names (every shard's written for the next
    add, hard-linked from ``tables_from`` where it has them; an add onto nothing reads none). A build that keeps no
    state makes no index (it scans every text anyway)."""
    names, n_names = _vocab(before, done_shards, "names", [s.name for s in shards], triples.tables,
                            w if keep_state else None)
    if before is not None:
        prior.names = NameStats.read(before, n_names, spans=triples.spanned)
    elif not keep_state:
        return ResolveInputs(union.passages, triples, names, prior)
    name_indices = [shard_name_index(tables_from, s.name, t, w) for s, t in zip(shards, triples.tables, strict=True)]
    indices = [(shard_token_index(tables_from, s.name, s.texts, w), s.union_rows) for s in shards]
    return ResolveInputs(union.passages, triples, names, prior, indices if prior.new_from else [],
                         name_indices[: prior.shards])


class UnionDelta(NamedTuple):
    """What an add changed in a generation, as deltas over it (None: a delta cannot say it)."""

    resolution: ResolutionDelta | None  #: of the entity resolution (:mod:`gearag.derive.delta_resolve`)
    #: The triple graph, as the base's plus a delta; the union's whole where the add moved its hub cut (only for a
    #: generation written whole: ``keep_state``).
    triples: LayeredTripleGraph | TripleGraph | None
    #: What the generation's manifest records of the optional edge kinds (:func:`edge_counts`).
    edges: dict[str, int | None] | None = None
    #: ``overlap=False``: the triple graph, made (and its key statistics written) when called, once the
    #: resolution's delta is applied and let go (``triples`` is then None).
    later: Callable[[], LayeredTripleGraph | TripleGraph] | None = None
    #: Where a delta cannot say the change: why, as a clause for the user ("because ...").
    declined: str | None = None


def union_delta(w: IndexWriter, config: IndexConfig, shards: Sequence[ShardColumns], union: UnionRows,
                before: Path | None, done: dict[str, Any], prior: Prior, base: PreparedGraph,
                base_graph: TripleGraph | None, tables_from: Path | None = None, keep_state: bool = False,
                overlap: bool = True) -> UnionDelta:
    """What the add of the shards after ``prior.shards`` (or the delete ``prior.removal``) changed in generation
    ``before`` (``done``: its manifest; ``base``, ``base_graph``: its prepared graph and triple graph): the
    resolution's delta (:func:`~gearag.derive.delta_resolve.resolve_delta`, a delete's
    :func:`~gearag.derive.delta_delete.resolve_deletion`) and the triple graph's
    (:func:`~gearag.derive.triple_graph.triple_graph` onto ``base_graph``; a delete's from nothing), from the
    state it kept. The per-shard tables and indices they read are written into ``w``, hard-linked from
    ``tables_from`` (default ``before``: the previous generation, a delta one keeps the tables of the shards since
    its base) where it has them. ``keep_state``: the state after the change
    (vocabularies, key and name statistics, the resolve state, in the appending numbering) is written too, for a
    generation that keeps it whole and is the next add's base (a delete always does); else the text scan, for
    the next delta add over the same base, and where the add moves the hub cut or the fallback the delta declines
    (:attr:`UnionDelta.declined`) before it resolves. ``before`` None: an add onto nothing (:func:`write_from_nothing`,
    ``base`` and ``prior`` empty). ``overlap``: the triple graph is made on a second thread beside the
    resolution (an add's wall time counts); False, by ``later`` once the caller has applied and written the
    resolution's delta (a build's peak memory counts: neither step's arrays are then on top of the other's)."""
    from gearag.derive.delta_delete import resolve_deletion
    from gearag.derive.delta_resolve import ResolvedDelta, entity_keys, resolve_delta
    from gearag.derive.delta_scan import TextScan

    deleted = prior.removal is not None
    kinds = stored_kinds(config.resolve)
    if before is not None and done.get("union") != UNION_VERSION:
        return UnionDelta(None, None, declined="the base generation was written by an older gearag")
    tables_from = tables_from or before
    triples = _union_triples(w, shards, union, tables_from, spans=any(k.span_mentions for k in kinds))
    done_shards = done.get("shards") or []

    def graph_inputs() -> TripleInputs:
        keys, n_keys = _vocab(before, done_shards, "keys", [s.name for s in shards], triples.tables,
                              w if keep_state else None)
        return TripleInputs(triples, len(union.passages), keys,
                            None if deleted or before is None else KeyStats.read(before, n_keys),
                            0 if deleted else prior.shards)

    # The triple graph beside the resolution's delta: the base's plus a delta, or where the add moved the hub cut
    # or the capitalisation fallback, for a generation written whole, the union's (its own numbering, apart from
    # the resolution's); a delete's from nothing. Made later, its key vocabulary too (a build's 6.7M keys at 1M
    # are not held through the resolution); beside it, the vocabulary is made here (the writer's thread).
    def make_graph(inputs: TripleInputs,
                   count: KeyCount | None = None) -> tuple[TripleGraph | LayeredTripleGraph, KeyStats] | None:
        return triple_graph(config.graph, inputs, None if deleted else base_graph, prior.new_from,
                            keep_state or before is None, count)

    def made_after() -> LayeredTripleGraph | TripleGraph:
        """The triple graph made whole (a build's, ``overlap=False``), its key statistics written with the state
        (``keep_state``)."""
        made = make_graph(graph_inputs())
        assert made is not None, "a generation written whole holds its triple graph"
        if keep_state:
            made[1].write(w)
        return made[0]

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gearag-graph") as pool:
        pending, counting = None, None
        # A delta generation holds the base's triple graph plus a delta: where the add moves the hub cut (or the
        # fallback) it cannot, and the add's own triples say so. They are counted beside the resolution's inputs;
        # the resolution starts only where the delta can be written.
        if overlap and not keep_state and before is not None:
            if base_graph is None:  # nothing to append the add's triples to
                return UnionDelta(None, None, declined="the base keeps no triple graph")
            keyed_inputs = graph_inputs()
            counting = pool.submit(count_keys, config.graph, keyed_inputs, prior.new_from)
        elif overlap:  # the graph's inputs held by its work item alone (let go when it is made)
            pending = pool.submit(make_graph, graph_inputs())
        inputs = _resolution_inputs(w, shards, union, triples, tables_from, before, done_shards, prior, keep_state)
        if counting is not None:
            count = counting.result()
            if count.moved is not None:
                return UnionDelta(None, None, declined=count.moved)
            pending = pool.submit(make_graph, keyed_inputs, count)
            del keyed_inputs, count, counting  # likewise: not held through the resolution (~0.6 GB at 1M)
        # An add's reads the text scan of the last delta add over the same base (tables_from: the previous
        # generation), if it was.
        resolved = resolve_deletion(inputs, base) if deleted else resolve_delta(
            inputs, base, TextScan.read(tables_from) if tables_from != before and before is not None else None)
        graph = pending.result() if pending is not None else None
    if resolved is None:
        return UnionDelta(None, graph[0] if graph is not None else None, declined=(
            "the base's resolution state cannot take this change as a delta (an older gearag's, or a new "
            "name's hash is another name's)"))
    delta, whole = resolved.delta, {}
    keyed = [k for k in kinds if k.over_keys is not None]
    state = resolved.state() if keyed or keep_state else None  # made once: an add's concatenates every text mention
    if keyed:  # derived again over the keys after the change; the rows that moved are the delta's
        assert state is not None
        named = entity_keys(state, resolved.stats, inputs.vocab.items, delta.layout.n_entities)
        edge_inputs = EdgeInputs(name_encoder(lambda: make_embedder(config.embed.embedder), config.embed.batch))
        whole = {k.name: k.over_keys(named, config.resolve, edge_inputs) for k in keyed if k.over_keys is not None}
        held = base.whole_sources() or {}
        # A kind the base left out (a weight of 0) is not in the delta: the apply declines.
        delta = delta._replace(edges={name: rows_that_differ(rows, Csr(m.indptr, m.indices, m.data, None))
                                      for name, m in whole.items() if (rows := held.get(name)) is not None})
    edges = edge_counts(whole, resolved.ner_mentions)
    if not keep_state:  # an add's delta generation (a delete is kept whole)
        assert isinstance(resolved, ResolvedDelta)
        if before is not None:
            resolved.scan.write(w)
    else:
        assert state is not None
        state.write(w)
        resolved.stats.write(w)
    if not overlap:
        return UnionDelta(delta, None, edges, made_after)
    if graph is not None and keep_state:
        graph[1].write(w)
    return UnionDelta(delta, graph[0] if graph is not None else None, edges)


def write_from_nothing(w: IndexWriter, config: IndexConfig, shards: Sequence[ShardColumns], union: UnionRows,
                       tables_from: Path | None = None,
                       keep_state: bool = True) -> tuple[int, dict[str, float], dict[str, Any]]:
    """The union's triple graph, resolution and state as an add onto an empty index (docs/delta.md, "A
    build"): the delta an add derives (:func:`union_delta`) over :func:`~gearag.graph.prepared.empty_prepared`,
    applied and written whole (:func:`write_flat`); an index that stores no passage graph, its triple graph
    alone. Its graphs are a build's, in a build's numbering. Returns the entity count, timings and notes
    (``edges``: :func:`edge_counts`). ``tables_from``: a generation whose per-shard tables and indices are
    hard-linked where it has them; ``keep_state=False``: the graphs only (a build that is not growable)."""
    res = config.resolve
    started = time.perf_counter()
    if not (res.entity_graph and res.prepared_graph):  # the triple graph alone (a query derives the rest: graph_for)
        live = _union_triples(w, shards, union, tables_from)
        keys, _ = _vocab(None, [], "keys", [s.name for s in shards], live.tables, w if keep_state else None)
        made = triple_graph(config.graph, TripleInputs(live, len(union.passages), keys))
        assert made is not None and isinstance(made[0], TripleGraph)  # no base given: whole
        w.write_files(triple_graph_files(made[0]))
        if keep_state:
            made[1].write(w)
        else:
            _discard_state(w)
        return made[0].n_entities, {"graph": round(time.perf_counter() - started, 3)}, {}
    base = empty_prepared([k.name for k in stored_kinds(res)])
    delta = union_delta(w, config, shards, union, None, {}, Prior.nothing(), base, None, tables_from, keep_state,
                        overlap=False)
    layered = apply_delta(base, delta.resolution) if delta.resolution is not None else None
    assert layered is not None and delta.later is not None, "a delta over nothing declines nothing"
    timings = {"resolve": time.perf_counter() - started}
    # The prepared graph is written and let go before the triple graph is made: a build's peak counts.
    w.write_files(prepared_files(flattened(layered)))
    later, edges = delta.later, delta.edges
    del layered, delta
    timings["write"] = time.perf_counter() - started - timings["resolve"]
    triples = later()
    meta = write_flat(w, None, triples)
    timings["graph"] = time.perf_counter() - started - timings["resolve"] - timings["write"]
    if not keep_state:
        _discard_state(w)
    return triples.n_entities, {k: round(v, 3) for k, v in timings.items()}, {**meta, "edges": edges}


def _discard_state(w: IndexWriter) -> None:
    """Leave the state an add extends (:data:`STATE_DIRS`) out of the index ``w`` writes."""
    for directory in STATE_DIRS:
        w.discard(directory)


def prepared_files(g: PreparedGraph) -> dict[str, Any]:
    """The files of ``g`` under ``graph/prepared/`` (its arrays and ``prepared.json``), by path."""
    prepared = f"{GRAPH_DIR}/{PREPARED}"
    return {f"{prepared}/{file}": values for file, values in g.files().items()} | {
        f"{prepared}/prepared.json": g.meta()}


def write_flat(w: IndexWriter, layered: PreparedGraph | None, triples: LayeredTripleGraph | TripleGraph,
               deletion: Deletion | None = None) -> dict[str, Any]:
    """Write a delta's prepared graph (None: written already) and triple graph (or the union's, where an add moved
    the hub cut) as a full generation's, in the delta's (appending) numbering
    (:func:`~gearag.graph.flatten.flattened`): no resolution arrays, as in a delta generation. The manifest's
    entries that make it a base for the next add."""
    if layered is not None:
        w.write_files(prepared_files(flattened(layered, deletion)))
    w.write_files(triple_graph_files(triples.whole() if isinstance(triples, LayeredTripleGraph) else triples))
    return {"union": UNION_VERSION, "prepared_names": "flattened"}


def _union_triples(w: IndexWriter, shards: Sequence[ShardColumns], union: UnionRows, tables_from: Path | None,
                   spans: bool = False) -> UnionTriples:
    """The union's live triples over every shard's endpoint table (written into ``w``, hard-linked from
    ``tables_from`` where it has the shard's; ``spans``: with their NER span streams)."""
    tables = [shard_table(tables_from, s.name, s.subjects, s.objects, w, s.ner_spans if spans else None)
              for s in shards]
    return UnionTriples(tables, union.triple_keep, union.owner, [s.union_rows for s in shards])


def _vocab(previous: Path | None, previous_shards: list[str], what: str, shards: list[str],
           tables: Sequence[EndpointTable], w: IndexWriter | None) -> tuple[UnionVocab, int]:
    """The union's vocabulary of the tables' ``what`` (keys or names), extended from ``previous``'s (a
    generation of ``previous_shards``) for the leading shards both list, and written into ``w`` (None: not
    written; a delta generation keeps its base's); with how many strings it took from ``previous`` (0: none).

    The tables' own strings are read only for the shards after those.
    """
    prior, p = None, 0
    if previous is not None:
        p = common_prefix(previous_shards, shards)
        prior = UnionVocab.read(previous, what, shards[:p], [t.id_bound(what) for t in tables[:p]],
                                chained=w is None) if p else None
    start = len(prior.remaps) if prior is not None else 0
    vocab = UnionVocab.extend(prior, [getattr(t, what) for t in tables[start:]])
    if w is not None:
        vocab.write(w, what, shards, previous, p if prior is not None else 0)
    return vocab, len(prior.items) if prior is not None else 0
