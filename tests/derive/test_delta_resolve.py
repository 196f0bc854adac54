"""The resolve half of an add that writes a delta equals the brute-force delta of two full resolutions."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

from delta_oracles import entity_map, resolution_delta_of, triple_graph_delta
from gearag.derive.delta_resolve import resolve_delta
from gearag.derive.endpoints import EndpointTable, UnionTriples
from gearag.derive.token_index import TokenIndex
from gearag.derive.union_resolve import NameStats, Prior, ResolveInputs, ResolveState
from gearag.derive.union_vocab import UnionVocab
from gearag.graph.delta_apply import ResolutionDelta, apply_delta
from gearag.graph.layered import LayeredCsr
from gearag.graph.passage_graph import PassageGraph, PassageGraphConfig
from gearag.graph.prepared import empty_prepared, stored_prepared
from gearag.graph.scaled import TermsByName
from gearag.model import Passage
from gearag.store import shards as shard_store
from gearag.text import is_named
from oracles import resolve_corpus
from prepared_oracle import GraphArrays, prepare

BASE = [
    Passage("b0", "Beta", "Beta is a town. The Zed Alpha band played in Beta in 1990 with Zed."),
    Passage("b1", "Gamma Ray (album)", "Gamma Ray is an album by Zed Alpha, recorded in Beta."),
    Passage("b2", "Delta", "Delta was founded near Gamma Ray and Omega Point by Zed."),
    Passage("b3", "Zed", "Zed is a letter, and Zed Beta a town near Delta."),
]
ADDED = [
    Passage("a0", "Zed Alpha", "Zed Alpha is a band from Beta."),  # a base endpoint name becomes a title
    Passage("a1", "Beta (film)", "Beta is a 2001 film set in Delta."),  # a second page for a base title name
    Passage("a2", "Omega Point", "Omega Point is a cape."),  # named in a base text only, in no triple
    Passage("a3", "Zed (film)", "Zed is a film about Gamma Ray and the Kappa Club."),  # a contained name gains a page
]
BASE_TRIPLES = [("Beta", "Zed Alpha Band", 0), ("Delta", "Omega Point Lighthouse", 2), ("Gamma Ray", "Zed Alpha", 1),
                ("Zed Beta", "Delta", 3), ("Zed Quartet", "Beta", 0)]
ADDED_TRIPLES = [("Zed Alpha", "Beta", 0), ("Beta", "Delta", 1), ("Kappa Club", "Zed", 3),
                 ("Zed Quartet", "Gamma Ray", 3), ("Omega Point", "Delta", 2)]


class _Built(NamedTuple):
    """A build's resolution: the state and endpoint-name statistics an add extends, and its entity keys."""

    state: ResolveState
    stats: NameStats
    keys: list[str]


def _resolve(passages, tables, keeps, owner, vocab, pairs):
    """A build of ``passages`` (``pairs``: each live triple's subject and object, ``owner`` their rows): the state
    an add extends, from the delta over nothing, and the oracle's keys and prepared graph (``resolve_corpus``,
    which the build's must equal: tested below)."""
    live = UnionTriples(tables, keeps, owner)
    resolved = resolve_delta(ResolveInputs(passages, live, vocab, Prior.nothing()), empty_prepared([]))
    assert resolved is not None
    res = resolve_corpus([p.title for p in passages], [p.text for p in passages], [s for s, _ in pairs],
                         [o for _, o in pairs], list(owner), is_named)
    prepared = prepare(GraphArrays.from_resolution(res), PassageGraphConfig())
    return _Built(resolved.state(), resolved.stats, list(res.keys)), prepared


def _pairs(*shards):
    return [(t[0], t[1]) for shard in shards for t in shard]


def _weights(m, rows) -> list[dict]:
    counts, idx, data, sids = m.gather(np.asarray(rows, dtype=np.int64))
    sids = np.zeros(len(idx), np.int64) if sids is None else sids
    out, at = [], 0
    for c in counts.tolist():
        row: dict = {}
        for t, d, s in zip(idx[at : at + c].tolist(), data[at : at + c].tolist(), sids[at : at + c].tolist(),
                           strict=True):
            row[(t, s)] = row.get((t, s), 0.0) + d
        out.append(row)
        at += c
    return out


def assert_same_delta(got: ResolutionDelta, want: ResolutionDelta) -> None:
    """Equal row by row (each row's weight per target and scale id), scales, triple ends and names."""
    assert got.layout == want.layout
    for name in ("mentions", "terms", "relations"):
        g, w = getattr(got, name), getattr(want, name)
        assert isinstance(g, LayeredCsr) and g.n_rows == w.n_rows, name
        for part in ("indptr", "indices", "data"):  # the same base (perhaps its files mapped twice)
            np.testing.assert_array_equal(np.asarray(getattr(g.base, part)), np.asarray(getattr(w.base, part)))
        # Rows neither delta lists read the same base row in both: the others are compared.
        rows = np.flatnonzero((np.asarray(g.where) >= 0) | (np.asarray(w.where) >= 0))
        for r, a, b in zip(rows.tolist(), _weights(g, rows), _weights(w, rows), strict=True):
            assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-6 * abs(b[k]) for k in b), (name, r, a, b)
    np.testing.assert_array_equal(got.scale, want.scale)
    np.testing.assert_array_equal(got.ends_tail, want.ends_tail)
    assert got.n_usable == want.n_usable
    for part in ("nodes", "name_hashes", "name_ids"):
        np.testing.assert_array_equal(np.asarray(getattr(got.names, part)), np.asarray(getattr(want.names, part)),
                                      err_msg=part)


def assert_same_triples(got, want) -> None:
    """Two triple graphs as a base's plus a delta: the same entity keys, triple ends and postings (or neither:
    the add moved the hub cut)."""
    assert (got is None) == (want is None)
    if got is None:
        return
    assert list(got.entities) == list(want.entities)
    for part in ("head", "tail"):
        np.testing.assert_array_equal(getattr(got, part).whole(), getattr(want, part).whole(), err_msg=part)
    g, w = got.postings, want.postings
    assert g.n_rows == w.n_rows
    rows = np.flatnonzero((np.asarray(g.where) >= 0) | (np.asarray(w.where) >= 0))
    gc, gi, _, _ = g.gather(rows)
    wc, wi, _, _ = w.gather(rows)
    np.testing.assert_array_equal(gc, wc)
    np.testing.assert_array_equal(gi, wi)


def _tables(triples):
    s, o, owner = (list(x) for x in zip(*triples, strict=True))
    return EndpointTable.compute(s, o), np.ones(len(s), bool), owner


def _small(added: list[Passage], added_triples: list[tuple[str, str, int]]):
    """The resolve half's delta of adding ``added`` to BASE, the brute-force one, both prepared graphs and the
    entity map."""
    t0, keep0, w0 = _tables(BASE_TRIPLES)
    t1, keep1, w1 = _tables(added_triples)
    w1 = [w + len(BASE) for w in w1]
    base, base_p = _resolve(BASE, [t0], [keep0], np.asarray(w0), UnionVocab.extend(None, [t0.names]),
                            _pairs(BASE_TRIPLES))
    union = BASE + added
    owner = np.asarray(w0 + w1)
    union_r, union_p = _resolve(union, [t0, t1], [keep0, keep1], owner, UnionVocab.extend(None, [t0.names, t1.names]),
                                _pairs(BASE_TRIPLES, added_triples))
    index = (TokenIndex.compute([p.text for p in BASE]), np.arange(len(BASE)))
    names = TokenIndex.compute(t0.names, lambda k: k.split(" "))
    prior = Prior(base.state, len(BASE), 1, base.stats)
    resolved = resolve_delta(ResolveInputs(union, UnionTriples([t0, t1], [keep0, keep1], owner),
                                           UnionVocab.extend(None, [t0.names, t1.names]), prior, [index], [names]),
                             base_p)
    assert resolved is not None
    got = resolved.delta
    entity_of = entity_map(base.keys, union_r.keys)
    want = resolution_delta_of(base_p, union_p, entity_of)
    return got, want, base_p, union_p, entity_of


@pytest.fixture(scope="module")
def small():
    return _small(ADDED, ADDED_TRIPLES)


def test_an_add_of_new_names_only_is_the_brute_force_delta() -> None:
    """No base name gains a page, no base text names a new title: only new rows and appended relations."""
    got, want, _, _, _ = _small([Passage("c0", "Sigma Field", "Sigma Field is a stadium near Rho."),
                                 Passage("c1", "Rho", "Rho is a village.")],
                                [("Sigma Field", "Rho", 0), ("Rho", "Beta", 1)])
    assert got is not None and want is not None
    assert_same_delta(got, want)


def test_an_adds_resolution_delta_is_the_brute_force_ones(small) -> None:
    """A base endpoint name that gained a page, a base title name with a second page, a name contained in
    endpoint names gaining a page, a base text naming a new title: each row as the union's."""
    got, want, base_p, _, _ = small
    assert got is not None and want is not None
    assert_same_delta(got, want)
    listed = np.asarray(got.terms.where)[: base_p.n_entities] >= 0
    assert listed.any() and (~np.asarray(got.terms.appends)[: base_p.n_entities][listed]).any()  # some replaced
    assert (np.asarray(got.mentions.where)[: base_p.n_passages] >= 0).any()  # a base text scanned again


def test_the_applied_delta_ranks_as_the_union(small) -> None:
    got, want, base_p, union_p, _ = small
    terms = next(s.rows for s in base_p.columns.sources if s.name == "terms")
    by_name = TermsByName.of(terms, len(base_p.columns.scale))
    # The resolve half's own terms by scale (only the moved scales') against the base's whole regrouping.
    layered, expected = apply_delta(base_p, got), apply_delta(base_p, want._replace(by_name=by_name))
    assert layered is not None and expected is not None
    np.testing.assert_allclose(layered.columns.sums, expected.columns.sums, rtol=1e-12)
    np.testing.assert_array_equal(layered.columns.degree, expected.columns.degree)
    pl, pu = PassageGraph(layered), PassageGraph(union_p)
    for q in ("Which band from Beta recorded Gamma Ray?", "What cape is near Delta?", "Where was Zed filmed?"):
        assert pl.rank(q, k=5) == pu.rank(q, k=5), q


@pytest.mark.parametrize("hub_share", [0.005, 1.0])  # at this size the first cut moves (no triple graph delta)
def test_an_add_onto_a_generation_gives_the_union_generations_delta(tmp_path, monkeypatch, hub_share: float) -> None:
    """On a real slice: a sharded index's generation as the base, an add of 2Wiki pages and of second pages for
    base titles, then another add; the resolution delta from the base's kept state is the union generation's
    after each (after two adds, the cumulative delta: both shards resolved as new against the base)."""
    import shutil
    from dataclasses import replace

    from conftest import StubExtractor, use_stub_extractor, wiki_slice
    from gearag.config import IndexConfig
    from gearag.derive.delta_scan import TextScan
    from gearag.indexing import build_index
    from gearag.indexing.delta_generation import DeltaConfig
    from gearag.indexing.generation import generation_delta
    from gearag.indexing.incremental import _load_state, add_documents
    from gearag.store.index import Index, read_manifest
    from gearag.store.shards import GENERATIONS_DIR
    from gearag.store.writer import IndexWriter
    from numbering import union_generations
    from oracles import index_graph_arrays

    use_stub_extractor(StubExtractor())
    rows, _ = wiki_slice(200, 12)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    config = IndexConfig.of(extractor="stub")
    build_index(passages[:100], tmp_path / "base", replace(config, graph=replace(config.graph,
                                                                               max_entity_share=hub_share)))

    # The union's generations (full ones, numbered as a build numbers them): the brute force's reference.
    union_generations(monkeypatch)
    full = DeltaConfig(write="full")
    base = add_documents(tmp_path / "base", passages[100:130], delta=full)  # with the state an add extends
    shutil.copytree(tmp_path / "base", tmp_path / "union")
    namesakes = [Passage(f"n{i}", f"{p.title} (film)", f"{p.title} is a film. {p.text[:200]}")
                 for i, p in enumerate(passages[:130:9])]
    generation = _load_state(tmp_path / "base", read_manifest(tmp_path / "base")).generation
    before = tmp_path / "base" / GENERATIONS_DIR / generation
    b = stored_prepared(Index.load(tmp_path / "base"))
    base_keys = list(index_graph_arrays(base).resolution.keys)
    # One add, then a second: the delta of both from the base (cumulative, computed again from the base's state).
    for n_add, added in enumerate((passages[130:170] + namesakes, passages[170:])):
        union = add_documents(tmp_path / "union", added, delta=full)
        state = _load_state(tmp_path / "union", read_manifest(tmp_path / "union"))
        assert len(state.refs) == 3 + n_add
        previous = tmp_path / "scratch0" if n_add else None
        expected = triple_graph_delta(base.graph, union.graph)
        moved = hub_share < 1.0
        assert (expected is None) == moved  # "it" became a hub: its base triples unlinked
        if moved:  # a delta generation cannot hold that: it declines, from the add's triples, before resolving
            with IndexWriter(tmp_path / f"declined{n_add}") as w:
                declined = generation_delta(w, state.refs, state.shards, state.tombstones, state.config, before,
                                            previous=previous)
            assert declined.resolution is None and "moved the hub cut" in (declined.declined or "")
        # The second add through the first's text scan (a delta generation keeps it for the next delta add); kept
        # whole where the cut moved, with the union's triple graph.
        with IndexWriter(tmp_path / f"scratch{n_add}") as w:
            delta = generation_delta(w, state.refs, state.shards, state.tombstones, state.config, before,
                                     previous=previous, keep_state=moved)
            w.commit({"kind": "generation", "tables": shard_store.TABLES_VERSION})
        assert moved or TextScan.read(tmp_path / f"scratch{n_add}") is not None
        got, triples = delta.resolution, delta.triples
        entity_of = entity_map(base_keys, list(index_graph_arrays(union).resolution.keys))
        want = resolution_delta_of(b, stored_prepared(union), entity_of)
        assert got is not None and want is not None
        assert_same_delta(got, want)
        if moved:
            assert triples is not None and list(triples.entities) == list(union.graph.entities)
            for part in ("head", "tail"):
                np.testing.assert_array_equal(getattr(triples, part), getattr(union.graph, part), err_msg=part)
        else:
            assert_same_triples(triples, expected)
        layout, terms = got.layout, got.terms
        touched = np.asarray(terms.where)[: layout.base_entities] >= 0
        appended = np.asarray(terms.appends)[: layout.base_entities][touched]
        assert layout.n_entities > layout.base_entities and appended.sum() > 10 and (~appended).any()
    # A base an older gearag wrote keeps no entity ids of its names and keys: they are ordered again, the same.
    for kept in ("union/name_entity.npy", "union/key_entity.npy"):
        (before / kept).unlink()
    with IndexWriter(tmp_path / "scratch-old") as w:
        again = generation_delta(w, state.refs, state.shards, state.tombstones, state.config, before,
                                 keep_state=moved)
    assert again.resolution is not None
    assert_same_delta(again.resolution, want)
    if not moved:
        assert_same_triples(again.triples, expected)


ADDED2 = [
    Passage("c0", "Zed Alpha (album)", "Zed Alpha is an album by the Zed Alpha band, named after Omega Point."),
    Passage("c1", "Omega Point (film)", "Omega Point is a film shot in Beta and at the Kappa Club."),
    Passage("c2", "Kappa Club", "Kappa Club is a club in Zed Beta."),  # an endpoint-only name becomes a title
]
ADDED2_TRIPLES = [("Zed Alpha", "Omega Point", 0), ("Omega Point Lighthouse", "Kappa Club", 1),
                  ("Kappa Club", "Zed Beta", 2), ("Zed Alpha Band", "Delta", 0)]


def test_a_delta_over_a_flattened_delta_ranks_as_the_union() -> None:
    """An add as a delta, flattened into a plain prepared graph in its appending numbering (the first add's
    title names numbered after the base's endpoint-only names), then a second add as a delta over that: ranks
    as the union of all three, and so does the flattened graph as the first union."""
    from gearag.graph.flatten import flattened

    shards = [_tables(BASE_TRIPLES), _tables(ADDED_TRIPLES), _tables(ADDED2_TRIPLES)]
    parts, starts = [BASE, ADDED, ADDED2], np.cumsum([0, len(BASE), len(ADDED), len(ADDED2)])
    tables, keeps = [t for t, _, _ in shards], [k for _, k, _ in shards]
    owners = [np.asarray(w) + starts[i] for i, (_, _, w) in enumerate(shards)]
    indices = [(TokenIndex.compute([p.text for p in part]), np.arange(starts[i], starts[i + 1]))
               for i, part in enumerate(parts)]
    name_indices = [TokenIndex.compute(t.names, lambda k: k.split(" ")) for t in tables]

    def union_of(n: int):
        """The first ``n`` shards: their passages, live triples and vocabulary; their union's resolution."""
        passages = [p for part in parts[:n] for p in part]
        live = UnionTriples(tables[:n], keeps[:n], np.concatenate(owners[:n]))
        vocab = UnionVocab.extend(None, [t.names for t in tables[:n]])
        return passages, live, vocab, _resolve(passages, tables[:n], keeps[:n], live.owner, vocab,
                                               _pairs(*[BASE_TRIPLES, ADDED_TRIPLES, ADDED2_TRIPLES][:n]))

    questions = ("Which band from Beta recorded Gamma Ray?", "What film was shot at the Kappa Club?",
                 "Which album is named after Omega Point?", "Where is Zed Beta?")
    base, base_p = union_of(1)[3]
    passages, live, vocab, (_, union_p) = union_of(2)
    first = resolve_delta(ResolveInputs(passages, live, vocab, Prior(base.state, len(BASE), 1, base.stats),
                                        indices[:2], name_indices[:1]), base_p)
    assert first is not None
    layered = apply_delta(base_p, first.delta)
    assert layered is not None
    flat = flattened(layered)
    assert flat.layout.plain_layout and flat.n_entities == layered.n_entities
    state = first.state()
    assert state.lex_entity is not None  # title names new to the base come after its endpoint-only names
    for q in questions:
        assert PassageGraph(flat).rank(q, k=5) == PassageGraph(layered).rank(q, k=5) == \
            PassageGraph(union_p).rank(q, k=5), q
    passages, live, vocab, (_, union2_p) = union_of(3)
    second = resolve_delta(ResolveInputs(passages, live, vocab, Prior(state, len(BASE) + len(ADDED), 2, first.stats),
                                         indices, name_indices[:2]), flat)
    assert second is not None
    layered2 = apply_delta(flat, second.delta)
    assert layered2 is not None
    for q in questions:
        assert PassageGraph(layered2).rank(q, k=5) == PassageGraph(union2_p).rank(q, k=5), q
    # Every node's column sum and degree as the union's, through the map of the two numberings.
    nodes = np.asarray(layered2.columns.sums), np.asarray(union2_p.columns.sums)
    assert sorted(np.round(nodes[0], 9)) == sorted(np.round(nodes[1], 9))


def test_the_delta_over_an_empty_base_is_the_build() -> None:
    """A build as an add onto nothing (docs/delta.md): every passage new over an empty base,
    the appending numbering is the build's (lexicon names, then endpoint-only names by first appearance) and
    the flattened graph holds the build's edges, weights, scales, sums, degrees, names and triple ends."""
    from gearag.graph.flatten import flattened
    from gearag.graph.prepared import empty_prepared

    t0, keep0, w0 = _tables(BASE_TRIPLES)
    t1, keep1, w1 = _tables(ADDED_TRIPLES)
    passages, owner = BASE + ADDED, np.asarray(w0 + [w + len(BASE) for w in w1])
    vocab = UnionVocab.extend(None, [t0.names, t1.names])
    built, built_p = _resolve(passages, [t0, t1], [keep0, keep1], owner, vocab, _pairs(BASE_TRIPLES, ADDED_TRIPLES))
    indices = [(TokenIndex.compute([p.text for p in BASE]), np.arange(len(BASE))),
               (TokenIndex.compute([p.text for p in ADDED]), np.arange(len(BASE), len(passages)))]
    empty = empty_prepared([])
    resolved = resolve_delta(ResolveInputs(passages, UnionTriples([t0, t1], [keep0, keep1], owner), vocab,
                                           Prior.nothing(), indices), empty)
    assert resolved is not None
    layered = apply_delta(empty, resolved.delta)
    assert layered is not None
    flat = flattened(layered)
    keys = dict(zip(resolved.ids.lex_entity.tolist(), resolved.lexicon.names, strict=True))
    for i, e in enumerate(resolved.ids.entity[:-1].tolist()):
        if e >= 0:
            keys.setdefault(e, vocab.items[i])
    assert [keys[e] for e in range(len(keys))] == built.keys  # the build's numbering
    assert (flat.n_passages, flat.n_entities, flat.n_usable) == (built_p.n_passages, built_p.n_entities,
                                                                 built_p.n_usable)
    for got, want in zip(flat.columns.sources, built_p.columns.sources, strict=True):
        assert got.meta() == want.meta()
        rows = np.arange(want.rows.n_rows)
        assert _weights(got.rows, rows) == _weights(want.rows, rows), got.name
    cols, want_cols = flat.columns, built_p.columns
    np.testing.assert_allclose(cols.sums, want_cols.sums, rtol=1e-12)
    np.testing.assert_array_equal(cols.degree, want_cols.degree)
    np.testing.assert_array_equal(np.asarray(cols.scale)[: len(want_cols.scale)], want_cols.scale)
    np.testing.assert_array_equal(flat.specificity, built_p.specificity)
    np.testing.assert_array_equal(flat.triple_ends, built_p.triple_ends)
    assert sorted(zip(flat.names.name_hashes.tolist(), flat.names.name_ids.tolist(), strict=True)) == sorted(
        zip(built_p.names.name_hashes.tolist(), built_p.names.name_ids.tolist(), strict=True))
