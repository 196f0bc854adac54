"""Reference derivations of the corpus-wide artifacts: what the union derivation must equal.

gearag derives the triple graph (with its hub cut) and the entity resolution
of every index one way: the delta of an add over the last full generation, a
build being that delta over an empty index (:mod:`gearag.derive.union_files`).
These are the straightforward whole-corpus computations it replaced:
``linkable_for`` + ``reference_triple_graph`` and ``resolve_corpus`` (+ the
optional edge kinds over the union's arrays, :func:`with_edge_kinds`, and the
graph arrays stored as an older gearag stored them, :func:`write_graph_arrays`, with the passage graph
prepared from them: ``tests/prepared_oracle.py``), as a build's graph and resolve stages.
:func:`reference_build` builds an index with them, and the tests compare every grown, shrunk and
compacted index with it.
"""

from __future__ import annotations

import dataclasses
import logging
from array import array
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy import sparse

from gearag.config import GraphConfig, IndexConfig, ResolveConfig
from gearag.derive.union_files import edge_counts, name_encoder, prepared_files
from gearag.embed.base import make_embedder
from gearag.graph.edge_kinds import EdgeInputs, stored_kinds
from gearag.graph.hubs import NAMED_SAMPLE, hub_cap, too_few_named
from gearag.graph.passage_graph import GRAPH_DIR, PassageGraphConfig
from gearag.graph.resolve import MIN_CONTAINED_SHARE, build_lexicon, usable_key
from gearag.graph.trie import NameLookup, TokenTrie, name_key, tokens
from gearag.indexing import build_index
from gearag.indexing.bm25 import BM25Stage
from gearag.indexing.embed import EmbedStage
from gearag.indexing.extract import ExtractStage
from gearag.indexing.graph import triple_columns
from gearag.indexing.ner import NerStage
from gearag.indexing.stage import Build, CollectionBuild, TripleColumns
from gearag.indexing.trees import TreesStage
from gearag.model import Passage
from gearag.store.collection import PASSAGES, TRIPLES, CollectionSpec
from gearag.store.graph import TripleGraph
from gearag.store.index import Index, passage_contents
from gearag.store.interface import IndexStore
from gearag.store.passage_ids import write_passages
from gearag.store.writer import IndexWriter
from gearag.text import is_named, normalise_entity
from prepared_oracle import (
    AboutTerms,
    GraphArrays,
    Resolution,
    incidence,
    stored_graph_arrays,
    summed_csr,
)
from prepared_oracle import prepare as reference_prepared

log = logging.getLogger(__name__)


def linkable_for(
    config: GraphConfig, subjects: Sequence[str], objects: Sequence[str], owner: Sequence[int] | np.ndarray,
    n_passages: int,
) -> Callable[[str], bool]:
    """The endpoint filter for ``link_entities`` and ``max_entity_share``, string by string.

    ``named`` falls back to ``all`` for a corpus with almost no capitalised
    endpoints; an endpoint in more than the hub cap's passages links nothing.
    """
    named: Callable[[str], bool] = is_named
    if config.link_entities == "all":
        named = bool
    else:
        sample = list(subjects[:NAMED_SAMPLE]) + list(objects[:NAMED_SAMPLE])
        if too_few_named(sum(map(is_named, sample)), len(sample)):
            named = bool
    if config.max_entity_share >= 1.0:
        return named
    cap = hub_cap(config.max_entity_share, n_passages)
    seen: dict[str, set[int]] = {}
    for s, o, p in zip(subjects, objects, owner, strict=True):
        for e in (s, o):
            if named(e):
                seen.setdefault(normalise_entity(e), set()).add(p)
    hubs = {e for e, rows in seen.items() if len(rows) > cap}
    return lambda e: named(e) and normalise_entity(e) not in hubs


def reference_triple_graph(subjects: Sequence[str], objects: Sequence[str],
                           linkable: Callable[[str], bool] | None = None) -> TripleGraph:
    """The graph over triples ``(subjects[i], ·, objects[i])``, endpoint by endpoint: an endpoint ``linkable``
    refuses (or whose normalised key is empty) gets entity id -1; ids in first-appearance order, every
    subject before every object (``None``: every non-empty endpoint links)."""
    ids: dict[str, int] = {}

    def entity_id(name: str) -> int:
        if linkable is not None and not linkable(name):
            return -1
        key = normalise_entity(name)
        return ids.setdefault(key, len(ids)) if key else -1

    head = np.fromiter((entity_id(s) for s in subjects), dtype=np.int32, count=len(subjects))
    tail = np.fromiter((entity_id(o) for o in objects), dtype=np.int32, count=len(objects))
    return TripleGraph.from_ids(list(ids), head, tail)


class ReferenceGraphStage:
    """Passages, cleaned triples and the triple graph by ``linkable_for`` + ``TripleGraph.build``."""

    name = "graph"

    def run(self, build: Build) -> None:
        assert build.extracted is not None
        cols = triple_columns(build.extracted)
        build.extracted = None
        n = len(build.passages)
        w = build.writer
        write_passages(w, build.passages)
        graph = reference_triple_graph(cols.subjects, cols.objects,
                                       linkable_for(build.config.graph, cols.subjects, cols.objects, cols.owner, n))
        w.write_json("entities.json", graph.entities)
        for name, values in (("triple_head", graph.head), ("triple_tail", graph.tail),
                             ("entity_indptr", graph.indptr), ("entity_indices", graph.indices)):
            w.write_array(f"arrays/{name}.npy", values)
        w.write_jsonl("triples.jsonl", (list(t) for t in zip(cols.subjects, cols.predicates, cols.objects,
                                                              strict=True)), offsets=True)
        owner = np.asarray(cols.owner, dtype=np.int32)
        w.write_array("arrays/triple_passage.npy", owner)
        w.write_array("arrays/passage_triple_indptr.npy", cols.indptr)
        build.triples = TripleColumns.read(w.path("triples.jsonl"), owner, cols.indptr)
        build.collections[PASSAGES] = CollectionBuild(CollectionSpec(PASSAGES, n), passage_contents(build.passages))
        build.collections[TRIPLES] = CollectionBuild(
            CollectionSpec(TRIPLES, len(cols.subjects), sources="arrays/triple_passage.npy"),
            build.triples.lazy_texts(), weights=True)
        build.manifest["counts"] = {"passages": n, "triples": len(cols.subjects), "entities": graph.n_entities}


def resolve_corpus(
    titles: Sequence[str],
    texts: Sequence[str],
    subjects: Sequence[str],
    objects: Sequence[str],
    owner: Sequence[int] | np.ndarray,
    named: Callable[[str], bool],
    *,
    scan_text: bool = True,
    ner_spans: Sequence[Sequence[str]] | None = None,
) -> Resolution:
    """Resolve the whole corpus's mentions in one pass (:mod:`gearag.graph.resolve`'s rules): the reference the union
    derivation (:mod:`gearag.derive.union_resolve`) equals, array for array.

    ``ner_spans``: per passage, the texts of its named-entity spans (an extra
    mention source, stored apart in ``Resolution.ner_mentions``).
    """
    n_passages = len(titles)
    lexicon = build_lexicon(titles, texts)
    keys = list(lexicon)
    ids = {k: i for i, k in enumerate(keys)}
    n_names = len(keys)
    trie = TokenTrie()
    for k, i in ids.items():
        trie.add(k.split(" "), i)

    # Machine-word arrays, not lists: a list holds an int object per entry (~36 bytes; there are several
    # entries per triple), an array 8 bytes. Same values, so the same matrices.
    about_rows = array("q")
    about_cols = array("q")
    about_raw = array("d")
    about_names = array("q")
    totals = np.zeros(n_names)
    for i, k in enumerate(keys):
        cands = lexicon[k]
        totals[i] = sum(cands.values())
        for row, w in cands.items():
            about_rows.append(i)
            about_cols.append(row)
            about_raw.append(w)
            about_names.append(i)

    # Triple endpoints → entity ids (new ids for names the lexicon lacks).
    endpoint_ids: dict[str, int] = {}

    def endpoint(surface: str) -> int:
        if surface in endpoint_ids:
            return endpoint_ids[surface]
        eid = -1
        if named(surface):
            key = name_key(surface)
            if usable_key(key):
                eid = ids.get(key, -1)
                if eid < 0:
                    eid = ids[key] = len(keys)
                    keys.append(key)
                    _contained(key, eid)
        endpoint_ids[surface] = eid
        return eid

    def _contained(key: str, eid: int) -> None:
        toks = key.split(" ")
        for m in trie.scan(toks):
            share = (m.end - m.start) / len(toks)
            if share < MIN_CONTAINED_SHARE:
                continue
            for row, w in lexicon[keys[m.name]].items():
                about_rows.append(eid)
                about_cols.append(row)
                about_raw.append(share * w)
                about_names.append(m.name)

    men_rows = array("q")
    men_cols = array("q")
    ends = np.full((len(subjects), 2), -1, dtype=np.int32)
    for t, (s, o, p) in enumerate(zip(subjects, objects, owner, strict=True)):
        for side, surface in enumerate((s, o)):
            eid = endpoint(surface)
            ends[t, side] = eid
            if eid >= 0:
                men_rows.append(int(p))
                men_cols.append(eid)
    if scan_text and n_names:
        for row, text in enumerate(texts):
            for m in trie.scan(tokens(text), require_capital=True):
                men_rows.append(row)
                men_cols.append(m.name)
    n_keys = len(keys)
    terms = AboutTerms(np.asarray(about_rows, dtype=np.int32), np.asarray(about_cols, dtype=np.int32),
                       np.asarray(about_raw, dtype=np.float32), np.asarray(about_names, dtype=np.int32), totals)
    # Each term normalised from its float64 raw weight (share · w / total, as the terms were always made).
    about = summed_csr((np.asarray(about_raw) / totals[terms.names]).astype(np.float32),
                       terms.rows.astype(np.int64), terms.cols.astype(np.int64), (n_keys, n_passages))
    mentions = incidence(men_rows, men_cols, (n_passages, n_keys))
    res = Resolution(keys, n_names, about, mentions, ends, None, terms)
    return with_span_mentions(res, ner_spans, named) if ner_spans is not None else res


def graph_arrays(titles: Sequence[str], texts: Sequence[str], subjects: Sequence[str], objects: Sequence[str],
                 owner: Sequence[int] | np.ndarray, named: Callable[[str], bool], *,
                 ner_spans: Sequence[Sequence[str]] | None = None) -> GraphArrays:
    """:func:`resolve_corpus` with its relation counts (``ner_spans``: with NER mentions); the optional edge kinds
    are added by ``with_edge_kinds``."""
    return GraphArrays.from_resolution(resolve_corpus(titles, texts, subjects, objects, owner, named,
                                                      ner_spans=ner_spans))


# -- the optional edge kinds and the stored arrays, as the union's derivation made them ---------------------------

class SpanEntities(NamedTuple):
    """What named-entity spans add to a resolution (:func:`span_entities`)."""

    keys: list[str]  #: the entities only the spans name, their ids following the resolution's
    #: Their about terms: entity id, passage, raw weight (the contained name's tier weight times its share), and
    #: the lexicon name each is read through.
    term_rows: np.ndarray
    term_cols: np.ndarray
    term_raw: np.ndarray
    term_names: np.ndarray
    #: The spans' mentions: passage row and entity id, one pair per distinct (span text, passage).
    rows: np.ndarray
    cols: np.ndarray


def span_entities(ids: dict[str, int], n_keys: int, lexicon: NameLookup, own: tuple[np.ndarray, list[int], list[float]],
                  spans: Sequence[Sequence[str]], named: Callable[[str], bool]) -> SpanEntities:
    """Named-entity spans resolved like triple endpoints: a usable name the resolution holds (``ids``: key →
    entity id, ``n_keys`` of them) is that entity; any other becomes a new entity (ids from ``n_keys`` on, in
    order of first appearance) about the pages of the lexicon names it contains (``lexicon``'s scan), weighted
    by the share of its tokens each covers (at least :data:`MIN_CONTAINED_SHARE`). ``own``: per lexicon name,
    its own pages and tier weights (an index pointer over the names, the pages, the weights)."""
    ptr, own_rows, own_w = own
    keys: list[str] = []
    t_rows, t_cols, t_raw, t_names = array("q"), array("q"), array("d"), array("q")
    seen: dict[str, int] = {}

    def entity(surface: str) -> int:
        key = name_key(surface)
        if not named(surface) or not usable_key(key):
            return -1
        eid = ids.get(key, -1)
        if eid < 0:
            eid = ids[key] = n_keys + len(keys)
            keys.append(key)
            toks = key.split(" ")
            for m in lexicon.scan(toks):
                share = (m.end - m.start) / len(toks)
                if share >= MIN_CONTAINED_SHARE:
                    for at in range(int(ptr[m.name]), int(ptr[m.name + 1])):
                        t_rows.append(eid)
                        t_cols.append(own_rows[at])
                        t_raw.append(share * own_w[at])
                        t_names.append(m.name)
        return eid

    rows, cols = array("q"), array("q")
    for row, surfaces in enumerate(spans):
        for surface in surfaces:
            eid = seen.get(surface)
            if eid is None:
                eid = seen[surface] = entity(surface)
            if eid >= 0:
                rows.append(row)
                cols.append(eid)
    return SpanEntities(keys, np.asarray(t_rows, dtype=np.int64), np.asarray(t_cols, dtype=np.int64),
                        np.asarray(t_raw, dtype=np.float64), np.asarray(t_names, dtype=np.int64),
                        np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))


def with_span_mentions(res: Resolution, spans: Sequence[Sequence[str]], named: Callable[[str], bool]) -> Resolution:
    """``res`` with named-entity spans as one more mention source (``span_entities``: the rules a build's delta
    applies), kept apart in ``ner_mentions``. The same arrays whatever passages ``res`` was resolved over in
    which order: the new entities' rows of ``about`` follow the existing ones, which stay as they are."""
    n_passages = int(res.mentions.shape[0])
    if len(spans) != n_passages:
        raise ValueError(f"ner_spans has {len(spans)} rows for {n_passages} passages")
    if res.about_terms is None:
        raise ValueError("the resolution keeps no about terms (one read back from an index's files)")
    terms = res.about_terms
    # Each lexicon name's own passages and tier weights, in insertion order (its terms are grouped by name).
    own = np.flatnonzero(terms.rows < res.n_names)
    own = own[np.argsort(terms.names[own], kind="stable")]
    ptr = np.zeros(res.n_names + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms.names[own], minlength=res.n_names), out=ptr[1:])
    n_before = len(res.keys)
    found = span_entities({k: i for i, k in enumerate(res.keys)}, n_before, NameLookup(list(res.keys[: res.n_names])),
                          (ptr, terms.cols[own].tolist(), terms.raw[own].astype(np.float64).tolist()), spans, named)
    keys = [*res.keys, *found.keys]
    n_keys = len(keys)
    names = found.term_names.astype(np.int32)
    extra = summed_csr((found.term_raw / terms.totals[names]).astype(np.float32), found.term_rows, found.term_cols,
                       (n_keys, n_passages))
    old = res.about
    about = sparse.csr_matrix((np.concatenate([old.data, extra.data]), np.concatenate([old.indices, extra.indices]),
                               np.concatenate([old.indptr, extra.indptr[n_before + 1:] + old.nnz])),
                              shape=(n_keys, n_passages))
    grown = AboutTerms(np.concatenate([terms.rows, found.term_rows.astype(np.int32)]),
                       np.concatenate([terms.cols, found.term_cols.astype(np.int32)]),
                       np.concatenate([terms.raw, found.term_raw.astype(np.float32)]),
                       np.concatenate([terms.names, names]), terms.totals)
    m = res.mentions
    mentions = sparse.csr_matrix((m.data, m.indices, m.indptr), shape=(n_passages, n_keys))
    ner = incidence(found.rows, found.cols, (n_passages, n_keys))
    return Resolution(keys, res.n_names, about, mentions, res.triple_ends, ner, grown)



def with_edge_kinds(arrays: GraphArrays, config: ResolveConfig, inputs: EdgeInputs,
                    ner_spans: Callable[[], Sequence[Sequence[str]]] | None = None) -> GraphArrays:
    """``arrays`` with the edges of every optional kind ``config`` stores, over the union's arrays: NER spans
    (``ner_spans``: per passage) as mentions (:func:`with_span_mentions`; the new entities' rows and columns of the
    relation counts empty), a kind over the keys by its ``over_keys`` over the resolution's keys (in registration
    order)."""
    for kind in stored_kinds(config):
        if kind.span_mentions:  # NER mentions
            assert ner_spans is not None, "NER mentions read the passages' spans"
            res = with_span_mentions(arrays.resolution, ner_spans(), is_named)
            n, r = len(res.keys), arrays.relations
            relations = sparse.csr_matrix((r.data, r.indices, np.concatenate(
                [r.indptr, np.full(n - r.shape[0], r.indptr[-1], dtype=r.indptr.dtype)])), shape=(n, n))
            arrays = dataclasses.replace(arrays, resolution=res, relations=relations)
        else:
            assert kind.over_keys is not None
            edges = kind.over_keys(list(arrays.resolution.keys), config, inputs)
            arrays = dataclasses.replace(arrays, entity_edges={**arrays.entity_edges, kind.name: edges})
    return arrays


def write_graph_arrays(writer: IndexWriter, arrays: GraphArrays, prepare: bool = True) -> None:
    """Store ``arrays`` under ``graph/`` of an index being written, and with ``prepare`` the passage graph
    prepared from them for the default query settings (what an older gearag stored)."""
    writer.write_json(f"{GRAPH_DIR}/entities.json", arrays.meta())
    for name, values in arrays.files().items():
        writer.write_array(f"{GRAPH_DIR}/{name}", values)
    if prepare:
        writer.write_files(prepared_files(reference_prepared(arrays, PassageGraphConfig())))


def index_graph_arrays(index: IndexStore, stored: bool = True) -> GraphArrays:
    """The graph arrays of ``index``: the ones it stores (``stored``), else the reference derivation's over its
    passages and triples, with its synonym edges and without NER mentions (their spans are not read here), as
    a build with the entity graph on would make them; cached per loaded index."""

    def build() -> GraphArrays:
        held = stored_graph_arrays(index) if stored and isinstance(index, Index) else None
        if held is not None:
            return held
        passages, triples = index.passages, index.triples
        arrays = graph_arrays([p.title for p in passages], [p.text for p in passages], triples.subjects,
                              triples.objects, np.asarray(triples.passage), is_named)
        cfg = index.config
        if not (cfg.resolve.synonyms and cfg.resolve.entity_graph):
            return arrays

        resolve = replace(cfg.resolve, ner_mentions=False)
        return with_edge_kinds(arrays, resolve, EdgeInputs(name_encoder(
            lambda: make_embedder(cfg.embed.embedder), cfg.embed.batch)))

    return index.cached("oracle_graph_arrays", build, variant=str(stored))


class ReferenceResolveStage:
    """The entity resolution by ``resolve_corpus`` over the whole corpus, plus the registered edge kinds."""

    name = "resolve"

    def run(self, build: Build) -> None:
        cfg = build.config.resolve
        if not cfg.entity_graph:
            return
        assert build.triples is not None
        cols = build.triples
        arrays = graph_arrays([p.title for p in build.passages], [p.text for p in build.passages],
                              cols.subjects, cols.objects, cols.owner, is_named)

        def spans() -> Sequence[Sequence[str]]:
            assert build.ner_spans is not None
            return build.ner_spans

        arrays = with_edge_kinds(arrays, cfg, EdgeInputs(name_encoder(build.embedder, build.config.embed.batch)),
                                 spans)
        write_graph_arrays(build.writer, arrays, prepare=cfg.prepared_graph)
        ner = arrays.resolution.ner_mentions
        build.manifest["resolve"] = edge_counts(arrays.entity_edges, int(ner.nnz) if ner is not None else None)


REFERENCE_STAGES = (ExtractStage(), NerStage(), ReferenceGraphStage(), ReferenceResolveStage(), TreesStage(),
                    BM25Stage(), EmbedStage())


def reference_build(passages: Sequence[Passage], out: Path, config: IndexConfig) -> Index:
    """An index of ``passages`` whose triple graph and resolution are the reference derivations (no union
    state: the growable flag is irrelevant to it)."""
    return build_index(passages, out, config, stages=REFERENCE_STAGES)
