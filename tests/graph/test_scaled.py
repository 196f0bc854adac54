"""The prepared transition with raw weights (gearag.graph.scaled): read as a push reads it, the whole operator's."""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import sparse

from gearag.graph.passage_graph import PassageGraphConfig
from gearag.graph.ppr import PageRankOperator
from gearag.graph.prepared import PreparedGraph, stored_prepared
from gearag.graph.scaled import Scaled, source_degrees
from gearag.graph.transition import Normalised
from oracles import index_graph_arrays
from prepared_oracle import GraphArrays, about_terms, graph_of, prepare, scaled_columns


def _reference(arrays, config: PassageGraphConfig):
    """The transition as a PageRankOperator of the whole bmat adjacency makes it (normalised, float64)."""
    res = arrays.resolution
    mentions = res.mentions.astype(np.float64)
    about_t = (res.about.T * config.about_weight).astype(np.float64)
    to_passage = (mentions * config.backlink_weight + about_t).tocsr()
    to_entity = (mentions + about_t).T.tocsr()
    rel = arrays.relations.astype(np.float64)
    if arrays.synonyms is not None and config.synonym_weight > 0:
        rel = (rel + config.synonym_weight * arrays.synonyms.astype(np.float64)).tocsr()
    p = mentions.shape[0]
    adj = sparse.bmat([[sparse.csr_matrix((p, p)), to_passage], [to_entity, rel]], format="csr")
    return PageRankOperator(adj, dtype=np.float64, columns=True)


def _read(prepared: PreparedGraph) -> sparse.csr_matrix:
    """The prepared columns as a push reads them: row j is column j, each weight scaled and normalised."""
    assert isinstance(prepared.columns, Scaled)
    return prepared.columns.to_csr()


def test_raw_columns_read_as_the_whole_matrix_operators(wiki) -> None:
    """Every column's weights (repeats summed), its number of distinct targets and the dangling nodes equal the
    normalised operator's, for the default and other edge weights, with synonyms too."""
    index, _ = wiki
    held = index_graph_arrays(index)
    # As read back from an index's files: the terms are the normalised weights.
    arrays = GraphArrays(dataclasses.replace(held.resolution, about_terms=None), held.relations, held.entity_edges)
    n = len(arrays.resolution.keys)
    rng = np.random.default_rng(0)
    syn = sparse.random(n, n, density=0.01, random_state=rng, format="csr", dtype=np.float32)
    with_synonyms = GraphArrays(arrays.resolution, arrays.relations, {"synonyms": (syn + syn.T).tocsr()})
    for a, config in ((arrays, PassageGraphConfig()), (arrays, PassageGraphConfig(about_weight=0.0)),
                      (arrays, PassageGraphConfig(backlink_weight=0.3, about_weight=1.7)),
                      (arrays, PassageGraphConfig(backlink_weight=0.0)),
                      (with_synonyms, PassageGraphConfig(synonym_weight=0.7))):
        prepared = prepare(a, config)
        reference = _reference(a, config)
        want = reference.columns.to_csr()  # by columns: row j is column j
        got = _read(prepared)
        assert got.shape == want.shape
        np.testing.assert_allclose(got.toarray(), want.toarray(), rtol=2e-6, atol=1e-9, err_msg=repr(config))
        assert isinstance(prepared.columns, Scaled)
        np.testing.assert_array_equal(prepared.columns.degree, np.diff(want.indptr))
        # The operator over the sources: the same transition for power iteration as for push.
        np.testing.assert_allclose(PageRankOperator.from_columns(prepared.columns).transition.toarray(),
                                   got.T.toarray())
        np.testing.assert_array_equal(prepared.dangling, reference.dangling)


def test_terms_with_their_names_read_as_the_normalised_weights(wiki) -> None:
    """An index's own resolution keeps its about terms (raw, one scale per title name); read through the
    scale they are the normalised about weights, and the columns those the normalised weights give."""
    index, _ = wiki
    stored = index_graph_arrays(index)
    res = stored.resolution
    from gearag.text import is_named
    from oracles import resolve_corpus

    tt = index.triples
    fresh = resolve_corpus([p.title for p in index.passages], [p.text for p in index.passages], tt.subjects,
                           tt.objects, np.asarray(tt.passage), is_named)
    assert fresh.about_terms is not None and abs(fresh.about - res.about).sum() == 0
    terms, scale = about_terms(fresh.about, fresh.about_terms)
    assert terms.sids is not None and len(scale) == fresh.n_names + 1 and int(terms.sids.min()) >= 1
    prepared = prepare(GraphArrays(fresh, stored.relations), PassageGraphConfig())
    plain = prepare(stored, PassageGraphConfig())
    np.testing.assert_allclose(prepared.about_rows(np.arange(len(res.keys))).toarray(),
                               plain.about_rows(np.arange(len(res.keys))).toarray(), rtol=1e-6)
    np.testing.assert_allclose(_read(prepared).toarray(), _read(plain).toarray(), rtol=2e-6, atol=1e-9)
    assert isinstance(prepared.columns, Scaled) and isinstance(plain.columns, Scaled)
    np.testing.assert_array_equal(prepared.columns.degree, plain.columns.degree)


def test_the_sources_are_the_graph_arrays_and_each_column_sums_to_one(wiki) -> None:
    """The mentions and relations are read where the graph arrays are (no copy); the two transposes are made;
    each column with out-edges sums to 1 as read, and the dangling ones have none."""
    index, _ = wiki
    arrays = index_graph_arrays(index)
    res = arrays.resolution
    terms, scale = about_terms(res.about, res.about_terms)
    scaled = scaled_columns(arrays, PassageGraphConfig(), res.mentions, res.about, terms, scale)
    by_name = {s.name: s for s in scaled.sources}
    assert list(by_name) == ["mentions", "backlinks", "terms", "terms_by_passage", "relations"]
    assert by_name["mentions"].rows.indices is res.mentions.indices
    assert by_name["relations"].rows.data is arrays.relations.data and by_name["terms"].rows is terms
    sums = np.asarray(scaled.to_csr().sum(axis=1)).ravel()
    np.testing.assert_allclose(sums[~scaled.dangling], 1.0, rtol=1e-12)
    assert (sums[scaled.dangling] == 0).all()


def test_other_settings_are_derived_from_the_stored_sources(wiki, monkeypatch) -> None:
    """A stored graph weighed otherwise reads as the graph prepared anew under those weights: a weight of 0 drops
    its sources (the degrees counted again), and the entity-only graph joins the relations and mentions sources.
    The NER setting is no change to an index without NER mentions; a source left out cannot come back."""
    from dataclasses import replace

    from gearag.derive import graph_for
    from gearag.derive.graph_for import passage_graph_for

    index, questions = wiki
    stored = stored_prepared(index)
    assert stored is not None and stored.serves(PassageGraphConfig()) and stored.holds_ner is False
    for config in (PassageGraphConfig(about_weight=1.5), PassageGraphConfig(backlink_weight=0.3, about_weight=3.0),
                   PassageGraphConfig(about_weight=0.0), PassageGraphConfig(backlink_weight=0.0),
                   PassageGraphConfig(about_weight=0.0, backlink_weight=0.0, synonym_weight=0.0)):
        fresh = prepare(index_graph_arrays(index), config)
        again = stored.derived(config)
        assert again is not None and again.serves(config), config
        np.testing.assert_allclose(_read(again).toarray(), _read(fresh).toarray(), rtol=2e-6, atol=1e-9)
        np.testing.assert_array_equal(again.dangling, fresh.dangling)
        assert isinstance(again.columns, Scaled) and isinstance(fresh.columns, Scaled)
        np.testing.assert_array_equal(again.columns.degree, fresh.columns.degree)
        assert [s.name for s in again.columns.sources] == [s.name for s in fresh.columns.sources]
    assert isinstance(stored.columns, Scaled)  # every source counted again: the degrees the build stored
    np.testing.assert_array_equal(source_degrees(stored.columns),
                                  stored.columns.degree)
    entity_only = PassageGraphConfig(passage_nodes=False)
    fresh = prepare(index_graph_arrays(index), entity_only)
    again = stored.derived(entity_only)
    assert again is not None and again.serves(entity_only)
    assert isinstance(again.columns, Normalised) and isinstance(fresh.columns, Normalised)
    for name in ("indptr", "indices"):
        np.testing.assert_array_equal(getattr(again.columns.rows, name), getattr(fresh.columns.rows, name))
    np.testing.assert_allclose(np.asarray(again.columns.rows.data), np.asarray(fresh.columns.rows.data), rtol=1e-6)
    np.testing.assert_array_equal(again.dangling, fresh.dangling)
    assert again.mentions is not None and fresh.mentions is not None
    assert abs(again.mentions - fresh.mentions).sum() == 0
    assert stored.serves(PassageGraphConfig(ner_mentions=False))  # no NER mentions held: the same arrays
    assert replace(stored, holds_ner=None).derived(PassageGraphConfig(ner_mentions=False)) is None  # not known
    dropped = stored.derived(PassageGraphConfig(about_weight=0.0))
    assert dropped is not None and dropped.derived(PassageGraphConfig()) is None  # the about terms are gone
    assert stored.derived(PassageGraphConfig()) is None  # served as stored

    def no_build(*args, **kwargs):
        raise AssertionError("the graph was made from the corpus")

    configs = (PassageGraphConfig(backlink_weight=0.5), PassageGraphConfig(about_weight=0.0),
               PassageGraphConfig(passage_nodes=False))
    monkeypatch.setattr(graph_for, "derived_prepared", no_build)
    graphs = [passage_graph_for(index, config) for config in configs]
    monkeypatch.undo()
    for config, graph in zip(configs, graphs, strict=True):
        assert graph.prepared.serves(config)
        reference = graph_of(index_graph_arrays(index), config)
        ranked = [graph.rank(q, k=10) for q in questions]
        assert any(ranked) and ranked == [reference.rank(q, k=10) for q in questions], config
