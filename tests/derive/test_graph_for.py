"""The passage graph of an index stored without one (``--no-entity-graph``) is derived as a build derives it
(gearag.derive.graph_for)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.config import IndexConfig
from gearag.derive.graph_for import graph_arrays_for, passage_graph_for
from gearag.graph.config import PassageGraphConfig
from gearag.graph.passage_graph import stored_graph_arrays
from gearag.graph.prepared import PreparedGraph, stored_prepared
from gearag.graph.scaled import Scaled
from gearag.indexing import build_index
from gearag.model import Passage
from gearag.store.index import Index

STUB = IndexConfig.of(extractor="stub")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, Index, list[str]]:
    """The same 2Wiki slice built with the entity graph and without it, and questions."""
    use_stub_extractor(StubExtractor())
    rows, questions = wiki_slice(120, 10)
    passages = [Passage(f"w{i}", r["title"], r["text"]) for i, r in enumerate(rows)]
    root = tmp_path_factory.mktemp("graph_for")
    with_graph = build_index(passages, root / "with", STUB)
    without = build_index(passages, root / "without", replace(STUB, resolve=replace(STUB.resolve, entity_graph=False)))
    return with_graph, without, [q["question"] for q in questions]


def test_an_index_without_the_graph_derives_the_graph_a_build_stores(pair) -> None:
    with_graph, without, _ = pair
    assert stored_graph_arrays(without) is None and stored_prepared(without) is None
    derived = graph_arrays_for(without)
    stored = stored_prepared(with_graph)  # a build stores its prepared graph, not the arrays it is made of
    assert stored is not None
    # Prepared from arrays (whose about weights are normalised, not kept as terms): the same graph, other arrays.
    fresh = PreparedGraph.build(derived, PassageGraphConfig())
    assert (fresh.n_passages, fresh.n_entities, fresh.n_usable) == (stored.n_passages, stored.n_entities,
                                                                   stored.n_usable)
    for name in ("specificity", "triple_ends", "dangling"):
        np.testing.assert_array_equal(getattr(fresh, name), np.asarray(getattr(stored, name)), err_msg=name)
    assert isinstance(fresh.columns, Scaled) and isinstance(stored.columns, Scaled)
    np.testing.assert_allclose(fresh.columns.to_csr().toarray(), stored.columns.to_csr().toarray(), rtol=2e-6,
                               atol=1e-9)
    assert fresh.names.arrays().keys() == stored.names.arrays().keys()
    for name, array in fresh.names.arrays().items():
        np.testing.assert_array_equal(array, stored.names.arrays()[name], err_msg=name)
    assert graph_arrays_for(without) is derived  # derived once per loaded index


def test_it_ranks_as_the_index_built_with_the_graph(pair) -> None:
    with_graph, without, questions = pair
    a, b = passage_graph_for(with_graph), passage_graph_for(without)
    for q in questions:
        assert a.rank(q, k=10) == b.rank(q, k=10)
