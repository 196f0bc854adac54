"""The passage graph of an index stored without one (``--no-entity-graph``) is derived as a build derives it
(gearag.derive.graph_for)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import StubExtractor, use_stub_extractor, wiki_slice
from gearag.config import IndexConfig
from gearag.derive.graph_for import graph_arrays_for, passage_graph_for
from gearag.graph.passage_graph import stored_graph_arrays
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


def test_an_index_without_the_graph_derives_the_arrays_a_build_stores(pair) -> None:
    with_graph, without, _ = pair
    assert stored_graph_arrays(without) is None
    stored, derived = stored_graph_arrays(with_graph), graph_arrays_for(without)
    assert stored is not None
    assert derived.resolution.keys == stored.resolution.keys
    assert derived.resolution.n_names == stored.resolution.n_names
    for name, array in stored.files().items():
        np.testing.assert_array_equal(derived.files()[name], array, err_msg=name)
    assert graph_arrays_for(without) is derived  # derived once per loaded index


def test_it_ranks_as_the_index_built_with_the_graph(pair) -> None:
    with_graph, without, questions = pair
    a, b = passage_graph_for(with_graph), passage_graph_for(without)
    for q in questions:
        assert a.rank(q, k=10) == b.rank(q, k=10)
