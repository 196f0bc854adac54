"""The edge-kind registry (gearag.graph.edge_kinds): what it accepts, and the transition made from it."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from scipy import sparse

from gearag.graph import edge_kinds
from gearag.graph.edge_kinds import (
    EDGE_KINDS,
    EdgeKind,
    TransitionSource,
    register_edge_kind,
    transition_source,
    transition_sources,
)
from gearag.graph.passage_graph import PassageGraph, PassageGraphConfig
from gearag.graph.prepared import WEIGHTS, PreparedGraph
from gearag.graph.scaled import SCALED_SOURCES, WEIGHT_SETTINGS, Scaled
from gearag.graph.transition import Normalised
from oracles import index_graph_arrays
from prepared_oracle import GraphArrays, prepare, relations


def _same_first_token(keys, config, inputs):  # a toy kind over the keys: names that start alike, joined
    first = [k.split(" ", 1)[0] if k else None for k in keys]
    rows, cols = [], []
    for i, a in enumerate(first):
        for j, b in enumerate(first):
            if a is not None and a == b and i != j:
                rows.append(i)
                cols.append(j)
    return sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(keys), len(keys)))


@pytest.mark.parametrize("kind, message", [
    (EdgeKind("mentions", None), "registered already"),
    (EdgeKind("x", "no_such_switch", over_keys=_same_first_token), "no setting"),
    (EdgeKind("x", "synonyms"), "a derivation"),
    (EdgeKind("x", None, over_keys=_same_first_token), "a derivation"),
    (EdgeKind("x", None, (TransitionSource("relations", False, False),)), "registered already"),
    (EdgeKind("x", None, (TransitionSource("y", False, True, transpose_of="z"),)), "not registered"),
])
def test_registration_refuses_what_the_transition_could_not_read(kind: EdgeKind, message: str) -> None:
    before = dict(EDGE_KINDS)
    with pytest.raises(ValueError, match=message):
        register_edge_kind(kind)
    assert before == EDGE_KINDS


def test_the_settings_tables_are_the_registrys() -> None:
    names = [src.name for src in transition_sources()]
    assert len(names) == len(set(names))
    assert set(SCALED_SOURCES) == {s.name for s in transition_sources() if s.scaled}
    assert {s.name: s.weight for s in transition_sources() if s.weight is not None} == WEIGHT_SETTINGS
    assert set(WEIGHTS) == set(WEIGHT_SETTINGS.values())
    for src in transition_sources():
        assert transition_source(src.name) is src
        if src.transpose_of is not None:  # a transpose runs the other way, after its source
            base = transition_source(src.transpose_of)
            assert (src.of_passages, src.to_passages) == (base.to_passages, base.of_passages)
            assert names.index(base.name) < names.index(src.name)
    with pytest.raises(KeyError):
        transition_source("no such source")


def test_the_transition_holds_the_registered_sources_it_weighs_in_registry_order(wiki) -> None:
    """One source per registered source the graph holds, in registry order, each with its setting's weight; a
    weight of 0 leaves a source (and no other) out."""
    index, _ = wiki
    arrays = index_graph_arrays(index)
    for config in (PassageGraphConfig(), PassageGraphConfig(backlink_weight=0.3, about_weight=1.7),
                   PassageGraphConfig(backlink_weight=0.0), PassageGraphConfig(about_weight=0.0)):
        columns = prepare(arrays, config).columns
        assert isinstance(columns, Scaled)
        want = [s for s in transition_sources() if s.name != "synonyms"  # the index stores none
                and (s.weight is None or getattr(config, s.weight) > 0)]
        assert [s.name for s in columns.sources] == [s.name for s in want]
        for got, kind in zip(columns.sources, want, strict=True):
            assert (got.of_passages, got.to_passages) == (kind.of_passages, kind.to_passages)
            assert got.weight == (1.0 if kind.weight is None else getattr(config, kind.weight))
            assert (got.rows.sids is not None) == kind.scaled


def test_a_new_kind_is_one_registration(wiki, monkeypatch, tmp_path) -> None:
    """A kind registered with one entity → entity source reaches the transition (its edges, at weight 1, beside the
    relations), the entity-only graph, the stored graph arrays and the stored prepared graph; nothing else is
    edited."""
    index, questions = wiki
    kind = EdgeKind("co_mentions", "synonyms",
                    (TransitionSource("co_mentions", of_passages=False, to_passages=False),), _same_first_token)
    monkeypatch.setattr(edge_kinds, "EDGE_KINDS", dict(EDGE_KINDS))  # the registration is this test's only
    register_edge_kind(kind)
    plain_arrays = index_graph_arrays(index)
    co = _same_first_token(list(plain_arrays.resolution.keys), None, None)
    arrays = replace(plain_arrays, entity_edges={**plain_arrays.entity_edges, "co_mentions": co})
    config = PassageGraphConfig()
    prepared = prepare(arrays, config)
    columns = prepared.columns
    assert isinstance(columns, Scaled) and [s.name for s in columns.sources][-1] == "co_mentions"
    plain = prepare(index_graph_arrays(index), config).columns
    assert isinstance(plain, Scaled)
    # The entity rows of the transition gain exactly the new edges: the column sums grow by their count.
    p = prepared.n_passages
    np.testing.assert_allclose(columns.sums[p:] - plain.sums[p:], np.asarray(co.sum(axis=1)).ravel(), rtol=1e-9)
    want = (arrays.relations.astype(np.float64) + co.astype(np.float64)).tocsr()
    entity_only = replace(config, passage_nodes=False)
    assert abs(relations(arrays, entity_only) - want).sum() == 0
    derived, fresh = prepared.derived(entity_only), prepare(arrays, entity_only)
    assert derived is not None
    assert isinstance(derived.columns, Normalised) and isinstance(fresh.columns, Normalised)
    for got, expected in zip(derived.columns.rows, fresh.columns.rows, strict=True):  # the entity-only graph, as built
        assert (got is None) == (expected is None)
        if got is not None:
            np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)
    # Stored and read back, both the arrays and the prepared graph.
    (tmp_path / "entities.json").write_text(json.dumps(arrays.meta()))
    for name, values in arrays.files().items():
        np.save(tmp_path / name, values)
    again = GraphArrays.load(tmp_path)
    assert abs(again.entity_edges["co_mentions"] - co).sum() == 0
    files = prepared.files()
    assert "source_co_mentions_indptr.npy" in files
    reopened = PreparedGraph.open(json.loads(json.dumps(prepared.meta())), lambda name: files[name])
    assert isinstance(reopened.columns, Scaled) and [s.name for s in reopened.columns.sources] == \
        [s.name for s in columns.sources]
    graph = PassageGraph(reopened, config)
    assert any(graph.rank(q, k=5) for q in questions)

